"""How long a Connect cluster takes to rebalance: 20 tasks over 1 → 3 workers and back to 2.

Against one embedded tansu broker, real `connectd distributed` processes
(each with its Spark) share a FileStreamSink with ``tasks.max=20`` on an
empty 20-partition topic. Measured, each from the event to every one of
the 20 tasks RUNNING again where the leader put it (polled on the REST API
every 50 ms):

- **start → joined**: a second, then a third worker starts; from its
  process start until it is a member of the group (``group_joined`` in its
  log). A worker joins as soon as it has read the cluster's state, saying it
  is warming, and starts Spark meanwhile;
- **joined → first task RUNNING**: from then until the first task moved to
  it reports RUNNING (its log's first task ``status_changed`` to RUNNING):
  its Spark's start and warm-up, then the two rounds that move its share;
- **join**: from its first JoinGroup until the tasks are spread over all
  workers (±1);
- **clean leave**: SIGTERM to the third worker; from the signal until its
  tasks run on the other two.

Lost work waits ``scheduled.rebalance.max.delay.ms`` only when a worker
*dies*; a clean leave and a join involve no delay, so nothing is subtracted.
Each worker runs Spark as ``local[1]``; the connector restarts failed tasks
(``errors.restart.enable``), since three Spark JVMs on two cores make a
query's Python worker miss its start-up deadline now and then; such Spark
hiccups restart the query at once (not as a failure), and both are counted
from the workers' logs. Session timeout 3 s, heartbeat 500 ms: the dev broker holds a JoinGroup for
half the session timeout, so every round costs it ~1.5 s that a Kafka broker
does not.

Run:  .venv/bin/python bench/rebalance.py [--tasks 20] [--runs 1]
Prints a JSON summary; the figures go to BENCHMARKS.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from datetime import datetime
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from connectd.broker import EmbeddedBroker, free_port

POLL_S = 0.05


def _get(url: str) -> dict:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())
    except OSError:
        return {}


def _post(url: str, body: dict) -> int:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status


def _placement(url: str, tasks: int) -> dict[int, str]:
    status = _get(f"{url}/connectors/bench/status")
    placed = {t["id"]: t["worker_id"] for t in status.get("tasks", []) if t["state"] == "RUNNING"}
    return placed if len(placed) == tasks else {}


def _balanced(placed: dict[int, str], workers: set[str]) -> bool:
    load = Counter(placed.values())
    return set(load) == workers and max(load.values()) - min(load.values()) <= 1


def _wait(condition, timeout: float, what: str, show=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(POLL_S)
    raise SystemExit(f"timed out after {timeout:g} s waiting for {what}" + (f"; last seen: {show()}" if show else ""))


def _first_event(log: Path, event: str, timeout: float = 120, **fields: object) -> float:
    """The wall-clock time of the first *event* in a worker's JSON log whose *fields* are as given
    (``task=True``: any task, not the connector)."""
    def found() -> float | None:
        for line in log.read_text(errors="replace").splitlines():
            if f'"event": "{event}"' in line:
                record = json.loads(line)
                if all(record.get(k) is not None if v is True else record.get(k) == v for k, v in fields.items()):
                    return datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()
        return None
    return _wait(found, timeout, f"{event} {fields or ''} in {log.name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="connectd-bench-rebalance-"))
    processes: dict[str, subprocess.Popen] = {}
    with EmbeddedBroker(port=0) as broker:
        topic = "bench-rebalance"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic, args.tasks, 1)])[topic].result(timeout=30)
        del admin
        settings = {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "bench-rebalance",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": "bench-configs", "offset.storage.topic": "bench-offsets",
            "status.storage.topic": "bench-status",
            "config.storage.replication.factor": "1", "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "session.timeout.ms": "3000", "heartbeat.interval.ms": "500",
            "rest.advertised.host.name": "127.0.0.1",
            "spark.master": "local[1]", "spark.sql.shuffle.partitions": "1",
        }
        urls: dict[str, str] = {}

        def start(name: str) -> None:
            urls[name] = f"http://127.0.0.1:{free_port()}"
            path = workdir / f"{name}.properties"
            path.write_text("".join(f"{k}={v}\n" for k, v in {**settings, "listeners": urls[name]}.items()))
            processes[name] = subprocess.Popen([sys.executable, "-m", "connectd.cli", "distributed", str(path)],
                                               stdout=open(workdir / f"{name}.log", "wb"), stderr=subprocess.STDOUT,
                                               start_new_session=True)

        def ids(*names: str) -> set[str]:
            return {urls[n].removeprefix("http://") for n in names}

        results: dict[str, float] = {}
        try:
            start("w1")
            _wait(lambda: _get(f"{urls['w1']}/health").get("status") == "healthy", 120, "w1 healthy")
            assert _post(f"{urls['w1']}/connectors", {"name": "bench", "config": {
                "connector.class": "FileStreamSink", "topics": topic, "tasks.max": str(args.tasks),
                "file": str(workdir / "out.txt"),
                # Three Spark JVMs on two cores: a query's Python worker may miss its connect-back
                # deadline; the task is then restarted (counted in the time, and reported).
                "errors.restart.enable": "true"}}) == 201
            started = time.time()
            _wait(lambda: _placement(urls["w1"], args.tasks), 300, "every task RUNNING on w1")
            results["first_start_s"] = time.time() - started
            for joining, members in (("w2", ("w1", "w2")), ("w3", ("w1", "w2", "w3"))):
                spawned = time.time()
                start(joining)
                log = workdir / f"{joining}.log"
                joining_at = _first_event(log, "group_joining")
                _wait(lambda m=members: _balanced(_placement(urls["w1"], args.tasks), ids(*m)), 120,
                      f"tasks spread over {members}", lambda: _get(f"{urls['w1']}/connectors/bench/status"))
                results[f"join_{joining}_s"] = time.time() - joining_at
                joined = _first_event(log, "group_joined")
                results[f"start_to_joined_{joining}_s"] = joined - spawned
                results[f"joined_to_first_task_running_{joining}_s"] = (
                    _first_event(log, "status_changed", task=True, state="RUNNING") - joined)
            left = time.time()
            processes["w3"].send_signal(signal.SIGTERM)
            _wait(lambda: _balanced(_placement(urls["w1"], args.tasks), ids("w1", "w2")), 300,
                  "w3's tasks on w1 and w2")
            results["leave_w3_s"] = time.time() - left
            processes.pop("w3").wait(120)
        finally:
            for process in processes.values():
                process.send_signal(signal.SIGTERM)
            for process in processes.values():
                try:
                    process.wait(120)
                except subprocess.TimeoutExpired:
                    pass
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    logs = [log.read_text(errors="replace") for log in workdir.glob("w*.log")]
    restarts = sum(text.count('"event": "task_restarting"') for text in logs)
    hiccups = sum(text.count('"event": "task_spark_hiccup"') for text in logs)  # restarted at once, not failed
    print(json.dumps({"tasks": args.tasks, "task_restarts": restarts, "spark_hiccups": hiccups,
                      "machine": f"{platform.machine()} {os.cpu_count()} cores",
                      "date": datetime.now().strftime("%Y-%m-%d"), "logs": str(workdir),
                      **{k: round(v, 2) for k, v in results.items()}}, indent=2))


if __name__ == "__main__":
    main()
