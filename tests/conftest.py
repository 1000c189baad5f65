"""Fixtures and helpers shared by the whole suite.

``broker`` starts one embedded tansu broker (see :mod:`connectd.broker`) on a
free loopback port the first time a test asks for it, and stops it by PID at
the end of the session. Tests share it, so each one works in topics of its
own: ask for ``topic_name``.

The helpers are fixtures that hand back a function: test modules do not
import this file (pytest does, under ``--import-mode=importlib`` with a module
name that depends on the rootdir), and a fixture is at hand in other fixtures
too:

- ``wait_until`` / ``wait_until_async``: poll a condition until it holds or a
  deadline passes, then fail saying what was awaited and the last value seen.
  The only place in the suite that sleeps to wait for something.
- ``consume_records``: read a topic of the session broker from the beginning,
  N records or up to its end, with a deadline.
- ``spark_standalone``: a real Spark standalone cluster (master and one
  worker, from pip's pyspark) on loopback for the session, stopped by
  killing its process groups; ``spark_standalone_pair`` one with two Spark
  workers, for a module.
- ``tests/support`` is on ``sys.path`` and on ``PYTHONPATH`` (so Spark's
  Python workers import it too): sink tasks that record their calls.
- ``worker_config``: a minimal worker config (standalone or distributed) in
  the test's ``tmp_path``, pointing at the session broker when the test uses
  it; each test adds or overrides its own settings.
- ``notify_socket``: systemd's end of ``sd_notify``, a unix datagram socket in
  the test's ``tmp_path`` (:class:`NotifySocket`).
- ``cluster``: ``connectd distributed`` worker processes of one new group
  (:class:`Cluster`): started, killed, frozen, stopped by PID, and asked over
  their REST API; ``tests/support/ledger_sink.py`` writes down which worker
  wrote each record of a sink.

Workers made with ``worker_config`` keep no driver class archive
(``class.archive.dir`` empty), so no test's stop is the one that writes it;
the class archive's own tests set a directory. Any other worker (the
quickstart's) keeps it in a cache directory of the session's
(``XDG_CACHE_HOME``), never the user's.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from connectd.broker import EmbeddedBroker, free_port
from connectd.config.worker import WorkerConfig
from connectd.config.worker_keys import DRIVER_JAVA_OPTIONS

if TYPE_CHECKING:
    from confluent_kafka import Message

T = TypeVar("T")

WAIT_INTERVAL_S = 0.1

#: Test plugins' task classes (``recording_sink``), importable by Spark's Python workers too:
#: they inherit PYTHONPATH from the JVM, which inherits it from this process.
SUPPORT_DIR = Path(__file__).parent / "support"
if str(SUPPORT_DIR) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SUPPORT_DIR), os.environ.get("PYTHONPATH")) if p)
if str(SUPPORT_DIR) not in sys.path:
    sys.path.insert(0, str(SUPPORT_DIR))

_SESSION_CACHE = tempfile.mkdtemp(prefix="connectd-test-cache-")
os.environ.pop("CACHE_DIRECTORY", None)
os.environ["XDG_CACHE_HOME"] = _SESSION_CACHE


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test's node id names it whole. schemathesis's tests (tests/rest/test_rest_fuzz.py) are named
    each for its operation (``test_api_answers_as_documented[GET /]``) but all carry the function's node id,
    and pytest-xdist tells tests apart by node id: it would run the first and skip the others. (pytest 9
    keeps a node id parsed, in ``_id``; pytest 8 as a string, in ``_nodeid``.)"""
    for item in items:
        if item.parent is None or item.nodeid.endswith(f"::{item.name}"):
            continue
        nodeid = f"{item.parent.nodeid}::{item.name}"
        if hasattr(item, "_id"):
            from _pytest.nodeid import coerce_node_id
            item._id = coerce_node_id(nodeid)
        else:
            item._nodeid = nodeid


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keeps each phase's report on the test (``item.rep_call``), for fixtures that add to a failure's report."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def java_program(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Callable[..., str]]:
    """``java_program(name)(*args) -> stdout``: tests/support/java/<name>.java, compiled once a
    session, run with *args* (a run that fails fails the test with its stderr). Skips where the
    machine has no JDK."""
    if shutil.which("javac") is None:
        pytest.skip("javac is needed to run the Java code these bytes are checked against")
    compiled: dict[str, Path] = {}

    def program(name: str) -> Callable[..., str]:
        if name not in compiled:
            classes = tmp_path_factory.mktemp(f"java-{name}")
            source = Path(__file__).parent / "support" / "java" / f"{name}.java"
            subprocess.run(["javac", "-d", str(classes), str(source)], check=True, capture_output=True, timeout=120)
            compiled[name] = classes

        def run(*args: object) -> str:
            done = subprocess.run(["java", "-cp", str(compiled[name]), name, *map(str, args)], capture_output=True,
                                  text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout

        return run

    return program


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Test certificates and stores (``tests/support/pki.py``): name → file."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    from pki import make_pki  # lazy: tests/support goes on sys.path above, after the imports

    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    """The session's broker; ``broker.bootstrap_servers`` is ``127.0.0.1:PORT``."""
    embedded = EmbeddedBroker(port=0, host="127.0.0.1")
    embedded.start()
    try:
        yield embedded
    finally:
        embedded.stop()


@pytest.fixture
def lasting_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                   wait_until: Callable[..., Any]) -> Iterator[EmbeddedBroker]:
    """A broker of the test's own whose records and committed offsets survive its restart: tansu's
    S3 storage, on an S3 server of the test's own (moto's, on loopback). Both stopped by PID.
    Slower than the in-memory broker, and it answers a fetch empty when the fetch's wait runs out
    before its storage has read the records."""
    import boto3

    port = free_port()
    with open(tmp_path / "s3.log", "ab") as log:
        s3 = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        credentials = {"AWS_ACCESS_KEY_ID": "connectd-test", "AWS_SECRET_ACCESS_KEY": "connectd-test",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1")

        def bucket_made() -> bool:
            try:
                client.create_bucket(Bucket="tansu")
            except Exception:  # noqa: BLE001 - not listening yet
                return False
            return True

        wait_until(bucket_made, "the S3 server to take a bucket", timeout=60)
        for key, value in {**credentials, "AWS_ENDPOINT": endpoint, "AWS_ALLOW_HTTP": "true"}.items():
            monkeypatch.setenv(key, value)  # the broker's environment, at each of its starts
        broker = EmbeddedBroker(port=0, storage="s3://tansu/", log_file=tmp_path / "broker.log")
        broker.start()
        try:
            yield broker
        finally:
            broker.stop()
    finally:
        os.killpg(s3.pid, signal.SIGKILL)
        s3.wait(30)


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name no other test uses, starting with the test's name for logs."""
    stem = "".join(c if c.isalnum() else "-" for c in request.node.name)[:40].strip("-")
    return f"test-{stem}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    """One SparkSession for every test that needs Spark (starting one takes seconds).

    Built from a worker config's ``spark_conf()``, as the worker builds its
    own: local master bound to 127.0.0.1, FIFO scheduler, no web UI.
    """
    from connectd.runtime.spark.session import start_session

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = start_session(WorkerConfigs(warehouse)(**{"spark.sql.warehouse.dir": str(warehouse)}))
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandalone]:
    """A real Spark standalone cluster on loopback: a master and one worker (2 cores, 2 GiB).

    Started from the pip-installed pyspark's ``spark-class``, each in a process
    group of its own (the worker's executors join its group), and stopped by
    killing those groups. Executors run this interpreter and see ``tests/support``.
    """
    with _standalone_cluster(tmp_path_factory.mktemp("spark-standalone"), workers=1, cores=2, memory="2g") as made:
        yield made


@pytest.fixture(scope="module")
def spark_standalone_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandalone]:
    """As ``spark_standalone``, with two Spark workers of 1 core and 1 GiB each (an executor on
    each), for the tests of one module."""
    with _standalone_cluster(tmp_path_factory.mktemp("spark-standalone-pair"), workers=2, cores=1,
                             memory="1g") as made:
        yield made


@contextlib.contextmanager
def _standalone_cluster(base: Path, *, workers: int, cores: int, memory: str) -> Iterator[SparkStandalone]:
    from pyspark.find_spark_home import _find_spark_home

    home = _find_spark_home()
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(base),
           "PYSPARK_PYTHON": sys.executable}
    master_port, master_ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{master_port}"
    commands = {
        "master": ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(master_port),
                   "--webui-port", str(master_ui)],
    }
    for n in range(workers):
        commands[f"worker-{n}" if n else "worker"] = [
            "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--port", str(free_port()),
            "--webui-port", str(free_port()), "--cores", str(cores), "--memory", memory,
            "--work-dir", str(base / f"work-{n}" if n else base / "work")]
    processes: dict[str, subprocess.Popen] = {}
    try:
        for name, argv in commands.items():
            with open(base / f"{name}.log", "ab") as log:
                processes[name] = subprocess.Popen([os.path.join(home, "bin", "spark-class"), *argv], env=env,
                                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def alive_workers() -> int:
            for name, process in processes.items():
                if process.poll() is not None:
                    raise AssertionError(f"Spark {name} exited with {process.returncode}:\n"
                                         + (base / f"{name}.log").read_text(errors="replace")[-3000:])
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{master_ui}/json", timeout=2) as answer:
                    return int(json.load(answer).get("aliveworkers", 0))
            except (OSError, ValueError):  # not listening yet, or an empty answer while its UI starts
                return 0

        _wait_until(alive_workers, f"{workers} Spark worker(s) to register with the master",
                    until=lambda alive: alive >= workers, timeout=120)
        yield SparkStandalone(url, processes["worker"].pid, base, f"http://127.0.0.1:{master_ui}")
    finally:
        for process in processes.values():
            _stop_group(process)


@dataclass(frozen=True)
class SparkStandalone:
    """A running standalone cluster: its master URL, the (first) Spark worker's pid (its executors descend
    from it)."""

    master_url: str
    worker_pid: int
    directory: Path
    ui_url: str

    def active_applications(self) -> list[str]:
        """The ids of the applications the master runs (a stopped driver's leaves within seconds)."""
        with urllib.request.urlopen(f"{self.ui_url}/json", timeout=5) as answer:
            return [app["id"] for app in json.load(answer).get("activeapps", [])]


def _stop_group(process: subprocess.Popen, timeout: float = 20.0) -> None:
    """SIGTERM a process group started with ``start_new_session``, then SIGKILL what is left."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout)
            return
        except subprocess.TimeoutExpired:
            continue


class ConnectdProcesses:
    """``connectd`` commands a test runs as a user would: real processes, each in its own
    process group, stdout and stderr to one log file in the test's directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.started: list[subprocess.Popen] = []

    def start(self, *args: str | os.PathLike[str], env: dict[str, str] | None = None,
              log: str = "connectd.log") -> subprocess.Popen:
        with open(self.directory / log, "ab") as out:
            process = subprocess.Popen([sys.executable, "-m", "connectd.cli", *map(str, args)], stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True,
                                       env={**os.environ, **(env or {})})
        self.started.append(process)
        return process

    def run(self, *args: str | os.PathLike[str], timeout: float, env: dict[str, str] | None = None,
            log: str = "connectd.log") -> tuple[int | None, str]:
        """Run a command that is expected to end by itself: its exit code (``None`` if it still
        ran after *timeout* seconds, and was then stopped) and its output."""
        process = self.start(*args, env=env, log=log)
        try:
            code: int | None = process.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            self.terminate(process)
        return code, self.output(log)

    def terminate(self, process: subprocess.Popen, timeout: float = 60.0) -> int | None:
        """SIGTERM the command alone (a graceful stop): its exit code, or ``None`` if it did not
        exit within *timeout*; then whatever is left of its group (Spark's JVM) is killed."""
        try:
            process.send_signal(signal.SIGTERM)
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            _stop_group(process, timeout=5.0)

    def kill(self, process: subprocess.Popen, timeout: float = 60.0) -> int:
        """SIGKILL the command's whole group, Spark's JVM with it: a crash, nothing in flight finished."""
        os.killpg(process.pid, signal.SIGKILL)
        return process.wait(timeout)

    def output(self, log: str = "connectd.log") -> str:
        path = self.directory / log
        return path.read_text(errors="replace") if path.exists() else ""

    def events(self, log: str = "connectd.log") -> list[dict[str, Any]]:
        """The command's JSON log lines, parsed (Spark's and the Kafka clients' other lines left out)."""
        return [json.loads(line) for line in self.output(log).splitlines() if line.startswith("{")]


@pytest.fixture
def connectd_processes(tmp_path: Path) -> Iterator[ConnectdProcesses]:
    """Starts ``connectd`` commands (:class:`ConnectdProcesses`); any still running at the
    test's end are stopped by PID, with their process groups."""
    processes = ConnectdProcesses(tmp_path)
    yield processes
    for process in processes.started:
        if process.poll() is None:
            _stop_group(process)


class NotifySocket:
    """systemd's end of ``sd_notify``: a unix datagram socket at :attr:`address` (``NOTIFY_SOCKET``)."""

    def __init__(self, address: str) -> None:
        import socket

        self.address = address
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(address)
        self.socket.settimeout(0.2)

    def messages(self) -> list[dict[str, str]]:
        """Every datagram waiting (none: after 0.2 s), each as its ``KEY=value`` fields."""
        out = []
        while True:
            try:
                data = self.socket.recv(65536)
            except TimeoutError:
                return out
            out.append(dict(field.split("=", 1) for field in data.decode().split("\n")))


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[NotifySocket]:
    listening = NotifySocket(str(tmp_path / "notify.sock"))
    yield listening
    listening.socket.close()


# --- waiting -------------------------------------------------------------------


def _shown(value: Any, limit: int = 500) -> str:
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f"{len(value)} items" if isinstance(value, Sized) and not isinstance(value, (str, bytes)) else \
        f"{len(text)} characters"
    return f"{text[:limit]}… ({size})"


def _timed_out(what: str, timeout: float, value: Any) -> AssertionError:
    return AssertionError(f"timed out after {timeout:g}s waiting for {what}; last value seen: {_shown(value)}")


def _wait_until(condition: Callable[[], T], what: str, *, until: Callable[[T], Any] | None = None,
                timeout: float = 60.0, interval: float = WAIT_INTERVAL_S) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if until(value) if until is not None else value:
            return value
        if time.monotonic() >= deadline:
            raise _timed_out(what, timeout, value)
        time.sleep(interval)


async def _wait_until_async(condition: Callable[[], T | Awaitable[T]], what: str, *,
                            until: Callable[[T], Any] | None = None, timeout: float = 60.0,
                            interval: float = WAIT_INTERVAL_S) -> T:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if until(value) if until is not None else value:
            return value
        if loop.time() >= deadline:
            raise _timed_out(what, timeout, value)
        await asyncio.sleep(interval)


@pytest.fixture(scope="session")
def wait_until() -> Callable[..., Any]:
    """``wait_until(condition, what, *, until=None, timeout=60.0, interval=0.1)``.

    Calls ``condition()`` every *interval* seconds until its value is true (or,
    with *until*, until ``until(value)`` is) and returns that value; after
    *timeout* seconds fails with an AssertionError naming *what* was awaited and
    the last value seen. Exceptions from *condition* are not swallowed.
    """
    return _wait_until


@pytest.fixture(scope="session")
def wait_until_async() -> Callable[..., Awaitable[Any]]:
    """``await wait_until_async(condition, what, *, until=None, timeout=60.0, interval=0.1)``.

    :func:`wait_until` for a scenario running on an event loop: it sleeps with
    ``asyncio.sleep``, and *condition* may be a coroutine function.
    """
    return _wait_until_async


# --- reading topics ------------------------------------------------------------


def _consume_records(bootstrap_servers: str, topic: str, count: int | None = None, *, partitions: int | None = None,
                     timeout: float = 60.0, linger: float = 0.0) -> list[Message]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    deadline = time.monotonic() + timeout
    consumer = Consumer({
        "bootstrap.servers": bootstrap_servers,
        "group.id": f"test-reader-{uuid.uuid4().hex[:12]}",  # assign() only: the group is never joined
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 10,
        # The end of a partition is where a fetch response's high watermark says
        # it is; ListOffsets LATEST is wrong on tansu.
        "enable.partition.eof": True,
    })
    try:
        if partitions is None:
            metadata = _wait_until(lambda: consumer.list_topics(topic, timeout=10).topics[topic],
                                   f"topic {topic} to exist", until=lambda found: found.error is None,
                                   timeout=max(deadline - time.monotonic(), 0))
            partitions = len(metadata.partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        records: list[Message] = []
        at_end: set[int] = set()
        last_error = None

        def done() -> bool:
            return len(records) >= count if count is not None else len(at_end) == partitions

        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                if count is not None:
                    expected = f"expected {count}"
                else:
                    missing = sorted(set(range(partitions)) - at_end)
                    where = _reader_positions(consumer, topic, missing)
                    expected = f"expected all of them, but the end of partitions {missing} was not reached ({where})"
                error = f"; last error: {last_error}" if last_error is not None else ""
                raise AssertionError(f"topic {topic}: {len(records)} records arrived within {timeout:g}s, "
                                     f"{expected}{error}")
            for message in consumer.consume(10_000, timeout=min(left, 0.5)):
                error = message.error()
                if error is None:
                    records.append(message)
                    at_end.discard(message.partition())
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                elif error.fatal():
                    raise AssertionError(f"{topic}: reading failed: {error}")
                else:
                    last_error = error
        # Records past the goal (duplicates, stragglers) show up in what is returned.
        linger_end = time.monotonic() + linger
        while (left := linger_end - time.monotonic()) > 0:
            records += [m for m in consumer.consume(10_000, timeout=left) if m.error() is None]
        return records
    finally:
        consumer.close()


def _reader_positions(consumer: Any, topic: str, partitions: list[int]) -> str:
    """Where *consumer* stands in each of *partitions* against the ends its fetches last saw, for a failure."""
    from confluent_kafka import TopicPartition

    described = []
    for partition, position in zip(partitions, consumer.position([TopicPartition(topic, p) for p in partitions])):
        if position.offset < 0:
            described.append(f"partition {partition}: nothing fetched yet")
            continue
        _, high = consumer.get_watermark_offsets(position, cached=True)
        described.append(f"partition {partition} at offset {position.offset}, fetched high watermark {high}")
    return "; ".join(described)


@pytest.fixture(scope="session")
def consume_records(broker: EmbeddedBroker) -> Callable[..., list[Message]]:
    """``consume_records(topic, count=None, *, partitions=None, timeout=60.0, linger=0.0, bootstrap_servers=None)``.

    Reads *topic* of the session broker (or of the cluster at *bootstrap_servers*) from the beginning of each of its
    partitions (the first *partitions*, or all of them) with a consumer that
    joins no group, and returns the confluent-kafka messages in the order
    they arrived (offset order within a partition). It reads until *count*
    records have arrived, or with no *count* until the end of every partition
    as of the reading; then *linger* seconds more. It fails after *timeout*
    seconds naming the topic, how many records arrived and how many were
    expected. It may return more than *count*: what else was there, or
    arrived while lingering.
    """
    def consume(topic: str, count: int | None = None, *, bootstrap_servers: str | None = None,
                **options: Any) -> list[Message]:
        return _consume_records(bootstrap_servers or broker.bootstrap_servers, topic, count, **options)

    return consume


# --- worker configs ------------------------------------------------------------

UNREACHABLE_BOOTSTRAP = "127.0.0.1:9"  # the discard port: no Kafka answers there
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


class WorkerConfigs:
    """Minimal worker configs whose files live in *directory*.

    The settings start with what a worker of the mode needs (bootstrap,
    converters, then the offsets file or the group and its internal topics),
    then the overrides in their order, then the defaults no override replaced:
    a REST listener on a free loopback port, a small local Spark and no driver
    class archive. An
    override of ``None`` drops the key. Written to a file, the first override
    is on line 5 in standalone mode, as tests that check line numbers expect.
    """

    def __init__(self, directory: Path, bootstrap_servers: str = UNREACHABLE_BOOTSTRAP) -> None:
        self.directory = directory
        self.bootstrap_servers = bootstrap_servers

    def settings(self, mode: str = "standalone", **overrides: str | None) -> dict[str, str]:
        """The settings as a dict of strings."""
        settings: dict[str, str | None] = {
            "bootstrap.servers": self.bootstrap_servers,
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
        }
        if mode == "standalone":
            settings["offset.storage.file.filename"] = str(self.directory / "offsets.json")
        elif mode == "distributed":
            group = f"test-cluster-{uuid.uuid4().hex[:12]}"
            settings.update({
                "group.id": group,
                "config.storage.topic": f"{group}-configs",
                "offset.storage.topic": f"{group}-offsets",
                "status.storage.topic": f"{group}-status",
                # one broker
                "config.storage.replication.factor": "1",
                "offset.storage.replication.factor": "1",
                "status.storage.replication.factor": "1",
                # tansu holds a JoinGroup for half the session timeout
                "session.timeout.ms": "2000",
                "heartbeat.interval.ms": "500",
            })
        else:
            raise ValueError(f"unknown worker mode {mode!r}")
        settings.update(overrides)
        defaults = {
            "listeners": f"http://127.0.0.1:{free_port()}",
            "spark.master": "local[2]",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS,
            "class.archive.dir": "",
        }
        for key, value in defaults.items():
            settings.setdefault(key, value)
        return {key: value for key, value in settings.items() if value is not None}

    def __call__(self, mode: str = "standalone", *, source: str = "test", **overrides: str | None) -> WorkerConfig:
        """The settings as a :class:`WorkerConfig` read from *source*."""
        return WorkerConfig(self.settings(mode, **overrides), mode, source=source)

    def file(self, mode: str = "standalone", *, name: str = "worker.properties", **overrides: str | None) -> Path:
        """The settings written to ``directory/name``, one ``key=value`` a line; its path."""
        path = self.directory / name
        path.write_text("".join(f"{key}={value}\n" for key, value in self.settings(mode, **overrides).items()),
                        encoding="utf-8")
        return path


@pytest.fixture
def worker_config(request: pytest.FixtureRequest, tmp_path: Path) -> WorkerConfigs:
    """``worker_config(mode="standalone", *, source="test", **overrides) -> WorkerConfig``.

    Also ``worker_config.settings(mode, **overrides)`` for the dict and
    ``worker_config.file(mode, *, name="worker.properties", **overrides)`` for
    a properties file; see :class:`WorkerConfigs`. The offsets file is
    ``tmp_path / "offsets.json"``; ``bootstrap.servers`` is the session broker
    when the test asks for ``broker``, else an address where nothing answers.
    """
    return _worker_configs_in(tmp_path, request.getfixturevalue("broker") if "broker" in request.fixturenames else None)


def _worker_configs_in(directory: Path, broker: EmbeddedBroker | None = None) -> WorkerConfigs:
    return WorkerConfigs(directory, broker.bootstrap_servers if broker is not None else UNREACHABLE_BOOTSTRAP)


@pytest.fixture(scope="session")
def worker_config_in() -> Callable[..., WorkerConfigs]:
    """``worker_config_in(directory, broker=None)``: :func:`worker_config` for a fixture wider than a test."""
    return _worker_configs_in


# --- clusters of worker processes ----------------------------------------------

#: scheduled.rebalance.max.delay.ms of the cluster fixture: how long lost work waits for its worker.
CLUSTER_DELAY_MS = 4000
#: session.timeout.ms of the cluster fixture: the dev broker holds a JoinGroup for half of it (so
#: short), while three Spark JVMs on two cores may keep a worker from heartbeating for a second or
#: more (so not the 2 s of the plain distributed config: a worker would lose its session).
CLUSTER_SESSION_MS = 3000


class Cluster:
    """``connectd distributed`` worker processes sharing one group and its internal topics.

    Each worker is its own process group (its Spark JVM in it), so SIGKILL of the group is a
    machine dying, SIGTERM of the worker alone is systemd stopping it (KillMode=mixed), and
    SIGSTOP of the group a machine frozen. Each worker's ``CONNECTD_TEST_WORKER`` environment
    variable is its name, which Spark's processes inherit (``ledger_sink`` writes it down).
    """

    def __init__(self, directory: Path, worker_config: WorkerConfigs, wait_until: Callable[..., Any],
                 **overrides: str) -> None:
        self.directory = directory
        self.wait_until = wait_until
        # One group for every worker: the settings are made once, then each worker gets a port.
        self.settings = worker_config.settings(
            "distributed", **{"scheduled.rebalance.max.delay.ms": str(CLUSTER_DELAY_MS), "spark.master": "local[1]",
                              "session.timeout.ms": str(CLUSTER_SESSION_MS),
                              "spark.sql.shuffle.partitions": "1", "rest.advertised.host.name": "127.0.0.1",
                              "task.shutdown.graceful.timeout.ms": "10000", **overrides})
        self.settings.pop("listeners")
        self.workers: dict[str, subprocess.Popen] = {}
        self.urls: dict[str, str] = {}
        self.own_settings: dict[str, dict[str, str]] = {}  # a worker's settings over the cluster's

    def start(self, name: str, **settings: str) -> str:
        """Start worker *name* (again, with the same port, if it ran before), with *settings* over the
        cluster's; its REST URL."""
        url = self.urls.get(name) or f"http://127.0.0.1:{free_port()}"
        self.urls[name] = url
        self.own_settings[name] = settings
        path = self.directory / f"{name}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in {**self.settings, **settings, "listeners": url}.items()))
        with open(self.directory / f"{name}.log", "ab") as log:
            self.workers[name] = subprocess.Popen(
                [sys.executable, "-m", "connectd.cli", "distributed", str(path)], stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, "CONNECTD_TEST_WORKER": name})
        return url

    def wait_up(self, *names: str) -> None:
        for name in names:
            self.wait_until(lambda n=name: self._rebound(n) or self.health(n) == 200, f"worker {name} to be healthy",
                            timeout=120)

    def _rebound(self, name: str) -> bool:
        """A free port picked for a worker may be taken by another process before the worker binds
        it: the worker then exits saying so, and starts again on another port. Always false."""
        process = self.workers[name]
        log = self.directory / f"{name}.log"
        if process.poll() is not None and "address already in use" in log.read_text(errors="replace"):
            log.rename(log.with_suffix(f".{process.pid}.log"))
            del self.urls[name]
            self.start(name, **self.own_settings[name])
        return False

    def health(self, name: str) -> int | None:
        self._check_alive(name)
        try:
            return self.call(name, "GET", "/health")[0]
        except OSError:
            return None

    def call(self, name: str, method: str, path: str, body: object = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.urls[name] + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=90) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            text = exc.read()
            return exc.code, json.loads(text) if text else None

    def status(self, name: str, connector: str) -> dict[str, Any]:
        code, body = self.call(name, "GET", f"/connectors/{connector}/status")
        return body if code == 200 else {}

    def placement(self, name: str, connectors: list[str], tasks_each: int = 4) -> dict[str, str]:
        """task → worker_id, as worker *name* answers, once every connector has its *tasks_each*
        tasks RUNNING; empty until then."""
        placed = {}
        for connector in connectors:
            status = self.status(name, connector)
            tasks = status.get("tasks", [])
            if len(tasks) != tasks_each or any(t["state"] != "RUNNING" for t in tasks):
                return {}
            placed.update({f"{connector}-{t['id']}": t["worker_id"] for t in tasks})
        return placed

    def name_of(self, worker_id: str) -> str:
        """The name of the worker whose id (``host:port``) is *worker_id*."""
        return next(name for name, url in self.urls.items() if url == f"http://{worker_id}")

    def status_history(self, consume_records: Callable[..., list[Any]]) -> list[dict[str, Any]]:
        """Every task status record of the status topic, oldest first per key."""
        history = []
        for message in consume_records(self.settings["status.storage.topic"], partitions=None, timeout=30):
            key = message.key().decode()
            if key.startswith("status-task-") and message.value() is not None:
                history.append({"task": key.removeprefix("status-task-"), **json.loads(message.value())})
        return history

    def kill(self, name: str) -> None:
        """SIGKILL the worker with its Spark JVM: a machine dying."""
        process = self.workers.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)

    def freeze(self, name: str) -> None:
        """SIGSTOP the worker with its Spark JVM: a machine frozen (its processes keep their sockets)."""
        os.killpg(self.workers[name].pid, signal.SIGSTOP)

    def thaw(self, name: str) -> None:
        os.killpg(self.workers[name].pid, signal.SIGCONT)

    def terminate(self, name: str) -> int:
        """SIGTERM the worker alone: it stops its tasks and Spark, and leaves the group."""
        process = self.workers.pop(name)
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(120)
        finally:
            _kill_group(process)  # its Spark; and the worker too when it did not stop in time

    def stop_all(self, settle: bool = False) -> None:
        """Stop every worker. With *settle*, one at a time, each once the others form a settled
        group: the dev broker (tansu) keeps a leader that leaves while another member's
        JoinGroup is held as the leader of the next generation, and every later SyncGroup of
        the group then fails with REBALANCE_IN_PROGRESS — a restarted cluster would never
        form. Kafka elects another leader. Without *settle*, all stop at once."""
        if not settle:
            stopping = list(self.workers.values())
            self.workers.clear()
            for process in stopping:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGCONT)  # a frozen one too
                process.send_signal(signal.SIGTERM)
            for process in stopping:
                try:
                    process.wait(120)
                except subprocess.TimeoutExpired:
                    pass
                _kill_group(process)
            return
        for name in list(self.workers):
            self.wait_until(self.group_events, "the group to settle", until=cluster_settled, timeout=60)
            try:
                self.terminate(name)
            except subprocess.TimeoutExpired:
                self.kill(name)

    def settled(self, members: int | None = None) -> bool:
        """Whether every running worker's last group event is its assignment, all of one generation
        (and, given *members*, that many workers)."""
        events = self.group_events()
        return cluster_settled(events) and (members is None or len(events) == members)

    def group_events(self) -> dict[str, tuple[str, int]]:
        """Each running worker's last group event and the generation it names."""
        last = {}
        for name in self.workers:
            for line in (self.directory / f"{name}.log").read_text(errors="replace").splitlines():
                if '"event": "group_' in line:
                    event = json.loads(line)
                    last[name] = (event["event"], event.get("generation", -1))
        return last

    def leader(self) -> str:
        """The worker whose log says it leads the latest generation it joined."""
        leaders = {}
        for name in self.workers:
            for line in (self.directory / f"{name}.log").read_text(errors="replace").splitlines():
                if '"event": "group_assigned"' in line:
                    event = json.loads(line)
                    leaders[name] = (event["generation"], event["leader"])
        generation, member = max(leaders.values())
        return next(name for name in self.workers if f"-{self.urls[name].removeprefix('http://')}-" in member)

    def _check_alive(self, name: str) -> None:
        process = self.workers[name]
        if process.poll() is not None:
            log = (self.directory / f"{name}.log").read_text(errors="replace")[-3000:]
            raise AssertionError(f"worker {name} exited with {process.returncode}:\n{log}")


