"""The leader's transactional writes to the config topic (connectd.cluster.leader_writer) against the
real broker: each transition of the module's docstring, and a store reading only what committed."""

from __future__ import annotations

import asyncio
import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.cluster.config_store import KafkaConfigStore
from connectd.cluster.leader_writer import LeaderWriter, transactional_id
from connectd.errors import ConnectorError

pytestmark = pytest.mark.integration


def create_topic(broker, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, 1, config={"cleanup.policy": "compact"})])[name].result(timeout=30)


def writer(broker, topic: str) -> LeaderWriter:
    return LeaderWriter(topic, json.dumps({"bootstrap.servers": broker.bootstrap_servers}), transactional_id("cluster"),
                        10.0)


def store(broker, topic: str, leader: LeaderWriter | None = None, *, committed: bool = True) -> KafkaConfigStore:
    settings = {"bootstrap_servers": broker.bootstrap_servers}
    consumer = {**settings, **({"isolation_level": "read_committed"} if committed else {})}
    return KafkaConfigStore(topic, consumer, settings, timeout_s=10, writer=leader)


def test_the_transactional_id_is_kafka_connects():
    assert transactional_id("connect-cluster") == "connect-cluster-connect-cluster"


def test_a_claimed_writer_writes_kafkas_records_and_an_unclaimed_one_refuses(broker, topic_name):
    create_topic(broker, topic_name)
    leader = writer(broker, topic_name)

    async def scenario():
        async with store(broker, topic_name, leader) as configs:
            with pytest.raises(ConnectorError, match="does not hold the write privileges"):
                await configs.put_connector_config("c", {"connector.class": "X"})
            await configs.claim_write_privileges()
            await configs.put_connector_config("c", {"connector.class": "X"}, target_state="PAUSED")
            await configs.put_task_configs("c", [{"k": "v"}])
            return configs.snapshot()

    snapshot = asyncio.run(scenario())
    assert dict(snapshot.connector_configs) == {"c": {"connector.class": "X"}}
    assert dict(snapshot.target_states) == {"c": "PAUSED"} and dict(snapshot.task_counts) == {"c": 1}
    assert not leader.claimed  # the store stopped: relinquished


def test_a_newer_leader_fences_the_older_whose_write_fails_and_is_not_seen(broker, topic_name):
    create_topic(broker, topic_name)
    old, new = writer(broker, topic_name), writer(broker, topic_name)
    lost = []

    async def scenario():
        async with store(broker, topic_name, old) as stale, store(broker, topic_name, new) as current:
            stale.on_privileges_lost = lambda: lost.append("old")
            await stale.claim_write_privileges()
            await stale.put_connector_config("a", {"connector.class": "X"})
            await current.claim_write_privileges()  # the new leader: the old one's producer is fenced
            with pytest.raises(ConnectorError, match="Failed to write to config topic; this may be due to a "
                                                     "transient error and the request can be safely retried"):
                await stale.put_connector_config("zombie", {"connector.class": "X"})
            await current.put_connector_config("b", {"connector.class": "Y"})
            return old.claimed, lost

    assert asyncio.run(scenario()) == (False, ["old"])

    async def read():
        async with store(broker, topic_name) as fresh:
            return sorted(fresh.snapshot().connector_configs)

    assert asyncio.run(read()) == ["a", "b"]


def test_a_committed_reader_reads_to_the_end_before_an_open_transaction_without_its_records(broker, topic_name):
    """A read_committed store's end is the last stable offset: an open transaction (a leader between
    its begin and its commit) neither holds a read to the end up nor shows its records until it
    commits."""
    create_topic(broker, topic_name)
    leader = writer(broker, topic_name)
    other = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"{topic_name}-other"})

    async def scenario():
        async with store(broker, topic_name, leader) as configs:
            await configs.claim_write_privileges()
            await configs.put_connector_config("before", {"connector.class": "X"})
            other.init_transactions(10)
            other.begin_transaction()
            other.produce(topic_name, key=b"connector-open", value=json.dumps({"properties": {"a": "b"}}).encode(),
                          partition=0)
            other.flush(10)
            await asyncio.wait_for(configs.refresh(5), 10)  # not held up until the transaction ends
            during = sorted(configs.snapshot().connector_configs)
            await asyncio.to_thread(other.commit_transaction, 10)
            await configs.refresh(10)
            return during, sorted(configs.snapshot().connector_configs)

    assert asyncio.run(scenario()) == (["before"], ["before", "open"])
