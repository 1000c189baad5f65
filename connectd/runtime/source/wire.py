"""What crosses between the worker, Spark's planner of a source task, a batch's ``read()`` on an
executor and the task's own process there (:mod:`connectd.runtime.source.host`): the readers'
option and result schema, the host's Unix socket, and the client side of its requests.

Spark's Python workers import this module to plan and read a source task's batches, so it imports
the standard library alone: those processes stay small (no Kafka client, no logging set-up, no
plugin API), four per running source task on a local master.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import IO, Any

__all__ = ["EXACTLY_ONCE", "RESULT_SCHEMA", "SPEC_OPTION", "exchange", "prepare", "recv", "send", "remove_locked",
           "socket_path", "sweep", "take_stored", "transactional_id"]

#: The reader option holding the task's spec (JSON, secrets in it: Spark redacts option values whose
#: key matches spark.redaction.regex).
SPEC_OPTION = "task.secret.spec"
#: The spec's key for a task delivering exactly once: ``{"transactional_id": …, "boundary": "poll" or
#: "interval", "interval_ms": …}``
#: (:mod:`connectd.runtime.source.transactions`).
EXACTLY_ONCE = "exactly_once"
#: What reading a batch yields: each source partition's last offset, then the record count with
#: what says the batch was written (``stored``: JSON, ``{"seqs": […], "acks": […] or null, "stats":
#: {…}}``, the last what the task did while the batch was polled, for its metrics).
RESULT_SCHEMA = "source_partition string, source_offset string, records long, stored string"
#: How long a batch's read() waits for a new host to listen.
_SPAWN_WAIT_S = 60.0
_HEADER = struct.Struct(">I")


def transactional_id(group_id: str, connector: str, task: int) -> str:
    """An exactly-once source task's ``transactional.id``, Kafka Connect's: the same in every
    generation of the connector's tasks, so a task's successor fences it (:mod:`connectd.cluster.zombies`)."""
    return f"{group_id}-{connector}-{task}"


def take_stored(directory: str | None) -> Iterator[dict[str, Any]]:
    """What the worker wrote in *directory* for each batch it stored since the last look, in batch
    order (``<batch id, 12 digits>-<n>.json``), each file removed as it is read; nothing more once
    the directory is gone (the query failed and was discarded). A file still being written (not
    yet renamed to ``.json``) waits for the next look."""
    if directory is None:
        return
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return
    for name in names:
        if not name.endswith(".json"):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as handle:
                stored = json.load(handle)
            os.unlink(path)
        except FileNotFoundError:
            return
        yield stored


def socket_path(key: str) -> str:
    """The Unix socket of the host for *key* (run, connector, task) on this host, in a directory
    only this user may enter."""
    directory = os.path.join(tempfile.gettempdir(), f"connectd-{os.getuid()}")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    if os.stat(directory).st_uid != os.getuid():
        raise RuntimeError(f"{directory} belongs to another user: source task hosts cannot listen there")
    return os.path.join(directory, f"source-{hashlib.sha256(key.encode()).hexdigest()[:24]}.sock")


def send(conn: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message).encode()
    conn.sendall(_HEADER.pack(len(data)) + data)


def recv(conn: socket.socket) -> dict[str, Any] | None:
    header = _recv_exactly(conn, _HEADER.size)
    if header is None:
        return None
    body = _recv_exactly(conn, _HEADER.unpack(header)[0])
    return None if body is None else json.loads(body)


def _recv_exactly(conn: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# --- the client: a batch's read(), in an executor's Python worker ---

_spawned: list[subprocess.Popen[bytes]] = []


def exchange(key: str, options_json: str, request: dict[str, Any]) -> dict[str, Any]:
    """Send *request* to the host of *key*, spawning it (with *options_json*, the reader's options)
    for a ``run`` request if none listens; ``{}`` for another request when none does.

    :raises RuntimeError: the host failed the batch (its error and trace), or ended without a reply.
    """
    path = socket_path(key)
    conn = _connect(path)
    if conn is None:
        if request["mode"] != "run":
            return {}  # no task here: nothing to settle or stop
        conn = _spawn_and_connect(path, options_json)
    with conn:
        send(conn, request)
        reply = recv(conn)
    if reply is None:
        raise RuntimeError(f"the process of source task {key.partition('|')[2]} ended during batch "
                           f"{request['seq']} (its log says why)")
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply


def _connect(path: str) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        return None
    return conn


def _spawn_and_connect(path: str, options_json: str) -> socket.socket:
    """Start the host unless one listens or is starting (a lock beside the socket, which a host holds
    until it listens) and connect once it listens."""
    # The host outlives the Python worker that starts it (Spark ends idle ones), not the
    # executor: it watches the worker's parent, Spark's daemon (or the executor's JVM).
    conn, process = _start_unless_listening(path, options_json, os.getppid(), own_session=True)
    if conn is not None:
        return conn
    assert process is not None
    deadline = time.monotonic() + _SPAWN_WAIT_S
    while True:
        conn = _connect(path)
        if conn is not None:
            return conn
        if process.poll() is not None:
            raise RuntimeError(f"the source task's process ended with code {process.returncode} before it "
                               "listened (its log says why)")
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the source task's process did not listen within {_SPAWN_WAIT_S:.0f} s")
        time.sleep(0.01)


def _start_unless_listening(path: str, options_json: str, watched: int,
                            own_session: bool) -> tuple[socket.socket | None, subprocess.Popen[bytes] | None]:
    """A connection to the host listening on *path*, or else the host started (unless another is
    starting: a lock beside the socket, which a starting host holds until it listens).

    :param watched: the process the host watches, and ends with.
    :param own_session: out of the spawner's process group: Spark's daemon ends its group with
        SIGHUP as it stops, before the host had a chance to stop its task (which it does once it
        sees the daemon gone). A host the worker starts stays in the worker's group, with it.
    """
    for process in list(_spawned):  # reap hosts that ended
        if process.poll() is not None:
            _spawned.remove(process)
    with _locked(f"{path}.lock") as lock:
        conn = _connect(path)
        if conn is not None:
            return conn, None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a host that died without removing it
        process = subprocess.Popen(
            [sys.executable, "-m", "connectd.runtime.source.host", path, str(watched), str(lock.fileno())],
            stdin=subprocess.PIPE, start_new_session=own_session, pass_fds=(lock.fileno(),))
    _spawned.append(process)
    assert process.stdin is not None
    with process.stdin:
        process.stdin.write(options_json.encode())
    return None, process


def _locked(path: str) -> IO[str]:
    """The lock file *path*, open and locked (exclusively, blocking). A host ending, or the sweep of
    a dead one's files (:func:`sweep`), removes the file under its lock: a lock taken on a file no
    longer at *path* is let go and taken again on the one there now."""
    while True:
        lock = open(path, "a")  # noqa: SIM115 - returned open
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino:
                return lock
        except FileNotFoundError:
            pass
        lock.close()


def remove_locked(path: str) -> None:
    """Remove the socket *path* and its lock file, under the lock (as :func:`_locked` expects)."""
    with contextlib.suppress(FileNotFoundError), _locked(f"{path}.lock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.unlink(f"{path}.lock")


def sweep(directory: str) -> list[str]:
    """Remove the files of the hosts in *directory* that died without removing them (SIGKILL, the
    host's machine out of memory): a socket nothing listens on, whose lock no starting host holds.
    Returns the sockets removed."""
    removed = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return removed
    for name in names:
        if not (name.startswith("source-") and name.endswith(".sock.lock")):
            continue
        lock_path = os.path.join(directory, name)
        path = lock_path.removesuffix(".lock")
        try:
            lock = open(lock_path, "a")  # noqa: SIM115 - closed below
        except OSError:
            continue
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a host is starting (it holds the lock until it listens)
            try:
                if os.stat(lock_path).st_ino != os.fstat(lock.fileno()).st_ino:
                    continue  # removed meanwhile, perhaps made again: not the file looked at
            except FileNotFoundError:
                continue
            conn = _connect(path)
            if conn is not None:
                conn.close()
                continue  # a host listens
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            os.unlink(lock_path)
            removed.append(path)
    return removed


def prepare(key: str, options_json: str) -> None:
    """Start the host of *key* now, on this host, ahead of its first batch: with executors on the
    driver's host, its start-up (imports, the task's ``start()``, a first ``poll()``) then overlaps
    Spark's start of the query. It watches this process. Returns at once."""
    conn, _ = _start_unless_listening(socket_path(key), options_json, os.getpid(), own_session=False)
    if conn is not None:
        conn.close()
