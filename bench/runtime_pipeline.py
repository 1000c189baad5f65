"""connectd's data plane next to raw confluent-kafka, on the embedded broker.

Four measures, in one run, against one embedded tansu broker:

1. raw baseline: confluent-kafka alone produces N 200-byte records
   (idempotent, acks=all, linger 5 ms) into a 3-partition topic, then a
   consumer (assign, fetch.wait.max.ms=10, fetch.queue.backoff.ms=10) reads
   them back;
2. datagen → Kafka through connectd: a standalone herder in this process
   runs DatagenConnector (quickstart=orders, JsonConverter without schemas);
   a confluent consumer counts the records arriving in the topic;
3. Kafka → file through connectd: FileStreamSink (StringConverter) on the
   topic the baseline filled, timed until the file has N lines;
4. end-to-end latency of Kafka → file, with the sink caught up: a child
   process produces records at a steady rate whose value carries
   ``time.time_ns()``, tails the output file and, as the baseline, reads
   the same records with a raw consumer.

Throughput is counted from the first record seen to the last (the query's
start-up is reported apart). Record bytes are key + value. It also times
connectd's per-record Python work in this process without Spark (the source
reader's poller and the sink runner's ``process``), to show how
much of the gap is Python and how much is Spark's micro-batches.

Run:  .venv/bin/python bench/runtime_pipeline.py [--records 500000] [--quick]
Writes bench/RESULTS-runtime.md and prints a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "RESULTS-runtime.md"

RECORD_BYTES = 200
PARTITIONS = 3
CONSUMER_TUNING = {"fetch.wait.max.ms": 10, "fetch.queue.backoff.ms": 10}
PRODUCER_TUNING = {"enable.idempotence": True, "acks": "all", "linger.ms": 5}
LATENCY_MARK = b"L"


# --- small helpers ---------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of *values*."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(round(q / 100 * len(ordered) + 0.5))))
    return ordered[rank - 1]


def rnd(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def rates(records: int, nbytes: int, seconds: float) -> dict[str, Any]:
    return {
        "records": records,
        "seconds": round(seconds, 3),
        "records_per_s": round(records / seconds) if seconds > 0 else None,
        "mb_per_s": round(nbytes / seconds / 1e6, 2) if seconds > 0 else None,
    }


def value_pool(size: int = 1024) -> list[bytes]:
    """Distinct printable 200-byte values without newlines."""
    filler = "abcdefghijklmnopqrstuvwxyz0123456789" * 8
    return [(f"rec-{i:06d}|" + filler)[:RECORD_BYTES].encode() for i in range(size)]


def command_output(*argv: str) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def machine_info() -> dict[str, str]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from importlib.metadata import version

        pyspark_version = version("pyspark")
        ck_version = version("confluent-kafka")
    except Exception:  # noqa: BLE001 - informational only
        pyspark_version = ck_version = "?"
    return {
        "arch": command_output("uname", "-m"),
        "nproc": command_output("nproc"),
        "cpu": cpu,
        "python": platform.python_version(),
        "pyspark": pyspark_version,
        "confluent_kafka": ck_version,
        "date": command_output("date", "-u", "+%F"),
    }


_TICK = os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, tuple[int, str, list[str]]]:
    """Every live process: pid -> (parent pid, name, the /proc/<pid>/stat fields after the name)."""
    found: dict[int, tuple[int, str, list[str]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        found[int(entry)] = (int(fields[1]), text[text.index("(") + 1:text.rindex(")")], fields)
    return found


def _mine(processes: dict[int, tuple[int, str, list[str]]], exclude: int | None = None) -> list[int]:
    """This process and its live descendants, without *exclude*'s process tree."""
    me, mine = os.getpid(), []
    for pid in processes:
        p, seen = pid, 0
        while p not in (0, 1) and seen < 64 and p != exclude:
            if p == me:
                mine.append(pid)
                break
            p, seen = processes.get(p, (0, "", []))[0], seen + 1
    return mine


def _tree_ticks() -> int:
    """CPU ticks used so far by this process and every live descendant (JVM, Python workers, broker)."""
    processes = _processes()
    # utime + stime, plus cutime + cstime: children that ended (forked Python workers) count too
    return sum(sum(int(f) for f in processes[pid][2][11:15]) for pid in _mine(processes))


def cpu_sample() -> tuple[int, int, int, float]:
    """(machine busy, machine total) jiffies from /proc/stat, this run's tree ticks, wall time."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields), _tree_ticks(), time.monotonic()


def cpu_since(sample: tuple[int, int, int, float]) -> dict[str, float]:
    """Machine busy % (all processes, both cores) and cores used by this run's processes since *sample*."""
    busy, total, tree, now = cpu_sample()
    return {"machine_busy_pct": round(100 * (busy - sample[0]) / max(1, total - sample[1]), 1),
            "run_cores": round((tree - sample[2]) / _TICK / max(1e-9, now - sample[3]), 2)}


_PAGE = os.sysconf("SC_PAGE_SIZE")


