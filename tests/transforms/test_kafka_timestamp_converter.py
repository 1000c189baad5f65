"""Kafka's TimestampConverterTest, case by case."""

from __future__ import annotations

import datetime

import pytest

from connectd.data import Schema, SchemaBuilder, SourceRecord, Struct
from connectd.data.logical import Date, Time, Timestamp
from connectd.errors import ConfigError
from connectd.transforms import TimestampConverterKey, TimestampConverterValue

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
TIME = datetime.time(0, 0, 1, 234000)                      # 1234 ms after midnight
DATE = datetime.date(1970, 1, 2)
DATE_PLUS_TIME = datetime.datetime(1970, 1, 2, 0, 0, 1, 234000, tzinfo=UTC)
DATE_PLUS_TIME_UNIX = 86_401_234
DATE_PLUS_TIME_UNIX_MICROS = DATE_PLUS_TIME_UNIX * 1000 + 123
DATE_PLUS_TIME_UNIX_NANOS = DATE_PLUS_TIME_UNIX_MICROS * 1000 + 456
DATE_PLUS_TIME_UNIX_SECONDS = 86_401
STRING_DATE_FMT = "yyyy MM dd HH mm ss SSS z"
DATE_PLUS_TIME_STRING = "1970 01 02 00 00 01 234 UTC"

OPTIONAL_TIMESTAMP = Timestamp.builder().optional().build()
OPTIONAL_DATE = Date.builder().optional().build()
OPTIONAL_TIME = Time.builder().optional().build()


def value_converter(**config):
    transform = TimestampConverterValue()
    transform.configure(config)
    return transform


def convert(schema, value, **config):
    return value_converter(**config).apply(SourceRecord(topic="topic", kafka_partition=0, value_schema=schema, value=value))


@pytest.mark.parametrize("config", [
    {},
    {"target.type": "invalid"},
    {"target.type": "unix", "unix.precision": "invalid"},
    {"target.type": "string"},
    {"target.type": "string", "format": "bad-format"},
])
def test_config_errors(config):
    with pytest.raises(ConfigError):
        value_converter(**config)


def test_valid_unix_precision():
    value_converter(**{"target.type": "unix", "unix.precision": "seconds"})


@pytest.mark.parametrize(("target", "expected"), [
    # Kafka's java.util.Date for a Date or a Time is connectd's date or time, as for those logical types.
    ("Timestamp", DATE_PLUS_TIME), ("Date", DATE), ("Time", TIME), ("unix", DATE_PLUS_TIME_UNIX),
    ("string", DATE_PLUS_TIME_STRING),
])
def test_schemaless_from_timestamp(target, expected):
    out = convert(None, DATE_PLUS_TIME, **{"target.type": target, "format": STRING_DATE_FMT})
    assert out.value_schema is None
    assert out.value == expected


@pytest.mark.parametrize(("target", "schema", "expected"), [
    ("Timestamp", Timestamp.SCHEMA, DATE_PLUS_TIME), ("Date", Date.SCHEMA, DATE), ("Time", Time.SCHEMA, TIME),
    ("unix", Schema.INT64, DATE_PLUS_TIME_UNIX), ("string", Schema.STRING, DATE_PLUS_TIME_STRING),
])
def test_with_schema_from_timestamp(target, schema, expected):
    out = convert(Timestamp.SCHEMA, DATE_PLUS_TIME, **{"target.type": target, "format": STRING_DATE_FMT})
    assert out.value_schema == schema
    assert out.value == expected


@pytest.mark.parametrize(("schema", "value", "expected"), [
    (Date.SCHEMA, DATE, datetime.datetime(1970, 1, 2, tzinfo=UTC)),
    (Time.SCHEMA, TIME, datetime.datetime(1970, 1, 1, 0, 0, 1, 234000, tzinfo=UTC)),
    (Schema.INT64, DATE_PLUS_TIME_UNIX, DATE_PLUS_TIME),
    (Schema.STRING, DATE_PLUS_TIME_STRING, DATE_PLUS_TIME),
])
def test_to_timestamp(schema, value, expected):
    with_schema = convert(schema, value, **{"target.type": "Timestamp", "format": STRING_DATE_FMT})
    assert with_schema.value_schema == Timestamp.SCHEMA and with_schema.value == expected
    schemaless = convert(None, value, **{"target.type": "Timestamp", "format": STRING_DATE_FMT})
    assert schemaless.value_schema is None and schemaless.value == expected


@pytest.mark.parametrize("target", ["string", "Date", "Timestamp", "unix", "Time"])
def test_schemaless_nulls(target):
    out = convert(None, None, **{"target.type": target, "format": STRING_DATE_FMT})
    assert out.value_schema is None and out.value is None
    out = convert(None, None, **{"target.type": target, "format": STRING_DATE_FMT, "field": "ts"})
    assert out.value_schema is None and out.value is None


