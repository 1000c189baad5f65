"""Four source tasks on a real standalone worker: the memory of the worker's whole process tree.

The worker is ``connectd standalone`` in a process of its own (REST on loopback, ``local[2]``), on
the embedded broker; this process only creates the connectors, counts records and reads
``/proc``. Every process under the worker is sampled every 0.3 s, by kind: the worker, Spark's
JVM, each task's process (``connectd.runtime.source.host``), Spark's planner of each query
(``python_streaming_source_runner``), and Spark's Python daemons with the workers they fork, one
daemon per kind of work (``pyspark.worker`` runs the batches; ``create_data_source``,
``lookup_data_sources`` and ``plan_data_source_read`` plan a query's start).

Three figures, PSS (each page shared between processes counted once, split among them: what the
tree takes from the machine) with the RSS sum beside it:

- ``start``: the peak over the first ``SETTLE_S`` seconds after the four connectors' creation,
  when Spark's planning workers are up (Spark ends an idle Python worker about a minute after its
  last use);
- ``load`` (``--source datagen``: four unlimited datagen tasks): the peak over the next
  ``WINDOW_S`` seconds, the tasks producing as fast as they can;
- ``idle`` (``--source file``: four FileStreamSource tasks on 200,000-line files): the peak over
  ``WINDOW_S`` seconds once their files are read, the tasks running on with nothing to read.

Run:  .venv/bin/python bench/source_memory.py [--source file|datagen] [--set worker.key=value ...]
Prints a JSON summary (BENCHMARKS.md, "Sources at speed", holds the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import runtime_pipeline as rp
from source_file import write_lines

TASKS = 4
LINES = 200_000
#: Spark ends an idle Python worker about a minute after its last use (PythonWorkerFactory's
#: IDLE_WORKER_TIMEOUT; 60-85 s measured): by 90 s the planning workers of the start are gone.
SETTLE_S = 90.0
WINDOW_S = 20.0
#: What a process runs, as its command line says (a forked worker keeps its daemon's).
_KINDS = ("connectd.runtime.source.host", "python_streaming_source_runner")


def kind(pid: int, worker: int) -> str:
    if pid == worker:
        return "worker"
    argv = [part.decode(errors="replace") for part in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if part]
    if not argv:
        return "ended"
    if os.path.basename(argv[0]) == "java":
        return "jvm"
    if "pyspark.daemon" in argv:
        return "spark daemon: " + " ".join(argv[argv.index("pyspark.daemon") + 1:])
    line = " ".join(argv)
    for name in _KINDS:
        if name in line:
            return "task process" if name.startswith("connectd") else "spark planner"
    return line[:60]


def snapshot(worker: int) -> dict[str, dict[str, int]]:
    """Processes, RSS and PSS (MiB) of each kind under *worker* (itself included)."""
    processes, found = rp._processes(), {}
    for pid in processes:
        parent, hops = pid, 0
        while parent not in (0, 1) and parent != worker and hops < 64:
            parent, hops = processes.get(parent, (0, "", []))[0], hops + 1
        if parent != worker:
            continue
        try:
            what = kind(pid, worker)
            rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
        entry = found.setdefault(what, {"processes": 0, "rss": 0, "pss": 0})
        entry["processes"] += 1
        entry["rss"] += rss
        entry["pss"] += rp._pss(pid)
    return {what: {**entry, "rss": entry["rss"] >> 20, "pss": entry["pss"] >> 20} for what, entry in found.items()}


class TreePeak(threading.Thread):
    """The sample of the worker's tree with the highest PSS sum since the last :meth:`take`."""

    def __init__(self, worker: int) -> None:
        super().__init__(daemon=True)
        self.worker, self.halt = worker, threading.Event()
        self._lock = threading.Lock()
        self._peak: tuple[int, int, dict[str, Any]] = (0, 0, {})

    def run(self) -> None:
        while not self.halt.wait(0.3):
            kinds = snapshot(self.worker)
            pss, rss = sum(k["pss"] for k in kinds.values()), sum(k["rss"] for k in kinds.values())
            with self._lock:
                if pss > self._peak[0]:
                    self._peak = (pss, rss, kinds)

    def take(self) -> dict[str, Any]:
        with self._lock:
            (pss, rss, kinds), self._peak = self._peak, (0, 0, {})
        return {"pss_mib": pss, "rss_sum_mib": rss, "by_kind": kinds}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rest(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())


def wait_until(what: str, done: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=("file", "datagen"), default="file")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="more worker properties (repeatable), e.g. spark.driver.memory=512m")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from connectd.broker import EmbeddedBroker

    summary: dict[str, Any] = {"source": args.source, "tasks": TASKS, "set": args.set, "machine": rp.machine_info(),
                               "date": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory(prefix="connectd-bench-") as tmp_name, EmbeddedBroker(host="127.0.0.1") as broker:
        tmp, bootstrap, port = Path(tmp_name), broker.bootstrap_servers, free_port()
        url = f"http://127.0.0.1:{port}"
        properties = tmp / "worker.properties"
        properties.write_text("\n".join([
            f"bootstrap.servers={bootstrap}",
            "key.converter=org.apache.kafka.connect.storage.StringConverter",
            "value.converter=org.apache.kafka.connect.storage.StringConverter",
            f"offset.storage.file.filename={tmp}/offsets.json", f"listeners={url}", "spark.master=local[2]",
            f"spark.local.dir={tmp}/spark-local", *args.set, ""]))
        rp.PARTITIONS = 1
        topics = [f"bench-memory-{index}" for index in range(TASKS)]  # a topic each (rp.TopicCounter)
        for topic in topics:
            rp.create_topic(bootstrap, topic, 1)
        expected = TASKS * LINES if args.source == "file" else 10**12  # datagen: counted, never done
        paths = [tmp / f"in-{index}.txt" for index in range(TASKS)]
        if args.source == "file":
            for path in paths:
                write_lines(path, LINES)
        with open(tmp / "worker.log", "wb") as log:
            worker = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "connectd"), "standalone",
                                       str(properties)], stdout=log, stderr=subprocess.STDOUT)
        peak = TreePeak(worker.pid)
        counter = rp.TopicCounter(bootstrap, topics, expected)
        try:
            wait_until("the worker's REST API", lambda: _answers(f"{url}/connectors"), 120)
            peak.start()
            counter.start()
            created = time.monotonic()
            for index, path in enumerate(paths):
                config = ({"connector.class": "FileStreamSource", "file": str(path), "topic": topics[index]}
                          if args.source == "file" else
                          {"connector.class": "DatagenConnector", "quickstart": "orders", "kafka.topic": topics[index],
                           "max.interval": "0", "iterations": "0"})
                rest(f"{url}/connectors", {"name": f"bench-memory-{index}", "config": config})
            if args.source == "file":
                wait_until(f"{expected:,} records", lambda: counter.count >= expected, 300)
            time.sleep(max(0.0, SETTLE_S - (time.monotonic() - created)))
            summary["start"] = peak.take()
            time.sleep(WINDOW_S)
            summary["load" if args.source == "datagen" else "idle"] = peak.take()
            summary["records_seen"] = counter.count
            states = [rest(f"{url}/connectors/bench-memory-{index}/status") for index in range(TASKS)]
            summary["task_states"] = sorted({task["state"] for state in states for task in state["tasks"]})
        finally:
            peak.halt.set()
            counter.halt.set()
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
    print(json.dumps(summary, indent=2))
    return 0


def _answers(url: str) -> bool:
    try:
        rest(url)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
