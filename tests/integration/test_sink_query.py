"""A record-level sink task's query: offset ranges put in a Spark executor (or, pinned, in this process)."""

from __future__ import annotations

import json
import os

import pytest
import recording_sink
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from recording_sink import events, threads_by_process

from connectd import TopicPartition
from connectd.config.connector import sink_group_id as group_id
from connectd.plugins import get_registry
from connectd.runtime.converter_choice import configure_converters
from connectd.runtime.kafka.consumers import HighWatermarks, RangeReader, consumer_settings
from connectd.runtime.sink.executor import SinkSpec
from connectd.runtime.sink.task import SinkTaskRunner, assign_partitions, start_offsets
from connectd.runtime.spark.queries import start_sink_query
from connectd.transforms.chain import TransformationChain

pytestmark = pytest.mark.integration


def produce_lines(broker, topic: str, first: int, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(first, first + count):
        p = i % partitions
        producer.produce(topic, key=f"k{i}", value=f"p{p} {i}", partition=p)
    assert producer.flush(30) == 0


def lines_in(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def recording_task_files(broker, topic: str, partitions: int, tmp_path, more: dict[str, str] | None = None):
    """*topic* made with *partitions*; the recording task's output and events files, and its config
    (``file``, ``events.file``, ``topics``, and *more*)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)
    out, calls = tmp_path / "out.txt", tmp_path / "events.txt"
    return out, calls, {"file": str(out), "events.file": str(calls), "topics": topic, **(more or {})}


class Sink:
    """One run of a sink task's query over *partitions* partitions of *topic*, and its group."""

    def __init__(self, spark, worker: dict[str, str], connector: str, topic: str, partitions: int,
                 config: dict[str, str], pinned: bool, task: str = "RecordingSinkTask",
                 max_records: int = 2000, connector_config: dict[str, str] | None = None,
                 tick_ms: int = 0, put_records: int = 300, linger_ms: int = 0) -> None:
        self.group = Consumer(consumer_settings({"bootstrap.servers": worker["bootstrap.servers"],
                                                 "group.id": group_id(connector)}))
        self.topics: set[str] = set()
        assigned = assign_partitions([TopicPartition(topic, p) for p in range(partitions)], 0, 1)
        client = json.dumps({"bootstrap.servers": worker["bootstrap.servers"]})
        common = dict(connector=connector, task_id=0, consumer_config=client,
                      start=start_offsets(self.group, assigned), commit=self.commit, on_topics=self.topics.update,
                      max_records=max_records, put_records=put_records, tick_ms=tick_ms, linger_ms=linger_ms)
        self.runner = None
        if pinned:
            registry = get_registry()
            self.runner = SinkTaskRunner(
                getattr(recording_sink, f"Pinned{task}")(), config, assigned,
                configure_converters(worker, {}, lambda n: registry.find_class("converter", n)),
                TransformationChain({}, registry.find_class), self.commit)
            self.query = start_sink_query(spark, runner=self.runner, reader=RangeReader(self.group), **common)
        else:
            spec = SinkSpec(connector=connector, task_id=0, run="", task_class=f"recording_sink.{task}",
                            task_config=config, connector_config=connector_config or {}, worker_config=worker,
                            consumer=client, producer=client, partitions=[(tp.topic, tp.partition) for tp in assigned],
                            put_records=put_records, workdir="")
            self.query = start_sink_query(spark, spec=spec, **common)

    def commit(self, offsets) -> None:
        self.group.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()],
                          asynchronous=False)

    def committed(self, topic: str, partitions: int) -> dict[int, int]:
        return {tp.partition: tp.offset for tp in
                self.group.committed([KafkaTopicPartition(topic, p) for p in range(partitions)], timeout=30)}

    def stop(self) -> bool:
        try:
            return self.query.stop(graceful_timeout_s=30)
        finally:
            if self.runner is not None:
                self.runner.close()


