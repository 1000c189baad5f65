"""SinkTaskRunner's batch conversion (pure logic: rows in, records to a recording task)."""

from __future__ import annotations

import contextlib

import pytest
from stage_transforms import Suffixed, two_stages

from connectd.connector import SinkTask, SinkTaskContext, TopicPartition
from connectd.data.converters import StringConverter
from connectd.data.headers import Headers
from connectd.data.json_converter import JsonConverter
from connectd.data.records import SinkRecord, TimestampType, sink_records
from connectd.data.schema import Schema, SchemaAndValue
from connectd.errors import ConnectException, DataError, RetriableException
from connectd.runtime.error_handling import ErrorHandler, ErrorPolicy
from connectd.runtime.kafka.reading import batch_ends
from connectd.runtime.sink.task import SinkTaskRunner
from connectd.transforms.chain import TransformationChain


class Recording(SinkTask):
    def start(self, config):
        self.put_calls: list[list[SinkRecord]] = []

    def put(self, records):
        self.put_calls.append(list(records))

    def stop(self):
        pass


def runner(value_converter, *, tolerate=False):
    converters = {"key": StringConverter(), "value": value_converter, "header": StringConverter()}
    for name, converter in converters.items():
        converter.configure({"schemas.enable": "false"} if isinstance(converter, JsonConverter) else {},
                            is_key=name == "key")
    committed = []
    errors = ErrorHandler(ErrorPolicy(tolerate_all=tolerate), "c", 0)
    partitions = [TopicPartition("a", 0), TopicPartition("b", 1)]
    run = SinkTaskRunner(Recording(), {}, partitions, converters, TransformationChain({}, None), committed.append, errors)
    return run, committed


ROWS = [
    ("a", 0, 5, 1_700_000_000_000, 1, b"k5", bytearray(b'{"n": 5}'), None),
    ("b", 1, 9, None, 0, None, b'{"n": 9}', [("h1", bytearray(b"x")), ("h2", None)]),
    ("a", 0, 6, 1_700_000_000_001, 2, b"k6", b"null", []),
]


def test_batch_path_makes_the_records_the_step_by_step_path_makes():
    fast, committed = runner(JsonConverter())
    fast.process(ROWS)
    slow, _ = runner(JsonConverter())
    _, expected = slow._convert_each(ROWS)
    (put,) = fast.task.put_calls
    key = lambda r: (r.topic, r.kafka_offset)
    assert sorted(put, key=key) == sorted(expected, key=key)
    assert [r.kafka_offset for r in put if r.topic == "a"] == [5, 6]  # order per partition kept
    record = next(r for r in put if r.topic == "b")
    assert [(h.key, h.value) for h in record.headers] == [("h1", "x"), ("h2", None)]
    assert record.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE and record.original_kafka_offset == 9
    assert committed == [{TopicPartition("a", 0): 7, TopicPartition("b", 1): 10}]


def test_a_bad_record_sends_the_batch_step_by_step_and_is_skipped_when_tolerated():
    run, committed = runner(JsonConverter(), tolerate=True)
    run.process([*ROWS[:1], ("a", 0, 6, None, 0, None, b"{bad", None), ("a", 0, 7, None, 0, None, b"1", None)])
    (put,) = run.task.put_calls
    assert [(r.kafka_offset, r.value) for r in put] == [(5, {"n": 5}), (7, 1)]
    assert committed == [{TopicPartition("a", 0): 8}]  # the skipped record's offset is committed too
    counts = run.take_counts()  # for the task's metrics: what changed since the last look
    assert counts.pop("put_seconds") > 0
    assert counts == {"sent": 2, "puts": 1, "failures": 1, "skipped": 1}
    run.process([("a", 0, 8, None, 0, None, b"2", None)])
    assert run.take_counts().keys() == {"sent", "puts", "put_seconds"} and run.take_counts() == {}


def test_chunks_put_separately_and_commit_once():
    run, committed = runner(StringConverter())
    run.put_rows([("a", 0, i, None, 0, None, b"v", None) for i in range(3)])
    run.put_rows([("a", 0, i, None, 0, None, b"v", None) for i in range(3, 5)])
    assert committed == []
    assert run.commit_batch() == {TopicPartition("a", 0): 5}
    assert [len(c) for c in run.task.put_calls] == [3, 2] and committed == [{TopicPartition("a", 0): 5}]


