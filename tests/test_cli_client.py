"""``connectd connectors …``: the REST client verbs as a user runs them, against a real REST server.

The server — a real StandaloneHerder behind a real RestServer, built from
worker settings as the worker builds it — runs on an event loop in a thread
of the test process. Each verb runs as a real ``connectd`` process, so the
exit code, stdout (the JSON) and stderr (the error) are what a shell sees.
Without Spark nothing can start a connector, so the quick tests work with
STOPPED ones; the integration test runs one.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from connectd.broker import free_port
from connectd.cli import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from connectd.config.worker import WorkerConfig
from connectd.config.worker_keys import BASIC_AUTH_EXTENSION
from connectd.herder import StandaloneHerder
from connectd.rest import RestServer, create_app
from connectd.rest.security import rest_listeners, rest_middlewares

CONNECTD = [sys.executable, "-m", "connectd.cli"]


class _Served:
    """A herder and its REST server on an event loop of their own, in a thread."""

    def __init__(self, config: WorkerConfig, spark: Any = None) -> None:
        self.config = config
        self.spark = spark
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="cli-rest", daemon=True)
        self.url = ""

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(120)

    def start(self) -> None:
        self.thread.start()

        async def start() -> None:
            listeners, middlewares = rest_listeners(self.config), rest_middlewares(self.config)
            self.herder = StandaloneHerder(self.config, "cli-worker", self.spark)
            await self.herder.start()
            self.server = RestServer(create_app(self.herder, worker_id="cli-worker", kafka_cluster_id="c",
                                                version="9.9.9", middlewares=middlewares))
            await self.server.serve(listeners)

        self._run(start())
        self.url = self.server.url

    def stop(self) -> None:
        async def stop() -> None:
            await self.server.stop()
            await self.herder.stop()

        try:
            self._run(stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(30)
            self.loop.close()


@pytest.fixture
def serve(worker_config):
    """``serve(settings=…, spark=…, broker=…)``: a running server; stopped after the test."""
    started: list[_Served] = []

    def start(settings: dict[str, str] | None = None, *, spark: Any = None, broker: Any = None) -> _Served:
        served = _Served(worker_config(**{
            **({"bootstrap.servers": broker.bootstrap_servers} if broker is not None else {}),
            "offset.flush.interval.ms": "500",
            "task.shutdown.graceful.timeout.ms": "10000",
            "listeners": "http://127.0.0.1:0",
            **(settings or {}),
        }), spark)
        served.start()
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


def connectd(*args: str, url: str | None = None, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CONNECTD_")}
    if url is not None:
        environment["CONNECTD_URL"] = url
    environment.update(env)
    return subprocess.run([*CONNECTD, *args], check=False, capture_output=True, text=True, timeout=120,
                          env=environment, stdin=subprocess.DEVNULL)


def answer(result: subprocess.CompletedProcess) -> Any:
    assert result.returncode == EXIT_OK, result.stderr
    return json.loads(result.stdout)


def _source_file(tmp_path: Path, name: str = "src", **extra: Any) -> Path:
    (tmp_path / "in.txt").write_text("a\nb\n", encoding="utf-8")
    path = tmp_path / f"{name}.json"
    config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": "lines"}
    path.write_text(json.dumps({"name": name, "config": config, **extra}), encoding="utf-8")
    return path


def test_a_stopped_connector_from_create_to_delete(serve, tmp_path):
    url = serve().url
    created = answer(connectd("connectors", "create", str(_source_file(tmp_path, initial_state="STOPPED")), url=url))
    assert created["name"] == "src" and created["type"] == "source" and created["config"]["topic"] == "lines"

    assert answer(connectd("connectors", "list", url=url)) == ["src"]
    expanded = answer(connectd("connectors", "list", "--expand", "status", "--expand", "info", url=url))
    assert set(expanded["src"]) == {"status", "info"}
    assert expanded["src"]["status"]["connector"]["state"] == "STOPPED"
    status = answer(connectd("connectors", "status", "src", url=url))
    assert status == {"name": "src", "connector": {"state": "STOPPED", "worker_id": "cli-worker"}, "tasks": [],
                      "type": "source"}

    partition = {"filename": str(tmp_path / "in.txt")}
    assert answer(connectd("connectors", "offsets", "src", url=url)) == {"offsets": []}
    offsets = tmp_path / "offsets-in.json"
    offsets.write_text(json.dumps({"offsets": [{"partition": partition, "offset": {"position": 2}}]}))
    assert "altered successfully" in answer(connectd("connectors", "offsets", "src", "--set", str(offsets),
                                                     url=url))["message"]
    assert answer(connectd("connectors", "offsets", "src", url=url)) == {
        "offsets": [{"partition": partition, "offset": {"position": 2}}]}
    assert "reset successfully" in answer(connectd("connectors", "offsets", "src", "--reset", url=url))["message"]
    assert answer(connectd("connectors", "offsets", "src", url=url)) == {"offsets": []}

    # As Kafka Connect: restarting a STOPPED connector succeeds, and it stays stopped.
    restart = connectd("connectors", "restart", "src", url=url)
    assert (restart.returncode, restart.stdout, restart.stderr) == (EXIT_OK, "", "")
    plan = answer(connectd("connectors", "restart", "src", "--include-tasks", url=url))
    assert plan["connector"]["state"] == "STOPPED" and plan["tasks"] == []
    assert answer(connectd("connectors", "status", "src", url=url))["connector"]["state"] == "STOPPED"

    deleted = connectd("connectors", "delete", "src", url=url)
    assert (deleted.returncode, deleted.stdout, deleted.stderr) == (EXIT_OK, "", "")
    assert answer(connectd("connectors", "list", url=url)) == []


@pytest.mark.parametrize("verb", [["status"], ["delete"], ["pause"], ["resume"], ["stop"], ["restart"],
                                  ["restart", "--include-tasks", "--only-failed"], ["offsets"], ["offsets", "--reset"]])
def test_unknown_connector_prints_the_servers_message_and_exits_1(serve, verb):
    url = serve().url
    result = connectd("connectors", verb[0], "ghost/1", *verb[1:], url=url)
    assert result.returncode == EXIT_FAILURE
    assert result.stdout == ""
    assert result.stderr == "connectd: HTTP 404: Connector ghost/1 not found\n"


def test_create_errors(serve, tmp_path):
    url = serve().url
    source = _source_file(tmp_path, initial_state="STOPPED")
    assert connectd("connectors", "create", str(source), url=url).returncode == EXIT_OK
    again = connectd("connectors", "create", str(source), url=url)
    assert (again.returncode, again.stderr) == (EXIT_FAILURE, "connectd: HTTP 409: Connector src already exists\n")

    invalid = tmp_path / "sink.properties"
    invalid.write_text("name=sink\nconnector.class=FileStreamSink\ntasks.max=zero\ntopics=a\ntopics.regex=b.*\n")
    refused = connectd("connectors", "create", str(invalid), url=url)
    assert refused.returncode == EXIT_FAILURE
    lines = refused.stderr.splitlines()
    assert lines[0].startswith("connectd: HTTP 400: Connector configuration is invalid")
    assert any("tasks.max='zero'" in line for line in lines[1:]) and all(l.startswith("connectd: ") for l in lines)

    # A file that cannot be used is a configuration error (78), found before any request.
    nameless = tmp_path / "nameless.properties"
    nameless.write_text("connector.class=FileStreamSource\n")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    absent = tmp_path / "absent.json"
    for path, words in ((nameless, "name is required"), (broken, "not JSON"), (absent, "cannot read")):
        result = connectd("connectors", "create", str(path), url=url)
        assert result.returncode == EXIT_CONFIG and f"{path}: {words}" in result.stderr, result.stderr
    bad_offsets = connectd("connectors", "offsets", "src", "--set", str(broken), url=url)
    assert bad_offsets.returncode == EXIT_CONFIG and "not JSON" in bad_offsets.stderr
    refused_offsets = tmp_path / "refused.json"
    refused_offsets.write_text('{"offsets": []}')
    result = connectd("connectors", "offsets", "src", "--set", str(refused_offsets), url=url)
    assert result.returncode == EXIT_FAILURE and result.stderr.startswith("connectd: HTTP 400: ")


def test_server_down_says_where_and_exits_1():
    url = f"http://127.0.0.1:{free_port()}"
    result = connectd("connectors", "list", "--url", url)
    assert result.returncode == EXIT_FAILURE and result.stdout == ""
    assert result.stderr == f"connectd: cannot reach the connectd REST API at {url}: Connection refused\n"


def test_url_comes_from_the_option_then_the_environment(serve):
    url = serve().url
    assert answer(connectd("connectors", "list", url=url)) == []
    down = f"http://127.0.0.1:{free_port()}"
    assert answer(connectd("connectors", "list", "--url", url, url=down)) == []
    assert connectd("connectors", "list", url=down).returncode == EXIT_FAILURE


def test_usage_errors_exit_2():
    for args in (["connectors"], ["connectors", "status"], ["connectors", "list", "--expand", "everything"],
                 ["connectors", "offsets", "x", "--reset", "--set", "f.json"],
                 ["connectors", "list", "--url", "localhost:8083"]):
        result = connectd(*args)
        assert result.returncode == EXIT_USAGE, (args, result.stderr)
        assert "usage: connectd connectors" in result.stderr


def test_basic_auth(serve, tmp_path):
    users = tmp_path / "users.properties"
    users.write_text("admin=admin-secret-4d1\n")
    url = serve({"rest.extension.classes": BASIC_AUTH_EXTENSION,
                 "rest.basic.auth.credentials.file": str(users)}).url
    anonymous = connectd("connectors", "list", url=url)
    assert (anonymous.returncode, anonymous.stderr) == (
        EXIT_FAILURE, "connectd: HTTP 401: User cannot access the resource.\n")
    admin = connectd("connectors", "list", "--user", "admin", url=url, CONNECTD_PASSWORD="admin-secret-4d1")
    assert answer(admin) == []
    wrong = connectd("connectors", "list", "--user", "admin", url=url, CONNECTD_PASSWORD="guess")
    assert wrong.returncode == EXIT_FAILURE and "HTTP 401" in wrong.stderr and "guess" not in wrong.stderr
    no_password = connectd("connectors", "list", "--user", "admin", url=url)  # no terminal to ask on
    assert no_password.returncode == EXIT_USAGE and "CONNECTD_PASSWORD" in no_password.stderr


@pytest.fixture
def certificate(tmp_path) -> dict[str, Path]:
    """A self-signed certificate for 127.0.0.1, and the PEM key store holding it with its key."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", "key.pem", "-out", "cert.pem", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], cwd=tmp_path, check=True, capture_output=True)
    store = tmp_path / "store.pem"
    store.write_text((tmp_path / "key.pem").read_text() + (tmp_path / "cert.pem").read_text())
    return {"cert": tmp_path / "cert.pem", "store": store}


