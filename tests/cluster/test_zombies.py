"""The leader's rounds of zombie fencing (connectd.cluster.zombies) against the real broker: each
transition of the module's docstring, and a real zombie producer fenced by a round."""

from __future__ import annotations

import asyncio
import json

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.cluster.config_store import KafkaConfigStore
from connectd.cluster.zombies import ZombieFencer, fence_producers
from connectd.errors import RebalanceInProgressError

pytestmark = pytest.mark.integration

SOURCE = {"connector.class": "FileStreamSource", "topic": "lines"}


def ids(connector: str, count: int) -> list[str]:
    return [f"cluster-{connector}-{n}" for n in range(count)]


class Rounds:
    """A config topic, a store on it and a fencer whose fencing is recorded, then done for real."""

    def __init__(self, broker, topic: str) -> None:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[topic].result(timeout=30)
        settings = {"bootstrap_servers": broker.bootstrap_servers}
        self.store = KafkaConfigStore(topic, settings, settings, timeout_s=10)
        self.option = json.dumps({"bootstrap.servers": broker.bootstrap_servers})
        self.fenced: list[list[str]] = []
        self.before_fencing = None  # called (in the fencing's thread) before it fences
        self.fencer = ZombieFencer(self.store, ids, lambda config: self.option, 10.0, fence=self._fence)

    async def reconfigured(self, store: KafkaConfigStore, before: int, after: int) -> None:
        """Connector ``src`` ran *before* tasks (fenced, recorded), then got *after*: a round is pending."""
        await store.put_connector_config("src", SOURCE)
        await store.put_task_configs("src", [{"n": str(n)} for n in range(before)])
        await store.put_task_count_record("src", before)
        await store.put_task_configs("src", [{"n": str(n)} for n in range(after)])

    def _fence(self, option: str, transactional_ids: list[str], timeout_s: float) -> None:
        self.fenced.append(transactional_ids)
        if self.before_fencing is not None:
            self.before_fencing()
        fence_producers(option, transactional_ids, timeout_s)


def zombie(broker, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": transactional_id})
    producer.init_transactions(10)
    return producer


def test_each_transition_of_a_connectors_fencing(broker, topic_name):
    rounds = Rounds(broker, topic_name)

    async def scenario() -> None:
        async with rounds.store as store:
            await store.put_connector_config("src", SOURCE)
            await rounds.fencer.fence("src")  # no task configs: not pending, nothing written
            assert store.snapshot().task_count_records == {} and rounds.fenced == []

            await store.put_task_configs("src", [{"n": "0"}])
            await rounds.fencer.fence("src")  # its first generation: nothing to fence, the count written
            assert dict(store.snapshot().task_count_records) == {"src": 1} and rounds.fenced == []
            assert "src" not in store.snapshot().pending_fencing

            await store.put_task_configs("src", [{"n": "0", "changed": "yes"}])
            await rounds.fencer.fence("src")  # one task before and after: its successor fences it itself
            assert rounds.fenced == [] and "src" not in store.snapshot().pending_fencing

            await store.put_task_configs("src", [{"n": "0"}, {"n": "1"}, {"n": "2"}])
            await rounds.fencer.fence("src")  # 1 → 3: the one earlier task's id is fenced
            assert rounds.fenced == [ids("src", 1)]
            assert dict(store.snapshot().task_count_records) == {"src": 3}

            await store.put_task_configs("src", [{"n": "0"}])
            await rounds.fencer.fence("src")  # 3 → 1: all three earlier ids
            assert rounds.fenced == [ids("src", 1), ids("src", 3)]
            assert dict(store.snapshot().task_count_records) == {"src": 1}
            assert "src" not in store.snapshot().pending_fencing

    asyncio.run(scenario())


def test_a_zombie_of_the_previous_generation_cannot_commit_after_a_round(broker, topic_name):
    rounds = Rounds(broker, topic_name)
    old_task = zombie(broker, "cluster-src-2")  # task 2 of 3, still running somewhere

    async def scenario() -> None:
        async with rounds.store as store:
            await rounds.reconfigured(store, 3, 1)  # task 2 is no more: nobody's init fences it
            await rounds.fencer.fence("src")

    asyncio.run(scenario())
    old_task.begin_transaction()
    old_task.produce(topic_name + "-data", b"from a zombie")
    with pytest.raises(KafkaException) as raised:
        old_task.commit_transaction(10)
    assert raised.value.args[0].name() in ("PRODUCER_FENCED", "_FENCED", "INVALID_PRODUCER_EPOCH")


def test_rounds_asked_at_once_are_one(broker, topic_name):
    rounds = Rounds(broker, topic_name)

    async def scenario() -> None:
        async with rounds.store as store:
            await rounds.reconfigured(store, 2, 1)
            await asyncio.gather(*(rounds.fencer.fence("src") for _ in range(4)))
            assert rounds.fenced == [ids("src", 2)]
            await rounds.fencer.fence("src")  # done: a later ask finds nothing pending
            assert rounds.fenced == [ids("src", 2)]

    asyncio.run(scenario())


def test_new_task_configs_during_a_round_refuse_it_and_their_own_round_follows(broker, topic_name):
    rounds = Rounds(broker, topic_name)

    async def scenario() -> None:
        async with rounds.store as store:
            await rounds.reconfigured(store, 2, 1)
            loop = asyncio.get_running_loop()
            rounds.before_fencing = lambda: asyncio.run_coroutine_threadsafe(
                store.put_task_configs("src", [{"n": "0"}, {"n": "1"}, {"n": "2"}]), loop).result(30)
            with pytest.raises(RebalanceInProgressError, match="new task configurations were generated"):
                await rounds.fencer.fence("src")
            assert dict(store.snapshot().task_count_records) == {"src": 2}  # no record for a superseded round
            rounds.before_fencing = None
            await rounds.fencer.fence("src")
            assert dict(store.snapshot().task_count_records) == {"src": 3}

    asyncio.run(scenario())
