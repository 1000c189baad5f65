"""The source poller's states (pure logic: a poll function instead of a task, no Spark, no Kafka)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from stage_transforms import Suffixed, two_stages

from connectd.runtime.kafka.producing import ColumnBatch, write_arrow_batch
from connectd.config.worker_keys import COMMON_WORKER_DEF
from connectd.runtime.source.poller import AHEAD_BYTES, Poller, batch_bytes


class Polls:
    """A poll function: each call returns *size* records and moves the offset of partition "p"."""

    def __init__(self, size: int = 10) -> None:
        self.size = size
        self.calls = 0
        self.attempts = 0  # failed calls included
        self.release = threading.Event()
        self.release.set()
        self.error: BaseException | None = None

    def __call__(self):
        self.release.wait()
        self.attempts += 1
        if self.error is not None:
            raise self.error
        self.calls += 1
        rows = [("t", None, None, f"{self.calls}-{i}".encode(), None, None, None, None) for i in range(self.size)]
        return write_arrow_batch(rows), {'{"p":1}': f'{{"n":{self.calls}}}'}, {"t"}, [f"polled {self.calls}"]


def values(batches) -> list[bytes]:
    return [v for batch in batches for v in batch.column("value").to_pylist()]


def test_it_polls_ahead_until_the_buffer_is_full_then_waits_for_a_batch_to_take_it(wait_until):
    polls = Polls(size=10)
    poller = Poller(polls, max_records=30, idle=lambda: False, name="t")
    try:
        # A poll counts itself before its records reach the buffer: wait for the records.
        wait_until(lambda: poller._buffered, "30 records buffered", until=lambda n: n >= 30)
        calls = polls.calls
        assert calls == 3  # FULL: 30 records buffered, no fourth poll
        batches, offsets, topics, polled = poller.take()
        assert values(batches) == [f"{c}-{i}".encode() for c in (1, 2, 3) for i in range(10)]
        assert offsets == {'{"p":1}': '{"n":3}'}  # the last offset of the partition
        assert topics == {"t"}
        assert polled == ["polled 1", "polled 2", "polled 3"]  # for commit_record, in poll order
        wait_until(lambda: polls.calls, "polling again once the batch was taken", until=lambda n: n >= 6)
    finally:
        poller.stop(5)


def test_it_polls_ahead_no_more_than_its_bytes_bound_either(wait_until):
    polls = Polls(size=10)
    one_poll = batch_bytes(Polls(size=10)()[0])  # a poll's batch, as the poller will buffer it
    poller = Poller(polls, max_records=1000, idle=lambda: False, name="t", max_bytes=2 * one_poll + 1)
    try:
        wait_until(lambda: poller._buffered, "30 records buffered", until=lambda n: n >= 30)
        assert polls.calls == 3  # FULL by bytes: 3 polls' records are over the bound, 1,000 records are not
        assert values(poller.take()[0]) == [f"{c}-{i}".encode() for c in (1, 2, 3) for i in range(10)]
        wait_until(lambda: polls.calls, "polling again once the batch was taken", until=lambda n: n >= 6)
    finally:
        poller.stop(5)


def test_the_workers_key_documents_the_bytes_bound_the_poller_has():
    assert f"or {AHEAD_BYTES >> 20} MiB of converted records" in COMMON_WORKER_DEF.get("source.batch.max.records").documentation


def test_a_batchs_bytes_are_its_arrow_buffers_or_its_columns_keys_and_values_with_their_overhead():
    arrow = Polls(size=10)()[0]
    assert batch_bytes(arrow) == arrow.nbytes and batch_bytes(None) == 0
    n = 1000
    alike = ColumnBatch({"topic": ["t"] * n, "key": [b"k" * 10] * n, "value": [b"v" * 200] * n}, n)
    assert batch_bytes(alike) == n * (10 + 200 + 64)
    tombstones = ColumnBatch({"topic": ["t"] * n, "key": [b"k" * 10] * n, "value": [None] * n}, n)
    assert batch_bytes(tombstones) == n * (10 + 64)
    assert batch_bytes(ColumnBatch({"topic": []}, 0)) == 0


def test_each_poll_can_be_taken_as_a_chunk_of_its_own_for_a_transaction_per_poll(wait_until):
    polls = Polls(size=10)
    poller = Poller(polls, max_records=30, idle=lambda: False, name="t")
    try:
        wait_until(lambda: poller._buffered, "30 records buffered", until=lambda n: n >= 30)
        chunks = poller.take_polls()
        assert [values(batches) for batches, _, _, _ in chunks] == [[f"{c}-{i}".encode() for i in range(10)]
                                                                    for c in (1, 2, 3)]
        assert [offsets for _, offsets, _, _ in chunks] == [{'{"p":1}': f'{{"n":{c}}}'} for c in (1, 2, 3)]
        assert [polled for _, _, _, polled in chunks] == [["polled 1"], ["polled 2"], ["polled 3"]]
    finally:
        poller.stop(5)


def test_nothing_buffered_offers_no_batch_and_an_idle_task_is_not_polled(wait_until):
    idle = threading.Event()
    idle.set()
    polls = Polls()
    poller = Poller(polls, max_records=100, idle=idle.is_set, name="t")
    try:
        assert poller.take() is None
        assert polls.calls == 0  # IDLE: paused or stopping
        idle.clear()
        taken = wait_until(poller.take, "a batch once the task is no longer idle")
        assert values(taken[0])
    finally:
        poller.stop(5)


def test_an_error_from_poll_is_raised_by_the_next_take(wait_until):
    """…and is signalled as records are: a task's host asks the planner for the batch that fails the
    task by it, which would otherwise never come (an idle source has no batch)."""
    polls = Polls()
    polls.error = RuntimeError("the source is gone")
    signalled = threading.Event()
    poller = Poller(polls, max_records=100, idle=lambda: False, name="t", buffered=signalled.set)
    try:
        wait_until(signalled.is_set, "the failed poll() signalled")
        assert poller.has_data()
        def raised() -> bool:
            try:
                poller.take()
            except RuntimeError as error:
                return "the source is gone" in str(error)
            return False

        wait_until(raised, "take() to raise poll()'s error")
    finally:
        poller.stop(5)


def test_a_retriable_error_from_poll_is_polled_again(wait_until):
    from connectd import RetriableException

    polls = Polls()
    polls.error = RetriableException("not now")
    poller = Poller(polls, max_records=100, idle=lambda: False, name="t")
    try:
        wait_until(lambda: polls.attempts, "poll() called again after it failed", until=lambda n: n >= 3)
        assert poller.take() is None  # nothing to raise: POLLING still
        polls.error = None
        taken = wait_until(poller.take, "a batch once poll() succeeds")
        assert values(taken[0])
    finally:
        poller.stop(5)


def test_first_poll_waits_for_the_first_poll_to_end_or_its_timeout(wait_until):
    polls = Polls(size=10)
    polls.release.clear()  # the first poll() does not return yet
    poller = Poller(polls, max_records=100, idle=lambda: False, name="t")
    try:
        poller.first_poll(0.05)  # returns at its timeout, nothing polled
        assert polls.calls == 0 and poller.take() is None
        threading.Timer(0.2, polls.release.set).start()
        poller.first_poll(30)  # returns once the first poll() ended, its records buffered
        batches, *_ = poller.take()
        assert values(batches)[:10] == [f"1-{i}".encode() for i in range(10)]
        poller.first_poll(30)  # a look already ended: at once
    finally:
        polls.release.set()
        poller.stop(5)


def test_the_querys_first_batch_carries_the_first_polls_records(tmp_path):
    """A fresh Spark's first batch costs seconds: taken at once it would be empty, and the first records
    would wait for a second batch."""
    from connectd.runtime.source.handoff import Batch

    polls = Polls(size=10)
    polls.release.clear()
    reader = reader_for()

    def start() -> None:  # as _ensure_started, without a plugin
        reader._task = Acknowledged()
        reader._poller = Poller(polls, max_records=100, idle=lambda: False, name="t")
        threading.Timer(0.2, polls.release.set).start()  # the first poll() takes 0.2 s

    reader._ensure_started = start
    try:
        assert reader.latestOffset() == {"seq": 1}
        assert values(Batch([reader._kept[1]]).record_batches())[:10] == [f"1-{i}".encode() for i in range(10)]
    finally:
        polls.release.set()
        reader._poller.stop(5)


def test_stop_ends_the_thread_after_the_poll_in_progress():
    polls = Polls()
    polls.release.clear()  # the next poll() blocks
    poller = Poller(polls, max_records=100, idle=lambda: False, name="t")
    stopper = threading.Thread(target=poller.stop, args=(30,))
    stopper.start()
    polls.release.set()
    stopper.join(30)
    assert not stopper.is_alive() and not poller._thread.is_alive()


def test_stop_gives_up_on_a_poll_that_does_not_return():
    polls = Polls()
    polls.release.clear()
    poller = Poller(polls, max_records=100, idle=lambda: False, name="t")
    poller.stop(0.2)  # returns: task.stop() is then called anyway, as Kafka Connect does
    assert poller._thread.is_alive()
    polls.release.set()
    poller._thread.join(5)


def test_a_poll_whose_records_were_all_dropped_still_moves_the_offset(wait_until):
    def dropped():
        return None, {'{"p":1}': '{"n":7}'}, set(), None

    poller = Poller(dropped, max_records=100, idle=lambda: False, name="t")
    try:
        batches, offsets, _, _ = wait_until(poller.take, "the offset of dropped records")
        assert batches == [] and offsets == {'{"p":1}': '{"n":7}'}
    finally:
        poller.stop(5)


def test_a_batch_reaches_the_executor_as_bytes_or_as_a_file_in_the_same_order(tmp_path):
    from connectd.runtime.source.handoff import Batch, ipc, ipc_file

    first = write_arrow_batch([("t", None, None, b"a", None, None, None, None)])
    second = write_arrow_batch([("t", None, None, b"b", None, None, '{"p":1}', '{"n":2}')])
    as_file = ipc_file([second], str(tmp_path / "handoff" / "2.arrow"))
    assert values(Batch([ipc([first])], [as_file]).record_batches()) == [b"a", b"b"]


def test_a_handoff_file_goes_once_spark_committed_its_batch(tmp_path):
    import json

    from connectd.runtime.source.handoff import ipc_file
    from connectd.runtime.source.task import SPEC_OPTION, SourceTaskReader

    reader = SourceTaskReader({SPEC_OPTION: json.dumps({"worker_config": {}}), "handoff.dir": str(tmp_path)})
    batch = write_arrow_batch([("t", None, None, b"a", None, None, None, None)])
    reader._kept = {1: ipc_file([batch], str(tmp_path / "1.arrow")), 2: ipc_file([batch], str(tmp_path / "2.arrow"))}
    # take_counts() per batch, and the records not yet written as each was taken
    reader._stats = {1: {"polls": 1, "polled": 3, "active": 3}, 2: {"polls": 2, "failures": 1, "active": 5}}
    reader._unwritten = {1: 3, 2: 2}
    (partition,) = reader.partitions({"seq": 0}, {"seq": 2})
    assert partition.files == [str(tmp_path / "1.arrow"), str(tmp_path / "2.arrow")] and partition.streams == []
    assert partition.stats == {"polls": 3, "polled": 3, "failures": 1, "active": 5} and reader._stats == {}
    reader.commit({"seq": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2.arrow"] and reader._unwritten == {2: 2}


class Acknowledged:
    """What a task overriding commit_record is told (the calls, in order)."""

    def __init__(self) -> None:
        self.calls: list = []

    def commit_record(self, record, metadata) -> None:
        self.calls.append((record, metadata))

    def commit(self) -> None:
        self.calls.append("commit")


def test_stored_batches_are_acknowledged_record_by_record_in_poll_order(tmp_path):
    import json

    from connectd import RecordMetadata
    from connectd.runtime.source.task import SPEC_OPTION, SourceTaskReader

    reader = SourceTaskReader({SPEC_OPTION: json.dumps({"worker_config": {}}), "stored.dir": str(tmp_path)})
    reader._task = task = Acknowledged()
    reader._polled = {1: [("a", "t"), ("b", None)], 2: [("c", "u")], 3: [("d", "t")]}
    assert reader._settle() is False  # nothing stored yet: no commit owed
    (tmp_path / "000000000007-0.json").write_text(json.dumps({"seqs": [1, 2], "acks": [[0, 10, 5], [2, 4, None]]}))
    (tmp_path / "000000000008-0.tmp").write_text("being written")
    assert reader._settle() is True
    assert task.calls == [("a", RecordMetadata("t", 0, 10, 5)), ("b", None), ("c", RecordMetadata("u", 2, 4, None))]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["000000000008-0.tmp"] and list(reader._polled) == [3]


def test_a_task_without_commit_record_is_told_only_that_batches_were_stored(tmp_path):
    import json

    from connectd.runtime.source.task import SPEC_OPTION, SourceTaskReader

    reader = SourceTaskReader({SPEC_OPTION: json.dumps({"worker_config": {}}), "stored.dir": str(tmp_path)})
    reader._task = task = Acknowledged()
    (tmp_path / "000000000001-0.json").write_text(json.dumps({"seqs": [1], "acks": None}))
    assert reader._settle() is True and task.calls == []


def test_an_error_with_a_retriable_method_fails_the_task(wait_until):
    class LibraryError(Exception):  # as confluent-kafka's KafkaError: retriable() is a method, always truthy
        def retriable(self) -> bool:
            return True

    polls = Polls()
    polls.error = LibraryError("the source is gone")
    poller = Poller(polls, max_records=100, idle=lambda: False, name="t")
    try:
        def raised() -> bool:
            try:
                poller.take()
            except LibraryError:
                return True
            return False

        # only a RetriableException (ConnectorError with retriable=True) is polled again
        wait_until(raised, "take() to raise poll()'s error", timeout=10)
        assert polls.attempts == 1
    finally:
        poller.stop(5)


# --- the connector's error handling on the poller thread ---------------------------------------------

def reader_for(connector_config=None, chain=None):
    import json

    from connectd.data.converters import StringConverter
    from connectd.data.json_converter import JsonConverter
    from connectd.runtime.source.task import SPEC_OPTION, SourceTaskReader
    from connectd.transforms.chain import TransformationChain

    reader = SourceTaskReader({SPEC_OPTION: json.dumps({"worker_config": {}, "connector": "c", "task_id": 0})})
    reader._converters = {"key": StringConverter(), "value": JsonConverter(), "header": StringConverter()}
    for name, converter in reader._converters.items():
        converter.configure({"schemas.enable": "false"} if name == "value" else {}, is_key=name == "key")
    reader._chain = chain or TransformationChain({}, None)
    reader._errors = reader._error_handler(connector_config or {})
    return reader


def test_a_record_being_retried_gives_up_once_the_task_stops(wait_until):
    from connectd.errors import RetriableException
    from connectd.runtime.error_handling import Original

    reader = reader_for({"errors.retry.timeout": "-1"})
    attempts = []

    def converting():
        attempts.append(1)
        raise RetriableException("the schema registry is not there yet")

    reader._poller = poller = Poller(lambda: reader._errors.run("VALUE_CONVERTER", "X", converting, Original("t")),
                                      max_records=100, idle=lambda: False, name="t")
    wait_until(lambda: attempts, "the record to fail once")
    reader.stop()  # waits for the poll in progress up to 5 s, then goes on
    assert not poller._thread.is_alive()


def dead_lettering(reader):
    """The dead-letter records *reader*'s error handling sends (to a list), tolerating all."""
    from connectd.runtime.error_handling import ErrorHandler, ErrorPolicy

    sent = []
    reader._errors = ErrorHandler(ErrorPolicy(tolerate_all=True, dlq_topic="dlq", dlq_context_headers=True), "c", 0,
                                  send_to_dlq=lambda *record: sent.append(record))
    return sent


