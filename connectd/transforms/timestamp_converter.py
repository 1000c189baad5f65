"""``TimestampConverter``: convert a timestamp between text, Unix time and Connect's Date, Time and Timestamp.

============ ============================================= ==========================
target.type  Python value                                  schema
============ ============================================= ==========================
string       ``str`` written with ``format``               string
unix         ``int`` in ``unix.precision`` since the epoch int64
Date         ``datetime.date``                             Connect Date (int32)
Time         ``datetime.time``                             Connect Time (int32)
Timestamp    ``datetime.datetime`` (UTC)                   Connect Timestamp (int64)
============ ============================================= ==========================

The source type comes from the schema (a string schema is text, int64 is
Unix time, the logical types are themselves) or, without a schema, from the
Python type. Everything is in UTC; precision below a millisecond is lost, as
in Kafka.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Importance, OneOf, Type
from connectd.data import DataError, Schema, SchemaBuilder, SchemaType, Struct
from connectd.data.logical import Date, Time, Timestamp
from connectd.transforms._dateformat import JavaDateFormat
from connectd.transforms.base import (
    KeyOrValue,
    KeySide,
    ValueSide,
    build_with_default,
    copy_schema_basics,
    replace_null_key,
    require_map,
    require_struct_or_null,
)

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["TimestampConverter", "TimestampConverterKey", "TimestampConverterValue"]

PURPOSE = "converting timestamp formats"

STRING, UNIX, DATE, TIME, TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
SECONDS, MILLIS, MICROS, NANOS = "seconds", "milliseconds", "microseconds", "nanoseconds"
_PER_MILLI = {SECONDS: None, MILLIS: 1, MICROS: 1_000, NANOS: 1_000_000}

_UTC = datetime.timezone.utc
_EPOCH_DATE = datetime.date(1970, 1, 1)
_SCHEMAS = {
    STRING: (Schema.STRING, Schema.OPTIONAL_STRING),
    UNIX: (Schema.INT64, Schema.OPTIONAL_INT64),
    DATE: (Date.SCHEMA, Date.builder().optional().build()),
    TIME: (Time.SCHEMA, Time.builder().optional().build()),
    TIMESTAMP: (Timestamp.SCHEMA, Timestamp.builder().optional().build()),
}


def _truncating_division(number: int, divisor: int) -> int:
    # Java's TimeUnit conversions truncate toward zero.
    quotient = abs(number) // divisor
    return quotient if number >= 0 else -quotient


class TimestampConverter(KeyOrValue):
    """Convert a timestamp field (or the whole key or value) between formats.

    Use :class:`TimestampConverterKey` or :class:`TimestampConverterValue`
    (Kafka's ``TimestampConverter$Key`` / ``TimestampConverter$Value``).
    """

    Key: ClassVar[type[TimestampConverter]]
    Value: ClassVar[type[TimestampConverter]]

    config_def = ConfigDef([
        ConfigKey("field", Type.STRING,
                  "The field holding the timestamp; empty when the whole key or value is the timestamp.",
                  default="", importance=Importance.HIGH),
        ConfigKey("target.type", Type.STRING, "The timestamp representation to convert to.",
                  importance=Importance.HIGH, validator=OneOf(STRING, UNIX, DATE, TIME, TIMESTAMP)),
        ConfigKey("format", Type.STRING,
                  "A java.text.SimpleDateFormat pattern (e.g. yyyy-MM-dd'T'HH:mm:ss.SSSZ), used to write the "
                  "timestamp when target.type=string and to read timestamps that are strings. Times are in UTC.",
                  default="", importance=Importance.MEDIUM),
        ConfigKey("unix.precision", Type.STRING,
                  "The unit of Unix timestamps, written when target.type=unix and read from int64 values. "
                  "Precision below a millisecond is lost in conversions.",
                  default=MILLIS, importance=Importance.LOW, validator=OneOf(NANOS, MICROS, MILLIS, SECONDS)),
        replace_null_key(),
    ])

    def validate(self, config: dict[str, Any]) -> list[ConfigProblem]:
        pattern = config.get("format")
        if pattern is None:
            return []
        if not pattern.strip():
            if config.get("target.type") == STRING:
                return [ConfigProblem(None, "format", "is required when target.type=string (a SimpleDateFormat pattern)")]
            return []
        try:
            JavaDateFormat(pattern)
        except ValueError as exc:
            return [ConfigProblem(None, "format", str(exc), pattern)]
        return []

    def setup(self, config: dict[str, Any]) -> None:
        self.field: str = config["field"]
        self.target_type: str = config["target.type"]
        pattern = config["format"]
        self.format = JavaDateFormat(pattern) if pattern.strip() else None
        self.unix_precision: str = config["unix.precision"]
        self.replace_null_with_default: bool = config["replace.null.with.default"]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            if value is None or not self.field:
                return self.new_record(record, None, self.convert(value))
            updated = dict(require_map(value, PURPOSE))
            updated[self.field] = self.convert(updated.get(self.field))
            return self.new_record(record, None, updated)
        if not self.field:
            target = _SCHEMAS[self.target_type][schema.optional]
            return self.new_record(record, target, self.convert(value, _type_of_schema(schema)))
        struct = require_struct_or_null(value, PURPOSE)
        updated_schema = self.schema_cache.get(schema, self._updated_schema)
        return self.new_record(record, updated_schema, self._convert_struct(struct, updated_schema))

    def _updated_schema(self, schema: Schema) -> Schema:
        if schema.type is not SchemaType.STRUCT:
            raise DataError(f"Only Struct objects supported for [{PURPOSE}], found: {schema.type.value} schema")
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if field.name == self.field:
                builder.field(field.name, _SCHEMAS[self.target_type][field.schema.optional])
            else:
                builder.field(field.name, field.schema)
        if schema.optional:
            builder.optional()
        default = schema.default_value
        return build_with_default(builder, None if default is None else lambda plain: self._convert_struct(default, plain))

    def _convert_struct(self, struct: Struct | None, updated_schema: Schema) -> Struct | None:
        if struct is None:
            return None
        updated = Struct(updated_schema)
        get = struct.get if self.replace_null_with_default else struct.get_without_default
        for field in struct.schema.fields:
            item = get(field)
            if field.name == self.field:
                item = self.convert(item, _type_of_schema(field.schema))
            updated.put(field.name, item)
        return updated

    # -- conversion ----------------------------------------------------------------

    def convert(self, timestamp: Any, source_type: str | None = None) -> Any:
        """*timestamp* (of *source_type*, or of the type its Python type implies) in the target type."""
        if timestamp is None:
            return None
        raw = self._to_raw(timestamp, source_type or _inferred_type(timestamp))
        return self._to_target(raw)

    def _to_raw(self, value: Any, source: str) -> datetime.datetime:
        if source == STRING:
            if not isinstance(value, str):
                raise DataError(f"Expected string timestamp to be a str, but found {type(value).__name__}")
            if self.format is None:
                raise DataError("TimestampConverter needs the format setting to read timestamps that are strings")
            try:
                return self.format.parse(value)
            except ValueError:
                raise DataError(
                    f"Could not parse timestamp: value ({value}) does not match pattern ({self.format.pattern})"
                ) from None
        if source == UNIX:
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataError(f"Expected Unix timestamp to be an int, but found {type(value).__name__}")
            per_milli = _PER_MILLI[self.unix_precision]
            millis = value * 1000 if per_milli is None else _truncating_division(value, per_milli)
            return Timestamp.to_logical(Timestamp.SCHEMA, millis)
        if source == DATE:
            if not isinstance(value, datetime.date):
                raise DataError(f"Expected Date to be a datetime.date, but found {type(value).__name__}")
            if isinstance(value, datetime.datetime):
                return _utc(value)
            return datetime.datetime(value.year, value.month, value.day, tzinfo=_UTC)
        if source == TIME:
            if not isinstance(value, datetime.time):
                raise DataError(f"Expected Time to be a datetime.time, but found {type(value).__name__}")
            millis = Time.from_logical(Time.SCHEMA, value)
            return Timestamp.to_logical(Timestamp.SCHEMA, millis)
        if not isinstance(value, datetime.datetime):
            raise DataError(f"Expected Timestamp to be a datetime.datetime, but found {type(value).__name__}")
        return _utc(value)

    def _to_target(self, raw: datetime.datetime) -> Any:
        target = self.target_type
        if target == STRING:
            assert self.format is not None  # checked when configured
            return self.format.format(raw)
        if target == UNIX:
            millis = Timestamp.from_logical(Timestamp.SCHEMA, raw)
            per_milli = _PER_MILLI[self.unix_precision]
            return _truncating_division(millis, 1000) if per_milli is None else millis * per_milli
        if target == DATE:
            return raw.date()
        if target == TIME:
            return raw.time().replace(microsecond=raw.microsecond // 1000 * 1000)
        return raw


def _utc(moment: datetime.datetime) -> datetime.datetime:
    return moment.replace(tzinfo=_UTC) if moment.tzinfo is None else moment.astimezone(_UTC)


def _type_of_schema(schema: Schema) -> str:
    name = schema.name
    if name == Timestamp.LOGICAL_NAME:
        return TIMESTAMP
    if name == Date.LOGICAL_NAME:
        return DATE
    if name == Time.LOGICAL_NAME:
        return TIME
    if schema.type is SchemaType.STRING:
        return STRING
    if schema.type is SchemaType.INT64:
        return UNIX
    raise DataError(f"Schema {schema!r} does not correspond to a known timestamp type format")


def _inferred_type(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return TIMESTAMP
    if isinstance(value, datetime.date):
        return DATE
    if isinstance(value, datetime.time):
        return TIME
    if isinstance(value, int) and not isinstance(value, bool):
        return UNIX
    if isinstance(value, str):
        return STRING
    raise DataError(f"TimestampConverter does not support {type(value).__name__} objects as timestamps")


class TimestampConverterKey(KeySide, TimestampConverter):
    """``TimestampConverter`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.TimestampConverter$Key``)."""


class TimestampConverterValue(ValueSide, TimestampConverter):
    """``TimestampConverter`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.TimestampConverter$Value``)."""


TimestampConverter.Key = TimestampConverterKey
TimestampConverter.Value = TimestampConverterValue
