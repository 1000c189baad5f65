"""When a source task's host process polls, and when its run is over (the states in
connectd.runtime.source.host's docstring); its batches are in tests/integration/test_source_query.py."""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from connectd.runtime.source import host as host_module
from connectd.runtime.source import wire
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


class _Buffered:
    def __init__(self) -> None:
        self.data = True

    def has_data(self) -> bool:
        return self.data


def test_freed_memory_goes_back_once_after_records_and_never_while_records_wait(run_dir, monkeypatch):
    trims: list[int] = []
    monkeypatch.setattr(host_module, "_malloc_trim", lambda: trims.append(1))
    host = task_host(run_dir)
    assert not host.give_back() and not trims  # no record went through yet
    host._churned = True
    host._in_batch = True
    assert not host.give_back()  # a batch is producing
    host._in_batch = False
    host.task._poller = buffered = _Buffered()
    assert not host.give_back()  # the next batch's records are buffered: their pages are reused
    buffered.data = False
    assert host.give_back() and trims == [1]
    assert not host.give_back() and trims == [1]  # once per records that went through


def _resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "malloc_trim"), reason="glibc's malloc_trim only")
def test_malloc_trim_gives_the_pages_of_freed_small_blocks_back():
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(300) for _ in range(200_000)]  # ≈60 MiB as librdkafka's message copies take it
    for block in blocks:
        ctypes.memset(block, 1, 300)
    kept = set(blocks[::500])  # a few live blocks keep the heap's top, as the next batch's would
    for block in blocks:
        if block not in kept:
            libc.free(block)
    before = _resident_bytes()
    host_module._malloc_trim()
    try:
        assert before - _resident_bytes() > 30 * 2**20
    finally:
        for block in kept:
            libc.free(block)


def test_a_stopping_query_waits_for_live_registrations_only_and_clears_a_killed_processs(tmp_path, wait_until):
    from connectd.runtime.spark.queries import live_registrations

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    # Killed and not reaped yet by its parent (here, this test, until it waits): a zombie, dead all the same.
    unreaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    unreaped.kill()
    instances = tmp_path / "instances"
    instances.mkdir()
    try:
        stat = f"/proc/{unreaped.pid}/stat"
        wait_until(lambda: Path(stat).read_bytes(), "the killed process a zombie", until=lambda text: b") Z " in text,
                   timeout=10)
        for name in (f"source-{dead.pid}", f"source-{unreaped.pid}", f"planner-{os.getpid()}", str(os.getpid() + 0),
                     "not-a-pid"):
            (instances / name).touch()
        assert sorted(p.name for p in live_registrations(instances)) == sorted(
            [f"planner-{os.getpid()}", str(os.getpid()), "not-a-pid"])
    finally:
        unreaped.wait()
    assert not (instances / f"source-{dead.pid}").exists()  # a SIGKILLed host never unregisters: cleared
    assert not (instances / f"source-{unreaped.pid}").exists()
    assert live_registrations(tmp_path / "gone") == []


def _dead_host_files(directory: Path, name: str) -> Path:
    """A socket file nothing listens on, and its lock: what a SIGKILLed host leaves."""
    path = directory / name
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.close()
    Path(f"{path}.lock").touch()
    return path


def test_a_starting_host_sweeps_the_files_of_dead_hosts_only(tmp_path):
    dead = _dead_host_files(tmp_path, "source-dead.sock")
    starting = _dead_host_files(tmp_path, "source-starting.sock")  # its host holds the lock until it listens
    live = tmp_path / "source-live.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(live))
    listener.listen(1)
    Path(f"{live}.lock").touch()
    (tmp_path / "offsets.json.lock").touch()  # not a host's
    with listener, open(f"{starting}.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert wire.sweep(str(tmp_path)) == [str(dead)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "offsets.json.lock", "source-live.sock", "source-live.sock.lock", "source-starting.sock",
        "source-starting.sock.lock"]


def test_a_spawner_waiting_on_a_lock_file_that_is_removed_locks_the_one_at_its_path_after(tmp_path, wait_until):
    path = tmp_path / "source-x.sock.lock"
    first = open(path, "a")
    fcntl.flock(first, fcntl.LOCK_EX)
    taken = []
    waiter = threading.Thread(target=lambda: taken.append(wire._locked(str(path))))
    waiter.start()

    def waiter_opened_it() -> bool:  # and blocks on its lock
        return sum(os.path.realpath(f"/proc/self/fd/{fd}") == str(path) for fd in os.listdir("/proc/self/fd")) > 1

    try:
        wait_until(waiter_opened_it, "the waiter to open the lock file", timeout=10, interval=0.01)
        os.unlink(path)  # as a host ending removes it, under its lock (wire.remove_locked)
        first.close()
        waiter.join(10)
        assert not waiter.is_alive()
        assert os.fstat(taken[0].fileno()).st_ino == os.stat(path).st_ino  # the lock file at the path now
    finally:
        first.close()
        for lock in taken:
            lock.close()


def test_a_host_ending_removes_its_socket_and_lock(tmp_path):
    path = _dead_host_files(tmp_path, "source-ended.sock")
    wire.remove_locked(str(path))
    assert list(tmp_path.iterdir()) == []