def polled(*pairs):
    from connectd.data.records import SourceRecord

    return [SourceRecord(topic="t", kafka_partition=0, key=key, value=value, source_partition={"f": 1},
                         source_offset={"n": n}) for n, (key, value) in enumerate(pairs)]


def failed_classes(sent):
    return [(dict(headers)["__connect.errors.source.offset"], dict(headers)["__connect.errors.class.name"])
            for _, _, _, headers, _, _ in sent]


@pytest.mark.parametrize("tracked", [False, True], ids=["batch", "commit_record"])
def test_each_transform_runs_under_the_error_handling_naming_itself(tracked):
    reader = reader_for(chain=two_stages())
    sent = dead_lettering(reader)
    records = polled(("x", "a"), ("bad", "b"), ("skip-up", "c"), ("x", "drop"), ("x", "boom"), ("x", "e"))
    if tracked:  # a task with commit_record: one record at a time
        batch, _, _, acked = reader._poll_tracked(records)
        assert [topic for _, topic in acked] == ["t", None, "t", None, None, "t"]
        values = batch.column("value").to_pylist()
    else:
        values = [r.value for r in reader._transform(records)]
    assert values == ([b'"A!"', b'"c!"', b'"E!"'] if tracked else ["A!", "c!", "E!"])
    assert failed_classes(sent) == [(b'{"n":1}', b"stage_transforms.Suffixed"),
                                    (b'{"n":4}', b"stage_transforms.Upper")]
    assert "drop" not in Suffixed.calls and "boom" not in Suffixed.calls  # dropped or failed: the chain ends


