"""Records into rows: which columns a record fills, per ``pk.mode``, and the values it fills them with.

A :class:`Shape` is worked out once per (key schema, value schema) and used
for every record that has them:

============ ======================================= ==========================================
pk.mode      primary key columns                      other columns
============ ======================================= ==========================================
none         none                                     the value's fields
kafka        topic, partition, offset (``pk.fields``) the value's fields
record_key   the key struct's fields (``pk.fields``   the value's fields
             or all), or one named column for a
             primitive key
record_value the value's fields in ``pk.fields``      the value's other fields
             (or all)
============ ======================================= ==========================================

``fields.whitelist`` narrows the other columns. A record whose value is not a
struct with a schema, or whose key does not fit ``pk.mode``, raises
:class:`RecordError` saying which record and why; the task reports it (the
errant record reporter) or fails.
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connectd import (
    Date,
    Decimal,
    Schema,
    SchemaType,
    SinkRecord,
    Struct,
    Time,
    Timestamp,
)

from connectd_jdbc.config import Settings

__all__ = ["Column", "RecordError", "Shape", "Shapes", "where"]

_LOGICAL = {Decimal.LOGICAL_NAME, Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME}
_KAFKA_SCHEMAS = (Schema.STRING, Schema.INT32, Schema.INT64)


class RecordError(Exception):
    """A record this connector cannot turn into a row; the message says which and why."""


def where(record: SinkRecord) -> str:
    """``topic-partition@offset`` of *record*, for messages."""
    return f"{record.topic}-{record.kafka_partition}@{record.kafka_offset}"


@dataclass(frozen=True)
class Column:
    """A column a record fills: its name and the Connect schema its values have."""

    name: str
    schema: Schema

    @property
    def optional(self) -> bool:
        return self.schema.optional

    @property
    def has_default(self) -> bool:
        return self.schema.default_value is not None


@dataclass(frozen=True)
class Shape:
    """How records with one pair of schemas become rows: key columns, other columns, and extractors."""

    key_columns: tuple[Column, ...]
    value_columns: tuple[Column, ...]
    key: Callable[[SinkRecord], tuple[Any, ...]]
    values: Callable[[SinkRecord], tuple[Any, ...]]
    #: key values then the other values, as one tuple
    row: Callable[[SinkRecord], tuple[Any, ...]]

    @property
    def columns(self) -> tuple[Column, ...]:
        return self.key_columns + self.value_columns


class Shapes:
    """The :class:`Shape` of each record, worked out once per schema pair."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._zone = settings.db_timezone
        self._cache: dict[tuple[Any, ...], Shape] = {}
        self._last: tuple[Any, Any, Shape] | None = None  # (key schema, value schema, shape) of the last record

    def of(self, record: SinkRecord) -> Shape:
        """The shape of *record*; a tombstone's has no value columns. :class:`RecordError` if it has none."""
        last = self._last
        if last is not None and record.value_schema is last[1] and record.key_schema is last[0] \
                and record.value.__class__ is Struct:
            return last[2]  # the records of a batch mostly share their schemas: no lookup
        tombstone = record.value is None
        if not tombstone and not (isinstance(record.value, Struct) and record.value_schema is not None
                                  and record.value_schema.type is SchemaType.STRUCT):
            raise RecordError(
                f"record {where(record)}: the value is {_described(record.value, record.value_schema)}; the JDBC "
                "sink writes struct values with a schema (JsonConverter with schemas.enable=true, or a schema "
                "registry's converter)")
        if tombstone and not self._settings.delete_enabled:
            raise RecordError(f"record {where(record)} has a null value (a tombstone) and delete.enabled=false: "
                              "set delete.enabled=true (with pk.mode=record_key) to delete rows, or drop "
                              "tombstones with a transform")
        cache_key = (tombstone, record.key_schema, record.value_schema)
        shape = self._cache.get(cache_key)
        if shape is None:
            shape = self._cache[cache_key] = self._shape(record, tombstone)
        if not tombstone:
            self._last = (record.key_schema, record.value_schema, shape)
        return shape

    def _shape(self, record: SinkRecord, tombstone: bool) -> Shape:
        settings = self._settings
        mode, pk_fields = settings.pk_mode, settings.pk_fields
        value_schema = None if tombstone else record.value_schema
        value_names = [field.name for field in value_schema.fields] if value_schema is not None else []
        key_columns: list[Column] = []
        key: Callable[[SinkRecord], tuple[Any, ...]] = _nothing
        if mode == "kafka":
            key_columns = [Column(name, schema) for name, schema in zip(pk_fields, _KAFKA_SCHEMAS, strict=True)]
            key = lambda r: (r.topic, r.kafka_partition, r.kafka_offset)
        elif mode == "record_key":
            key_columns, key = self._record_key(record)
        elif mode == "record_value" and value_schema is not None:
            names = list(pk_fields) or value_names
            missing = [name for name in names if name not in value_names]
            if missing:
                raise RecordError(f"record {where(record)}: pk.fields names {', '.join(missing)}, not fields of "
                                  f"the value (it has {', '.join(value_names)})")
            key_columns = [self._column(value_schema, name, record) for name in names]
            key = self._extractor(value_schema, names, _value)
        key_names = {column.name for column in key_columns}  # a value field of a key column's name is the key
        value_columns: list[Column] = []
        values: Callable[[SinkRecord], tuple[Any, ...]] = _nothing
        if value_schema is not None:
            whitelist = settings.fields_whitelist
            names = [name for name in value_names if name not in key_names and (not whitelist or name in whitelist)]
            value_columns = [self._column(value_schema, name, record) for name in names]
            values = self._extractor(value_schema, names, _value, zoned=True)
        if not key_columns and not value_columns and not tombstone:
            raise RecordError(f"record {where(record)}: no column to write: the value has no fields"
                              f"{' that fields.whitelist keeps' if value_names else ''} and pk.mode={mode} "
                              "gives no key columns")
        if not key_columns:
            row = values
        elif not value_columns:
            row = key
        else:
            def row(record: SinkRecord) -> tuple[Any, ...]:
                return key(record) + values(record)
        return Shape(tuple(key_columns), tuple(value_columns), key, values, row)

    def _record_key(self, record: SinkRecord) -> tuple[list[Column], Callable[[SinkRecord], tuple[Any, ...]]]:
        schema, pk_fields = record.key_schema, self._settings.pk_fields
        if record.key is None or schema is None:
            raise RecordError(f"record {where(record)}: pk.mode=record_key needs a key with a schema; this record "
                              f"has {'no key' if record.key is None else 'a key without a schema'}")
        if schema.type is SchemaType.STRUCT:
            key_names = [field.name for field in schema.fields]
            names = list(pk_fields) or key_names
            missing = [name for name in names if name not in key_names]
            if missing:
                raise RecordError(f"record {where(record)}: pk.fields names {', '.join(missing)}, not fields of "
                                  f"the key (it has {', '.join(key_names)})")
            return [self._column(schema, name, record) for name in names], self._extractor(schema, names, _key)
        if schema.type.is_primitive:
            if len(pk_fields) != 1:
                raise RecordError(f"record {where(record)}: its key is a {schema.type.value}; pk.fields must name "
                                  "the one column it goes to")
            convert = self._converter(schema)
            return [Column(pk_fields[0], schema)], lambda r: (convert(_key(r)),)
        raise RecordError(f"record {where(record)}: a {schema.type.value} key cannot be a primary key")

    def _column(self, struct_schema: Schema, name: str, record: SinkRecord) -> Column:
        schema = struct_schema.field(name).schema
        if not schema.type.is_primitive and schema.name not in _LOGICAL:
            raise RecordError(f"record {where(record)}: field {name!r} is a {schema.type.value}; the JDBC sink "
                              "writes primitive and logical (Decimal, Date, Time, Timestamp) fields only")
        return Column(name, schema)

    def _extractor(self, struct_schema: Schema, names: list[str], part: Callable[[SinkRecord], Struct],
                   zoned: bool = False) -> Callable[[SinkRecord], tuple[Any, ...]]:
        if not names:  # key-only records: the value's fields are all key columns (or not whitelisted)
            return _nothing
        positions = {field.name: index for index, field in enumerate(struct_schema.fields)}
        pick = operator.itemgetter(*(positions[name] for name in names))
        single = len(names) == 1
        converters = [(at, self._converter(struct_schema.field(name).schema, zoned)) for at, name in enumerate(names)]
        converters = [(at, convert) for at, convert in converters if convert is not _same]
        # A null stays NULL in an optional field, default or not (Kafka's Struct.get, which Confluent's sink
        # reads fields with, gives the default: a NULL a CDC source saw would arrive as the column's default);
        # a required field's default stands in for a null.
        defaults = [(at, schema.default_value) for at, name in enumerate(names)
                    for schema in [struct_schema.field(name).schema]
                    if not schema.optional and schema.default_value is not None]

        def filled(row: list[Any]) -> tuple[Any, ...]:
            for at, default in defaults:
                if row[at] is None:
                    row[at] = default
            for at, convert in converters:
                row[at] = convert(row[at])
            return tuple(row)

        if part is _value and [positions[name] for name in names] == list(range(len(positions))):
            # Every field, in order (the usual case): the struct's values are the row as they are.
            def extract_all(record: SinkRecord) -> tuple[Any, ...]:
                return filled(record.value.field_values(defaults=False))
            return extract_all

        def extract(record: SinkRecord) -> tuple[Any, ...]:
            picked = pick(part(record).field_values(defaults=False))
            if single:
                picked = (picked,)
            if not converters and not defaults:
                return picked
            return filled(list(picked))
        return extract

    def _converter(self, schema: Schema, zoned: bool = False) -> Callable[[Any], Any]:
        """How a field of *schema* is written: Timestamps in ``db.timezone`` (the dialects' docstring says why
        a *zoned* value, which keeps its offset, and a key's wall-clock time without one)."""
        if schema.name != Timestamp.LOGICAL_NAME:
            return _same
        zone = self._zone
        utc = zone.key == "UTC"
        if zoned:
            def in_zone(value: Any) -> Any:
                # Connect's Timestamp is an instant (naive means UTC). Already in UTC: as it is (a
                # datetime's replace() costs more than a row's other work).
                if value is None or (utc and (value.tzinfo is None or value.tzinfo is datetime.UTC)):
                    return value
                if value.tzinfo is None:
                    value = value.replace(tzinfo=datetime.UTC)
                return value.astimezone(zone)
            return in_zone

        def to_zone(value: Any) -> Any:
            # Columns without a time zone get the wall-clock time of db.timezone.
            if value is None or (utc and value.tzinfo is None):
                return value
            if value.tzinfo is None:
                value = value.replace(tzinfo=datetime.UTC)
            elif utc and value.tzinfo is datetime.UTC:
                return value.replace(tzinfo=None)
            return value.astimezone(zone).replace(tzinfo=None)
        return to_zone


def _same(value: Any) -> Any:
    return value


def _value(record: SinkRecord) -> Any:
    return record.value


def _key(record: SinkRecord) -> Any:
    # A later record of the same schemas may still have no key (the shape is cached by schemas).
    if record.key is None:
        raise RecordError(f"record {where(record)}: pk.mode=record_key needs a key, and this record has none")
    return record.key


def _nothing(_record: SinkRecord) -> tuple[Any, ...]:
    return ()


def _described(value: Any, schema: Schema | None) -> str:
    if schema is None:
        return f"a {type(value).__name__} without a schema"
    return f"a {schema.type.value}"
