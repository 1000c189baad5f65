"""A record-level source task as a Spark query: file → transforms → converters → Kafka → offsets file or topic."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from recording_sink import events

from connectd.metrics import WorkerMetrics
from connectd.runtime.error_handling import ErrorPolicy
from connectd.runtime.kafka.clients import client_option
from connectd.runtime.offsets.store import FileOffsetStore, TopicOffsetStore, close_producers
from connectd.runtime.source.task import _ProduceFailures
from connectd.runtime.spark.queries import start_source_query

pytestmark = pytest.mark.integration


def create_topic(broker, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)


def read_topic(consume_records, topic: str, expected: int) -> list:
    # anything beyond what is expected would be a duplicate: look a little longer
    return consume_records(topic, expected, partitions=1, timeout=90, linger=1.0)


def run(spark, worker: dict[str, str], path, topic, connector_extra=None, offsets_topic=None, producer_extra=None,
        task_class="connectd_file.tasks.FileStreamSourceTask", metrics=None, on_executors=True, exactly_once=None):
    connector = {"name": "lines", "connector.class": "FileStreamSource", "file": str(path), "topic": topic,
                 **(connector_extra or {})}
    return start_source_query(
        spark, connector="lines", task_id=0, task_class=task_class,
        task_config=connector, connector_config=connector, worker_config=worker,
        producer_config={"bootstrap.servers": worker["bootstrap.servers"], **(producer_extra or {})},
        max_records=500, metrics=metrics, on_executors=on_executors, exactly_once=exactly_once,
        **({"offsets_path": worker["offset.storage.file.filename"]} if offsets_topic is None else
           {"offsets": {"kind": "topic", "topic": offsets_topic, "client": client_option(worker, "producer")}}),
    )


def offset_reaching(wait_until, tmp_path, path, position: int) -> dict:
    """The offset stored for *path* once it reaches *position*."""
    store = FileOffsetStore(tmp_path / "offsets.json")

    def stored() -> dict | None:
        offsets = store.get("lines", [{"filename": str(path)}])
        return next(iter(offsets.values())) if offsets else None

    return wait_until(stored, f"the stored offset of {path.name} to reach position {position}",
                      until=lambda offset: offset is not None and offset["position"] == position)


def test_file_source_query_resumes_exactly_where_it_stopped(spark, broker, topic_name, tmp_path, wait_until,
                                                            consume_records, worker_config):
    create_topic(broker, topic_name)
    path = tmp_path / "in.txt"
    path.write_text("".join(f"line {i}\n" for i in range(2000)))
    first = run(spark, worker_config.settings(), path, topic_name)
    try:
        got = read_topic(consume_records, topic_name, 2000)
        assert [m.value().decode() for m in got] == [f"line {i}" for i in range(2000)]
        assert offset_reaching(wait_until, tmp_path, path, path.stat().st_size) == {"position": path.stat().st_size}
    finally:
        assert first.stop(graceful_timeout_s=30) is True
    assert not first.workdir.exists()

    with open(path, "a") as f:
        f.write("".join(f"line {i}\n" for i in range(2000, 2300)))
    second = run(spark, worker_config.settings(), path, topic_name)
    try:
        got = read_topic(consume_records, topic_name, 2300)
        assert [m.value().decode() for m in got] == [f"line {i}" for i in range(2300)]  # no duplicates, no gap
    finally:
        second.stop(graceful_timeout_s=30)


def test_a_batch_not_wholly_acknowledged_stores_no_offset_and_fails_the_task(spark, broker, topic_name, tmp_path,
                                                                            wait_until, worker_config):
    create_topic(broker, topic_name)
    path = tmp_path / "in.txt"
    # The producer refuses records over 2,000 bytes: the third line cannot be written.
    path.write_text("short 1\nshort 2\n" + "x" * 5000 + "\nshort 4\n")
    query = run(spark, worker_config.settings(), path, topic_name, producer_extra={"message.max.bytes": "2000"})
    try:
        wait_until(query.is_active, "the query to fail", until=lambda active: not active, timeout=90)
        assert "MSG_SIZE_TOO_LARGE" in (query.failure() or "")
    finally:
        query.stop(graceful_timeout_s=30)
    assert FileOffsetStore(tmp_path / "offsets.json").get("lines", [{"filename": str(path)}]) == {}


def test_with_errors_tolerance_all_a_record_kafka_refuses_is_passed_over(spark, broker, topic_name, tmp_path,
                                                                        wait_until, consume_records, worker_config):
    """KIP-779: the task goes on, the other records are written and the offset moves past the
    refused one; the failure is counted (on the executor, brought back with the batch)."""
    create_topic(broker, topic_name)
    path = tmp_path / "in.txt"
    path.write_text("short 1\nshort 2\n" + "x" * 5000 + "\nshort 4\n")
    metrics = WorkerMetrics("w")
    query = run(spark, worker_config.settings(), path, topic_name, {"errors.tolerance": "all",
                                                                   "errors.log.enable": "true"},
                producer_extra={"message.max.bytes": "2000"}, metrics=metrics.task("lines", 0))
    try:
        assert [m.value() for m in read_topic(consume_records, topic_name, 3)] == [b"short 1", b"short 2",
                                                                                   b"short 4"]
        assert offset_reaching(wait_until, tmp_path, path, path.stat().st_size) == {"position": path.stat().st_size}
        labels = {"worker": "w", "connector": "lines", "task": "0"}

        def counted(name: str) -> float | None:
            return metrics.registry.get_sample_value(f"connectd_{name}", labels)

        wait_until(lambda: counted("task_record_failures_total"), "the failure counted", until=lambda n: n == 1)
        assert counted("task_errors_logged_total") == 1 and counted("task_records_skipped_total") == 0
        assert query.is_active()
    finally:
        query.stop(graceful_timeout_s=30)


def test_failures_are_counted_and_dead_lettered_as_the_policy_says(broker, topic_name, consume_records):
    create_topic(broker, topic_name)
    dlq = f"{topic_name}-dlq"
    create_topic(broker, dlq)
    policy = ErrorPolicy(tolerate_all=True, log_enable=True, dlq_topic=dlq, dlq_context_headers=True)
    spec = {"connector": "lines", "task_id": "0",
            "producer": client_option({"bootstrap.servers": broker.bootstrap_servers}, "producer")}
    failures = _ProduceFailures(spec, policy)
    try:
        failures.report(KafkaException("MSG_SIZE_TOO_LARGE"), topic_name, -1, b"k", b"big", [("h", b"v")])
        failures.flush()
        counts = failures.counts()
    finally:
        failures.close()

    assert counts == {"failures": 1, "logged": 1, "dlq_requests": 1}  # not skipped: Kafka counts none
    [dead] = consume_records(dlq, 1, timeout=30)
    headers = dict(dead.headers())
    assert (dead.key(), dead.value(), headers["h"]) == (b"k", b"big", b"v")
    assert headers["__connect.errors.stage"] == b"KAFKA_PRODUCE"
    assert headers["__connect.errors.class.name"] == b"connectd.runtime.source.runner.SourceTaskRunner"
    assert headers["__connect.errors.topic"] == topic_name.encode()
    assert "__connect.errors.partition" not in headers  # the producer had not chosen one


def test_not_tolerated_the_failure_is_reported_then_raised(broker, topic_name):
    failures = _ProduceFailures({"connector": "lines", "task_id": "0"}, ErrorPolicy(tolerate_all=False))
    with pytest.raises(Exception, match="Tolerance exceeded in error handler: KAFKA_PRODUCE"):
        failures.report(KafkaException("refused"), topic_name, 0, None, b"v", [])
    assert failures.counts() == {"failures": 1}


def test_records_dropped_by_a_transform_still_move_the_offset(spark, broker, topic_name, tmp_path, wait_until,
                                                              consume_records, worker_config):
    create_topic(broker, topic_name)
    path = tmp_path / "in.txt"
    path.write_text("keep 1\ndrop 2\nkeep 3\ndrop 4\n")
    query = run(spark, worker_config.settings(), path, topic_name, {
        "transforms": "onlyKeep",
        "transforms.onlyKeep.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.onlyKeep.predicate": "isDrop",
        "predicates": "isDrop",
        "predicates.isDrop.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        "predicates.isDrop.name": "never-set",
        "transforms.onlyKeep.negate": "true",
    })
    try:
        # negate=true on a predicate that never matches: Filter drops every record
        assert offset_reaching(wait_until, tmp_path, path, path.stat().st_size) == {"position": path.stat().st_size}
        assert read_topic(consume_records, topic_name, 0) == []
    finally:
        query.stop(graceful_timeout_s=30)


def test_source_records_failing_a_transform_go_to_the_dead_letter_topic(spark, broker, topic_name, tmp_path,
                                                                       wait_until, consume_records, worker_config):
    create_topic(broker, topic_name)
    dlq = f"{topic_name}-dlq"
    create_topic(broker, dlq)
    path = tmp_path / "in.txt"
    path.write_text("one\ntwo\n")
    metrics = WorkerMetrics("w")
    query = run(spark, worker_config.settings(), path, topic_name, {
        "transforms": "x",
        "transforms.x.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
        "transforms.x.field": "f",  # a string value has no fields: fails on every record
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.context.headers.enable": "true",
    }, metrics=metrics.task("lines", 0))
    try:
        dead = read_topic(consume_records, dlq, 2)
        assert offset_reaching(wait_until, tmp_path, path, path.stat().st_size) == {"position": path.stat().st_size}
        assert query.is_active()  # tolerated: the task goes on
        # Counted in the planner process, where poll() and the transforms run, brought back with the batch.
        labels = {"worker": "w", "connector": "lines", "task": "0"}

        def counted(name: str) -> float | None:
            return metrics.registry.get_sample_value(f"connectd_{name}", labels)

        wait_until(lambda: counted("task_dlq_produce_requests_total"), "the batch's counts", until=lambda n: n == 2)
        assert counted("task_record_failures_total") == counted("task_records_skipped_total") == 2
        assert counted("source_records_polled_total") == 2 and counted("source_polls_total") >= 1
        assert counted("source_poll_seconds_total") > 0 and counted("task_dlq_produce_failures_total") == 0
    finally:
        query.stop(graceful_timeout_s=30)
    assert [m.value() for m in dead] == [b"one", b"two"]
    headers = dict(dead[0].headers())
    assert headers["__connect.errors.stage"] == b"TRANSFORMATION"
    # the transform that failed, not the chain
    assert headers["__connect.errors.class.name"] == b"connectd.transforms.extract_field.ExtractFieldValue"
    assert headers["__connect.errors.topic"] == topic_name.encode()
    assert json.loads(headers["__connect.errors.source.partition"]) == {"filename": str(path)}
    assert json.loads(headers["__connect.errors.source.offset"]) == {"position": 4}
    assert read_topic(consume_records, topic_name, 0) == []


def test_missing_topic_is_created_as_topic_creation_says(spark, broker, topic_name, tmp_path, wait_until,
                                                         worker_config):
    path = tmp_path / "in.txt"
    path.write_text("a\nb\n")
    query = run(spark, worker_config.settings(), path, topic_name, {
        "topic.creation.default.partitions": "4",
        "topic.creation.default.replication.factor": "1",
    })
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        wait_until(lambda: topic_name in admin.list_topics(timeout=10).topics, f"topic {topic_name} to be created")
        assert len(admin.list_topics(timeout=10).topics[topic_name].partitions) == 4
        assert offset_reaching(wait_until, tmp_path, path, path.stat().st_size) == {"position": 4}
    finally:
        query.stop(graceful_timeout_s=30)


def test_offsets_in_a_topic_are_stored_and_read_back(spark, broker, topic_name, tmp_path, worker_config, wait_until,
                                                    consume_records):
    create_topic(broker, topic_name)
    offsets_topic = f"{topic_name}-offsets"
    create_topic(broker, offsets_topic, partitions=5)
    path = tmp_path / "in.txt"
    path.write_text("".join(f"line {i}\n" for i in range(300)))
    store = TopicOffsetStore(offsets_topic, {"bootstrap.servers": broker.bootstrap_servers})
    first = run(spark, worker_config.settings(), path, topic_name, offsets_topic=offsets_topic)
    try:
        assert len(read_topic(consume_records, topic_name, 300)) == 300
        stored = {json.dumps({"filename": str(path)}, separators=(",", ":")): {"position": path.stat().st_size}}
        wait_until(lambda: store.get("lines", [{"filename": str(path)}]) == stored, "offsets stored in the topic")
    finally:
        assert first.stop(graceful_timeout_s=30) is True
        close_producers()

    with open(path, "a") as f:
        f.write("".join(f"line {i}\n" for i in range(300, 350)))
    second = run(spark, worker_config.settings(), path, topic_name, offsets_topic=offsets_topic)
    try:
        got = read_topic(consume_records, topic_name, 350)
        assert [m.value().decode() for m in got] == [f"line {i}" for i in range(350)]  # resumed from the topic
    finally:
        second.stop(graceful_timeout_s=30)


def run_recording(spark, broker, worker_config, tmp_path, topic: str, task: str, config: dict):
    """A recording_source task's query on a new topic, and the file its calls are recorded in."""
    create_topic(broker, topic)
    calls = tmp_path / "events.txt"
    return run(spark, worker_config.settings(), tmp_path / "unused", topic, {**config, "events.file": str(calls)},
               task_class=f"recording_source.{task}", on_executors=task != "DriverPolledSourceTask"), calls