def test_https_needs_the_ca_or_insecure(serve, certificate, tmp_path):
    url = serve({"listeners": "https://127.0.0.1:0", "listeners.https.ssl.keystore.type": "PEM",
                 "listeners.https.ssl.keystore.location": str(certificate["store"])}).url
    assert url.startswith("https://")
    untrusted = connectd("connectors", "list", url=url)
    assert untrusted.returncode == EXIT_FAILURE
    assert "certificate" in untrusted.stderr and "--cacert" in untrusted.stderr and "--insecure" in untrusted.stderr
    assert answer(connectd("connectors", "list", "--cacert", str(certificate["cert"]), url=url)) == []
    assert answer(connectd("connectors", "list", "--insecure", url=url)) == []
    missing = connectd("connectors", "list", "--cacert", str(tmp_path / "nope.pem"), url=url)
    assert missing.returncode == EXIT_CONFIG and "nope.pem: cannot load the CA certificates" in missing.stderr


def _in_state(wait_until: Any, url: str, name: str, state: str) -> dict:
    """The status of *name* once the connector and its tasks (one at least) are all in *state*."""
    def all_in_state(status: dict) -> bool:
        states = [status["connector"]["state"], *(t["state"] for t in status["tasks"])]
        return set(states) == {state} and len(states) > 1

    return wait_until(lambda: answer(connectd("connectors", "status", name, url=url)), f"{name} and its tasks {state}",
                      until=all_in_state, timeout=90)


