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

from connectd.logging import get_logger
from connectd.runtime.kafka.clients import client_settings, decode_tp, encode_tp
from connectd.runtime.kafka.topic_reader import FETCH_WAITS

__all__ = [
    "RangeReader",
    "consumer_settings",
]

log = get_logger(__name__)


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


#: A range reader that has lengthened its fetch waits goes back to its own consumer's at the first
#: read this many seconds after it last lengthened them.
LENGTHENED_FOR_S = 60.0
#: Seconds without a record, with the consumer's own wait (three of its waits at least), before a
#: range reader lengthens it.
FETCH_WAITS_FIRST_S = 1.0

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
            settings = consumer_settings(client_settings(client_option))
            reader = _range_readers[client_option] = RangeReader(Consumer(settings), keep_others=False,
                                                                 settings=settings)
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
    :param settings: the settings *consumer* was made with. Given them, a read
        that gets nothing for a while goes on with longer fetch waits (below).

    Longer fetch waits. A range's records exist (it ends at a high watermark a
    Fetch gave), so a read that gets none for a second is not waiting for
    records: the broker answers its fetches empty. Some do when the fetch's
    wait runs out before their storage has read the partition (tansu on slow
    storage, where a 10 ms wait may never get a partition's records). The read
    goes on from where it was with a consumer of its own that waits longer
    (:data:`~connectd.runtime.kafka.topic_reader.FETCH_WAITS`: 100 ms, then 1 s,
    then 5 s), *consumer* unassigned meanwhile, and says so in the log. On
    Kafka a longer wait costs nothing while records are there: a fetch is
    answered as soon as it has some. The reader returns to *consumer* at the
    first read :data:`LENGTHENED_FOR_S` after it last had to lengthen the wait.
    """

    def __init__(self, consumer: Any, timeout: float = 120.0, keep_others: bool = True,
                 settings: Mapping[str, Any] | None = None) -> None:
        self.consumer = self._own = consumer
        self.timeout = timeout
        self.keep_others = keep_others
        self._next: dict[tuple[str, int], int] = {}  # where the next range of each assigned partition starts
        self._ahead: dict[tuple[str, int], list[tuple]] = {}
        self._settings = dict(settings) if settings is not None else None
        configured = int((settings or {}).get("fetch.wait.max.ms", 500))  # librdkafka's default
        #: The longer waits still to try (ms, seconds without a record before the next), shortest first.
        self._waits = [(wait, budget) for wait, budget in FETCH_WAITS if wait > configured]
        self._level = 0  # how many of them are in use: 0 is *consumer*'s own wait
        self._first_budget_s = max(FETCH_WAITS_FIRST_S, 3 * configured / 1000)  # three fetches at least
        self._lengthened_at = 0.0

    def read(self, ranges: list[tuple[str, int, int, int]], chunk: int = 10_000) -> Iterator[list[tuple]]:
        """The records of *ranges* (``(topic, partition, start, end)``) as
        :data:`~connectd.runtime.kafka.clients.ROW_SCHEMA` tuples.

        Yields lists of at most *chunk* records, in offset order per partition.
        """
        wanted = {(t, p): (start, end) for t, p, start, end in ranges if end > start}
        shorter = self._level and time.monotonic() - self._lengthened_at > LENGTHENED_FOR_S
        if shorter:
            self._use(self._own, 0)
        if (shorter or any(self._next.get(tp) != start for tp, (start, _) in wanted.items())
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
        deadline = quiet_since = time.monotonic()
        deadline += self.timeout
        while missing:
            # Ask for no more than the ranges still hold: consume() waits out its timeout
            # when fewer records than asked exist.
            still = sum(end - position[tp] for tp, end in missing.items())
            messages = self.consumer.consume(num_messages=max(min(chunk - len(out), still), 1), timeout=0.1)
            now = time.monotonic()
            if messages:
                deadline, quiet_since = now + self.timeout, now
            elif now > deadline:
                raise TimeoutError(
                    f"offsets not readable within {self.timeout:.0f} s: "
                    + ", ".join(f"{t}[{p}] up to {end - 1}" for (t, p), end in sorted(missing.items())))
            elif self._lengthen_due(now - quiet_since):
                self._lengthen(wanted, {tp: position[tp] for tp in missing})
                quiet_since = now
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

    def close(self) -> None:
        """Close the consumer of longer waits, if one is in use; the caller closes its own."""
        if self.consumer is not self._own:
            self.consumer.close()
            self.consumer = self._own

    def _lengthen_due(self, quiet_s: float) -> bool:
        if self._settings is None or self._level >= len(self._waits):
            return False
        budget = self._first_budget_s if self._level == 0 else self._waits[self._level - 1][1]
        return budget is not None and quiet_s >= budget

    def _lengthen(self, wanted: Mapping[tuple[str, int], tuple[int, int]],
                  missing: Mapping[tuple[str, int], int]) -> None:
        """Go on reading *missing* (``{partition: next offset}``) with a consumer that waits longer."""
        assert self._settings is not None
        wait = self._waits[self._level][0]
        consumer = Consumer({**self._settings, "fetch.wait.max.ms": wait})
        # Every partition where its next range starts (what was fetched ahead is fetched again), but
        # those still being read, which go on from where they are.
        positions = dict(self._next) if self.keep_others else {tp: self._next[tp] for tp in wanted}
        positions.update(missing)
        self._ahead.clear()
        consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in sorted(positions.items())])
        self._use(consumer, self._level + 1)
        self._lengthened_at = time.monotonic()
        log.warning("fetch_wait_lengthened", fetch_wait_ms=wait,
                    partitions=[f"{t}[{p}]@{offset}" for (t, p), offset in sorted(missing.items())],
                    message="the broker answered fetches empty though records are there; reading on "
                            "with longer fetch waits")

    def _use(self, consumer: Any, level: int) -> None:
        """Read with *consumer* from now on (at wait *level*); the one used so far stops fetching."""
        if self.consumer is self._own:
            self._own.unassign()  # kept for when the waits are short again (and its caller's commits)
        elif self.consumer is not consumer:
            self.consumer.close()
        self.consumer, self._level = consumer, level

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
