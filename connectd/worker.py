"""The worker: builds the parts of one connectd process and starts/stops them.

States::

    NEW --start()--> STARTING --ok--> RUNNING --stop()--> STOPPING --> STOPPED
                          \\--error--> (parts already started are stopped) --> STOPPED, error raised

Parts are entered on an :class:`~contextlib.AsyncExitStack`, so they stop in
reverse order whatever happens: the REST API, the herder (tasks stop
gracefully), then Spark, then the Kafka clients. The worker checks its configuration
(TLS files and REST credentials included), loads plugins, finds its converters
and connects to the Kafka cluster; :meth:`Worker.start_herder` adds Spark, the
connectors and the REST API on every one of ``listeners`` (its ``/admin``
endpoints on those of ``admin.listeners`` when that is set). A cluster's worker
joins its group as soon as it has read the cluster's state, saying it is
warming: it takes no work while its Spark session starts and runs a warm-up
query (:mod:`connectd.runtime.spark.warm_up`), then rejoins to take its share.

:meth:`Worker.serve` is the daemon's whole life (``connectd standalone`` and
``distributed``): started, its connector files given to the herder, served
until SIGTERM or SIGINT (a second one ends the graceful stops at once), then
stopped; under systemd (``Type=notify``) it tells systemd when it is ready, how
it fares (``WATCHDOG=1`` only while the herder is healthy) and when it stops
(:mod:`connectd.notify`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import signal
from collections.abc import Callable, Iterable
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from connectd import __version__
from connectd.capacity.providers import open_provider
from connectd.cluster.herder import DistributedHerder
from connectd.config.properties import Origin
from connectd.config.worker import WorkerConfig
from connectd.errors import ConnectdError
from connectd.herder import Herder, StandaloneHerder
from connectd.logging import bind_context, get_logger
from connectd.notify import STATUS_INTERVAL_S, SystemdNotifier
from connectd.plugins import Registry, get_registry
from connectd.rest.app import RestServer, create_admin_app, create_app
from connectd.rest.security import admin_listeners, rest_listeners, rest_middlewares
from connectd.runtime.spark.executors import check_executors, executor_modules
from connectd.runtime.spark.session import start_session, stop_session
from connectd.runtime.spark.warm_up import warm_up

__all__ = ["Worker"]

log = get_logger(__name__)
#: The longest a cluster worker waits for its Spark warm-up before joining anyway.
_WARM_UP_TIMEOUT_S = 120.0


class Worker:
    """One connectd process's worker.

    :param config: the checked worker configuration.
    :param worker_id: how the cluster knows this worker; defaults to the
        advertised REST address, as in Kafka Connect.
    :param registry: the plugins; by default this process's, loaded at :meth:`start`.
    """

    def __init__(self, config: WorkerConfig, *, worker_id: str | None = None,
                 registry: Registry | None = None) -> None:
        self.config = config
        #: The plugins every part of this worker looks classes up in; set by :meth:`start` at the latest.
        self.registry = registry
        self.worker_id = worker_id or config.advertised_id
        self.state = "NEW"
        self.cluster_id: str | None = None
        self.converters: dict[str, type] = {}
        self.spark: Any = None
        self.herder: Herder | None = None
        self.rest: Any = None
        self.rest_url: str | None = None
        self.rest_urls: list[str] = []
        #: The server of ``admin.listeners``, ``None`` when the /admin endpoints are not served apart.
        self.admin_rest: Any = None
        #: Where the /admin endpoints are served: :attr:`rest_urls` unless ``admin.listeners`` is set.
        self.admin_urls: list[str] = []
        self._rest_listeners: list[Any] = []
        self._admin_listeners: list[Any] | None = None
        self._rest_middlewares: list[Any] = []
        self._stack: contextlib.AsyncExitStack | None = None
        self._own_spark = False  # the worker started its SparkSession (and stops it)
        #: what acts on the cluster's capacity decisions (capacity.provider), checked at start
        self.capacity_provider: Any = None

    async def start(self) -> None:
        """Check the config, load plugins, connect to Kafka.

        :raises ConfigError: if the configuration is wrong.
        :raises ConnectdError: if Kafka cannot be reached.
        """
        if self.state != "NEW":
            raise ConnectdError(f"worker already {self.state.lower()}")
        self.state = "STARTING"
        with bind_context(worker=self.worker_id):
            stack = contextlib.AsyncExitStack()
            try:
                registry = self.registry
                if registry is None:
                    registry = self.registry = await asyncio.to_thread(get_registry)
                self.config.check(registry)
                # A capacity provider this machine cannot use is refused now, with the reason.
                if self.config.mode == "distributed":
                    self.capacity_provider = await asyncio.to_thread(open_provider, self.config, registry)
                # TLS files and credentials are read now, so that a mistake
                # stops the worker before it touches Kafka or starts Spark.
                self._rest_listeners = await asyncio.to_thread(rest_listeners, self.config)
                self._admin_listeners = await asyncio.to_thread(admin_listeners, self.config)
                self._rest_middlewares = await asyncio.to_thread(rest_middlewares, self.config)
                for key in ("key.converter", "value.converter", "header.converter"):
                    self.converters[key] = registry.find_class("converter", self.config.get(key))
                admin = await self._connect(stack)
                cluster = await admin.describe_cluster()
                self.cluster_id = cluster.get("cluster_id")
            except BaseException:
                await stack.aclose()
                self.state = "STOPPED"
                raise
            self._stack = stack
            self.state = "RUNNING"
            log.info(
                "worker_started",
                mode=self.config.mode,
                kafka_cluster_id=self.cluster_id,
                brokers=len(cluster.get("brokers", [])),
                plugins=sum(1 for _ in registry),
            )

    async def _connect(self, stack: contextlib.AsyncExitStack) -> Any:
        settings = self.config.client_config("admin", "aiokafka")
        settings.setdefault("client_id", f"connectd-{self.worker_id}-admin")
        admin = AIOKafkaAdminClient(**settings)
        try:
            await admin.start()
        except KafkaError as exc:
            await admin.close()
            servers = ",".join(self.config.get("bootstrap.servers"))  # its default when the file has none
            raise ConnectdError(f"cannot reach the Kafka cluster at {servers}: {exc}") from exc
        stack.push_async_callback(admin.close)
        return admin

    async def start_herder(self, spark: Any = None) -> Herder:
        """Serve the REST API, then start Spark and the herder that runs connectors; all stopped
        with the worker. A standalone worker starts Spark first; a cluster's worker starts its
        herder first (it reads the cluster's state and joins, taking no work), then Spark with a
        warm-up query, and returns once it takes work.

        The API answers within moments of the start: ``/health`` says "starting" (503) until the
        herder has started and, in a cluster, Spark is warm; a write waits until the herder has
        started (a distributed one has also joined its group).

        :param spark: a SparkSession to use instead of starting one; the worker
            does not stop a session it did not start.
        """
        if self.state != "RUNNING" or self._stack is None:
            raise ConnectdError("start the worker before its herder")
        if self.herder is not None:
            return self.herder

        with bind_context(worker=self.worker_id):
            # The REST API listens first: /health says "starting" and writes wait while Spark starts
            # (seconds), and the other workers of a cluster reach this one at its advertised URL.
            if self.config.mode == "distributed":
                cluster_herder = DistributedHerder(self.config, self.worker_id, None, rest_url="",
                                                   registry=self.registry, capacity_provider=self.capacity_provider)
                await self._start_rest(cluster_herder)
                cluster_herder.rest_url = self.advertised_url()
                # Spark stops after the herder (registered first, run last), whenever it started.
                self._stack.push_async_callback(self._stop_spark)
                # A cluster's worker joins as soon as it has read the cluster's state, and warms
                # Spark meanwhile: the leader gives it work once it says it is warm, so a task
                # that moves here never waits for a fresh session's first-query costs.
                await self._start(cluster_herder)
                await self._start_spark(spark, warm=True)
                cluster_herder.attach_spark(self.spark)
                return cluster_herder
            herder = StandaloneHerder(self.config, self.worker_id, None, registry=self.registry)
            await self._start_rest(herder)
            self._stack.push_async_callback(self._stop_spark)
            await self._start_spark(spark, warm=False)
            herder.attach_spark(self.spark)
            await self._start(herder)
        return herder

    async def _start(self, herder: Herder) -> None:
        await herder.start()
        # Stopped before the REST API (entered after it): in a cluster, followers' forwarded
        # requests keep reaching this worker while it hands its work over.
        assert self._stack is not None
        self._stack.push_async_callback(herder.stop)
        self.herder = herder
        log.info("herder_started", mode=self.config.mode, url=self.advertised_url())

    async def _start_spark(self, spark: Any, *, warm: bool) -> None:
        """The worker's SparkSession (*spark* if given: it is not stopped with the worker); *warm*:
        with a first query run through it (:mod:`connectd.runtime.spark.warm_up`)."""
        if spark is not None:
            self.spark = spark
            return
        log.info("spark_starting", master=self.config.spark_conf()["spark.master"])
        self.spark = await asyncio.to_thread(start_session, self.config, self.worker_id)
        self._own_spark = True
        if not self.config.spark_conf()["spark.master"].startswith("local"):
            await asyncio.to_thread(check_executors, self.spark, executor_modules(self.registry),
                                    self.config.get("executor.check.timeout.ms") / 1000)
        if warm:
            await asyncio.to_thread(warm_up, self.spark, _WARM_UP_TIMEOUT_S)

    async def _stop_spark(self) -> None:
        if self._own_spark and self.spark is not None:
            await asyncio.to_thread(stop_session, self.spark)

    def advertised_url(self) -> str:
        """The REST URL other workers reach this one at: ``rest.advertised.*`` over the bound listener."""
        assert self.rest_url is not None
        scheme, _, bound = self.rest_url.partition("://")
        bound_host, _, bound_port = bound.rstrip("/").rpartition(":")
        host = self.config.raw("rest.advertised.host.name") or bound_host
        port = self.config.raw("rest.advertised.port") or bound_port
        return f"{scheme}://{host}:{port}"

    async def _start_rest(self, herder: Herder) -> None:
        """Serve Kafka Connect's REST API on every listener; stopped before the herder.

        :attr:`rest_urls` lists them all; :attr:`rest_url` is the one
        ``rest.advertised.listener`` names (the first of that scheme), else the first.
        When ``admin.listeners`` is set, the /admin endpoints are served on its
        listeners alone (:attr:`admin_urls`), or nowhere if it is empty.
        """
        app = create_app(herder, worker_id=self.worker_id, kafka_cluster_id=self.cluster_id, version=__version__,
                         middlewares=self._rest_middlewares, admin_routes=self._admin_listeners is None,
                         registry=self.registry)
        server = RestServer(app)
        await server.serve(self._rest_listeners)
        self._stack.push_async_callback(server.stop)
        self.rest = server
        self.rest_urls = server.urls
        self.admin_urls = self.rest_urls if self._admin_listeners is None else []
        if self._admin_listeners:
            admin = RestServer(create_admin_app(middlewares=self._rest_middlewares, herder=herder))
            await admin.serve(self._admin_listeners)
            self._stack.push_async_callback(admin.stop)
            self.admin_rest = admin
            self.admin_urls = admin.urls
        advertised = (self.config.get("rest.advertised.listener") or "").lower()
        self.rest_url = next((lst.url for lst in server.listeners if lst.scheme == advertised), server.url)
        log.info("rest_started", url=self.rest_url, urls=self.rest_urls, admin_urls=self.admin_urls)

    async def stop(self) -> None:
        """Stop every part, last started first. Safe to call more than once."""
        if self._stack is None or self.state in ("STOPPING", "STOPPED"):
            self.state = "STOPPED" if self.state != "STOPPING" else self.state
            return
        self.state = "STOPPING"
        with bind_context(worker=self.worker_id):
            try:
                await self._stack.aclose()
            finally:
                self._stack = None
                self.state = "STOPPED"
                log.info("worker_stopped")

    async def serve(self, connectors: Iterable[tuple[dict[str, str], Callable[[str], Origin | None]]] = (),
                    on_up: Callable[[Worker], None] | None = None) -> None:
        """Start, give the herder *connectors* (standalone: checked configs and where each key was
        written), call *on_up*, and serve until SIGTERM or SIGINT; then stop. A second signal
        cancels the stop's waits (graceful task stops) and ends at once."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        main_task = asyncio.current_task()
        notifier = SystemdNotifier()

        def on_signal() -> None:
            if stop.is_set():
                assert main_task is not None
                main_task.cancel()  # second signal: no more waiting for graceful stops
            else:
                notifier.stopping()
            stop.set()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal)
        loop.add_signal_handler(signal.SIGUSR1, _log_tasks)
        systemd: asyncio.Task[None] | None = None
        try:
            async with self:
                with bind_context(worker=self.worker_id):  # the connectors' start-up lines too
                    herder = await self.start_herder()
                    for connector, origin in connectors:
                        await herder.put(connector, origin)
                    if on_up is not None:
                        on_up(self)
                    if notifier.enabled and not stop.is_set():
                        notifier.ready(herder.local_summary())
                        systemd = loop.create_task(self._tell_systemd(notifier, herder, stop))
                    await stop.wait()
        finally:
            if systemd is not None:
                systemd.cancel()
            notifier.close()
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
                loop.remove_signal_handler(signum)

    @staticmethod
    async def _tell_systemd(notifier: SystemdNotifier, herder: Herder, stop: asyncio.Event) -> None:
        """``WATCHDOG=1`` while the herder is healthy, and ``STATUS=`` with its work, until the stop."""
        every = STATUS_INTERVAL_S if notifier.watchdog_s is None else min(STATUS_INTERVAL_S, notifier.watchdog_s / 2)
        while not stop.is_set():
            try:
                if notifier.watchdog_s is not None:
                    problem = await herder.health_check()
                    if problem is None:
                        notifier.watchdog()
                    else:
                        log.warning("systemd_watchdog_withheld", reason=problem)
                notifier.status(herder.local_summary())
            except Exception as exc:  # noqa: BLE001 - said, and no ping: systemd's watchdog restarts a worker stuck so
                log.error("systemd_notify_failed", error=f"{type(exc).__name__}: {exc}", exc_info=exc)
            await asyncio.sleep(every)

    async def __aenter__(self) -> Worker:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


def _log_tasks() -> None:
    """SIGUSR1: every asyncio task of the worker and where it waits, logged (``worker_tasks``), for an
    operator asking what a worker that seems stuck is doing (its threads: ``py-spy dump``)."""
    tasks = []
    for task in asyncio.all_tasks():
        where = io.StringIO()
        task.print_stack(limit=12, file=where)
        tasks.append({"name": task.get_name(), "stack": where.getvalue()})
    log.warning("worker_tasks", count=len(tasks), tasks=sorted(tasks, key=lambda t: t["name"]))
