"""Kafka inside Spark, reading (sink tasks): the ``connectd-kafka`` streaming reader.

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
  (:class:`~connectd.runtime.kafka.consumers.HighWatermarks`), which reads
  no records but those that arrive between two batches, a record batch or
  two per partition; while records arrive, fetched again before the batch's
  end is given, so the end is that of now; never from ListOffsets LATEST,
  which the dev broker gets wrong.
- ``partitions(start, end)``: with ``rows=ranges``, one input partition whose
  rows are the ranges themselves, ``topic, partition, start, end``
  (:data:`~connectd.runtime.kafka.clients.RANGE_SCHEMA`): one Spark task
  handles a whole batch, which is how a record-level sink task's one
  instance gets it (:mod:`connectd.runtime.sink.executor`). Otherwise one
  input partition per Kafka partition, whose records ``read`` fetches in the
  executor with a consumer kept per Python worker
  (:func:`~connectd.runtime.kafka.consumers.executor_range_reader`).
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
headers`` (:data:`~connectd.runtime.kafka.clients.ROW_SCHEMA`; headers: array of
``key``/``value`` structs; bytes stay bytes).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from connectd.runtime.fencing import LEASE_OPTION, lease_expired
from connectd.runtime.kafka.clients import (
    CLIENT_OPTION,
    client_settings,
    decode_tp,
    encode_tp,
)
from connectd.runtime.kafka.consumers import HighWatermarks, executor_range_reader

__all__ = [
    "add_seeks",
    "set_linger",
    "set_paused",
]

_DEFAULT_MAX_RECORDS = 10_000


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


def _exists(path: str | None) -> bool:
    return bool(path) and os.path.exists(path)
