"""A sink connector's offsets: the committed offsets of its consumer group (``connect-<name>``,
or its ``consumer.override.group.id``), read, changed and removed as KIP-875's offsets API asks
(only while the connector is STOPPED: a group with members refuses, and the error says so in
Kafka Connect's words).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectd.connector import TopicPartition
from connectd.errors import ConnectorError

__all__ = ["alter_group_offsets", "delete_group", "group_offsets"]


def _commit(consumer_config: Mapping[str, Any], group: str, offsets: Mapping[Any, int]) -> None:
    if not offsets:
        return
    consumer = Consumer({**consumer_config, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, o)
                                             for tp, o in sorted(offsets.items())], asynchronous=False)
        failed = [tp for tp in committed or [] if tp.error is not None]
        if failed:
            raise KafkaException(failed[0].error)
    finally:
        consumer.close()


# Errors a group's offsets cannot be changed with because it has members: the
# connector's tasks have not stopped yet, or it was resumed meanwhile.
_GROUP_BUSY = frozenset({"NON_EMPTY_GROUP", "UNKNOWN_MEMBER_ID", "GROUP_SUBSCRIBED_TO_TOPIC",
                         "REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION"})


def _error_name(exc: BaseException) -> str:
    error = exc.args[0] if exc.args else None
    return error.name() if hasattr(error, "name") else ""


def group_offsets(admin: Any, group: str, timeout: float = 30.0) -> dict[Any, int]:
    """The committed offsets of *group*: TopicPartition → next offset to read.

    :param admin: a confluent-kafka AdminClient, referenced by the caller until this returns.
    """
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=timeout)[group]
    result = future.result(timeout=timeout)
    return {TopicPartition(tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions or [] if tp.error is None and tp.offset >= 0}


def delete_group(admin: Any, group: str, connector: str, timeout: float = 30.0) -> None:
    """Delete *group* with its offsets; a group that does not exist is already deleted.

    :raises ConnectorError: with Kafka Connect's message when the group still has members.
    """
    try:
        admin.delete_consumer_groups([group], request_timeout=timeout)[group].result(timeout=timeout)
    except KafkaException as exc:
        name = _error_name(exc)
        if name == "GROUP_ID_NOT_FOUND":
            return
        if name in _GROUP_BUSY:
            raise ConnectorError(
                f"Failed to reset consumer group offsets for connector {connector} either because its tasks haven't "
                "stopped completely yet or the connector was resumed before the request to reset its offsets could "
                "be successfully completed. If the connector is in a stopped state, this operation can be safely "
                "retried.", retriable=True) from exc
        raise ConnectorError(f"Failed to reset consumer group offsets for sink connector {connector}: {exc}") from exc


def alter_group_offsets(admin: Any, consumer_config: Mapping[str, Any], group: str, connector: str,
                        offsets: Mapping[Any, int | None], timeout: float = 30.0) -> None:
    """Commit *offsets* for *group*; ``None`` removes a partition's committed offset.

    The offsets are committed by a consumer of the group that joins nothing,
    as the sink's tasks commit theirs; a group without members (the
    connector is STOPPED) takes such commits. (Brokers differ on the admin
    API's commit to a group deleted a moment before; tansu fails it.)
    confluent-kafka cannot send OffsetDelete, so removing an offset is
    deleting the group and committing again the offsets it keeps: the same
    result while the group has no members. Should the second step fail, the
    error names the offsets that were to be kept.

    :param admin: a confluent-kafka AdminClient, referenced by the caller until this returns.
    :param consumer_config: confluent-kafka settings of the connector's consumers.
    :raises ConnectorError: with Kafka Connect's message when the broker refuses.
    """
    commit = {tp: o for tp, o in offsets.items() if o is not None}
    try:
        if any(o is None for o in offsets.values()):
            kept = {tp: o for tp, o in group_offsets(admin, group, timeout).items() if tp not in offsets}
            delete_group(admin, group, connector, timeout)
            try:
                _commit(consumer_config, group, {**kept, **commit})
            except KafkaException as exc:
                shown = ", ".join(f"{tp.topic}[{tp.partition}]={o}" for tp, o in sorted(kept.items()))
                raise ConnectorError(f"Failed to alter consumer group offsets for connector {connector}: {exc}; "
                                     f"the offsets kept were removed too and must be set again: {shown}") from exc
        else:
            _commit(consumer_config, group, commit)
    except ConnectorError:
        raise
    except KafkaException as exc:
        if _error_name(exc) in _GROUP_BUSY:
            raise ConnectorError(
                f"Failed to alter consumer group offsets for connector {connector} either because its tasks haven't "
                "stopped completely yet or the connector was resumed before the request to alter its offsets could "
                "be successfully completed. If the connector is in a stopped state, this operation can be safely "
                "retried.", retriable=True) from exc
        raise ConnectorError(f"Failed to alter consumer group offsets for connector {connector}: {exc}") from exc
