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
Offsets are ``{"<topic>:<partition>": <next offset to read>}``. A
micro-batch is offset ranges; its records are read where the batch is
handled (an executor), never on the driver.

- ``initialOffset`` is the ``start`` option: offsets the task's runtime took
  from the consumer group (Kafka is the truth; the per-run checkpoint is
  scratch), so a moved task resumes where the group committed.
- ``latestOffset(start)`` ends the batch at each partition's high watermark,
  ``max.records`` in all at most (:func:`batch_ends`). The high watermark
  comes from Fetch responses of a consumer kept at the partitions' ends
  (:class:`HighWatermarks`), which reads no records but those that arrive
  between two batches, a record batch or two per partition; while records
  arrive, fetched again before the batch's end is given, so the end is that
  of now; never from ListOffsets LATEST, which the dev broker gets wrong.
- ``partitions(start, end)``: with ``rows=ranges``, one input partition whose
  rows are the ranges themselves, ``topic, partition, start, end``
  (:data:`RANGE_SCHEMA`): one Spark task handles a whole batch, which is how
  a record-level sink task's one instance gets it
  (:mod:`connectd.runtime.sink.executor`). Otherwise one input partition per
  Kafka partition, whose records ``read`` fetches in the executor with a
  consumer kept per Python worker (:func:`executor_range_reader`).
- Graceful stop: once the ``stop.file`` exists, ``latestOffset`` offers
  nothing new, so the batch in flight finishes and the query goes idle.
  While the ``pause.file`` exists it does the same, and reading resumes
  where it was when the file goes; so it does once the worker's lease in the
  ``lease.file`` has ended (:mod:`connectd.runtime.fencing`).
- Paused partitions (a sink task's ``context.pause``): the ``paused.file``
  lists them (:func:`set_paused`, written by the driver after each batch);
  ``latestOffset`` leaves them where they are, and with ``rows=ranges`` the
  batch's input partition carries the list, so an instance of the task made
  anywhere knows its pauses.

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

import contextlib
import importlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)

from connectd.logging import RepeatFilter
from connectd.runtime.fencing import LEASE_OPTION, lease_expired

__all__ = [
    "FORMAT",
    "RANGE_SCHEMA",
    "ROW_SCHEMA",
    "WRITE_SCHEMA",
    "KafkaDataSource",
    "RangeReader",
    "add_seeks",
    "consumer_settings",
    "decode_tp",
    "encode_tp",
    "arrow_write_schema",
    "executor_producer",
    "produce_batches",
    "set_linger",
    "set_paused",
]

FORMAT = "connectd-kafka"

ROW_SCHEMA = (
    "topic string, partition int, offset long, timestamp long, timestamp_type int, "
    "key binary, value binary, headers array<struct<key: string, value: binary>>"
)

#: A micro-batch's rows with ``rows=ranges``: the offsets ``[start, end)`` of each partition, and how
#: many records the partition held past ``end`` when the batch was planned (null if not known).
RANGE_SCHEMA = "topic string, partition int, start long, end long, lag long"

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

    schema = arrow_write_schema()
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)],
                                      schema=schema)


_ARROW_SCHEMA: Any = None


def arrow_write_schema() -> Any:
    """:data:`WRITE_SCHEMA` as a ``pyarrow`` schema (made once)."""
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


