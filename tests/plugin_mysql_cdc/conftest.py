"""A MariaDB server of the tests' own with the binlog on (the machine's shared one has it off).

Installed from the machine's MariaDB packages into a temporary directory,
listening on a free port of 127.0.0.1, and stopped by its PID at the end of
the session.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connectd.broker import free_port


@dataclass
class BinlogMariaDB:
    port: int
    pid: int
    directory: Path

    def connect(self, database: str | None = None) -> Any:
        import pymysql

        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", database=database, autocommit=True)

    def execute(self, *statements: str) -> None:
        connection = self.connect()
        try:
            with connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        finally:
            connection.close()

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        connection = self.connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute(sql)
                return [tuple(row) for row in cursor.fetchall()]
        finally:
            connection.close()

    def config(self, **overrides: str) -> dict[str, str]:
        """A CDC connector config for this server; *overrides* as keys with dots (``snapshot.mode``)."""
        return {"database.hostname": "127.0.0.1", "database.port": str(self.port), "database.user": "root",
                "database.server.id": "5401", "topic.prefix": "cdc", "poll.interval.ms": "200", **overrides}


def _stop(process: subprocess.Popen, timeout: float = 30.0) -> None:
    """SIGTERM the server by its PID (a clean shutdown), SIGKILL if it is still there after *timeout*."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@pytest.fixture(scope="session")
def binlog_mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BinlogMariaDB]:
    server = shutil.which("mariadbd", path="/usr/sbin:/usr/bin:" + os.environ.get("PATH", ""))
    install = shutil.which("mariadb-install-db")
    if server is None or install is None:
        pytest.fail("MariaDB's server (mariadbd, mariadb-install-db) is not installed on this machine")
    directory = tmp_path_factory.mktemp("mariadb")
    data = directory / "data"
    subprocess.run([install, "--no-defaults", f"--datadir={data}", "--user=root", "--skip-test-db",
                    "--auth-root-authentication-method=normal"], check=True, capture_output=True, timeout=120)
    port = free_port()
    process = subprocess.Popen(
        [server, "--no-defaults", f"--datadir={data}", "--user=root", f"--port={port}", "--bind-address=127.0.0.1",
         f"--socket={directory / 'mariadb.sock'}", f"--pid-file={directory / 'mariadb.pid'}",
         f"--log-bin={data / 'binlog'}", "--server-id=1", "--binlog-format=ROW", "--binlog-row-image=FULL",
         "--binlog-row-metadata=FULL", "--default-time-zone=+00:00", f"--log-error={directory / 'error.log'}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    mariadb = BinlogMariaDB(port, process.pid, directory)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                mariadb.query("SELECT 1")
                break
            except Exception:  # noqa: BLE001 - not up yet
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (directory / "error.log").read_text() if (directory / "error.log").exists() else ""
                    pytest.fail(f"the test MariaDB did not start:\n{log[-2000:]}")
                time.sleep(0.1)
        yield mariadb
    finally:
        _stop(process)


@pytest.fixture
def database(binlog_mariadb: BinlogMariaDB) -> Iterator[str]:
    """A database of this test's own on the binlog server; dropped afterwards."""
    name = f"shop_{uuid.uuid4().hex[:8]}"
    binlog_mariadb.execute(f"CREATE DATABASE {name}")
    yield name
    binlog_mariadb.execute(f"DROP DATABASE IF EXISTS {name}")
