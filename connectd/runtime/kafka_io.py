"""Kafka inside Spark: a streaming reader and writer on confluent-kafka.

Spark ships no Kafka connector usable here, so tasks read and write Kafka
through PySpark's Python Data Source API. The format is ``connectd-kafka``.

Where the code runs
-------------------
Spark keeps one long-lived Python process per query for the reader's
``initialOffset``/``latestOffset``/``partitions`` and the writer's
``commit``; ``read`` and ``write`` run in executor Python workers, to which
the reader and writer are pickled. Live clients are never pickled: the
reader's consumer lives only in the long-lived process, producers are cached
per worker process.

Reading (sink tasks)
--------------------
Offsets are ``{"<topic>:<partition>": <next offset to read>}``.

- ``initialOffset`` is the ``start`` option: offsets the task's runtime took
  from the consumer group (Kafka is the truth; the per-run checkpoint is
  scratch), so a moved task resumes where the group committed.
- ``latestOffset(start)`` consumes up to ``max.records`` records after
  ``start`` with a consumer assigned to the task's partitions and keeps them;
  the end offset of a partition is one past the last record read. It never
  asks the broker for "latest" (ListOffsets): what was read is what is
  offered, so a batch never names offsets it has not seen.
- ``partitions(start, end)`` hands out the kept records, one input partition
  per Kafka partition; when Spark replans a range the reader does not hold
  (a batch replayed after a restart) the range is read again from Kafka.
- With ``rows=ranges`` the reader keeps no records: each micro-batch is one
  row per Kafka partition, ``topic, partition, start, end`` (:data:`RANGE_SCHEMA`),
  and whoever consumes the batch reads ``[start, end)`` itself. Record-level
  sink tasks use this: their plugin lives in the worker process, which reads
  the ranges there with :class:`RangeReader` instead of having every record
  copied from the reader's process through the JVM into it (5-10 times the
  cost of reading them from Kafka, measured in BENCHMARKS.md).
- Graceful stop: once the ``stop.file`` exists, ``latestOffset`` offers
  nothing new, so the batch in flight finishes and the query goes idle.
  While the ``pause.file`` exists it does the same, and reading resumes
  where it was when the file goes.

Rows: ``topic, partition, offset, timestamp, timestamp_type, key, value,
headers`` (headers: array of ``key``/``value`` structs; bytes stay bytes).

Writing (source tasks)
----------------------
Each executor task produces its rows — Spark's Arrow batches, taken column by
column (:class:`DataSourceStreamArrowWriter`), no Row object per record — with
an idempotent producer (``acks=all``) and flushes before returning, so a batch counts as written
only when every record is acknowledged; a delivery error fails the batch
(which Spark then retries or the task reports). Rows may carry the source
partition and offset (JSON text) of the record; the commit message of each
executor task holds the last offset per source partition, and the writer's
``commit`` — in the long-lived process, after every write succeeded —
passes them to the callback named by the ``commit.hook`` option
(``module:function``) with the ``commit.hook.arg`` option (or
``commit.hook.secret.arg``, which Spark redacts), which stores them. A row whose topic is null only
moves an offset (its record was dropped by a transform) and is not
produced. Offsets are thus stored
only after the data is durable.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)

__all__ = [
    "FORMAT",
    "RANGE_SCHEMA",
    "ROW_SCHEMA",
    "WRITE_SCHEMA",
    "KafkaDataSource",
    "RangeReader",
    "consumer_settings",
    "decode_tp",
    "encode_tp",
]

FORMAT = "connectd-kafka"

ROW_SCHEMA = (
    "topic string, partition int, offset long, timestamp long, timestamp_type int, "
    "key binary, value binary, headers array<struct<key: string, value: binary>>"
)

#: A micro-batch's rows with ``rows=ranges``: the offsets ``[start, end)`` of each partition.
RANGE_SCHEMA = "topic string, partition int, start long, end long"

#: What the writer accepts: a record to produce, and where it came from.
WRITE_SCHEMA = (
    "topic string, partition int, key binary, value binary, timestamp long, "
    "headers array<struct<key: string, value: binary>>, source_partition string, source_offset string"
)

_WRITE_COLUMNS = ("topic", "partition", "key", "value", "timestamp", "headers", "source_partition", "source_offset")


def write_arrow_batch(rows: list[tuple]) -> Any:
    """*rows* in :data:`WRITE_SCHEMA` order as one ``pyarrow.RecordBatch`` (what a reader's
    ``read`` may yield: Spark then converts no row in Python)."""
    import pyarrow as pa

    schema = _write_arrow_schema()
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)],
                                      schema=schema)


_ARROW_SCHEMA: Any = None


def _write_arrow_schema() -> Any:
    global _ARROW_SCHEMA
    if _ARROW_SCHEMA is None:
        import pyarrow as pa

        header = pa.struct([("key", pa.string()), ("value", pa.binary())])
        _ARROW_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("key", pa.binary()),
                                   ("value", pa.binary()), ("timestamp", pa.int64()), ("headers", pa.list_(header)),
                                   ("source_partition", pa.string()), ("source_offset", pa.string())])
    return _ARROW_SCHEMA


# Spark redacts option values whose key matches spark.redaction.regex
# ("secret|password|token|..."). The value is either client settings, or -
# what the runtime passes - the worker config as written plus which client,
# resolved in the process that uses it, so no resolved secret is in options.
CLIENT_OPTION = "kafka.client.secret"


#: ``commit.hook.arg`` under a name Spark redacts (``spark.redaction.regex``).
COMMIT_HOOK_SECRET_ARG = "commit.hook.secret.arg"


def client_option(worker_config: dict[str, str], client: str, overrides: dict[str, str] | None = None) -> str:
    """The :data:`CLIENT_OPTION` value for a *client* built from a worker config as written."""
    return json.dumps({"worker_config": worker_config, "client": client, "overrides": overrides or {}})


def client_settings(option: str) -> dict[str, Any]:
    """confluent-kafka settings from a :data:`CLIENT_OPTION` value, placeholders resolved here."""
    spec = json.loads(option or "{}")
    if "worker_config" not in spec:
        return spec
    from connectd.config.worker import WorkerConfig

    worker = WorkerConfig(spec["worker_config"], "standalone", source="worker")
    return worker.client_config(spec["client"], "confluent", overrides=spec.get("overrides"))

_DEFAULT_MAX_RECORDS = 10_000
_POLL_TIMEOUT = 0.02


def encode_tp(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def decode_tp(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)


class _Partition(InputPartition):
    def __init__(self, key: str, start: int, end: int, rows: list[tuple] | None) -> None:
        self.key = key
        self.start = start
        self.end = end
        self.rows = rows


def _row(message: Any) -> tuple:
    timestamp_type, timestamp = message.timestamp()
    headers = message.headers()
    return (
        message.topic(),
        message.partition(),
        message.offset(),
        timestamp if timestamp_type != 0 else None,
        timestamp_type,
        message.key(),
        message.value(),
        [(k, v) for k, v in headers] if headers else None,
    )


class KafkaStreamReader(DataSourceStreamReader):
    """Reads the task's assigned partitions from their start offsets."""

    def __init__(self, options: dict[str, str]) -> None:
        self.client_option = options.get(CLIENT_OPTION, "{}")
        self.client: dict[str, Any] = {}
        self.start_offsets: dict[str, int] = json.loads(options["start"])
        self.max_records = int(options.get("max.records", _DEFAULT_MAX_RECORDS))
        self.stop_file = options.get("stop.file")
        self.pause_file = options.get("pause.file")
        self.ranges_only = options.get("rows", "records") == "ranges"
        self._consumer: Any = None
        self._position: dict[str, int] = {}
        self._kept: dict[str, list[tuple]] = {}
        self._previous_end: dict[str, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_consumer"] = None
        state["_kept"] = {}
        return state

    def initialOffset(self) -> dict[str, int]:
        return dict(self.start_offsets)

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        # Before PySpark 4.2, latestOffset() took no arguments: continue from the last end.
        if start is None:
            start = self._previous_end if self._previous_end is not None else self.initialOffset()
        start = {k: int(v) for k, v in start.items()}
        if _exists(self.stop_file) or _exists(self.pause_file):
            self._previous_end = start
            return start
        consumer = self._consumer_at(start)
        end = dict(start)
        kept: dict[str, list[tuple]] = {}
        wanted = self.max_records
        deadline = time.monotonic() + _POLL_TIMEOUT * 4
        while wanted > 0:
            asked = min(wanted, 10_000)
            messages = consumer.consume(num_messages=asked, timeout=_POLL_TIMEOUT)
            if not messages:
                break
            for message in messages:
                if message.error() is not None:
                    _raise_unless_benign(message.error())
                    continue
                key = encode_tp(message.topic(), message.partition())
                if not self.ranges_only:
                    kept.setdefault(key, []).append(_row(message))
                self._position[key] = end[key] = message.offset() + 1
                wanted -= 1
            # Fewer than asked: the backlog is drained; offer what we have now
            # rather than wait for stragglers (latency).
            if len(messages) < asked or time.monotonic() > deadline:
                break
        self._kept = kept
        self._previous_end = end
        return end

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[_Partition]:
        if self.ranges_only:
            ranges = []
            for key, stop in end.items():
                begin = int(start.get(key, self.start_offsets.get(key, 0)))
                if int(stop) > begin:
                    ranges.append((*decode_tp(key), begin, int(stop)))
            return [_Partition("ranges", 0, 0, ranges)]
        parts = []
        for key, stop in end.items():
            begin = int(start.get(key, self.start_offsets.get(key, 0)))
            if int(stop) <= begin:
                continue
            kept = [row for row in self._kept.get(key, []) if begin <= row[2] < int(stop)]
            covered = kept and kept[0][2] == begin and kept[-1][2] == int(stop) - 1
            parts.append(_Partition(key, begin, int(stop), kept if covered else None))
        return parts

    def read(self, partition: _Partition) -> Iterator[tuple]:
        if partition.rows is not None:
            yield from partition.rows
            return
        yield from _read_range(client_settings(self.client_option), partition.key, partition.start, partition.end)

    def commit(self, end: dict[str, int]) -> None:
        # Offsets are committed to the consumer group by the sink task after
        # its plugin flushed, not here: Spark calls this late, and never for
        # the last batch.
        return None

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _consumer_at(self, start: dict[str, int]) -> Any:
        """The consumer, positioned at *start* (re-assigned only when it is not there)."""
        from confluent_kafka import Consumer, TopicPartition

        if self._consumer is None:
            self.client = client_settings(self.client_option)
            self._consumer = Consumer(consumer_settings(self.client))
            self._position = {}
        if self._position != start:
            self._consumer.assign([TopicPartition(*decode_tp(k), int(v)) for k, v in start.items()])
            self._position = dict(start)
        return self._consumer


def _exists(path: str | None) -> bool:
    return bool(path) and os.path.exists(path)


def consumer_settings(client: dict[str, Any]) -> dict[str, Any]:
    """confluent-kafka Consumer settings for reading offset ranges: *client* over connectd's defaults."""
    config = {
        "group.id": client.get("group.id", "connectd-reader"),
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        # tansu (and a quiet Kafka) answer fetches only when the wait expires;
        # a short wait keeps latency low. librdkafka's 1 s queue backoff
        # stalls a steady consumer.
        "fetch.wait.max.ms": 10,
        "fetch.queue.backoff.ms": 10,
    }
    config.update({k: v for k, v in client.items() if k != "group.id"})
    return config


def _read_range(client: dict[str, Any], key: str, start: int, end: int) -> Iterator[tuple]:
    """The records of one partition with offsets in [start, end), read again from Kafka."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(consumer_settings(client))
    try:
        topic, partition = decode_tp(key)
        consumer.assign([TopicPartition(topic, partition, start)])
        next_offset = start
        deadline = time.monotonic() + 120
        while next_offset < end:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{key}: offsets {next_offset}..{end - 1} could not be read again within 120 s")
            for message in consumer.consume(num_messages=min(end - next_offset, 10_000), timeout=0.5):
                if message.error() is not None:
                    _raise_unless_benign(message.error())
                    continue
                if message.offset() >= end:
                    next_offset = end
                    break
                yield _row(message)
                next_offset = message.offset() + 1
    finally:
        consumer.close()


class RangeReader:
    """Reads exact offset ranges of a task's partitions with one long-lived consumer.

    For ``rows=ranges`` micro-batches, in the process that handles them. The
    consumer stays assigned between batches, so the next batch's records are
    usually fetched already when it starts; records fetched past a range's end
    are kept for the range that starts there. When a range does not start where
    the last one of its partition ended (the first batch, a batch replayed
    after a restart, a partition new to the task) the consumer is assigned
    again at the ranges' starts.

    :param consumer: a confluent-kafka Consumer (:func:`consumer_settings`); only
        assigned here, never subscribed. The caller closes it.
    :param timeout: seconds without a record before :meth:`read` gives up.
    """

    def __init__(self, consumer: Any, timeout: float = 120.0) -> None:
        self.consumer = consumer
        self.timeout = timeout
        self._next: dict[tuple[str, int], int] = {}  # where the next range of each assigned partition starts
        self._ahead: dict[tuple[str, int], list[tuple]] = {}

    def read(self, ranges: list[tuple[str, int, int, int]], chunk: int = 10_000) -> Iterator[list[tuple]]:
        """The records of *ranges* (``(topic, partition, start, end)``) as :data:`ROW_SCHEMA` tuples.

        Yields lists of at most *chunk* records, in offset order per partition.
        """
        wanted = {(t, p): (start, end) for t, p, start, end in ranges if end > start}
        if any(self._next.get(tp) != start for tp, (start, _) in wanted.items()):
            self._assign(wanted)
        missing: dict[tuple[str, int], int] = {}  # partition -> end of its range, until read to there
        position: dict[tuple[str, int], int] = {}  # partition -> next offset wanted
        out: list[tuple] = []
        for tp, (start, end) in wanted.items():
            ahead = self._ahead.pop(tp, [])
            used, last = 0, None
            for row in ahead:
                if row[2] >= end:
                    break
                out.append(row)
                used, last = used + 1, row[2]
                if len(out) >= chunk:
                    yield out
                    out = []
            if used < len(ahead):
                self._ahead[tp] = ahead[used:]  # the range ends before what was fetched ahead
            elif last is None or last + 1 < end:
                missing[tp] = end
                position[tp] = start if last is None else last + 1
            self._next[tp] = end
        deadline = time.monotonic() + self.timeout
        consume = self.consumer.consume
        while missing:
            # Ask for no more than the ranges still hold: consume() waits out its timeout
            # when fewer records than asked exist.
            still = sum(end - position[tp] for tp, end in missing.items())
            messages = consume(num_messages=max(min(chunk - len(out), still), 1), timeout=0.1)
            if messages:
                deadline = time.monotonic() + self.timeout
            elif time.monotonic() > deadline:
                raise TimeoutError(
                    f"offsets not readable within {self.timeout:.0f} s: "
                    + ", ".join(f"{t}[{p}] up to {end - 1}" for (t, p), end in sorted(missing.items())))
            for message in messages:
                if message.error() is not None:
                    _raise_unless_benign(message.error())
                    continue
                tp = (message.topic(), message.partition())
                end = missing.get(tp)
                row = _row(message)
                if end is None or row[2] >= end:
                    self._ahead.setdefault(tp, []).append(row)
                    if end is not None:
                        del missing[tp]
                    continue
                out.append(row)
                position[tp] = row[2] + 1
                if row[2] + 1 >= end:
                    del missing[tp]
            if len(out) >= chunk:  # never more: consume() was asked for at most what fills it
                yield out
                out = []
        if out:
            yield out

    def _assign(self, wanted: dict[tuple[str, int], tuple[int, int]]) -> None:
        from confluent_kafka import TopicPartition

        positions = {tp: start for tp, start in self._next.items()}
        positions.update({tp: start for tp, (start, _) in wanted.items()})
        self._ahead.clear()
        self.consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in sorted(positions.items())])
        self._next = positions


def _raise_unless_benign(error: Any) -> None:
    from confluent_kafka import KafkaError, KafkaException

    if error.code() == KafkaError._PARTITION_EOF:
        return
    raise KafkaException(error)


# --- writing -------------------------------------------------------------------


@dataclass
class _Written(WriterCommitMessage):
    records: int = 0
    source_offsets: dict[str, str] = field(default_factory=dict)


_producers: dict[str, Any] = {}
_producers_lock = threading.Lock()


def _producer(client_json: str) -> Any:
    """One producer per executor Python process and client config, reused across batches."""
    from confluent_kafka import Producer

    with _producers_lock:
        producer = _producers.get(client_json)
        if producer is None:
            # murmur2_random: keyed records land in the partition Java clients choose.
            config = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, "partitioner": "murmur2_random"}
            config.update(client_settings(client_json))
            producer = Producer(config)
            _producers[client_json] = producer
        return producer


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Produces each micro-batch to Kafka; stores source offsets only after every write is durable.

    It takes Spark's Arrow batches as they come (no Row object per record):
    columns by name, each turned into a Python list at once.
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.client_json = options.get(CLIENT_OPTION, "{}")
        self.commit_hook = options.get("commit.hook")
        # The redacted spelling, for an argument that holds client settings.
        self.commit_hook_arg = options.get(COMMIT_HOOK_SECRET_ARG, options.get("commit.hook.arg", ""))
        self.flush_timeout = float(options.get("flush.timeout.s", "60"))

    def write(self, batches: Iterator[Any]) -> _Written:
        producer = _producer(self.client_json)
        failures: list[str] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                failures.append(f"{message.topic()}[{message.partition()}]: {error}")

        written = _Written()
        produce, poll = producer.produce, producer.poll
        for batch in batches:
            names = batch.schema.names
            columns = {name: batch.column(i).to_pylist() for i, name in enumerate(names)}
            empty = [None] * batch.num_rows
            rows = zip(*(columns.get(name, empty) for name in _WRITE_COLUMNS), strict=True)
            for topic, partition, key, value, timestamp, headers, source_partition, source_offset in rows:
                if source_partition is not None:
                    written.source_offsets[source_partition] = source_offset
                if topic is None:
                    continue  # an offset-only row: a record a transform dropped still moves the offset
                kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": delivered}
                if partition is not None:
                    kwargs["partition"] = partition
                if timestamp is not None:
                    kwargs["timestamp"] = timestamp
                if headers:
                    kwargs["headers"] = [(h["key"], h["value"]) for h in headers]
                while True:
                    try:
                        produce(topic, **kwargs)
                        break
                    except BufferError:
                        poll(0.05)  # local queue full: let deliveries drain
                poll(0)
                written.records += 1
        remaining = producer.flush(self.flush_timeout)
        if remaining:
            raise RuntimeError(f"{remaining} records not acknowledged within {self.flush_timeout:.0f} s")
        if failures:
            raise RuntimeError(f"{len(failures)} records failed: " + "; ".join(failures[:5]))
        return written

    def commit(self, messages: list[_Written | None], batch_id: int) -> None:
        offsets: dict[str, str] = {}
        for message in messages:
            if message is not None:
                offsets.update(message.source_offsets)
        if self.commit_hook:
            module, _, name = self.commit_hook.partition(":")
            hook = getattr(importlib.import_module(module), name)
            hook(self.commit_hook_arg, batch_id, offsets, sum(m.records for m in messages if m is not None))

    def abort(self, messages: list[_Written | None], batch_id: int) -> None:
        # Nothing to undo: records already produced are at-least-once duplicates
        # of the batch's replay, and no offset was stored.
        return None


class KafkaDataSource(DataSource):
    """``spark.readStream.format("connectd-kafka")`` / ``writeStream.format("connectd-kafka")``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RANGE_SCHEMA if self.options.get("rows", "records") == "ranges" else ROW_SCHEMA

    def streamReader(self, schema: Any) -> KafkaStreamReader:
        return KafkaStreamReader(self.options)

    def streamWriter(self, schema: Any, overwrite: bool) -> KafkaStreamWriter:
        return KafkaStreamWriter(self.options)


def append_commits_to_file(path: str, batch_id: int, offsets: dict[str, str], records: int) -> None:
    """A ``commit.hook`` that appends each committed batch as a JSON line to *path*.

    For diagnostics and tests: ``option("commit.hook", "connectd.runtime.kafka_io:append_commits_to_file")``
    with ``option("commit.hook.arg", "/path/to/log")``.
    """
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"batch": batch_id, "records": records, "offsets": offsets}) + "\n")
        log.flush()
        os.fsync(log.fileno())