def command_line(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def test_records_are_polled_and_produced_on_the_executors_host_never_in_the_worker_process(
        spark, broker, topic_name, tmp_path, wait_until, consume_records, worker_config):
    """The task lives in its host process: start, every poll() and stop there, and the records
    with it (commit_record learns where Kafka put each one in that same process)."""
    query, calls = run_recording(spark, broker, worker_config, tmp_path, topic_name, "RecordingSourceTask",
                                 {"count": "40", "per.poll": "4"})
    try:
        assert len(read_topic(consume_records, topic_name, 40)) == 40
        host = wait_until(lambda: {pid for pid, call, _ in events(calls) if call == "start"}, "the task to start")
        assert len(host) == 1 and os.getpid() not in host
        assert "connectd.runtime.source.host" in command_line(next(iter(host)))
        wait_until(lambda: [d for _, c, d in events(calls) if c == "commit_record"], "commit_record for 40",
                   until=lambda committed: len(committed) == 40)
    finally:
        assert query.stop(graceful_timeout_s=30) is True
    assert {pid for pid, _, _ in events(calls)} == host  # poll, commit_record, commit, stop: one process
    assert [call for _, call, _ in events(calls)].count("stop") == 1


def test_a_task_that_must_be_polled_on_the_driver_is_polled_in_the_planner_process(
        spark, broker, topic_name, tmp_path, wait_until, consume_records, worker_config):
    query, calls = run_recording(spark, broker, worker_config, tmp_path, topic_name, "DriverPolledSourceTask",
                                 {"count": "20"})
    try:
        assert len(read_topic(consume_records, topic_name, 20)) == 20
        polled_in = wait_until(lambda: {pid for pid, call, _ in events(calls) if call == "start"}, "the task to start")
    finally:
        assert query.stop(graceful_timeout_s=30) is True
    (pid,) = polled_in
    assert pid != os.getpid() and "connectd.runtime.source.host" not in command_line(pid)


DROP_WITH_HEADER = {  # a Filter dropping the records that carry the header "drop"
    "transforms": "dropMarked",
    "transforms.dropMarked.type": "org.apache.kafka.connect.transforms.Filter",
    "transforms.dropMarked.predicate": "isMarked",
    "predicates": "isMarked",
    "predicates.isMarked.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
    "predicates.isMarked.name": "drop",
}


BOTH_PLACES = pytest.mark.parametrize("task", ["RecordingSourceTask", "DriverPolledSourceTask"],
                                      ids=["on-executors", "poll-on-driver"])


@BOTH_PLACES
def test_commit_record_tells_the_task_where_kafka_put_each_record_and_commit_follows(
        spark, broker, topic_name, tmp_path, wait_until, consume_records, worker_config, task):
    """As Kafka Connect's commitRecord: every record polled, in poll order, with its topic, partition
    and offset once acknowledged; None for one a transform dropped; commit() after its batch is stored."""
    query, calls = run_recording(spark, broker, worker_config, tmp_path, topic_name, task,
                                 {"count": "50", "per.poll": "7", "header.every": "5", **DROP_WITH_HEADER})
    try:
        committed = wait_until(lambda: [d for _, call, d in events(calls) if call == "commit_record"],
                               "commit_record for all 50 records", until=lambda c: len(c) >= 50, timeout=90)
        wait_until(lambda: [call for _, call, _ in events(calls)], "commit() after the last commit_record",
                   until=lambda seen: "commit" in seen[max(i for i, c in enumerate(seen) if c == "commit_record"):])
    finally:
        assert query.stop(graceful_timeout_s=30) is True
    where = {m.value().decode(): f"{m.topic()}:{m.partition()}:{m.offset()}"
             for m in read_topic(consume_records, topic_name, 40)}
    assert committed == [f"n {i} " + ("None" if i % 5 == 0 else where[f"n {i}"]) for i in range(50)]
    recorded = [call for _, call, _ in events(calls)]
    assert recorded.count("commit_record") == 50 and recorded.count("stop") == 1 and recorded[-1] == "stop"


def test_a_task_without_commit_record_gets_commit_after_its_batches_and_at_stop(
        spark, broker, topic_name, tmp_path, wait_until, consume_records, worker_config):
    query, calls = run_recording(spark, broker, worker_config, tmp_path, topic_name, "CountingSourceTask",
                                 {"count": "30"})
    try:
        assert len(read_topic(consume_records, topic_name, 30)) == 30
        wait_until(lambda: [call for _, call, _ in events(calls)], "commit()", until=lambda seen: "commit" in seen)
    finally:
        assert query.stop(graceful_timeout_s=30) is True
    recorded = [call for _, call, _ in events(calls)]
    assert recorded[0] == "start" and recorded[-1] == "stop" and recorded.count("stop") == 1


def test_poll_raising_a_retriable_error_is_polled_again(spark, broker, topic_name, tmp_path, wait_until,
                                                       consume_records, worker_config):
    query, calls = run_recording(spark, broker, worker_config, tmp_path, topic_name, "CountingSourceTask",
                                 {"count": "20", "retriable.polls": "3"})
    try:
        got = read_topic(consume_records, topic_name, 20)
        assert [m.value().decode() for m in got] == [f"n {i}" for i in range(20)]
        assert query.is_active() and query.failure() is None
    finally:
        assert query.stop(graceful_timeout_s=30) is True
    assert [call for _, call, _ in events(calls)].count("poll_failed") == 3


@BOTH_PLACES
def test_records_reach_kafka_with_their_headers(spark, broker, topic_name, tmp_path, consume_records, worker_config,
                                                task):
    query, _ = run_recording(spark, broker, worker_config, tmp_path, topic_name, task,
                             {"count": "10", "header.every": "5"})
    try:
        got = read_topic(consume_records, topic_name, 10)
    finally:
        assert query.stop(graceful_timeout_s=30) is True
    assert [(m.value().decode(), m.headers()) for m in got] == [
        (f"n {i}", [("drop", b"yes")] if i % 5 == 0 else None) for i in range(10)]


@BOTH_PLACES
def test_poll_raising_fails_the_task_with_its_error_and_stop_is_called_once(
        spark, broker, topic_name, tmp_path, wait_until, worker_config, task):
    query, calls = run_recording(spark, broker, worker_config, tmp_path, topic_name, task,
                                 {"count": "50", "fail.at": "25"})
    try:
        wait_until(query.is_active, "the query to fail", until=lambda active: not active, timeout=90)
        assert "cannot read record 25" in (query.failure() or "")
        wait_until(lambda: [call for _, call, _ in events(calls)], "stop()", until=lambda seen: "stop" in seen)
    finally:
        query.stop(graceful_timeout_s=30)
    recorded = events(calls)
    assert [call for _, call, _ in recorded].count("stop") == 1
    # what was stored before the failure was acknowledged to the task; nothing after it
    committed = [" ".join(detail.split()[:2]) for _, call, detail in recorded if call == "commit_record"]
    assert committed == [f"n {i}" for i in range(len(committed))] and len(committed) <= 20


def test_a_host_killed_mid_batch_loses_nothing_its_successor_resumes_from_the_stored_offset(
        spark, broker, topic_name, tmp_path, wait_until, consume_records, worker_config):
    """SIGKILL of the task's process while it produces: the batch under way fails (nothing of it is
    stored) or, killed between batches, the next batch starts a new process; either way the task
    starts again from the last stored offset and every record arrives (at least once)."""
    RECORDS = 20_000  # noqa: N806 - 40 batches of 500: the task is killed at its first record, well before the last
    query, calls = run_recording(spark, broker, worker_config, tmp_path, topic_name, "CountingSourceTask",
                                 {"count": str(RECORDS), "per.poll": "500"})
    queries = [query]
    try:
        (pid,) = wait_until(lambda: {p for p, call, _ in events(calls) if call == "start"}, "the task to start")
        wait_until(lambda: len(consume_records(topic_name, 1, partitions=1, timeout=30)), "a first record")
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: len([c for _, c, _ in events(calls) if c == "start"]) > 1 or not query.is_active(),
                   "a new process for the task, or the query to fail")
        if not query.is_active():  # the batch under way failed with the process
            assert "ended during batch" in (query.failure() or "")
            queries.append(run(spark, worker_config.settings(), tmp_path / "unused", topic_name,
                               {"count": str(RECORDS), "per.poll": "500", "events.file": str(calls)},
                               task_class="recording_source.CountingSourceTask"))
        # At least once: the records sent again after the kill count towards RECORDS, so read until each is there.
        expected = {f"n {i}" for i in range(RECORDS)}
        wait_until(lambda: expected - {m.value().decode()
                                       for m in consume_records(topic_name, RECORDS, partitions=1, timeout=180)},
                   "every record at least once (these are missing)", until=lambda missing: not missing, timeout=180)
        starts = [detail for _, call, detail in events(calls) if call == "start"]
        assert len(starts) == 2 and int(starts[1]) > 0  # resumed from a stored offset, not from the start
    finally:
        for each in queries:
            each.stop(graceful_timeout_s=30)


