"""A record-level sink task fed by a Spark query: Kafka → converters → transforms → plugin → group offsets."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from connectd_file.tasks import FileStreamSinkTask

from connectd import TopicPartition
from connectd.plugins import get_registry
from connectd.runtime.converters import configure_converters
from connectd.runtime.kafka_io import RangeReader, consumer_settings
from connectd.runtime.queries import planned_ranges, start_sink_query
from connectd.runtime.sink_task import SinkTaskRunner, assign_partitions, group_id, start_offsets
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


def run_sink(spark, worker: dict[str, str], connector: str, topic: str, out, partitions: int, rows: str):
    """*rows*: ``records`` (they come through Spark) or ``ranges`` (read in this process)."""
    registry = get_registry()
    group = Consumer(consumer_settings({"bootstrap.servers": worker["bootstrap.servers"],
                                        "group.id": group_id(connector), "enable.auto.commit": False}))

    def commit(offsets):
        group.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()],
                     asynchronous=False)

    assigned = assign_partitions([TopicPartition(topic, p) for p in range(partitions)], 0, 1)
    config = {"file": str(out), "topics": topic}
    runner = SinkTaskRunner(
        FileStreamSinkTask(), config, assigned,
        configure_converters(worker, {}, lambda n: registry.find_class("converter", n)),
        TransformationChain({}, registry.find_class), commit,
    )
    query = start_sink_query(spark, connector=connector, task_id=0, runner=runner,
                             consumer_config={"bootstrap.servers": worker["bootstrap.servers"]},
                             start=start_offsets(group, assigned), max_records=2000,
                             reader=RangeReader(group) if rows == "ranges" else None, put_records=300)
    return runner, query, group


def committed(group, topic: str, partitions: int) -> dict[int, int]:
    return {tp.partition: tp.offset for tp in
            group.committed([KafkaTopicPartition(topic, p) for p in range(partitions)], timeout=30)}


@pytest.mark.parametrize("rows", ["records", "ranges"])
def test_sink_query_writes_every_line_keeps_partition_order_and_commits(spark, broker, topic_name, tmp_path, rows,
                                                                        wait_until, worker_config):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 3, 1)])[topic_name].result(timeout=30)
    out = tmp_path / "out.txt"
    produce_lines(broker, topic_name, 0, 6000, 3)
    runner, query, group = run_sink(spark, worker_config.settings(), "files-out", topic_name, out, 3, rows)
    try:
        lines = wait_until(lambda: lines_in(out), "6000 lines written", until=lambda lines: len(lines) >= 6000,
                           timeout=90)
        assert sorted(lines) == sorted(f"p{i % 3} {i}" for i in range(6000))
        for p in range(3):  # lines of one partition keep their order
            seq = [int(line.split()[1]) for line in lines if line.startswith(f"p{p} ")]
            assert seq == sorted(seq)
        if rows == "ranges":  # batches were planned from Spark's offset log, not collected
            first = planned_ranges(query.workdir / "checkpoint", 0, {f"{topic_name}:{p}": 0 for p in range(3)})
            assert first and {r[1] for r in first} <= {0, 1, 2} and all(r[2] == 0 < r[3] for r in first)
        assert query.stop(graceful_timeout_s=30) is True
    finally:
        if query.is_active():
            query.stop(graceful_timeout_s=5)
        runner.close()
    assert committed(group, topic_name, 3) == {0: 2000, 1: 2000, 2: 2000}
    group.close()

    # a new run starts from the group's offsets: only new lines, none twice
    produce_lines(broker, topic_name, 6000, 300, 3)
    runner, query, group = run_sink(spark, worker_config.settings(), "files-out", topic_name, out, 3, rows)
    try:
        wait_until(lambda: lines_in(out), "6300 lines written", until=lambda lines: len(lines) >= 6300, timeout=90)
    finally:
        query.stop(graceful_timeout_s=30)  # idle: everything read has been written
        runner.close()
    lines = out.read_text().splitlines()
    assert sorted(lines) == sorted(f"p{i % 3} {i}" for i in range(6300))  # nothing twice
    assert committed(group, topic_name, 3) == {0: 2100, 1: 2100, 2: 2100}
    group.close()