def test_a_source_record_a_converter_fails_names_the_converter_by_its_dotted_path():
    reader = reader_for()
    sent = dead_lettering(reader)
    assert reader._convert(polled(("x", {1, 2}))[0]) is None  # a set: not JSON
    assert failed_classes(sent) == [(b'{"n":0}', b"connectd.data.json_converter.JsonConverter")]


# --- Kafka Connect's checks and timing around the task ------------------------------------------------


class Polling(Acknowledged):
    """A task whose poll() returns *records*."""

    def __init__(self, records) -> None:
        super().__init__()
        self.records = records

    def poll(self):
        return self.records


@pytest.mark.parametrize("tracked", [False, True], ids=["batch", "commit_record"])
@pytest.mark.parametrize(("topic", "partition", "named"), [
    (None, None, "topic=None"),
    ("t", -1, "kafka_partition=-1"),  # librdkafka would take -1 as "the partitioner chooses"
])
def test_a_record_without_a_topic_or_with_a_negative_partition_fails_the_task(tracked, topic, partition, named):
    """AbstractWorkerSourceTask.convertTransformedRecord makes a ProducerRecord, which refuses a null
    topic and a negative partition outside the error handling: the task fails, even under
    errors.tolerance=all, rather than the record being passed over with its offset stored."""
    from connectd.data.records import SourceRecord
    from connectd.errors import ConnectException

    reader = reader_for({"errors.tolerance": "all"})
    reader._acks = tracked
    reader._task = Polling([SourceRecord(topic="t", value="ok", source_partition={"f": 1}, source_offset={"n": 0}),
                            SourceRecord(topic=topic, kafka_partition=partition, value="bad",
                                         source_partition={"f": 1}, source_offset={"n": 1})])
    with pytest.raises(ConnectException, match=named) as raised:
        reader._poll_once()
    assert "offset {'n': 1}" in str(raised.value)


