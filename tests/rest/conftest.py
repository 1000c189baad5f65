"""Serve the REST API over a real StandaloneHerder on 127.0.0.1 for one scenario.

``rest(scenario)`` builds the herder and a :class:`RestServer` on a free
port, runs ``await scenario(http, herder)`` inside ``asyncio.run`` with an
:class:`aiohttp.ClientSession` whose base URL is the server, and stops both.
Without ``spark`` and ``broker`` nothing may start a connector: enough for
routing, validation, plugins and loggers.

``rest(scenario, worker={...})`` adds worker settings and builds the server
as the worker does, from ``listeners`` (default ``http://127.0.0.1:0``) and
the security settings; ``ssl=`` is the client's TLS context, and
``rest.server`` is the running :class:`RestServer` during the scenario.
With ``admin.listeners`` set, the /admin endpoints are served apart, on
``rest.admin_server``, as the worker does (``None`` otherwise).
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from connectd.herder import StandaloneHerder
from connectd.rest import RestServer, create_admin_app, create_app
from connectd.rest.security import admin_listeners, rest_listeners, rest_middlewares


@pytest.fixture
def rest(tmp_path, worker_config):
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("topic=rest-secret-topic\n", encoding="utf-8")

    def run(scenario, *, spark=None, broker=None, worker=None, ssl=None):
        config = worker_config(**{
            **({"bootstrap.servers": broker.bootstrap_servers} if broker is not None else {}),
            "task.shutdown.graceful.timeout.ms": "20000",
            "config.providers": "file",
            "config.providers.file.class": "file",
            **({"listeners": "http://127.0.0.1:0", **worker} if worker is not None else {}),
        })

        async def main():
            # Built before the herder, as the worker does: a bad setting starts nothing.
            listeners = rest_listeners(config) if worker is not None else None
            admins = admin_listeners(config) if worker is not None else None
            middlewares = rest_middlewares(config) if worker is not None else ()
            herder = StandaloneHerder(config, "test-worker", spark)
            await herder.start()
            app = create_app(herder, worker_id="test-worker", kafka_cluster_id="test-cluster", version="9.9.9",
                             middlewares=middlewares, admin_routes=admins is None)
            server = run.server = RestServer(app)
            admin = run.admin_server = RestServer(create_admin_app(middlewares=middlewares)) if admins else None
            try:
                if listeners is None:
                    await server.start("127.0.0.1", 0)
                else:
                    await server.serve(listeners)
                if admin is not None:
                    await admin.serve(admins)
                connector = aiohttp.TCPConnector(ssl=ssl) if ssl is not None else None
                async with aiohttp.ClientSession(base_url=server.url, connector=connector) as http:
                    return await scenario(http, herder)
            finally:
                if admin is not None:
                    await admin.stop()
                await server.stop()
                await herder.stop()
                run.server = run.admin_server = None

        return asyncio.run(main())

    run.secrets = secrets
    run.server = None
    run.admin_server = None
    return run