@pytest.fixture
def hosted_task(broker, topic_name, tmp_path, worker_config, monkeypatch):
    """A factory of TaskHosts (the task's process, in this one) for a CountingSourceTask writing to
    *topic_name*, its offsets in ``tmp_path / "offsets.json"``, its calls in ``tmp_path / "events.txt"``;
    closed at the end."""
    from connectd.runtime.source import runner as source_runner
    from connectd.runtime.source.host import TaskHost

    monkeypatch.setattr(source_runner, "configure_spark_process", lambda **context: None)  # not this process's logging
    create_topic(broker, topic_name)
    hosts = []

    def make(config: dict[str, str], max_records: int) -> TaskHost:
        config = {**config, "topic": topic_name, "events.file": str(tmp_path / "events.txt")}
        spec = {"connector": "c", "task_id": 0, "task_class": "recording_source.CountingSourceTask",
                "task_config": config, "connector_config": {"name": "c", **config},
                "worker_config": worker_config.settings(),
                "offsets": {"kind": "file", "path": str(tmp_path / "offsets.json")},
                "producer": json.dumps({"bootstrap.servers": broker.bootstrap_servers}), "run": "r1"}
        hosts.append(TaskHost({"task.secret.spec": json.dumps(spec), "max.records": str(max_records)}))
        return hosts[-1]

    yield make
    for host in hosts:
        host.close()


