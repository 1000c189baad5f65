"""The REST application and the server that listens for it."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from connectd.logging import get_logger
from connectd.rest import connectors, loggers, plugins
from connectd.rest._keys import CREATE_LOCK, HERDER, INFO
from connectd.rest.errors import error_middleware

__all__ = ["RestServer", "create_app"]

log = get_logger(__name__)


def create_app(herder: Any, *, worker_id: str, kafka_cluster_id: str | None, version: str,
               commit: str = "unknown") -> web.Application:
    """Kafka Connect's REST API over *herder*.

    :param herder: a :class:`connectd.herder.StandaloneHerder` (or one with its methods).
    :param worker_id: this worker's ``host:port``, as statuses show it.
    :param kafka_cluster_id: shown by ``GET /``; ``None`` when unknown.
    :param version: connectd's version, shown by ``GET /``.
    :param commit: the source commit, shown by ``GET /``.
    """
    app = web.Application(middlewares=[error_middleware])
    app[HERDER] = herder
    app[INFO] = {"version": version, "commit": commit, "kafka_cluster_id": kafka_cluster_id, "worker_id": worker_id}
    app[CREATE_LOCK] = asyncio.Lock()
    app.router.add_get("/", _root)
    app.router.add_get("/health", _health)
    connectors.add_routes(app.router)
    plugins.add_routes(app.router)
    loggers.add_routes(app.router)
    return app


async def _root(request: web.Request) -> web.Response:
    info = request.app[INFO]
    return web.json_response({k: info[k] for k in ("version", "commit", "kafka_cluster_id")})


async def _health(request: web.Request) -> web.Response:
    return web.json_response({"status": "healthy",
                              "message": "Worker has completed startup and is ready to handle requests."})


class RestServer:
    """Serves an application on one address.

    ``async with RestServer(app) as server: …`` or :meth:`start` / :meth:`stop`.

    :param app: from :func:`create_app`.
    :param shutdown_timeout: seconds requests in flight get to finish on :meth:`stop`.
    """

    def __init__(self, app: web.Application, *, shutdown_timeout: float = 10.0) -> None:
        self.app = app
        self.shutdown_timeout = shutdown_timeout
        self.port: int | None = None
        self.host: str | None = None
        self._runner: web.AppRunner | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 8083) -> None:
        """Listen on *host*:*port*; port 0 takes a free port, then found in :attr:`port`."""
        if self._runner is not None:
            raise RuntimeError("the REST server is already started")
        runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=self.shutdown_timeout)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port, reuse_address=True)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.host = host
        self.port = runner.addresses[0][1]
        log.info("rest_server_started", host=host, port=self.port)

    async def stop(self) -> None:
        """Stop listening and close connections; does nothing if not started."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        await runner.cleanup()
        log.info("rest_server_stopped", port=self.port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def __aenter__(self) -> RestServer:
        if self._runner is None:
            await self.start("127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
