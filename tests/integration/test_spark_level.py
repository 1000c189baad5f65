"""Spark-level tasks: a source that is a streaming DataFrame, a sink that writes micro-batch DataFrames."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectd import SinkTaskContext, SparkSinkTask, SparkSourceTask, TopicPartition
from connectd.config.connector import sink_group_id as group_id
from connectd.runtime.sink.task import start_offsets
from connectd.runtime.spark.queries import start_spark_sink_query, start_spark_source_query

pytestmark = pytest.mark.integration


class CountingSource(SparkSourceTask):
    def stream(self, spark):
        return (spark.readStream.format("rate").option("rowsPerSecond", "200").load()
                .selectExpr("CAST(value AS STRING) AS key", "CAST(value AS STRING) AS value"))


class TextFilesSink(SparkSinkTask):
    def write_batch(self, batch, batch_id):
        batch.selectExpr("CAST(value AS STRING) AS value").write.mode("append").text(self.config["dir"])


def values(records) -> list[int]:
    return [int(m.value()) for m in records]


def test_spark_level_source_writes_its_stream_and_resumes_from_its_checkpoint(spark, broker, topic_name, tmp_path,
                                                                              consume_records):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=30)
    checkpoint = str(tmp_path / "checkpoint")

    def run():
        task = CountingSource()
        task.start({"topic": topic_name})
        return start_spark_source_query(spark, connector="counter", task_id=0, task=task, default_topic=topic_name,
                                        producer_config={"bootstrap.servers": broker.bootstrap_servers},
                                        checkpoint=checkpoint)

    first = run()
    try:
        assert len(values(consume_records(topic_name, 300, timeout=90))) >= 300
        # Spark partitions of one batch are written one after the other, so
        # look at the whole topic rather than its first offsets.
        assert 0 in values(consume_records(topic_name, linger=3))
    finally:
        first.stop(graceful_timeout_s=2)  # a rate source is never idle: the batch in flight is cancelled
    before = len(values(consume_records(topic_name)))
    second = run()
    try:
        after = values(consume_records(topic_name, before + 200, timeout=90))
    finally:
        second.stop(graceful_timeout_s=2)
    new = after[before:]
    assert new and min(new) > 0, "the second run started over instead of resuming from its checkpoint"


def test_spark_level_sink_writes_batches_then_commits_offsets(spark, broker, topic_name, tmp_path, wait_until):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(500):
        producer.produce(topic_name, value=str(i).encode(), partition=i % 2)
    assert producer.flush(30) == 0
    out = tmp_path / "out"
    group = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group_id("bulk"),
                      "enable.auto.commit": False})
    partitions = [TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)]

    def commit(offsets):
        group.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()],
                     asynchronous=False)

    task = TextFilesSink()
    task.context = SinkTaskContext({"dir": str(out)}, partitions)
    task.start({"dir": str(out)})
    query = start_spark_sink_query(spark, connector="bulk", task_id=0, task=task,
                                   consumer_config={"bootstrap.servers": broker.bootstrap_servers},
                                   start=start_offsets(group, partitions), commit=commit)

    def lines() -> list[str]:
        return [line for f in out.glob("part-*") for line in f.read_text().splitlines()] if out.exists() else []

    try:
        wait_until(lines, "500 lines written", until=lambda written: len(written) >= 500, timeout=90)
        assert query.stop(graceful_timeout_s=30) is True
    finally:
        if query.is_active():
            query.stop(graceful_timeout_s=5)
    assert sorted(int(v) for v in lines()) == list(range(500))
    committed = group.committed([KafkaTopicPartition(topic_name, p) for p in range(2)], timeout=30)
    assert {tp.partition: tp.offset for tp in committed} == {0: 250, 1: 250}
    group.close()
