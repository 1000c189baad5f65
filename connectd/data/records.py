"""Records as connectors and transforms see them: :class:`SourceRecord` and :class:`SinkRecord`.

Records are created for every message inside Spark, so they are slotted
dataclasses with keyword-only construction; :meth:`ConnectRecord.new_record`
copies one with changes, as Kafka's ``newRecord`` does (headers are copied
unless new ones are given; source offsets and sink offsets are kept).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connectd.data.headers import Headers
from connectd.data.schema import Schema
from connectd.errors import DataError

__all__ = ["ConnectRecord", "SinkRecord", "SourceRecord", "SourceRecordBatch", "TimestampType", "sink_records"]


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

_NEW_RECORD_FIELDS = ("topic", "kafka_partition", "key_schema", "key", "value_schema", "value", "timestamp", "headers")


class _Unchanged:
    """new_record()'s default for each attribute: keep the record's own."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unchanged>"


_KEEP: Any = _Unchanged()


@dataclass(slots=True, kw_only=True)
class ConnectRecord:
    """What every record has: topic, partition, key and value with their schemas, timestamp, headers.

    :param topic: the topic name.
    :param kafka_partition: the partition, or ``None`` to let the producer choose.
    :param key_schema: the key's schema, or ``None`` when schemaless.
    :param key: the key.
    :param value_schema: the value's schema, or ``None`` when schemaless.
    :param value: the value; ``None`` is a tombstone.
    :param timestamp: milliseconds since the epoch, or ``None``; ``-1`` (Kafka's ``NO_TIMESTAMP``)
        is taken as ``None``, as Kafka Connect takes it when it produces a record, and any other
        negative one is a :class:`DataError`.
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

    # Keep _POST_INIT_NEEDED (below) in step with what __post_init__ checks.
    def __post_init__(self) -> None:
        if self.timestamp is not None and self.timestamp < 0:
            self.timestamp = _negative_timestamp(self.timestamp)
        if not isinstance(self.headers, Headers):
            self.headers = Headers(self.headers)

    def new_record(
        self,
        *,
        topic: str = _KEEP,
        kafka_partition: int | None = _KEEP,
        key_schema: Schema | None = _KEEP,
        key: Any = _KEEP,
        value_schema: Schema | None = _KEEP,
        value: Any = _KEEP,
        timestamp: int | None = _KEEP,
        headers: Headers = _KEEP,
        **unknown: Any,
    ) -> ConnectRecord:
        """A copy with changes to ``topic``, ``kafka_partition``, ``key_schema``, ``key``,
        ``value_schema``, ``value``, ``timestamp`` or ``headers``; other attributes
        (source partition and offset, Kafka offset, …) are kept.
        """
        # ConnectRecord, SourceRecord and SinkRecord have a compiled copy of this method
        # (see _compile_new_record); it comes here for records of other classes.
        if unknown:
            raise TypeError(f"new_record() cannot change {', '.join(sorted(unknown))}")
        given = (topic, kafka_partition, key_schema, key, value_schema, value, timestamp, headers)
        changes = {name: change for name, change in zip(_NEW_RECORD_FIELDS, given) if change is not _KEEP}
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

    # Keep _POST_INIT_NEEDED (below) in step with what __post_init__ checks.
    def __post_init__(self) -> None:
        ConnectRecord.__post_init__(self)
        if self.original_topic is None:
            self.original_topic = self.topic
        if self.original_kafka_partition is None:
            self.original_kafka_partition = self.kafka_partition
        if self.original_kafka_offset is None:
            self.original_kafka_offset = self.kafka_offset


def _compile_new_record(cls: type[ConnectRecord]) -> Any:
    """*cls*'s ``new_record``: for records of exactly *cls*, what ``dataclasses.replace`` makes, faster.

    ``replace`` passes every field to ``__init__`` (which only assigns them)
    and runs ``__post_init__``; this assigns the slots itself and runs the
    same ``__post_init__`` when it has something to do, so a copy is checked
    just as a new record is. Headers are copied unless new ones are given.
    Records of subclasses (which may add ``init=False`` fields or an
    ``__init__`` of their own) and unknown changes go to the generic method.
    """
    fields = dataclasses.fields(cls)
    if not all(f.init for f in fields) or {f.name for f in fields} != set(cls.__slots__) | {
        name for base in cls.__mro__[1:] for name in getattr(base, "__slots__", ())
    }:
        raise TypeError(f"cannot compile new_record for {cls.__name__}")
    changes = ", ".join(f"{name}=_KEEP" for name in _NEW_RECORD_FIELDS)
    lines = [
        f"def new_record(self, *, {changes}, **unknown):",
        "    if unknown or self.__class__ is not _cls:",
        "        return _generic(self, " + ", ".join(f"{name}={name}" for name in _NEW_RECORD_FIELDS) + ", **unknown)",
        "    new = _new(_cls)",
    ]
    for f in fields:
        if f.name == "headers":
            lines += [
                "    if headers is not _KEEP:",
                "        new.headers = headers",
                "    else:",
                "        headers = self.headers",
                "        if headers.__class__ is _Headers:  # Headers.copy(), inline",
                "            new.headers = copied = _new(_Headers)",
                "            items = headers._items",
                "            copied._items = list(items) if items else ()",
                "        else:",
                "            new.headers = headers.copy()",
            ]
        elif f.name in _NEW_RECORD_FIELDS:
            lines.append(f"    new.{f.name} = self.{f.name} if {f.name} is _KEEP else {f.name}")
        else:
            lines.append(f"    new.{f.name} = self.{f.name}")
    lines += [f"    if {_POST_INIT_NEEDED[cls]}:", "        new.__post_init__()", "    return new"]
    namespace: dict[str, Any] = {
        "_new": object.__new__,
        "_cls": cls,
        "_Headers": Headers,
        "_KEEP": _KEEP,
        "_generic": _generic_new_record,
    }
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from the dataclass's own fields
    method = namespace["new_record"]
    method.__doc__ = _generic_new_record.__doc__
    method.__qualname__ = f"{cls.__name__}.new_record"
    method.__module__ = __name__
    return method


# For each class, an expression on the copy `new` that is false only when its
# __post_init__ would change nothing and raise nothing (it is harmless when true).
_POST_INIT_NEEDED = {
    ConnectRecord: "(new.timestamp is not None and new.timestamp < 0) or new.headers.__class__ is not _Headers",
}
_POST_INIT_NEEDED[SourceRecord] = _POST_INIT_NEEDED[ConnectRecord]
_POST_INIT_NEEDED[SinkRecord] = (
    _POST_INIT_NEEDED[ConnectRecord]
    + " or new.original_topic is None or new.original_kafka_partition is None or new.original_kafka_offset is None"
)

_generic_new_record = ConnectRecord.new_record
for _cls in (ConnectRecord, SourceRecord, SinkRecord):
    _cls.new_record = _compile_new_record(_cls)  # type: ignore[method-assign]
del _cls


#: Kafka's RecordBatch.NO_TIMESTAMP: a record without a timestamp.
_NO_TIMESTAMP = -1


def _negative_timestamp(timestamp: int) -> None:
    """A negative record timestamp, as Kafka Connect takes it: -1 is none; any other is refused.

    :raises DataError: *timestamp* is not -1.
    """
    if timestamp != _NO_TIMESTAMP:
        raise DataError(f"Invalid record timestamp {timestamp}")
    return None


class SourceRecordBatch(Sequence[SourceRecord]):
    """Many source records alike, as columns: one topic and Kafka partition, one source partition, the
    same schemas and timestamp, no headers; a value (and a key, or none) and a source offset each.

    What a source task's ``poll()`` may return instead of a list, where its records come in bulk (lines
    of a file, rows of a query): it is a list of :class:`SourceRecord` all the same — a read-only
    sequence of them, each made when it is read — so Kafka Connect's contract holds. Where no
    transform runs and the task does not override ``commit_record``, the worker converts and produces
    the columns as they are and makes no record at all: the Python work per record is then the
    converter's and the producer's only.

    :param topic: every record's topic.
    :param values: each record's value.
    :param source_offsets: each record's source offset, in order (any sequence: it may make each
        when read; the worker reads the last one unless it makes the records).
    :param source_partition: every record's source partition.
    :param keys: each record's key, or ``None``: no record has one.
    :param timestamp: every record's timestamp (as :class:`ConnectRecord`'s).
    :raises DataError: the columns differ in length, or the timestamp is negative (but -1).
    """

    __slots__ = ("topic", "kafka_partition", "key_schema", "keys", "value_schema", "values", "timestamp",
                 "source_partition", "source_offsets")

    def __init__(self, topic: str, values: Sequence[Any], source_offsets: Sequence[Mapping[str, Any] | None], *,
                 source_partition: Mapping[str, Any] | None = None, value_schema: Schema | None = None,
                 keys: Sequence[Any] | None = None, key_schema: Schema | None = None,
                 kafka_partition: int | None = None, timestamp: int | None = None) -> None:
        if len(source_offsets) != len(values) or keys is not None and len(keys) != len(values):
            raise DataError(f"a SourceRecordBatch needs one source offset (and key, if any) per value: "
                            f"{len(values)} values, {len(source_offsets)} offsets"
                            + ("" if keys is None else f", {len(keys)} keys"))
        if timestamp is not None and timestamp < 0:
            timestamp = _negative_timestamp(timestamp)
        self.topic, self.kafka_partition, self.timestamp = topic, kafka_partition, timestamp
        self.key_schema, self.keys, self.value_schema, self.values = key_schema, keys, value_schema, values
        self.source_partition, self.source_offsets = source_partition, source_offsets

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return SourceRecord(topic=self.topic, kafka_partition=self.kafka_partition, key_schema=self.key_schema,
                            key=None if self.keys is None else self.keys[index], value_schema=self.value_schema,
                            value=self.values[index], timestamp=self.timestamp,
                            source_partition=self.source_partition, source_offset=self.source_offsets[index])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment] - a sequence of mutable records

    def __repr__(self) -> str:
        return f"SourceRecordBatch(topic={self.topic!r}, records={len(self)})"


_LIBRDKAFKA_TIMESTAMP_TYPES = (TimestampType.NO_TIMESTAMP_TYPE, TimestampType.CREATE_TIME,
                               TimestampType.LOG_APPEND_TIME)


def sink_records(
    topic: str,
    rows: list[tuple],
    keys: list[Any],
    values: list[Any],
    headers: list[Headers] | None = None,
) -> list[SinkRecord]:
    """One :class:`SinkRecord` per Kafka row of *topic*: what ``SinkRecord(…)`` makes, built faster.

    For a sink task's batch: the constructor's keyword handling and checks
    cost more than the rest of a record's way to the plugin. The checks are
    made here once per row, the same way (-1 is no timestamp, another negative
    one a :class:`DataError`, as from the constructor).

    :param rows: ``(topic, partition, offset, timestamp, librdkafka timestamp type, …)``, as
        :data:`connectd.runtime.kafka.clients.ROW_SCHEMA` orders them; only the first five are read.
    :param keys: ``(schema, value)`` of each row's key (e.g. :class:`SchemaAndValue`).
    :param values: ``(schema, value)`` of each row's value.
    :param headers: each row's :class:`Headers`; new empty ones when ``None``.
    """
    new = object.__new__
    types = _LIBRDKAFKA_TIMESTAMP_TYPES
    records = []
    append = records.append
    for i, row in enumerate(rows):
        timestamp = row[3]
        if timestamp is not None and timestamp < 0:
            timestamp = _negative_timestamp(timestamp)
        record = new(SinkRecord)
        record.topic = record.original_topic = topic
        record.kafka_partition = record.original_kafka_partition = row[1]
        record.kafka_offset = record.original_kafka_offset = row[2]
        record.timestamp = timestamp
        record.timestamp_type = types[row[4]]
        record.key_schema, record.key = keys[i]
        record.value_schema, record.value = values[i]
        if headers is None:
            record.headers = new(Headers)
            record.headers._items = ()
        else:
            record.headers = headers[i]
        append(record)
    return records
