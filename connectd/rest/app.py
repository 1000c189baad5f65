"""The REST application and the server that listens for it."""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from connectd.errors import ConnectdError
from connectd.logging import get_logger
from connectd.rest import capacity, connectors, loggers, openapi, plugins
from connectd.rest._keys import CREATE_LOCK, HERDER, INFO, REGISTRY
from connectd.rest.error_responses import RestError, error_middleware
from connectd.rest.forwarding import forwarding_middleware

__all__ = ["Listener", "RestServer", "create_admin_app", "create_app"]

log = get_logger(__name__)


def create_app(herder: Any, *, worker_id: str, kafka_cluster_id: str | None, version: str,
               commit: str = "unknown", middlewares: Iterable[Any] = (), admin_routes: bool = True,
               registry: Any = None) -> web.Application:
    """Kafka Connect's REST API over *herder*.

    :param herder: a :class:`connectd.herder.StandaloneHerder` (or one with its methods).
    :param worker_id: this worker's ``host:port``, as statuses show it.
    :param kafka_cluster_id: shown by ``GET /``; ``None`` when unknown.
    :param version: connectd's version, shown by ``GET /``.
    :param commit: the source commit, shown by ``GET /``.
    :param middlewares: run around every request before the error handling, first
        outermost: :func:`connectd.rest.security.rest_middlewares` gives CORS and
        authentication as the worker config asks.
    :param admin_routes: whether the ``/admin`` endpoints are served here; not
        when ``admin.listeners`` is set (they are then :func:`create_admin_app`'s).
    :param registry: the worker's :class:`connectd.plugins.Registry`, for
        ``/connector-plugins``; by default the herder's.
    """
    app = web.Application(router=_Router(),
                          middlewares=[*middlewares, error_middleware, _starting_gate, forwarding_middleware])
    app[HERDER] = herder
    app[REGISTRY] = registry if registry is not None else getattr(herder, "registry", None)
    app[INFO] = {"version": version, "commit": commit, "kafka_cluster_id": kafka_cluster_id, "worker_id": worker_id}
    app[CREATE_LOCK] = asyncio.Lock()
    app.router.add_get("/", _root)
    app.router.add_get("/health", _health)
    app.router.add_get("/metrics", _metrics)
    connectors.add_routes(app.router)
    plugins.add_routes(app.router)
    capacity.add_routes(app.router)
    if admin_routes:
        loggers.add_routes(app.router)
    openapi.add_routes(app.router)
    return app


def create_admin_app(*, middlewares: Iterable[Any] = (), herder: Any = None) -> web.Application:
    """The ``/admin`` endpoints alone, for the listeners of ``admin.listeners`` (KIP-495).

    :param middlewares: as for :func:`create_app`; the same security applies.
    :param herder: the worker's herder, for cluster-wide log levels (``scope=cluster``) in a cluster.
    """
    app = web.Application(router=_Router(), middlewares=[*middlewares, error_middleware, forwarding_middleware])
    app[HERDER] = herder
    loggers.add_routes(app.router)
    return app


class _Router(web.UrlDispatcher):
    """Routes a path ending in one slash (``/connectors/``, ``/connectors/c/status/``) as the path
    without it when only that one exists, as Kafka Connect's Jersey does: the route, its
    parameters and its 405 are the same; the request itself keeps its path."""

    async def resolve(self, request: web.Request) -> Any:
        match = await super().resolve(request)
        path = request.rel_url.raw_path
        if not isinstance(match.http_exception, web.HTTPNotFound) or path == "/" or not path.endswith("/"):
            return match
        bare = await super().resolve(request.clone(rel_url=request.rel_url.with_path(path[:-1], encoded=True)))
        return match if isinstance(bare.http_exception, web.HTTPNotFound) else bare


#: How long a write made while the worker starts (Spark, then the herder) waits for it.
STARTING_WAIT_S = 60.0


@web.middleware
async def _starting_gate(request: web.Request, handler: Any) -> web.StreamResponse:
    """The API answers as soon as the worker listens, before Spark is up: reads answer from
    what the herder knows (``/health`` says "starting"), a write waits for the herder to
    have started, up to :data:`STARTING_WAIT_S`, then answers 503."""
    herder = request.app[HERDER]
    if request.method not in ("GET", "HEAD", "OPTIONS") and herder is not None and not herder.ready:
        if not await herder.wait_ready(STARTING_WAIT_S):
            raise RestError(503, f"Worker is still starting up (waited {STARTING_WAIT_S:g} s); try again")
    return await handler(request)


async def _root(request: web.Request) -> web.Response:
    info = request.app[INFO]
    return web.json_response({k: info[k] for k in ("version", "commit", "kafka_cluster_id")})


async def _health(request: web.Request) -> web.Response:
    # Kafka's HealthCheckResource (KIP-1017): 503 until the herder has started,
    # then 200 if its loop comes round in time, else 500 saying why not.
    herder = request.app[HERDER]
    if herder is None or not getattr(herder, "ready", True):
        return web.json_response({"status": "starting", "message": "Worker is still starting up."}, status=503)
    if getattr(herder, "warming", False):  # in its cluster already, taking no work until Spark is warm
        return web.json_response({"status": "starting", "message": "Worker is still starting up: its Spark "
                                  "session is warming up; it takes work once warm."}, status=503)
    check = getattr(herder, "health_check", None)
    problem = await check() if check is not None else None
    if problem is not None:
        return web.json_response({"status": "unhealthy", "message": "Worker was unable to handle this request and "
                                  f"may be unable to handle other requests. {problem}"}, status=500)
    return web.json_response({"status": "healthy",
                              "message": "Worker has completed startup and is ready to handle requests."})