@pytest.mark.parametrize("pinned", [False, True], ids=["executor", "pinned"])
def test_sink_query_writes_every_line_keeps_partition_order_and_commits(spark, broker, topic_name, tmp_path, pinned,
                                                                        wait_until, worker_config):
    out, calls, config = recording_task_files(broker, topic_name, 3, tmp_path)
    produce_lines(broker, topic_name, 0, 6000, 3)
    sink = Sink(spark, worker_config.settings(), "files-out", topic_name, 3, config, pinned)
    try:
        lines = wait_until(lambda: lines_in(out), "6000 lines written", until=lambda lines: len(lines) >= 6000,
                           timeout=90)
        assert sorted(lines) == sorted(f"p{i % 3} {i}" for i in range(6000))
        for p in range(3):  # lines of one partition keep their order
            seq = [int(line.split()[1]) for line in lines if line.startswith(f"p{p} ")]
            assert seq == sorted(seq)
        assert sink.stop() is True
    finally:
        if sink.query.is_active():
            sink.stop()
    assert sink.committed(topic_name, 3) == {0: 2000, 1: 2000, 2: 2000}
    assert sink.topics == {topic_name}
    recorded = events(calls)
    # every call on an instance from one thread (one instance per process here)
    assert all(len(threads) == 1 for threads in threads_by_process(calls).values())
    for pid in {pid for pid, call, _ in recorded if call == "close"}:  # pre_commit once more before close
        own = [call for p, call, _ in recorded if p == pid]
        assert own[own.index("close") - 1] == "pre_commit"
    put_by = {pid for pid, call, _ in recorded if call == "put"}
    if pinned:  # in this process, one instance for the whole run
        assert put_by == {os.getpid()}
        assert [call for _, call, _ in recorded if call != "put" and call != "pre_commit"] == [
            "start", "open", "close", "stop"]
    else:  # in Spark's Python workers; each instance was stopped before stop() returned
        assert os.getpid() not in put_by
        started = [pid for pid, call, _ in recorded if call == "start"]
        assert sorted(started) == sorted(pid for pid, call, _ in recorded if call == "stop")
        for pid in started:
            own = [call for p, call, _ in recorded if p == pid and call not in ("put", "pre_commit")]
            assert own == ["start", "open", "close", "stop"]
    assert all(int(n) <= 300 for _, call, n in recorded if call == "put")  # put_records bounds put()
    sink.group.close()

    # a new run starts from the group's offsets: only new lines, none twice
    produce_lines(broker, topic_name, 6000, 300, 3)
    sink = Sink(spark, worker_config.settings(), "files-out", topic_name, 3, config, pinned)
    try:
        wait_until(lambda: lines_in(out), "6300 lines written", until=lambda lines: len(lines) >= 6300, timeout=90)
    finally:
        sink.stop()  # idle: everything read has been written
    lines = out.read_text().splitlines()
    assert sorted(lines) == sorted(f"p{i % 3} {i}" for i in range(6300))  # nothing twice
    assert sink.committed(topic_name, 3) == {0: 2100, 1: 2100, 2: 2100}
    sink.group.close()


def test_a_lingering_batch_puts_what_arrives_during_it_and_commits_it_when_it_ends(
        spark, broker, topic_name, tmp_path, wait_until, worker_config):
    """sink.batch.linger.ms: the batch that put the first records goes on putting those that
    arrive, on its partitions without records too; nothing is committed before it ends, and it
    ends early when the task stops."""
    out, calls, config = recording_task_files(broker, topic_name, 3, tmp_path)
    sink = Sink(spark, worker_config.settings(), "lingers", topic_name, 3, config, False)
    try:
        sink.query.linger(60_000)  # as the worker gives it, while the query runs
        produce_lines(broker, topic_name, 0, 30, 1)  # the batch has records of partition 0 only
        wait_until(lambda: lines_in(out), "the first lines", until=lambda lines: len(lines) >= 30)
        produce_lines(broker, topic_name, 30, 30, 3)
        wait_until(lambda: lines_in(out), "the lines sent later", until=lambda lines: len(lines) >= 60)
        # Still the first batch (it lingers a minute): the driver commits when a batch ends.
        assert all(offset < 0 for offset in sink.committed(topic_name, 3).values())
        assert sink.stop() is True  # within its 30 s: the stop ended the lingering
    finally:
        if sink.query.is_active():
            sink.stop()
    assert sorted(lines_in(out)) == sorted([f"p0 {i}" for i in range(30)] + [f"p{i % 3} {i}" for i in range(30, 60)])
    assert sink.committed(topic_name, 3) == {0: 40, 1: 10, 2: 10}
    sink.group.close()


