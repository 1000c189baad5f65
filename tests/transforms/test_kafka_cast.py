"""Kafka's CastTest, case by case."""

from __future__ import annotations

import datetime
import decimal

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SchemaType, SourceRecord, Struct
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.errors import ConfigError
from connectd.transforms import CastKey, CastValue

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
DAY = datetime.timedelta(days=1)


def cast(side, **config):
    transform = side()
    transform.configure(config)
    return transform


def record(key_schema=None, key=None, value_schema=None, value=None):
    return SourceRecord(topic="topic", kafka_partition=0, key_schema=key_schema, key=key,
                        value_schema=value_schema, value=value)


@pytest.mark.parametrize("spec", ["", "foo:faketype", "foo:array", "array", "foo:bytes", "foo:int8:extra", "foo:int8,int32"])
def test_bad_specs(spec):
    with pytest.raises(ConfigError, match="spec"):
        cast(CastKey, spec=spec)


@pytest.mark.parametrize(("side", "original"), [
    (CastValue, record(Schema.STRING, "key", Schema.STRING, None)),
    (CastValue, record(Schema.STRING, "key", None, None)),
    (CastKey, record(Schema.STRING, None, Schema.STRING, "value")),
    (CastKey, record(None, None, Schema.STRING, "value")),
])
def test_null_is_returned_as_is(side, original):
    assert cast(side, spec="foo:int64").apply(original) == original


@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, "10")])
def test_field_with_default_value(replace, expected):
    schema = SchemaBuilder.struct().field("magic", SchemaBuilder.int32().optional().default_value(10).build()).build()
    transform = cast(CastValue, spec="magic:string", **{"replace.null.with.default": replace})
    out = transform.apply(record(Schema.STRING, "key", schema, Struct(schema).put("magic", None)))
    assert out.value_schema.field("magic").schema.type is SchemaType.STRING
    assert out.value.get_without_default("magic") == expected


def test_whole_key_with_schema():
    out = cast(CastKey, spec="int8").apply(record(Schema.INT32, 42, Schema.STRING, "bogus"))
    assert out.key_schema.type is SchemaType.INT8 and out.key == 42


@pytest.mark.parametrize(("target", "value", "expected"), [
    ("int8", 42, 42), ("int16", 42, 42), ("int32", 42, 42), ("int64", 42, 42),
    ("float32", 42, 42.0), ("float64", 42, 42.0),
    ("boolean", 42, True), ("boolean", 0, False), ("string", 42, "42"),
])
def test_whole_value(target, value, expected):
    out = cast(CastValue, spec=target).apply(record(value_schema=Schema.INT32, value=value))
    assert out.value_schema.type is SchemaType(target)
    assert out.value == expected and type(out.value) is type(expected)
    schemaless = cast(CastValue, spec=target).apply(record(value=value))
    assert schemaless.value_schema is None
    assert schemaless.value == expected and type(schemaless.value) is type(expected)


def test_whole_key_schemaless():
    out = cast(CastKey, spec="int8").apply(record(None, 42, Schema.STRING, "bogus"))
    assert out.key_schema is None and out.key == 42


def test_whole_decimal_to_string():
    out = cast(CastValue, spec="string").apply(record(value_schema=Decimal.schema(0), value=decimal.Decimal(42)))
    assert out.value_schema.type is SchemaType.STRING and out.value == "42"


def test_whole_timestamp_to_string():
    moment = EPOCH + DAY + datetime.timedelta(milliseconds=1)
    out = cast(CastValue, spec="string").apply(record(value_schema=Timestamp.SCHEMA, value=moment))
    assert out.value_schema.type is SchemaType.STRING and out.value == "1970-01-02T00:00:00.001Z"


def test_whole_value_default_is_cast():
    schema = SchemaBuilder.float32().default_value(-42.125).build()
    out = cast(CastValue, spec="int32").apply(record(value_schema=schema, value=42.125))
    assert out.value_schema.type is SchemaType.INT32
    assert out.value == 42 and out.value_schema.default_value == -42


