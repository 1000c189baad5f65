"""KafkaConfigStore against the real broker: Kafka Connect's config-topic records, byte for byte."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.cluster.config_store import (
    ConfigSnapshot,
    KafkaConfigStore,
    RestartRequest,
    SessionKey,
)
from connectd.cluster.protocol import ConnectorTaskId
from connectd.errors import ConfigError

from ._listeners import Recorder

pytestmark = pytest.mark.integration


def store(broker, topic: str, listener=None) -> KafkaConfigStore:
    settings = {"bootstrap_servers": broker.bootstrap_servers}
    return KafkaConfigStore(topic, settings, settings, listener=listener, timeout_s=10)


def create_topic(broker, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1, config={"cleanup.policy": "compact"})])[name].result(timeout=30)


def produce_raw(broker, topic: str, records: list[tuple[str, bytes | None]]) -> None:
    """A Kafka Connect worker writes these records."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=value, partition=0)
    assert producer.flush(30) == 0


def consume_raw(broker, topic: str, count: int) -> list[tuple[bytes, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "raw", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[tuple[bytes, bytes | None]] = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append((message.key(), message.value()))
    finally:
        consumer.close()
    return got


def fresh_snapshot(broker, topic: str) -> ConfigSnapshot:
    async def read() -> ConfigSnapshot:
        async with store(broker, topic) as reader:
            return reader.snapshot()

    return asyncio.run(read())


SOURCE = {"connector.class": "FileStreamSource", "tasks.max": "2", "topic": "lines", "file": None}
KEY = SessionKey(bytes(range(32)), "HmacSHA256", 1_700_000_000_000)


def test_every_record_type_round_trips_through_a_fresh_store(broker, topic_name):
    create_topic(broker, topic_name)

    async def write() -> ConfigSnapshot:
        async with store(broker, topic_name) as writer:
            assert writer.snapshot() == ConfigSnapshot()
            await writer.put_connector_config("src", SOURCE, target_state="PAUSED")
            await writer.put_task_configs("src", [{"task": "0"}, {"task": "1"}])
            await writer.put_connector_config("sink", {"connector.class": "FileStreamSink", "topics": "lines"})
            await writer.put_task_configs("sink", [{"t": "a"}])
            await writer.put_target_state("sink", "STOPPED")
            await writer.put_restart_request("src", include_tasks=True, only_failed=True)
            await writer.put_session_key(KEY)
            return writer.snapshot()

    written = asyncio.run(write())
    assert written.offset == 11  # 11 records; Kafka Connect's: the offset after the last record read
    assert written.connectors() == ["sink", "src"]
    assert dict(written.connector_configs["src"]) == SOURCE
    assert written.tasks("src") == [ConnectorTaskId("src", 0), ConnectorTaskId("src", 1)]
    assert dict(written.task_configs[ConnectorTaskId("src", 1)]) == {"task": "1"}
    assert dict(written.target_states) == {"src": "PAUSED", "sink": "STOPPED"}
    assert written.session_key == KEY
    assert written.inconsistent == frozenset()
    assert fresh_snapshot(broker, topic_name) == written


def test_records_are_kafka_connects_byte_for_byte(broker, topic_name):
    create_topic(broker, topic_name)

    async def write() -> None:
        async with store(broker, topic_name) as writer:
            await writer.put_connector_config("c", {"connector.class": "X", "tasks.max": "2"}, target_state="STOPPED")
            await writer.put_task_configs("c", [{"k": "v0"}, {"k": "v1"}])
            await writer.put_target_state("c", "PAUSED")
            await writer.put_restart_request("c", include_tasks=True)
            await writer.put_session_key(SessionKey(b"\x00\x01\x02", "HmacSHA256", 1700000000000))
            await writer.remove_connector_config("c")

    asyncio.run(write())
    assert consume_raw(broker, topic_name, 10) == [
        (b"target-state-c", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        (b"connector-c", b'{"properties":{"connector.class":"X","tasks.max":"2"}}'),
        (b"task-c-0", b'{"properties":{"k":"v0"}}'),
        (b"task-c-1", b'{"properties":{"k":"v1"}}'),
        (b"commit-c", b'{"tasks":2}'),
        (b"target-state-c", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        (b"restart-connector-c", b'{"include-tasks":true,"only-failed":false}'),
        (b"session-key", b'{"key":"AAEC","algorithm":"HmacSHA256","creation-timestamp":1700000000000}'),
        (b"connector-c", None),
        (b"target-state-c", None),
    ]


def test_task_configs_appear_only_with_their_commit(broker, topic_name):
    create_topic(broker, topic_name)
    produce_raw(broker, topic_name, [("connector-my-conn", b'{"properties":{"tasks.max":"2","name":"my-conn"}}')])
    listener = Recorder()

    async def scenario() -> None:
        async with store(broker, topic_name, listener) as reader:
            assert reader.snapshot().task_counts == {}
            produce_raw(broker, topic_name, [("task-my-conn-0", b'{"properties":{"n":"0"}}'),
                                             ("task-my-conn-1", b'{"properties":{"n":"1"}}')])
            await reader.refresh(10)
            before = reader.snapshot()
            assert before.offset == 3
            assert before.tasks("my-conn") == [] and before.task_configs == {}
            assert listener.calls == []
            produce_raw(broker, topic_name, [("commit-my-conn", b'{"tasks":2}')])
            await reader.refresh(10)
            after = reader.snapshot()
            assert after.tasks("my-conn") == [ConnectorTaskId("my-conn", 0), ConnectorTaskId("my-conn", 1)]
            assert {t: dict(c) for t, c in after.task_configs.items()} == {
                ConnectorTaskId("my-conn", 0): {"n": "0"}, ConnectorTaskId("my-conn", 1): {"n": "1"}}
            assert listener.calls == [("tasks", [ConnectorTaskId("my-conn", 0), ConnectorTaskId("my-conn", 1)])]

    asyncio.run(scenario())


def test_a_commit_with_missing_tasks_marks_the_connector_inconsistent_until_a_complete_one(broker, topic_name):
    create_topic(broker, topic_name)
    produce_raw(broker, topic_name, [
        ("connector-c", b'{"properties":{}}'),
        ("task-c-1", b'{"properties":{"n":"1"}}'),  # task-c-0 compacted away
        ("commit-c", b'{"tasks":2}'),
    ])
    inconsistent = fresh_snapshot(broker, topic_name)
    assert inconsistent.inconsistent == {"c"} and inconsistent.tasks("c") == []
    assert inconsistent.task_configs == {}
    produce_raw(broker, topic_name, [("task-c-0", b'{"properties":{"n":"0"}}'), ("commit-c", b'{"tasks":1}')])
    repaired = fresh_snapshot(broker, topic_name)
    assert repaired.inconsistent == frozenset()
    assert repaired.tasks("c") == [ConnectorTaskId("c", 0)]
    assert {t: dict(c) for t, c in repaired.task_configs.items()} == {ConnectorTaskId("c", 0): {"n": "0"}}


def test_target_states_v1_and_v2(broker, topic_name):
    create_topic(broker, topic_name)
    produce_raw(broker, topic_name, [
        ("connector-old", b'{"properties":{}}'),
        ("target-state-old", b'{"state":"PAUSED"}'),  # a worker before KIP-875
        ("connector-new", b'{"properties":{}}'),
        ("target-state-new", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        ("connector-odd", b'{"properties":{}}'),
        ("target-state-odd", b'{"state":"PAUSED","state.v2":7}'),  # bad v2: the v1 field is used
        ("connector-plain", b'{"properties":{}}'),  # no target state: STARTED
        ("target-state-early", b'{"state":"PAUSED","state.v2":"PAUSED"}'),  # written before its connector
        ("connector-early", b'{"properties":{}}'),
    ])
    snapshot = fresh_snapshot(broker, topic_name)
    assert dict(snapshot.target_states) == {"old": "PAUSED", "new": "STOPPED", "odd": "PAUSED", "plain": "STARTED",
                                            "early": "PAUSED"}


def test_unknown_keys_and_malformed_values_are_skipped(broker, topic_name):
    create_topic(broker, topic_name)
    produce_raw(broker, topic_name, [
        ("something-else", b'{"a":1}'),
        ("connector-broken", b"not json"),
        ("connector-list", b"[1,2]"),
        ("task-nonumber", b'{"properties":{}}'),
        ("target-state-x", b'{"state":"RUNNING"}'),
        ("session-key", b'{"key":"!!","algorithm":"HmacSHA256","creation-timestamp":1}'),
        ("logger-cluster-org.example", b'{"level":"DEBUG"}'),
        ("tasks-fencing-c", b'{"task-count":3}'),
        ("connector-ok", b'{"properties":{"a":"b"}}'),
    ])
    snapshot = fresh_snapshot(broker, topic_name)
    assert dict(snapshot.connector_configs) == {"ok": {"a": "b"}}
    assert dict(snapshot.target_states) == {"ok": "STARTED"}
    assert snapshot.session_key is None
    assert dict(snapshot.task_count_records) == {"c": 3}  # kept for a connector created later as "c"
    assert snapshot.offset == 9


def test_task_count_records_end_a_pending_fencing_and_are_kafkas_bytes(broker, topic_name):
    create_topic(broker, topic_name)

    async def write() -> list[ConfigSnapshot]:
        seen = []
        async with store(broker, topic_name) as writer:
            await writer.put_connector_config("src", SOURCE)
            seen.append(writer.snapshot())  # no task configs yet: nothing to fence
            await writer.put_task_configs("src", [{"task": "0"}, {"task": "1"}])
            seen.append(writer.snapshot())  # committed: pending until a round of fencing
            await writer.put_task_count_record("src", 2)
            seen.append(writer.snapshot())
            await writer.put_task_configs("src", [{"task": "0"}])
            seen.append(writer.snapshot())  # a new generation: pending again, the old count kept
        return seen

    created, committed, fenced, reconfigured = asyncio.run(write())
    assert created.pending_fencing == frozenset() and dict(created.task_generations) == {}
    assert committed.pending_fencing == {"src"} and dict(committed.task_generations) == {"src": 0}
    assert fenced.pending_fencing == frozenset() and dict(fenced.task_count_records) == {"src": 2}
    assert reconfigured.pending_fencing == {"src"} and dict(reconfigured.task_count_records) == {"src": 2}
    assert dict(reconfigured.task_generations) == {"src": 1}
    assert consume_raw(broker, topic_name, 5)[-1] == (b"tasks-fencing-src", b'{"task-count":2}')
    reread = fresh_snapshot(broker, topic_name)
    assert reread.pending_fencing == {"src"} and dict(reread.task_count_records) == {"src": 2}


def test_listener_hears_changes_read_after_start(broker, topic_name):
    create_topic(broker, topic_name)
    produce_raw(broker, topic_name, [("connector-before", b'{"properties":{}}'),
                                     ("restart-connector-before", b'{"include-tasks":true,"only-failed":true}')])
    listener = Recorder()

    async def scenario() -> None:
        async with store(broker, topic_name, listener) as writer:
            assert listener.calls == []  # what start() read is in the snapshot, not told
            await writer.put_connector_config("c", {"a": "1"}, target_state="STARTED")
            await writer.put_target_state("c", "STARTED")  # unchanged: not told
            await writer.put_target_state("c", "PAUSED")
            await writer.put_restart_request("c", only_failed=True)
            await writer.put_session_key(KEY)
            await writer.put_task_configs("c", [])
            await writer.remove_connector_config("c")
            assert not writer.contains("c")

    asyncio.run(scenario())
    assert listener.calls == [
        ("connector", "c"),
        ("target", "c"),
        ("restart", RestartRequest("c", include_tasks=False, only_failed=True)),
        ("session", KEY),
        ("tasks", []),
        ("connector", "c"),
    ]


def test_removing_a_connector_forgets_its_tasks_and_state(broker, topic_name):
    create_topic(broker, topic_name)

    async def scenario() -> ConfigSnapshot:
        async with store(broker, topic_name) as writer:
            await writer.put_connector_config("gone", {"a": "1"}, target_state="PAUSED")
            await writer.put_task_configs("gone", [{"t": "0"}])
            await writer.put_connector_config("kept", {"a": "2"})
            await writer.remove_connector_config("gone")
            return writer.snapshot()

    snapshot = asyncio.run(scenario())
    assert snapshot.connectors() == ["kept"]
    assert snapshot.task_configs == {} and dict(snapshot.task_counts) == {}
    assert dict(snapshot.target_states) == {"kept": "STARTED"}
    assert fresh_snapshot(broker, topic_name) == snapshot


def test_fewer_tasks_leave_no_stale_task_configs(broker, topic_name):
    create_topic(broker, topic_name)

    async def scenario() -> ConfigSnapshot:
        async with store(broker, topic_name) as writer:
            await writer.put_connector_config("c", {})
            await writer.put_task_configs("c", [{"n": "0"}, {"n": "1"}, {"n": "2"}])
            await writer.put_task_configs("c", [{"n": "new"}])
            return writer.snapshot()

    snapshot = asyncio.run(scenario())
    assert {t: dict(c) for t, c in snapshot.task_configs.items()} == {ConnectorTaskId("c", 0): {"n": "new"}}
    assert snapshot.tasks("c") == [ConnectorTaskId("c", 0)]


def test_config_topic_with_two_partitions_is_refused(broker, topic_name):
    create_topic(broker, topic_name, partitions=2)
    with pytest.raises(ConfigError) as caught:
        asyncio.run(store(broker, topic_name).start())
    assert str(caught.value) == (f"config.storage.topic {topic_name} has 2 partitions; "
                                 "it must have exactly 1 (Kafka Connect refuses it too)")