def test_pausing_the_task_ends_a_lingering_batch(spark, broker, topic_name, tmp_path, wait_until, worker_config):
    out, calls, config = recording_task_files(broker, topic_name, 3, tmp_path)
    produce_lines(broker, topic_name, 0, 30, 3)
    sink = Sink(spark, worker_config.settings(), "lingers-paused", topic_name, 3, config, False, linger_ms=60_000)
    try:
        wait_until(lambda: lines_in(out), "the lines", until=lambda lines: len(lines) >= 30)
        sink.query.pause()
        # the batch ends (and commits) long before its minute of lingering is up
        wait_until(lambda: sink.committed(topic_name, 3), "the batch committed once paused",
                   until=lambda committed: committed == {0: 10, 1: 10, 2: 10}, timeout=30)
        assert sink.stop() is True
    finally:
        if sink.query.is_active():
            sink.stop()
    sink.group.close()


def test_after_a_lingering_batch_the_next_starts_where_it_got_to(spark, broker, topic_name, tmp_path, wait_until,
                                                                 worker_config):
    """Records put while a batch lingered are past the end it was planned with: the next batch
    starts after them (none put twice), and every partition keeps its order."""
    out, calls, config = recording_task_files(broker, topic_name, 3, tmp_path)
    sink = Sink(spark, worker_config.settings(), "lingers-often", topic_name, 3, config, False, linger_ms=1000)
    try:
        for first in range(0, 300, 30):  # some arrive while a batch lingers, some between batches
            produce_lines(broker, topic_name, first, 30, 3)
            wait_until(lambda: lines_in(out), f"{first + 30} lines", until=lambda lines: len(lines) >= first + 30)
        wait_until(lambda: sink.committed(topic_name, 3), "every offset committed",
                   until=lambda committed: committed == {0: 100, 1: 100, 2: 100})
        assert sink.stop() is True
    finally:
        if sink.query.is_active():
            sink.stop()
    lines = lines_in(out)
    assert sorted(lines) == sorted(f"p{i % 3} {i}" for i in range(300))  # each once
    for p in range(3):
        seq = [int(line.split()[1]) for line in lines if line.startswith(f"p{p} ")]
        assert seq == sorted(seq)
    sink.group.close()


#: (pinned, sink.batch.linger.ms): in an executor, in the worker process, in an executor that lingers
MODES = pytest.mark.parametrize("pinned, linger", [(False, 0), (True, 0), (False, 500)],
                                ids=["executor", "pinned", "executor-lingering"])