def cluster_settled(events: dict[str, tuple[str, int]]) -> bool:
    """Whether every worker's last group event is its assignment, all of one generation."""
    return all(event == "group_assigned" for event, _ in events.values()) and \
        len({generation for _, generation in events.values()}) <= 1


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever it left behind (Spark's JVM) goes with it
    except ProcessLookupError:
        pass


_TELLING = re.compile(r'"event": "(status_changed|assignment_applied|group_assigned|[a-z_]*(failed|error|lost)[a-z_]*)"'
                      r'|"level": "(error|warning)"')


@pytest.fixture
def cluster(request: pytest.FixtureRequest, tmp_path: Path, worker_config: WorkerConfigs,
            broker: EmbeddedBroker) -> Iterator[Callable[..., Cluster]]:
    """``cluster(*, on=None, **overrides) -> Cluster``: worker processes of one new group on the
    session broker, or on the broker *on* (:class:`Cluster`), every one stopped at the test's end;
    on a failure, each worker's last telling log events (where its tasks waited among them) are
    printed with the report."""
    clusters: list[Cluster] = []

    def make(*, on: EmbeddedBroker | None = None, **overrides: str) -> Cluster:
        configs = worker_config if on is None else _worker_configs_in(tmp_path, on)
        made = Cluster(tmp_path, configs, _wait_until, **overrides)
        clusters.append(made)
        return made

    yield make
    report = getattr(request.node, "rep_call", None)
    failed = report is not None and report.failed
    if failed:  # each live worker logs where its asyncio tasks wait (worker_tasks), for the report
        asked = []
        for made in clusters:
            for name, process in made.workers.items():
                if process.poll() is None:
                    os.kill(process.pid, signal.SIGUSR1)
                    asked.append(made.directory / f"{name}.log")
        with contextlib.suppress(AssertionError):  # a worker too stuck to answer is stopped all the same
            _wait_until(lambda: all('"event": "worker_tasks"' in log.read_text(errors="replace") for log in asked),
                        "the workers' task dumps", timeout=5)
    for made in clusters:
        made.stop_all()
    if failed:  # what each worker did last, for the failure's report
        for log in sorted(tmp_path.glob("*.log")):
            events = [line for line in log.read_text(errors="replace").splitlines() if _TELLING.search(line)]
            print(f"--- {log.name}: its last {min(len(events), 60)} telling events", *events[-60:], sep="\n")
