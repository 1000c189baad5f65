"""A record-level sink task's plugin, fed one micro-batch at a time.

::

    a batch's offset ranges (connectd-kafka reader, rows=ranges)
        └─ where the task instance lives: an executor (executor_sink) or, for a
           pinned plugin, the worker process. RangeReader reads them, put_records at a time:
                  rows ─► converters ─► transforms ─► task.put(records)
              task.pre_commit(offsets)  (flush: the data is durable)
              commit(the offsets it returned)  (executors: handed to the driver, which commits
                                               them to the connector's group after the batch)

Records are read where the task lives rather than carried by Spark from the
reader's process through the JVM, which cost several times more than the
read itself (BENCHMARKS.md). Rows are converted a chunk at a time with the
converters' batch methods; if anything in a chunk fails, the chunk is done
again record by record under the connector's error policy, which then
retries, skips (dead-letter queue) or fails exactly the bad records.

Each instance keeps Kafka Connect's contract: ``open`` with its partitions,
``put`` in order per partition, ``flush``/``pre_commit`` before offsets are
committed, ``close`` and ``stop`` once (how many instances a task has over
its run, and when they stop: :mod:`connectd.runtime.sink.executor`). Offsets committed are one past the last record
of the batch per partition — records a transform dropped included — so
lag tools see the group as Kafka Connect's.

Partitions of the connector's topics are spread over its tasks: sorted,
every ``tasks``-th one to a task, starting at its id.
"""

from __future__ import annotations

import re
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

import structlog
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectd.connector import (
    ErrantRecordReporter,
    SinkTask,
    SinkTaskContext,
    TopicPartition,
)
from connectd.data.headers import Headers
from connectd.data.records import SinkRecord, TimestampType, sink_records
from connectd.errors import ConnectException, ConnectorError
from connectd.logging import get_logger
from connectd.runtime.error_handling import (
    ErrorHandler,
    ErrorPolicy,
    Original,
    RecordFailure,
    TaskCounts,
    apply_stages,
)
from connectd.runtime.kafka.clients import encode_tp

__all__ = ["SinkTaskRunner", "assign_partitions", "start_offsets"]

log = get_logger(__name__)

#: How often a task waiting to retry put() checks whether it is being stopped.
_STOP_CHECK_S = 0.1
#: Kafka Connect's words for a task whose put() raised what is not retriable (WorkerSinkTask).
_UNRECOVERABLE = ("Task threw an uncaught and unrecoverable exception. Task is being killed and will not recover "
                  "until manually restarted.")


def assign_partitions(partitions: Iterable[TopicPartition], task_id: int, tasks: int) -> list[TopicPartition]:
    """Task *task_id*'s share of *partitions*, sorted: partition *p* of topic *t* belongs to task
    ``(p + crc32(t)) % tasks``.

    Each topic's partitions go round the tasks in turn (6 partitions, 6 tasks: one each), from a
    task its name picks, so single-partition topics spread too. A partition's task depends on the
    partition and the task count alone: partitions that appear (a topic created late, grown, or a
    new match of ``topics.regex``) never move those a task has already, so tasks that learn of them
    at different moments (on different workers) never read one partition at once.
    """
    return sorted(tp for tp in partitions if (tp.partition + zlib.crc32(tp.topic.encode("utf-8"))) % tasks == task_id)


def matching_topics(all_topics: Iterable[str], topics: list[str], regex: str) -> list[str]:
    """The topics a sink connector consumes: the ``topics`` list, or those matching ``topics.regex``."""
    if topics:
        return [t for t in topics if t in set(all_topics)]
    pattern = re.compile(regex)
    return sorted(t for t in all_topics if pattern.fullmatch(t) and not t.startswith("__"))


