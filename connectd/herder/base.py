"""What both herders share: the connectors a worker runs, and their tasks' queries.

Standalone mode (:class:`~connectd.herder.standalone.StandaloneHerder`) runs
every connector on this worker; distributed mode
(:class:`connectd.cluster.herder.DistributedHerder`) adds group membership
and the config topic around the same operations.

A connector's life here::

    add(config) ── validate ──► connector.start() ── task_configs(tasks.max) ──► one query per task
    put(config) ── unchanged? nothing; changed? stop THIS connector's tasks, start it again
    delete      ── stop its tasks (gracefully), connector.stop(), forget its status

Every task is run by the herder's :class:`~connectd.herder.supervision.Supervisor`:
its states, what each reports and every transition (starts, stops,
restarts, the liveness check, partition rediscovery) are described there.
Two background loops drive it (:class:`connectd.loops.Loops`): the watch
loop checks every task each half second (a query that failed, ended unasked
or stalled; an automatic restart due), and partition discovery looks at a
sink connector's topics every few seconds (``topics`` created later, a
topic grown, a new topic matching ``topics.regex``) and restarts only the
tasks whose share of partitions changed. Spark calls block, so they run in
threads; the event loop never waits on py4j.

Offsets (KIP-875's ``/connectors/{c}/offsets``) are read at any time and
changed only while the connector is STOPPED, under the herder's lock so it
cannot be resumed meanwhile (:mod:`connectd.herder.offsets_admin`).

Active topics (KIP-558) live in an :class:`~connectd.status.ActiveTopicsStore`.
Sink tasks run in this process and report theirs with
:meth:`HerderBase.record_active_topics`; source tasks run in Spark's
reader process and list theirs in a file beside their run directory
(:mod:`connectd.runtime.source.task`), which the herder merges when asked and
folds into the store when the task stops.

Health (``GET /health``) is Kafka Connect's: a check passes once the watch
loop, which takes the herder's lock on every pass, comes round; an
operation stuck holding the lock fails it, and so does a background loop
that has failed for a while (:meth:`connectd.loops.Loops.problems`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka.admin import AdminClient

from connectd.capacity.load import ProcessTreeCpu
from connectd.config.connector import ConnectorConfig, client_overrides
from connectd.config.properties import Origin
from connectd.config.worker import WorkerConfig
from connectd.connector import ConnectorContext
from connectd.errors import BadRequestError, ConfigError, ConnectorError, NotFoundError
from connectd.herder.offsets_admin import OffsetsAdmin
from connectd.herder.runs import ConnectorRun, TaskRun, trace_of
from connectd.herder.supervision import Supervisor
from connectd.herder.validation import check_connector, too_many_tasks
from connectd.logging import bind_context, get_logger
from connectd.loops import Loops
from connectd.metrics import WorkerMetrics
from connectd.plugins import get_registry
from connectd.runtime.assembly import TaskAssembler
from connectd.runtime.offsets.store import FileOffsetStore
from connectd.runtime.source.active_topics import read_active_topics, reset_active_topics
from connectd.secrets import redact
from connectd.status import (
    FAILED,
    PAUSED,
    RESTARTING,
    RUNNING,
    UNASSIGNED,
    ActiveTopicsStore,
    MemoryActiveTopicsStore,
    MemoryStatusStore,
    Status,
    StatusStore,
)

__all__ = ["Herder", "HerderBase", "RestartPlan"]

log = get_logger(__name__)

_WATCH_INTERVAL_S = 0.5
_DISCOVERY_INTERVAL_S = 5.0
_HEALTH_CHECK_TIMEOUT_S = 10.0  # Kafka Connect's herder health check timeout


@dataclass(frozen=True)
class RestartPlan:
    """What a restart restarts, as Kafka's answer shows it: the statuses from
    before the restart, RESTARTING for the connector and tasks it restarts."""

    connector: Status
    tasks: dict[int, Status]


class Herder(Protocol):
    """What the REST API, the worker and the CLI ask of a herder, in either mode.

    Reads (``connectors``, ``config``, ``task_configs``, ``status``) answer
    from this worker's view at once; writes are coroutines that raise
    :class:`~connectd.errors.NotFoundError`, :class:`~connectd.errors.BadRequestError`,
    :class:`~connectd.errors.ConfigError` or :class:`~connectd.errors.ConnectorError`.
    In a cluster a write made on a follower raises
    :class:`~connectd.errors.NotLeaderError` naming the leader, to which the
    REST API forwards the request.
    """

    worker: WorkerConfig
    worker_id: str
    registry: Any
    status: StatusStore

    @property
    def ready(self) -> bool: ...
    @property
    def warming(self) -> bool: ...
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def health_check(self) -> str | None: ...
    async def wait_ready(self, timeout_s: float) -> bool: ...
    def attach_spark(self, spark: Any) -> None: ...
    def connectors(self) -> list[str]: ...
    def local_view(self) -> list[dict[str, Any]]: ...
    def local_summary(self) -> str: ...
    def config(self, name: str) -> dict[str, str]: ...
    def task_configs(self, name: str) -> list[dict[str, str]]: ...
    async def put(self, config: Mapping[str, str], origin: Callable[[str], Origin | None] = ...,
                  initial_state: str | None = None) -> bool: ...
    async def delete(self, name: str) -> None: ...
    async def pause(self, name: str) -> None: ...
    async def resume(self, name: str) -> None: ...
    async def stop_connector(self, name: str) -> None: ...
    async def restart(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> RestartPlan: ...
    async def restart_task(self, name: str, task_id: int) -> None: ...
    async def connector_offsets(self, name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]: ...
    async def alter_offsets(self, name: str, entries: Iterable[tuple[Any, Any]]) -> bool: ...
    async def reset_offsets(self, name: str) -> bool: ...
    async def connector_active_topics(self, name: str) -> list[str]: ...
    async def reset_active_topics(self, name: str) -> None: ...


class HerderBase:
    """What both herders share: running the connectors and tasks this worker was given.

    It starts a connector's instance and its tasks' queries, watches them
    (failures, automatic restarts, a sink's topics changing), reports their
    statuses, reads and changes offsets and active topics. Where configs come
    from and who decides what runs here is the subclass's: every connector of
    the worker's files and REST calls (:class:`StandaloneHerder`), or the
    config topic and the group's assignment
    (:class:`connectd.cluster.herder.DistributedHerder`).

    What the worker owns is handed in (the plugin registry, the status and
    active-topics stores, the background loops); what is the herder's own is
    made here: its :class:`~connectd.metrics.WorkerMetrics` (whose state
    series are read off this herder), its
    :class:`~connectd.runtime.assembly.TaskAssembler` and its
    :class:`~connectd.herder.offsets_admin.OffsetsAdmin`, each wired to this
    herder's admin client, offsets and checkpoint callbacks, which a caller
    could not give them before the herder exists.

    :param worker: the worker's configuration.
    :param worker_id: shown in statuses.
    :param spark: the worker's SparkSession (already started).
    :param status: where statuses go; in memory by default.
    :param active_topics: where the topics connectors use go; in memory by default.
    :param registry: the worker's plugins; this process's by default (tests).
    :param loops: the worker's background loops, where the herder's own run too.
    """

    #: How long a pass of the watch loop may wait for an operation before :meth:`health_check` says the herder is stuck.
    health_check_timeout_s = _HEALTH_CHECK_TIMEOUT_S

    def __init__(self, worker: WorkerConfig, worker_id: str, spark: Any, status: StatusStore | None = None,
                 active_topics: ActiveTopicsStore | None = None, registry: Any = None,
                 loops: Loops | None = None) -> None:
        self.worker = worker
        self.worker_id = worker_id
        self.spark = spark
        self.status = status or MemoryStatusStore()
        self.active_topics = active_topics or MemoryActiveTopicsStore()
        self.topic_tracking = bool(worker.get("topic.tracking.enable"))
        self.registry = registry if registry is not None else get_registry()
        self.offsets_path = str(worker.get("offset.storage.file.filename")) if worker.mode == "standalone" else None
        self.graceful_timeout_s = worker.get("task.shutdown.graceful.timeout.ms") / 1000
        self._connectors: dict[str, ConnectorRun] = {}
        self._lock = asyncio.Lock()
        #: The herder's background loops (and those of the parts it owns, in a cluster).
        self.loops = loops if loops is not None else Loops()
        #: Starts, stops, restarts and watches every task of this herder.
        self.supervisor = Supervisor(self)
        self._watcher: asyncio.Task[None] | None = None
        self._admin_clients: dict[str, Any] = {}  # by the overrides they were made with
        self._started = False
        self._pass_started: float | None = None  # when the watch loop's current pass began (loop time)
        self._ready = asyncio.Event()
        #: This worker's Prometheus metrics (``/metrics``); the state series are read off this herder.
        self.metrics = WorkerMetrics(worker_id)
        self.metrics.watch(self)
        self.metrics.process_tree = ProcessTreeCpu(worker.spark_cores)
        self._versions: dict[type, str] = {}
        self.assembler = TaskAssembler(worker, spark, self.registry, self._admin, self._source_offsets_spec,
                                       self.record_active_topics, self._spark_checkpoints())
        #: Reads and changes the connectors' offsets (KIP-875).
        self.offsets = OffsetsAdmin(worker, self._admin, self._source_offsets,
                                    lambda config: self.assembler.client("consumer", config))

    # --- lifecycle ---

    def attach_spark(self, spark: Any) -> None:
        """Give a herder made before Spark started (so the REST API could answer meanwhile) its session."""
        self.spark = self.assembler.spark = spark

    async def start(self) -> None:
        self._watcher = self.loops.run("herder-watch", self._watch_pass, pause_s=_WATCH_INTERVAL_S)
        self.loops.run("partition-discovery", self._discovery_pass, pause_s=_DISCOVERY_INTERVAL_S)
        self._started = True
        self._ready.set()

    async def wait_ready(self, timeout_s: float) -> bool:
        """Wait up to *timeout_s* for :meth:`start` to have run; whether it has."""
        try:
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    @property
    def ready(self) -> bool:
        """Whether :meth:`start` has completed (Kafka's ``isReady``; it stays so after :meth:`stop`)."""
        return self._started

    @property
    def warming(self) -> bool:
        """Whether it started without its Spark session, which is not up and warm yet: it runs no
        task until it is, and ``/health`` says it is starting. A standalone herder starts with it."""
        return False

    async def health_check(self) -> str | None:
        """``None`` when the herder can do its work; otherwise why it cannot. Answers at once.

        Kafka Connect's health check runs a no-op through its herder's loop and
        waits for it; a liveness probe then fails whenever the loop is slow,
        for instance while the Kafka cluster is away. Here the watch loop says
        when its current pass began: the herder is unhealthy when a pass has
        waited more than :attr:`health_check_timeout_s` for an operation holding
        the herder (a connector's plugin stuck in ``start`` or ``stop``, say),
        or when one of its background loops cannot go on
        (:meth:`connectd.loops.Loops.problems`). The loop never waits for the
        Kafka cluster while it holds the herder.
        """
        if self._watcher is None:
            return "The herder is not running." if self._started else "The herder has not been started."
        problems = self.loops.problems()
        if problems:
            return " ".join(problems)
        started = self._pass_started
        waited = 0.0 if started is None else asyncio.get_running_loop().time() - started
        if waited > self.health_check_timeout_s:
            return (f"The herder's watch loop has waited {waited:.0f} s (more than {self.health_check_timeout_s:g} s) "
                    "for an operation on a connector: it may be stuck.")
        return None

    async def stop(self) -> None:
        # Under the herder's lock: a pass under way (a check's Spark calls in a thread, a task starting
        # on new partitions) finishes first; the loops are then cancelled where they wait.
        async with self._lock:
            await self.loops.stop("herder-watch")
            await self.loops.stop("partition-discovery")
        self._watcher = None
        async with self._lock:
            for name in list(self._connectors):
                await self._stop_connector(self._connectors.pop(name))
            # Destroyed now rather than when collected, which may be after the cluster is gone
            # (it would then log connection failures).
            self._admin_clients = {}

    # --- operations ---

    def connectors(self) -> list[str]:
        return sorted(self._connectors)

    def local_view(self) -> list[dict[str, Any]]:
        """What this worker runs, for the metrics: per connector its type, class, version, whether
        its instance runs here and its state, and its tasks here (id, state, a sink task's partitions)."""
        view = []
        for run in list(self._connectors.values()):
            status = self.status.connector(run.name)
            tasks = []
            for task in list(run.tasks):
                task_status = self.status.task(run.name, task.id)
                handle = task.handle
                tasks.append({"id": task.id, "state": task_status.state if task_status is not None else UNASSIGNED,
                              "partitions": None if handle is None or run.kind != "sink" else handle.task_partitions})
            view.append({"name": run.name, "type": run.kind, "class": f"{run.cls.__module__}.{run.cls.__qualname__}",
                         "version": self._plugin_version(run.cls), "running": run.instance is not None,
                         "state": status.state if status is not None else UNASSIGNED, "tasks": tasks})
        return view

    def _plugin_version(self, cls: type) -> str:
        """The version of the package that registered *cls* (as ``/connector-plugins`` shows it)."""
        version = self._versions.get(cls)
        if version is None:
            version = self._versions[cls] = next((i.version for i in self.registry if i.cls is cls), "unknown")
        return version

    def local_summary(self) -> str:
        """One line on this worker's work, e.g. ``2 connectors, 3 of 4 tasks running, 1 failed``."""
        view = self.local_view()
        counts: dict[str, int] = {}
        for task in (task for connector in view for task in connector["tasks"]):
            counts[task["state"]] = counts.get(task["state"], 0) + 1
        connectors = sum(1 for connector in view if connector["running"])
        line = (f"{connectors} connector{'s' if connectors != 1 else ''}, "
                f"{counts.get(RUNNING, 0)} of {sum(counts.values())} tasks running")
        for state in (FAILED, PAUSED, RESTARTING):
            if counts.get(state):
                line += f", {counts[state]} {state.lower()}"
        return line

    def config(self, name: str) -> dict[str, str]:
        """The connector's config as written (placeholders unresolved).

        :raises KeyError: for an unknown connector.
        """
        return dict(self._connectors[name].config)

    def task_configs(self, name: str) -> list[dict[str, str]]:
        """The configs the connector gave its tasks, as written (placeholders unresolved)."""
        return [dict(task.config) for task in self._run(name).tasks]

    def task_queries(self, name: str) -> list[Any]:
        return [task.query for task in self._connectors[name].tasks]

    def settings(self, run: ConnectorRun) -> ConnectorConfig:
        """*run*'s config parsed (:meth:`ConnectorRun.settings`), placeholders resolved by this worker."""
        return run.settings(self.worker.providers.resolve)

    def _run(self, name: str) -> ConnectorRun:
        run = self._connectors.get(name)
        if run is None:
            raise NotFoundError(f"connector {name} not found")
        return run

    # --- offsets (KIP-875; connectd.herder.offsets_admin) ---

    async def connector_offsets(self, name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """The connector's offsets as ``(partition, offset)`` pairs, whatever its state
        (:meth:`OffsetsAdmin.read <connectd.herder.offsets_admin.OffsetsAdmin.read>`).

        :raises NotFoundError: for an unknown connector.
        :raises ConnectorError: when they cannot be read.
        """
        return await self.offsets.read(self._run(name))

    async def alter_offsets(self, name: str, entries: Iterable[tuple[Any, Any]]) -> bool:
        """Write a STOPPED connector's offsets: ``(partition, offset)`` pairs in the offsets API's
        form, an offset of ``None`` removing the partition's.

        :returns: whether the connector's ``alter_offsets`` said it changed offsets it keeps itself.
        :raises NotFoundError: for an unknown connector.
        :raises BadRequestError: when the connector is not STOPPED, or an entry is malformed.
        :raises ConnectorError: when the connector refuses them or they cannot be written.
        """
        return await self._modify_offsets(name, list(entries))

    async def reset_offsets(self, name: str) -> bool:
        """Remove every offset of a STOPPED connector: it starts from scratch when resumed.

        :returns: and raises as :meth:`alter_offsets`.
        """
        return await self._modify_offsets(name, None)

    async def _modify_offsets(self, name: str, entries: list[tuple[Any, Any]] | None) -> bool:
        async with self._lock:  # so the connector cannot be resumed meanwhile
            run = self._run(name)
            if run.target != "STOPPED" or run.tasks:
                raise BadRequestError(
                    "Connectors must be in the STOPPED state before their offsets can be modified. This can be done "
                    f"for the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint")
            with bind_context(connector=name):
                confirmed = await asyncio.to_thread(self.offsets.modify, run, entries)
                log.info("offsets_reset" if entries is None else "offsets_altered", confirmed=confirmed)
                return confirmed

    def _source_offsets(self, run: ConnectorRun) -> Any:
        """Where a source connector's offsets are kept: the offsets file in standalone mode."""
        return FileOffsetStore(self.offsets_path)

    # --- active topics (KIP-558) ---

    def record_active_topics(self, connector: str, topics: Iterable[str]) -> None:
        """A task of *connector* consumed from (or produced to) *topics*.

        Sink tasks call this once per batch, from whichever thread runs it;
        cheap when no topic is new. Does nothing with ``topic.tracking.enable=false``.
        """
        if self.topic_tracking and connector in self._connectors:
            self.active_topics.add(connector, topics)

    async def connector_active_topics(self, name: str) -> list[str]:
        """The topics *name* has used since it was created or its topics were last reset.

        :raises NotFoundError: for an unknown connector.
        """
        run = self._run(name)
        topics = self.active_topics.topics(name)
        running = [workdir for task in run.tasks if (workdir := getattr(task.query, "workdir", None)) is not None]
        if run.kind == "source" and running:  # their files; folded into the store when they stop

            def listed() -> set[str]:
                return set().union(*(read_active_topics(workdir) for workdir in running))

            topics |= await asyncio.to_thread(listed)
        return sorted(topics)

    async def reset_active_topics(self, name: str) -> None:
        """Forget the topics *name* has used; those it uses again are recorded again.

        :raises NotFoundError: for an unknown connector.
        """
        async with self._lock:  # no task stops (and folds its topics into the store) meanwhile
            run = self._run(name)
            running = [workdir for task in run.tasks if (workdir := getattr(task.query, "workdir", None)) is not None]
            if run.kind == "source" and running:
                await asyncio.to_thread(lambda: [reset_active_topics(workdir) for workdir in running])
            self.active_topics.reset(name)
            log.info("active_topics_reset", connector=name)

    # --- internals ---

    def _set(self, name: str, task: int | None, state: str, trace: str | None = None) -> None:
        # A trace leaves the process (REST, the status topic): no resolved secret in it.
        status = Status(state, self.worker_id, None if trace is None else redact(trace), self._generation())
        if task is None:
            self.status.put_connector(name, status)
        else:
            self.status.put_task(name, task, status)
            run = self._connectors.get(name)
            for task_run in run.tasks if run is not None else ():
                if task_run.id == task and task_run.handle is not None and task_run.handle.metrics is not None:
                    task_run.handle.metrics.state(state)  # the time it spends RUNNING or PAUSED
        log.info("status_changed", connector=name, task=task, state=state)

    def _context_for(self, run: ConnectorRun) -> ConnectorContext:
        loop = asyncio.get_running_loop()

        def reconfigure() -> None:  # may be called from any thread the connector runs
            loop.call_soon_threadsafe(lambda: self._later(self._reconfigure(run), run.name))

        def failed(exc: BaseException) -> None:
            loop.call_soon_threadsafe(self._set, run.name, None, FAILED, trace_of(exc))

        return ConnectorContext(on_reconfigure=reconfigure, on_error=failed)

    def _written_task_configs(self, run: ConnectorRun, resolved: Mapping[str, str],
                              configs: list[dict[str, str]]) -> list[dict[str, str]]:
        # A task config value the connector passed on unchanged goes back to
        # its placeholder, so no resolved secret is stored or handed to Spark;
        # the task resolves it again where it runs.
        return [{k: run.config[k] if k in run.config and resolved.get(k) == v else v for k, v in tc.items()}
                for tc in configs]

    async def _start_connector(self, run: ConnectorRun) -> None:
        """Start the connector and every task it asks for (a standalone worker runs them all)."""
        written = await self._start_connector_instance(run)
        if written is None:
            return
        run.tasks = [TaskRun(i, config) for i, config in enumerate(written)]
        # One after another: see _start_assigned in connectd.cluster.herder for why not at once.
        for task in run.tasks:
            await self.supervisor.start(run, task)

    async def _start_connector_instance(self, run: ConnectorRun) -> list[dict[str, str]] | None:
        """Start the connector's instance; its task configs as written, or ``None`` if it failed."""
        with bind_context(connector=run.name):
            self._set(run.name, None, UNASSIGNED)
            resolved = {k: self.worker.providers.resolve(v) for k, v in run.config.items()}
            try:
                instance = run.cls()
                instance.context = self._context_for(run)
                await asyncio.to_thread(_initialized_and_started, instance, resolved)
                task_configs = await self._generate_task_configs(run, instance, resolved)
            except Exception as exc:
                self.metrics.started("connector", False)
                self._set(run.name, None, FAILED, trace_of(exc))
                log.error("connector_failed", connector=run.name, error=str(exc))
                return None
            self.metrics.started("connector", True)
            run.instance = instance
            self._set(run.name, None, PAUSED if run.target == "PAUSED" else RUNNING)
            return task_configs

    async def _generate_task_configs(self, run: ConnectorRun, instance: Any,
                                     resolved: Mapping[str, str]) -> list[dict[str, str]]:
        """The connector's task configs as written (placeholders back), ``tasks.max`` enforced."""
        settings = self.settings(run)
        task_configs = await asyncio.to_thread(instance.task_configs, settings.tasks_max)
        too_many = too_many_tasks(run.name, len(task_configs), settings)
        if too_many is not None:
            raise ConnectorError(too_many)
        return self._written_task_configs(run, resolved, task_configs)

    async def _regenerated_task_configs(self, run: ConnectorRun) -> list[dict[str, str]] | None:
        """The running connector's task configs asked for again (as written), or ``None``: asking
        failed, and the connector is FAILED with the trace."""
        resolved = {k: self.worker.providers.resolve(v) for k, v in run.config.items()}
        try:
            return await self._generate_task_configs(run, run.instance, resolved)
        except Exception as exc:
            self._set(run.name, None, FAILED, trace_of(exc))
            return None

    async def _prepare_task(self, run: ConnectorRun) -> None:
        """What a task needs before its query starts, beyond what task assembly does."""

    def _task_count(self, run: ConnectorRun) -> int:
        """How many tasks the connector has in all (a sink task's share of partitions depends on it)."""
        return len(run.tasks)

    def _generation(self) -> int:
        """The generation statuses are written with (the group's in a cluster)."""
        return 0

    def _admin(self, connector_config: Mapping[str, str] | None = None) -> Any:
        """An admin client (thread-safe), made on first use: the worker's, for the herder's metadata
        look-ups, or a connector's whose config has ``admin.override.*`` (as Kafka Connect makes one
        per connector), for its dead-letter topic and its sink offsets."""
        overrides = client_overrides("admin", connector_config or {})
        key = json.dumps(overrides, sort_keys=True)
        client = self._admin_clients.get(key)
        if client is None:
            client = self._admin_clients[key] = AdminClient(
                self.worker.client_config("admin", "confluent", overrides=overrides))
        return client

    def _spark_checkpoints(self) -> Path | None:
        """Spark-level source tasks' progress: their Spark checkpoints, kept beside the offsets file."""
        return Path(f"{self.offsets_path}.checkpoints")

    def _source_offsets_spec(self, settings: ConnectorConfig) -> dict[str, Any]:
        """Where a source connector's tasks keep their offsets: the offsets file in standalone mode."""
        return {"kind": "file", "path": self.offsets_path}

    async def _stop_connector(self, run: ConnectorRun) -> None:
        """Stop the connector's tasks here (at once, each gracefully), then its instance."""
        with bind_context(connector=run.name):
            await self.supervisor.stop_all((run, task) for task in run.tasks)
            await self._stop_instance(run)
            log.info("connector_stopped")

    async def _stop_instance(self, run: ConnectorRun) -> None:
        """Stop the connector's ``Connector`` instance if it runs here; one whose ``stop`` raises is
        logged with its trace and dropped all the same."""
        instance, run.instance = run.instance, None
        if instance is None:
            return
        try:
            await asyncio.to_thread(instance.stop)
        except Exception as exc:  # noqa: BLE001 - a plugin's stop failing must not stop the herder's work
            log.error("connector_stop_failed", connector=run.name, error=f"{type(exc).__name__}: {exc}", exc_info=exc)

    def _later(self, work: Any, connector: str | None = None) -> None:
        """Run *work* (a coroutine) on its own; if it raises, the failure is logged with its trace and,
        when it concerns *connector*, the connector is FAILED with it, so it is seen."""

        def done(task: asyncio.Task[None]) -> None:
            if task.cancelled() or task.exception() is None:
                return
            exc = task.exception()
            log.error("herder_update_failed", connector=connector, error=f"{type(exc).__name__}: {exc}", exc_info=exc)
            if connector is not None:
                self._set(connector, None, FAILED, trace_of(exc))

        asyncio.get_running_loop().create_task(work).add_done_callback(done)

    async def _watch_pass(self) -> None:
        """One pass of the watch loop: every task's liveness check (an automatic restart due runs
        here). A check that raises concerns its task: the task is FAILED with the trace."""
        loop = asyncio.get_running_loop()
        self._pass_started = loop.time()
        try:
            async with self._lock:
                for run in list(self._connectors.values()):
                    for task in list(run.tasks):
                        try:
                            await self.supervisor.check(run, task, loop.time())
                        except Exception as exc:  # noqa: BLE001 - it fails the task, visibly, not the loop
                            log.error("task_check_failed", connector=run.name, task=task.id,
                                      error=f"{type(exc).__name__}: {exc}", exc_info=exc)
                            await self.supervisor.fail(run, task, trace_of(exc))
        finally:
            self._pass_started = None

    async def _discovery_pass(self) -> None:
        """One pass of partition discovery: each sink connector with tasks here, its partitions
        looked up (never while holding the herder: the Kafka cluster may be slow or away) and, when
        they changed, handed to the supervisor."""
        sinks = [run for run in list(self._connectors.values())
                 if run.kind == "sink" and any(task.handle is not None for task in run.tasks)]
        for run in sinks:
            try:
                partitions = await asyncio.to_thread(lambda run=run: self.assembler.sink_partitions(self.settings(run)))
            except Exception as exc:  # noqa: BLE001 - the cluster briefly unreachable: looked at again next pass
                log.warning("topic_discovery_failed", connector=run.name, error=f"{type(exc).__name__}: {exc}")
                continue
            async with self._lock:
                if partitions != run.partitions and self._connectors.get(run.name) is run and run.tasks:
                    await self.supervisor.rediscover(run, partitions)

    def _too_many_tasks(self, run: ConnectorRun) -> str | None:
        """Why the connector's tasks may not start again (KIP-1004), or ``None``: a standalone
        connector's task list is cut to ``tasks.max`` when it is generated, so nothing here."""
        return None

    async def _start_connector_only(self, run: ConnectorRun) -> None:
        resolved = {k: self.worker.providers.resolve(v) for k, v in run.config.items()}
        try:
            instance = run.cls()
            instance.context = self._context_for(run)
            await asyncio.to_thread(_initialized_and_started, instance, resolved)
        except Exception as exc:
            self.metrics.started("connector", False)
            self._set(run.name, None, FAILED, trace_of(exc))
            return
        self.metrics.started("connector", True)
        run.instance = instance
        self._set(run.name, None, PAUSED if run.target == "PAUSED" else RUNNING)

    async def _reconfigure(self, run: ConnectorRun) -> None:
        """The connector asked for new task configs (``context.request_task_reconfiguration``):
        asked again of the running connector, then :meth:`_apply_task_configs`."""
        async with self._lock:
            if self._connectors.get(run.name) is not run or run.instance is None or run.target == "STOPPED":
                return
            with bind_context(connector=run.name):
                written = await self._regenerated_task_configs(run)
                if written is not None:
                    await self._apply_task_configs(run, written)

    async def _apply_task_configs(self, run: ConnectorRun, written: list[dict[str, str]]) -> None:
        """Put a running connector's new task configs (as written) in force; under the herder's lock."""
        raise NotImplementedError

    async def _validated(self, config: Mapping[str, str], origin: Callable[[str], Origin | None],
                         initial_state: str | None) -> tuple[str, type, str]:
        """A connector config checked for :meth:`put`: its name, class and initial target state.

        :raises ConfigError: listing every problem of the config.
        """
        name = (config.get("name") or "").strip()
        initial = {"RUNNING": "STARTED", "PAUSED": "PAUSED", "STOPPED": "STOPPED", None: "STARTED"}
        if (initial_state or None) not in initial:
            raise ConfigError([f"initial_state: {initial_state!r}: expected RUNNING, PAUSED or STOPPED"])
        cls = await asyncio.to_thread(check_connector, config, self.registry, origin, self.worker.providers.resolve,
                                      self.worker.get("connector.client.config.override.policy"),
                                      self.worker.get("topic.creation.enable"), self.worker.exactly_once_source)
        return name, cls, initial[initial_state or None]


def _initialized_and_started(connector: Any, config: Mapping[str, str]) -> None:
    """Kafka Connect's order: ``initialize(context)``, then ``start(config)``."""
    connector.initialize(connector.context)
    connector.start(config)
