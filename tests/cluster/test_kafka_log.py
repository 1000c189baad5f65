"""KafkaLog and ensure_topic against the real broker."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.cluster.config_store import KafkaConfigStore
from connectd.cluster.kafka_log import KafkaLog, ensure_internal_topics, ensure_topic
from connectd.cluster.status_store import KafkaStatusStore
from connectd.config.worker import WorkerConfig
from connectd.errors import ConfigError, ConnectdError

pytestmark = pytest.mark.integration


def clients(broker, **more: str) -> WorkerConfig:
    return WorkerConfig(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "connect-test",
            "config.storage.topic": "c",
            "offset.storage.topic": "o",
            "status.storage.topic": "s",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            **more,
        },
        "distributed",
        source="tests",
    )


def log_for(broker, topic: str, seen: list) -> KafkaLog:
    config = clients(broker)
    return KafkaLog(topic, config.client_config("consumer", "aiokafka"), config.client_config("producer", "aiokafka"),
                    lambda record: seen.append((record.partition, record.offset, record.key, record.value)))


def create_topic(broker, name: str, partitions: int = 1, config: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(timeout=30)


def produce_raw(broker, topic: str, records: list[tuple[bytes | None, bytes | None]], partition: int = 0) -> None:
    """Another client (a Kafka Connect worker, say) writes these."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=partition)
    assert producer.flush(30) == 0


def topic_configs(broker, name: str) -> dict[str, str]:
    async def describe() -> dict[str, str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        await admin.start()
        try:
            response = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
            return {entry[0]: entry[1] for entry in response[0].resources[0][4]}
        finally:
            await admin.close()

    return asyncio.run(describe())


def test_start_reads_what_others_wrote_then_read_to_end_sees_later_writes(broker, topic_name):
    create_topic(broker, topic_name, partitions=2)
    produce_raw(broker, topic_name, [(b"a", b"1"), (b"b", b"2"), (b"a", None)], partition=0)
    produce_raw(broker, topic_name, [(b"c", b"3")], partition=1)
    seen: list = []

    async def scenario() -> None:
        async with log_for(broker, topic_name, seen) as log:
            assert log.partitions == 2
            assert sorted(seen) == [(0, 0, b"a", b"1"), (0, 1, b"b", b"2"), (0, 2, b"a", None), (1, 0, b"c", b"3")]
            produce_raw(broker, topic_name, [(b"d", b"4"), (b"e", b"5")], partition=1)
            await log.read_to_end(10)
            assert [r for r in seen if r[0] == 1] == [(1, 0, b"c", b"3"), (1, 1, b"d", b"4"), (1, 2, b"e", b"5")]

    asyncio.run(scenario())


def test_read_to_end_on_an_empty_topic_returns_quickly(broker, topic_name):
    create_topic(broker, topic_name)

    async def scenario() -> float:
        async with log_for(broker, topic_name, []) as log:
            began = time.monotonic()
            await log.read_to_end(10)
            return time.monotonic() - began

    assert asyncio.run(scenario()) < 2


def test_sends_keep_their_order_and_are_read_back(broker, topic_name):
    create_topic(broker, topic_name)
    seen: list = []

    async def scenario() -> list[int]:
        async with log_for(broker, topic_name, seen) as log:
            offsets = list(await asyncio.gather(*(log.send(b"k", str(i).encode()) for i in range(20))))
            assert await log.send_and_read(b"last", None) == 20
            return offsets

    offsets = asyncio.run(scenario())
    assert offsets == list(range(20))
    assert [r[3] for r in seen] == [str(i).encode() for i in range(20)] + [None]


def test_send_nowait_from_another_thread(broker, topic_name):
    create_topic(broker, topic_name)
    seen: list = []

    async def scenario() -> None:
        async with log_for(broker, topic_name, seen) as log:
            writer = threading.Thread(target=lambda: [log.send_nowait(b"t", str(i).encode()) for i in range(10)])
            writer.start()
            await asyncio.to_thread(writer.join)
            deadline = time.monotonic() + 10
            while len(seen) < 10 and time.monotonic() < deadline:
                await log.read_to_end(10)
            assert [r[3] for r in seen] == [str(i).encode() for i in range(10)]

    asyncio.run(scenario())


def test_pending_writes_are_finished_by_stop(broker, topic_name):
    create_topic(broker, topic_name)

    async def write() -> None:
        log = log_for(broker, topic_name, [])
        await log.start()
        for i in range(5):
            log.send_nowait(b"k", str(i).encode())
        await log.stop()
        await log.stop()  # idempotent
        log.send_nowait(b"late", b"x")  # dropped with a warning, never raised

    async def read() -> list:
        seen: list = []
        async with log_for(broker, topic_name, seen):
            return seen

    asyncio.run(write())
    assert [r[3] for r in asyncio.run(read())] == [str(i).encode() for i in range(5)]


def test_read_to_end_timeout_names_topic_and_cluster(broker, topic_name):
    create_topic(broker, topic_name)

    async def scenario() -> None:
        async with log_for(broker, topic_name, []) as log:
            await log.read_to_end(0)

    with pytest.raises(ConnectdError, match=f"{topic_name}.*{broker.bootstrap_servers}"):
        asyncio.run(scenario())


def test_missing_topic_is_an_error_and_not_created(broker, topic_name):
    async def scenario() -> None:
        await log_for(broker, topic_name, []).start()

    with pytest.raises(ConnectdError, match=f"topic {topic_name} does not exist"):
        asyncio.run(scenario())
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    assert topic_name not in admin.list_topics(timeout=10).topics


def test_ensure_topic_creates_a_compacted_topic_once(broker, topic_name):
    admin = clients(broker).client_config("admin", "aiokafka")

    async def scenario() -> tuple[bool, bool]:
        first = await ensure_topic(admin, topic_name, partitions=3, replication_factor=1,
                                   configs={"cleanup.policy": "delete", "min.insync.replicas": "1"})
        again = await ensure_topic(admin, topic_name, partitions=3, replication_factor=1)
        return first, again

    assert asyncio.run(scenario()) == (True, False)
    configs = topic_configs(broker, topic_name)
    assert configs["cleanup.policy"] == "compact"  # wins over the configs given, as in Kafka Connect
    assert configs["min.insync.replicas"] == "1"
    described = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(topic_name, timeout=10)
    assert len(described.topics[topic_name].partitions) == 3


def test_ensure_topic_with_broker_defaults(broker, topic_name):
    admin = clients(broker).client_config("admin", "aiokafka")
    assert asyncio.run(ensure_topic(admin, topic_name, partitions=1, replication_factor=-1)) is True
    assert topic_configs(broker, topic_name)["cleanup.policy"] == "compact"


def test_config_topic_with_two_partitions_is_refused(broker, topic_name):
    create_topic(broker, topic_name, partitions=2, config={"cleanup.policy": "compact"})
    admin = clients(broker).client_config("admin", "aiokafka")
    with pytest.raises(ConfigError) as caught:
        asyncio.run(ensure_topic(admin, topic_name, partitions=1, replication_factor=1, single_partition=True,
                                 topic_key="config.storage.topic"))
    assert str(caught.value) == (f"config.storage.topic {topic_name} has 2 partitions; "
                                 "it must have exactly 1 (Kafka Connect refuses it too)")


def test_existing_topic_that_deletes_records_is_refused(broker, topic_name):
    create_topic(broker, topic_name, config={"cleanup.policy": "delete"})
    admin = clients(broker).client_config("admin", "aiokafka")
    with pytest.raises(ConfigError, match=f"status.storage.topic {topic_name} has cleanup.policy=delete"):
        asyncio.run(ensure_topic(admin, topic_name, partitions=5, replication_factor=1, topic_key="status.storage.topic"))


def test_replication_factor_above_the_broker_count_names_the_key(broker, topic_name):
    admin = clients(broker).client_config("admin", "aiokafka")
    with pytest.raises(ConfigError, match="status.storage.replication.factor is 3, but the Kafka cluster .* has 1 broker;"):
        asyncio.run(ensure_topic(admin, topic_name, partitions=5, replication_factor=3, topic_key="status.storage.topic"))
    listed = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10).topics
    assert topic_name not in listed