def start_offsets(consumer: Any, partitions: list[TopicPartition], reset: str = "earliest") -> dict[str, int]:
    """Where each partition starts: the group's committed offset, else the log start (or end).

    :param consumer: a confluent-kafka Consumer configured with the connector's group.
    """
    committed = consumer.committed([KafkaTopicPartition(p.topic, p.partition) for p in partitions], timeout=30)
    offsets: dict[str, int] = {}
    for tp in committed:
        if tp.error is not None:
            raise RuntimeError(f"cannot read committed offsets of {tp.topic}[{tp.partition}]: {tp.error}")
        if tp.offset >= 0:
            offsets[encode_tp(tp.topic, tp.partition)] = tp.offset
            continue
        low, high = consumer.get_watermark_offsets(KafkaTopicPartition(tp.topic, tp.partition), timeout=30, cached=False)
        offsets[encode_tp(tp.topic, tp.partition)] = high if reset == "latest" else low
    return offsets


def _bytes(value: Any) -> bytes | None:
    # Spark hands binary columns over as bytearray; converters take bytes.
    return value if value is None or value.__class__ is bytes else bytes(value)


def _original(row: tuple) -> Original:
    topic, partition, offset, timestamp, timestamp_type, key, value, headers = row
    return Original(topic, partition, offset, _bytes(key), _bytes(value),
                    [(h[0], _bytes(h[1])) for h in headers] if headers else [],
                    timestamp=timestamp, timestamp_type=timestamp_type)


def _wait_unless_stopping(seconds: float, stopping: Callable[[], bool], given_up: str) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if stopping():
            raise ConnectorError(f"the task is stopping: {given_up}")
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, _STOP_CHECK_S))


