"""RangeReader: exact offset ranges read in the worker process (real broker)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.runtime.kafka.consumers import RangeReader, consumer_settings

pytestmark = pytest.mark.integration


@pytest.fixture
def topic(broker, topic_name):
    """*topic_name* with 3 partitions holding offsets 0..99 each; value ``p<partition>-<offset>``."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 3, 1)])[topic_name].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for offset in range(100):
        for partition in range(3):
            producer.produce(topic_name, value=f"p{partition}-{offset}".encode(), key=b"k", partition=partition,
                             headers=[("h", b"v")] if offset == 7 else None)
    assert producer.flush(30) == 0
    return topic_name


@pytest.fixture
def reader(broker):
    consumer = Consumer(consumer_settings({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ranges"}))
    reader = RangeReader(consumer, timeout=5)
    assigns = []
    assign = reader._assign

    def counting(wanted):
        assigns.append(dict(wanted))
        assign(wanted)

    reader._assign = counting
    reader.assigns = assigns
    yield reader
    consumer.close()


def read(reader, ranges, chunk=10_000):
    chunks = list(reader.read(ranges, chunk))
    assert all(0 < len(c) <= chunk for c in chunks)
    return [row for c in chunks for row in c]


def offsets_by_partition(rows):
    seen: dict[int, list[int]] = {}
    for row in rows:
        seen.setdefault(row[1], []).append(row[2])
    return seen


def test_reads_exactly_the_ranges_in_order_per_partition_in_chunks(reader, topic):
    rows = read(reader, [(topic, 0, 0, 40), (topic, 1, 10, 20), (topic, 2, 95, 100)], chunk=7)
    assert offsets_by_partition(rows) == {0: list(range(40)), 1: list(range(10, 20)), 2: list(range(95, 100))}
    by_offset = {(r[1], r[2]): r for r in rows}
    topic_, partition, offset, timestamp, timestamp_type, key, value, headers = by_offset[(0, 7)]
    assert (topic_, partition, offset, key, value, headers) == (topic, 0, 7, b"k", b"p0-7", [("h", b"v")])
    assert timestamp > 0 and timestamp_type == 1
    assert by_offset[(1, 12)][6] == b"p1-12" and by_offset[(1, 12)][7] is None


def test_next_ranges_continue_without_reassigning_and_use_what_was_fetched_ahead(reader, topic):
    first = read(reader, [(topic, 0, 0, 10), (topic, 1, 0, 10), (topic, 2, 0, 10)])
    assert len(first) == 30 and len(reader.assigns) == 1
    second = read(reader, [(topic, 0, 10, 60), (topic, 2, 10, 11)])
    third = read(reader, [(topic, 0, 60, 100), (topic, 1, 10, 100), (topic, 2, 11, 100)])
    assert len(reader.assigns) == 1  # every range started where its partition's last one ended
    assert offsets_by_partition(second) == {0: list(range(10, 60)), 2: [10]}
    assert offsets_by_partition(third) == {0: list(range(60, 100)), 1: list(range(10, 100)),
                                           2: list(range(11, 100))}


def test_a_replayed_range_and_a_new_partition_reposition_the_consumer(reader, topic):
    read(reader, [(topic, 0, 0, 50)])
    replay = read(reader, [(topic, 0, 20, 30)])  # a batch replayed after a restart
    assert offsets_by_partition(replay) == {0: list(range(20, 30))}
    assert len(reader.assigns) == 2
    later = read(reader, [(topic, 0, 30, 35), (topic, 1, 90, 100)])  # partition 1 is new to the reader
    assert offsets_by_partition(later) == {0: list(range(30, 35)), 1: list(range(90, 100))}
    assert len(reader.assigns) == 3
    assert read(reader, [(topic, 0, 35, 35)]) == []  # an empty range reads nothing


def test_a_range_past_the_end_of_the_log_times_out_naming_it(reader, topic):
    with pytest.raises(TimeoutError, match=rf"{topic}\[1\] up to 104"):
        read(reader, [(topic, 1, 95, 105)])


def test_wait_past_gives_where_records_arriving_after_the_last_ranges_end_and_read_reads_them(
        reader, topic, broker, wait_until):
    read(reader, [(topic, 0, 0, 100), (topic, 1, 0, 100)])
    positions = {(topic, 0): 100, (topic, 1): 100}
    assert reader.wait_past(positions, 0.3) == {}  # nothing arrives: the wait ends empty-handed
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for offset in range(100, 103):
        producer.produce(topic, value=f"p1-{offset}".encode(), partition=1)
    assert producer.flush(30) == 0
    ends = wait_until(lambda: reader.wait_past(positions, 0.5), "the new records fetched",
                      until=lambda ends: ends.get((topic, 1)) == 103)
    assert ends == {(topic, 1): 103}
    assert len(reader.assigns) == 1  # the positions were where the ranges ended: no reassignment
    rows = read(reader, [(topic, 1, 100, 103)])
    assert [(r[2], r[6]) for r in rows] == [(100, b"p1-100"), (101, b"p1-101"), (102, b"p1-102")]


def test_wait_past_at_positions_the_reader_is_not_at_reassigns_there(reader, topic, wait_until):
    read(reader, [(topic, 0, 0, 10)])
    wait_until(lambda: reader.wait_past({(topic, 2): 97}, 1), "partition 2 fetched from 97",
               until=lambda ends: ends == {(topic, 2): 100})
    assert len(reader.assigns) == 2
    assert offsets_by_partition(read(reader, [(topic, 2, 97, 100)])) == {2: [97, 98, 99]}


def test_a_broker_that_answers_short_fetches_empty_is_read_with_longer_waits(lasting_broker):
    """tansu on S3 storage answers a fetch empty when its (10 ms) wait runs out before the storage
    has read the partition's batches: the range is read all the same, with longer waits."""
    settings = {"bootstrap.servers": lasting_broker.bootstrap_servers}
    admin = AdminClient(settings)
    admin.create_topics([NewTopic("slow", 1, 1)])["slow"].result(timeout=30)
    producer = Producer({**settings, "linger.ms": 0})
    for i in range(300):  # each its own batch, as a source's small batches are
        producer.produce("slow", value=str(i).encode(), partition=0)
        producer.flush(10)
    consumer_config = consumer_settings({**settings, "group.id": "slow"})
    consumer = Consumer(consumer_config)
    reader = RangeReader(consumer, timeout=60, settings=consumer_config)
    try:
        rows = read(reader, [("slow", 0, 0, 300)])
        assert reader.consumer is not consumer  # it reads on with a consumer of longer waits
    finally:
        reader.close()
        consumer.close()
    assert [row[2] for row in rows] == list(range(300))
