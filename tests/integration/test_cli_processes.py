"""`connectd broker` and `connectd quickstart` as a user runs them: real processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request

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


def test_broker_verb_killed_takes_its_broker_along_and_frees_the_port(wait_until):
    import os
    import socket

    port = free_port()
    process = subprocess.Popen([*CONNECTD, "broker", "--port", str(port)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        read_line_until(process, "broker listening", timeout=30)
        children = [int(pid) for pid in
                    open(f"/proc/{process.pid}/task/{process.pid}/children").read().split()]
        assert children, "the broker runs as a child process"
        process.kill()  # SIGKILL: no handler, no atexit
        process.wait(10)

        def port_free() -> bool:
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                    return True
                except OSError:
                    return False

        wait_until(port_free, f"port {port} to be free again", timeout=30)
        wait_until(lambda: [pid for pid in children if os.path.exists(f"/proc/{pid}")], "the broker to be gone",
                   until=lambda alive: not alive, timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_quickstart_moves_generated_records_to_a_file_and_stops_cleanly(tmp_path):
    result = subprocess.run([*CONNECTD, "quickstart", "--dir", str(tmp_path), "--duration", "15"],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    assert "embedded broker up on 127.0.0.1:" in result.stdout
    assert "records moved:" in result.stdout
    assert "REST API on http://127.0.0.1:" in result.stdout
    assert f"broker and worker stopped; the records are in {tmp_path / 'users.jsonl'}" in result.stdout
    lines = (tmp_path / "users.jsonl").read_text().splitlines()
    assert lines, "no record reached the file"
    first = json.loads(lines[0])
    assert set(first) == {"registertime", "userid", "regionid", "gender"}
    offsets = json.loads((tmp_path / "connect.offsets").read_text())
    assert offsets["offsets"][0]["key"][0] == "quickstart-datagen"
    # A clean console: the quickstart's own lines, then the worker's (JVM and Spark's Python processes
    # included) as JSON lines naming the worker, warnings only for what went wrong; no progress bars.
    own = ("embedded broker up", "starting a standalone worker", "worker is up", "records moved:", "broker and worker")
    lines = [line for line in (result.stdout + result.stderr).splitlines()
             if not line.startswith(own) and line != "WARNING: Using incubator modules: jdk.incubator.vector"]
    events = [json.loads(line) for line in lines]  # every one a JSON line
    assert all(event.get("worker") for event in events), [e for e in events if not e.get("worker")]
    assert [e for e in events if e["level"] not in ("info", "debug")] == []
    assert {(e["connector"], e["task"]) for e in events if e.get("task") is not None} == {
        ("quickstart-datagen", 0), ("quickstart-file-sink", 0)}


def test_the_rest_api_answers_while_spark_starts_and_a_write_waits_for_the_herder(broker, topic_name, tmp_path,
                                                                                 worker_config, wait_until,
                                                                                 connectd_processes):
    import json
    import urllib.error
    import urllib.request

    url = f"http://127.0.0.1:{free_port()}"
    process = connectd_processes.start("standalone", worker_config.file(listeners=url))

    def health() -> tuple[int, dict] | None:
        if process.poll() is not None:
            raise AssertionError(f"connectd exited with {process.returncode}:\n{connectd_processes.output()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as answer:
            return answer.code, json.load(answer)
        except OSError:
            return None  # not listening yet

    first = wait_until(health, "the REST API to answer", timeout=60)
    assert first == (503, {"status": "starting", "message": "Worker is still starting up."})
    # A write made meanwhile waits for the herder, then is done.
    config = {"connector.class": "FileStreamSink", "topics": topic_name, "file": str(tmp_path / "out.txt")}
    request = urllib.request.Request(f"{url}/connectors", data=json.dumps({"name": "early", "config": config}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=120) as answer:
        assert answer.status == 201
    assert health()[0] == 200
    assert connectd_processes.terminate(process) == 0


def test_a_worker_under_systemd_says_ready_pings_the_watchdog_and_says_stopping(broker, worker_config, wait_until,
                                                                               connectd_processes, notify_socket):
    url = f"http://127.0.0.1:{free_port()}"
    process = connectd_processes.start("standalone", worker_config.file(listeners=url),
                                       env={"NOTIFY_SOCKET": notify_socket.address, "WATCHDOG_USEC": "2000000"})
    seen: list[dict[str, str]] = []

    def received() -> list[dict[str, str]]:
        if process.poll() is not None:
            raise AssertionError(f"connectd exited with {process.returncode}:\n{connectd_processes.output()[-3000:]}")
        seen.extend(notify_socket.messages())
        return seen

    wait_until(received, "READY=1", until=lambda messages: any("READY" in m for m in messages), timeout=120)
    ready = next(m for m in seen if "READY" in m)
    assert ready["STATUS"] == "0 connectors, 0 of 0 tasks running" and ready["MAINPID"] == str(process.pid)
    with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:  # ready means serving
        assert answer.status == 200
    # every second (half of WATCHDOG_USEC) while healthy, with the status
    wait_until(received, "two watchdog pings after READY=1",
               until=lambda messages: sum("WATCHDOG" in m for m in messages[messages.index(ready):]) >= 2)
    assert any("STATUS" in m and "READY" not in m for m in seen)
    assert connectd_processes.terminate(process) == 0
    seen.extend(notify_socket.messages())
    assert {"STOPPING": "1", "STATUS": "stopping: tasks are finishing their batches"} in seen
    # nothing from Spark's processes: the variables were not passed on
    assert all(set(m) <= {"READY", "STATUS", "MAINPID", "WATCHDOG", "STOPPING"} for m in seen)
    # what systemd's journal gets: JSON lines, Spark's JVM's as the worker's own (but for the JVM's
    # own notice before logging starts)
    lines = [line for line in connectd_processes.output().splitlines()
             if line and not line.startswith("WARNING: Using incubator modules")]
    parsed = [json.loads(line) for line in lines]
    assert all({"timestamp", "level", "event"} <= set(entry) for entry in parsed)
    assert any(entry["event"] == "herder_started" for entry in parsed)
