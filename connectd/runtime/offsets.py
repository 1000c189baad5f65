"""Connector offsets: source offsets in a local file (standalone mode's
``offset.storage.file.filename``), and both kinds as the offsets API
(KIP-875, ``/connectors/{c}/offsets``) reads and writes them.

Keys are Kafka Connect's: ``["<connector>", {<source partition>}]``; values
the source offset, ``None`` deleting it — the same records the offsets topic
holds in distributed mode, so moving between the two is a copy.

The file is JSON, rewritten whole on every commit: written to a temporary
file in the same directory, fsynced, renamed over the old one, and the
directory fsynced, so a crash leaves either the old or the new offsets,
never a torn file. Each task's query commits from its own process, so
writers take an exclusive ``flock`` on a lock file beside it.

In the offsets API a source partition and offset are JSON objects of
primitive values; a sink connector's are Kafka Connect's
``{"kafka_topic", "kafka_partition"}`` and ``{"kafka_offset"}``, kept as the
committed offsets of its consumer group. :func:`parse_source_offsets` and
:func:`parse_sink_offsets` check a request's entries with Kafka Connect's
messages; the ``*_group_*`` functions read and change a group's offsets.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from connectd.errors import BadRequestError, ConfigError, ConnectorError

__all__ = [
    "KAFKA_OFFSET",
    "KAFKA_PARTITION",
    "KAFKA_TOPIC",
    "FileOffsetStore",
    "alter_group_offsets",
    "canonical",
    "delete_group",
    "group_offsets",
    "parse_sink_offsets",
    "parse_source_offsets",
    "store_offsets_hook",
]

KAFKA_TOPIC = "kafka_topic"
KAFKA_PARTITION = "kafka_partition"
KAFKA_OFFSET = "kafka_offset"

_FORMAT_VERSION = 1


def canonical(value: Any) -> str:
    """JSON text that is the same for equal values (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class FileOffsetStore:
    """Offsets of every connector in one file.

    :param path: the file; created on the first write.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _read(self) -> dict[str, Any]:
        """canonical key text → offset."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            document = json.loads(text)
            entries = document["offsets"]
            return {canonical(entry["key"]): entry["value"] for entry in entries}
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError([f"{self.path}: not a connectd offsets file ({exc}); "
                               "move it away to start without stored offsets"]) from exc

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{self.path}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        """Stored offsets of *partitions* of *connector*, keyed by the partition's canonical JSON."""
        stored = self._read()
        found = {}
        for partition in partitions:
            value = stored.get(canonical([connector, partition]))
            if value is not None:
                found[canonical(partition)] = value
        return found

    def connector_offsets(self, connector: str) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """Every (partition, offset) stored for *connector*."""
        pairs = []
        for key_text, value in self._read().items():
            key = json.loads(key_text)
            if key[0] == connector and value is not None:
                pairs.append((key[1], value))
        return pairs

    def put(self, connector: str, offsets: Mapping[str, Mapping[str, Any] | None]) -> None:
        """Store *offsets* (partition as canonical JSON text → offset, ``None`` deletes) atomically."""
        if not offsets:
            return
        with self._locked():
            stored = self._read()
            for partition_text, value in offsets.items():
                key = canonical([connector, json.loads(partition_text)])
                if value is None:
                    stored.pop(key, None)
                else:
                    stored[key] = value
            self._write(stored)

    def _write(self, stored: Mapping[str, Any]) -> None:
        document = {
            "version": _FORMAT_VERSION,
            "offsets": [{"key": json.loads(k), "value": v} for k, v in sorted(stored.items())],
        }
        handle, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(document, out, indent=1)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def store_offsets_hook(arg: str, batch_id: int, offsets: dict[str, str], records: int) -> None:
    """The Kafka writer's ``commit.hook`` for standalone source tasks.

    :param arg: JSON ``{"path": <offsets file>, "connector": <name>}``.
    :param offsets: source partition (canonical JSON text) → source offset (JSON text),
        the last of each partition in the batch; called only after the batch is flushed.
    """
    spec = json.loads(arg)
    FileOffsetStore(spec["path"]).put(spec["connector"], {p: json.loads(o) for p, o in offsets.items()})


# --- the offsets API (KIP-875) ---------------------------------------------------

_PRIMITIVES = (str, int, float, bool)


def _json_kind(value: Any) -> str:
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def _check_primitive_map(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise BadRequestError(f"{where} must be a JSON object, not {_json_kind(value) if value is not None else 'null'}")
    for key, item in value.items():
        if item is not None and not isinstance(item, _PRIMITIVES):
            raise BadRequestError(f"Offsets may only contain primitive types as values, but field {key} "
                                  f"contains {_json_kind(item)} ({where})")


def parse_source_offsets(entries: Iterable[tuple[Any, Any]]) -> dict[str, Mapping[str, Any] | None]:
    """A request's ``(partition, offset)`` entries as source offsets: partition's canonical JSON → offset.

    :raises BadRequestError: naming the entry that is not a source partition or offset.
    """
    offsets: dict[str, Mapping[str, Any] | None] = {}
    for index, (partition, offset) in enumerate(entries):
        _check_primitive_map(partition, f"offsets[{index}].partition")
        if offset is not None:
            _check_primitive_map(offset, f"offsets[{index}].offset")
        offsets[canonical(partition)] = offset  # a later entry for one partition wins, as in Kafka
    return offsets


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _parse_int(value: Any) -> int | None:
    """10 and "10" alike, as Kafka Connect takes them; ``None`` for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
        return int(value)
    return None


def parse_sink_offsets(entries: Iterable[tuple[Any, Any]]) -> dict[Any, int | None]:
    """A request's ``(partition, offset)`` entries as sink offsets: TopicPartition → next offset (None: remove).

    :raises BadRequestError: with Kafka Connect's message for the first malformed entry.
    """
    from connectd.connector import TopicPartition

    offsets: dict[Any, int | None] = {}
    for partition, offset in entries:
        if partition is None:
            raise BadRequestError("The partition for a sink connector offset cannot be null or missing")
        if not isinstance(partition, dict) or KAFKA_TOPIC not in partition or KAFKA_PARTITION not in partition:
            raise BadRequestError(f"The partition for a sink connector offset must contain the keys "
                                  f"'{KAFKA_TOPIC}' and '{KAFKA_PARTITION}'")
        topic = partition[KAFKA_TOPIC]
        if not isinstance(topic, str) or not topic:
            raise BadRequestError("Kafka topic names must be valid strings and may not be null")
        if partition[KAFKA_PARTITION] is None:
            raise BadRequestError("Kafka partitions must be valid numbers and may not be null")
        number = _parse_int(partition[KAFKA_PARTITION])
        if number is None:
            raise BadRequestError(f"Failed to parse the following Kafka partition value in the provided offsets: "
                                  f"'{_shown(partition[KAFKA_PARTITION])}'. Partition values for sink connectors need "
                                  "to be integers.")
        if number < 0:
            raise BadRequestError(f"Kafka partitions may not be negative: {number}")
        tp = TopicPartition(topic, number)
        if offset is None:
            offsets[tp] = None
            continue
        if not isinstance(offset, dict) or KAFKA_OFFSET not in offset:
            raise BadRequestError(f"The offset for a sink connector should either be null or contain "
                                  f"the key '{KAFKA_OFFSET}'")
        value = _parse_int(offset[KAFKA_OFFSET])
        if value is None:
            raise BadRequestError(f"Failed to parse the following Kafka offset value in the provided offsets: "
                                  f"'{_shown(offset[KAFKA_OFFSET])}'. Offset values for sink connectors need "
                                  "to be integers.")
        if value < 0:
            raise BadRequestError(f"Kafka offsets may not be negative: {value} for {topic}[{number}]")
        offsets[tp] = value
    return offsets


def _commit(consumer_config: Mapping[str, Any], group: str, offsets: Mapping[Any, int]) -> None:
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka import TopicPartition as KafkaTopicPartition

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
    from confluent_kafka import ConsumerGroupTopicPartitions

    from connectd.connector import TopicPartition

    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=timeout)[group]
    result = future.result(timeout=timeout)
    return {TopicPartition(tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions or [] if tp.error is None and tp.offset >= 0}


def delete_group(admin: Any, group: str, connector: str, timeout: float = 30.0) -> None:
    """Delete *group* with its offsets; a group that does not exist is already deleted.

    :raises ConnectorError: with Kafka Connect's message when the group still has members.
    """
    from confluent_kafka import KafkaException

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
    from confluent_kafka import KafkaException

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
