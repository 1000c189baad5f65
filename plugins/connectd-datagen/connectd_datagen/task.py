"""The datagen source task: paced records of an annotated Avro schema, resumable from Confluent's offsets.

Offsets are kafka-connect-datagen's own, so a connector moved over resumes
where it stopped: source partition ``{"task.id": <n>}``, offset
``{"task.generation": <g+1>, "current.iteration": <records so far>,
"random.seed": <seed>}``. Re-seeding costs as much as making a record, so
the generator is re-seeded for every batch a poll returns rather than for
every record (as Confluent's is): the records of a batch store the batch's
seed, the last one the seed of the next batch. A task restarted from the end
of a batch goes on with the records it would have sent; one restarted from
within a batch draws that batch's random values again. Either way
``current.iteration`` is exact, so ``iterations`` is not exceeded and
``iteration`` fields (``orderid``) keep counting. A seed Confluent's task
stored is the seed of the next batch.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Mapping

from connectd import Headers, Schema, SourceRecord, SourceTask

from connectd_datagen.avro import Generator, connect_schema
from connectd_datagen.connector import DatagenConnector, schema_of

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
_LONG = 2**64


def _signed(bits: int) -> int:
    # Seeds are stored as Java longs, as Confluent's task stores them.
    return bits - _LONG if bits >= _LONG // 2 else bits


class DatagenTask(SourceTask):
    """Generates records of one Avro schema into ``kafka.topic``.

    The value is the generated record as a Connect struct; the key is the
    ``schema.keyfield`` field (a quickstart's key field by default) with that
    field's own schema — a string, an int, a long — or ``null`` (an optional
    string schema) without one. Each record has the headers
    ``task.generation``, ``task.id`` and ``current.iteration`` (int64), and
    no timestamp of its own, as Confluent's.

    With ``max.interval`` > 0 each record is due a random 0…max.interval ms
    after the one before; :meth:`poll` returns the records already due (at
    most ``batch.size``) and waits for the first one, up to about a second.
    With ``max.interval`` ≤ 0 every poll returns a full batch. After
    ``iterations`` records (when ≥ 1) the task logs that it is done and idles
    (Confluent's fails with "Stopping connector: generated the configured N
    number of messages"; stopping to poll says the same without a FAILED task).
    """

    def start(self, config: Mapping[str, str]) -> None:
        settings = DatagenConnector.config_def.parse(config)
        self.topic: str = settings["kafka.topic"]
        self.max_interval_ms: int = max(settings["max.interval"], 0)
        self.iterations: int = settings["iterations"]
        self.batch_size: int = settings["batch.size"]
        self.task_id = int(config.get("task.id", "0"))
        avro, self.key_field = schema_of(settings)
        self.partition = {"task.id": self.task_id}
        # The generator is always freshly seeded with self._seed: the seed the next batch's records store.
        self._random = random.Random()
        seed = settings["random.seed"]
        if seed is not None:
            # Each task advances the seeded source task.id times, so tasks differ but repeat run to run.
            for _ in range(self.task_id):
                self._random.seed(seed)
                seed = _signed(self._random.getrandbits(64))
        else:
            seed = _signed(self._random.getrandbits(64))
        self.generation, self.count = 0, 0
        stored = self.context.offset_storage_reader.offset(self.partition)
        if stored:
            # The stored offset is the next lifetime's state: restore it as it is.
            self.generation = int(stored.get("task.generation", 0))
            self.count = int(stored.get("current.iteration", 0))
            if stored.get("random.seed") is not None:
                seed = int(stored["random.seed"])
            log.info("datagen_resumed: task %d continues after %d records (generation %d)",
                     self.task_id, self.count, self.generation)
        self._seed = seed
        self._random.seed(seed)
        self.value_schema = connect_schema(avro)
        self._generator = Generator(avro, self._random, self.count, connect=self.value_schema)
        key = self.value_schema.field(self.key_field) if self.key_field else None
        # The key is the value's own key field (Confluent's converts it apart: an equal value).
        self._key_field = key
        self.key_schema = key.schema if key is not None else Schema.OPTIONAL_STRING
        # Every record gets a copy of these plus its current.iteration.
        self._headers = (Headers().add("task.generation", self.generation, Schema.INT64)
                         .add("task.id", self.task_id, Schema.INT64))
        self._stopping = threading.Event()
        self._said_done = False
        self._epoch = time.monotonic()
        self._due_ms = self._interval()

    def _elapsed_ms(self) -> float:
        return (time.monotonic() - self._epoch) * 1000.0

    def _interval(self) -> int:
        return self._random.randint(0, self.max_interval_ms) if self.max_interval_ms > 0 else 0

    def _done(self) -> bool:
        return 0 < self.iterations <= self.count

    def poll(self) -> list[SourceRecord] | None:
        if self._done():
            if not self._said_done:
                log.info("datagen_iterations_done: generated the configured %d number of messages", self.count)
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
        seed = self._seed
        if self.max_interval_ms <= 0:
            due = self.batch_size if self.iterations < 1 else min(self.batch_size, self.iterations - self.count)
            records = self._records(due, seed)
        else:
            records = []
            while self._due_ms <= now and len(records) < self.batch_size and not self._done():
                records += self._records(1, seed)
                self._due_ms += self._interval()
        if records:
            # Re-seed for the next batch, and store its seed with this batch's last record,
            # so a restart from there continues as if the task had not stopped.
            self._seed = _signed(self._random.getrandbits(64))
            self._random.seed(self._seed)
            records[-1].source_offset["random.seed"] = self._seed
        return records

    def _records(self, count: int, seed: int) -> list[SourceRecord]:
        generate, key_field, headers, int64 = self._generator.generate, self._key_field, self._headers, Schema.INT64
        topic, partition, key_schema, value_schema = self.topic, self.partition, self.key_schema, self.value_schema
        generation, first = self.generation + 1, self.count
        records = []
        for iteration in range(first, first + count):
            value = generate()
            records.append(SourceRecord(
                topic=topic,
                kafka_partition=None,
                key_schema=key_schema,
                key=value.get(key_field) if key_field is not None else None,
                value_schema=value_schema,
                value=value,
                timestamp=None,
                headers=headers.copy().add("current.iteration", iteration, int64),
                source_partition=partition,
                source_offset={"task.generation": generation, "current.iteration": iteration + 1, "random.seed": seed},
            ))
        self.count = first + count
        return records

    def stop(self) -> None:
        self._stopping.set()
