"""The leader's writes to the config topic through a transactional producer (KIP-618's "fencable
writer"), with ``exactly.once.source.support`` ``preparing`` or ``enabled``: a worker that lost the
leadership and has not noticed yet cannot write, since the new leader's producer fenced its own.

Kafka Connect's transactional id, ``connect-cluster-<group.id>``; one transaction per write (a
connector's config with its target state, a generation of task configs with their commit)::

    RELINQUISHED ──claim(): this worker was assigned the leadership; a producer of the id is
                  initialised, which fences every earlier leader's──► CLAIMED
    CLAIMED ──write(records): begin, produce, flush, commit──► CLAIMED
    CLAIMED ──a write fails (fenced by a newer leader, the cluster away): aborted where it can be,
              the producer dropped (the herder claims again if it still leads)──► RELINQUISHED
    CLAIMED ──relinquish(): no longer the leader, or stopping──► RELINQUISHED
    RELINQUISHED ──write──► refused: not claimed (nothing is written)

Every call blocks (a dropped producer's client is destroyed in the call that drops it): the config
store runs them in a thread, one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from connectd.errors import ConnectorError
from connectd.logging import get_logger

__all__ = ["LeaderWriter", "transactional_id"]

log = get_logger(__name__)

_WRITE_FAILED = ("Failed to write to config topic; this may be due to a transient error and the request can be "
                 "safely retried")


def transactional_id(group_id: str) -> str:
    """The leader's ``transactional.id``, Kafka Connect's (``DistributedConfig.transactionalProducerId``)."""
    return f"connect-cluster-{group_id}"


class LeaderWriter:
    """Writes to one single-partition topic in transactions (states in the module's docstring).

    :param topic: the config topic.
    :param client_option: the producer's settings as a client option
        (:func:`connectd.runtime.kafka.clients.client_option`: the worker's ``producer.*``).
    :param transactional_id: :func:`transactional_id` of the cluster.
    :param timeout_s: how long initialising, a commit or an abort may take.
    """

    def __init__(self, topic: str, client_option: str, transactional_id: str, timeout_s: float) -> None:
        self.topic = topic
        self.client_option = client_option
        self.transactional_id = transactional_id
        self.timeout_s = timeout_s
        self._producer: Any = None
        self._lock = threading.Lock()

    @property
    def claimed(self) -> bool:
        return self._producer is not None

    def claim(self) -> None:
        """Initialise a producer of the id (fencing every earlier one).

        :raises ConnectorError: the cluster did not initialise it in time.
        """
        from confluent_kafka import KafkaException  # lazy: only workers with exactly-once load it

        from connectd.runtime.kafka.producing import transactional_producer

        with self._lock:
            self._producer = None
            try:
                producer = transactional_producer(self.client_option, self.transactional_id, self.timeout_s)
            except KafkaException as exc:
                raise ConnectorError(f"could not claim the write privileges for config topic {self.topic} "
                                     f"(transactional.id {self.transactional_id}): {exc.args[0]}",
                                     retriable=True) from exc
            self._producer = producer
        log.info("config_topic_write_privileges_claimed", transactional_id=self.transactional_id)

    def relinquish(self) -> None:
        """Drop the producer (its client is destroyed here: call it off the event loop)."""
        with self._lock:
            released, self._producer = self._producer, None
        if released is not None:
            log.info("config_topic_write_privileges_relinquished", transactional_id=self.transactional_id)

    def write(self, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Write *records* to partition 0 in one transaction; returns once it committed.

        :raises ConnectorError: not claimed, or the transaction failed (then the privileges are gone).
        """
        from confluent_kafka import KafkaException  # lazy: as in claim

        with self._lock:
            producer = self._producer
            if producer is None:
                raise ConnectorError(f"{_WRITE_FAILED}: this worker does not hold the write privileges for the "
                                     "config topic (not the leader, or fenced by a newer one)", retriable=True)
            try:
                producer.begin_transaction()
                for key, value in records:
                    producer.produce(self.topic, key=key, value=value, partition=0)
                producer.commit_transaction(self.timeout_s)  # flushes; fails if any record failed
            except KafkaException as exc:
                self._producer = None
                error = exc.args[0] if exc.args else exc
                try:
                    producer.abort_transaction(self.timeout_s)
                except KafkaException:
                    pass  # fenced or fatal: the broker ends the transaction itself
                log.warning("config_topic_write_failed", transactional_id=self.transactional_id, error=str(error))
                raise ConnectorError(f"{_WRITE_FAILED}: {error}", retriable=True) from exc
