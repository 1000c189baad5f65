"""Records as connectors and transforms see them: :class:`SourceRecord` and :class:`SinkRecord`.

Records are created for every message inside Spark, so they are slotted
dataclasses with keyword-only construction; :meth:`ConnectRecord.new_record`
copies one with changes, as Kafka's ``newRecord`` does (headers are copied
unless new ones are given; source offsets and sink offsets are kept).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connectd.data.errors import DataError
from connectd.data.headers import Headers
from connectd.data.schema import Schema

__all__ = ["ConnectRecord", "SinkRecord", "SourceRecord", "TimestampType"]


class TimestampType(enum.IntEnum):
    """Kafka's ``TimestampType``; values are Kafka's ids, :attr:`display_name` its names."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def display_name(self) -> str:
        return _TIMESTAMP_NAMES[self]

    @classmethod
    def from_librdkafka(cls, code: int) -> TimestampType:
        """From confluent-kafka's ``TIMESTAMP_NOT_AVAILABLE`` (0), ``CREATE_TIME`` (1), ``LOG_APPEND_TIME`` (2)."""
        return cls(code - 1)


_TIMESTAMP_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}

_NEW_RECORD_FIELDS = frozenset(
    ("topic", "kafka_partition", "key_schema", "key", "value_schema", "value", "timestamp", "headers")
)


@dataclass(slots=True, kw_only=True)
class ConnectRecord:
    """What every record has: topic, partition, key and value with their schemas, timestamp, headers.

    :param topic: the topic name.
    :param kafka_partition: the partition, or ``None`` to let the producer choose.
    :param key_schema: the key's schema, or ``None`` when schemaless.
    :param key: the key.
    :param value_schema: the value's schema, or ``None`` when schemaless.
    :param value: the value; ``None`` is a tombstone.
    :param timestamp: milliseconds since the epoch, or ``None``.
    :param headers: :class:`Headers` (or anything :class:`Headers` accepts).
    """

    topic: str
    kafka_partition: int | None = None
    key_schema: Schema | None = None
    key: Any = None
    value_schema: Schema | None = None
    value: Any = None
    timestamp: int | None = None
    headers: Headers = field(default_factory=Headers)

    def __post_init__(self) -> None:
        if self.timestamp is not None and self.timestamp < 0:
            raise DataError(f"Invalid record timestamp {self.timestamp}")
        if not isinstance(self.headers, Headers):
            self.headers = Headers(self.headers)

    def new_record(self, **changes: Any) -> ConnectRecord:
        """A copy with *changes* to ``topic``, ``kafka_partition``, ``key_schema``, ``key``,
        ``value_schema``, ``value``, ``timestamp`` or ``headers``; other attributes
        (source partition and offset, Kafka offset, …) are kept.
        """
        if not _NEW_RECORD_FIELDS.issuperset(changes):
            unknown = changes.keys() - _NEW_RECORD_FIELDS
            raise TypeError(f"new_record() cannot change {', '.join(sorted(unknown))}")
        copy = _COPIERS.get(self.__class__)
        if copy is not None:
            return copy(self, changes)
        if "headers" not in changes:
            changes["headers"] = self.headers.copy()
        return dataclasses.replace(self, **changes)


@dataclass(slots=True, kw_only=True)
class SourceRecord(ConnectRecord):
    """A record a source task produced, with where it came from in the source system.

    :param source_partition: identifies the source partition (e.g. ``{"filename": "a.txt"}``).
    :param source_offset: the position in it (e.g. ``{"position": 1024}``).
    """

    source_partition: Mapping[str, Any] | None = None
    source_offset: Mapping[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class SinkRecord(ConnectRecord):
    """A record read from Kafka for a sink task.

    ``original_*`` keep the topic, partition and offset before transforms ran
    (defaulting to the record's own); sink tasks track offsets with them.

    :param kafka_offset: the record's offset.
    :param timestamp_type: how :attr:`timestamp` was set.
    """

    kafka_offset: int
    timestamp_type: TimestampType = TimestampType.NO_TIMESTAMP_TYPE
    original_topic: str | None = None
    original_kafka_partition: int | None = None
    original_kafka_offset: int | None = None

    def __post_init__(self) -> None:
        ConnectRecord.__post_init__(self)
        if self.original_topic is None:
            self.original_topic = self.topic
        if self.original_kafka_partition is None:
            self.original_kafka_partition = self.kafka_partition
        if self.original_kafka_offset is None:
            self.original_kafka_offset = self.kafka_offset


def _compile_copier(cls: type[ConnectRecord]) -> Any:
    """``copier(record, changes)``: what ``dataclasses.replace`` makes of a record of exactly *cls*, faster.

    ``replace`` passes every field to ``__init__`` (which only assigns them)
    and runs ``__post_init__``; the copier assigns the slots itself and runs
    the same ``__post_init__``, so a copy is checked just as a new record is.
    Headers are copied unless new ones are given.
    """
    fields = dataclasses.fields(cls)
    if not all(f.init for f in fields) or {f.name for f in fields} != set(cls.__slots__) | {
        name for base in cls.__mro__[1:] for name in getattr(base, "__slots__", ())
    }:
        raise TypeError(f"cannot compile a record copier for {cls.__name__}")
    lines = ["def copy(record, changes):", "    new = _new(_cls)"]
    for f in fields:
        if f.name == "headers":
            lines += [
                '    if "headers" in changes:',
                '        new.headers = changes["headers"]',
                "    else:",
                "        headers = record.headers",
                "        if headers.__class__ is _Headers:",
                "            new.headers = copied = _new(_Headers)",
                "            copied._items = headers._items.copy()",
                "        else:",
                "            new.headers = headers.copy()",
            ]
        elif f.name in _NEW_RECORD_FIELDS:
            lines.append(f'    new.{f.name} = changes["{f.name}"] if "{f.name}" in changes else record.{f.name}')
        else:
            lines.append(f"    new.{f.name} = record.{f.name}")
    lines += ["    new.__post_init__()", "    return new"]
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_Headers": Headers}
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from the dataclass's own fields
    return namespace["copy"]


# Only these exact classes: a subclass may add init=False fields or its own
# __init__, which dataclasses.replace handles and a slot copy would not.
_COPIERS = {cls: _compile_copier(cls) for cls in (ConnectRecord, SourceRecord, SinkRecord)}
