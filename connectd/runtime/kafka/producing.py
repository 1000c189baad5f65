"""Kafka inside Spark, producing (source tasks): the producers of executor processes and the
batches they produce, taken column by column — Spark's Arrow batches or a source task host's
:class:`ColumnBatch` — no Row object per record, with an idempotent producer (``acks=all``).

A batch counts as written only when every record is acknowledged; a delivery error fails it. Rows
may carry the source partition and offset (JSON text) of the record, gathered per source partition
for the offsets stored after the batch. A row whose topic is null only moves an offset (its record
was dropped by a transform) and is not produced. Spark's writer that uses them is
:class:`connectd.runtime.kafka.writing.KafkaStreamWriter`.

This module imports no pyspark: a source task's own process (:mod:`connectd.runtime.source.host`)
produces with it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, Producer

from connectd.logging import RepeatFilter
from connectd.runtime.kafka.clients import client_settings

__all__ = [
    "ColumnBatch",
    "arrow_write_schema",
    "executor_producer",
    "flush_produced",
    "produce_batches",
    "transactional_producer",
]

_WRITE_COLUMNS = ("topic", "partition", "key", "value", "timestamp", "headers", "source_partition", "source_offset")


def write_arrow_batch(rows: list[tuple]) -> Any:
    """*rows* in :data:`~connectd.runtime.kafka.clients.WRITE_SCHEMA` order as one
    ``pyarrow.RecordBatch`` (what a reader's ``read`` may yield: Spark then converts no row in
    Python)."""
    import pyarrow as pa  # lazy: pyarrow (~40 ms) once a source task runs, not at the worker's start

    schema = arrow_write_schema()
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)],
                                      schema=schema)


class ColumnBatch:
    """Records as one Python list per :data:`~connectd.runtime.kafka.clients.WRITE_SCHEMA` column, for
    :func:`produce_batches` where they never leave the process (no Arrow to build and take apart)."""

    __slots__ = ("columns", "num_rows")

    def __init__(self, columns: dict[str, list[Any]], num_rows: int) -> None:
        self.columns = columns
        self.num_rows = num_rows

    @classmethod
    def from_rows(cls, rows: list[tuple]) -> ColumnBatch:
        return cls({name: list(column) for name, column in zip(_WRITE_COLUMNS, zip(*rows), strict=True)}, len(rows))

    @property
    def nbytes(self) -> int:
        """About how much memory the records hold, as an Arrow batch's ``nbytes`` says of its buffers:
        the mean key and value size of up to 16 of them × the rows (a poll's records are alike), plus
        each record's Python overhead (its objects and list slots)."""
        n = self.num_rows
        if not n:
            return 0
        sample = range(0, n, max(1, n // 16))
        size = sum(len(column[i] or b"") for column in (self.columns.get("key"), self.columns.get("value"))
                   if column for i in sample)
        return n * (size // len(sample) + _RECORD_OVERHEAD)


#: What a record of a :class:`ColumnBatch` costs beside its key's and value's bytes.
_RECORD_OVERHEAD = 64


_ARROW_SCHEMA: Any = None


def arrow_write_schema() -> Any:
    """:data:`~connectd.runtime.kafka.clients.WRITE_SCHEMA` as a ``pyarrow`` schema (made once)."""
    global _ARROW_SCHEMA
    if _ARROW_SCHEMA is None:
        import pyarrow as pa  # lazy: as in write_arrow_batch

        header = pa.struct([("key", pa.string()), ("value", pa.binary())])
        _ARROW_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("key", pa.binary()),
                                   ("value", pa.binary()), ("timestamp", pa.int64()), ("headers", pa.list_(header)),
                                   ("source_partition", pa.string()), ("source_offset", pa.string())])
    return _ARROW_SCHEMA


#: ``commit.hook.arg`` under a name Spark redacts (``spark.redaction.regex``).
COMMIT_HOOK_SECRET_ARG = "commit.hook.secret.arg"


@dataclass
class _Written:
    records: int = 0
    #: records Kafka did not take, passed over (``produce_batches(failed=…)``)
    failed: int = 0
    source_offsets: dict[str, str] = field(default_factory=dict)
    #: deliveries that failed a batch (no ``failed`` callback), for :func:`flush_produced`
    failures: list[str] = field(default_factory=list)


_producers: dict[str, Any] = {}
_producers_lock = threading.Lock()
#: Client errors that retrying cannot cure: a batch fails at once with them, not after its flush timeout.
_REFUSALS = frozenset({"_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
                       "CLUSTER_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "_SSL"})


class _Producer:
    """A confluent-kafka producer and the refusal (``_REFUSALS``) its client last reported."""

    def __init__(self, config: dict[str, Any]) -> None:
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
            producer = _Producer(_producer_config(client_json, every_delivery))
            _producers[key] = producer
        return producer


def transactional_producer(client_json: str, transactional_id: str, timeout: float,
                           every_delivery: bool = False) -> Any:
    """A source task's own transactional producer (exactly-once delivery), not shared: settings as
    :func:`executor_producer`'s, with *transactional_id*. Initialised here: the broker then fences
    every older producer of that id (a zombie of the task, whose next transaction fails) and ends
    its open transaction, before this task reads its offsets.

    :raises KafkaException: the cluster did not initialise it within *timeout* seconds.
    """
    producer = _Producer({**_producer_config(client_json, every_delivery), "transactional.id": transactional_id,
                          "enable.idempotence": True})
    producer.init_transactions(timeout)
    return producer


def _producer_config(client_json: str, every_delivery: bool) -> dict[str, Any]:
    """An executor's producer settings: idempotent, ``acks=all``, keyed records in the partition Java
    clients choose (murmur2_random); only failed deliveries reported (flush() waits for every one)
    unless every one is wanted; the client's own settings over these."""
    config = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, "partitioner": "murmur2_random",
              "delivery.report.only.error": not every_delivery}
    config.update(client_settings(client_json))
    return config


#: What ``produce()`` raises for a record it refuses (Java's producer reports these through the send's
#: callback): too large, or a topic or partition the cluster does not have. Anything else it raises
#: (a fatal idempotence error, bad arguments) is the producer's, not the record's.
_RECORD_REFUSALS = frozenset({"MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC"})


def produce_batches(producer: Any, batches: Iterable[Any], flush_timeout: float,
                    acks: list[Any] | None = None, failed: Callable[..., None] | None = None,
                    written: _Written | None = None, flush: bool = True, poll_every: int = 1000) -> _Written:
    """Produce Arrow batches (or :class:`ColumnBatch` ones) of
    :data:`~connectd.runtime.kafka.clients.WRITE_SCHEMA` rows; return once every record is acknowledged.

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
    :param written: what earlier calls for the same batch produced (with ``flush=False``): this
        call's records are added to it.
    :param flush: wait for every acknowledgement (:func:`flush_produced`) before returning; without
        it the records are only handed to the producer, and a later call flushes them all.
    :param poll_every: serve the producer's callbacks after every so many records; 0: only when
        its queue is full, and at the flush. A ``poll()`` gives up the GIL: in a process where
        another thread runs Python (a source task's poll thread) each one waits for it, up to
        milliseconds.
    """
    written = _Written() if written is None else written
    failures = written.failures

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

    # produce() is called with positional arguments: a keyword dict per record costs as much as the
    # call itself. Its order is confluent-kafka's: topic, value, key, partition (-1: the partitioner
    # chooses), callback, on_delivery (callback's alias: None), timestamp (0: now), headers (None:
    # none). A source record's timestamp is its Kafka record's, as Kafka Connect's ProducerRecord's.
    produce, poll = producer.produce, producer.poll
    for batch in batches:
        header_pairs = isinstance(batch, ColumnBatch)  # its headers are (key, value) pairs already
        if header_pairs:
            columns = {name: column for name, column in batch.columns.items()
                       if column.count(None) < batch.num_rows}  # an all-null column is not read
        else:
            names = batch.schema.names
            columns = {name: batch.column(i).to_pylist() for i, name in enumerate(names)
                       if batch.column(i).null_count < batch.num_rows}
        empty = [None] * batch.num_rows
        for name, last in zip(columns.get("source_partition", ()), columns.get("source_offset", ()), strict=True):
            if name is not None:
                written.source_offsets[name] = last
        rows = zip(*(columns.get(name, empty) for name in _WRITE_COLUMNS[:6]), strict=True)
        for topic, partition, key, value, timestamp, headers in rows:
            if topic is None:
                continue  # an offset-only row: a record a transform dropped still moves the offset
            callback = delivered
            if acks is not None:
                callback = delivered_as(len(acks))
                acks.append(None)
            if headers and not header_pairs:
                headers = [(h["key"], h["value"]) for h in headers]
            args = (value, key, -1 if partition is None else partition, callback, None,
                    0 if timestamp is None else timestamp, headers or None)
            try:
                try:
                    produce(topic, *args)
                except BufferError:
                    _produce_when_room(producer, topic, *args)
            except KafkaException as error:  # the record refused, also once there was room
                refused(error, topic, key=key, value=value, partition=args[2], headers=args[6])
                continue
            written.records += 1
            if poll_every and not written.records % poll_every:
                poll(0)
    return flush_produced(producer, written, flush_timeout) if flush else written


def flush_produced(producer: Any, written: _Written, flush_timeout: float) -> _Written:
    """Wait until every record :func:`produce_batches` handed to *producer* is acknowledged.

    :raises RuntimeError: a record was not acknowledged within *flush_timeout* seconds, or failed.
    """
    failures = written.failures
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


def _produce_when_room(producer: Any, topic: str, *args: Any, **kwargs: Any) -> None:
    """Produce once the local queue has room (deliveries drain while it waits)."""
    while True:
        _raise_if_refused(producer)
        producer.poll(0.05)
        try:
            producer.produce(topic, *args, **kwargs)
            return
        except BufferError:
            continue


def append_commits_to_file(path: str, batch_id: int, offsets: dict[str, str], records: int) -> None:
    """A ``commit.hook`` that appends each committed batch as a JSON line to *path*.

    For diagnostics and tests: ``option("commit.hook", "connectd.runtime.kafka.producing:append_commits_to_file")``
    with ``option("commit.hook.arg", "/path/to/log")``.
    """
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"batch": batch_id, "records": records, "offsets": offsets}) + "\n")
        log.flush()
        os.fsync(log.fileno())
