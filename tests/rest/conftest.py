"""Serve the REST API over a real StandaloneHerder on 127.0.0.1 for one scenario.

``rest(scenario)`` builds the herder and a :class:`RestServer` on a free
port, runs ``await scenario(http, herder)`` inside ``asyncio.run`` with an
:class:`aiohttp.ClientSession` whose base URL is the server, and stops both.
Without ``spark`` and ``broker`` nothing may start a connector: enough for
routing, validation, plugins and loggers.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from connectd.config.worker import WorkerConfig
from connectd.herder import StandaloneHerder
from connectd.rest import RestServer, create_app


@pytest.fixture
def rest(tmp_path):
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("topic=rest-secret-topic\n", encoding="utf-8")

    def run(scenario, *, spark=None, broker=None):
        config = WorkerConfig({
            "bootstrap.servers": broker.bootstrap_servers if broker is not None else "127.0.0.1:9",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.storage.file.filename": str(tmp_path / "offsets.json"),
            "task.shutdown.graceful.timeout.ms": "20000",
            "config.providers": "file",
            "config.providers.file.class": "file",
        }, "standalone", source="test")

        async def main():
            herder = StandaloneHerder(config, "test-worker", spark)
            await herder.start()
            app = create_app(herder, worker_id="test-worker", kafka_cluster_id="test-cluster", version="9.9.9")
            server = RestServer(app)
            await server.start("127.0.0.1", 0)
            try:
                async with aiohttp.ClientSession(base_url=server.url) as http:
                    return await scenario(http, herder)
            finally:
                await server.stop()
                await herder.stop()

        return asyncio.run(main())

    run.secrets = secrets
    return run
