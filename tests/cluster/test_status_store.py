"""KafkaStatusStore against the real broker: Kafka Connect's status-topic records, byte for byte."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.cluster.status_store import KafkaStatusStore, TopicStatus
from connectd.status import ActiveTopicsStore, Status, StatusStore

pytestmark = pytest.mark.integration

RUNNING = Status("RUNNING", "w1:8083", generation=3, timestamp_ms=1_700_000_000_000)
FAILED = Status("FAILED", "w2:8083", trace="java.lang.Exception: boom\n\tat X", generation=4, timestamp_ms=1_700_000_000_001)


def store(broker, topic: str) -> KafkaStatusStore:
    settings = {"bootstrap_servers": broker.bootstrap_servers}
    return KafkaStatusStore(topic, settings, settings, timeout_s=10)


def create_topic(broker, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1, config={"cleanup.policy": "compact"})])[name].result(timeout=30)


def produce_raw(broker, topic: str, records: list[tuple[str, bytes | None]]) -> None:
    """A Kafka Connect worker writes these records."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=value, partition=0)
    assert producer.flush(30) == 0


def consume_raw(broker, topic: str, count: int) -> list[tuple[bytes, bytes | None, int]]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "raw", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[tuple[bytes, bytes | None, int]] = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append((message.key(), message.value(), message.timestamp()[1]))
    finally:
        consumer.close()
    return got


def fresh(broker, topic: str, read) -> object:
    """What a store that starts now reads."""

    async def scenario():
        async with store(broker, topic) as reader:
            return read(reader)

    return asyncio.run(scenario())


def test_it_is_both_stores_a_standalone_herder_takes():
    assert issubclass(KafkaStatusStore, StatusStore) and issubclass(KafkaStatusStore, ActiveTopicsStore)


def test_statuses_and_topics_round_trip_through_a_fresh_store(broker, topic_name):
    create_topic(broker, topic_name, partitions=5)

    async def write() -> None:
        async with store(broker, topic_name) as writer:
            writer.put_connector("my-conn", RUNNING)
            writer.put_task("my-conn", 0, RUNNING)
            writer.put_task("my-conn", 1, FAILED)
            writer.put_task("my-conn-2", 0, RUNNING)  # a name that extends another's
            writer.add("my-conn", ["lines", "words"], task=1)
            # The cache answers at once, before anything is read back.
            assert writer.connector("my-conn") == RUNNING
            assert writer.tasks("my-conn") == {0: RUNNING, 1: FAILED}
            assert writer.topics("my-conn") == {"lines", "words"}

    asyncio.run(write())
    read = fresh(broker, topic_name, lambda s: (s.connectors(), s.connector("my-conn"), s.tasks("my-conn"),
                                                 s.tasks("my-conn-2"), s.topics("my-conn"),
                                                 s.topic_status("my-conn", "lines")))
    connectors, connector, tasks, other, topics, lines = read
    assert connectors == {"my-conn"}
    assert connector == RUNNING
    assert tasks == {0: RUNNING, 1: FAILED}
    assert other == {0: RUNNING}
    assert topics == {"lines", "words"}
    assert lines.task == 1 and lines.connector == "my-conn" and lines.topic == "lines"


def test_records_are_kafka_connects_byte_for_byte(broker, topic_name):
    create_topic(broker, topic_name)

    async def write() -> int:
        async with store(broker, topic_name) as writer:
            writer.put_connector("c", RUNNING)
            writer.put_task("c", 0, FAILED)
            writer.add("c", ["t"])
            discovered = writer.topic_status("c", "t").discover_timestamp_ms
            writer.reset("c")
            writer.forget("c")
            return discovered

    discovered = asyncio.run(write())
    assert consume_raw(broker, topic_name, 6) == [
        (b"status-connector-c", b'{"state":"RUNNING","trace":null,"worker_id":"w1:8083","generation":3}', RUNNING.timestamp_ms),
        (b"status-task-c-0",
         b'{"state":"FAILED","trace":"java.lang.Exception: boom\\n\\tat X","worker_id":"w2:8083","generation":4}',
         FAILED.timestamp_ms),
        (b"status-topic-t:connector-c",
         b'{"topic":{"name":"t","connector":"c","task":0,"discoverTimestamp":%d}' % discovered + b"}", discovered),
        (b"status-topic-t:connector-c", None, pytest.approx(discovered, abs=60_000)),
        (b"status-task-c-0", None, pytest.approx(discovered, abs=60_000)),
        (b"status-connector-c", None, pytest.approx(discovered, abs=60_000)),
    ]