def test_a_host_that_did_not_run_the_batch_before_starts_its_task_again_from_the_stored_offsets(
        hosted_task, tmp_path):
    """The batch before went to another executor host: what this one polled since may overlap it, so
    its task is stopped and started again from the offsets the worker stored meanwhile."""
    host = hosted_task({"count": "100", "per.poll": "10"}, max_records=30)
    first = host.handle({"seq": 1, "prev": 0, "mode": "run", "stored": []})
    assert first["records"] > 0
    # batch 2 ran elsewhere and stored offset 49; batch 3 comes here
    FileOffsetStore(tmp_path / "offsets.json").put("c", {json.dumps({"source": "counter"}): {"i": 49}})
    third = host.handle({"seq": 3, "prev": 2, "mode": "run", "stored": []})
    assert third["records"] > 0
    assert [(call, detail) for _, call, detail in events(tmp_path / "events.txt") if call in ("start", "stop")][:3] == [
        ("start", "0"), ("stop", ""), ("start", "50")]


def test_a_batch_of_a_source_that_always_has_records_ends_on_time(hosted_task):
    """Every poll() returns records, never max.records in all: the batch ends after BATCH_S all the
    same, so its offsets are stored (a batch that never ended would store none)."""
    host = hosted_task({"count": str(10**9), "per.poll": "1"}, max_records=10**9)
    reply = host.handle({"seq": 1, "prev": 0, "mode": "run", "stored": []})
    assert 0 < reply["records"] < 10**9
    assert reply["offsets"] == {'{"source":"counter"}': json.dumps({"i": reply["records"] - 1}).replace(" ", "")}