def test_a_workers_internal_topics_and_its_stores(broker, topic_name):
    names = {kind: f"{topic_name}-{kind}" for kind in ("configs", "offsets", "statuses")}
    config = clients(broker, **{
        "config.storage.topic": names["configs"], "offset.storage.topic": names["offsets"],
        "status.storage.topic": names["statuses"],
        "config.storage.replication.factor": "1", "offset.storage.replication.factor": "-1",
        "status.storage.replication.factor": "1", "offset.storage.partitions": "3", "status.storage.partitions": "2",
        "config.storage.partitions": "4", "config.storage.cleanup.policy": "delete",
        "status.storage.min.insync.replicas": "1",
    })

    async def scenario() -> None:
        await ensure_internal_topics(config)
        await ensure_internal_topics(config)  # a second worker finds them fine
        async with KafkaConfigStore.from_worker_config(config, "worker-1") as configs, \
                KafkaStatusStore.from_worker_config(config, "worker-1") as statuses:
            assert configs.snapshot().offset == -1
            assert statuses.connectors() == set()

    asyncio.run(scenario())
    listed = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10).topics
    assert {kind: len(listed[name].partitions) for kind, name in names.items()} == {"configs": 1, "offsets": 3, "statuses": 2}
    assert {kind: topic_configs(broker, name)["cleanup.policy"] for kind, name in names.items()} == dict.fromkeys(names, "compact")
    assert topic_configs(broker, names["statuses"])["min.insync.replicas"] == "1"


def test_the_default_replication_factor_needs_three_brokers(broker, topic_name):
    config = clients(broker, **{"offset.storage.topic": f"{topic_name}-o"})
    with pytest.raises(ConfigError, match="offset.storage.replication.factor is 3"):
        asyncio.run(ensure_internal_topics(config))


def test_stop_ends_a_waiting_read_to_end(broker, topic_name):
    create_topic(broker, topic_name)

    async def scenario() -> None:
        log = log_for(broker, topic_name, [])
        await log.start()
        waiting = asyncio.create_task(log.read_to_end(10))
        await asyncio.sleep(0)  # let it begin waiting
        await log.stop()
        await waiting

    with pytest.raises(ConnectdError, match="is STOPPED"):
        asyncio.run(scenario())
