"""`connectd broker` and `connectd quickstart` as a user runs them: real processes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from connectd.broker import free_port

pytestmark = pytest.mark.integration

CONNECTD = [sys.executable, "-m", "connectd.cli"]


def read_line_until(process: subprocess.Popen, needle: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return line
    raise AssertionError(f"{needle!r} not seen within {timeout}s; output: {''.join(seen)!r}")


def test_broker_verb_serves_until_sigterm():
    port = free_port()
    process = subprocess.Popen([*CONNECTD, "broker", "--port", str(port)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        line = read_line_until(process, "broker listening", timeout=30)
        assert f"127.0.0.1:{port}" in line
        from confluent_kafka.admin import AdminClient

        metadata = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=10)
        assert metadata.brokers
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_quickstart_shows_the_worker_up_and_stops_cleanly():
    result = subprocess.run([*CONNECTD, "quickstart"], capture_output=True, text=True, timeout=120,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr + result.stdout
    assert "embedded broker up on 127.0.0.1:" in result.stdout
    assert "is up: Kafka cluster" in result.stdout
    assert "broker and worker stopped" in result.stdout