def test_sink_records_match_the_constructor_and_check_timestamps():
    headers = [Headers(), Headers([("h", Schema.STRING, "v")])]
    rows = [("t", 0, 1, 10, 1, None, None, None), ("t", 2, 3, None, 0, None, None, None)]
    keys = [SchemaAndValue(None, "k"), SchemaAndValue.NULL]
    values = [SchemaAndValue(Schema.OPTIONAL_STRING, "v"), SchemaAndValue(None, {"x": 1})]
    made = sink_records("t", rows, keys, values, headers)
    assert made == [
        SinkRecord(topic="t", kafka_partition=0, kafka_offset=1, timestamp=10, timestamp_type=TimestampType.CREATE_TIME,
                   key_schema=None, key="k", value_schema=Schema.OPTIONAL_STRING, value="v", headers=headers[0]),
        SinkRecord(topic="t", kafka_partition=2, kafka_offset=3, timestamp=None,
                   timestamp_type=TimestampType.NO_TIMESTAMP_TYPE, value={"x": 1}, headers=headers[1]),
    ]
    assert made[1].new_record(value=2).original_kafka_offset == 3
    without_headers = sink_records("t", rows[:1], keys[:1], values[:1])
    assert list(without_headers[0].headers) == [] and without_headers[0].headers is not made[0].headers
    with pytest.raises(DataError, match="Invalid record timestamp -5"):
        sink_records("t", [("t", 0, 1, -5, 1, None, None, None)], keys[:1], values[:1])


def test_a_batch_ends_at_the_high_watermarks_when_they_are_within_the_bound():
    assert batch_ends({"t:0": 5, "t:1": 0}, {"t:0": 9, "t:1": 4}, 100) == {"t:0": 9, "t:1": 4}


def test_unknown_or_lagging_high_watermarks_leave_a_partition_where_it_is():
    assert batch_ends({"t:0": 5, "t:1": 7}, {"t:1": 3}, 100) == {"t:0": 5, "t:1": 7}


def test_the_bound_is_shared_fairly_and_never_exceeded():
    start = {"a:0": 0, "a:1": 0, "a:2": 100}
    end = batch_ends(start, {"a:0": 1000, "a:1": 10, "a:2": 1100}, 300)
    # a:1 needs less than its share; the others split what it leaves
    assert end == {"a:0": 145, "a:1": 10, "a:2": 245}
    assert sum(end[k] - start[k] for k in start) == 300


@pytest.mark.parametrize("bound", [1, 2, 7, 1000])
def test_every_partition_moves_or_the_bound_is_used_up(bound):
    start = {f"t:{p}": p * 10 for p in range(5)}
    high = {f"t:{p}": p * 10 + 3 for p in range(5)}
    end = batch_ends(start, high, bound)
    taken = sum(end[k] - start[k] for k in start)
    assert taken == min(bound, 15)
    assert all(start[k] <= end[k] <= high[k] for k in start)


class AlwaysRetriable(Recording):
    def put(self, records):
        self.put_calls.append(list(records))
        raise RetriableException("not yet")


def test_put_retried_after_context_timeout_gives_up_once_the_task_is_stopping():
    from connectd.errors import ConnectorError

    run, committed = runner(StringConverter())
    run.task = task = AlwaysRetriable()
    task.start({})
    task.context = SinkTaskContext({}, run.partitions)
    task.context.timeout(10)
    checks = []
    run.stopping = lambda: checks.append(len(task.put_calls)) or len(task.put_calls) >= 3
    with pytest.raises(ConnectorError, match="the task is stopping: put\\(\\) is not retried again"):
        run.put_rows([("a", 0, 0, None, 0, None, b"v", None)])
    assert len(task.put_calls) == 3 and task.put_calls[0] == task.put_calls[2]  # the same records each time
    assert task.context.retry_timeout_ms is None  # used once, as Kafka Connect's
    assert committed == []


def test_kafka_connects_exception_names_are_public_and_retriable_is_retriable():
    import connectd

    assert issubclass(connectd.RetriableException, connectd.ConnectException)
    assert issubclass(connectd.ConnectException, connectd.ConnectorError)
    assert connectd.RetriableException("x").retriable and not connectd.ConnectException("x").retriable


