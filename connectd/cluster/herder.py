"""The distributed herder: one worker of a Connect cluster.

It runs what the group's leader assigned to this worker, with the same
machinery as the standalone herder (:class:`connectd.herder.HerderBase`),
and keeps configs, statuses and offsets in the internal topics. The
protocol, the topics and the assignment are described in ``docs/cluster.md``;
here is the herder's part::

    start ─► topics exist ─► config + status topics read to the end ─► join the group, warming
          (no work until Spark is warm: attach_spark, then a rejoin that takes work)
    assigned(generation, assignment)
        ├─ the leader, with exactly-once sources preparing or enabled: claim the config topic's write
        │    privileges (connectd.cluster.leader_writer); a follower relinquishes them
        ├─ error CONFIG_MISMATCH ─► read the config topic to the end (worker.sync.timeout.ms), rejoin
        │    (not read in time: keep the work and read on; with worker.unsync.backoff.ms set,
        │     leave the group, work revoked, and rejoin after that long, as Kafka's worker does)
        ├─ stop revoked connectors and tasks (gracefully, bounded)
        ├─ read the config topic up to the assignment's offset
        └─ start new connectors ─► their task configs ─► the leader writes them (task-…, commit-…)
           start new tasks with the committed configs
    config record read (in topic order, one at a time, under the herder's lock)
        ├─ connector added or deleted, task configs committed ─► leader: rebalance
        ├─ connector config changed ─► its owner restarts it; new task configs go to the leader
        ├─ task configs committed ─► owners restart their tasks of that connector (exactly-once
        │                            sources once the leader's round of zombie fencing is done:
        │                            connectd.cluster.zombies)
        ├─ target state ─► owners pause / resume; STOPPED: the connector instance stops and the
        │                  leader writes an empty task set, so the tasks are revoked
        └─ restart request ─► owners restart what it names
    session lost ─► stop everything at once (before the group can give it to another worker); the
                    lease every task's query reads ended at that same moment (on_lease)
    stop ─► stop everything, leave the group, close the topics

Writes arriving over REST are the leader's: a follower raises
:class:`~connectd.errors.NotLeaderError` and the REST API forwards the
request, signed with the session key. While a rebalance is under way, a
write waits (``rest.rebalance.wait.ms``) for the group to settle.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from connectd.capacity.providers import CapacityProvider
from connectd.cluster.assignor import AssignorState, assign, assign_eager
from connectd.cluster.capacity import CapacityController
from connectd.cluster.config_store import KafkaConfigStore
from connectd.cluster.forwarding import request_fencing, send_task_configs
from connectd.cluster.kafka_log import ensure_internal_topics, ensure_topic, internal_topic_settings
from connectd.cluster.membership import EAGER_REBALANCE, WorkerGroupMember
from connectd.cluster.protocol import (
    CONFIG_MISMATCH,
    EAGER,
    OFFERED,
    SESSIONED,
    ConnectAssignment,
    ConnectorTaskId,
    WorkerLoad,
    WorkerMetadata,
)
from connectd.cluster.signing import SessionKey, new_session_key
from connectd.cluster.status_store import KafkaStatusStore
from connectd.cluster.zombies import ZombieFencer
from connectd.config.connector import ConnectorConfig
from connectd.config.properties import Origin
from connectd.config.worker import WorkerConfig
from connectd.errors import (
    BadRequestError,
    ConfigError,
    ConnectdError,
    NotFoundError,
    NotLeaderError,
    RebalanceInProgressError,
)
from connectd.herder import HerderBase, RestartPlan, too_many_tasks
from connectd.herder.runs import ConnectorRun, TaskRun, restarting, trace_of
from connectd.logging import bind_context, get_logger, set_level
from connectd.loops import Loops
from connectd.runtime.fencing import write_lease
from connectd.runtime.kafka.clients import client_option
from connectd.runtime.offsets.store import close_producers, open_offset_store
from connectd.runtime.source.wire import transactional_id
from connectd.status import FAILED, PAUSED, RESTARTING, RUNNING, STOPPED, UNASSIGNED, Status

__all__ = ["DistributedHerder"]

log = get_logger(__name__)

_REPUBLISH_FIRST_S = 0.5  # task configs the leader did not take are offered again, doubling up to
_REPUBLISH_MAX_S = 30.0
_FENCING_RETRY_FIRST_S = 0.5  # a task whose round of fencing failed asks again, doubling up to
_FENCING_RETRY_MAX_S = 10.0
_CLAIM_RETRY_S = 1.0  # a leader without the config topic's write privileges tries to claim them again


class DistributedHerder(HerderBase):
    """A worker of the cluster ``group.id``.

    :param worker: the worker's (distributed) configuration.
    :param worker_id: this worker's id, shown in statuses (its advertised ``host:port``).
    :param spark: the worker's SparkSession.
    :param rest_url: this worker's advertised REST URL (forwarded requests reach the leader there);
        set before :meth:`start` when it is known only once the REST API listens.
    :param registry: the plugin registry.
    :param capacity_provider: the checked provider ``capacity.provider`` names (docs/capacity.md).
    """

    def __init__(self, worker: WorkerConfig, worker_id: str, spark: Any, rest_url: str, registry: Any = None,
                 capacity_provider: CapacityProvider | None = None) -> None:
        loops = Loops()
        status = KafkaStatusStore.from_worker_config(worker, f"connectd-{worker_id}", loops=loops)
        super().__init__(worker, worker_id, spark, status=status, active_topics=status, registry=registry,
                         loops=loops)
        self.rest_url = rest_url
        self.config_store = KafkaConfigStore.from_worker_config(worker, f"connectd-{worker_id}", listener=self,
                                                                loops=loops)
        self.config_store.on_privileges_lost = lambda: self._later(self._reclaim_write_privileges())
        self.protocol = str(worker.get("connect.protocol")).lower()
        settings = worker.client_config("admin", "aiokafka")
        settings["client_id"] = f"connectd-{worker_id}"
        session_ms = worker.get("session.timeout.ms")
        # The work is stopped in the last third of the session, before the coordinator can drop us.
        self.revocation_margin_s = session_ms / 3 / 1000
        self.member = WorkerGroupMember(
            settings, str(worker.get("group.id")),
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=worker.get("rebalance.timeout.ms"),
            heartbeat_interval_ms=worker.get("heartbeat.interval.ms"),
            protocols=OFFERED[self.protocol],
            handler=self,
            revocation_margin_ms=session_ms // 3,
            loops=self.loops,
            retry_backoff_max_ms=worker.get("retry.backoff.max.ms"),
        )
        self.rebalance_wait_s = worker.get("rest.rebalance.wait.ms") / 1000
        self.sync_timeout_s = worker.get("worker.sync.timeout.ms") / 1000
        #: set: out of the group this long when the config topic cannot be read in time (Kafka's way)
        self.unsync_backoff_ms: int | None = worker.get("worker.unsync.backoff.ms")
        group_id = str(worker.get("group.id"))
        #: the leader's rounds of zombie fencing for exactly-once sources (connectd.cluster.zombies)
        self.fencer = ZombieFencer(
            self.config_store, lambda name, count: [transactional_id(group_id, name, n) for n in range(count)],
            lambda config: self.assembler.client_option("producer", config), self.sync_timeout_s)
        self._assigned = WorkerLoad()  # what this worker runs in the current generation
        self._assignor_state: AssignorState | None = None
        self._group_generation = -1
        self._last_assignment: ConnectAssignment | None = None
        self._leader_url: str | None = None
        self._settled = asyncio.Event()
        self._rebalance_began: float | None = None  # loop time the rebalance under way began
        self._members: dict[str, WorkerMetadata] = {}  # the leader's view, from the last round
        self._session_key: SessionKey | None = None
        self._previous_session_key: SessionKey | None = None
        self._key_task: asyncio.Task[None] | None = None
        self._lease_dir: str | None = None
        self._spark_attached = asyncio.Event()
        if spark is not None:
            self._spark_attached.set()
        #: the capacity policy's step: this worker's load reports and, on the leader, the decisions
        self.capacity = CapacityController(self, capacity_provider)
        self.status.on_capacity = self.capacity.on_record

    # --- lifecycle ---

    async def start(self) -> None:
        await ensure_internal_topics(self.worker)
        # The lease every task's query honours (connectd.runtime.fencing): written on each proof of
        # membership, expired until the first assignment and once the membership may be lost.
        self._lease_dir = tempfile.mkdtemp(prefix="connectd-lease-")
        self.assembler.lease_file = os.path.join(self._lease_dir, "lease")
        write_lease(self.assembler.lease_file, 0.0)
        await self.status.start()
        await self.config_store.start()
        self._session_key = self.snapshot.session_key
        await super().start()
        await self.member.start()
        ttl_s = self.worker.get("inter.worker.key.ttl.ms") / 1000
        self._key_task = self.loops.run("session-keys", self._rotate_session_key,
                                        pause_s=min(max(ttl_s / 4, 1.0), 60.0))
        self.loops.run("capacity", self.capacity.step, pause_s=self.capacity.interval_s)
        if self.spark is not None and self.capacity.wants_spark:
            await self.capacity.start(self.spark)

    async def stop(self) -> None:
        if self._key_task is not None:
            await self.loops.stop("session-keys")
            self._key_task = None
        await self.loops.stop("capacity")
        await self.capacity.close()
        # Every task stops gracefully and says so (UNASSIGNED) before the group hears we left: the
        # leader hands work released this way over at once, where a crashed worker's waits for it.
        async with self._lock:
            await self._apply_revocations(self._assigned)
        try:
            await self.status.flush(self.graceful_timeout_s)
        except ConnectdError as exc:
            log.warning("statuses_unwritten_at_stop", error=str(exc))
        await super().stop()
        await self.member.stop()
        await self.config_store.stop()
        await self.status.stop()
        await asyncio.to_thread(close_producers)  # those the offsets API used in this process
        if self._lease_dir is not None:
            shutil.rmtree(self._lease_dir, ignore_errors=True)

    @property
    def warming(self) -> bool:
        """In the group, but its Spark session is not up and warm yet: it takes no work (the leader
        gives it none, see connectd.cluster.assignor) and ``/health`` says it is starting."""
        return not self._spark_attached.is_set()

    def attach_spark(self, spark: Any) -> None:
        """Spark is up and warm: this worker takes work from now on, and rejoins to say so. Not in
        an eager group: its metadata cannot say it warms, so it was given work already (which
        waited for Spark and starts now), and a rejoin would stop all the group's work for nothing."""
        super().attach_spark(spark)
        self._spark_attached.set()
        if self._started and self.capacity.wants_spark:
            self._later(self.capacity.start(spark))
        if self._started and self.member.protocol != EAGER:
            log.info("worker_warm_rejoining")
            self.member.request_rejoin()

    # --- reads: this worker's view of the config topic ---

    @property
    def snapshot(self) -> Any:
        return self.config_store.snapshot()

    @property
    def is_leader(self) -> bool:
        return self.member.is_leader

    def member_urls(self) -> list[str]:
        """The leader's view of the group: each member's advertised REST URL (empty on a follower)."""
        return sorted(metadata.url for metadata in self._members.values()) if self.is_leader else []

    def group_view(self) -> dict[str, Any]:
        """The group as the metrics show it: generation, leadership, whether a rebalance is under way."""
        return {"generation": self._generation(), "leader": self.is_leader, "rebalancing": not self._settled.is_set()}

    @property
    def leader_url(self) -> str | None:
        return self._leader_url

    @property
    def signs_requests(self) -> bool:
        """Requests between workers are signed and checked: the group runs ``sessioned`` (before the
        first join, this worker's ``connect.protocol`` says), as Kafka's ``internalRequestValidationEnabled``.
        A group with a worker that speaks less (a Kafka Connect worker on eager or compatible) runs
        that, and no worker signs."""
        return (self.member.protocol or self.protocol) == SESSIONED

    def connectors(self) -> list[str]:
        return sorted(self.snapshot.connector_configs)

    def config(self, name: str) -> dict[str, str]:
        return dict(self.snapshot.connector_configs[name])

    def task_configs(self, name: str) -> list[dict[str, str]]:
        snapshot = self.snapshot
        if name not in snapshot.connector_configs:
            raise NotFoundError(f"connector {name} not found")
        return [dict(snapshot.task_configs[ConnectorTaskId(name, i)]) for i in range(snapshot.task_counts.get(name, 0))
                if ConnectorTaskId(name, i) in snapshot.task_configs]

    def assignment(self) -> WorkerLoad:
        """What this worker runs now."""
        return self._assigned

    def _run(self, name: str) -> ConnectorRun:
        run = self._connectors.get(name)
        if run is not None:
            return run
        config = self.snapshot.connector_configs.get(name)
        if config is None:
            raise NotFoundError(f"connector {name} not found")
        return ConnectorRun(name, dict(config), self.registry.find_class("connector", config["connector.class"]),
                             target=self.snapshot.target_states.get(name, "STARTED"))

    def _task_count(self, run: ConnectorRun) -> int:
        return self.snapshot.task_counts.get(run.name, 0)

    def _generation(self) -> int:
        return max(self._group_generation, 0)

    # --- writes: the leader's ---

    async def _as_leader(self) -> None:
        """Return once this worker may write as the leader; raise NotLeaderError for a follower.

        A write waits while the group rebalances (up to ``rest.rebalance.wait.ms``) rather than
        answering 409 at once as Kafka Connect does.
        """
        try:
            await asyncio.wait_for(self._settled.wait(), self.rebalance_wait_s)
        except TimeoutError:
            raise RebalanceInProgressError(
                "Cannot complete request because of a conflicting operation (e.g. worker rebalance): the "
                f"cluster did not settle within {self.rebalance_wait_s:g} s") from None
        if not self.is_leader:
            await self._await_session_key()
            raise NotLeaderError("this worker is not the leader", self._leader_url)

    async def _await_session_key(self) -> None:
        """Under ``sessioned``, a request forwarded to the leader must be signed: a follower that has
        not read the leader's first session key yet (the cluster just formed) reads on for it."""
        if not self.signs_requests or self._session_key is not None:
            return
        deadline = asyncio.get_running_loop().time() + self.rebalance_wait_s
        while self._session_key is None:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise RebalanceInProgressError(
                    "Cannot complete request because of a conflicting operation (e.g. worker rebalance): no "
                    f"session key from the leader within {self.rebalance_wait_s:g} s to sign the forwarded request")
            await self.config_store.refresh(min(left, self.sync_timeout_s))
            if self._session_key is None:
                await asyncio.sleep(min(0.1, max(left, 0)))

    async def put(self, config: Mapping[str, str], origin: Callable[[str], Origin | None] = lambda key: None,
                  initial_state: str | None = None) -> bool:
        name, _, initial = await self._validated(config, origin, initial_state)
        await self._as_leader()
        await self.config_store.refresh(self.sync_timeout_s)
        current = self.snapshot.connector_configs.get(name)
        if current is not None and dict(current) == dict(config):
            return False
        await self.config_store.put_connector_config(name, dict(config),
                                                     None if current is not None else initial)
        return True

    async def delete(self, name: str) -> None:
        self._require(name)
        await self._as_leader()
        self._require(name)
        await self.config_store.remove_connector_config(name)

    async def pause(self, name: str) -> None:
        await self._target(name, "PAUSED")

    async def resume(self, name: str) -> None:
        await self._target(name, "STARTED")

    async def stop_connector(self, name: str) -> None:
        await self._target(name, "STOPPED")

    async def _target(self, name: str, state: str) -> None:
        self._require(name)
        await self._as_leader()
        self._require(name)
        if state == "STOPPED":
            # As Kafka Connect: an empty task set first, so the tasks are revoked and stop.
            await self.config_store.put_task_configs(name, [])
        await self.config_store.put_target_state(name, state)

    async def restart(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> RestartPlan:
        self._require(name)
        await self._as_leader()
        connector_status = self.status.connector(name) or Status(UNASSIGNED, self.worker_id)
        if self.snapshot.target_states.get(name) == "STOPPED":
            # As Kafka Connect: a STOPPED connector stays stopped, and it has no tasks to restart.
            return RestartPlan(connector_status, {})
        restart_connector = not only_failed or connector_status.state == FAILED
        statuses = {i: self.status.task(name, i) or Status(UNASSIGNED, self.worker_id)
                    for i in range(self.snapshot.task_counts.get(name, 0))}
        restarted = {i for i, s in statuses.items() if include_tasks and (not only_failed or s.state == FAILED)}
        plan = RestartPlan(restarting(connector_status) if restart_connector else connector_status,
                           {i: restarting(s) if i in restarted else s for i, s in statuses.items()})
        await self.config_store.put_restart_request(name, include_tasks, only_failed)
        return plan

    async def restart_task(self, name: str, task_id: int) -> None:
        self._require(name)
        if ConnectorTaskId(name, task_id) not in self.snapshot.task_configs:
            raise NotFoundError(f"task {task_id} of connector {name} not found")
        run = self._connectors.get(name)
        task = next((t for t in run.tasks if t.id == task_id), None) if run is not None else None
        if task is not None:  # ours: restart it here
            async with self._lock:
                await self.supervisor.restart(run, task)
            return
        await self._as_leader()
        owner = self._owner_url(ConnectorTaskId(name, task_id))
        if owner is None:
            # Kafka's NotAssignedException: a conflict, for as long as the group settles.
            raise RebalanceInProgressError(f"task {task_id} of connector {name} is not assigned to any worker yet")
        raise NotLeaderError(f"task {task_id} of connector {name} runs on another worker", owner)

    async def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """The leader writes a connector's task configs (from the worker running the connector)."""
        self._require(name)
        await self._as_leader()
        await self.config_store.put_task_configs(name, configs)

    async def fence_zombies(self, name: str) -> None:
        """The leader's round of zombie fencing for source connector *name* (Kafka's internal
        ``PUT /connectors/{c}/fence``): no rebalance wait, as Kafka's, since it changes no assignment.

        :raises NotLeaderError: a follower (the REST API forwards the request).
        :raises BadRequestError: *name* is a sink connector.
        :raises RebalanceInProgressError: new task configs were committed during the round.
        """
        if not self.is_leader:
            await self._await_session_key()
            raise NotLeaderError("only the leader fences zombie tasks", self._leader_url)
        await self.config_store.refresh(self.sync_timeout_s)
        self._require(name)
        if self._run(name).kind != "source":
            raise BadRequestError(f"Connector {name} is not a source connector")
        await self.fencer.fence(name)

    async def put_capacity_policy(self, policy: Mapping[str, Any] | None) -> None:
        """Store the cluster's capacity policy (MSK Connect's JSON, checked), or remove it (``None``:
        the worker keys ``capacity.*`` apply again), through the config topic."""
        await self._as_leader()
        await self.config_store.put_capacity_policy(policy)

    async def put_logger_level(self, namespace: str, level: str) -> None:
        """Set a log level on every worker of the cluster (KIP-976), through the config topic."""
        await self._as_leader()
        await self.config_store.put_logger_level(namespace, level)

    async def _modify_offsets(self, name: str, entries: list[tuple[Any, Any]] | None) -> bool:
        self._require(name)
        await self._as_leader()
        if self.snapshot.target_states.get(name) != "STOPPED" or self.snapshot.task_counts.get(name, 0):
            raise BadRequestError(
                "Connectors must be in the STOPPED state before their offsets can be modified. This can be done "
                f"for the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint")
        return await super()._modify_offsets(name, entries)

    def _require(self, name: str) -> None:
        if name not in self.snapshot.connector_configs:
            raise NotFoundError(f"connector {name} not found")

    def _owner_url(self, task: ConnectorTaskId) -> str | None:
        """The REST URL of the worker running *task*, as the leader assigned it."""
        running = self._assignor_state.running if self._assignor_state is not None else {}
        for member, load in running.items():
            if task in load.tasks and member in self._members:
                return self._members[member].url
        return None

    # --- offsets: the offsets topic ---

    def _spark_checkpoints(self) -> None:
        return None  # a task may move to another worker: no local progress

    def _source_offsets_spec(self, settings: ConnectorConfig) -> dict[str, Any]:
        """The offsets topic: the connector's own ``offsets.storage.topic`` (the worker's as fallback),
        else the worker's ``offset.storage.topic``; client settings as written."""
        own = settings.offsets_storage_topic
        worker_topic = str(self.worker.get("offset.storage.topic"))
        spec: dict[str, Any] = {"kind": "topic", "topic": own or worker_topic,
                                "client": client_option(self.worker.originals(), "producer", {})}
        if own and own != worker_topic:
            spec["fallback"] = worker_topic
        return spec

    async def _prepare_task(self, run: ConnectorRun) -> None:
        # A connector's own offsets topic is created (compacted) as Kafka Connect creates it.
        own = self.settings(run).offsets_storage_topic
        if run.kind == "source" and own and own != self.worker.get("offset.storage.topic"):
            await ensure_topic(self.worker.client_config("admin", "aiokafka"), own,
                               partitions=self.worker.get("offset.storage.partitions"),
                               replication_factor=self.worker.get("offset.storage.replication.factor"),
                               configs=internal_topic_settings(self.worker, "offset.storage"),
                               topic_key="offsets.storage.topic")

    def _source_offsets(self, run: ConnectorRun) -> Any:
        return open_offset_store(self._source_offsets_spec(self.settings(run)))

    # --- the group ---

    def metadata(self) -> WorkerMetadata:
        # Asked for at the start of every JoinGroup round (the first join, a rejoin this worker
        # asked for, one a heartbeat learned of): a rebalance begins, for the metrics.
        if self._rebalance_began is None:
            self._rebalance_began = asyncio.get_running_loop().time()
        return WorkerMetadata(self.rest_url, self.snapshot.offset,
                              self._assigned if self._group_generation >= 0 else None, self._last_assignment,
                              warming=self.warming)

    async def assign(self, leader_id: str, generation: int, protocol: str,
                     members: dict[str, WorkerMetadata]) -> dict[str, ConnectAssignment]:
        """The leader's round: read the config topic to the end, then the assignor decides."""
        try:
            await self.config_store.refresh(self.sync_timeout_s)
        except ConnectdError as exc:
            log.warning("leader_config_unread", error=str(exc))
        snapshot = self.snapshot
        tasks = [task for c in snapshot.connector_configs for task in snapshot.tasks(c)]
        if protocol == EAGER:
            # Every member stopped all its work before it joined: everything is assigned afresh. The
            # incremental assignor's memory is dropped, as a new leader's (the next cooperative round
            # trusts what members report they run).
            self._assignor_state = None
            self._members = dict(members)
            return assign_eager(leader=leader_id, members=members, config_offset=snapshot.offset,
                                connectors=list(snapshot.connector_configs), tasks=tasks)
        assignments, self._assignor_state = assign(
            leader=leader_id, members=members, config_offset=snapshot.offset,
            connectors=list(snapshot.connector_configs), tasks=tasks, generation=generation,
            last_completed_generation=self._group_generation, state=await self._without_released(members),
            now_ms=int(time.time() * 1000), max_delay_ms=self.worker.get("scheduled.rebalance.max.delay.ms"),
        )
        self._members = dict(members)  # after: _without_released finds departed workers in the last round's
        return assignments

    async def _without_released(self, members: Mapping[str, WorkerMetadata]) -> AssignorState | None:
        """The assignor's state, less the work that departed members released cleanly.

        Kafka Connect holds every departed worker's work for ``scheduled.rebalance.max.delay.ms``
        (5 minutes by default), even after a clean shutdown. A worker that stops cleanly here
        writes UNASSIGNED for what it ran, after stopping it; such work is no longer counted as
        the departed worker's (as if it had never been assigned), so it is assigned at once. A
        crashed worker wrote nothing: its work is still held for it to come back.
        """
        state = self._assignor_state
        if state is None:
            return None
        departed = {m: self._members[m].url.partition("://")[2] for m in state.running
                    if m not in members and m in self._members}
        if not departed:
            return state
        try:
            await self.status.refresh(self.sync_timeout_s)
        except ConnectdError as exc:
            log.warning("status_topic_unread", error=str(exc))
        released_connectors, released_tasks = [], []
        for member, worker_id in departed.items():
            load = state.running[member]
            for name in load.connectors:
                status = self.status.connector(name)
                if status is not None and status.state == UNASSIGNED and status.worker_id == worker_id:
                    released_connectors.append(name)
            for task in load.tasks:
                status = self.status.task(task.connector, task.task)
                if status is not None and status.state == UNASSIGNED and status.worker_id == worker_id:
                    released_tasks.append(task)
        if not released_connectors and not released_tasks:
            return state
        log.info("released_work_reassigned", workers=sorted(departed.values()),
                 connectors=len(released_connectors), tasks=len(released_tasks))
        previous = state.previous_assignment
        return replace(state, previous_assignment=WorkerLoad.of(
            set(previous.connectors) - set(released_connectors), set(previous.tasks) - set(released_tasks)))

    def on_lease(self, until: float) -> None:
        """The membership holds this worker's work until *until* (0: no longer): every task's query
        plans no batch and stores no offsets after it (connectd.runtime.fencing)."""
        if self.assembler.lease_file is None:
            return
        try:
            write_lease(self.assembler.lease_file, until)
        except OSError as exc:  # the queries then see a lease that ends early: they pause, nothing runs twice
            log.error("lease_unwritten", path=self.assembler.lease_file, error=str(exc))

    async def on_rebalance_start(self) -> None:
        self._settled.clear()
        if self._rebalance_began is None:
            self._rebalance_began = asyncio.get_running_loop().time()

    async def on_assigned(self, assignment: ConnectAssignment, generation: int, member_id: str,
                          protocol: str) -> None:
        self._group_generation = generation
        self._last_assignment = assignment
        self._leader_url = assignment.leader_url
        if self.is_leader:  # before any write of this round: a leader's writes may need privileges
            try:
                await self.config_store.claim_write_privileges()
            except ConnectdError as exc:
                log.error("config_topic_write_privileges_unclaimed", error=str(exc), retry_in_s=_CLAIM_RETRY_S)
                self._later(self._reclaim_write_privileges())
        else:
            await self.config_store.relinquish_write_privileges()
        with bind_context(generation=generation):
            if assignment.error == CONFIG_MISMATCH:
                log.info("config_behind_leader", offset=assignment.config_offset)
                await self._catch_up(assignment.config_offset)
                return
            # What we are given counts as ours at once (the next JoinGroup says so, even while it
            # starts); what is revoked is stopped before the member may rejoin (KIP-415), so it
            # never runs here and on its next worker at once; starting runs after this returns,
            # so a slow start never keeps the member from heartbeating or rejoining.
            if protocol == EAGER:
                # All this worker is to run. It stopped everything before joining, but not when the
                # group has just turned eager (it joined expecting a cooperative round): what it still
                # runs and is not given now stops first, so nothing runs twice; what it keeps runs on.
                given = WorkerLoad.of(assignment.connectors, assignment.tasks)
                stale = WorkerLoad.of(set(self._assigned.connectors) - set(given.connectors),
                                      set(self._assigned.tasks) - set(given.tasks))
                async with self._lock:
                    await self._apply_revocations(stale)
                self._assigned = given
            else:
                self._assigned = WorkerLoad.of([*self._assigned.connectors, *assignment.connectors],
                                               [*self._assigned.tasks, *assignment.tasks])
                async with self._lock:
                    await self._apply_revocations(assignment.revoked)
            self._later(self._start_assigned(assignment, generation))
            if not assignment.revoked and not assignment.delay_ms:
                self._settled.set()
            if self.is_leader:
                self._clean_deleted_statuses()
                if protocol == SESSIONED:  # as Kafka's leader: a session key only where requests are signed
                    self._later(self._ensure_session_key())

    async def on_revoked_all(self, reason: str) -> None:
        """The session may be gone: stop everything before another worker can be given it. Or the
        group is eager and rebalances (:data:`EAGER_REBALANCE`): everything stops, gracefully."""
        self._settled.clear()
        if reason == EAGER_REBALANCE:
            log.info("eager_rebalance_stops_all", connectors=len(self._assigned.connectors),
                     tasks=len(self._assigned.tasks))
            async with self._lock:
                await self._apply_revocations(self._assigned)
            return
        log.warning("group_membership_lost", reason=reason, connectors=len(self._assigned.connectors),
                    tasks=len(self._assigned.tasks))
        # Not gracefully: the margin before the coordinator may drop us bounds the stop.
        async with self._lock:
            await self._apply_revocations(self._assigned, timeout_s=min(self.graceful_timeout_s,
                                                                        self.revocation_margin_s / 2))

    async def _catch_up(self, offset: int) -> bool:
        """Read the config topic to its end (``worker.sync.timeout.ms``); whether the worker goes on
        with its assignment (it was read, or the worker reads on without it).

        A worker that could not keeps its work and reads on, unless ``worker.unsync.backoff.ms``
        is set: then, as Kafka's, it leaves the group (its work revoked) and rejoins after that long.
        """
        try:
            await self.config_store.refresh(self.sync_timeout_s)
            return True
        except ConnectdError as exc:
            leaving = self.unsync_backoff_ms is not None
            log.warning("config_topic_behind", wanted=offset, error=str(exc), leaving_group=leaving)
            if leaving:
                self.member.leave_for(self.unsync_backoff_ms / 1000, "config_topic_behind")
            return not leaving

    async def _apply_revocations(self, revoked: WorkerLoad, timeout_s: float | None = None) -> None:
        revoked_tasks = set(revoked.tasks)

        async def stop(run: ConnectorRun, task: TaskRun) -> None:
            await self.supervisor.stop(run, task, timeout_s)
            # As Kafka's putSafe: only if no other worker has written since (it may run it already).
            self.status.put_task_safe(run.name, task.id, Status(UNASSIGNED, self.worker_id, None, self._generation()))

        # Every revoked task stops at once: each waits for its batch in flight and its plugin
        # instances, and the others' rebalance waits for the slowest, not for the sum.
        stopping = {name: [t for t in run.tasks if ConnectorTaskId(name, t.id) in revoked_tasks]
                    for name, run in self._connectors.items()}
        await asyncio.gather(*(stop(self._connectors[name], task) for name, tasks in stopping.items()
                               for task in tasks))
        self._assigned = WorkerLoad.of(set(self._assigned.connectors) - set(revoked.connectors),
                                       set(self._assigned.tasks) - revoked_tasks)
        for name, run in list(self._connectors.items()):
            run.tasks = [t for t in run.tasks if t not in stopping.get(name, [])]
            if name in revoked.connectors and run.instance is not None:
                await self._stop_instance(run)
                self.status.put_connector_safe(name, Status(UNASSIGNED, self.worker_id, None, self._generation()))
            self._forget_if_idle(name)

    async def _start_assigned(self, assignment: ConnectAssignment, generation: int) -> None:
        """Start what *assignment* gave us, once the config topic is read up to its offset; work
        revoked or lost meanwhile (no longer in :meth:`assignment`) is not started. Work given while
        Spark still warms up (a leader that does not know connectd's warming flag) waits for it."""
        if (assignment.connectors or assignment.tasks) and not self._spark_attached.is_set():
            log.info("assignment_waits_for_spark", connectors=len(assignment.connectors), tasks=len(assignment.tasks))
            await self._spark_attached.wait()
        async with self._lock:
            with bind_context(generation=generation):
                if not await self._catch_up(assignment.config_offset):
                    return  # leaving the group: nothing of this assignment starts
                for name in assignment.connectors:
                    if name in self._assigned.connectors:
                        await self._start_owned_connector(name)
                # One after another, not at once: each start spawns Spark's Python processes, which must
                # connect back to the JVM within Spark's fixed 10 s; several at once on a small machine
                # (tried: 2 cores, 4 workers) miss it and fail their tasks.
                for task_id in assignment.tasks:
                    if task_id in self._assigned.tasks:
                        await self._start_owned_task(task_id)
                log.info("assignment_applied", leader=assignment.leader, connectors=len(self._assigned.connectors),
                         tasks=len(self._assigned.tasks), revoked=len(assignment.revoked),
                         delay_ms=assignment.delay_ms)
                if self._rebalance_began is not None and self._settled.is_set():
                    # Completed: nothing revoked waits for another round, no delayed assignment.
                    self.metrics.rebalanced(asyncio.get_running_loop().time() - self._rebalance_began)
                    self._rebalance_began = None

    def _local_run(self, name: str) -> ConnectorRun | None:
        """The local run of a configured connector, made on first need; ``None`` if it is not configured."""
        run = self._connectors.get(name)
        if run is not None:
            return run
        config = self.snapshot.connector_configs.get(name)
        if config is None:
            return None
        try:
            cls = self.registry.find_class("connector", config.get("connector.class", ""))
        except Exception as exc:
            self._set(name, None, FAILED, trace_of(exc))
            return None
        run = ConnectorRun(name, dict(config), cls, target=self.snapshot.target_states.get(name, "STARTED"))
        self._connectors[name] = run
        return run

    def _forget_if_idle(self, name: str) -> None:
        """Drop the local run of a connector with nothing here: no instance, no task, and not
        assigned here (a STOPPED connector assigned here keeps its run, for its next target state)."""
        run = self._connectors.get(name)
        if run is not None and run.instance is None and not run.tasks and name not in self._assigned.connectors:
            del self._connectors[name]

    async def _start_owned_connector(self, name: str) -> None:
        run = self._local_run(name)
        if run is None or run.instance is not None:
            return
        if run.target == "STOPPED":
            self._set(name, None, STOPPED)
            return
        written = await self._start_connector_instance(run)
        if written is not None:
            await self._publish_task_configs(run, written)

    async def _start_owned_task(self, task_id: ConnectorTaskId) -> None:
        config = self.snapshot.task_configs.get(task_id)
        run = self._local_run(task_id.connector)
        if run is None or config is None:
            log.warning("assigned_task_unknown", task=str(task_id))
            return
        if any(task.id == task_id.task for task in run.tasks):
            return  # started already (its configs were committed meanwhile)
        too_many = self._too_many_tasks(run)
        if too_many is not None:
            self._task_failed(task_id, too_many)
            return
        snapshot = self.snapshot
        if self.worker.exactly_once_source and run.kind == "source" and run.name in snapshot.pending_fencing:
            # Not under the lock: a round waits for the leader, and revocations must not wait for it.
            self._later(self._fence_then_start(task_id, snapshot.task_generations.get(run.name)), run.name)
            return
        task = TaskRun(task_id.task, dict(config))
        run.tasks.append(task)
        await self.supervisor.start(run, task)

    async def _fence_then_start(self, task_id: ConnectorTaskId, generation: int | None) -> None:
        """An exactly-once source task waits for its connector's round of fencing (the leader's: here,
        or asked for with a signed ``PUT /connectors/{c}/fence``), then starts, unless it is no longer
        ours or a newer generation of task configs superseded it (that commit starts it again). A
        round that keeps failing fails the task, with the reason."""
        name = task_id.connector
        attempt, started = 0, asyncio.get_running_loop().time()
        while True:
            try:
                if self.is_leader:
                    await self.fence_zombies(name)
                else:
                    await request_fencing(self, name)
                await self.config_store.refresh(self.sync_timeout_s)
                break
            except ConnectdError as exc:
                waited = asyncio.get_running_loop().time() - started
                if (task_id not in self._assigned.tasks
                        or self.snapshot.task_generations.get(name) != generation):
                    return
                if waited + _FENCING_RETRY_FIRST_S > self.rebalance_wait_s:
                    self._task_failed(task_id, f"Failed to perform round of zombie fencing: {exc}")
                    return
                delay_s = min(_FENCING_RETRY_FIRST_S * 2**attempt, _FENCING_RETRY_MAX_S)
                log.warning("zombie_fencing_retried", task=str(task_id), error=str(exc), retry_in_s=delay_s)
                attempt += 1
                await asyncio.sleep(delay_s)
        async with self._lock:
            snapshot = self.snapshot
            if task_id not in self._assigned.tasks or snapshot.task_generations.get(name) != generation:
                log.info("fenced_task_superseded", task=str(task_id))
                return
            if name in snapshot.pending_fencing:  # the round's record, read above, ends the wait
                self._task_failed(task_id, "the leader reported its round of zombie fencing done, and no "
                                           "task-count record was read")
                return
            await self._start_owned_task(task_id)

    def _task_failed(self, task_id: ConnectorTaskId, reason: str) -> None:
        self._set(task_id.connector, task_id.task, FAILED, reason)
        log.error("task_failed", task=str(task_id), error=reason)

    def _too_many_tasks(self, run: ConnectorRun) -> str | None:
        """Kafka's check at task start (KIP-1004): more committed tasks than the connector's
        ``tasks.max`` (lowered since they were written) fails the task, unless ``tasks.max.enforce``
        is false."""
        return too_many_tasks(run.name, self._task_count(run), self.settings(run))

    def _clean_deleted_statuses(self) -> None:
        """The leader, once a round is assigned: tombstones for the statuses of connectors no longer
        configured and of tasks no longer in their connector's committed set (a lowered
        ``tasks.max``, a STOPPED connector's tasks), as Kafka's ``updateDeletedConnectorStatus`` and
        ``updateDeletedTaskStatus`` — else ``/status`` lists tasks that no longer exist, written by
        a worker that is gone or that never saw the new task set."""
        snapshot = self.snapshot
        for name in sorted(self.status.statused_connectors()):
            if name not in snapshot.connector_configs:
                log.info("deleted_connector_status_cleaned", connector=name)
                self.status.forget(name)
                continue
            remaining = {task.task for task in snapshot.tasks(name)}
            for task in sorted(set(self.status.tasks(name)) - remaining):
                log.info("deleted_task_status_cleaned", connector=name, task=task)
                self.status.forget_task(name, task)

    async def _publish_task_configs(self, run: ConnectorRun, written: list[dict[str, str]], attempt: int = 0) -> None:
        """Hand new task configs to the leader, unless the config topic has them already."""
        snapshot = self.snapshot
        current = [snapshot.task_configs.get(ConnectorTaskId(run.name, i))
                   for i in range(snapshot.task_counts.get(run.name, 0))]
        # The same task configs are written again when the connector's config changed since they were
        # committed (as Kafka does since KAFKA-9228): its tasks restart with its new converters, transforms, ….
        applied = snapshot.applied_connector_configs.get(run.name) == snapshot.connector_configs.get(run.name)
        if current == written and applied:
            return
        log.info("task_configs_changed", connector=run.name, tasks_before=len(current), tasks_after=len(written),
                 connector_config_changed=not applied)
        try:
            if self.is_leader:
                await self.config_store.put_task_configs(run.name, written)
            else:
                await send_task_configs(self, run.name, written)
        except ConnectdError as exc:  # the leader moved, is rebalancing, or has not read the connector yet
            delay_s = min(_REPUBLISH_FIRST_S * 2**attempt, _REPUBLISH_MAX_S)
            log.warning("task_configs_not_published", connector=run.name, error=str(exc), retry_in_s=delay_s)
            self._later(self._republish(run, delay_s, attempt + 1), run.name)

    async def _republish(self, run: ConnectorRun, delay_s: float, attempt: int) -> None:
        """Try again to hand the leader a connector's task configs, while it is still ours and running."""
        await asyncio.sleep(delay_s)
        async with self._lock:
            if (self._connectors.get(run.name) is not run or run.instance is None
                    or run.name not in self._assigned.connectors):
                return
            written = await self._regenerated_task_configs(run)
            if written is not None:
                await self._publish_task_configs(run, written, attempt)

    async def _apply_task_configs(self, run: ConnectorRun, written: list[dict[str, str]]) -> None:
        await self._publish_task_configs(run, written)  # the leader writes them; owners restart their tasks

    # --- config records (the config store's listener; called on the event loop) ---

    def on_connector_config(self, name: str) -> None:
        self._later(self._connector_config_changed(name), name)

    def on_task_configs(self, tasks: Iterable[ConnectorTaskId]) -> None:
        for name in sorted({task.connector for task in tasks}):
            self._later(self._task_configs_changed(name), name)

    def on_target_state(self, name: str) -> None:
        self._later(self._target_state_changed(name), name)

    def on_restart_request(self, request: Any) -> None:
        self._later(self._restart_requested(request.connector, request.include_tasks, request.only_failed),
                    request.connector)

    def on_session_key(self, key: SessionKey) -> None:
        if self._session_key is not None and key != self._session_key:
            self._previous_session_key = self._session_key
        self._session_key = key

    def on_capacity_policy(self) -> None:
        self.capacity.on_policy_changed()

    def on_logger_level(self, namespace: str, level: str) -> None:
        try:
            changed = set_level(namespace, level)
        except ConfigError as exc:
            log.error("cluster_log_level_refused", logger=namespace, level=level, error=str(exc))
            return
        log.info("cluster_log_level_set", logger=namespace, level=level, loggers=len(changed))

    async def _connector_config_changed(self, name: str) -> None:
        config = self.snapshot.connector_configs.get(name)
        if self.is_leader:
            self.member.request_rejoin()
        async with self._lock:
            run = self._connectors.get(name)
            if config is None:  # deleted: its work stops now; the next round revokes it
                if run is not None:
                    await self._stop_connector(run)
                    del self._connectors[name]
                self.status.forget(name)
                return
            if name not in self._assigned.connectors:
                if run is not None:
                    run.config = dict(config)  # for its tasks, restarted when their configs are committed
                return
            if run is not None and run.instance is not None and dict(config) == run.config:
                return
            # Ours, and new (created again under the same name) or changed: (re)start the Connector.
            with bind_context(connector=name):
                if run is not None:
                    await self._stop_instance(run)
                    run.config = dict(config)
                    run.cls = self.registry.find_class("connector", config.get("connector.class", ""))
                    run.target = self.snapshot.target_states.get(name, "STARTED")
                await self._start_owned_connector(name)

    async def _task_configs_changed(self, name: str) -> None:
        if self.is_leader:
            self.member.request_rejoin()
        mine = [task for task in self._assigned.tasks if task.connector == name]
        if not mine:
            return
        async with self._lock:
            run = self._local_run(name)
            if run is None:
                return
            count = self._task_count(run)
            with bind_context(connector=name):
                log.info("task_configs_committed", tasks=count)
                # Every task of ours restarts with its new config.
                await self.supervisor.stop_all((run, task) for task in run.tasks)
                run.tasks = []
                for task_id in mine:
                    if task_id.task < count and task_id in self.snapshot.task_configs:
                        await self._start_owned_task(task_id)
                    else:  # gone: the next round revokes it
                        self.status.forget_task(name, task_id.task)

    async def _target_state_changed(self, name: str) -> None:
        state = self.snapshot.target_states.get(name, "STARTED")
        async with self._lock:
            run = self._connectors.get(name)
            if run is None:
                return
            previous, run.target = run.target, state
            with bind_context(connector=name):
                if state == "STOPPED":
                    await self._stop_connector(run)
                    self._set(name, None, STOPPED)
                    return
                if previous == "STOPPED" and name in self._assigned.connectors and run.instance is None:
                    written = await self._start_connector_instance(run)
                    if written is not None:
                        await self._publish_task_configs(run, written)
                    return
                for task in run.tasks:
                    await (self.supervisor.pause if state == "PAUSED" else self.supervisor.resume)(run, task)
                if run.instance is not None:
                    self._set(name, None, PAUSED if state == "PAUSED" else RUNNING)

    async def _restart_requested(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        async with self._lock:
            run = self._connectors.get(name)
            if run is None:
                return
            with bind_context(connector=name):
                connector_status = self.status.connector(name)
                if run.instance is not None and (not only_failed or (connector_status and connector_status.state == FAILED)):
                    self._set(name, None, RESTARTING)
                    await self._stop_instance(run)
                    await self._start_connector_only(run)
                if include_tasks:
                    for task in list(run.tasks):
                        current = self.status.task(name, task.id)
                        if not only_failed or (current is not None and current.state == FAILED):
                            await self.supervisor.restart(run, task)

    async def _reclaim_write_privileges(self) -> None:
        """Claim again, after a pause, the config topic's write privileges this worker, still the
        leader, lost or could not claim (a write failed: fenced, the cluster away), every second
        until it has them or no longer leads, as Kafka's leader does (:mod:`connectd.cluster.leader_writer`).
        The first claim of a leadership is :meth:`on_assigned`'s."""
        writer = self.config_store.writer
        while writer is not None and self.is_leader and not writer.claimed:
            await asyncio.sleep(_CLAIM_RETRY_S)
            if not self.is_leader or writer.claimed:
                return
            try:
                await self.config_store.claim_write_privileges()
            except ConnectdError as exc:
                log.error("config_topic_write_privileges_unclaimed", error=str(exc), retry_in_s=_CLAIM_RETRY_S)

    # --- the session key ---

    def session_keys(self) -> list[SessionKey]:
        """The keys a signed request may use: the current one and the one it replaced."""
        return [k for k in (self._session_key, self._previous_session_key) if k is not None]

    async def _ensure_session_key(self) -> None:
        key = self._session_key
        if key is not None and not key.expired(self.worker.get("inter.worker.key.ttl.ms")):
            return
        fresh = new_session_key(str(self.worker.get("inter.worker.key.generation.algorithm")),
                                self.worker.get("inter.worker.key.size"))
        # Known here before any follower can read it and sign with it: a forwarded request may
        # arrive before this worker has read its own record back.
        self.on_session_key(fresh)
        await self.config_store.put_session_key(fresh)
        log.info("session_key_rotated")

    async def _rotate_session_key(self) -> None:
        """One step of the session-key loop: the leader writes a new key when the current one expired."""
        if self.is_leader and self._settled.is_set() and self.signs_requests:
            try:
                await self._ensure_session_key()
            except ConnectdError as exc:
                log.warning("session_key_rotation_failed", error=str(exc))