@MODES
@pytest.mark.parametrize("batch", [2000, 60], ids=["one-batch", "small-batches"])
def test_context_offset_moves_partitions_as_kafka_connects_seek_does(spark, broker, topic_name, tmp_path, pinned,
                                                                      linger, batch, wait_until, worker_config):
    """A partition moved within the batch is read again from there at once; one moved to the
    batch's end or past it (with small batches) starts there in the next batch, through the
    reader. Record i is on partition i % 2 at offset i // 2."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    out, calls = tmp_path / "out.txt", tmp_path / "events.txt"
    # partition 0 resumes at 100 (as from offsets the task keeps itself); partition 1 skips from
    # 10 to 250, then is rewound to 260 once 280 has been put.
    config = {"file": str(out), "events.file": str(calls), "topics": topic_name,
              "moves": "0:open:100,1:10:250,1:280:260"}
    produce_lines(broker, topic_name, 0, 600, 2)
    sink = Sink(spark, worker_config.settings(), "moves", topic_name, 2, config, pinned, task="RewindingSinkTask",
                max_records=batch, linger_ms=linger)
    try:
        wait_until(lambda: sink.committed(topic_name, 2), "every offset committed",
                   until=lambda committed: committed == {0: 300, 1: 300}, timeout=90)
        assert sink.stop() is True
    finally:
        if sink.query.is_active():
            sink.stop()
    lines = lines_in(out)
    offsets = {p: [int(line.split()[1]) // 2 for line in lines if line.startswith(f"p{p} ")] for p in (0, 1)}
    assert sorted(offsets[0]) == list(range(100, 300))  # 0-99 never put
    skipped_from = max(o for o in offsets[1] if o < 250) + 1  # the end of what was put with offset 10
    assert 10 < skipped_from <= 250  # (records put with 10 in one put() are not taken back)
    if batch < 100:
        assert skipped_from < 250  # the next batch started at 250: some records were never read
    assert set(offsets[1]) == set(range(skipped_from)) | set(range(250, 300))
    again = {o for o in offsets[1] if offsets[1].count(o) > 1}
    assert set(range(260, 281)) <= again and min(again) == 260  # the rewind: 260-280 put again
    rewound_at = offsets[1].index(260, offsets[1].index(280))
    assert offsets[1][rewound_at:] == sorted(offsets[1][rewound_at:])  # then in order to the end
    assert [detail for _, call, detail in events(calls) if call == "offset"] == ["0:100", "1:250", "1:260"]
    sink.group.close()


@MODES
def test_a_paused_partition_is_not_put_or_committed_past_until_the_task_resumes_it(
        spark, broker, topic_name, tmp_path, pinned, linger, wait_until, worker_config):
    """As Kafka Connect's context.pause(): records of the partition read in the same batch but not
    yet put are left for later; the pause holds over batches (and instances) until resume()."""
    out, calls, config = recording_task_files(broker, topic_name, 2, tmp_path, {"pause.at": "0:5", "resume.at": "1:15"})
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for partition, count in ((0, 100), (1, 10)):
        for offset in range(count):
            producer.produce(topic_name, value=f"p{partition} {offset}", partition=partition)
    assert producer.flush(30) == 0
    sink = Sink(spark, worker_config.settings(), "pausing", topic_name, 2, config, pinned, task="PausingSinkTask",
                max_records=40, put_records=10, linger_ms=linger)
    try:
        wait_until(lambda: sink.committed(topic_name, 2), "partition 1 committed while 0 is paused",
                   until=lambda committed: committed[1] == 10, timeout=90)
        # more batches come (partition 1's); partition 0 stays where its first record not put is
        for offset in range(10, 13):
            producer.produce(topic_name, value=f"p1 {offset}", partition=1)
        assert producer.flush(30) == 0
        wait_until(lambda: sink.committed(topic_name, 2), "partition 1's next batch committed",
                   until=lambda committed: committed[1] == 13, timeout=90)
        before = [int(line.split()[1]) for line in lines_in(out) if line.startswith("p0 ")]
        # up to the put() with offset 5 (10 records at most), though its batch read 30 of partition 0
        assert 6 <= len(before) <= 10 and before == list(range(len(before)))
        assert sink.committed(topic_name, 2)[0] == len(before)
        for offset in range(13, 20):
            producer.produce(topic_name, value=f"p1 {offset}", partition=1)
        assert producer.flush(30) == 0
        wait_until(lambda: sink.committed(topic_name, 2), "every offset committed once resumed",
                   until=lambda committed: committed == {0: 100, 1: 20}, timeout=90)
        assert sink.stop() is True
    finally:
        if sink.query.is_active():
            sink.stop()
    assert [int(line.split()[1]) for line in lines_in(out) if line.startswith("p0 ")] == list(range(100))
    assert [int(line.split()[1]) for line in lines_in(out) if line.startswith("p1 ")] == list(range(20))
    assert [call for _, call, _ in events(calls) if call in ("pause", "resume")] == ["pause", "resume"]
    sink.group.close()


@pytest.mark.parametrize("pinned", [False, True], ids=["executor", "pinned"])
def test_the_offsets_committed_are_exactly_what_pre_commit_returned(spark, broker, topic_name, tmp_path, pinned,
                                                                     wait_until, worker_config):
    out, calls, config = recording_task_files(broker, topic_name, 2, tmp_path, {"hold": "7"})
    produce_lines(broker, topic_name, 0, 400, 2)
    sink = Sink(spark, worker_config.settings(), "holding", topic_name, 2, config, pinned, task="HoldingSinkTask",
                max_records=90)
    try:
        wait_until(lambda: len(lines_in(out)), "every line put", until=lambda n: n >= 400, timeout=90)
        wait_until(lambda: sink.committed(topic_name, 2), "the last batch's commit",
                   until=lambda committed: committed == {0: 193, 1: 193})  # 200 each, 7 held back
        assert sink.stop() is True
    finally:
        if sink.query.is_active():
            sink.stop()
    assert sink.committed(topic_name, 2) == {0: 193, 1: 193}  # close()'s pre_commit holds them back too
    sink.group.close()


@pytest.mark.parametrize("pinned", [False, True], ids=["executor", "pinned"])
def test_put_raising_retriable_errors_gets_the_same_records_again_until_it_succeeds(
        spark, broker, topic_name, tmp_path, pinned, wait_until, worker_config):
    out, calls, config = recording_task_files(broker, topic_name, 1, tmp_path,
                                              {"retriable.puts": "3", "retry.timeout.ms": "50"})
    produce_lines(broker, topic_name, 0, 200, 1)
    # errors.retry.timeout is 0 (the default): it bounds converters and transforms, not put()
    sink = Sink(spark, worker_config.settings(), "flaky", topic_name, 1, config, pinned, task="FlakySinkTask")
    try:
        wait_until(lambda: sink.committed(topic_name, 1), "every offset committed",
                   until=lambda committed: committed == {0: 200}, timeout=90)
        assert sink.stop() is True
    finally:
        if sink.query.is_active():
            sink.stop()
    assert sorted(lines_in(out)) == sorted(f"p0 {i}" for i in range(200))  # each once
    recorded = [(call, detail) for _, call, detail in events(calls) if call in ("put", "put_failed")]
    assert recorded[:4] == [("put_failed", recorded[0][1])] * 3 + [("put", recorded[0][1])]  # the same records
    sink.group.close()


@pytest.mark.parametrize("tolerance", ["all", "none"])
def test_errant_records_go_to_the_dead_letter_topic_with_their_context(spark, broker, topic_name, tmp_path, tolerance,
                                                                       wait_until, consume_records, worker_config):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    dlq = f"{topic_name}-dlq"
    for name in (topic_name, dlq):
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)
    out, calls = tmp_path / "out.txt", tmp_path / "events.txt"
    config = {"file": str(out), "events.file": str(calls), "topics": topic_name, "errant.every": "50"}
    errors = {"errors.tolerance": tolerance, "errors.deadletterqueue.topic.name": dlq,
              "errors.deadletterqueue.context.headers.enable": "true"}
    produce_lines(broker, topic_name, 0, 200, 1)
    sink = Sink(spark, worker_config.settings(), "errant", topic_name, 1, config, False, task="ErrantSinkTask",
                connector_config=errors)
    try:
        if tolerance == "all":
            wait_until(lambda: sink.committed(topic_name, 1), "every offset committed",
                       until=lambda committed: committed == {0: 200}, timeout=90)
            assert sink.stop() is True
        else:
            wait_until(lambda: not sink.query.is_active(), "the task failed", timeout=90)
            assert "Tolerance exceeded in error handler" in sink.query.failure()
            assert "cannot write p0 0" in sink.query.failure()
    finally:
        if sink.query.is_active():
            sink.stop()
    reported = [f"p0 {i}" for i in range(0, 200, 50)]
    dead = consume_records(dlq, 4 if tolerance == "all" else 1, partitions=1, timeout=30)
    assert [d.value().decode() for d in dead] == reported[:len(dead)]
    headers = dict(dead[0].headers())
    assert headers["__connect.errors.stage"] == b"TASK_PUT"
    assert headers["__connect.errors.class.name"] == b"recording_sink.ErrantSinkTask"  # its dotted path
    assert headers["__connect.errors.offset"] == b"0"
    assert headers["__connect.errors.exception.message"] == b"cannot write p0 0"
    if tolerance == "all":
        assert sorted(lines_in(out)) == sorted(f"p0 {i}" for i in range(200) if i % 50)
    else:
        assert sink.committed(topic_name, 1) == {0: -1001}  # the failed batch committed nothing
    sink.group.close()


@pytest.mark.parametrize("pinned", [False, True], ids=["executor", "pinned"])
def test_an_idle_task_gets_put_of_nothing_and_pre_commit_each_flush_interval(spark, broker, topic_name, tmp_path,
                                                                            pinned, wait_until, worker_config):
    out, calls, config = recording_task_files(broker, topic_name, 2, tmp_path)
    produce_lines(broker, topic_name, 0, 10, 2)
    sink = Sink(spark, worker_config.settings(), "idle", topic_name, 2, config, pinned, tick_ms=500)
    try:
        wait_until(lambda: sink.committed(topic_name, 2), "the records committed",
                   until=lambda committed: committed == {0: 5, 1: 5}, timeout=90)
        # no record arrives any more: put([]) then pre_commit of where each partition stands, again and again
        recorded = wait_until(lambda: [(call, detail) for _, call, detail in events(calls)], "two idle ticks",
                              until=lambda r: r.count(("put", "0")) >= 2, timeout=30)
        assert sink.stop() is True
    finally:
        if sink.query.is_active():
            sink.stop()
    first = recorded.index(("put", "0"))
    assert sum(int(detail) for call, detail in recorded[:first] if call == "put") == 10  # the records, before
    assert recorded[first + 1] == ("pre_commit", "0:5,1:5")
    assert sink.committed(topic_name, 2) == {0: 5, 1: 5}
    assert len(lines_in(out)) == 10
    sink.group.close()


def test_a_failed_batch_commits_nothing_and_its_instance_is_stopped(spark, broker, topic_name, tmp_path,
                                                                    wait_until, worker_config):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=30)
    calls = tmp_path / "events.txt"
    produce_lines(broker, topic_name, 0, 50, 1)
    # The file is a directory: put() fails once it has been called.
    config = {"file": str(tmp_path), "events.file": str(calls), "topics": topic_name}
    sink = Sink(spark, worker_config.settings(), "failing", topic_name, 1, config, pinned=False)
    try:
        wait_until(lambda: sink.query.is_active(), "the query to fail", until=lambda active: not active, timeout=90)
        assert "IsADirectoryError" in (sink.query.failure() or "")
    finally:
        sink.stop()
    assert sink.committed(topic_name, 1) == {0: -1001}  # nothing committed
    recorded = [call for _, call, _ in events(calls)]
    assert recorded[:3] == ["start", "open", "put"] and recorded[-2:] == ["close", "stop"]
    assert "pre_commit" not in recorded
    sink.group.close()


def test_high_watermarks_come_from_fetches_so_a_batch_ends_after_the_last_record(broker, topic_name, wait_until):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    produce_lines(broker, topic_name, 0, 3001, 2)  # batched: ListOffsets LATEST is wrong on the dev broker
    watermarks = HighWatermarks({"bootstrap.servers": broker.bootstrap_servers})
    try:
        start = {f"{topic_name}:0": 0, f"{topic_name}:1": 0}
        expected = {f"{topic_name}:0": 1501, f"{topic_name}:1": 1500}
        wait_until(lambda: watermarks.high(start), "both high watermarks", until=lambda high: high == expected,
                   timeout=30)
        produce_lines(broker, topic_name, 3001, 10, 2)  # new records move them on, partition by partition
        expected = {f"{topic_name}:0": 1506, f"{topic_name}:1": 1505}
        wait_until(lambda: watermarks.high(start), "the new high watermarks", until=lambda high: high == expected,
                   timeout=30)
    finally:
        watermarks.close()


def test_while_records_arrive_each_batch_ends_at_the_high_watermark_of_its_time(broker, topic_name, wait_until,
                                                                               monkeypatch):
    """The fetcher stops once a record is queued, and a broker may hold a Fetch at the end until its
    wait expires: the last answer's watermark could be a batch old, and a record a batch late. A
    partition receiving records is fetched again before its end is given."""
    from connectd.runtime.kafka import consumers as kafka_consumers

    # The answers' round trip, not how long a loaded machine takes for it, is what is tested here.
    monkeypatch.setattr(kafka_consumers, "FRESH_FETCH_S", 30.0)
    monkeypatch.setattr(kafka_consumers, "FRESH_FETCH_GRACE_S", 30.0)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    produce_lines(broker, topic_name, 0, 10, 2)
    watermarks = HighWatermarks({"bootstrap.servers": broker.bootstrap_servers})
    start = {f"{topic_name}:0": 0, f"{topic_name}:1": 0}
    try:
        wait_until(lambda: watermarks.high(start), "the first high watermarks",
                   until=lambda high: high == {f"{topic_name}:0": 5, f"{topic_name}:1": 5}, timeout=30)
        for produced in range(10, 70, 10):
            produce_lines(broker, topic_name, produced, 10, 2)  # acknowledged: in the log before high()
            ends = produced // 2 + 5
            assert watermarks.high(start) == {f"{topic_name}:0": ends, f"{topic_name}:1": ends}
    finally:
        watermarks.close()
