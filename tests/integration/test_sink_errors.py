"""A malformed record in a sink: tolerated into the dead-letter topic, or failing the task with its place."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.herder import StandaloneHerder
from connectd.status import FAILED, RUNNING

pytestmark = pytest.mark.integration


def prepare(broker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for value in (b'{"n":1}', b'{"n":2}', b"{not json", b'{"n":4}'):
        producer.produce(topic, value=value, headers=[("origin", b"test")])
    assert producer.flush(30) == 0


def herder_for(worker_config, spark) -> StandaloneHerder:
    worker = worker_config(**{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                              "value.converter.schemas.enable": "false"})
    return StandaloneHerder(worker, "test-worker", spark)


def test_tolerated_malformed_record_goes_to_the_dead_letter_topic(spark, broker, topic_name, tmp_path,
                                                                   wait_until_async, consume_records, worker_config):
    prepare(broker, topic_name)
    out, dlq = tmp_path / "out.txt", f"{topic_name}-dlq"

    async def scenario():
        herder = herder_for(worker_config, spark)
        await herder.start()
        try:
            await herder.put({
                "name": "tolerant", "connector.class": "FileStreamSink", "topics": topic_name, "file": str(out),
                "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true", "errors.log.enable": "true",
            })
            await wait_until_async(lambda: out.exists() and len(out.read_text().splitlines()) == 3, "three good lines",
                                   timeout=90)
            assert herder.status.task("tolerant", 0).state == RUNNING
            # The task's metrics say so too, counted in the executor and brought back with its batch.
            registry, labels = herder.metrics.registry, {"worker": "test-worker", "connector": "tolerant", "task": "0"}
            await wait_until_async(lambda: registry.get_sample_value("connectd_sink_records_sent_total", labels),
                                   "the batch's counts", until=lambda sent: sent == 3)
            return {name: registry.get_sample_value(f"connectd_{name}", labels) for name in (
                "task_record_failures_total", "task_records_skipped_total", "task_errors_logged_total",
                "task_dlq_produce_requests_total", "task_dlq_produce_failures_total", "task_error_retries_total",
                "sink_puts_total", "sink_put_seconds_total")} | {
                "lag": registry.get_sample_value("connectd_sink_record_lag", {**labels, "topic": topic_name,
                                                                             "partition": "0"})}
        finally:
            await herder.stop()

    counted = asyncio.run(scenario())
    assert counted["task_record_failures_total"] == counted["task_records_skipped_total"] == 1
    assert counted["task_errors_logged_total"] == counted["task_dlq_produce_requests_total"] == 1
    assert counted["task_dlq_produce_failures_total"] == counted["task_error_retries_total"] == 0
    assert counted["sink_puts_total"] >= 1 and counted["sink_put_seconds_total"] > 0
    assert counted["lag"] == 0
    assert out.read_text().splitlines() == ["{n=1}", "{n=2}", "{n=4}"]  # as Kafka's FileStreamSink prints a map
    (dead,) = consume_records(dlq, 1, partitions=1, timeout=30)
    assert dead.value() == b"{not json"
    consumed = consume_records(topic_name, 4, partitions=1, timeout=30)[2]
    assert dead.timestamp() == consumed.timestamp()  # the consumed record's, as Kafka Connect keeps it
    headers = dict(dead.headers())
    assert headers["origin"] == b"test"
    assert headers["__connect.errors.topic"] == topic_name.encode()
    assert headers["__connect.errors.partition"] == b"0"
    assert headers["__connect.errors.offset"] == b"2"
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert headers["__connect.errors.connector.name"] == b"tolerant"
    assert headers["__connect.errors.task.id"] == b"0"
    assert headers["__connect.errors.class.name"] == b"connectd.data.json_converter.JsonConverter"
    assert headers["__connect.errors.exception.class.name"].endswith(b".DataError")
    assert headers["__connect.errors.exception.message"]
    trace = headers["__connect.errors.exception.stacktrace"].decode()
    assert trace.startswith("Traceback (most recent call last):") and "DataError" in trace.splitlines()[-1]


def test_untolerated_malformed_record_fails_the_task_naming_where(spark, broker, topic_name, tmp_path,
                                                                  wait_until_async, worker_config):
    prepare(broker, topic_name)

    async def scenario():
        herder = herder_for(worker_config, spark)
        await herder.start()
        try:
            await herder.put({"name": "strict", "connector.class": "FileStreamSink", "topics": topic_name,
                              "file": str(tmp_path / "out.txt")})
            await wait_until_async(lambda: herder.status.task("strict", 0).state == FAILED, "the task to fail",
                                   timeout=90)
            return herder.status.task("strict", 0).trace
        finally:
            await herder.stop()

    trace = asyncio.run(scenario())
    # Kafka Connect's words first, then where: the stage, the converter, the record.
    assert "Tolerance exceeded in error handler: VALUE_CONVERTER (" in trace
    assert f"JsonConverter) failed on record topic={topic_name} partition=0 offset=2" in trace