class Committing(Recording):
    def start(self, config):
        super().start(config)
        self.calls: list[str] = []

    def pre_commit(self, offsets):
        self.calls.append(f"pre_commit {sorted((tp.partition, o) for tp, o in offsets.items())}")
        return offsets

    def close(self, partitions):
        self.calls.append("close")


class Ranges:
    """A RangeReader's read(): the rows of each range (pure logic, no Kafka)."""

    def read(self, ranges, chunk):
        yield [(t, p, o, None, 0, None, b"v", None) for t, p, start, end in ranges for o in range(start, end)]


@pytest.mark.parametrize("failed", [False, True])
def test_close_pre_commits_where_the_partitions_stand_and_commits_unless_a_batch_failed(failed):
    run, committed = runner(StringConverter())
    run.task = task = Committing()
    task.start({})
    task.context = SinkTaskContext({}, run.partitions)
    run.process_ranges([("a", 0, 0, 3)], Ranges())
    run.failed = failed
    run.close()
    # Kafka Connect's closeAllPartitions calls preCommit after a failed put() too (with the offsets before it)
    assert task.calls == ["pre_commit [(0, 3)]", "pre_commit [(0, 3)]", "close"]
    assert committed == [{TopicPartition("a", 0): 3}] * (1 if failed else 2)


class Pausing(Committing):
    """Pauses partition a-0 when it is given its offset 1."""

    def put(self, records):
        super().put(records)
        if any((r.topic, r.kafka_offset) == ("a", 1) for r in records):
            self.context.pause(TopicPartition("a", 0))


class ChunkedRanges(Ranges):
    def read(self, ranges, chunk):
        (rows,) = super().read(ranges, chunk)
        for i in range(0, len(rows), chunk):
            yield rows[i:i + chunk]


def test_a_partition_paused_in_put_is_put_no_further_and_committed_no_further():
    run, committed = runner(StringConverter())
    run.task = task = Pausing()
    task.start({})
    task.context = SinkTaskContext({}, run.partitions)
    run.process_ranges([("a", 0, 0, 6), ("b", 1, 0, 2)], ChunkedRanges(), chunk=2)
    assert [[(r.topic, r.kafka_offset) for r in put] for put in task.put_calls] == [[("a", 0), ("a", 1)],
                                                                                  [("b", 0), ("b", 1)]]
    assert committed == [{TopicPartition("a", 0): 2, TopicPartition("b", 1): 2}]
    assert run.seeks == {TopicPartition("a", 0): 2}  # its next batch starts at its first record not put
    assert run.paused == {TopicPartition("a", 0)}


def test_pauses_reach_a_new_instance_and_only_assigned_partitions_can_be_paused():
    run, _ = runner(StringConverter())
    run.paused = [TopicPartition("a", 0), TopicPartition("gone", 3)]  # as the driver saw them
    assert run.paused == {TopicPartition("a", 0)}
    run.task.context.resume(TopicPartition("a", 0))
    assert run.paused == set()
    with pytest.raises(ConnectException, match="not assigned to them: c-2"):
        run.task.context.pause(TopicPartition("c", 2))


# --- error handling as Kafka Connect's WorkerSinkTask ---------------------------------------------------


def dead_lettering(task=None, chain=None, tolerate=True, sleep=None):
    """A runner tolerating (or not) bad records, sending them to a list as its dead-letter queue."""
    converters = {"key": StringConverter(), "value": JsonConverter(), "header": StringConverter()}
    for name, converter in converters.items():
        converter.configure({"schemas.enable": "false"} if name == "value" else {}, is_key=name == "key")
    sent = []
    policy = ErrorPolicy(tolerate_all=tolerate, dlq_topic="dlq", dlq_context_headers=True, retry_timeout_ms=-1)
    errors = ErrorHandler(policy, "c", 0, send_to_dlq=lambda *record: sent.append(record),
                          **({"sleep": sleep} if sleep else {}))
    run = SinkTaskRunner(task or Recording(), {}, [TopicPartition("a", 0)], converters,
                         chain or TransformationChain({}, None), lambda offsets: None, errors)
    return run, sent