async def _metrics(request: web.Request) -> web.Response:
    """The worker's Prometheus metrics (:mod:`connectd.metrics`), in the text exposition format."""
    metrics = getattr(request.app[HERDER], "metrics", None)
    if metrics is None:
        raise RestError(404, "This worker exports no metrics.")
    body = generate_latest(metrics.registry)  # on the loop: the state series read the herder's own state
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


_LISTENER = re.compile(r"(?i)(https?)://(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]*):(\d{1,5})/?")


@dataclass(frozen=True)
class Listener:
    """One address the REST API is served on, as ``listeners`` writes it.

    :param scheme: ``http`` or ``https``.
    :param host: the interface; empty means all (IPv4) interfaces.
    :param port: 0 takes a free port; a started :class:`RestServer` lists its
        listeners with the ports they took.
    :param ssl_context: the TLS settings of an ``https`` listener.
    """

    scheme: str
    host: str
    port: int
    ssl_context: ssl.SSLContext | None = None

    @classmethod
    def parse(cls, text: str, ssl_context: ssl.SSLContext | None = None) -> Listener:
        """``http://host:port`` or ``https://[::1]:port`` as a listener.

        :raises ValueError: if *text* is not written so.
        """
        match = _LISTENER.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"expected a listener like http://host:port or https://host:port, got {text!r}")
        return cls(match.group(1).lower(), match.group(2).strip("[]"), int(match.group(3)), ssl_context)

    @property
    def url(self) -> str:
        """Where a client on this machine reaches it (loopback for all interfaces)."""
        host = self.host or "127.0.0.1"
        return f"{self.scheme}://{f'[{host}]' if ':' in host else host}:{self.port}"


class RestServer:
    """Serves an application on one or more listeners.

    ``async with RestServer(app) as server: …``, :meth:`start` for one address,
    or :meth:`serve` for several; :meth:`stop` stops them all.

    :param app: from :func:`create_app`.
    :param shutdown_timeout: seconds requests in flight get to finish on :meth:`stop`.
    """

    def __init__(self, app: web.Application, *, shutdown_timeout: float = 10.0) -> None:
        self.app = app
        self.shutdown_timeout = shutdown_timeout
        self.port: int | None = None
        self.host: str | None = None
        #: The listeners served, with the ports they took, in the order given.
        self.listeners: list[Listener] = []
        self._runner: web.AppRunner | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 8083, *, ssl_context: ssl.SSLContext | None = None) -> None:
        """Listen on *host*:*port* (https with *ssl_context*); port 0 takes a free port, then found in :attr:`port`."""
        await self.serve([Listener("https" if ssl_context is not None else "http", host, port, ssl_context)])

    async def serve(self, listeners: Sequence[Listener]) -> None:
        """Listen on every one of *listeners*; :attr:`host`, :attr:`port` and :attr:`url` are the first's.

        :raises ConnectdError: naming the listener, if one cannot be bound (the others are closed).
        """
        if self._runner is not None:
            raise RuntimeError("the REST server is already started")
        if not listeners:
            raise ValueError("expected at least one listener")
        runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=self.shutdown_timeout)
        await runner.setup()
        bound: list[Listener] = []
        try:
            for listener in listeners:
                if (listener.scheme == "https") != (listener.ssl_context is not None):
                    raise ValueError(f"{listener.scheme}://{listener.host}:{listener.port}: "
                                     "https listeners, and only they, need an SSL context")
                # Sites are listed in start order, so the addresses past the
                # ones already there are this site's.
                before = len(runner.addresses)
                site = web.TCPSite(runner, listener.host or "0.0.0.0", listener.port, reuse_address=True,
                                   ssl_context=listener.ssl_context)
                try:
                    await site.start()
                except OSError as exc:
                    raise ConnectdError(f"cannot listen on {listener.scheme}://{listener.host}:{listener.port}: "
                                        f"{exc.strerror or exc}") from exc
                bound.append(replace(listener, port=runner.addresses[before][1]))
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.listeners = bound
        self.host = bound[0].host
        self.port = bound[0].port
        for listener in bound:
            log.info("rest_server_started", scheme=listener.scheme, host=listener.host, port=listener.port)

    async def stop(self) -> None:
        """Stop listening and close connections; does nothing if not started."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        await runner.cleanup()
        log.info("rest_server_stopped", ports=[listener.port for listener in self.listeners])

    @property
    def url(self) -> str:
        """The first listener's URL."""
        return self.listeners[0].url if self.listeners else f"http://{self.host}:{self.port}"

    @property
    def urls(self) -> list[str]:
        """Every listener's URL, in order."""
        return [listener.url for listener in self.listeners]

    async def __aenter__(self) -> RestServer:
        if self._runner is None:
            await self.start("127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
