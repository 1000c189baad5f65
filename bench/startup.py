"""Start-up of a `connectd standalone` process on the embedded broker: how soon it answers and moves data.

Measures, from the moment the process is started (Popen):

1. the REST API's first answer (``GET /health``: 503 "starting" or 200);
2. ``/health`` 200 (Spark up, herder started);
3. the first record in Kafka of a FileStreamSource given on the command line;

then, on the running worker, from ``POST /connectors`` of a second
FileStreamSource to its first record in Kafka. Each is the median of
``--runs`` runs (a fresh process each), with min and max.

Run:  .venv/bin/python bench/startup.py [--runs 3]
Prints a JSON summary (BENCHMARKS.md, "Start-up", holds the figures).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import runtime_pipeline as rp


def _health(url: str) -> int | None:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as answer:
        return answer.code
    except OSError:
        return None


def _first_record(bootstrap: str, topic: str, deadline: float) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    # assign(), not subscribe(): the dev broker holds a group's JoinGroup for half the session timeout.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"startup-{time.time_ns()}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 10})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                return time.monotonic()
        raise TimeoutError(f"no record in {topic}")
    finally:
        consumer.close()


def one_run(bootstrap: str, tmp: Path, run: int, extra: list[str]) -> dict[str, float]:
    from connectd.broker import free_port

    directory = tmp / f"run{run}"
    directory.mkdir()
    url = f"http://127.0.0.1:{free_port()}"
    lines = directory / "in.txt"
    lines.write_text("".join(f"line {i}\n" for i in range(100)))
    first_topic, second_topic = f"startup-{run}-a", f"startup-{run}-b"
    for topic in (first_topic, second_topic):
        rp.create_topic(bootstrap, topic, 1)
    worker = directory / "worker.properties"
    worker.write_text(f"bootstrap.servers={bootstrap}\nlisteners={url}\nspark.master=local[2]\n"
                      "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
                      "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
                      f"offset.storage.file.filename={directory / 'offsets.json'}\n"
                      + "".join(f"{line}\n" for line in extra))
    source = directory / "source.properties"
    source.write_text(f"name=a\nconnector.class=FileStreamSource\nfile={lines}\ntopic={first_topic}\n")
    with open(directory / "connectd.log", "wb") as log:
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, "-m", "connectd.cli", "standalone", str(worker), str(source)],
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        answered = healthy = None
        while healthy is None and time.monotonic() < started + 120:
            status = _health(url)
            now = time.monotonic()
            if status is not None and answered is None:
                answered = now
            if status == 200:
                healthy = now
            if process.poll() is not None:
                raise RuntimeError(f"connectd exited with {process.returncode}; see {directory / 'connectd.log'}")
            time.sleep(0.02)
        first = _first_record(bootstrap, first_topic, started + 120)
        body = json.dumps({"name": "b", "config": {"connector.class": "FileStreamSource", "file": str(lines),
                                                   "topic": second_topic}}).encode()
        request = urllib.request.Request(f"{url}/connectors", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        created = time.monotonic()
        urllib.request.urlopen(request, timeout=60).close()
        second = _first_record(bootstrap, second_topic, created + 120)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return {"rest_first_answer_s": answered - started, "health_200_s": healthy - started,
            "first_record_s": first - started, "new_task_first_record_s": second - created}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--worker-property", action="append", default=[], metavar="KEY=VALUE",
                        help="a line added to the worker properties (repeatable)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="run in DIR (made if missing) and keep each run's files and connectd.log there")
    args = parser.parse_args()
    from connectd.broker import EmbeddedBroker

    summary: dict[str, Any] = {"machine": rp.machine_info(), "loadavg_start": rp.loadavg(), "runs": args.runs,
                               "worker_properties": args.worker_property}
    with contextlib.ExitStack() as stack:
        if args.keep is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="connectd-startup-")))
        else:
            tmp = args.keep
            tmp.mkdir(parents=True, exist_ok=True)
        broker = stack.enter_context(EmbeddedBroker(host="127.0.0.1"))
        results = [one_run(broker.bootstrap_servers, tmp, run, args.worker_property) for run in range(args.runs)]
    for key in results[0]:
        values = [r[key] for r in results]
        summary[key] = {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
                        "max": round(max(values), 2)}
    summary["loadavg_end"] = rp.loadavg()
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