def test_a_dead_letter_record_names_the_converter_by_its_dotted_path_and_keeps_the_timestamp():
    run, sent = dead_lettering()
    run.process([("a", 0, 3, 1_700_000_000_007, 2, b"k", b"{bad", [("h", b"1")])])
    ((_, key, value, headers, _, timestamp),) = sent
    assert (key, value, timestamp) == (b"k", b"{bad", 1_700_000_000_007)  # the consumed record's timestamp
    named = dict(headers)
    assert named["h"] == b"1"
    assert named["__connect.errors.class.name"] == b"connectd.data.json_converter.JsonConverter"


def test_after_a_batch_failed_each_transform_runs_under_the_error_handling_naming_itself():
    run, sent = dead_lettering(chain=two_stages())
    rows = [("a", 0, 0, 10, 1, b"x", b'"a"', None), ("a", 0, 1, 11, 1, b"bad", b'"b"', None),
            ("a", 0, 2, 12, 1, b"skip-up", b'"c"', None), ("a", 0, 3, 13, 1, b"drop", b'"d"', None),
            ("a", 0, 4, 14, 1, b"x", b'"boom"', None), ("a", 0, 5, 15, 1, b"x", b'"e"', None)]
    run.process(rows)
    # the chain's semantics: the predicate negated, a dropped record gone, the failed ones skipped
    assert [r.value for r in run.task.put_calls[0]] == ["A!", "c!", "E!"]
    classes = [(dict(h)["__connect.errors.offset"], dict(h)["__connect.errors.class.name"]) for _, _, _, h, _, _ in sent]
    assert classes == [(b"1", b"stage_transforms.Suffixed"), (b"4", b"stage_transforms.Upper")]
    assert [timestamp for *_, timestamp in sent] == [11, 14]
    assert "boom" not in Suffixed.calls  # a failed stage ends the record's chain
    trace = dict(sent[0][3])["__connect.errors.exception.stacktrace"].decode()
    assert "in transform 'suffix' (Suffixed)" in trace  # as the chain notes it


def test_the_batch_path_does_not_run_transforms_under_the_error_handling():
    run, _ = dead_lettering(chain=two_stages())
    calls = []
    run.errors.run = lambda *args: calls.append(args)  # only the per-record fallback calls it
    run.process([("a", 0, 0, None, 0, b"x", b'"a"', None)])
    assert [r.value for r in run.task.put_calls[0]] == ["A!"] and calls == []


class Swallowing(Recording):
    """Reports each record as errant and carries on whatever report() raises."""

    def put(self, records):
        super().put(records)
        for record in records:
            with contextlib.suppress(Exception):  # what the runner must not let pass
                self.context.errant_record_reporter().report(record, ValueError("cannot write"))


def test_a_task_that_swallows_an_untolerated_errant_report_still_fails():
    from connectd.runtime.error_handling import RecordFailure

    run, sent = dead_lettering(task=Swallowing(), tolerate=False)
    with pytest.raises(RecordFailure, match="^Tolerance exceeded in error handler: TASK_PUT"):
        run.process([("a", 0, 0, None, 0, None, b"1", None)])
    assert len(sent) == 1  # reported first
    assert dict(sent[0][3])["__connect.errors.class.name"] == f"{__name__}.Swallowing".encode()


class ReportingNew(Recording):
    """Reports a record of its own making, not one it was given."""

    def put(self, records):
        super().put(records)
        if records:
            made = SinkRecord(topic="a", kafka_partition=0, kafka_offset=99, key="k", value={"n": 1},
                              timestamp=1_700_000_000_000, timestamp_type=TimestampType.LOG_APPEND_TIME,
                              headers=Headers([("origin", Schema.STRING, "made")]))
            self.context.errant_record_reporter().report(made, ValueError("not mine"))


def test_an_errant_record_not_of_the_batch_is_sent_as_the_converters_write_it_headers_included():
    run, sent = dead_lettering(task=ReportingNew())
    run.process([("a", 0, 0, None, 0, None, b"1", None)])
    ((_, key, value, headers, _, timestamp),) = sent
    assert (key, value, timestamp) == (b"k", b'{"n":1}', 1_700_000_000_000)
    assert headers[0] == ("origin", b"made")