class MemoryPeak(threading.Thread):
    """Peak resident memory of this run's connectd side, sampled every 0.2 s.

    This process (the worker: herder, sink tasks, Spark's driver side in Python),
    Spark's JVM, and Spark's Python worker processes — every descendant except
    the broker's process tree. :meth:`take` returns the peaks since the last take: RSS per kind
    and summed (``total``), and the summed PSS (``total_pss``: each page shared between
    processes counted once, split among them — Spark's daemons fork their workers and every
    Python process maps the same libraries, which the RSS sum counts again in each).
    """

    def __init__(self, exclude_pid: int | None) -> None:
        super().__init__(daemon=True)
        self.exclude_pid = exclude_pid
        self.halt = threading.Event()
        self._peaks: dict[str, int] = {}

    def run(self) -> None:
        while not self.halt.wait(0.2):
            self.sample()

    def sample(self) -> None:
        processes = _processes()
        me = os.getpid()
        sizes = {"worker": 0, "jvm": 0, "python_workers": 0}
        pss = 0
        for pid in _mine(processes, self.exclude_pid):
            try:
                rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
            except (OSError, IndexError, ValueError):
                continue
            kind = "worker" if pid == me else "jvm" if processes[pid][1] == "java" else "python_workers"
            sizes[kind] += rss
            pss += _pss(pid)
        sizes["total"] = sum(sizes.values())
        sizes["total_pss"] = pss
        for kind, size in sizes.items():
            self._peaks[kind] = max(self._peaks.get(kind, 0), size)

    def take(self) -> dict[str, float]:
        """Peak MiB of each kind and of their sum (``total``) since the last take."""
        self.sample()
        peaks, self._peaks = self._peaks, {}
        return {kind: round(size / 2**20) for kind, size in peaks.items()}


def _pss(pid: int) -> int:
    """The proportional set size of *pid* in bytes (0 if it ended or is not readable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def consumer_config(bootstrap: str, group: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "auto.offset.reset": "earliest",
        **CONSUMER_TUNING,
    }


# --- 1. raw baseline -------------------------------------------------------------------


def acked_producer(bootstrap: str, topic: str) -> tuple[Any, list[str]]:
    """A confluent-kafka producer with PRODUCER_TUNING, connected and holding *topic*'s metadata (before
    any clock starts), and the list its delivery failures are put in (:func:`flush_acked` checks it)."""
    from confluent_kafka import Producer

    failures: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_TUNING, "on_delivery": delivered})
    producer.list_topics(topic, timeout=30)
    return producer, failures


def flush_acked(producer: Any, failures: list[str], what: str) -> None:
    """Wait for every record of :func:`acked_producer`'s *producer*; raise, naming *what*, if any was not acknowledged."""
    remaining = producer.flush(120)
    if remaining or failures:
        raise RuntimeError(f"{what}: {remaining} unacknowledged, errors {failures[:3]}")


