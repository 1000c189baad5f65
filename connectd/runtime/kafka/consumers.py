"""The consumers of the reading side (:mod:`connectd.runtime.kafka.reading`), on confluent-kafka.

One is kept at the partitions' ends and finds where a micro-batch ends
(:class:`HighWatermarks`), reading (almost) no records; the other reads exact
offset ranges where a batch is handled (:class:`RangeReader`, kept per executor
Python worker by :func:`executor_range_reader`). Both take their settings from
:func:`consumer_settings`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from connectd.runtime.kafka.clients import client_settings, decode_tp, encode_tp

__all__ = [
    "RangeReader",
    "consumer_settings",
]


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
        for key in partitions:
            _, high = self._consumer.get_watermark_offsets(TopicPartition(*decode_tp(key)), cached=True)
            if high >= 0 and high > self._known.get(key, -1):
                self._known[key] = high

    def _assign(self, positions: dict[str, int]) -> None:
        # assign(), not seek(): seek() starts offset validation that some brokers never answer,
        # and the partition would stop fetching.
        self._consumer.assign([TopicPartition(*decode_tp(key), offset) for key, offset in positions.items()])

    def close(self) -> None:
        self._consumer.close()


def _partitions_of(messages: list[Any]) -> set[str]:
    """The partition keys of the records among *messages* (``None`` and errors left out)."""
    return {encode_tp(m.topic(), m.partition()) for m in messages if m is not None and m.error() is None}


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
            reader = _range_readers[client_option] = RangeReader(
                Consumer(consumer_settings(client_settings(client_option))), keep_others=False)
        return reader


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
        """The records of *ranges* (``(topic, partition, start, end)``) as
        :data:`~connectd.runtime.kafka.clients.ROW_SCHEMA` tuples.

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
        positions = dict(self._next) if self.keep_others else {}
        positions.update({tp: start for tp, (start, _) in wanted.items()})
        self._ahead.clear()
        self.consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in sorted(positions.items())])
        self._next = positions


def _raise_unless_benign(error: Any) -> None:
    if error.code() == KafkaError._PARTITION_EOF:
        return
    raise KafkaException(error)