class SinkTaskRunner:
    """Feeds one task's micro-batches to its plugin and commits what it flushed.

    :param task: the plugin's task, not yet started.
    :param converters: ``{"key", "value", "header"}`` configured converters.
    :param chain: the connector's transformation chain.
    :param commit: ``commit({TopicPartition: next offset})`` stores offsets in the group.
    :param errors: the connector's error handling (default: fail on the first bad record).
    :param dead_letters: the task's :class:`~connectd.runtime.dead_letters.DeadLetterQueue`, if it
        has one; flushed before offsets are committed.
    """

    def __init__(
        self,
        task: SinkTask,
        task_config: Mapping[str, str],
        partitions: list[TopicPartition],
        converters: Mapping[str, Any],
        chain: Any,
        commit: Callable[[Mapping[TopicPartition, int]], None],
        errors: ErrorHandler | None = None,
        dead_letters: Any = None,
    ) -> None:
        self.task = task
        self.partitions = partitions
        self.converters = converters
        self.chain = chain
        self._commit = commit
        self.errors = errors or ErrorHandler(ErrorPolicy(), "?", 0)
        # put() raising a retriable error is retried with the same records for as long as it takes,
        # never tolerated, as in Kafka Connect (not bounded by errors.retry.timeout, which is for
        # converters and transforms): after context.timeout() if the task set it, else a backoff
        # doubling, random below errors.retry.delay.max.ms once past it. A task told to stop meanwhile gives up.
        self._put_errors = ErrorHandler(
            ErrorPolicy(retry_timeout_ms=-1, retry_delay_max_ms=self.errors.policy.retry_delay_max_ms),
            self.errors.connector, self.errors.task_id, sleep=self._before_put_again)
        #: Whether the task is being stopped (its run is over): put() is no longer retried.
        self.stopping: Callable[[], bool] = lambda: False
        #: A batch failed or was cancelled: close() commits nothing more.
        self.failed = False
        self._positions: dict[tuple[str, int], int] = {}  # where each partition stands after the last batch
        # Kafka Connect's lastCommittedOffsets, as far as this instance knows: what it committed, or where
        # a partition was moved (context.offset) or started a batch another instance left it at.
        self._committed: dict[tuple[str, int], int] = {}
        #: Whether pre_commit() is offered every partition this instance has had (a pinned task: the
        #: only instance, whose positions are never stale), not only those of the batch.
        self._all_positions = bool(getattr(type(task), "pinned", False))
        self.dead_letters = dead_letters
        self._next_offsets: dict[tuple[str, int], int] = {}  # of the batch so far
        #: After a batch: where the next batch of each partition the task moved
        #: (``context.offset``) to its batch's end or beyond, or that was not in the batch, starts.
        self.seeks: dict[TopicPartition, int] = {}
        #: Running totals for the task's metrics (:meth:`take_counts`): records sent to put(),
        #: put() calls and the seconds they took (retries included).
        self.sent = 0
        self.puts = 0
        self.put_seconds = 0.0
        self._counts = TaskCounts()
        task.context = SinkTaskContext(task_config, partitions)
        policy = self.errors.policy
        #: The rows of the put() in progress and of the one before: an errant record's bytes as consumed
        #: are among them (a task writing in the background reports a put()'s records during the next).
        self._rows: list[Any] = []
        self._earlier_rows: list[Any] = []
        if policy.dlq_topic or policy.log_enable:
            task.context.reporter = _Reporter(self)
        # Every call on the task comes from this one thread, as in Kafka Connect (the callers' threads
        # vary: Spark's, py4j's, an executor's reaper).
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"connectd-sink-task-{self.errors.task_id}",
                                          initializer=_bind_task, initargs=(self.errors.connector, self.errors.task_id))
        try:
            self._call(task.initialize, task.context)  # as Kafka Connect: initialize, start, open
            self._call(task.start, task_config)
            self._call(task.open, partitions)
        except BaseException:
            self._thread.shutdown(wait=False)
            raise

    def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        """*function* run on the task's thread; its result or its exception."""
        return self._thread.submit(function, *args).result()

    def process(self, rows: list[Any]) -> dict[TopicPartition, int]:
        """Put one micro-batch's rows (``connectd-kafka`` reader rows) and commit; returns what was committed."""
        if not rows:
            return {}
        self.put_rows(rows)
        return self.commit_batch()

    def process_ranges(self, ranges: list[tuple[str, int, int, int]], reader: Any, chunk: int = 500
                       ) -> dict[TopicPartition, int]:
        """Read one micro-batch's offset ranges with *reader*, put them *chunk* records at a time, commit.

        :param ranges: ``(topic, partition, start, end)`` (``rows=ranges`` reader rows).
        :param reader: a :class:`~connectd.runtime.kafka.consumers.RangeReader`.
        :param chunk: the most records one ``put`` gets (the consumer's ``max.poll.records``).
        """
        try:
            return self._call(self._process_ranges, ranges, reader, chunk)
        except BaseException:
            self.failed = True
            raise

    def _process_ranges(self, ranges: list[tuple[str, int, int, int]], reader: Any, chunk: int
                        ) -> dict[TopicPartition, int]:
        # Empty ranges only: a tick of an idle task (kafka.reading's reader), with where each partition stands.
        positions = {(topic, partition): end for topic, partition, start, end in ranges if end <= start}
        ranges = [r for r in ranges if r[3] > r[2]]
        ends = {(topic, partition): end for topic, partition, _, end in ranges}
        self.seeks = {}
        moved = self._positions
        for topic, partition, start, _ in ranges:  # another instance had it since: it committed up to here
            if moved.get((topic, partition)) != start:
                self._committed[(topic, partition)] = start
        if not ranges and positions:
            # As Kafka Connect's put() after a poll that brought nothing: the task may flush on time.
            for tp, offset in positions.items():
                if moved.get(tp) != offset:
                    self._committed[tp] = offset
            self._timed_put([])
            self._next_offsets.update(positions)
        todo = self._rewound(ranges, ends)  # rewinds the task asked for in open() or an earlier batch
        context = self.task.context
        while todo:
            # As Kafka Connect seeks before its next poll: once a put() moved a partition
            # (context.offset), the rest of this read brings none of its records, which then
            # come from where it was moved to — once, not before and again after the rewind.
            moving: set[tuple[str, int]] = set()
            for rows in reader.read(todo, chunk):
                if moving:
                    rows = [row for row in rows if (row[0], row[1]) not in moving]
                    if not rows:
                        continue
                self._put(rows)
                if context.rewinds:
                    moving.update((tp.topic, tp.partition) for tp in context.rewinds)
            todo = self._rewound([], ends)  # rewinds asked for in put(): read from there
        self._next_offsets.update(ends)
        self._next_offsets.update({(tp.topic, tp.partition): offset for tp, offset in self.seeks.items()})
        if not self._next_offsets:
            return {}
        return self.commit_batch()

    def _rewound(self, ranges: list[tuple[str, int, int, int]], ends: Mapping[tuple[str, int], int]
                 ) -> list[tuple[str, int, int, int]]:
        """*ranges* with the task's ``context.offset()`` calls since the last look applied.

        As Kafka Connect's consumer seeks: a partition moved to an offset before
        its end in this batch is read (again) from there, records already put
        included; one moved to its end or beyond, or not in this batch, starts
        there in the next batch (:attr:`seeks`), records skipped. Either way the
        offset handed to ``pre_commit`` for it is where it was moved to or,
        once read again, the batch's end — never past a rewind. Partitions not
        assigned to the task are ignored, as Kafka Connect ignores them.
        """
        context = self.task.context
        if not context.rewinds:
            return ranges
        rewinds, context.rewinds = context.rewinds, {}
        assigned = set(self.partitions)
        out = [r for r in ranges if TopicPartition(r[0], r[1]) not in rewinds]
        for tp, offset in rewinds.items():
            if tp not in assigned:
                continue
            self._committed[(tp.topic, tp.partition)] = max(offset, 0)  # as Kafka Connect's rewind()
            end = ends.get((tp.topic, tp.partition))
            if end is not None and offset < end:
                out.append((tp.topic, tp.partition, max(offset, 0), end))
                self.seeks.pop(tp, None)
            else:
                self.seeks[tp] = offset
        return out

    def put_rows(self, rows: list[Any]) -> None:
        """Convert, transform and ``put`` *rows*; their offsets are committed by :meth:`commit_batch`.

        Rows are tuples in ``ROW_SCHEMA`` order.
        """
        if not rows:
            return
        following = self._next_offsets
        for row in rows:
            tp = (row[0], row[1])
            if row[2] >= following.get(tp, 0):
                following[tp] = row[2] + 1
        self._put(rows)

    @property
    def paused(self) -> set[TopicPartition]:
        """The partitions the task paused (``context.pause``) and has not resumed."""
        return set(self.task.context._paused)

    @paused.setter
    def paused(self, partitions: Iterable[TopicPartition]) -> None:
        """As the driver saw them after the last batch: a new instance inherits its task's pauses."""
        self.task.context._paused = set(partitions) & set(self.partitions)

    def _put(self, rows: list[Any]) -> None:
        paused = self.task.context._paused
        if paused:
            rows = self._without_paused(rows, paused)
            if not rows:
                return
        self._earlier_rows, self._rows = self._rows, rows
        try:
            origins, records = self._convert_batch(rows)
        except Exception:  # find the failing record(s): converters are pure, running them again is safe
            origins, records = self._convert_each(rows)
        transformed = self._transform(origins, records)
        if transformed:
            self._timed_put(transformed)

    def _timed_put(self, records: list[SinkRecord]) -> None:
        began = time.monotonic()
        try:
            self._put_errors.run("TASK_PUT", type(self.task), lambda: self.task.put(records), Original(topic=None))
        except RecordFailure as failure:  # put() raised what is not retriable: the task fails, as in Kafka Connect
            cause = failure.__cause__
            raise ConnectException(f"{_UNRECOVERABLE} {type(cause).__name__}: {cause}") from cause
        finally:
            self.puts += 1
            self.put_seconds += time.monotonic() - began
        # An errant record reported without tolerance fails the task even if put() caught the error.
        self.errors.check_errant()
        self.sent += len(records)

    def take_counts(self) -> dict[str, float]:
        """What the task did since the last call, for its metrics (only what changed): records
        ``sent`` to put(), ``puts`` and ``put_seconds``; record ``failures``, records ``skipped``,
        ``retries``, errors ``logged``; dead-letter records sent (``dlq_requests``) and not
        delivered (``dlq_failures``)."""
        # put() failures and retries are not record errors: Kafka Connect counts neither.
        return self._counts.take({"sent": self.sent, "puts": self.puts, "put_seconds": self.put_seconds},
                                 (self.errors,), self.dead_letters)

    def _without_paused(self, rows: list[Any], paused: set[TopicPartition]) -> list[Any]:
        """*rows* without those of paused partitions, which start there next (:attr:`seeks`).

        As Kafka Connect's consumer drops what it fetched for a partition paused
        since: the partition is read from its first record not put once resumed,
        and its committed offset stays there meanwhile.
        """
        kept = []
        for row in rows:
            tp = TopicPartition(row[0], row[1])
            if tp not in paused:
                kept.append(row)
            elif tp not in self.seeks:  # rows come in order per partition: its first one not put
                self.seeks[tp] = row[2]
        return kept

    def _before_put_again(self, backoff_s: float) -> None:
        context = self.task.context
        wait_s = backoff_s if context.retry_timeout_ms is None else max(context.retry_timeout_ms, 0) / 1000
        context.retry_timeout_ms = None
        _wait_unless_stopping(wait_s, self.stopping, "put() is not retried again; its records are read again "
                                                     "when the task next runs")

    def wait_to_retry(self, seconds: float) -> None:
        """The ``sleep`` of the task's :class:`ErrorHandler`: waits before a record's conversion or
        transformation is retried, and gives up once the task is being stopped (:attr:`stopping`),
        so ``errors.retry.timeout=-1`` cannot hold a stopping task.

        :raises ConnectorError: the task is being stopped.
        """
        _wait_unless_stopping(seconds, self.stopping, "a failed record is not retried again; its batch is read "
                                                      "again when the task next runs")

    def commit_batch(self) -> dict[TopicPartition, int]:
        """Flush dead-letter records, let the task flush (``pre_commit``), commit what it allows.

        As Kafka Connect's offset commit: ``pre_commit`` is offered where each
        partition stands (those of the batch; a pinned task's every partition it
        has had); of what it returns, an offset past that or of a partition not
        offered is ignored, and an empty answer commits nothing. If it raises,
        the error is logged, nothing is committed and the partitions go back to
        their last committed offsets (:attr:`seeks`): their records since are
        put again, and the task goes on.
        """
        batch = self._next_offsets
        self._positions.update(batch)
        self._next_offsets = {}
        offered = self._positions if self._all_positions else batch
        offsets = {TopicPartition(t, p): o for (t, p), o in offered.items()}
        try:
            provided = self.task.pre_commit(dict(offsets))
        except Exception as error:  # noqa: BLE001 - Kafka Connect logs it and rewinds; the task goes on
            log.error("sink_task_pre_commit_failed", connector=self.errors.connector, task=self.errors.task_id,
                      error=repr(error))
            self._rewind_to_committed(offsets)
            return {}
        if self.dead_letters is not None:  # errant records reported in put() and in pre_commit() included
            self.dead_letters.flush()
        safe = self._committable(offsets, provided)
        if safe:
            self._commit(safe)
            self._committed.update({(tp.topic, tp.partition): offset for tp, offset in safe.items()})
        return safe

    def _committable(self, offered: Mapping[TopicPartition, int], provided: Mapping[TopicPartition, int] | None
                     ) -> dict[TopicPartition, int]:
        """What of *provided* (``pre_commit``'s answer) may be committed, as Kafka Connect decides."""
        safe: dict[TopicPartition, int] = {}
        for tp, offset in (provided or {}).items():
            current = offered.get(tp)
            if current is None:
                log.warning("sink_task_offset_ignored", connector=self.errors.connector, task=self.errors.task_id,
                            partition=f"{getattr(tp, 'topic', tp)}-{getattr(tp, 'partition', '')}", offset=offset,
                            reason="not assigned" if tp not in self.partitions else "not offered to pre_commit")
            elif offset is None or offset > current:
                log.warning("sink_task_offset_ignored", connector=self.errors.connector, task=self.errors.task_id,
                            partition=f"{tp.topic}-{tp.partition}", offset=offset,
                            reason=f"not yet consumed (the partition stands at {current})")
            else:
                safe[tp] = int(offset)
        return safe

    def _rewind_to_committed(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Have each partition of *offsets* read again from its last committed offset (:attr:`seeks`)."""
        for tp in offsets:
            key = (tp.topic, tp.partition)
            committed = self._committed.get(key)
            if committed is None:
                continue
            self.seeks[tp] = committed
            self._positions[key] = committed

    def _convert_batch(self, rows: list[tuple]) -> tuple[list[tuple], list[SinkRecord]]:
        """Every row converted, per topic with the converters' batch methods; raises on any failure."""
        topics = {row[0] for row in rows}
        groups = [rows] if len(topics) == 1 else [[row for row in rows if row[0] == t] for t in topics]
        key_batch, value_batch = self.converters["key"].to_connect_batch, self.converters["value"].to_connect_batch
        origins: list[tuple] = []
        records: list[SinkRecord] = []
        new = object.__new__
        for group in groups:
            topic = group[0][0]
            headers = []
            for row in group:
                if row[7]:
                    headers.append(self._headers(topic, [(h[0], _bytes(h[1])) for h in row[7]]))
                else:
                    empty = new(Headers)
                    empty._items = ()
                    headers.append(empty)
            keys = key_batch(topic, [_bytes(row[5]) for row in group], headers)
            values = value_batch(topic, [_bytes(row[6]) for row in group], headers)
            records.extend(sink_records(topic, group, keys, values, headers))
            origins.extend(group)
        return origins, records

    def _convert_each(self, rows: list[tuple]) -> tuple[list[tuple], list[SinkRecord]]:
        """Row by row, under the connector's error handling: failed records are skipped or raise."""
        origins, records = [], []
        for row in rows:
            topic, partition, offset, timestamp, timestamp_type, key, value, headers = row
            record = self._convert(topic, partition, offset, timestamp, timestamp_type, _bytes(key), _bytes(value),
                                   [(h[0], _bytes(h[1])) for h in headers] if headers else [])
            if record is not None:
                origins.append(row)
                records.append(record)
        return origins, records

    def _convert(self, topic: str, partition: int, offset: int, timestamp: int | None, timestamp_type: int,
                 key: bytes | None, value: bytes | None, raw_headers: list[tuple[str, bytes | None]]
                 ) -> SinkRecord | None:
        run, converters = self.errors.run, self.converters

        def original() -> Original:  # built only when the record fails
            return Original(topic, partition, offset, key, value, raw_headers, timestamp=timestamp,
                            timestamp_type=timestamp_type)

        headers = Headers()
        if raw_headers:
            ok, headers = run("HEADER_CONVERTER", type(converters["header"]),
                              lambda: self._headers(topic, raw_headers), original)
            if not ok:
                return None
        ok, key_data = run("KEY_CONVERTER", type(converters["key"]),
                           lambda: converters["key"].to_connect_data(topic, key, headers), original)
        if not ok:
            return None
        ok, value_data = run("VALUE_CONVERTER", type(converters["value"]),
                             lambda: converters["value"].to_connect_data(topic, value, headers), original)
        if not ok:
            return None
        return SinkRecord(
            topic=topic,
            kafka_partition=partition,
            key_schema=key_data.schema,
            key=key_data.value,
            value_schema=value_data.schema,
            value=value_data.value,
            timestamp=timestamp,
            headers=headers,
            kafka_offset=offset,
            timestamp_type=TimestampType.from_librdkafka(timestamp_type),
        )

    def _headers(self, topic: str, raw: list[tuple[str, bytes | None]]) -> Headers:
        headers = Headers()
        for key, value in raw:
            schema_and_value = self.converters["header"].to_connect_header(topic, key, value)
            headers.add(key, schema_and_value.value, schema_and_value.schema)
        return headers

    def _transform(self, origins: list[tuple], records: list[SinkRecord]) -> list[SinkRecord]:
        try:
            return self.chain.apply_batch(records)
        except Exception:
            pass  # find the failing record(s): transforms are pure, running them again is safe
        kept = []
        errors, stages = self.errors, self.chain.stages
        for row, record in zip(origins, records, strict=True):
            result = apply_stages(errors, stages, record, partial(_original, row))
            if result is not None:
                kept.append(result)
        return kept

    def close(self) -> None:
        """``pre_commit`` once more, then close the partitions and stop the task (once).

        As Kafka Connect commits before it closes partitions: the task is asked
        what is safe for where each partition stands (before a batch that failed
        or was cancelled, whose records are read again), and that is committed
        (pinned tasks; an executor's instance has nobody to hand it to after its
        last batch, whose offsets were committed already); after a failed batch
        nothing more is committed.
        """
        try:
            self._call(self._close)
        finally:
            self._thread.shutdown(wait=False)

    def _close(self) -> None:
        try:
            if self._positions:
                try:
                    offsets = {TopicPartition(t, p): o for (t, p), o in self._positions.items()}
                    safe = self._committable(offsets, self.task.pre_commit(dict(offsets)))
                    if self.dead_letters is not None:
                        self.dead_letters.flush()
                    if safe and not self.failed:
                        self._commit(safe)
                except Exception as error:  # noqa: BLE001 - close() and stop() are owed all the same
                    log.warning("sink_task_last_commit_failed", connector=self.errors.connector,
                                task=self.errors.task_id, error=repr(error))
            self.task.close(self.partitions)
        finally:
            self.task.stop()


def _bind_task(connector: str, task_id: int) -> None:
    """Every line logged on a task's own thread names its connector and task."""
    structlog.contextvars.bind_contextvars(connector=connector, task=task_id)


class _Reporter(ErrantRecordReporter):
    """A task's errant record reporter: the record's bytes as consumed, through the connector's
    error handling (log, dead-letter queue, tolerance)."""

    def __init__(self, runner: SinkTaskRunner) -> None:
        self._runner = runner

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        runner = self._runner
        key = (record.original_topic, record.original_kafka_partition, record.original_kafka_offset)
        # Looked for only when a record is reported, not kept indexed for every record.
        row = next((r for rows in (runner._rows, runner._earlier_rows) for r in rows if (r[0], r[1], r[2]) == key),
                   None)
        if row is not None:
            original = _original(row)
        else:  # from neither put(): its data and headers as the converters write them (Kafka Connect's)
            topic = record.original_topic or record.topic
            converters = runner.converters
            header = converters["header"].from_connect_header
            original = Original(topic, record.original_kafka_partition, record.original_kafka_offset,
                                converters["key"].from_connect_data(topic, record.key_schema, record.key),
                                converters["value"].from_connect_data(topic, record.value_schema, record.value),
                                [(h.key, header(topic, h.key, h.schema, h.value)) for h in record.headers or ()],
                                timestamp=record.timestamp, timestamp_type=record.timestamp_type + 1)
        return runner.errors.report_errant(type(runner.task), error, original)
