"""Property-based fuzzing of the whole REST API against its OpenAPI document (schemathesis).

A real REST server over a real StandaloneHerder with the session's broker
and Spark runs on an event loop in a thread; schemathesis sends, for every
documented operation, the document's examples, its deterministic coverage
cases (boundary values, missing or mistyped fields, unsupported methods) and
a few random requests, valid and invalid, and checks each answer: never a
5xx, a documented status, the documented content type, a body matching the
documented schema, 405 with ``Allow`` for a method a path does not take.

Random data almost never names a real connector or a real connector class,
so :func:`_steer` rewrites a deterministic third of the cases (chosen by a
hash of the generated data) to point at a connector that exists, or to carry
a FileStreamSource config that validates: creates, restarts, pauses and
deletes really happen. Any ``file`` in a config is redirected into the
test's directory, and ``PUT /admin/loggers`` only touches ``connectd.fuzz``.

Bounded for a 2-core machine (about 700 requests, under a minute once Spark
is up) and derandomized, so CI sees the same cases every run.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import zlib
from collections import Counter
from typing import Any

import pytest

from connectd.config.worker import WorkerConfig
from connectd.herder import StandaloneHerder
from connectd.rest import RestServer, create_app
from connectd.rest.openapi import document

schemathesis = pytest.importorskip("schemathesis")

pytestmark = pytest.mark.integration

MAX_EXAMPLES = 8
FUZZ_LOGGER = "connectd.fuzz"
# Real plugins, named each way the API accepts: short name, alias, Java class name.
PLUGINS = ("FileStreamSource", "FileStreamSinkConnector", "org.apache.kafka.connect.file.FileStreamSourceConnector",
           "DatagenConnector", "RegexRouter")

CONFIG = schemathesis.Config.from_dict({
    "generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none"},
    "phases": {"examples": {"enabled": True}, "coverage": {"enabled": True}, "fuzzing": {"enabled": True},
               "stateful": {"enabled": False}},
    "checks": {"enabled": False, "not_a_server_error": {"enabled": True},
               "status_code_conformance": {"enabled": True}, "content_type_conformance": {"enabled": True},
               "response_schema_conformance": {"enabled": True}, "unsupported_method": {"enabled": True}},
    "request-timeout": 60,
})

schema = schemathesis.openapi.from_dict(document(), config=CONFIG)


class _Server:
    """A herder and its REST server on an event loop of their own, in a thread."""

    def __init__(self, config: WorkerConfig, spark: Any, file: str, topic: str) -> None:
        self.config, self.spark, self.file, self.topic = config, spark, file, topic
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fuzz-rest", daemon=True)
        self.url = ""
        self.answers: Counter[tuple[str, str, int]] = Counter()

    def run(self, coroutine: Any, timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def start(self) -> None:
        self.thread.start()

        async def start() -> None:
            self.herder = StandaloneHerder(self.config, "fuzz-worker", self.spark)
            await self.herder.start()
            self.rest = RestServer(create_app(self.herder, worker_id="fuzz-worker", kafka_cluster_id="fuzz-cluster",
                                              version="9.9.9"))
            await self.rest.start("127.0.0.1", 0)

        self.run(start())
        self.url = self.rest.url

    def stop(self) -> None:
        async def stop() -> None:
            await self.rest.stop()
            await self.herder.stop()

        try:
            self.run(stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(30)
            self.loop.close()

    def connectors(self) -> list[str]:
        async def names() -> list[str]:
            return self.herder.connectors()

        return self.run(names())


@pytest.fixture(scope="module")
def fuzz_server(broker, spark, tmp_path_factory, worker_config_in):
    directory = tmp_path_factory.mktemp("rest-fuzz")
    source = directory / "in.txt"
    source.write_text("one\ntwo\n", encoding="utf-8")
    config = worker_config_in(directory, broker)(**{"task.shutdown.graceful.timeout.ms": "5000"})
    server = _Server(config, spark, str(source), "rest-fuzz-lines")
    server.start()
    try:
        yield server
    finally:
        server.stop()
        logging.getLogger(FUZZ_LOGGER).setLevel(logging.NOTSET)


def _hash(value: Any) -> int:
    return zlib.crc32(repr(value).encode("utf-8", "surrogatepass"))


def _steer(case: Any, server: _Server) -> None:
    """Point a deterministic share of the cases at real things; keep every case inside the test's sandbox."""
    params = case.path_parameters or {}
    if "logger" in params:
        if case.method.upper() == "PUT":
            params["logger"] = FUZZ_LOGGER
        elif _hash(params) % 3 == 0:
            params["logger"] = ("root", "connectd", FUZZ_LOGGER)[_hash(params) // 3 % 3]
    if "plugin" in params and _hash(params) % 3 == 0:
        params["plugin"] = PLUGINS[_hash(params) // 3 % len(PLUGINS)]
    if isinstance(params.get("connector"), str) and _hash(params) % 3 == 0:
        existing = server.connectors()
        if existing:
            params["connector"] = existing[_hash(params) // 3 % len(existing)]
            if "task" in params and _hash(params) % 2 == 0:
                params["task"] = 0
    body = case.body
    config = None
    if case.operation.path == "/connectors" and case.method.upper() == "POST" and isinstance(body, dict):
        config = body.get("config")
    elif case.operation.path.endswith("/config") and case.method.upper() in ("PUT", "PATCH"):
        config = body
    if not isinstance(config, dict):
        return
    if case.method.upper() != "PATCH" and _hash(config) % 3 == 0:
        config.update({"connector.class": "FileStreamSource", "tasks.max": "1", "file": "", "topic": ""})
        config.pop("name", None)
    if "file" in config:
        config["file"] = server.file
    if "topic" in config:
        config["topic"] = server.topic


@schema.parametrize()
def test_api_answers_as_documented(case, fuzz_server):
    _steer(case, fuzz_server)
    response = case.call_and_validate(base_url=fuzz_server.url)
    fuzz_server.answers[(case.method.upper(), case.operation.path, response.status_code)] += 1


def test_the_fuzz_reached_real_connectors(fuzz_server):
    answers = fuzz_server.answers
    if not answers:
        pytest.skip("the fuzz test did not run")
    created = answers[("POST", "/connectors", 201)] + answers[("PUT", "/connectors/{connector}/config", 201)]
    assert created > 0, sorted(answers.items())
    found = sum(n for (method, path, status), n in answers.items() if "{connector}" in path and status < 300)
    assert found > 0, sorted(answers.items())