def test_reads_what_a_kafka_connect_worker_wrote(broker, topic_name):
    create_topic(broker, topic_name)
    produce_raw(broker, topic_name, [
        ("status-connector-sink", b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":7}'),
        ("status-task-sink-0", b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":7}'),
        ("status-task-sink-1", b'{"state":"FAILED","trace":"oops","worker_id":"10.0.0.2:8083","generation":7}'),
        ("status-topic-orders:connector-sink",
         b'{"topic":{"name":"orders","connector":"sink","task":1,"discoverTimestamp":1700000000000}}'),
        ("status-connector-gone", b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}'),
        ("status-task-gone-0", b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}'),
        ("status-connector-gone", None),  # deleted: its tasks go too
        ("something-else", b"{}"),
        ("status-task-sink-x", b"{}"),
        ("status-connector-bad", b'{"state":"SLEEPING","trace":null,"worker_id":"w","generation":1}'),
        ("status-connector-bad2", b"not json"),
    ])
    read = fresh(broker, topic_name, lambda s: (s.connectors(), s.tasks("sink"), s.tasks("gone"),
                                                 s.topic_status("sink", "orders")))
    connectors, tasks, gone, orders = read
    assert connectors == {"sink"}
    assert {n: (s.state, s.worker_id, s.trace, s.generation) for n, s in tasks.items()} == {
        0: ("RUNNING", "10.0.0.1:8083", None, 7), 1: ("FAILED", "10.0.0.2:8083", "oops", 7)}
    assert gone == {}
    assert orders == TopicStatus("orders", "sink", 1, 1_700_000_000_000)


def test_a_stale_unassigned_task_status_is_ignored(broker, topic_name):
    create_topic(broker, topic_name)

    def status(state: str, worker: str, generation: int) -> bytes:
        return b'{"state":"%s","trace":null,"worker_id":"%s","generation":%d}' % (state.encode(), worker.encode(), generation)

    produce_raw(broker, topic_name, [
        ("status-task-a-0", status("RUNNING", "w1", 5)),
        ("status-task-a-0", status("UNASSIGNED", "w2", 4)),  # w2 had not read w1's RUNNING: ignored
        ("status-task-a-0", status("UNASSIGNED", "w2", 5)),  # same generation: ignored too
        ("status-task-b-0", status("RUNNING", "w1", 5)),
        ("status-task-b-0", status("UNASSIGNED", "w2", 6)),  # a later generation: taken
        ("status-task-c-0", status("RUNNING", "w1", 5)),
        ("status-task-c-0", status("FAILED", "w2", 2)),  # as Kafka: only UNASSIGNED is judged by generation
        ("status-task-d-0", status("RUNNING", "w1", 5)),
        ("status-task-d-0", status("UNASSIGNED", "w1", 5)),  # w1 stopped it itself (at shutdown): taken
    ])
    read = fresh(broker, topic_name, lambda s: [(s.task(c, 0).state, s.task(c, 0).generation) for c in "abcd"])
    assert read == [("RUNNING", 5), ("UNASSIGNED", 6), ("FAILED", 2), ("UNASSIGNED", 5)]


def test_safe_puts_yield_to_another_workers_later_generation(broker, topic_name):
    create_topic(broker, topic_name)
    produce_raw(broker, topic_name, [
        ("status-task-a-0", b'{"state":"RUNNING","trace":null,"worker_id":"w2","generation":9}'),
        ("status-connector-a", b'{"state":"RUNNING","trace":null,"worker_id":"w2","generation":9}'),
    ])

    async def scenario() -> None:
        async with store(broker, topic_name) as mine:
            assert mine.put_task_safe("a", 0, Status("UNASSIGNED", "w1", generation=8)) is False
            assert mine.put_connector_safe("a", Status("UNASSIGNED", "w1", generation=8)) is False
            assert mine.task("a", 0).worker_id == "w2"
            assert mine.put_task_safe("a", 0, Status("FAILED", "w2", generation=8)) is True  # its own
            assert mine.put_task_safe("a", 1, Status("UNASSIGNED", "w1", generation=1)) is True  # none cached
            await mine.stop()

    asyncio.run(scenario())
    read = fresh(broker, topic_name, lambda s: (s.task("a", 0).state, s.connector("a").state, s.task("a", 1).state))
    assert read == ("FAILED", "RUNNING", "UNASSIGNED")


def test_a_record_read_after_a_newer_local_write_does_not_undo_it(broker, topic_name):
    create_topic(broker, topic_name)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})

    async def scenario() -> list[str]:
        shown: list[str] = []
        async with store(broker, topic_name) as mine:
            for n in range(20):
                # Another worker's FAILED lands first; this worker's RUNNING comes after it in the topic.
                producer.produce(topic_name, key=f"status-task-c-{n}".encode(), partition=0,
                                 value=b'{"state":"FAILED","trace":null,"worker_id":"w2","generation":1}')
                producer.flush(10)
                mine.put_task("c", n, Status("RUNNING", "w1", generation=1))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and mine.pending_writes():
                shown.extend(s.state for s in mine.tasks("c").values())
                await asyncio.sleep(0.001)
            shown.extend(s.state for s in mine.tasks("c").values())
        return shown

    shown = asyncio.run(scenario())
    assert set(shown) == {"RUNNING"}
    assert fresh(broker, topic_name, lambda s: {t.state for t in s.tasks("c").values()}) == {"RUNNING"}


