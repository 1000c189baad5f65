"""Zombie fencing of exactly-once source tasks (KIP-618), as Kafka Connect's leader does it.

A source task with exactly-once delivery writes through a transactional producer whose id,
``<group.id>-<connector>-<task>`` (:func:`connectd.runtime.source.transactions.transactional_id`),
is the same in every generation of the connector's tasks: a new task *k* initialising its producer
fences the previous task *k* wherever it still runs. What that cannot reach is a task of an older
generation with more tasks (task 3 of 4, after a reconfiguration to 2): a round of fencing does,
before any task of the new generation starts.

A connector's state, as the config topic says it (:mod:`connectd.cluster.config_store`)::

    no task configs ──commit-<c>──► PENDING ──tasks-fencing-<c> = N──► FENCED (N tasks may run)
    FENCED ──commit-<c> (a new generation)──► PENDING

The leader's round for connector ``c`` (:meth:`ZombieFencer.fence`; a follower asks for it with
``PUT /connectors/{c}/fence``, signed as every request between workers)::

    read the config topic to its end
    not PENDING ──► nothing to do
    PENDING, no count record ──► write tasks-fencing-c = tasks now (its first exactly-once
                                  generation: no producer of it to fence)
    PENDING, count 1 and 1 task now ──► write it (the new task's initialisation fences the old one)
    PENDING, count N ──► initialise the transactional ids of tasks 0..N-1, each fencing its
                         producer and ending its open transaction (Admin.fenceProducers' effect),
                         ──► read the config topic again; a newer generation committed meanwhile:
                         409, its own round follows ──► else write tasks-fencing-c = tasks now

Rounds for one connector asked at once (its tasks on several workers) share one. A task starts
only once its connector is not PENDING (:meth:`connectd.cluster.herder.DistributedHerder._start_owned_task`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from connectd.cluster.config_store import KafkaConfigStore
from connectd.errors import ConnectorError, RebalanceInProgressError
from connectd.logging import get_logger

__all__ = ["ZombieFencer", "fence_producers"]

log = get_logger(__name__)


def fence_producers(client_option: str, transactional_ids: list[str], timeout_s: float) -> None:
    """Initialise a producer of each transactional id and drop it: the broker fences every older
    producer of the id and ends its open transaction (Kafka: aborts it).

    :raises ConnectorError: the cluster did not initialise one within *timeout_s*.
    """
    from confluent_kafka import KafkaException  # lazy: a worker without exactly-once never loads it here

    from connectd.runtime.kafka.producing import transactional_producer

    for transactional_id in transactional_ids:
        try:
            producer = transactional_producer(client_option, transactional_id, timeout_s)
        except KafkaException as exc:
            raise ConnectorError(f"could not fence the producers of transactional id {transactional_id}: "
                                 f"{exc.args[0] if exc.args else exc}", retriable=True) from exc
        del producer  # librdkafka's destructor releases it


class ZombieFencer:
    """The leader's rounds of fencing (the module's docstring says the steps).

    :param store: the config topic.
    :param transactional_ids: a connector's transactional ids for tasks ``0..n-1``.
    :param producer_option: the client option of a connector's tasks' producer (its cluster, its security).
    :param sync_timeout_s: how long a read of the config topic to its end may take.
    :param fence: fences transactional ids (:func:`fence_producers` by default; runs in a thread).
    """

    def __init__(self, store: KafkaConfigStore, transactional_ids: Callable[[str, int], list[str]],
                 producer_option: Callable[[Mapping[str, str]], str], sync_timeout_s: float,
                 fence: Callable[[str, list[str], float], None] = fence_producers) -> None:
        self.store = store
        self.transactional_ids = transactional_ids
        self.producer_option = producer_option
        self.sync_timeout_s = sync_timeout_s
        self._fence = fence
        self._rounds: dict[str, asyncio.Future[None]] = {}

    async def fence(self, connector: str) -> None:
        """A round for *connector* (its source connector checked by the caller); joins one under way.

        :raises ConnectorError: the producers were not fenced, or the count record not written.
        :raises RebalanceInProgressError: new task configs were committed during the round.
        """
        under_way = self._rounds.get(connector)
        if under_way is None:
            under_way = asyncio.ensure_future(self._round(connector))
            self._rounds[connector] = under_way
            under_way.add_done_callback(lambda _: self._rounds.pop(connector, None))
        await asyncio.shield(under_way)

    async def _round(self, connector: str) -> None:
        await self.store.refresh(self.sync_timeout_s)
        snapshot = self.store.snapshot()
        if connector not in snapshot.pending_fencing:
            log.debug("zombie_fencing_not_needed", connector=connector)
            return
        tasks = snapshot.task_counts.get(connector, 0)
        previous = snapshot.task_count_records.get(connector)
        generation = snapshot.task_generations.get(connector)
        if previous is not None and (previous, tasks) != (1, 1):
            ids = self.transactional_ids(connector, previous)
            log.info("zombie_fencing", connector=connector, transactional_ids=len(ids), tasks_now=tasks)
            option = self.producer_option(snapshot.connector_configs.get(connector, {}))
            await asyncio.to_thread(self._fence, option, ids, self.sync_timeout_s)
            await self.store.refresh(self.sync_timeout_s)
            if self.store.snapshot().task_generations.get(connector) != generation:
                raise RebalanceInProgressError(
                    "Fencing failed because new task configurations were generated for the connector")
        else:
            log.info("zombie_fencing_skipped", connector=connector, previous_tasks=previous, tasks_now=tasks,
                     why="no earlier exactly-once generation" if previous is None else
                     "one task before and after: the new task's producer fences the old one")
        await self.store.put_task_count_record(connector, tasks)
        log.info("zombie_fencing_recorded", connector=connector, tasks=tasks)