def raw_produce(bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    producer, failures = acked_producer(bootstrap, topic)
    pool = value_pool()
    size = len(pool)
    produce, poll = producer.produce, producer.poll
    start = time.perf_counter()
    for i in range(records):
        value = pool[i % size]
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:
                poll(0.01)
        if i % 1000 == 0:
            poll(0)
    flush_acked(producer, failures, "raw produce")
    return rates(records, records * RECORD_BYTES, time.perf_counter() - start)


def raw_consume(bootstrap: str, topic: str, records: int) -> tuple[dict[str, Any], dict[int, int]]:
    """Read the topic from the start; returns the rates and each partition's next offset."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(consumer_config(bootstrap, "bench-raw-consume"))
    try:
        ends: dict[int, int] = {}
        got = nbytes = 0
        start = time.perf_counter()
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 300
        while got < records:
            if time.monotonic() > deadline:
                raise TimeoutError(f"raw consume: {got} of {records} records in 300 s")
            for message in consumer.consume(num_messages=min(10_000, records - got), timeout=1.0):
                if message.error() is not None:
                    continue
                got += 1
                nbytes += len(message.value())
                ends[message.partition()] = message.offset() + 1
        seconds = time.perf_counter() - start
    finally:
        consumer.close()
    return rates(got, nbytes, seconds), ends


# --- counting what connectd wrote ------------------------------------------------------


class TopicCounter(threading.Thread):
    """Counts records arriving in a topic's partitions (from offset 0) until *expected*; *topic* may
    be a list of topics, counted together.

    Several producers writing one partition of the dev broker at once can make a consumer that reads
    as they write skip a batch for good (tansu makes a batch visible before an earlier one; a consumer
    reading from 0 afterwards sees every record): give concurrent tasks a topic each."""

    def __init__(self, bootstrap: str, topic: str | list[str], expected: int) -> None:
        super().__init__(name="bench-topic-counter", daemon=True)
        self.bootstrap, self.topic, self.expected = bootstrap, topic, expected
        self.count = self.key_bytes = self.value_bytes = 0
        self.first: float | None = None  # monotonic time the first records were seen
        self.first_count = 0  # records seen at that moment
        self.last: float | None = None
        self.cpu_first: Any = None
        self.cpu_steady: dict[str, float] | None = None
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        try:
            consumer = Consumer(consumer_config(self.bootstrap, "bench-counter"))
            try:
                topics = [self.topic] if isinstance(self.topic, str) else self.topic
                consumer.assign([TopicPartition(topic, p, 0) for topic in topics for p in range(PARTITIONS)])
                while self.count < self.expected and not self.halt.is_set():
                    messages = consumer.consume(num_messages=min(10_000, self.expected - self.count), timeout=0.2)
                    now = time.monotonic()
                    for message in messages:
                        if message.error() is not None:
                            continue
                        self.count += 1
                        key, value = message.key(), message.value()
                        self.key_bytes += len(key) if key else 0
                        self.value_bytes += len(value) if value else 0
                    if messages:
                        if self.first is None:
                            self.first, self.first_count = now, self.count
                            self.cpu_first = cpu_sample()
                        self.last = now
                if self.cpu_first is not None:
                    self.cpu_steady = cpu_since(self.cpu_first)
            finally:
                consumer.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            self.error = exc


class FileLines(threading.Thread):
    """Counts complete lines appended to a file until *expected*."""

    def __init__(self, path: Path, expected: int) -> None:
        super().__init__(name="bench-file-lines", daemon=True)
        self.path, self.expected = path, expected
        self.lines = 0
        self.first: float | None = None
        self.first_lines = 0
        self.last: float | None = None
        self.cpu_first: Any = None
        self.cpu_steady: dict[str, float] | None = None
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            while not self.path.exists():
                if self.halt.wait(0.01):
                    return
            with open(self.path, "rb") as f:
                while self.lines < self.expected and not self.halt.is_set():
                    chunk = f.read(1 << 20)
                    if not chunk:
                        time.sleep(0.005)
                        continue
                    now = time.monotonic()
                    self.lines += chunk.count(b"\n")
                    if self.first is None:
                        self.first, self.first_lines = now, self.lines
                        self.cpu_first = cpu_sample()
                    self.last = now
                if self.cpu_first is not None:
                    self.cpu_steady = cpu_since(self.cpu_first)
        except BaseException as exc:  # noqa: BLE001
            self.error = exc


def steady_rates(count: int, first_count: int, first: float | None, last: float | None, nbytes: int) -> dict[str, Any]:
    """Rates from the first records seen to the last: what arrived after the first look, over the time between."""
    if first is None or last is None or last <= first:
        return rates(count, nbytes, 0.0)
    counted = count - first_count
    return rates(counted, int(nbytes * counted / count), last - first)


def had_data(progress: dict[str, Any]) -> bool:
    """Whether a micro-batch's source moved (a sink's offset-range rows are never read as rows by Spark)."""
    return progress["numInputRows"] > 0 or any(
        source.get("startOffset") != source.get("endOffset") for source in progress.get("sources", []))


def progress_summary(task_query: Any) -> dict[str, Any]:
    """Mean micro-batch size and durations (ms) of a query's batches that had data."""
    progress = [p for p in task_query.query.recentProgress if had_data(p)]
    if not progress:
        return {"batches": 0}
    keys = sorted({k for p in progress for k in p["durationMs"]})
    # The first batch starts the Python workers: keep it apart.
    first, steady = progress[0], progress[1:] or progress[:1]
    return {
        "batches": len(progress),
        "rows_mean": round(statistics.mean(p["numInputRows"] for p in steady)),
        "first_batch_ms": first["durationMs"].get("triggerExecution"),
        "ms_mean": {k: round(statistics.mean(p["durationMs"].get(k, 0) for p in steady)) for k in keys},
    }


# --- 4. latency (child process, so its threads do not share the GIL with the sink) ------


def latency_child(spec: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap, topic = spec["bootstrap"], spec["topic"]
    total = int(spec["rate"] * spec["seconds"])
    file_lat: list[float] = []
    raw_lat: list[float] = []
    done = threading.Event()
    errors: list[str] = []

    def tail_file() -> None:
        try:
            with open(spec["file"], "rb") as f:
                f.seek(spec["file_offset"])
                pending = b""
                while len(file_lat) < total and not done.is_set():
                    chunk = f.read(1 << 16)
                    if not chunk:
                        time.sleep(0.0005)
                        continue
                    now = time.time_ns()
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if line.startswith(LATENCY_MARK):
                            file_lat.append((now - int(line[1:20])) / 1e6)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"tail: {exc!r}")

    def raw_consumer() -> None:
        try:
            consumer = Consumer(consumer_config(bootstrap, "bench-latency-raw"))
            consumer.assign([TopicPartition(topic, int(p), o) for p, o in spec["start"].items()])
            try:
                while len(raw_lat) < total and not done.is_set():
                    # poll() returns as soon as a record is there; consume(n, timeout) would
                    # wait for n records or the whole timeout.
                    m = consumer.poll(0.1)
                    now = time.time_ns()
                    value = m.value() if m is not None and m.error() is None else None
                    if value and value.startswith(LATENCY_MARK):
                        raw_lat.append((now - int(value[1:20])) / 1e6)
            finally:
                consumer.close()
        except Exception as exc:  # noqa: BLE001
            errors.append(f"raw consumer: {exc!r}")

    threads = [threading.Thread(target=tail_file, daemon=True), threading.Thread(target=raw_consumer, daemon=True)]
    for t in threads:
        t.start()
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_TUNING})
    producer.list_topics(topic, timeout=30)
    time.sleep(1.0)  # the raw consumer's first fetches
    filler = b"x" * RECORD_BYTES
    start = time.monotonic()
    for i in range(total):
        target = start + i / spec["rate"]
        delay = target - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        head = b"L%019d|%08d|" % (time.time_ns(), i)
        producer.produce(topic, (head + filler)[:RECORD_BYTES])
        producer.poll(0)
    sent_seconds = time.monotonic() - start
    producer.flush(30)
    deadline = time.monotonic() + 60
    while (len(file_lat) < total or len(raw_lat) < total) and time.monotonic() < deadline and not errors:
        time.sleep(0.05)
    done.set()
    for t in threads:
        t.join(5)

    def stats(values: list[float]) -> dict[str, Any]:
        return {"received": len(values), "p50_ms": rnd(percentile(values, 50)), "p99_ms": rnd(percentile(values, 99)),
                "mean_ms": rnd(statistics.mean(values)) if values else None, "max_ms": rnd(max(values, default=None))}

    return {"sent": total, "rate_per_s": round(total / sent_seconds), "seconds": round(sent_seconds, 1),
            "raw": stats(raw_lat), "file": stats(file_lat), "errors": errors}


