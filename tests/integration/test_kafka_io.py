"""Kafka inside Spark (connectd-kafka): real broker, real Spark."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.runtime.kafka.clients import CLIENT_OPTION, FORMAT, encode_tp
from connectd.runtime.kafka.io import KafkaDataSource
from connectd.runtime.kafka.producing import (
    executor_producer,
    produce_batches,
    write_arrow_batch,
)
from connectd.runtime.kafka.reading import KafkaStreamReader

pytestmark = pytest.mark.integration


def create_topic(broker, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)


def produce(broker, topic: str, count: int, partitions: int) -> list[tuple[int, bytes, bytes]]:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    sent = []
    for i in range(count):
        partition = i % partitions
        key, value = f"k{i}".encode(), f"line {i}".encode()
        producer.produce(topic, key=key, value=value, partition=partition, headers=[("n", str(i).encode())])
        sent.append((partition, key, value))
    assert producer.flush(30) == 0
    return sent


def reader_options(broker, start: dict[str, int], **extra: str) -> dict[str, str]:
    return {CLIENT_OPTION: json.dumps({"bootstrap.servers": broker.bootstrap_servers}),
            "start": json.dumps(start), **extra}


def test_reader_plans_ranges_by_high_watermark_and_bounds_batches(broker, topic_name, wait_until):
    create_topic(broker, topic_name, 2)
    produce(broker, topic_name, 50, 2)
    start = {encode_tp(topic_name, 0): 0, encode_tp(topic_name, 1): 10}
    reader = KafkaStreamReader(reader_options(broker, start, **{"max.records": "20"}))
    assert reader.initialOffset() == start
    seen = []
    begin = reader.initialOffset()

    def next_batch() -> int:
        nonlocal begin
        end = reader.latestOffset(begin, None)
        parts = reader.partitions(begin, end)
        for part in parts:  # one Kafka partition per input partition, as offset ranges only
            (topic, partition, first, stop), = part.ranges
            assert (topic, first, stop) == (topic_name, begin[encode_tp(topic, partition)],
                                            end[encode_tp(topic, partition)])
        rows = [row for part in parts for row in reader.read(part)]
        assert len(rows) <= 20  # max.records bounds a batch
        seen.append(rows)
        begin = end
        return sum(len(r) for r in seen)

    wait_until(next_batch, "40 rows offered by the reader", until=lambda rows: rows >= 40, timeout=30)
    rows = [row for batch in seen for row in batch]
    assert len(rows) == 40  # 25 from partition 0, 15 from partition 1 (offsets 10..24)
    assert sorted(r[2] for r in rows if r[1] == 1) == list(range(10, 25))
    assert begin == {encode_tp(topic_name, 0): 25, encode_tp(topic_name, 1): 25}
    assert reader.latestOffset(begin, None) == begin  # nothing new: same offsets, no batch
    reader.stop()


def test_a_range_is_read_with_its_records_keys_and_headers(broker, topic_name):
    create_topic(broker, topic_name, 1)
    produce(broker, topic_name, 30, 1)
    key = encode_tp(topic_name, 0)
    reader = KafkaStreamReader(reader_options(broker, {key: 0}))  # as after a restart: nothing kept
    (part,) = reader.partitions({key: 5}, {key: 12})
    rows = list(reader.read(part))
    assert [r[2] for r in rows] == list(range(5, 12))
    assert rows[0][5:7] == (b"k5", b"line 5")
    assert rows[0][7] == [("n", b"5")]


def test_stop_file_offers_nothing_new(broker, topic_name, tmp_path):
    create_topic(broker, topic_name, 1)
    produce(broker, topic_name, 5, 1)
    key = encode_tp(topic_name, 0)
    stop = tmp_path / "stop"
    reader = KafkaStreamReader(reader_options(broker, {key: 0}, **{"stop.file": str(stop)}))
    stop.touch()
    assert reader.latestOffset({key: 0}, None) == {key: 0}


def test_kafka_to_kafka_through_spark_keeps_order_and_commits_offsets(spark, broker, topic_name, tmp_path,
                                                                      wait_until, consume_records):
    from pyspark.sql import functions as F

    source, sink, partitions, count = topic_name, f"{topic_name}-out", 3, 3000
    create_topic(broker, source, partitions)
    create_topic(broker, sink, partitions)
    sent = produce(broker, source, count, partitions)
    spark.dataSource.register(KafkaDataSource)
    client = json.dumps({"bootstrap.servers": broker.bootstrap_servers})
    commits = tmp_path / "commits.jsonl"
    stop = tmp_path / "stop"
    stream = (
        spark.readStream.format(FORMAT)
        .option(CLIENT_OPTION, client)
        .option("start", json.dumps({encode_tp(source, p): 0 for p in range(partitions)}))
        .option("max.records", "1000")
        .option("stop.file", str(stop))
        .load()
        .select(
            F.lit(sink).alias("topic"), F.col("partition"), F.col("key"), F.col("value"), F.col("timestamp"),
            F.col("headers"), F.concat_ws(":", F.col("topic"), F.col("partition")).alias("source_partition"),
            F.col("offset").cast("string").alias("source_offset"),
        )
    )
    query = (
        stream.writeStream.format(FORMAT)
        .option(CLIENT_OPTION, client)
        .option("commit.hook", "connectd.runtime.kafka.producing:append_commits_to_file")
        .option("commit.hook.arg", str(commits))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="100 milliseconds")
        .queryName(f"test-{topic_name}")
        .start()
    )
    try:
        got = consume_records(sink, count, partitions=partitions, timeout=120)
        assert len(got) == count
        assert sorted((m.partition(), m.key(), m.value()) for m in got) == sorted(sent)
        for p in range(partitions):  # one partition keeps its source order
            values = [m.value() for m in sorted((m for m in got if m.partition() == p), key=lambda m: m.offset())]
            assert values == [v for (q, _, v) in sent if q == p]
        assert got[0].headers() and got[0].headers()[0][0] == "n"
        # graceful stop: no new data offered, the batch in flight commits, then the query stops
        stop.touch()

        def committed() -> tuple[dict[str, str], list[str]]:
            lines = commits.read_text().splitlines() if commits.exists() else []
            last: dict[str, str] = {}
            for line in lines:
                last.update(json.loads(line)["offsets"])
            return last, lines

        final = {f"{source}:{p}": str(count // partitions - 1) for p in range(partitions)}
        last, lines = wait_until(committed, "the last offset of every partition committed",
                                 until=lambda seen: seen[0] == final, timeout=60)
        assert last == {f"{source}:{p}": str(count // partitions - 1) for p in range(partitions)}
        assert sum(json.loads(line)["records"] for line in lines) == count
    finally:
        query.stop()


# --- produce_batches: records Kafka does not take (KIP-779) ---------------------------------

_LIMIT = 2000  # the producer's message.max.bytes in these tests


def _row(topic: str, value: bytes, partition: int | None = None, offset: int | None = None) -> tuple:
    # topic, partition, key, value, timestamp, headers, source partition, source offset
    source = ('{"f":"in"}', json.dumps({"position": offset})) if offset is not None else (None, None)
    return (topic, partition, b"k", value, None, [{"key": "h", "value": b"v"}] if partition is not None else None,
            *source)


def _producer(broker) -> object:
    return executor_producer(json.dumps({"bootstrap.servers": broker.bootstrap_servers,
                                         "message.max.bytes": str(_LIMIT)}))


@pytest.mark.parametrize("general", [False, True], ids=["topic-key-value", "partition-headers"])
def test_a_refused_record_is_passed_to_failed_and_the_batch_goes_on(broker, topic_name, consume_records, general):
    """Too large for the producer: confluent-kafka's produce() raises where Java's send() calls back;
    both are the record's failure, and the others are written, the offsets still moving."""
    create_topic(broker, topic_name, 1)
    partition = 0 if general else None
    rows = [_row(topic_name, b"one", partition), _row(topic_name, b"x" * 5000, partition),
            _row(topic_name, b"three", partition, offset=3)]
    failed = []

    written = produce_batches(_producer(broker), [write_arrow_batch(rows)], 30,
                              failed=lambda error, *record: failed.append((error.args[0].name(), *record)))

    assert (written.records, written.failed) == (2, 1)
    assert written.source_offsets == {'{"f":"in"}': '{"position": 3}'}
    assert [(name, topic, key, len(value)) for name, topic, _partition, key, value, _headers in failed] == [
        ("MSG_SIZE_TOO_LARGE", topic_name, b"k", 5000)]
    assert [m.value() for m in consume_records(topic_name, 2, timeout=30)] == [b"one", b"three"]


