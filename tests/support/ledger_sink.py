"""A sink task that writes down who wrote each record, and when: the fault tests' ledger.

Used through any sink connector whose task configs carry the connector's
config (FileStreamSink) by adding ``task.class=ledger_sink.LedgerSinkTask``
and ``ledger.dir``. Each instance appends to a file of its own in
``ledger.dir``, one line per record::

    <worker> <instance> <put> <time_ns> <topic> <partition> <offset> <value>

``worker`` is the ``CONNECTD_TEST_WORKER`` environment variable, which a
cluster test gives each worker process and which Spark's processes inherit;
``instance`` names this task instance, ``put`` numbers its ``put()`` calls.
Each ``put()`` is one ``os.write`` of all its lines.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from connectd import SinkRecord, SinkTask


class LedgerSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.worker = os.environ.get("CONNECTD_TEST_WORKER", "?")
        self.instance = uuid.uuid4().hex[:12]
        self.puts = 0
        path = Path(config["ledger.dir"]) / f"{self.worker}-{self.instance}.ledger"
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def put(self, records: list[SinkRecord]) -> None:
        if not records:
            return
        self.puts += 1
        now = time.time_ns()
        os.write(self.fd, "".join(f"{self.worker} {self.instance} {self.puts} {now} {r.topic} {r.kafka_partition} "
                                  f"{r.kafka_offset} {r.value}\n" for r in records).encode("utf-8"))

    def stop(self) -> None:
        os.close(self.fd)


@dataclass(frozen=True)
class Entry:
    worker: str
    instance: str
    put: int
    time_ns: int
    topic: str
    partition: int
    offset: int
    value: str


def read_ledger(directory: Path) -> list[Entry]:
    """Every record written, in the order of the time each put() wrote it."""
    entries = []
    for path in directory.glob("*.ledger"):
        # A put() appends its lines in one write, which this read may catch half done: the last
        # line counts once its newline is there.
        for line in path.read_text(encoding="utf-8").split("\n")[:-1]:
            worker, instance, put, stamp, topic, partition, offset, value = line.split(" ", 7)
            entries.append(Entry(worker, instance, int(put), int(stamp), topic, int(partition), int(offset), value))
    return sorted(entries, key=lambda e: (e.time_ns, e.partition, e.offset))


def writer_changes(entries: list[Entry]) -> dict[tuple[str, int], list[str]]:
    """Per partition, the workers that wrote it, in turn: ``[w1, w3]`` is one handover; two workers
    writing one partition at once show as ``[w1, w3, w1, w3, …]``."""
    turns: dict[tuple[str, int], list[str]] = {}
    for entry in entries:
        seen = turns.setdefault((entry.topic, entry.partition), [])
        if not seen or seen[-1] != entry.worker:
            seen.append(entry.worker)
    return turns