@pytest.mark.integration
def test_running_connector_pause_resume_restart_stop(serve, spark, broker, topic_name, tmp_path, wait_until):
    url = serve(spark=spark, broker=broker).url
    (tmp_path / "in.txt").write_text("a\nb\n", encoding="utf-8")
    properties = tmp_path / "src.properties"
    properties.write_text(f"name=src\nconnector.class=FileStreamSource\nfile={tmp_path / 'in.txt'}\n"
                          f"topic={topic_name}\n")
    assert answer(connectd("connectors", "create", str(properties), url=url))["tasks"] == [{"connector": "src",
                                                                                          "task": 0}]
    assert _in_state(wait_until, url, "src", "RUNNING")["connector"]["state"] == "RUNNING"

    for verb, state in (("pause", "PAUSED"), ("resume", "RUNNING")):
        result = connectd("connectors", verb, "src", url=url)
        assert (result.returncode, result.stdout) == (EXIT_OK, "")
        assert _in_state(wait_until, url, "src", state)["connector"]["state"] == state

    restarted = answer(connectd("connectors", "restart", "src", "--include-tasks", url=url))
    assert restarted["name"] == "src" and len(restarted["tasks"]) == 1
    alone = connectd("connectors", "restart", "src", url=url)
    assert (alone.returncode, alone.stdout) == (EXIT_OK, "")
    _in_state(wait_until, url, "src", "RUNNING")

    read = {"offsets": [{"partition": {"filename": str(tmp_path / "in.txt")}, "offset": {"position": 4}}]}
    wait_until(lambda: answer(connectd("connectors", "offsets", "src", url=url)), "src's offset after the last line",
               until=lambda offsets: offsets == read, timeout=60)
    busy = connectd("connectors", "offsets", "src", "--reset", url=url)  # only while STOPPED
    assert busy.returncode == EXIT_FAILURE and busy.stderr.startswith("connectd: HTTP 400: Connectors must be in")
    assert connectd("connectors", "stop", "src", url=url).returncode == EXIT_OK
    assert answer(connectd("connectors", "status", "src", url=url))["connector"]["state"] == "STOPPED"
    assert answer(connectd("connectors", "offsets", "src", url=url)) == read
    assert "reset" in answer(connectd("connectors", "offsets", "src", "--reset", url=url))["message"]
    assert connectd("connectors", "delete", "src", url=url).returncode == EXIT_OK
    assert answer(connectd("connectors", "list", url=url)) == []