@pytest.mark.parametrize("tracked", [False, True], ids=["batch", "commit_record"])
def test_a_record_without_a_source_partition_moves_the_null_partitions_offset(tracked):
    from connectd.data.records import SourceRecord

    reader = reader_for()
    reader._acks = tracked
    reader._task = Polling([SourceRecord(topic="t", value=str(n), source_partition=p, source_offset={"n": n})
                            for n, p in enumerate([None, {"f": 1}, None])])
    _, offsets, *_ = reader._poll_once()
    assert offsets == {"null": '{"n":2}', '{"f":1}': '{"n":1}'}  # as Kafka Connect stores it


@pytest.mark.parametrize("tracked", [False, True], ids=["batch", "commit_record"])
def test_a_partition_travels_in_its_maps_order_one_text_per_partition(tracked):
    """Kafka Connect writes an offsets key in the connector's map order: the partition's text keeps
    it; the same partition in another order later is the text it came as first (one key, one offset)."""
    from connectd.data.records import SourceRecord

    reader = reader_for()
    reader._acks = tracked
    reader._task = Polling([SourceRecord(topic="t", value="a", source_partition={"table": "t", "db": "d"},
                                         source_offset={"pos": 1, "file": "f"}),
                            SourceRecord(topic="t", value="b", source_partition={"db": "d", "table": "t"},
                                         source_offset={"pos": 2, "file": "f"})])
    _, offsets, *_ = reader._poll_once()
    assert offsets == {'{"table":"t","db":"d"}': '{"pos":2,"file":"f"}'}


