"""The dead-letter queue: one producer per task, one delivery check, for sinks and sources alike.

A task that tolerates errors (``errors.tolerance=all``) with
``errors.deadletterqueue.topic.name`` set sends each failed record here;
:meth:`DeadLetterQueue.flush` runs before the task's offsets are stored
(a sink's group commit, a source batch's offsets), so an offset is never
committed past a dead-letter record that Kafka did not acknowledge. A
delivery error reported by the producer's callback fails the flush as
surely as a record still waiting; the flush raises a retriable
:class:`~connectd.errors.ConnectorError` naming the topic and the first
errors.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import Producer

from connectd.errors import ConnectorError
from connectd.logging import get_logger

__all__ = ["DeadLetterQueue", "ensure_dlq_topic"]

log = get_logger(__name__)

_FLUSH_TIMEOUT_S = 30.0


class DeadLetterQueue:
    """Sends dead-letter records to one topic and checks that each was delivered.

    :param producer_settings: confluent-kafka settings (resolved); made idempotent with ``acks=all``.
    :param topic: the dead-letter topic.
    """

    def __init__(self, producer_settings: Mapping[str, Any], topic: str) -> None:
        self.topic = topic
        self._producer = Producer({**producer_settings, "enable.idempotence": True, "acks": "all"})
        self._failures: list[str] = []
        self._lock = threading.Lock()
        #: Records Kafka did not take (for the task's metrics).
        self.failed = 0

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            # Kafka Connect's line, for those who alert on it.
            log.error("dlq_produce_failed", message=f"Could not produce message to dead letter queue. "
                      f"topic={self.topic}", topic=self.topic, error=str(error))
            with self._lock:
                self._failures.append(str(error))
                self.failed += 1

    def send(self, topic: str, key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]],
             delivered: Future[None] | None = None, timestamp: int | None = None) -> None:
        """Queue one record (the ``send_to_dlq`` of :class:`~connectd.runtime.error_handling.ErrorHandler`).

        :param delivered: completed when Kafka acknowledged the record, or failed with the error.
        :param timestamp: the failed record's own timestamp (ms), kept as Kafka Connect keeps it;
            ``None``: the time of sending.
        """
        on_delivery = self._delivered
        if delivered is not None:
            def on_delivery(error: Any, message: Any) -> None:
                self._delivered(error, message)
                if error is None:
                    delivered.set_result(None)
                else:
                    delivered.set_exception(ConnectorError(f"dead-letter record not delivered to {topic}: {error}"))
        if timestamp is not None and timestamp >= 0:
            self._producer.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery,
                                   timestamp=timestamp)
        else:
            self._producer.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
        self._producer.poll(0)

    def flush(self, timeout_s: float = _FLUSH_TIMEOUT_S) -> None:
        """Wait until every record sent so far is acknowledged.

        :raises ConnectorError: (retriable) when some are not, or delivery failed.
        """
        remaining = self._producer.flush(timeout_s)
        with self._lock:
            failures, self._failures = self._failures, []
        if remaining or failures:
            raise ConnectorError(f"dead-letter records not written to {self.topic}: {remaining} unacknowledged, "
                                 f"errors: {failures[:3]}", retriable=True)

    def close(self) -> None:
        """Flush what is left (logging, not raising, if that fails) and drop the producer."""
        try:
            self.flush()
        except ConnectorError as exc:
            log.error("dlq_close_incomplete", topic=self.topic, error=str(exc))
        self._producer = None


def ensure_dlq_topic(admin: Any, topic: str, replication_factor: int, metadata: Any = None) -> None:
    """Create the dead-letter topic (one partition) unless it exists; a topic created meanwhile is fine.

    :param admin: a confluent-kafka ``AdminClient``.
    :param replication_factor: ``errors.deadletterqueue.topic.replication.factor``; capped at the
        number of brokers (with a warning), ``-1`` the broker's default.
    """
    # lazy: only the worker creates the topic; executors import this module for DeadLetterQueue,
    # and confluent_kafka's admin would add ~12 ms there
    from confluent_kafka.admin import NewTopic

    metadata = metadata if metadata is not None else admin.list_topics(timeout=30)
    if topic in metadata.topics:
        return
    brokers = len(metadata.brokers)
    factor = -1 if replication_factor == -1 else min(replication_factor, brokers)
    if factor != replication_factor:
        log.warning("dlq_replication_reduced", topic=topic, wanted=replication_factor, brokers=brokers)
    result = admin.create_topics([NewTopic(topic, 1, factor)])[topic]
    try:
        result.result(timeout=30)
    except Exception as exc:  # created meanwhile by another task: fine
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise
