"""`connectd standalone` as a user runs it: a real process, the real broker, real Spark.

file source → topic (3 partitions) → file sink, then the same with a SIGKILL
in the middle. The worker runs in its own process group: SIGTERM goes to the worker
alone (it stops Spark itself), SIGKILL to the whole group, taking Spark's
JVM with it as a crash would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

# 300,000 lines are 30 micro-batches each way (batches of 10,000); CONNECTD_E2E_LINES=1000000 for more.
LINES = int(os.environ.get("CONNECTD_E2E_LINES", "300000"))


def write_input(path: Path, count: int) -> list[str]:
    lines = [f"line {i:07d} " + "x" * (i % 50) for i in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return lines


def setup(broker, worker_config, tmp_path: Path, topic: str, count: int) -> tuple[list[str], list[str]]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(timeout=30)
    lines = write_input(tmp_path / "in.txt", count)
    # Batches of 10,000 at most, so that what a crash may replay is bounded (see the SIGKILL test).
    worker = worker_config.file(**{"task.shutdown.graceful.timeout.ms": "30000",
                                   "source.batch.max.records": "10000", "sink.batch.max.records": "10000"})
    (tmp_path / "source.properties").write_text(
        f"name=lines-in\nconnector.class=FileStreamSource\nfile={tmp_path / 'in.txt'}\ntopic={topic}\nbatch.size=5000\n")
    (tmp_path / "sink.json").write_text(json.dumps({"name": "lines-out", "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "file": str(tmp_path / "out.txt"), "topics": topic}}))
    return lines, [str(worker), *(str(tmp_path / f) for f in ("source.properties", "sink.json"))]


def start_worker(files: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "connectd.cli", "standalone", *files],
                            stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)


def stop_group(process: subprocess.Popen, signum: int, timeout: float = 90) -> int:
    """SIGKILL the worker with Spark's JVM: a crash."""
    os.killpg(process.pid, signum)
    return process.wait(timeout)


def terminate(process: subprocess.Popen, timeout: float = 90) -> int:
    """SIGTERM the worker alone, as systemd does with KillMode=mixed: it stops Spark itself."""
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout)


def count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def partition_of_each_line(consume_records, topic: str) -> dict[str, int]:
    where: dict[str, int] = {}
    order: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for m in consume_records(topic, partitions=3, timeout=120):  # the whole topic
        line = m.value().decode()
        where.setdefault(line, m.partition())
        order[m.partition()].append(int(line.split()[1]))
    for p, numbers in order.items():  # the topic keeps the file's order within each partition
        firsts = list(dict.fromkeys(numbers))
        assert firsts == sorted(firsts), f"partition {p} out of order"
    return where


def test_file_to_topic_to_file_moves_every_line_in_partition_order(broker, topic_name, tmp_path, wait_until,
                                                                   consume_records, worker_config):
    lines, files = setup(broker, worker_config, tmp_path, topic_name, LINES)
    worker = start_worker(files, tmp_path / "worker.log")
    try:
        # reading a big file costs: poll it less often
        wait_until(lambda: count_lines(tmp_path / "out.txt"), f"{LINES} lines in out.txt", until=lambda n: n >= LINES,
                   timeout=600, interval=0.25)
        assert terminate(worker) == 0
    finally:
        if worker.poll() is None:
            stop_group(worker, signal.SIGKILL)
    out = (tmp_path / "out.txt").read_text().splitlines()
    assert Counter(out) == Counter(lines)  # every line, exactly once, after a clean run and stop
    where = partition_of_each_line(consume_records, topic_name)
    for p in range(3):  # lines that went through one partition keep their source order in the file
        numbers = [int(line.split()[1]) for line in out if where[line] == p]
        assert numbers == sorted(numbers), f"partition {p}: file order differs from source order"
    stored = json.loads((tmp_path / "offsets.json").read_text())["offsets"]
    assert stored == [{"key": ["lines-in", {"filename": str(tmp_path / "in.txt")}],
                       "value": {"position": (tmp_path / "in.txt").stat().st_size}}]


def test_sigkill_mid_stream_loses_no_line(broker, topic_name, tmp_path, wait_until, worker_config):
    count = max(LINES // 4, 250_000)
    lines, files = setup(broker, worker_config, tmp_path, topic_name, count)
    worker = start_worker(files, tmp_path / "worker.log")
    try:
        wait_until(lambda: count_lines(tmp_path / "out.txt"), "the first lines", until=lambda n: n >= count // 5,
                   timeout=300, interval=0.25)
        assert count_lines(tmp_path / "out.txt") < count, "too fast to kill mid-stream; raise the line count"
        stop_group(worker, signal.SIGKILL)  # no chance to commit anything in flight
        worker = start_worker(files, tmp_path / "worker.log")
        wait_until(lambda: set(lines) <= set((tmp_path / "out.txt").read_text().splitlines()),
                   "every line after the restart", timeout=600, interval=0.25)
        assert terminate(worker) == 0
    finally:
        if worker.poll() is None:
            stop_group(worker, signal.SIGKILL)
    out = (tmp_path / "out.txt").read_text().splitlines()
    missing = set(lines) - set(out)
    assert not missing
    duplicates = len(out) - len(set(out))
    # at-least-once: only batches in flight at the kill come twice (a source batch
    # and a sink batch, each at most 10,000 records)
    assert duplicates <= 20_000, f"{duplicates} duplicates"
