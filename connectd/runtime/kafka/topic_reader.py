"""Reading a whole topic to its end, synchronously, with confluent-kafka.

For topics read as tables (offsets, configs): every partition from its
beginning to its end, the last value of each key winning, ``None`` for a
key whose last record is a tombstone. Compaction is left to the broker
(and some never apply it), so duplicates are expected and resolved here.

"The end" of a partition is the high watermark of the fetch responses, as
librdkafka reports it with a partition-EOF event when the consumer has
read up to it. ListOffsets (``LATEST``) is never asked: the fetch's high
watermark is what Kafka's own ``readToEnd`` stops at, and some brokers
answer ListOffsets wrongly. With ``isolation.level=read_committed`` (the
default here, as for Kafka Connect's offset consumers) the end is the last
stable offset instead, so an open transaction's records are not read.

The consumer is only assigned, never subscribed, and never commits.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

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


def consumer_only(settings: Mapping[str, Any]) -> dict[str, Any]:
    """*settings* without librdkafka's producer-only properties, for a consumer of the same cluster."""
    return {k: v for k, v in settings.items() if k not in _PRODUCER_ONLY}


def _consumer_config(settings: Mapping[str, Any]) -> dict[str, Any]:
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
        # A broker that answers an empty fetch only when the wait expires would otherwise
        # make every partition cost the default 500 ms.
        "fetch.wait.max.ms": 10,
        "fetch.queue.backoff.ms": 10,
    })
    return config


def read_topic_records(settings: Mapping[str, Any], topic: str,
                       timeout: float = 60.0) -> dict[bytes, tuple[bytes | None, int]]:
    """The last record of each key of *topic*: key → (value, timestamp in ms).

    Records without a key are skipped. A topic that does not exist reads as empty.

    :param settings: confluent-kafka settings of the cluster (producer-only ones are dropped).
    :param timeout: seconds for the whole read.
    :raises ConnectorError: (retriable) if the end is not reached in time or the broker fails the read.
    """
    from confluent_kafka import (
        OFFSET_BEGINNING,
        Consumer,
        KafkaError,
        KafkaException,
        TopicPartition,
    )

    deadline = time.monotonic() + timeout
    consumer = Consumer(_consumer_config(settings))
    try:
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
        waiting = set(described.partitions)
        if not waiting:
            return {}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(waiting)])
        records: dict[bytes, tuple[bytes | None, int]] = {}
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectorError(
                    f"topic {topic} not read to its end within {timeout:.0f} s "
                    f"(partitions {', '.join(map(str, sorted(waiting)))} unfinished)", retriable=True)
            # consume() waits out its timeout when fewer records than asked are there: keep it short.
            for message in consumer.consume(num_messages=1_000, timeout=min(left, 0.02)):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        waiting.discard(message.partition())
                        continue
                    if error.retriable() or (error.code() < 0 and not error.fatal()):
                        continue  # transient, or librdkafka's own: it retries
                    raise ConnectorError(f"cannot read topic {topic}: {error}", retriable=True)
                key = message.key()
                if key is not None:
                    records[key] = (message.value(), message.timestamp()[1])
        return records
    finally:
        consumer.close()


def read_topic(settings: Mapping[str, Any], topic: str, timeout: float = 60.0) -> dict[bytes, bytes | None]:
    """Every key of *topic* with its last value (``None``: its last record is a tombstone).

    See :func:`read_topic_records`.
    """
    return {key: value for key, (value, _) in read_topic_records(settings, topic, timeout).items()}