def stopping_reader(tmp_path, polls):
    """A reader whose started task is *polls*, with the run's stop and pause files in *tmp_path*."""
    import time

    reader = reader_for()
    reader.stop_file, reader.pause_file = str(tmp_path / "stop"), str(tmp_path / "pause")
    reader._task = Acknowledged()
    reader._last_commit = time.monotonic()
    reader._poller = Poller(polls, max_records=100, idle=reader._held, name="t")
    return reader


def test_at_stop_what_poll_returned_is_one_last_batch_the_poll_under_way_included(tmp_path, wait_until):
    """AbstractWorkerSourceTask.execute sends the records of the poll() under way when it is told to
    stop, then commits their offsets (finalOffsetCommit): nothing polled is dropped."""
    from connectd.runtime.source.handoff import Batch

    polls = Polls(size=10)
    polls.release.clear()  # the first poll() is under way when the task is told to stop
    entered = threading.Event()
    reader = stopping_reader(tmp_path, lambda: (entered.set(), polls())[1])
    try:
        wait_until(entered.is_set, "a poll() under way")
        (tmp_path / "stop").touch()
        latest = []
        planner = threading.Thread(target=lambda: latest.append(reader.latestOffset()))
        planner.start()
        polls.release.set()
        planner.join(30)
        assert latest == [{"seq": 1}] and polls.calls == 1  # no poll() after the stop
        written = values(Batch([reader._kept[1]]).record_batches())
        assert written == [f"1-{i}".encode() for i in range(10)] + [None]  # the records, then the offsets row
        assert reader.latestOffset() == {"seq": 1}  # nothing more
    finally:
        reader._poller.stop(5)