def run_latency_child(spec: dict[str, Any]) -> dict[str, Any]:
    timeout = spec["seconds"] + 120
    done = subprocess.run([sys.executable, __file__, "--latency-child", json.dumps(spec)],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"latency child exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- in-process Python cost per record (no Spark, one thread) -----------------------------


def python_costs(tmp: Path, records: int = 50_000) -> dict[str, Any]:
    """connectd's own per-record Python work, timed without Spark or Kafka."""
    from pyspark.sql import Row

    from connectd.connector import TopicPartition
    from connectd.plugins import get_registry
    from connectd.runtime.converter_choice import configure_converters
    from connectd.runtime.sink.task import SinkTaskRunner
    from connectd.runtime.source.task import SPEC_OPTION, SourceTaskReader
    from connectd.transforms.chain import TransformationChain

    worker = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    # Source side: the reader's poller (task.poll + transforms + converters + Arrow) in the query's Python process.
    connector = {"name": "cost", "connector.class": "DatagenConnector", "kafka.topic": "t", "quickstart": "orders",
                 "max.interval": "0", "iterations": "-1", "batch.size": "5000",
                 "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                 "value.converter.schemas.enable": "false"}
    spec = {"connector": "cost", "task_id": 0, "task_class": "connectd_datagen.task.DatagenTask",
            "task_config": {**connector, "task.id": "0"}, "connector_config": connector,
            "worker_config": {**worker, "bootstrap.servers": "127.0.0.1:9",
                              "offset.storage.file.filename": str(tmp / "cost-offsets.json")},
            "offsets": {"kind": "file", "path": str(tmp / "cost-offsets.json")}}
    import pyarrow as pa

    reader = SourceTaskReader({SPEC_OPTION: json.dumps(spec), "max.records": "10000"})
    reader.latestOffset({"seq": 0})  # start the task and its poller, warm the converter caches
    produced = 0
    start = time.perf_counter()
    while produced < records:
        before = reader._seq
        end = reader.latestOffset({"seq": before})
        if end["seq"] == before:
            time.sleep(0.001)  # the poller has nothing buffered yet
            continue
        table = pa.ipc.open_stream(reader._kept[end["seq"]]).read_all()
        produced += table.num_rows - table.column("topic").null_count
        reader.commit(end)
    source_s = time.perf_counter() - start
    reader.stop()

    # Sink side: the runner's process() on collected rows, in the worker's (driver's) process.
    registry = get_registry()
    sink_connector = {"name": "cost-sink", "connector.class": "FileStreamSink", "topics": "t",
                      "file": str(tmp / "cost-sink.txt"),
                      "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    task_class = registry.find_class("connector", "FileStreamSink")().task_class()
    runner = SinkTaskRunner(
        task_class(), sink_connector, [TopicPartition("t", 0)],
        configure_converters(worker, sink_connector, lambda n: registry.find_class("converter", n)),
        TransformationChain(sink_connector, registry.find_class), lambda offsets: None,
    )
    KafkaRow = Row("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers")
    pool = value_pool()
    batch = 10_000
    rows = [KafkaRow("t", 0, i, 1_700_000_000_000 + i, 1, None, bytearray(pool[i % len(pool)]), None)
            for i in range(batch)]
    runner.process(rows[:100])
    done = 0
    start = time.perf_counter()
    while done < records:
        runner.process(rows)
        done += batch
    sink_s = time.perf_counter() - start
    runner.close()
    (tmp / "cost-sink.txt").unlink(missing_ok=True)
    return {
        "source_latest_offset_us_per_record": round(source_s / produced * 1e6, 1),
        "source_python_ceiling_records_per_s": round(produced / source_s),
        "sink_process_us_per_record": round(sink_s / done * 1e6, 1),
        "sink_python_ceiling_records_per_s": round(done / sink_s),
    }


# --- 2-4. connectd through the herder ------------------------------------------------------


async def wait_for(what: str, done: Any, timeout: float, herder: Any, name: str, thread: Any = None) -> None:
    from connectd.status import FAILED

    deadline = time.monotonic() + timeout
    while not done():
        if thread is not None and thread.error is not None:
            raise RuntimeError(f"{what}: {thread.error!r}")
        status = herder.status.task(name, 0)
        if status is not None and status.state == FAILED:
            raise RuntimeError(f"{what}: task {name}-0 failed:\n{status.trace}")
        connector_status = herder.status.connector(name)
        if connector_status is not None and connector_status.state == FAILED:
            raise RuntimeError(f"{what}: connector {name} failed:\n{connector_status.trace}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not done within {timeout:.0f} s")
        await asyncio.sleep(0.05)


def bench_spark(bootstrap: str, tmp: Path, master: str = "local[2]", **conf: str) -> Any:
    """The worker's SparkSession as the benchmarks start it: StringConverter keys and values, offsets
    and Spark's scratch in *tmp*, no console progress, Spark's own log at ERROR; *conf* adds settings
    (``**{"spark.sql.shuffle.partitions": "2"}``)."""
    from connectd.config.worker import WorkerConfig
    from connectd.runtime.spark.session import start_session

    spark = start_session(WorkerConfig({
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp / "offsets.json"),
        "spark.master": master,
        "spark.sql.warehouse.dir": str(tmp / "warehouse"),
        "spark.local.dir": str(tmp / "spark-local"),
        "spark.ui.showConsoleProgress": "false",
        **conf,
    }, "standalone", source="bench"))
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def bench_spark_stop(spark: Any) -> None:
    """Stop a :func:`bench_spark` session as the worker does (the first on a machine writes the
    driver's class archive then: docs/running.md, "Start-up")."""
    from connectd.runtime.spark.session import stop_session

    stop_session(spark)


async def started_herder(bootstrap: str, spark: Any, tmp: Path, **settings: str) -> Any:
    """A standalone herder in this process (StringConverter keys and values, offsets in *tmp*), started;
    *settings* are more worker settings (``**{"sink.batch.max.records": "20000"}``)."""
    from connectd.config.worker import WorkerConfig
    from connectd.herder import StandaloneHerder

    worker = WorkerConfig({
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp / "offsets.json"),
        **settings,
    }, "standalone", source="bench")
    herder = StandaloneHerder(worker, "bench-worker", spark)
    await herder.start()
    return herder


async def connectd_runs(bootstrap: str, spark: Any, tmp: Path, records: int, raw_topic: str, raw_ends: dict[int, int],
                        latency_rate: int, latency_seconds: float, memory: MemoryPeak,
                        worker_settings: dict[str, str] | None = None) -> dict[str, Any]:
    herder = await started_herder(bootstrap, spark, tmp, **(worker_settings or {}))
    out: dict[str, Any] = {}
    try:
        # 2. datagen → Kafka
        topic = "bench-datagen-orders"
        await asyncio.to_thread(create_topic, bootstrap, topic, PARTITIONS)
        counter = TopicCounter(bootstrap, topic, records)
        counter.start()
        cpu = cpu_sample()
        t_put = time.monotonic()
        await herder.put({
            "name": "bench-datagen", "connector.class": "DatagenConnector", "kafka.topic": topic,
            "quickstart": "orders", "max.interval": "0", "iterations": str(records), "batch.size": "5000",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
        })
        put_s = time.monotonic() - t_put
        try:
            await wait_for("datagen → Kafka", lambda: counter.count >= records, max(180, records / 1000),
                           herder, "bench-datagen", counter)
        finally:
            counter.halt.set()
            await asyncio.to_thread(counter.join, 10)
        nbytes = counter.key_bytes + counter.value_bytes
        out["datagen_to_kafka"] = {
            **steady_rates(counter.count, counter.first_count, counter.first, counter.last, nbytes),
            "total_records": counter.count,
            "mean_key_bytes": round(counter.key_bytes / counter.count, 1),
            "mean_value_bytes": round(counter.value_bytes / counter.count, 1),
            "put_s": round(put_s, 1),
            "put_to_first_record_s": round(counter.first - t_put, 1),
            "put_to_last_record_s": round(counter.last - t_put, 1),
            "cpu_from_put": cpu_since(cpu),
            "cpu": counter.cpu_steady,
            "spark": await asyncio.to_thread(progress_summary, herder.task_queries("bench-datagen")[0]),
            "memory_mib": memory.take(),
        }
        await herder.delete("bench-datagen")

        # 3. Kafka → file (the topic the raw baseline filled)
        out_file = tmp / "sink.txt"
        lines = FileLines(out_file, records)
        lines.start()
        cpu = cpu_sample()
        t_put = time.monotonic()
        await herder.put({
            "name": "bench-file-sink", "connector.class": "FileStreamSink", "topics": raw_topic,
            "file": str(out_file), "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        })
        put_s = time.monotonic() - t_put
        try:
            await wait_for("Kafka → file", lambda: lines.lines >= records, max(180, records / 1000),
                           herder, "bench-file-sink", lines)
        finally:
            lines.halt.set()
            await asyncio.to_thread(lines.join, 10)
        sink_query = herder.task_queries("bench-file-sink")[0]
        out["kafka_to_file"] = {
            **steady_rates(lines.lines, lines.first_lines, lines.first, lines.last, lines.lines * RECORD_BYTES),
            "total_records": lines.lines,
            "put_s": round(put_s, 1),
            "put_to_first_line_s": round(lines.first - t_put, 1),
            "put_to_last_line_s": round(lines.last - t_put, 1),
            "cpu_from_put": cpu_since(cpu),
            "cpu": lines.cpu_steady,
            "spark": await asyncio.to_thread(progress_summary, sink_query),
            "memory_mib": memory.take(),
        }

        # 4. latency, the sink running and caught up
        await asyncio.sleep(1.0)
        spec = {"bootstrap": bootstrap, "topic": raw_topic, "file": str(out_file),
                "file_offset": out_file.stat().st_size, "start": {str(p): o for p, o in raw_ends.items()},
                "rate": latency_rate, "seconds": latency_seconds}
        progress_before = len(await asyncio.to_thread(lambda: sink_query.query.recentProgress))
        cpu = cpu_sample()
        out["latency"] = await asyncio.to_thread(run_latency_child, spec)
        out["latency"]["cpu"] = cpu_since(cpu)
        out["latency"]["memory_mib"] = memory.take()
        recent = await asyncio.to_thread(lambda: sink_query.query.recentProgress)
        busy = [p for p in recent[progress_before:] if had_data(p)]
        if busy:
            out["latency"]["spark"] = {
                "batches": len(busy),
                "rows_mean": round(statistics.mean(p["numInputRows"] for p in busy)),
                "ms_mean": {k: round(statistics.mean(p["durationMs"].get(k, 0) for p in busy))
                            for k in sorted({k for p in busy for k in p["durationMs"]})},
                # the spread of batch times, which the latency's tail follows
                "trigger_ms_p50_p99_max": _spread([p["durationMs"].get("triggerExecution", 0) for p in busy]),
            }
    finally:
        await herder.stop()
    return out


# --- report ---------------------------------------------------------------------------------


def _spread(values: list[float]) -> list[float]:
    ordered = sorted(values)
    return [ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], ordered[-1]]


def fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and value >= 100:
        value = round(value)
    text = f"{value:,}" if isinstance(value, (int, float)) else str(value)
    return f"{text}{unit}"


def ratio(a: Any, b: Any) -> str:
    """connectd against raw: a share for throughput (b < a), a multiple for latency (b > a)."""
    if not a or not b:
        return "—"
    return f"{b / a:.1%} (1/{a / b:.0f})" if b < a else f"{b / a:.0f}×"


def markdown(summary: dict[str, Any], command: str) -> str:
    m, n = summary["machine"], summary["records"]
    raw, cd = summary["raw"], summary["connectd"]
    dg, fs, lat = cd["datagen_to_kafka"], cd["kafka_to_file"], cd["latency"]
    costs = summary["python_costs"]
    lines = [
        "# connectd data plane vs raw confluent-kafka",
        "",
        f"Command: `{command}`  ",
        f"Machine: {m['arch']}, {m['nproc']} cores ({m['cpu']}), Python {m['python']}, "
        f"pyspark {m['pyspark']}, confluent-kafka {m['confluent_kafka']}; broker: embedded tansu (memory)  ",
        f"Date: {m['date']}  ",
        f"N = {n:,} records; Spark `local[2]`; one task per connector; topics with {PARTITIONS} partitions; "
        f"whole run {summary['wall_s']:.0f} s (Spark session start {summary['spark_start_s']} s); load average "
        f"{summary['loadavg_start']} at the start, {summary['loadavg_end']} at the end (the machine is shared)",
        "",
        "| measure | raw confluent-kafka | connectd | connectd vs raw |",
        "|---|---|---|---|",
        f"| into Kafka, records/s | {fmt(raw['produce']['records_per_s'])} (produce) "
        f"| {fmt(dg['records_per_s'])} (datagen → Kafka) | {ratio(raw['produce']['records_per_s'], dg['records_per_s'])} |",
        f"| into Kafka, MB/s | {fmt(raw['produce']['mb_per_s'])} | {fmt(dg['mb_per_s'])} "
        f"| {ratio(raw['produce']['mb_per_s'], dg['mb_per_s'])} |",
        f"| out of Kafka, records/s | {fmt(raw['consume']['records_per_s'])} (consume) "
        f"| {fmt(fs['records_per_s'])} (Kafka → file) | {ratio(raw['consume']['records_per_s'], fs['records_per_s'])} |",
        f"| out of Kafka, MB/s | {fmt(raw['consume']['mb_per_s'])} | {fmt(fs['mb_per_s'])} "
        f"| {ratio(raw['consume']['mb_per_s'], fs['mb_per_s'])} |",
        f"| end-to-end latency p50 | {fmt(lat['raw']['p50_ms'], ' ms')} (consumer) | {fmt(lat['file']['p50_ms'], ' ms')} "
        f"(Kafka → file) | {ratio(lat['raw']['p50_ms'], lat['file']['p50_ms'])} |",
        f"| end-to-end latency p99 | {fmt(lat['raw']['p99_ms'], ' ms')} | {fmt(lat['file']['p99_ms'], ' ms')} "
        f"| {ratio(lat['raw']['p99_ms'], lat['file']['p99_ms'])} |",
        "",
        "How it was measured:",
        "",
        f"- Raw: one idempotent producer (acks=all, linger.ms=5) writes N {RECORD_BYTES}-byte values, timed to the "
        "end of `flush()`; one consumer (assign, fetch.wait.max.ms=10, fetch.queue.backoff.ms=10) reads them back. "
        "Both from Python, one call per record (`consume(n)` in batches).",
        f"- datagen → Kafka: DatagenConnector (orders, max.interval=0, batch.size=5000), JsonConverter without "
        f"schemas; records are {dg['mean_value_bytes']} bytes of value + {dg['mean_key_bytes']} bytes of key on "
        f"average (MB/s counts both). Rate from the first record seen in the topic to the last "
        f"({fmt(dg['records'])} records in {dg['seconds']} s). Start-up apart: `put()` took {dg['put_s']} s, the "
        f"first record arrived {dg['put_to_first_record_s']} s after `put()`, the last {dg['put_to_last_record_s']} s "
        "after.",
        f"- Kafka → file: FileStreamSink (StringConverter) on the raw baseline's topic, timed from the first line in "
        f"the file to the N-th ({fmt(fs['records'])} lines in {fs['seconds']} s); `put()` took {fs['put_s']} s, the "
        f"first line came {fs['put_to_first_line_s']} s after `put()`, the last {fs['put_to_last_line_s']} s after.",
        f"- Latency: with the sink caught up, a separate process produced {fmt(lat['sent'])} records at "
        f"{fmt(lat['rate_per_s'])}/s for {lat['seconds']} s (same producer settings, value starts with "
        "`time.time_ns()`); it tailed the output file (0.5 ms polls) and, as the baseline, read the same "
        "records with a raw consumer (`poll()`). Latency = time seen − send time (includes the producer's "
        f"5 ms linger). Received: file {fmt(lat['file']['received'])}, raw {fmt(lat['raw']['received'])}; "
        f"max: file {fmt(lat['file']['max_ms'], ' ms')}, raw {fmt(lat['raw']['max_ms'], ' ms')}.",
        "",
        "Where the time goes — Spark's progress reports, mean per micro-batch with data (first batch apart). "
        "A sink's batch rows are its offset ranges (one row per partition), and a source's are its offsets, "
        "so Spark's row counts are not record counts; records/batch is connectd's count where it has one:",
        "",
        "| query | batches | rows/batch | first batch | trigger | latestOffset | addBatch | offset + commit logs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = (("datagen → Kafka", dg["spark"]), ("Kafka → file", fs["spark"]), ("Kafka → file, latency run", lat.get("spark")))
    for label, sp in rows:
        if not sp or not sp.get("batches"):
            continue
        ms = sp["ms_mean"]
        lines.append(
            f"| {label} | {sp['batches']} | {fmt(sp['rows_mean'])} | {fmt(sp.get('first_batch_ms'), ' ms')} "
            f"| {fmt(ms.get('triggerExecution'), ' ms')} | {fmt(ms.get('latestOffset'), ' ms')} "
            f"| {fmt(ms.get('addBatch'), ' ms')} "
            f"| {fmt(ms.get('walCommit', 0) + ms.get('commitOffsets', 0), ' ms')} |"
        )

    def cpu(phase: dict[str, Any]) -> str:
        c = phase.get("cpu") or {}
        return f"{fmt(c.get('run_cores'))} cores used by this run's processes, machine {fmt(c.get('machine_busy_pct'))} % busy"

    def mem(phase: dict[str, Any]) -> str:
        m = phase.get("memory_mib") or {}
        return (f"{fmt(m.get('total'), ' MiB')} (worker process {fmt(m.get('worker'), ' MiB')}, Spark JVM "
                f"{fmt(m.get('jvm'), ' MiB')}, Spark's Python workers {fmt(m.get('python_workers'), ' MiB')})")

    lines += [
        "",
        f"Peak memory (RSS, sampled every 0.2 s; the broker apart): datagen → Kafka {mem(dg)}; "
        f"Kafka → file {mem(fs)}; latency run {mem(lat)}.",
        "",
        f"CPU while records flowed (from the first record to the last): datagen → Kafka {cpu(dg)}; "
        f"Kafka → file {cpu(fs)}; latency run {cpu(lat)}. (This run's processes: the bench and worker process, "
        "Spark's JVM and Python workers, the broker.)",
        "",
        "connectd's own Python per record, timed without Spark or Kafka: the source reader's poller "
        f"(datagen `poll`, transforms, key/JSON converters, Arrow) {costs['source_latest_offset_us_per_record']} µs "
        f"(≈{fmt(costs['source_python_ceiling_records_per_s'])} records/s); the sink runner's `process` "
        f"(StringConverter, SinkRecord, FileStreamSink `put`/`flush`) {costs['sink_process_us_per_record']} µs "
        f"(≈{fmt(costs['sink_python_ceiling_records_per_s'])} records/s).",
        "",
    ]
    lines += summary.get("notes", [])
    return "\n".join(lines) + "\n"


def notes(summary: dict[str, Any]) -> list[str]:
    """A short reading of the figures, built from what was measured in this run."""
    cd = summary["connectd"]
    dg, fs, lat = cd["datagen_to_kafka"], cd["kafka_to_file"], cd["latency"]
    out = ["Reading the figures:", ""]
    sp = dg["spark"]
    if sp.get("batches"):
        ms = sp["ms_mean"]
        out.append(
            f"- datagen → Kafka: a micro-batch every ≈{fmt(ms.get('triggerExecution'))} ms. The task is polled "
            "on a thread of the query's long-lived Python process while the last batch is produced, so "
            f"`latestOffset` (≈{fmt(ms.get('latestOffset'))} ms) only takes what was polled meanwhile, as Arrow; "
            f"`addBatch` (≈{fmt(ms.get('addBatch'))} ms) is the executor producing it and flushing, and the "
            "worker process storing its offsets."
        )
    sp = fs["spark"]
    if sp.get("batches"):
        ms = sp["ms_mean"]
        out.append(
            f"- Kafka → file: a micro-batch every ≈{fmt(ms.get('triggerExecution'))} ms; `latestOffset` "
            f"(≈{fmt(ms.get('latestOffset'))} ms) finds the high watermarks; `addBatch` (≈{fmt(ms.get('addBatch'))} "
            "ms) is the executor reading the ranges, converting and `put()`ting them, `pre_commit`, and the "
            "worker process committing the offsets to the group."
        )
    spl = lat.get("spark") or {}
    if lat["file"]["p50_ms"] is not None and spl.get("batches"):
        ms = spl["ms_mean"]
        out.append(
            f"- Latency at {fmt(lat['rate_per_s'])} records/s: micro-batches follow each other every "
            f"≈{fmt(ms.get('triggerExecution'))} ms (`latestOffset` ≈{fmt(ms.get('latestOffset'))} ms, `addBatch` "
            f"≈{fmt(ms.get('addBatch'))} ms, offset and commit logs ≈{fmt(ms.get('walCommit', 0) + ms.get('commitOffsets', 0))} ms). "
            "A lingering batch (`sink.batch.linger.ms`, `addBatch` then includes the linger) puts a record "
            "that arrives while it runs as it comes, so the p50 follows a fetch, and the tail the records "
            "that arrive between two batches and wait for the next one's Spark job; without lingering a record "
            "waits for the batch in progress to end, then goes through a whole batch. p50 "
            f"{fmt(lat['file']['p50_ms'])} ms, p99 {fmt(lat['file']['p99_ms'])} ms, against "
            f"{fmt(lat['raw']['p50_ms'])} / {fmt(lat['raw']['p99_ms'])} ms for a raw consumer."
        )
    cores = int(summary["machine"]["nproc"]) if summary["machine"]["nproc"].isdigit() else 2
    for label, phase in (("datagen → Kafka", dg), ("Kafka → file", fs)):
        c = phase.get("cpu") or {}
        if not c:
            continue
        others = max(0.0, c["machine_busy_pct"] * cores / 100 - c["run_cores"])
        idle = max(0.0, cores - c["run_cores"] - others)
        text = (f"- CPU during {label}: this run's processes used ≈{c['run_cores']:.2f} of {cores} cores, "
                f"other processes on the machine ≈{others:.2f}, idle ≈{idle:.2f}.")
        if others >= 0.3:
            text += " Others took a sizeable share, so this figure is lower than an idle machine would give."
        if idle >= 0.3:
            text += (" Cores left idle mean the pipeline waits part of each micro-batch (one batch at a time, "
                     "its steps one after the other).")
        out.append(text)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=None, help="N (default 500000, or 50000 with --quick)")
    parser.add_argument("--quick", action="store_true", help="N=50000 and a shorter latency run")
    parser.add_argument("--latency-rate", type=int, default=2000, help="records/s in the latency run")
    parser.add_argument("--latency-seconds", type=float, default=None, help="length of the latency run (20, --quick 8)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="more settings of the worker's SparkSession, spark.* (repeatable)")
    parser.add_argument("--worker", action="append", default=[], metavar="KEY=VALUE",
                        help="more worker settings, e.g. sink.batch.linger.ms=1000 (repeatable)")
    parser.add_argument("--latency-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.latency_child:
        print(json.dumps(latency_child(json.loads(args.latency_child))))
        return 0

    records = args.records or (50_000 if args.quick else 500_000)
    latency_seconds = args.latency_seconds or (8.0 if args.quick else 20.0)
    command = " ".join(["python", "bench/runtime_pipeline.py", *sys.argv[1:]])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from connectd.broker import EmbeddedBroker

    wall = time.monotonic()
    summary: dict[str, Any] = {"records": records, "machine": machine_info(), "loadavg_start": loadavg()}
    with tempfile.TemporaryDirectory(prefix="connectd-bench-") as tmp_name:
        tmp = Path(tmp_name)
        print("timing connectd's per-record Python work (no Spark) ...", file=sys.stderr)
        summary["python_costs"] = python_costs(tmp)
        with EmbeddedBroker(host="127.0.0.1") as broker:
            bootstrap = broker.bootstrap_servers
            print(f"broker {bootstrap} (pid {broker.pid}); raw baseline, N={records:,} ...", file=sys.stderr)
            raw_topic = "bench-raw"
            create_topic(bootstrap, raw_topic, PARTITIONS)
            produced = raw_produce(bootstrap, raw_topic, records)
            consumed, raw_ends = raw_consume(bootstrap, raw_topic, records)
            summary["raw"] = {"produce": produced, "consume": consumed}
            print(json.dumps(summary["raw"]), file=sys.stderr)

            print("starting Spark ...", file=sys.stderr)
            t0 = time.monotonic()
            spark = bench_spark(bootstrap, tmp, **{"spark.sql.shuffle.partitions": "2",
                                                   "spark.sql.streaming.numRecentProgressUpdates": "1000",
                                                   **dict(item.split("=", 1) for item in args.conf)})
            summary["spark_start_s"] = round(time.monotonic() - t0, 1)
            memory = None
            try:
                print("connectd runs ...", file=sys.stderr)
                memory = MemoryPeak(broker.pid)
                memory.start()
                summary["connectd"] = asyncio.run(connectd_runs(
                    bootstrap, spark, tmp, records, raw_topic, raw_ends, args.latency_rate, latency_seconds, memory,
                    dict(item.split("=", 1) for item in args.worker)))
            finally:
                if memory is not None:
                    memory.halt.set()
                bench_spark_stop(spark)
    summary["wall_s"] = round(time.monotonic() - wall, 1)
    summary["loadavg_end"] = loadavg()
    summary["notes"] = notes(summary)
    args.output.write_text(markdown(summary, command), encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "notes"}, indent=2))
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