TARGET_SCHEMAS = {"Timestamp": OPTIONAL_TIMESTAMP, "unix": Schema.OPTIONAL_INT64, "Time": OPTIONAL_TIME,
                  "Date": OPTIONAL_DATE, "string": Schema.OPTIONAL_STRING}
SOURCE_SCHEMAS = [Schema.OPTIONAL_INT64, OPTIONAL_TIME, OPTIONAL_DATE, Schema.OPTIONAL_STRING, OPTIONAL_TIMESTAMP]


@pytest.mark.parametrize("source", SOURCE_SCHEMAS)
@pytest.mark.parametrize("target", list(TARGET_SCHEMAS))
def test_with_schema_null_value(target, source):
    out = convert(source, None, **{"target.type": target, "format": STRING_DATE_FMT})
    assert out.value_schema == TARGET_SCHEMAS[target] and out.value is None


@pytest.mark.parametrize("source", SOURCE_SCHEMAS)
@pytest.mark.parametrize("target", list(TARGET_SCHEMAS))
def test_with_schema_null_field(target, source):
    config = {"target.type": target, "format": STRING_DATE_FMT, "field": "ts"}
    schema = SchemaBuilder.struct().field("ts", source).field("other", Schema.STRING)
    expected = SchemaBuilder.struct().field("ts", TARGET_SCHEMAS[target]).field("other", Schema.STRING)
    out = convert(schema.build(), Struct(schema.build()).put("ts", None).put("other", "test"), **config)
    assert out.value_schema == expected.build()
    assert out.value.get("ts") is None
    out = convert(schema.optional().build(), None, **config)
    assert out.value_schema == expected.optional().build()
    assert out.value is None


def test_schemaless_field_conversion():
    out = convert(None, {"ts": DATE_PLUS_TIME}, **{"target.type": "Date", "field": "ts"})
    assert out.value_schema is None
    assert out.value == {"ts": DATE}


def test_with_schema_field_conversion():
    schema = SchemaBuilder.struct().field("ts", Schema.INT64).field("other", Schema.STRING).build()
    out = convert(schema, Struct(schema).put("ts", DATE_PLUS_TIME_UNIX).put("other", "test"),
                  **{"target.type": "Timestamp", "field": "ts"})
    assert out.value_schema == SchemaBuilder.struct().field("ts", Timestamp.SCHEMA).field("other", Schema.STRING).build()
    assert out.value.get("ts") == DATE_PLUS_TIME and out.value.get("other") == "test"


def test_with_schema_null_field_with_default():
    schema = (SchemaBuilder.struct().field("ts", SchemaBuilder.int64().optional().default_value(0).build())
              .field("other", Schema.STRING).build())
    out = convert(schema, Struct(schema).put("ts", None).put("other", "test"),
                  **{"target.type": "Timestamp", "field": "ts", "replace.null.with.default": False})
    assert out.value_schema == (SchemaBuilder.struct().field("ts", OPTIONAL_TIMESTAMP)
                                .field("other", Schema.STRING).build())
    assert out.value.get("ts") is None and out.value.get("other") == "test"


@pytest.mark.parametrize(("precision", "unix", "expected"), [
    ("microseconds", DATE_PLUS_TIME_UNIX_MICROS, DATE_PLUS_TIME),
    ("nanoseconds", DATE_PLUS_TIME_UNIX_NANOS, DATE_PLUS_TIME),
    ("seconds", DATE_PLUS_TIME_UNIX_SECONDS, datetime.datetime(1970, 1, 2, 0, 0, 1, tzinfo=UTC)),
])
def test_with_schema_field_conversion_precision(precision, unix, expected):
    schema = SchemaBuilder.struct().field("ts", Schema.INT64).build()
    out = convert(schema, Struct(schema).put("ts", unix),
                  **{"target.type": "Timestamp", "field": "ts", "unix.precision": precision})
    assert out.value_schema == SchemaBuilder.struct().field("ts", Timestamp.SCHEMA).build()
    assert out.value.get("ts") == expected


@pytest.mark.parametrize(("precision", "expected"), [
    ("microseconds", 86_401_234_000), ("nanoseconds", 86_401_234_000_000), ("seconds", DATE_PLUS_TIME_UNIX_SECONDS),
])
def test_schemaless_string_to_unix_precision(precision, expected):
    out = convert(None, DATE_PLUS_TIME_STRING,
                  **{"target.type": "unix", "unix.precision": precision, "format": STRING_DATE_FMT})
    assert out.value_schema is None and out.value == expected


def test_key():
    transform = TimestampConverterKey()
    transform.configure({"target.type": "Timestamp"})
    out = transform.apply(SourceRecord(topic="topic", kafka_partition=0, key=DATE_PLUS_TIME))
    assert out.key_schema is None and out.key == DATE_PLUS_TIME