def test_a_paused_task_told_to_stop_offers_nothing_more(tmp_path, wait_until):
    """While paused Kafka Connect sends nothing (execute() awaits the resume), also when it stops."""
    polls = Polls(size=10)
    reader = stopping_reader(tmp_path, polls)
    try:
        wait_until(lambda: reader._poller._buffered, "records buffered")
        (tmp_path / "pause").touch()
        (tmp_path / "stop").touch()
        assert reader.latestOffset() == {"seq": 0} and reader._kept == {}
    finally:
        reader._poller.stop(5)


def test_commit_is_called_every_flush_interval_also_with_nothing_stored(tmp_path, wait_until):
    """SourceTaskOffsetCommitter commits every offset.flush.interval.ms and WorkerSourceTask.commitOffsets
    calls SourceTask.commit() even when no record was produced since ("We continue ... in order to
    invoke SourceTask::commit"), paused tasks included."""
    polls = Polls()
    polls.release.clear()  # nothing polled
    reader = stopping_reader(tmp_path, polls)
    try:
        (tmp_path / "pause").touch()
        assert reader.latestOffset() == {"seq": 0} and reader._task.calls == []  # not due yet
        reader.commit_interval = 0.05
        wait_until(lambda: (reader.latestOffset(), reader._task.calls)[1], "commit() twice, idle",
                   until=lambda calls: calls.count("commit") >= 2)
    finally:
        polls.release.set()
        reader._poller.stop(5)