def test_without_failed_a_refused_record_fails_the_batch(broker, topic_name):
    create_topic(broker, topic_name, 1)
    with pytest.raises(KafkaException, match="MSG_SIZE_TOO_LARGE"):
        produce_batches(_producer(broker), [write_arrow_batch([_row(topic_name, b"x" * 5000)])], 30)


def test_a_record_for_a_partition_the_topic_lacks_is_passed_over_too(broker, topic_name, consume_records):
    create_topic(broker, topic_name, 1)
    failed = []
    rows = [_row(topic_name, b"lost", 7), _row(topic_name, b"kept", 0)]

    written = produce_batches(_producer(broker), [write_arrow_batch(rows)], 30,
                              failed=lambda error, topic, partition, *rest: failed.append((topic, partition)))

    assert (written.records, written.failed) == (1, 1)
    assert failed == [(topic_name, 7)]
    assert [m.value() for m in consume_records(topic_name, 1, timeout=30)] == [b"kept"]


@pytest.mark.parametrize("shape", ["columns", "arrow", "headers", "acks"])
def test_records_reach_kafka_with_their_own_timestamps(broker, topic_name, consume_records, shape):
    """A source record's timestamp is its Kafka record's (Kafka Connect's ProducerRecord takes it); a
    record without one is stamped when produced. Every path of produce_batches: columns, Arrow, with
    headers, with an acknowledgement asked for each record."""
    from confluent_kafka import TIMESTAMP_CREATE_TIME

    from connectd.runtime.kafka.producing import ColumnBatch

    create_topic(broker, topic_name, 1)
    stamps = [1_600_000_000_000, None, 1_700_000_000_123]
    headers = [{"key": "h", "value": b"v"}] if shape == "headers" else None
    rows = [(topic_name, None, None, f"r{i}".encode(), stamp, headers, None, None) for i, stamp in enumerate(stamps)]
    batch = write_arrow_batch(rows) if shape == "arrow" else ColumnBatch.from_rows(rows)
    if shape == "headers":  # a ColumnBatch's headers are (key, value) pairs
        batch.columns["headers"] = [[("h", b"v")] for _ in rows]
    acks = [] if shape == "acks" else None
    producer = executor_producer(json.dumps({"bootstrap.servers": broker.bootstrap_servers}),
                                 every_delivery=acks is not None)

    written = produce_batches(producer, [batch], 30, acks=acks)

    assert written.records == 3
    messages = consume_records(topic_name, 3, timeout=30)
    assert [m.value() for m in messages] == [b"r0", b"r1", b"r2"]
    kinds, times = zip(*(m.timestamp() for m in messages), strict=True)
    assert set(kinds) == {TIMESTAMP_CREATE_TIME}
    assert (times[0], times[2]) == (stamps[0], stamps[2])
    assert times[1] > stamps[2]  # now
    if acks is not None:
        assert [ack[1] for ack in acks] == [0, 1, 2] and [ack[2] for ack in acks] == list(times)
    if shape == "headers":
        assert [m.headers() for m in messages] == [[("h", b"v")]] * 3
