"""When a source task's host process polls, and when its run is over (the states in
connectd.runtime.source.host's docstring); its batches are in tests/integration/test_source_query.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from connectd.runtime.source import host as host_module
from connectd.runtime.source.host import TaskHost


def task_host(run_dir, watched: int | None = None) -> TaskHost:
    spec = {"connector": "c", "task_id": 0, "task_class": "recording_source.CountingSourceTask", "task_config": {},
            "connector_config": {}, "worker_config": {}, "offsets": {"kind": "file", "path": "unused"}, "run": "r"}
    return TaskHost({"task.secret.spec": json.dumps(spec), "stop.file": str(run_dir / "stop"),
                     "pause.file": str(run_dir / "pause")}, watched)


def idle_for(host: TaskHost, seconds: float) -> TaskHost:
    host.last_request = host._batch_ended = time.monotonic() - seconds
    return host


@pytest.fixture
def run_dir(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    return path


def test_beside_the_run_directory_an_idle_source_runs_on_until_its_run_ends(run_dir):
    host = idle_for(task_host(run_dir), host_module.IDLE_STOP_S * 10)
    assert host.local and not host.run_over()  # no batch is planned for an idle source: idleness ends nothing
    (run_dir / "stop").touch()
    assert host.run_over()


def test_a_stop_file_ends_the_run_once_no_request_came_for_a_while(run_dir):
    host = task_host(run_dir)
    (run_dir / "stop").touch()
    assert not host.run_over()  # the stop and final batches are on their way
    assert idle_for(host, host_module.RUN_OVER_S + 1).run_over()


def test_the_run_directory_gone_ends_the_run(run_dir):
    host = task_host(run_dir)
    run_dir.rmdir()
    assert host.run_over()


def test_without_the_run_directory_here_the_run_ends_after_a_while_without_requests(tmp_path):
    host = task_host(tmp_path / "elsewhere")  # a driver on another host
    assert not host.local
    assert not idle_for(host, 1).run_over()
    assert idle_for(host, host_module.IDLE_STOP_S + 1).run_over()


def test_the_executors_daemon_gone_ends_the_run(run_dir):
    daemon = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        host = task_host(run_dir, watched=daemon.pid)
        assert not host.run_over()
    finally:
        daemon.kill()
        daemon.wait()
    assert host.run_over()


def test_the_poll_thread_waits_while_a_batch_polls_and_while_paused(run_dir):
    host = task_host(run_dir)
    assert not host.held()
    host._polling_here = True
    assert host.held() and not host.halted()
    host._polling_here = False
    (run_dir / "pause").touch()
    assert host.held() and host.halted()


def test_without_the_run_directory_here_the_poll_thread_stops_some_time_after_the_last_batch(tmp_path):
    host = task_host(tmp_path / "elsewhere")
    assert not host.held()
    assert idle_for(host, host_module.PREFETCH_S + 1).held()
