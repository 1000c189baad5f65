"""The sink task contract as Kafka Connect's WorkerSinkTask keeps it, hook by hook.

Each test drives a :class:`~connectd.runtime.sink.task.SinkTaskRunner` with a
fake range reader (no Kafka, no Spark) the way the driver does: a batch's
offset ranges in, ``runner.seeks`` (where the next batch starts) out. The
Kafka Connect behaviour each one checks is named in its docstring, from
``WorkerSinkTask`` and ``WorkerSinkTaskTest``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import pytest

from connectd.connector import SinkTask, SourceTask, SourceTaskContext, TopicPartition
from connectd.data.converters import StringConverter
from connectd.errors import ConnectException, RetriableException
from connectd.runtime.error_handling import ErrorHandler, ErrorPolicy
from connectd.runtime.sink.task import SinkTaskRunner
from connectd.transforms.chain import TransformationChain

A0, B1 = TopicPartition("a", 0), TopicPartition("b", 1)


class Task(SinkTask):
    """Records every call; *on_put* / *on_pre_commit* let a test act in them."""

    on_put: Callable[[Task, list], None] = staticmethod(lambda task, records: None)
    on_pre_commit: Callable[[Task, Mapping], Mapping | None] = staticmethod(lambda task, offsets: offsets)

    def initialize(self, context):
        self.initialized = (context is self.context, context.configs())

    def start(self, config):
        assert self.initialized  # initialize(context) came first, as in Kafka Connect
        self.calls: list[tuple] = [("start",)]

    def open(self, partitions):
        self.calls.append(("open", tuple(sorted(partitions))))

    def put(self, records):
        self.calls.append(("put", [(r.topic, r.kafka_offset) for r in records]))
        type(self).on_put(self, records)

    def pre_commit(self, offsets):
        self.calls.append(("pre_commit", dict(offsets)))
        return type(self).on_pre_commit(self, offsets)

    def close(self, partitions):
        self.calls.append(("close", tuple(sorted(partitions))))

    def stop(self):
        self.calls.append(("stop",))

    def puts(self) -> list[list[tuple[str, int]]]:
        return [call[1] for call in self.calls if call[0] == "put"]


class Reader:
    """A RangeReader's ``read``: each range's records in offset order, *chunk* at a time."""

    def __init__(self) -> None:
        self.reads: list[list[tuple[str, int, int, int]]] = []

    def read(self, ranges, chunk):
        self.reads.append(list(ranges))
        rows = [(t, p, o, None, 0, None, b"v", None) for t, p, start, end in ranges for o in range(start, end)]
        for i in range(0, len(rows), chunk):
            yield rows[i:i + chunk]


def make(task_class: type[Task] = Task, partitions=(A0, B1)) -> tuple[SinkTaskRunner, list[dict]]:
    converters = {"key": StringConverter(), "value": StringConverter(), "header": StringConverter()}
    for name, converter in converters.items():
        converter.configure({}, is_key=name == "key")
    committed: list[dict] = []
    runner = SinkTaskRunner(task_class(), {"name": "c"}, list(partitions), converters,
                            TransformationChain({}, None), committed.append, ErrorHandler(ErrorPolicy(), "c", 0))
    return runner, committed


# --- order of calls -------------------------------------------------------------------


def test_start_open_put_pre_commit_then_close_and_stop_once():
    """WorkerSinkTask: initialize(context), start, open(assignment), put per poll, preCommit at commit,
    preCommit + close on closing the partitions, stop last."""
    runner, committed = make()
    assert runner.task.initialized == (True, {"name": "c"})
    runner.process_ranges([("a", 0, 0, 2)], Reader(), chunk=10)
    runner.close()
    assert runner.task.calls == [
        ("start",), ("open", (A0, B1)), ("put", [("a", 0), ("a", 1)]), ("pre_commit", {A0: 2}),
        ("pre_commit", {A0: 2}), ("close", (A0, B1)), ("stop",)]
    assert committed == [{A0: 2}, {A0: 2}]


def test_an_idle_tick_puts_an_empty_list_then_pre_commits_where_the_partitions_stand():
    """WorkerSinkTask.deliverMessages calls put() after a poll that brought nothing, so a task
    can flush on time; connectd does it when a task had no record for offset.flush.interval.ms."""
    runner, committed = make()
    runner.process_ranges([("a", 0, 4, 4), ("b", 1, 7, 7)], Reader(), chunk=10)
    assert runner.task.calls[2:] == [("put", []), ("pre_commit", {A0: 4, B1: 7})]
    assert committed == [{A0: 4, B1: 7}]


def test_the_contexts_configs_is_the_task_config():
    """SinkTaskContext.configs() and SourceTaskContext.configs() (Kafka Connect's names)."""
    runner, _ = make()
    assert runner.task.context.configs() == {"name": "c"}
    assert SourceTaskContext({"x": "1"}, None).configs() == {"x": "1"}  # type: ignore[arg-type]


# --- what pre_commit returns -----------------------------------------------------------


@pytest.mark.parametrize(("answer", "expected"), [
    ({A0: 1}, [{A0: 1}]),                                      # a subset, and behind: committed as is
    ({}, []),                                                  # opted out: nothing committed
    (None, []),
    ({A0: 9, B1: 2}, [{B1: 2}]),                               # a-0 not yet consumed there: ignored
    ({A0: 3, TopicPartition("x", 0): 5}, [{A0: 3}]),           # not assigned: ignored
])
def test_pre_commits_answer_is_committed_as_kafka_connect_filters_it(answer, expected):
    """WorkerSinkTask.commitOffsets: an empty answer commits nothing; an offset past the
    partition's current one ("not yet consumed") or of a partition not assigned is ignored."""
    class Answering(Task):
        on_pre_commit = staticmethod(lambda task, offsets: answer)

    runner, committed = make(Answering)
    runner.process_ranges([("a", 0, 0, 3), ("b", 1, 0, 2)], Reader(), chunk=10)
    assert committed == expected


def test_pre_commit_raising_commits_nothing_and_reads_again_from_the_last_commit():
    """WorkerSinkTask.commitOffsets: preCommit throwing is logged ("Offset commit failed,
    rewinding to last committed offsets"), the consumer seeks back, and the task goes on."""
    failing = {"now": False}

    class Flaky(Task):
        @staticmethod
        def on_pre_commit(task, offsets):
            if failing["now"]:
                raise OSError("disk full")
            return offsets

    runner, committed = make(Flaky)
    reader = Reader()
    runner.process_ranges([("a", 0, 0, 2)], reader, chunk=10)
    failing["now"] = True
    assert runner.process_ranges([("a", 0, 2, 5)], reader, chunk=10) == {}
    assert committed == [{A0: 2}]
    assert runner.seeks == {A0: 2}  # the next batch starts at the last commit: 2, 3, 4 are put again
    failing["now"] = False
    runner.process_ranges([("a", 0, 2, 5)], reader, chunk=10)
    assert runner.task.puts() == [[("a", 0), ("a", 1)], [("a", 2), ("a", 3), ("a", 4)],
                                  [("a", 2), ("a", 3), ("a", 4)]]
    assert committed == [{A0: 2}, {A0: 5}]


# --- context.offset() -------------------------------------------------------------------


def test_a_rewind_in_put_delivers_from_there_and_what_followed_only_once():
    """WorkerSinkTask.rewind() seeks before the next poll: records after the rewound offset
    come again, and those not yet delivered come once (the fetched ones are dropped)."""
    class Rewinding(Task):
        @staticmethod
        def on_put(task, records):
            if records and records[-1].kafka_offset == 3 and not getattr(task, "rewound", False):
                task.rewound = True
                task.context.offset(A0, 1)

    runner, committed = make(Rewinding, partitions=(A0,))
    runner.process_ranges([("a", 0, 0, 8)], Reader(), chunk=2)
    offsets = [offset for put in runner.task.puts() for _, offset in put]
    assert offsets == [0, 1, 2, 3, 1, 2, 3, 4, 5, 6, 7]
    assert committed == [{A0: 8}]


def test_a_rewind_moves_the_committed_offset_back_until_the_records_are_read_again():
    """WorkerSinkTask.rewind() sets the partition's current and last committed offset to the
    rewound one: a commit before it is read again does not pass it."""
    class Behind(Task):
        @staticmethod
        def on_put(task, records):
            if records and records[-1].kafka_offset == 4:
                task.context.offset(A0, 10)  # ahead of the batch: skipped to, in the next batch

    runner, committed = make(Behind, partitions=(A0,))
    runner.process_ranges([("a", 0, 0, 5)], Reader(), chunk=5)
    assert committed == [{A0: 10}] and runner.seeks == {A0: 10}


# --- put() raising RetriableException, context.timeout() ----------------------------------


def test_a_retriable_error_from_put_gets_the_same_records_after_the_context_timeout():
    """WorkerSinkTask.deliverMessages: RetriableException pauses, waits context.timeout() (used
    once) and delivers the same batch again; the offsets are committed after it succeeds."""
    class Retrying(Task):
        @staticmethod
        def on_put(task, records):
            if len(task.puts()) == 1:
                task.context.timeout(1)
                raise RetriableException("target busy")

    runner, committed = make(Retrying, partitions=(A0,))
    runner.process_ranges([("a", 0, 0, 3)], Reader(), chunk=10)
    assert runner.task.puts() == [[("a", 0), ("a", 1), ("a", 2)]] * 2
    assert runner.task.context.retry_timeout_ms is None
    assert committed == [{A0: 3}]


# --- pause() / resume() ------------------------------------------------------------------


def test_records_of_a_paused_partition_are_not_put_nor_lost():
    """SinkTaskContext.pause: no records of the partition until resume(); then it goes on from
    its first record not put, and its committed offset stays there meanwhile."""
    class Pausing(Task):
        @staticmethod
        def on_put(task, records):
            if ("a", 1) in [(r.topic, r.kafka_offset) for r in records]:
                task.context.pause(A0)

    runner, committed = make(Pausing)
    reader = Reader()
    runner.process_ranges([("a", 0, 0, 4), ("b", 1, 0, 1)], reader, chunk=2)
    assert runner.seeks == {A0: 2} and runner.paused == {A0}
    runner.task.context.resume(A0)
    runner.process_ranges([("a", 0, runner.seeks[A0], 4)], reader, chunk=2)  # the driver starts it there
    offsets = sorted(offset for put in runner.task.puts() for topic, offset in put if topic == "a")
    assert offsets == [0, 1, 2, 3]
    assert committed == [{A0: 2, B1: 1}, {A0: 4}]
    with pytest.raises(ConnectException, match="not assigned"):
        runner.task.context.pause(TopicPartition("z", 0))


def test_a_pinned_task_is_offered_every_partition_it_has_had_and_may_commit_any_of_them():
    """WorkerSinkTask offers preCommit every assigned partition, not only those of the last poll:
    a task that makes records durable later (a file rolled on time) commits them then. A pinned
    task, connectd's only instance of its task, gets that; an executor instance the batch's."""
    class Rolling(Task):
        pinned = True
        on_pre_commit = staticmethod(lambda task, offsets: {A0: offsets[A0]} if B1 in offsets else {})

    runner, committed = make(Rolling)
    reader = Reader()
    runner.process_ranges([("a", 0, 0, 3)], reader, chunk=10)
    runner.process_ranges([("b", 1, 0, 1)], reader, chunk=10)
    assert runner.task.calls[-1] == ("pre_commit", {A0: 3, B1: 1})
    assert committed == [{A0: 3}]


# --- the source task's set-up ------------------------------------------------------------


class InitializedTask(SourceTask):
    """Records what the runtime gave it, and when, as a task ported from Java would look."""

    seen: ClassVar[list[tuple]] = []

    def initialize(self, context):
        # Kafka Connect's idiom: keep what initialize() is given; no super() call needed here.
        type(self).seen.append(("initialize", context.configs(), context.transaction_context()))
        self.given = context

    def start(self, config):
        type(self).seen.append(("start", self.given is self.context, dict(config)))

    def poll(self):
        return None

    def stop(self):
        type(self).seen.append(("stop",))


def test_a_source_task_is_initialized_with_its_context_before_start(tmp_path, worker_config, monkeypatch):
    """SourceTask.initialize(context) (WorkerSourceTask.initializeAndStart), then start(config); the
    context's configs() is the task config and transactionContext() is null without exactly-once."""
    import json

    from connectd.runtime.source import runner as source_runner
    from connectd.runtime.source import task as source_task

    monkeypatch.setattr(source_runner, "configure_spark_process", lambda **context: None)  # not this process's logging
    config = {"name": "c", "connector.class": "X", "x": "1"}
    spec = {"connector": "c", "task_id": 0, "task_class": f"{InitializedTask.__module__}.InitializedTask",
            "task_config": config, "connector_config": config, "worker_config": worker_config.settings(),
            "offsets": {"kind": "file", "path": str(tmp_path / "offsets.json")}, "producer": "{}"}
    reader = source_task.SourceTaskReader({source_task.SPEC_OPTION: json.dumps(spec)})
    monkeypatch.setattr(reader, "_register", lambda: None)  # not this process's SIGTERM
    InitializedTask.seen = []
    try:
        reader._ensure_started()
    finally:
        reader.stop()
    assert InitializedTask.seen == [("initialize", config, None), ("start", True, config), ("stop",)]