def test_a_poll_not_returning_at_stop_is_waited_for_once_then_woken_by_stop(tmp_path, wait_until, monkeypatch):
    """A poll() that returns only when stop() wakes it (Kafka Connect calls stop() from another
    thread for that): the last batch waits for it once (here 1.5 s), then stop() is called at once,
    not after a second wait for the same poll()."""
    import time

    from connectd.runtime.source import runner as source_runner

    monkeypatch.setattr(source_runner, "_STOP_WAIT_S", 1.5)
    polls = Polls(size=10)
    polls.release.clear()  # blocked until the task's stop()
    entered = threading.Event()

    class Woken(Acknowledged):
        def stop(self) -> None:
            self.calls.append("stop")
            polls.release.set()

    reader = stopping_reader(tmp_path, lambda: (entered.set(), polls())[1])
    reader._task = task = Woken()
    reader._unregister = lambda: None
    wait_until(entered.is_set, "a poll() under way")
    (tmp_path / "stop").touch()
    assert reader.latestOffset() == {"seq": 0}  # the 1.5 s passed; nothing was buffered
    began = time.monotonic()
    reader.stop()
    assert task.calls == ["stop"] and time.monotonic() - began < 1.0  # not another 1.5 s


#: A planner process (as PySpark's loop runs the reader) whose main thread gets SIGTERM from Spark at
#: a chosen moment: while the loop waits for Spark (then the loop's ``finally`` stops the reader),
#: once the reader's stop is under way, or as the loop ended and the stop is not reached.
_PLANNER = """
import json, signal, sys
from connectd.runtime.source import runner as source_runner, task as source_task
source_runner.configure_spark_process = lambda **context: None  # not this test's logging
spec, moment, stop_file = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
reader = source_task.SourceTaskReader({source_task.SPEC_OPTION: json.dumps(spec), "stop.file": stop_file})
reader._ensure_started()
if moment == "while-waiting":
    try:
        signal.raise_signal(signal.SIGTERM)
    finally:
        reader.stop()
elif moment == "during-stop":
    poller = reader._poller
    stop_polling = poller.stop
    def stop_signalled(timeout):
        signal.raise_signal(signal.SIGTERM)  # Spark's signal comes as the reader's stop is under way
        stop_polling(timeout)
    poller.stop = stop_signalled
    reader.stop()
else:
    signal.raise_signal(signal.SIGTERM)  # the stop is never reached
"""


@pytest.mark.parametrize(("moment", "exit_code"), [("while-waiting", 143), ("during-stop", 0),
                                                     ("before-stop", 143)])