def test_whole_value_schemaless_unsupported_type():
    with pytest.raises(DataError):
        cast(CastValue, spec="int8").apply(record(value=["foo"]))


def test_logical_to_primitive():
    spec = ("date_to_int32:int32,timestamp_to_int64:int64,time_to_int64:int64,decimal_to_int32:int32,"
            "timestamp_to_float64:float64,null_timestamp_to_int32:int32")
    schema = (SchemaBuilder.struct()
              .field("date_to_int32", Date.SCHEMA)
              .field("timestamp_to_int64", Timestamp.SCHEMA)
              .field("time_to_int64", Time.SCHEMA)
              .field("decimal_to_int32", Decimal.schema(0))
              .field("timestamp_to_float64", Timestamp.SCHEMA)
              .field("null_timestamp_to_int32", Timestamp.builder().optional().build())
              .build())
    # Kafka casts Date(Long.MAX_VALUE), which datetime cannot hold; the latest datetime shows the same.
    latest = datetime.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
    value = Struct(schema, {
        "date_to_int32": datetime.date(1970, 1, 2),
        "timestamp_to_int64": EPOCH,
        "time_to_int64": datetime.time(0, 0, 0, 1000),
        "decimal_to_int32": decimal.Decimal(2**31),
        "timestamp_to_float64": latest,
        "null_timestamp_to_int32": None,
    })
    out = cast(CastValue, spec=spec).apply(record(value_schema=schema, value=value)).value
    assert out.get("date_to_int32") == 1
    assert out.get("timestamp_to_int64") == 0
    assert out.get("time_to_int64") == 1
    assert out.get("decimal_to_int32") == -(2**31)
    assert out.get("timestamp_to_float64") == 253402300799999.0
    assert out.get("null_timestamp_to_int32") is None
    types = {field.name: field.schema.type for field in out.schema.fields}
    assert types == {
        "date_to_int32": SchemaType.INT32, "timestamp_to_int64": SchemaType.INT64, "time_to_int64": SchemaType.INT64,
        "decimal_to_int32": SchemaType.INT32, "timestamp_to_float64": SchemaType.FLOAT64,
        "null_timestamp_to_int32": SchemaType.INT32,
    }


def test_logical_to_string():
    schema = (SchemaBuilder.struct().field("date", Date.SCHEMA).field("decimal", Decimal.schema(0))
              .field("time", Time.SCHEMA).field("timestamp", Timestamp.SCHEMA).build())
    moment = datetime.datetime(2024, 5, 7, 13, 5, 9, 42000, tzinfo=UTC)
    value = Struct(schema, {"date": datetime.date(1970, 1, 2), "decimal": decimal.Decimal(1982),
                            "time": datetime.time(1), "timestamp": moment})
    out = cast(CastValue, spec="date:string,decimal:string,time:string,timestamp:string").apply(
        record(value_schema=schema, value=value)).value
    assert out.get("date") == "1970-01-02"
    assert out.get("decimal") == "1982"
    assert out.get("time") == "01:00:00.000Z"
    assert out.get("timestamp") == "2024-05-07T13:05:09.042Z"
    assert all(field.schema.type is SchemaType.STRING for field in out.schema.fields)


@pytest.mark.parametrize(("schema", "value", "text"), [
    # As Kafka's Values.dateFormatFor: the format follows the instant, not the logical type.
    (Timestamp.SCHEMA, datetime.datetime(2024, 5, 7, tzinfo=UTC), "2024-05-07"),
    (Timestamp.SCHEMA, datetime.datetime(1970, 1, 1, 5, tzinfo=UTC), "05:00:00.000Z"),
    (Timestamp.SCHEMA, datetime.datetime(1969, 12, 31, 23, tzinfo=UTC), "23:00:00.000Z"),
    (Date.SCHEMA, datetime.date(1970, 1, 1), "00:00:00.000Z"),
    (Date.SCHEMA, datetime.date(1900, 1, 1), "00:00:00.000Z"),
])
def test_dates_print_in_the_format_of_their_instant(schema, value, text):
    struct_schema = SchemaBuilder.struct().field("d", schema).build()
    out = cast(CastValue, spec="d:string").apply(record(value_schema=struct_schema, value=Struct(struct_schema).put("d", value)))
    assert out.value.get("d") == text