def test_puts_from_other_threads(broker, topic_name):
    create_topic(broker, topic_name)

    async def scenario() -> None:
        async with store(broker, topic_name) as writer:
            def report(task: int) -> None:
                writer.put_task("c", task, Status("RUNNING", f"w{task}"))
                writer.add("c", [f"topic-{task}"], task=task)

            threads = [threading.Thread(target=report, args=(n,)) for n in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                await asyncio.to_thread(thread.join)
            assert set(writer.tasks("c")) == {0, 1, 2, 3}

    asyncio.run(scenario())
    deadline = time.monotonic() + 20
    while (read := fresh(broker, topic_name, lambda s: (set(s.tasks("c")), s.topics("c")))) != (
            {0, 1, 2, 3}, {"topic-0", "topic-1", "topic-2", "topic-3"}) and time.monotonic() < deadline:
        pass
    assert read == ({0, 1, 2, 3}, {"topic-0", "topic-1", "topic-2", "topic-3"})


def test_forget_and_reset_reach_other_workers(broker, topic_name):
    create_topic(broker, topic_name)

    async def scenario() -> None:
        async with store(broker, topic_name) as writer, store(broker, topic_name) as other:
            writer.put_connector("c", RUNNING)
            writer.put_task("c", 0, RUNNING)
            writer.put_task("c", 1, RUNNING)
            writer.add("c", ["t1", "t2"])
            writer.put_connector("d", RUNNING)
            await writer.refresh(10)
            await other.refresh(10)
            assert set(other.tasks("c")) == {0, 1} and other.topics("c") == {"t1", "t2"}
            writer.forget_task("c", 1)
            writer.reset("c")
            await writer.refresh(10)
            await other.refresh(10)
            assert set(other.tasks("c")) == {0} and other.topics("c") == set()
            writer.forget("c")
            assert writer.connector("c") is None and writer.tasks("c") == {}
            await writer.refresh(10)
            await other.refresh(10)
            assert other.connector("c") is None and other.tasks("c") == {}
            assert other.connectors() == {"d"}

    asyncio.run(scenario())


class _RecordingLog:
    """Stands in for the KafkaLog to drive the store's merge logic step by step (pure logic)."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def send_nowait(self, key, value, *, timestamp_ms=None, retry_if=None, on_result=None) -> None:
        self.sent.append({"key": key, "value": value, "retry_if": retry_if, "on_result": on_result})


def _record(offset: int, key: str, value: bytes | None):
    from aiokafka.structs import ConsumerRecord

    return ConsumerRecord("s", 0, offset, 1_700_000_000_000, 0, key.encode(), value, None, 0, 0, [])


def _acked(offset: int):
    from aiokafka.structs import RecordMetadata

    return RecordMetadata("s", 0, None, offset, 0, 0, 0)


FOREIGN = b'{"state":"FAILED","trace":null,"worker_id":"w2","generation":1}'


def test_own_unread_writes_outrank_older_records():
    status = KafkaStatusStore("s", {}, {})
    status._log = log = _RecordingLog()
    status.put_task("c", 0, Status("RUNNING", "w1", generation=1))
    status._read(_record(0, "status-task-c-0", FOREIGN))  # written before ours, read after our put
    assert status.task("c", 0).state == "RUNNING"
    log.sent[0]["on_result"](_acked(1))
    assert status.pending_writes() == 1
    status._read(_record(1, "status-task-c-0", log.sent[0]["value"]))
    assert status.pending_writes() == 0 and status.task("c", 0).state == "RUNNING"
    status._read(_record(2, "status-task-c-0", FOREIGN))  # after ours: it wins
    assert status.task("c", 0).state == "FAILED"


def test_own_write_read_back_before_its_acknowledgement():
    status = KafkaStatusStore("s", {}, {})
    status._log = log = _RecordingLog()
    status.put_connector("c", Status("RUNNING", "w1"))
    status._read(_record(0, "status-connector-c", log.sent[0]["value"]))
    assert status.pending_writes() == 1  # not known as its own yet
    log.sent[0]["on_result"](_acked(0))
    assert status.pending_writes() == 0
    status._read(_record(1, "status-connector-c", FOREIGN))
    assert status.connector("c").state == "FAILED"


def test_a_failed_write_is_retried_only_while_it_is_the_latest():
    status = KafkaStatusStore("s", {}, {})
    status._log = log = _RecordingLog()
    status.put_task("c", 0, Status("RUNNING", "w1", generation=1))
    assert log.sent[0]["retry_if"]() is True
    status.put_task("c", 0, Status("FAILED", "w1", generation=1))
    assert log.sent[0]["retry_if"]() is False and log.sent[1]["retry_if"]() is True
    status.put_task("c", 1, Status("RUNNING", "w1", generation=2))  # a new generation
    assert log.sent[1]["retry_if"]() is False
    log.sent[0]["on_result"](None)  # given up
    log.sent[1]["on_result"](None)
    assert status.pending_writes() == 1