def test_the_task_of_a_planner_process_spark_ends_is_stopped_once_whenever_the_signal_comes(
        tmp_path, worker_config, moment, exit_code):
    """Spark ends the planner process with SIGTERM and closes its socket: whichever PySpark's loop
    sees first, the task is stopped exactly once and its registration goes (the query's stop waits
    for it)."""
    import json
    import subprocess
    import sys

    from connectd.runtime.sink.executor import instances_dir

    events = tmp_path / "events.txt"
    config = {"name": "c", "connector.class": "X", "count": "0", "topic": "t",
              "events.file": str(events)}
    spec = {"connector": "c", "task_id": 0, "task_class": "recording_source.CountingSourceTask",
            "task_config": config, "connector_config": config, "worker_config": worker_config.settings(),
            "offsets": {"kind": "file", "path": str(tmp_path / "offsets.json")}, "producer": "{}"}
    stop_file = tmp_path / "run" / "stop"
    stop_file.parent.mkdir()
    done = subprocess.run([sys.executable, "-c", _PLANNER, json.dumps(spec), moment, str(stop_file)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == exit_code, done.stderr
    assert [line.split()[1] for line in events.read_text().splitlines()] == ["start", "stop"]
    assert list(Path(instances_dir(str(stop_file.parent))).iterdir()) == []


# --- a task returning a SourceRecordBatch ------------------------------------------------------------


def record_batch(values, keys=None, first=0):
    from connectd.data.records import SourceRecordBatch

    return SourceRecordBatch("t", values, [{"n": n} for n in range(first, first + len(values))], keys=keys,
                             source_partition={"f": 1}, timestamp=7)


def rows_of(polled_batch):
    table = polled_batch.to_pydict()
    return list(zip(table["topic"], table["partition"], table["key"], table["value"], table["timestamp"],
                    strict=True))


@pytest.mark.parametrize("tracked", [False, True], ids=["columns", "commit_record"])
@pytest.mark.parametrize("chain", [None, "two_stages"])
def test_a_record_batch_polled_is_produced_as_its_records_would_be(tracked, chain):
    """Without transforms or commit_record its columns are converted as they are; with either, its
    records are made: the rows, offsets and topics are the same as for the list of those records."""
    def poll_once(records):
        reader = reader_for(chain=two_stages() if chain else None)
        reader._acks = tracked
        reader._task = Polling(records)
        return reader._poll_once()

    batch = record_batch(["a", "b", "c"], keys=["k1", None, "k3"])
    from_batch, from_list = poll_once(batch), poll_once(list(batch))
    assert rows_of(from_batch[0]) == rows_of(from_list[0])
    assert from_batch[1:3] == from_list[1:3] == ({'{"f":1}': '{"n":2}'}, {"t"})
    if not chain:
        assert rows_of(from_batch[0]) == [("t", None, b"k1", b'"a"', 7), ("t", None, None, b'"b"', 7),
                                          ("t", None, b"k3", b'"c"', 7)]


def test_a_record_batch_whose_converter_fails_goes_record_by_record_under_the_error_handling():
    reader = reader_for({"errors.tolerance": "all"})
    sent = dead_lettering(reader)
    reader._task = Polling(record_batch(["a", {1, 2}, "c"]))  # a set: not JSON
    converted, offsets, _, _ = reader._poll_once()
    assert [value for _, _, _, value, _ in rows_of(converted)] == [b'"a"', b'"c"']
    assert offsets == {'{"f":1}': '{"n":2}'}  # the failed record's offset moves on with the others
    assert failed_classes(sent) == [(b'{"n":1}', b"connectd.data.json_converter.JsonConverter")]


def test_a_record_batch_whose_topic_is_missing_fails_the_task():
    from connectd.data.records import SourceRecordBatch
    from connectd.errors import ConnectException

    reader = reader_for({"errors.tolerance": "all"})
    reader._task = Polling(SourceRecordBatch(None, ["a"], [{"n": 0}]))
    with pytest.raises(ConnectException, match="topic=None"):
        reader._poll_once()