# --- exactly-once delivery (connectd.runtime.source.transactions) ---

EXACTLY_ONCE = {"transactional_id": "connect-cluster-lines-0", "boundary": "poll"}


def offsets_written(broker, offsets_topic: str) -> tuple[int, int]:
    """(records, next offset) of the offsets topic's only partition: a transaction's commit marker takes
    an offset of its own, so records written in transactions leave more offsets than records."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "offsets-reader",
                         "enable.partition.eof": True, "isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition(offsets_topic, 0, OFFSET_BEGINNING)])
        records = 0
        while True:
            message = consumer.poll(10)
            assert message is not None, f"{offsets_topic} not read to its end"
            if message.error() is None:
                records += 1
            elif message.error().code() == KafkaError._PARTITION_EOF:
                return records, message.offset()
    finally:
        consumer.close()


def run_exactly_once(spark, broker, worker_config, tmp_path, topic: str, text: str, boundary=None, **options):
    """A FileStreamSource task's query delivering exactly once on a new topic (transactions ending at
    each poll(), or as *boundary* says), its offsets in a new offsets topic: (query, the file holding
    *text*, the offsets topic)."""
    create_topic(broker, topic)
    offsets_topic = f"{topic}-offsets"
    create_topic(broker, offsets_topic)
    path = tmp_path / "in.txt"
    path.write_text(text)
    query = run(spark, worker_config.settings(), path, topic, offsets_topic=offsets_topic,
                exactly_once={**EXACTLY_ONCE, **(boundary or {})}, **options)
    return query, path, offsets_topic


def test_exactly_once_a_polls_records_and_their_offsets_are_one_transaction_the_worker_stores_none(
        spark, broker, topic_name, tmp_path, worker_config, wait_until, consume_records, monkeypatch):
    from connectd.runtime.spark import queries

    stored_by_worker = []
    monkeypatch.setattr(queries, "store_offsets_hook", lambda *args: stored_by_worker.append(args))
    metrics = WorkerMetrics("w")
    first, path, offsets_topic = run_exactly_once(spark, broker, worker_config, tmp_path, topic_name,
                                                  "".join(f"line {i}\n" for i in range(2000)),
                                                  metrics=metrics.task("lines", 0))
    store = TopicOffsetStore(offsets_topic, {"bootstrap.servers": broker.bootstrap_servers})
    stored = {json.dumps({"filename": str(path)}, separators=(",", ":")): {"position": path.stat().st_size}}
    try:
        assert len(read_topic(consume_records, topic_name, 2000)) == 2000
        wait_until(lambda: store.get("lines", [{"filename": str(path)}]) == stored, "offsets committed in the topic")
        labels = {"worker": "w", "connector": "lines", "task": "0"}

        def counted(name: str) -> float | None:
            return metrics.registry.get_sample_value(f"connectd_source_transaction_{name}", labels)

        # FileStreamSource polls up to 2,000 lines (its batch.size): one transaction or more
        wait_until(lambda: counted("records_sum"), "the transactions counted", until=lambda n: n == 2000)
        assert counted("records_count") >= 1 and counted("commit_seconds_total") > 0
    finally:
        assert first.stop(graceful_timeout_s=30) is True
    records, end = offsets_written(broker, offsets_topic)
    assert records >= 1 and end >= 2 * records  # each offsets record followed by its transaction's marker
    assert stored_by_worker == []

    with open(path, "a") as f:
        f.write("".join(f"line {i}\n" for i in range(2000, 2300)))
    second = run(spark, worker_config.settings(), path, topic_name, offsets_topic=offsets_topic,
                 exactly_once=EXACTLY_ONCE)
    try:
        got = read_topic(consume_records, topic_name, 2300)
        assert [m.value().decode() for m in got] == [f"line {i}" for i in range(2300)]  # once each, in order
    finally:
        second.stop(graceful_timeout_s=30)


@pytest.mark.parametrize(("boundary", "transactions"), [
    ({"boundary": "poll"}, lambda n: n == 20),  # one per poll(): 2,000 lines, 100 a poll
    ({"boundary": "interval", "interval_ms": 60_000}, lambda n: 4 <= n < 20),  # one per micro-batch (500 records)
    ({"boundary": "interval", "interval_ms": 0}, lambda n: n == 20),  # the interval passed at every poll
])
def test_exactly_once_transaction_boundaries_poll_and_interval(
        spark, broker, topic_name, tmp_path, worker_config, consume_records, boundary, transactions):
    """transaction.boundary=poll: each poll()'s records and their offsets one transaction; interval:
    every poll's records until the interval passed, or the micro-batch ended, in one (no transaction
    spans two micro-batches). A transaction writes one offsets record here (one source partition)."""
    query, path, offsets_topic = run_exactly_once(
        spark, broker, worker_config, tmp_path, topic_name, "".join(f"line {i}\n" for i in range(2000)),
        boundary, connector_extra={"batch.size": "100"})
    try:
        got = read_topic(consume_records, topic_name, 2000)
    finally:
        assert query.stop(graceful_timeout_s=30) is True
    assert [m.value().decode() for m in got] == [f"line {i}" for i in range(2000)]
    records, _ = offsets_written(broker, offsets_topic)
    assert transactions(records), records


def test_exactly_once_connector_defined_transactions_commit_and_abort_where_the_task_says(
        spark, broker, topic_name, tmp_path, worker_config, wait_until, consume_records):
    """transaction.boundary=connector (recording_source.TransactionalCountingTask, 7 records a poll):
    commits through records 9, 19, 29, 39, 49 and an abort through record 25 — as Kafka Connect,
    records 20-25 are discarded and their offsets stored all the same (the task goes on after
    them). Transactions span polls and are never cut by a micro-batch's end.

    The dev broker returns an aborted transaction's records to read_committed consumers (Kafka
    hides them: docs/exactly-once.md): the abort shows in the topic's markers and the task's counts."""
    create_topic(broker, topic_name)
    offsets_topic = f"{topic_name}-offsets"
    create_topic(broker, offsets_topic)
    metrics = WorkerMetrics("w")
    query = run(spark, worker_config.settings(), tmp_path / "unused", topic_name, offsets_topic=offsets_topic,
                task_class="recording_source.TransactionalCountingTask", metrics=metrics.task("lines", 0),
                connector_extra={"count": "50", "per.poll": "7", "commit.every": "10", "abort.at": "25",
                                 "events.file": str(tmp_path / "events.txt")},
                exactly_once={**EXACTLY_ONCE, "boundary": "connector"})
    labels = {"worker": "w", "connector": "lines", "task": "0"}
    store = TopicOffsetStore(offsets_topic, {"bootstrap.servers": broker.bootstrap_servers})
    try:
        got = Counter(m.value().decode() for m in consume_records(topic_name, 44, partitions=1, timeout=90,
                                                                  linger=2.0))
        wait_until(lambda: store.get("lines", [{"source": "counter"}]), "the last offset committed",
                   until=lambda stored: list(stored.values()) == [{"i": 49}])
        wait_until(lambda: metrics.registry.get_sample_value("connectd_source_transaction_records_count", labels),
                   "the transactions counted", until=lambda n: n == 5)
        assert metrics.registry.get_sample_value("connectd_source_transaction_aborts_total", labels) == 1
        assert metrics.registry.get_sample_value("connectd_source_transaction_records_sum", labels) == 44
    finally:
        assert query.stop(graceful_timeout_s=30) is True
    aborted = {f"n {i}" for i in range(20, 26)}
    assert {value: times for value, times in got.items() if value not in aborted} == {
        f"n {i}": 1 for i in range(50) if f"n {i}" not in aborted}
    assert all(got[value] <= 1 for value in aborted)  # none on Kafka
    records, end = offsets_written(broker, topic_name)
    assert end - 50 == 6  # five commit markers and one abort marker: six transactions ended there


def test_exactly_once_a_poll_not_wholly_written_is_aborted_none_of_it_seen_no_offset_moved(
        spark, broker, topic_name, tmp_path, worker_config, wait_until, consume_records):
    # One poll: the producer refuses records over 2,000 bytes, the third line cannot be written.
    query, path, offsets_topic = run_exactly_once(spark, broker, worker_config, tmp_path, topic_name,
                                                  "short 1\nshort 2\n" + "x" * 5000 + "\nshort 4\n",
                                                  producer_extra={"message.max.bytes": "2000"})
    try:
        wait_until(query.is_active, "the query to fail", until=lambda active: not active, timeout=90)
        assert "MSG_SIZE_TOO_LARGE" in (query.failure() or "")
    finally:
        query.stop(graceful_timeout_s=30)
    assert consume_records(topic_name, partitions=1) == []  # short 1 and 2 were produced, then aborted
    store = TopicOffsetStore(offsets_topic, {"bootstrap.servers": broker.bootstrap_servers})
    assert store.get("lines", [{"filename": str(path)}]) == {}


def test_exactly_once_a_task_fenced_by_a_newer_producer_of_its_id_fails_its_next_transaction(
        spark, broker, topic_name, tmp_path, worker_config, wait_until, consume_records):
    from confluent_kafka import Producer

    query, path, _ = run_exactly_once(spark, broker, worker_config, tmp_path, topic_name,
                                      "".join(f"line {i}\n" for i in range(100)))
    try:
        assert len(read_topic(consume_records, topic_name, 100)) == 100
        successor = Producer({"bootstrap.servers": broker.bootstrap_servers,
                              "transactional.id": EXACTLY_ONCE["transactional_id"]})
        successor.init_transactions(30)  # as the task's successor on another worker would
        with open(path, "a") as f:
            f.write("".join(f"line {i}\n" for i in range(100, 200)))
        wait_until(query.is_active, "the fenced task to fail", until=lambda active: not active, timeout=90)
        assert "FENCED" in (query.failure() or "").upper()
    finally:
        query.stop(graceful_timeout_s=30)
    assert len(consume_records(topic_name, partitions=1)) == 100  # the zombie wrote no more