class Failing(Recording):
    def put(self, records):
        super().put(records)
        raise KeyError("the table is gone")


def test_a_put_failure_kills_the_task_in_kafka_connects_words_and_is_no_record_error():
    run, _ = dead_lettering(task=Failing())
    with pytest.raises(ConnectException) as info:
        run.process([("a", 0, 0, None, 0, None, b"1", None)])
    assert str(info.value) == ("Task threw an uncaught and unrecoverable exception. Task is being killed and will not "
                               "recover until manually restarted. KeyError: 'the table is gone'")
    assert isinstance(info.value.__cause__, KeyError)
    assert "failures" not in run.take_counts()


def test_retries_of_put_are_no_record_error_retries():
    class Twice(Recording):
        def put(self, records):
            super().put(records)
            if len(self.put_calls) < 3:
                self.context.timeout(0)  # put again at once
                raise RetriableException("not yet")

    run, _ = dead_lettering(task=Twice())
    run.process([("a", 0, 0, None, 0, None, b"1", None)])
    counts = run.take_counts()
    assert len(run.task.put_calls) == 3 and "retries" not in counts and counts["puts"] == 1


class RetriableTransform:
    def configure(self, settings):
        pass

    def apply(self, record):
        raise RetriableException("not yet")


def test_a_record_being_retried_gives_up_once_the_task_is_stopping():
    from connectd.errors import ConnectorError

    chain = TransformationChain({"transforms": "r", "transforms.r.type": RetriableTransform}, None)
    waits = []
    run, _ = dead_lettering(chain=chain, sleep=lambda seconds: (waits.append(seconds), run.wait_to_retry(seconds)))
    run.stopping = lambda: bool(waits)  # told to stop while the record waits for its first retry
    with pytest.raises(ConnectorError, match="the task is stopping: a failed record is not retried again"):
        run.process([("a", 0, 0, None, 0, None, b"1", None)])
    assert waits == [0.3] and run.task.put_calls == []


class ReportingLate(Recording):
    """As a task writing in the background: a put()'s refused records are known during the next put(), or
    in pre_commit() for the last one."""

    def start(self, config):
        super().start(config)
        self.waiting: list[SinkRecord] = []

    def put(self, records):
        super().put(records)
        self._report_waiting()
        self.waiting = [r for r in records if r.value == {"bad": True}]

    def pre_commit(self, offsets):
        self._report_waiting()
        return offsets

    def _report_waiting(self):
        for record in self.waiting:
            self.context.errant_record_reporter().report(record, ValueError("refused by the database"))
        self.waiting = []


class Chunks:
    """A RangeReader's read() of these rows, *chunk* at a time."""

    def __init__(self, rows):
        self.rows = rows

    def read(self, ranges, chunk):
        for start in range(0, len(self.rows), chunk):
            yield self.rows[start:start + chunk]


class FlushRecording:
    """A dead-letter producer's flush, noted among the commits with how many records it had been given."""

    def __init__(self, events, sent):
        self.events, self.sent = events, sent

    def flush(self):
        self.events.append(f"dlq flush of {len(self.sent)}")


def test_records_a_task_reports_after_their_put_keep_their_bytes_and_reach_the_dlq_before_the_commit():
    run, sent = dead_lettering(task=ReportingLate())
    events = []
    run._commit = lambda offsets: events.append(f"commit {sorted(offsets.values())}")
    run.dead_letters = FlushRecording(events, sent)
    bad = b'{ "bad" : true }'  # as consumed: the converter would write it {"bad":true}
    run.process_ranges([("a", 0, 0, 4)], Chunks([("a", 0, 0, None, 0, None, bad, None),
                                                 ("a", 0, 1, None, 0, None, b'{"n": 1}', None),
                                                 ("a", 0, 2, None, 0, None, b'{"n": 2}', None),
                                                 ("a", 0, 3, None, 0, None, bad, None)]), chunk=2)
    # offset 0 reported during the second put(), offset 3 in pre_commit(): both as consumed
    assert [(dict(h)["__connect.errors.offset"], value) for _, _, value, h, _, _ in sent] == [(b"0", bad), (b"3", bad)]
    assert events == ["dlq flush of 2", "commit [4]"]