def encode_tp(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def decode_tp(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)


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


class _Ranges(InputPartition):
    """One micro-batch's offset ranges, ``(topic, partition, start, end)``, read where they are handled."""

    def __init__(self, ranges: list[tuple[str, int, int, int]], paused: list[str] | None = None,
                 lag: dict[str, int] | None = None, idle: dict[str, int] | None = None, linger_ms: int = 0) -> None:
        self.ranges = ranges
        self.paused = paused or []  #: partitions (``encode_tp``) the task has paused
        #: per partition (``encode_tp``): records past the batch's end when it was planned
        self.lag = lag or {}
        #: where the partitions without a range stand (``encode_tp``): a lingering batch reads them too
        self.idle = idle or {}
        #: how long after it began the batch goes on reading what arrives (``sink.batch.linger.ms``)
        self.linger_ms = linger_ms


def batch_ends(start: dict[str, int], high: dict[str, int], max_records: int) -> dict[str, int]:
    """Where a micro-batch from *start* ends: each partition's high watermark, *max_records* in all at most.

    The bound is shared fairly: partitions with less backlog than their share
    leave the rest to the others, so one busy partition cannot starve the
    rest, and the sum never exceeds *max_records*. A partition whose high
    watermark is unknown or behind *start* stays where it is.
    """
    backlog = {key: max(0, high.get(key, offset) - offset) for key, offset in start.items()}
    end = dict(start)
    left, waiting = max_records, sorted((n, key) for key, n in backlog.items() if n > 0)
    while waiting and left > 0:
        share = max(1, left // len(waiting))
        n, key = waiting.pop(0)
        take = min(n, share, left)
        end[key] += take
        left -= take
    return end


#: How long :meth:`HighWatermarks.high` waits for the answers of a Fetch it sends again (a round
#: trip when records keep arriving; the whole wait only if none has a record to answer with) ...
FRESH_FETCH_S = 0.02
#: ... and, once one answer came, for the others (other brokers', or those a broker answers apart).
FRESH_FETCH_GRACE_S = 0.003


class HighWatermarks:
    """Each partition's high watermark as Fetch responses give it, reading (almost) no records.

    A consumer stays assigned to the partitions *at their high watermark*:
    a Fetch there returns no records, only the high watermark, until new
    records arrive, and then at most one record batch per partition (fetch
    sizes are at their minimum) before :meth:`high` moves it to the new high
    watermark again. So finding a micro-batch's end costs no read of the
    batch. The high watermark comes from Fetch responses, not ListOffsets,
    whose LATEST the dev broker gets wrong (``test-broker.md``); on Kafka
    both agree. It respects the client's ``isolation.level``: under
    ``read_committed`` it is the last stable offset, what a reader can read.

    A Fetch answer's watermark is that of its time, and the last answer can
    be as old as the previous :meth:`high`: the fetcher stops once a record
    is queued (its queue holds one), and a broker may hold a Fetch until its
    wait expires. Taken as it was, a batch ended where the records had been a
    batch earlier, and a record waited a whole batch more (p50 latency
    265 → 180 ms at 2,000 records/s; BENCHMARKS.md). So while records arrive
    (some are queued, or a watermark moved at the previous call), the
    partitions are fetched again from their ends, which the broker answers at
    once for those that received records since, with the watermark of now.
    """

    def __init__(self, client: dict[str, Any]) -> None:
        from confluent_kafka import Consumer

        settings = consumer_settings(client)
        # Fetch waits of 100 ms, not the data consumers' 10: an idle task's consumer here fetches all
        # the time, and at 10 ms five idle sink tasks took a third of a core (with the dev broker's).
        # A fetcher stopped by its queue looks again every 2 ms, not 10: high() drains the queue and
        # fetches again at once (10 ms of each call otherwise; 0 spins a core).
        settings.update({"max.partition.fetch.bytes": 1, "fetch.max.bytes": 1000, "message.max.bytes": 1000,
                         "queued.max.messages.kbytes": 1, "queued.min.messages": 1,
                         "fetch.wait.max.ms": client.get("fetch.wait.max.ms", 100), "fetch.queue.backoff.ms": 2})
        self._consumer = Consumer(settings)
        self._known: dict[str, int] = {}
        self._ends: dict[str, int] | None = None  # where each partition's records were known to end
        self._moved: set[str] = set()  # partitions whose watermark moved at the last call

    def high(self, partitions: dict[str, int]) -> dict[str, int]:
        """The latest high watermark known of each of *partitions* (``{key: offset to start at}``):
        that of now while records arrive, one round trip later (:data:`FRESH_FETCH_S` at most).
        """
        consumer = self._consumer
        if self._ends is None or self._ends.keys() != partitions.keys():
            self._ends = {key: max(offset, self._known.get(key, offset)) for key, offset in partitions.items()}
            self._assign(self._ends)
            self._moved = set()
        queued = _partitions_of(consumer.consume(num_messages=10_000, timeout=0))  # the records are dropped
        if queued or self._moved:
            self._assign(self._ends)
            # Fetched again from the ends: the broker answers at once where records arrived since.
            # An answer carries the watermarks of every partition the Fetch asked that broker for,
            # records or not: once one came, the others get a short grace.
            waiting, deadline = set(self._ends), time.monotonic() + FRESH_FETCH_S
            while waiting and (left := deadline - time.monotonic()) > 0:
                answered = _partitions_of([consumer.poll(left)])
                if answered and deadline - time.monotonic() > FRESH_FETCH_GRACE_S:
                    deadline = time.monotonic() + FRESH_FETCH_GRACE_S
                waiting -= answered
        self._learn(partitions)
        ends = {key: max(end, self._known.get(key, end)) for key, end in self._ends.items()}
        self._moved = {key for key, end in ends.items() if end > self._ends[key]}
        if self._moved:
            consumer.consume(num_messages=10_000, timeout=0)
            self._assign(ends)  # only records that arrive after the new ends are fetched (and queued) next
            self._ends = ends
        return {key: self._known[key] for key in partitions if key in self._known}

    def _learn(self, partitions: dict[str, int]) -> None:
        """Take the high watermarks the last Fetch answers gave."""
        from confluent_kafka import TopicPartition

        for key in partitions:
            _, high = self._consumer.get_watermark_offsets(TopicPartition(*decode_tp(key)), cached=True)
            if high >= 0 and high > self._known.get(key, -1):
                self._known[key] = high

    def _assign(self, positions: dict[str, int]) -> None:
        # assign(), not seek(): seek() starts offset validation that some brokers never answer,
        # and the partition would stop fetching.
        from confluent_kafka import TopicPartition

        self._consumer.assign([TopicPartition(*decode_tp(key), offset) for key, offset in positions.items()])

    def close(self) -> None:
        self._consumer.close()


def _partitions_of(messages: list[Any]) -> set[str]:
    """The partition keys of the records among *messages* (``None`` and errors left out)."""
    return {encode_tp(m.topic(), m.partition()) for m in messages if m is not None and m.error() is None}


#: Keys of a micro-batch's end offsets that are not partitions start with "@" (a topic name cannot).
_META = "@"
#: Prefix of the keys that say where a partition's range starts instead of the previous
#: batch's end: the task moved it (``context.offset``).
_FROM = "@from "
#: Counts idle ticks: batches without records that let a sink task flush on time.
_TICK = "@tick"


def _write_control(path: str | os.PathLike[str], value: Any) -> None:
    """Write a run's control file whole (write, then rename), as JSON; ``None`` removes it."""
    if value is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    # A name of this writer's own: two writers never collide on one temporary file.
    temporary = f"{os.fspath(path)}.{os.getpid()}-{threading.get_ident()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
    os.replace(temporary, path)


def _read_control(path: str | os.PathLike[str] | None, default: Any) -> Any:
    """A run's control file's JSON value; *default* when there is none."""
    if not path:
        return default
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return default


def add_seeks(path: str | os.PathLike[str], seeks: dict[str, int]) -> None:
    """Have the reader whose ``seek.file`` is *path* start these partitions' next batch at these offsets.

    Called by the driver between micro-batches (``foreachBatch``), so the next
    batch's ``latestOffset`` sees them; written whole (write, then rename).
    """
    _write_control(path, {**_read_control(path, {}), **seeks})


def set_paused(path: str | os.PathLike[str], partitions: Iterable[str]) -> None:
    """Have the reader whose ``paused.file`` is *path* leave *partitions* (``encode_tp``) alone,
    and no others: written whole by the driver between micro-batches (nothing: the file goes)."""
    _write_control(path, sorted(partitions) or None)


def set_linger(path: str | os.PathLike[str], ms: int) -> None:
    """Have the sink reader whose ``linger.file`` is *path* let its next batches linger *ms*
    (0: the file goes, and they do not); written whole, by the driver, whenever it decides."""
    _write_control(path, int(ms) if ms > 0 else None)


def _take_seeks(path: str | None) -> dict[str, int]:
    seeks = _read_control(path, None)
    if seeks is None:
        return {}
    os.unlink(path)
    return {key: int(offset) for key, offset in seeks.items()}


class KafkaStreamReader(DataSourceStreamReader):
    """Reads the task's assigned partitions from their start offsets.

    A micro-batch is offset ranges; the driver never reads its records. With
    ``rows=ranges`` the batch is one input partition whose rows are the
    ranges themselves (whoever handles the batch reads them); otherwise each
    Kafka partition's range is one input partition whose records an executor
    reads (:meth:`read`), with a consumer kept per Python worker.
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.client_option = options.get(CLIENT_OPTION, "{}")
        self.start_offsets: dict[str, int] = json.loads(options["start"])
        self.max_records = int(options.get("max.records", _DEFAULT_MAX_RECORDS))
        self.stop_file = options.get("stop.file")
        self.pause_file = options.get("pause.file")
        self.seek_file = options.get("seek.file")
        self.paused_file = options.get("paused.file")
        self.linger_file = options.get("linger.file")
        self.lease_file = options.get(LEASE_OPTION)
        self.ranges_only = options.get("rows", "records") == "ranges"
        #: With ranges: after this long without a batch, a batch of empty ranges (a tick), so the
        #: task gets put([]) and pre_commit though no record arrives (0: never).
        self.tick_s = float(options.get("tick.ms", "0")) / 1000 if self.ranges_only else 0.0
        self._last_batch = time.monotonic()
        self._watermarks: HighWatermarks | None = None
        self._previous_end: dict[str, int] | None = None
        self._high: dict[str, int] | None = None  # the high watermarks seen by the last latestOffset

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_watermarks"] = None
        return state

    def initialOffset(self) -> dict[str, int]:
        return dict(self.start_offsets)

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        # Before PySpark 4.2, latestOffset() took no arguments: continue from the last end.
        if start is None:
            start = self._previous_end if self._previous_end is not None else self.initialOffset()
        tick = int(start.get(_TICK, 0))
        start = {k: int(v) for k, v in start.items() if not k.startswith(_META)}
        # Partitions the task moved start there; the end offsets say so, for partitions().
        seeks = {key: offset for key, offset in _take_seeks(self.seek_file).items() if key in start}
        start.update(seeks)
        now = time.monotonic()
        if _exists(self.stop_file) or _exists(self.pause_file) or lease_expired(self.lease_file):
            end = dict(start)
        else:
            if self._watermarks is None:
                self._watermarks = HighWatermarks(client_settings(self.client_option))
            high = self._watermarks.high(start)
            self._high = dict(high)  # the partitions' lag after this batch, for partitions()
            for key in _read_control(self.paused_file, []):  # the task paused them: they stay where they are
                if key in high:
                    high[key] = start[key]
            end = batch_ends(start, high, self.max_records)
            if end != start or seeks:
                self._last_batch = now
            elif self.tick_s and now - self._last_batch >= self.tick_s:
                tick += 1
                self._last_batch = now
        end.update({_FROM + key: offset for key, offset in seeks.items()})
        if tick:
            end[_TICK] = tick
        self._previous_end = end
        return end

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        ranges, idle = [], {}
        for key, stop in end.items():
            if key.startswith(_META):
                continue
            begin = int(end.get(_FROM + key, start.get(key, self.start_offsets.get(key, 0))))
            if int(stop) > begin:
                ranges.append((*decode_tp(key), begin, int(stop)))
            else:
                idle[key] = max(begin, int(stop))
        if self.ranges_only:
            # One input partition: one Spark task handles the whole batch (one sink task instance);
            # none for a batch without records, so no Python worker starts an instance for nothing,
            # unless it is a tick: then the empty range of every partition, where it stands.
            paused = list(_read_control(self.paused_file, []))
            high = self._high or {}  # none for a batch planned before a restart, replayed now
            lag = {key: max(high[key] - int(stop), 0) for key, stop in end.items() if key in high}
            if not ranges and int(end.get(_TICK, 0)) > int(start.get(_TICK, 0)):
                return [_Ranges([(*decode_tp(key), int(stop), int(stop))
                                 for key, stop in end.items() if not key.startswith(_META)], paused, lag)]
            return [_Ranges(ranges, paused, lag, idle, int(_read_control(self.linger_file, 0)))] if ranges else []
        return [_Ranges([r]) for r in ranges]

    def read(self, partition: _Ranges) -> Iterator[tuple]:
        if self.ranges_only:
            lag = getattr(partition, "lag", {})
            for topic, number, begin, stop in partition.ranges:
                yield topic, number, begin, stop, lag.get(encode_tp(topic, number))
            return
        for rows in executor_range_reader(self.client_option).read(partition.ranges):
            yield from rows

    def commit(self, end: dict[str, int]) -> None:
        # Offsets are committed to the consumer group by the sink task after
        # its plugin flushed, not here: Spark calls this late, and never for
        # the last batch.
        return None

    def stop(self) -> None:
        if self._watermarks is not None:
            self._watermarks.close()
            self._watermarks = None


_range_readers: dict[str, RangeReader] = {}
_range_readers_lock = threading.Lock()


def executor_range_reader(client_option: str) -> RangeReader:
    """The :class:`RangeReader` of this Python worker for *client_option*, made on first use.

    Kept for the life of the Python worker (Spark reuses its workers), so a
    task's next range usually continues where its consumer already is.
    """
    with _range_readers_lock:
        reader = _range_readers.get(client_option)
        if reader is None:
            from confluent_kafka import Consumer

            reader = _range_readers[client_option] = RangeReader(
                Consumer(consumer_settings(client_settings(client_option))), keep_others=False)
        return reader


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
        # librdkafka fetches ahead up to 64 MiB and 100,000 records per consumer,
        # in responses of up to 50 MiB; an executor's Python worker keeps a
        # consumer per sink task it has run, so that was most of its memory
        # (bench/sink_executors.py). A Java consumer holds about one fetch.
        # These bounds still keep one task's put() fed; consumer.fetch.max.bytes
        # (a Java name) overrides the first.
        "fetch.max.bytes": 8 * 1024 * 1024,
        "queued.max.messages.kbytes": 4096,
        "queued.min.messages": 10_000,
    }
    config.update({k: v for k, v in client.items() if k != "group.id"})
    return config


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
    :param keep_others: stay assigned to partitions of earlier ranges that the
        current one lacks (a task's partitions); ``False`` for a reader whose
        next range may be of any partition (an executor's), which would
        otherwise fetch ahead for partitions others read.
    """

    def __init__(self, consumer: Any, timeout: float = 120.0, keep_others: bool = True) -> None:
        self.consumer = consumer
        self.timeout = timeout
        self.keep_others = keep_others
        self._next: dict[tuple[str, int], int] = {}  # where the next range of each assigned partition starts
        self._ahead: dict[tuple[str, int], list[tuple]] = {}

    def read(self, ranges: list[tuple[str, int, int, int]], chunk: int = 10_000) -> Iterator[list[tuple]]:
        """The records of *ranges* (``(topic, partition, start, end)``) as :data:`ROW_SCHEMA` tuples.

        Yields lists of at most *chunk* records, in offset order per partition.
        """
        wanted = {(t, p): (start, end) for t, p, start, end in ranges if end > start}
        if (any(self._next.get(tp) != start for tp, (start, _) in wanted.items())
                or (not self.keep_others and self._next.keys() != wanted.keys())):
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

    def wait_past(self, positions: Mapping[tuple[str, int], int], timeout: float, most: int = 10_000
                  ) -> dict[tuple[str, int], int]:
        """Wait at most *timeout* for records at *positions* (``{(topic, partition): next offset}``).

        Returns as soon as records are known there (it waits only when none
        is): fetched already, or below the high watermark the last fetch
        answer gave. What is fetched meanwhile is kept for :meth:`read`, as
        records fetched ahead are.

        :returns: ``{(topic, partition): end}``, where each partition's known records end
            (exclusive), for the partitions that have any past their position.
        """
        if any(self._next.get(tp) != offset for tp, offset in positions.items()):
            self._assign({tp: (offset, offset) for tp, offset in positions.items()})
        known = self._known_ends(positions)
        if not known:
            first = self.consumer.poll(timeout)
            if first is not None:
                # consume() waits its whole timeout for fewer records than asked: only what is queued.
                self._keep_ahead([first, *self.consumer.consume(num_messages=most, timeout=0)])
                known = self._known_ends(positions)
        return known

    def _known_ends(self, positions: Mapping[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        from confluent_kafka import TopicPartition

        ends = {}
        for tp, offset in positions.items():
            rows = self._ahead.get(tp)
            _, high = self.consumer.get_watermark_offsets(TopicPartition(*tp), cached=True)
            end = max(rows[-1][2] + 1 if rows else offset, high)
            if end > offset:
                ends[tp] = end
        return ends

    def _keep_ahead(self, messages: list[Any]) -> None:
        for message in messages:
            if message.error() is not None:
                _raise_unless_benign(message.error())
                continue
            tp = (message.topic(), message.partition())
            if tp in self._next:  # else a partition no longer assigned
                self._ahead.setdefault(tp, []).append(_row(message))

    def _assign(self, wanted: dict[tuple[str, int], tuple[int, int]]) -> None:
        from confluent_kafka import TopicPartition

        positions = dict(self._next) if self.keep_others else {}
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
    #: records Kafka did not take, passed over (``produce_batches(failed=…)``)
    failed: int = 0
    source_offsets: dict[str, str] = field(default_factory=dict)


_producers: dict[str, Any] = {}
_producers_lock = threading.Lock()
#: Client errors that retrying cannot cure: a batch fails at once with them, not after its flush timeout.
_REFUSALS = frozenset({"_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
                       "CLUSTER_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "_SSL"})
class _Producer:
    """A confluent-kafka producer and the refusal (``_REFUSALS``) its client last reported."""

    def __init__(self, config: dict[str, Any]) -> None:
        from confluent_kafka import Producer

        self.refusal: str | None = None
        client_log = RepeatFilter.on(logging.getLogger("connectd.kafka.client"))  # librdkafka's lines, rate-limited
        self.client = Producer({**config, "error_cb": self._error, "logger": client_log})

    def _error(self, error: Any) -> None:
        if error.fatal() or error.name() in _REFUSALS:
            self.refusal = f"{error.name()}: {error.str()}"

    def __getattr__(self, name: str) -> Any:  # produce, poll, flush, list_topics, …
        return getattr(self.client, name)


def executor_producer(client_json: str, every_delivery: bool = False) -> Any:
    """One producer per executor Python process and client config, reused across batches
    (made anew after one its cluster refused).

    :param every_delivery: report every delivery, not only failed ones (for
        ``produce_batches(acks=…)``); otherwise no Python callback runs per record.
    """
    key = f"{client_json}\n{every_delivery}"
    with _producers_lock:
        producer = _producers.get(key)
        if producer is None or producer.refusal is not None:
            # murmur2_random: keyed records land in the partition Java clients choose. Only failed
            # deliveries are reported (flush() waits for every one) unless every one is wanted.
            config = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, "partitioner": "murmur2_random",
                      "delivery.report.only.error": not every_delivery}
            config.update(client_settings(client_json))
            producer = _Producer(config)
            _producers[key] = producer
        return producer


#: What ``produce()`` raises for a record it refuses (Java's producer reports these through the send's
#: callback): too large, or a topic or partition the cluster does not have. Anything else it raises
#: (a fatal idempotence error, bad arguments) is the producer's, not the record's.
_RECORD_REFUSALS = frozenset({"MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC"})


def produce_batches(producer: Any, batches: Iterable[Any], flush_timeout: float,
                    acks: list[Any] | None = None, failed: Callable[..., None] | None = None) -> _Written:
    """Produce Arrow batches of :data:`WRITE_SCHEMA` rows; return once every record is acknowledged.

    Columns are taken by name, each turned into a Python list at once (no Row
    object per record). A row whose topic is null only moves its source
    partition's offset. :returns: the records produced and the last source
    offset of each source partition. :raises RuntimeError: a record was not
    acknowledged within *flush_timeout* seconds, or failed.

    :param acks: if given, filled with ``[partition, offset, timestamp]`` as Kafka
        acknowledged each record, in the order of the rows produced (a callback per
        record: only for tasks that want them, ``SourceTask.commit_record``).
    :param failed: if given, ``failed(error, topic, partition, key, value, headers)`` for each
        record Kafka did not take (refused by ``produce()`` or failed in delivery), and the batch
        goes on without it, its offsets moving past it (Kafka Connect's ``errors.tolerance=all``
        for sources, KIP-779); without it, such a record fails the batch. A producer the cluster
        refused, or records not acknowledged in time, fail the batch either way.
    """
    from confluent_kafka import KafkaException

    failures: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            return
        if failed is None:
            failures.append(f"{message.topic()}[{message.partition()}]: {error}")
            return
        written.failed += 1
        written.records -= 1  # counted when it was produced
        failed(KafkaException(error), message.topic(), message.partition(), message.key(), message.value(),
               message.headers() or [])

    def refused(error: KafkaException, topic: str, **kwargs: Any) -> None:
        if failed is None or error.args[0].name() not in _RECORD_REFUSALS:
            raise error
        written.failed += 1
        failed(error, topic, kwargs.get("partition", -1), kwargs.get("key"), kwargs.get("value"),
               kwargs.get("headers") or [])

    def delivered_as(index: int) -> Any:
        def delivered_at(error: Any, message: Any) -> None:
            if error is not None:
                delivered(error, message)
            else:
                acks[index] = [message.partition(), message.offset(), message.timestamp()[1]]
        return delivered_at

    written = _Written()
    produce, poll = producer.produce, producer.poll
    for batch in batches:
        names = batch.schema.names
        columns = {name: batch.column(i).to_pylist() for i, name in enumerate(names)
                   if batch.column(i).null_count < batch.num_rows}  # an all-null column is not read
        empty = [None] * batch.num_rows
        for name, last in zip(columns.get("source_partition", ()), columns.get("source_offset", ()), strict=True):
            if name is not None:
                written.source_offsets[name] = last
        if acks is None and not any(name in columns for name in ("partition", "timestamp", "headers")):
            # The common case: topic, key and value only, each produced with positional arguments.
            rows = zip(columns.get("topic", empty), columns.get("value", empty), columns.get("key", empty), strict=True)
            for topic, value, key in rows:
                if topic is None:
                    continue  # an offset-only row: a record a transform dropped still moves the offset
                try:
                    try:
                        produce(topic, value, key, on_delivery=delivered)
                    except BufferError:
                        _produce_when_room(producer, topic, value=value, key=key, on_delivery=delivered)
                except KafkaException as error:  # the record refused, also once there was room
                    refused(error, topic, key=key, value=value)
                    continue
                written.records += 1
                if not written.records % 1000:
                    poll(0)
            continue
        rows = zip(*(columns.get(name, empty) for name in _WRITE_COLUMNS[:6]), strict=True)
        for topic, partition, key, value, timestamp, headers in rows:
            if topic is None:
                continue
            kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": delivered}
            if acks is not None:
                kwargs["on_delivery"] = delivered_as(len(acks))
                acks.append(None)
            if partition is not None:
                kwargs["partition"] = partition
            if timestamp is not None:
                kwargs["timestamp"] = timestamp
            if headers:
                kwargs["headers"] = [(h["key"], h["value"]) for h in headers]
            try:
                try:
                    produce(topic, **kwargs)
                except BufferError:
                    _produce_when_room(producer, topic, **kwargs)
            except KafkaException as error:
                refused(error, topic, **kwargs)
                continue
            written.records += 1
            if not written.records % 1000:
                poll(0)
    deadline = time.monotonic() + flush_timeout
    remaining = producer.flush(0)
    while remaining and time.monotonic() < deadline:
        _raise_if_refused(producer)
        remaining = producer.flush(min(0.5, max(deadline - time.monotonic(), 0)))
    _raise_if_refused(producer)
    if remaining:
        raise RuntimeError(f"{remaining} records not acknowledged within {flush_timeout:.0f} s")
    if failures:
        raise RuntimeError(f"{len(failures)} records failed: " + "; ".join(failures[:5]))
    return written


def _raise_if_refused(producer: Any) -> None:
    refusal = getattr(producer, "refusal", None)
    if refusal is not None:
        raise RuntimeError(f"the Kafka cluster refused the producer ({refusal}); retrying will not help "
                           "until its settings change")


def _produce_when_room(producer: Any, topic: str, **kwargs: Any) -> None:
    """Produce once the local queue has room (deliveries drain while it waits)."""
    while True:
        _raise_if_refused(producer)
        producer.poll(0.05)
        try:
            producer.produce(topic, **kwargs)
            return
        except BufferError:
            continue


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Produces each micro-batch to Kafka; stores source offsets only after every write is durable.

    It takes Spark's Arrow batches as they come (:func:`produce_batches`).
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.client_json = options.get(CLIENT_OPTION, "{}")
        self.commit_hook = options.get("commit.hook")
        # The redacted spelling, for an argument that holds client settings.
        self.commit_hook_arg = options.get(COMMIT_HOOK_SECRET_ARG, options.get("commit.hook.arg", ""))
        self.flush_timeout = float(options.get("flush.timeout.s", "60"))

    def write(self, batches: Iterator[Any]) -> _Written:
        return produce_batches(executor_producer(self.client_json), batches, self.flush_timeout)

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

    For diagnostics and tests: ``option("commit.hook", "connectd.runtime.kafka.io:append_commits_to_file")``
    with ``option("commit.hook.arg", "/path/to/log")``.
    """
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"batch": batch_id, "records": records, "offsets": offsets}) + "\n")
        log.flush()
        os.fsync(log.fileno())
