"""Reading a whole topic to its end, synchronously, with confluent-kafka.

For topics read as tables (offsets, configs): every partition from its
beginning to its end, the last value of each key winning, ``None`` for a
key whose last record is a tombstone. Compaction is left to the broker
(and some never apply it), so duplicates are expected and resolved here.

"The end" of a partition is fixed once, when the read first hears of the
partition: the high watermark of that Fetch response (the consumer is new,
so every request it sends starts after the read began, and every write
acknowledged before the read is below it), or librdkafka's partition-EOF
event, whichever comes first. The end is not chased: a topic written to all
the time (a source committing its offsets while its task reads them) is
read to where it was and no further, as Kafka's ``readToEnd`` does, and as
:class:`connectd.cluster.kafka_log.KafkaLog` does for the control plane
with aiokafka. ListOffsets (``LATEST``) is never asked: some brokers answer
it wrongly. With ``isolation.level=read_committed`` (the default here, as
for Kafka Connect's offset consumers) librdkafka reports the end at the
last stable offset, so an open transaction's records are not waited for.

How long a fetch may wait. Some brokers answer an empty fetch only when its
wait expires, so a long wait makes every quiet read cost it; others (tansu
on slow storage) give up reading a partition when the wait expires and
answer it empty, so a short wait never gets its records. A read starts with
a 10 ms wait and, if it has not finished within a second, goes on from where
it was with a consumer that waits longer (100 ms for 2 s, 1 s for 10 s, then
5 s). On Kafka a longer wait costs nothing before the end: a fetch is
answered as soon as there are records.

The consumer is only assigned, never subscribed, and never commits.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from connectd.errors import ConnectorError

__all__ = ["consumer_only", "read_topic", "read_topic_records"]

# librdkafka producer properties: a consumer given them logs a warning for each.
_PRODUCER_ONLY = frozenset({
    "acks", "request.required.acks", "batch.size", "batch.num.messages", "linger.ms", "queue.buffering.max.ms",
    "compression.type", "compression.codec", "compression.level", "enable.idempotence", "enable.gapless.guarantee",
    "queue.buffering.max.kbytes", "queue.buffering.max.messages", "request.timeout.ms", "delivery.timeout.ms",
    "message.timeout.ms", "retries", "message.send.max.retries", "transactional.id", "transaction.timeout.ms",
    "partitioner", "sticky.partitioning.linger.ms", "dr_cb", "dr_msg_cb", "on_delivery",
})

#: The fetch waits a read tries (ms), each for at most so many seconds (``None``: until the deadline).
FETCH_WAITS: tuple[tuple[int, float | None], ...] = ((10, 1.0), (100, 2.0), (1000, 10.0), (5000, None))


def consumer_only(settings: Mapping[str, Any]) -> dict[str, Any]:
    """*settings* without librdkafka's producer-only properties, for a consumer of the same cluster."""
    return {k: v for k, v in settings.items() if k not in _PRODUCER_ONLY}


def _consumer_config(settings: Mapping[str, Any], fetch_wait_ms: int) -> dict[str, Any]:
    config: dict[str, Any] = {
        "group.id": "connectd-topic-reader",  # required by the client; never joined or committed
        "isolation.level": "read_committed",
    }
    config.update(consumer_only(settings))
    config.update({
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "allow.auto.create.topics": False,
        "fetch.wait.max.ms": fetch_wait_ms,
        "fetch.queue.backoff.ms": 10,
    })
    return config


class _Read:
    """A read of one topic in progress: what is read so far, and where each partition stands."""

    def __init__(self, topic: str, partitions: set[int]) -> None:
        self.topic = topic
        self.waiting = set(partitions)
        self.records: dict[bytes, tuple[bytes | None, int]] = {}
        self.ends: dict[int, int] = {}  # partition -> its end, fixed when first heard of
        self.positions: dict[int, int] = {}  # partition -> the offset after the last record read

    def progress(self) -> str:
        """Each unfinished partition with the offset read to and its end, if known."""
        return ", ".join(f"{p}: {self.positions.get(p, '-')} / {self.ends.get(p, '?')}" for p in sorted(self.waiting))

    def run(self, consumer: Any, deadline: float, budget_s: float | None) -> None:
        """Read until every partition is at its end, or (returning early) for *budget_s* seconds.

        :raises ConnectorError: (retriable) when the deadline passes, or the broker fails the read.
        """
        consumer.assign([TopicPartition(self.topic, p, self.positions.get(p, OFFSET_BEGINNING))
                         for p in sorted(self.waiting)])
        began = time.monotonic()
        while self.waiting:
            now = time.monotonic()
            if now >= deadline:
                raise ConnectorError(
                    f"topic {self.topic} not read to its end in time (unfinished partitions, "
                    f"read to / end if known: {self.progress()})", retriable=True)
            if budget_s is not None and now - began >= budget_s:
                return
            # consume() waits out its timeout when fewer records than asked are there: keep it short.
            for message in consumer.consume(num_messages=1_000, timeout=min(deadline - now, 0.02)):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        self.waiting.discard(message.partition())
                        continue
                    if error.retriable() or (error.code() < 0 and not error.fatal()):
                        continue  # transient, or librdkafka's own: it retries
                    raise ConnectorError(f"cannot read topic {self.topic}: {error}", retriable=True)
                self.positions[message.partition()] = message.offset() + 1
                key = message.key()
                if key is not None:
                    self.records[key] = (message.value(), message.timestamp()[1])
            for partition in [p for p in self.waiting if p in self.positions]:
                if partition not in self.ends:
                    _, high = consumer.get_watermark_offsets(TopicPartition(self.topic, partition), cached=True)
                    if high < 0:
                        continue  # no fetch answer seen yet
                    self.ends[partition] = high
                if self.positions[partition] >= self.ends[partition]:
                    self.waiting.discard(partition)


def read_topic_records(settings: Mapping[str, Any], topic: str,
                       timeout: float = 60.0) -> dict[bytes, tuple[bytes | None, int]]:
    """The last record of each key of *topic*: key → (value, timestamp in ms).

    Records without a key are skipped. A topic that does not exist reads as empty.

    :param settings: confluent-kafka settings of the cluster (producer-only ones are dropped).
    :param timeout: seconds for the whole read.
    :raises ConnectorError: (retriable) if the end is not reached in time or the broker fails the read;
        the message names each unfinished partition with the offset read to and its end.
    """
    deadline = time.monotonic() + timeout
    read: _Read | None = None
    for wait_ms, budget_s in FETCH_WAITS:
        consumer = Consumer(_consumer_config(settings, wait_ms))
        try:
            if read is None:
                try:
                    metadata = consumer.list_topics(topic, timeout=max(deadline - time.monotonic(), 0.1))
                except KafkaException as exc:
                    raise ConnectorError(f"cannot read topic {topic}: {exc}", retriable=True) from exc
                described = metadata.topics.get(topic)
                if described is None or described.error is not None and \
                        described.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    return {}
                if described.error is not None:
                    raise ConnectorError(f"cannot read topic {topic}: {described.error}", retriable=True)
                read = _Read(topic, set(described.partitions))
            read.run(consumer, deadline, budget_s)
            if not read.waiting:
                return read.records
        finally:
            consumer.close()
    raise AssertionError("the last fetch wait reads until the deadline")


def read_topic(settings: Mapping[str, Any], topic: str, timeout: float = 60.0) -> dict[bytes, bytes | None]:
    """Every key of *topic* with its last value (``None``: its last record is a tombstone).

    See :func:`read_topic_records`.
    """
    return {key: value for key, (value, _) in read_topic_records(settings, topic, timeout).items()}
