"""The datagen source task: paced records of a quickstart schema, resumable from stored offsets.

Offsets: source partition ``{"task": <task.id>, "quickstart": <name>}``,
offset ``{"iteration": <records generated so far>}``. A restarted task
counts on from the stored offset, so ``iterations`` is not exceeded and
``orderid`` keeps increasing.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Mapping

from connectd import Schema, SourceRecord, SourceTask

from connectd_datagen.connector import DatagenConnector
from connectd_datagen.quickstarts import QUICKSTARTS, Quickstart

log = logging.getLogger(__name__)

# How long poll() idles once the task's iterations are done, so a finished
# task neither spins nor holds up a stop.
_IDLE_WAIT_S = 0.1
# Longest wait for the next record inside one poll(): poll must return within
# about a second so the task can be stopped promptly.
_MAX_WAIT_MS = 1000.0
# How far the schedule may fall behind the clock (polls delayed by a slow
# flush, a paused task). Beyond this the missed records are skipped rather
# than sent in one burst, as Confluent's datagen (which sleeps between
# records) never bursts either.
_MAX_LAG_MS = 1000.0


def _generator(seed: int | None, task_id: int, start: int) -> random.Random:
    if seed is None:
        return random.Random()
    base = seed * 1000003 + task_id
    # A resumed task must not replay the values it sent before the restart;
    # replaying the generator up to *start* would cost time in proportion to it.
    return random.Random(base if start == 0 else f"{base}/{start}")


class DatagenTask(SourceTask):
    """Generates records of one quickstart schema, keyed by a string, into ``kafka.topic``.

    With ``max.interval`` > 0 each record is due a random 0…max.interval ms
    after the one before; :meth:`poll` returns the records already due (at
    most ``batch.size``) and waits for the first one, up to about a second.
    With ``max.interval`` = 0 every poll returns a full batch. With
    ``random.seed`` set the values (all but the time fields, which follow the
    clock) are the same on every run of the same task.
    """

    def start(self, config: Mapping[str, str]) -> None:
        settings = DatagenConnector.config_def.parse(config)
        self.topic: str = settings["kafka.topic"]
        self.quickstart: Quickstart = QUICKSTARTS[settings["quickstart"].lower()]
        self.max_interval_ms: int = settings["max.interval"]
        self.iterations: int = settings["iterations"]
        self.batch_size: int = settings["batch.size"]
        task_id = int(config.get("task.id", "0"))
        self.partition = {"task": task_id, "quickstart": self.quickstart.name}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.count = int(stored.get("iteration", 0)) if stored else 0
        if self.count:
            log.info("datagen_resumed: task %d continues %s after %d records", task_id, self.quickstart.name, self.count)
        self._random = _generator(settings["random.seed"], task_id, self.count)
        self._stopping = threading.Event()
        self._said_done = False
        # The schedule runs on the monotonic clock; times in records are wall-clock ms.
        self._epoch_wall_ms = time.time_ns() // 1_000_000
        self._epoch = time.monotonic()
        self._due_ms = self._interval()

    def _elapsed_ms(self) -> float:
        return (time.monotonic() - self._epoch) * 1000.0

    def _interval(self) -> int:
        return self._random.randint(0, self.max_interval_ms) if self.max_interval_ms > 0 else 0

    def _done(self) -> bool:
        return 0 <= self.iterations <= self.count

    def poll(self) -> list[SourceRecord] | None:
        if self._done():
            if not self._said_done:
                log.info("datagen_iterations_done: %d records of %s generated", self.count, self.quickstart.name)
                self._said_done = True
            self._stopping.wait(_IDLE_WAIT_S)
            return None
        now = self._elapsed_ms()
        self._due_ms = max(self._due_ms, now - (_MAX_LAG_MS if self.max_interval_ms > 0 else 0.0))
        if self._due_ms > now:
            if self._stopping.wait(min(self._due_ms - now, _MAX_WAIT_MS) / 1000.0):
                return None
            now = self._elapsed_ms()
            if self._due_ms > now:
                return None
        records: list[SourceRecord] = []
        while self._due_ms <= now and len(records) < self.batch_size and not self._done():
            records.append(self._record(self._epoch_wall_ms + int(self._due_ms)))
            self._due_ms += self._interval()
        return records

    def _record(self, time_ms: int) -> SourceRecord:
        value = self.quickstart.generate(self._random, self.count, time_ms)
        self.count += 1
        return SourceRecord(
            topic=self.topic,
            kafka_partition=None,
            key_schema=Schema.STRING,
            key=self.quickstart.key(value),
            value_schema=self.quickstart.schema,
            value=value,
            timestamp=time_ms,
            source_partition=self.partition,
            source_offset={"iteration": self.count},
        )

    def stop(self) -> None:
        self._stopping.set()