def test_fields_with_schema():
    spec = ("int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,boolean:int8,"
            "string:int32,bigdecimal:string,date:string,optional:int32,bytes:string,byteArray:string")
    schema = (SchemaBuilder.struct()
              .field("int8", Schema.INT8)
              .field("int16", Schema.OPTIONAL_INT16)
              .field("int32", SchemaBuilder.int32().default_value(2).build())
              .field("int64", Schema.INT64)
              .field("float32", Schema.FLOAT32)
              .field("float64", SchemaBuilder.float64().default_value(-1.125).build())
              .field("boolean", Schema.BOOLEAN)
              .field("string", Schema.STRING)
              .field("bigdecimal", Decimal.schema(0))
              .field("date", Date.SCHEMA)
              .field("optional", Schema.OPTIONAL_FLOAT32)
              .field("timestamp", Timestamp.SCHEMA)
              .field("bytes", Schema.BYTES)
              .field("byteArray", Schema.BYTES)
              .build())
    raw = bytes([0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10])
    value = Struct(schema, {
        "int8": 8, "int16": 16, "int32": 32, "int64": 64, "float32": 32.0, "float64": -64.0, "boolean": True,
        "bigdecimal": decimal.Decimal(42), "date": datetime.date(1970, 1, 2), "string": "42", "timestamp": EPOCH,
        "bytes": bytearray(raw), "byteArray": raw,
    })
    out = cast(CastValue, spec=spec).apply(record(value_schema=schema, value=value)).value
    assert out.get("int8") == 8
    assert out.schema.field("int16").schema.optional
    assert out.get("int16") == 16
    assert out.get("int32") == 32
    assert out.schema.field("int32").schema.default_value == 2
    assert out.get("int64") is True
    assert out.get("float32") == 32.0
    assert out.get("float64") is True
    assert out.schema.field("float64").schema.default_value is True
    assert out.get("boolean") == 1
    assert out.get("string") == 42
    assert out.get("bigdecimal") == "42"
    assert out.get("date") == "1970-01-02"
    assert out.get("timestamp") == EPOCH
    assert out.get("bytes") == "/ty6mHZUMhA="
    assert out.get("byteArray") == "/ty6mHZUMhA="
    assert out.get("optional") is None
    types = {field.name: (field.schema.type, field.schema.optional) for field in out.schema.fields}
    assert types == {
        "int8": (SchemaType.INT16, False), "int16": (SchemaType.INT32, True), "int32": (SchemaType.INT64, False),
        "int64": (SchemaType.BOOLEAN, False), "float32": (SchemaType.FLOAT64, False),
        "float64": (SchemaType.BOOLEAN, False), "boolean": (SchemaType.INT8, False),
        "string": (SchemaType.INT32, False), "bigdecimal": (SchemaType.STRING, False),
        "date": (SchemaType.STRING, False), "optional": (SchemaType.INT32, True),
        "timestamp": (SchemaType.INT64, False), "bytes": (SchemaType.STRING, False),
        "byteArray": (SchemaType.STRING, False),
    }
    assert out.schema.field("timestamp").schema == Timestamp.SCHEMA


def test_fields_schemaless():
    spec = "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,boolean:int8,string:int32"
    value = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "float32": 32.0, "float64": -64.0,
             "boolean": True, "string": "42"}
    out = cast(CastValue, spec=spec).apply(record(value=value))
    assert out.value_schema is None
    assert out.value == {"int8": 8, "int16": 16, "int32": 32, "int64": True, "float32": 32.0, "float64": True,
                         "boolean": 1, "string": 42}
    assert out.value["int64"] is True and out.value["float64"] is True and out.value["boolean"] is not True


def test_versions_of_key_and_value_agree():
    assert CastKey().version() == CastValue().version()
