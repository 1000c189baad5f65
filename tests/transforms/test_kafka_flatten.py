"""Kafka's FlattenTest, case by case."""

from __future__ import annotations

import datetime
import decimal

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SchemaType, SourceRecord, Struct
from connectd.transforms import FlattenKey, FlattenValue


def flatten(cls=FlattenValue, **config):
    transform = cls()
    transform.configure(config)
    return transform


def value_record(schema, value):
    return SourceRecord(topic="topic", kafka_partition=0, value_schema=schema, value=value)


def test_top_level_struct_or_map_required():
    with pytest.raises(DataError):
        flatten().apply(value_record(Schema.INT32, 42))
    with pytest.raises(DataError):
        flatten().apply(value_record(None, 42))


SUPPORTED = (SchemaBuilder.struct()
             .field("int8", Schema.INT8).field("int16", Schema.INT16).field("int32", Schema.INT32)
             .field("int64", Schema.INT64).field("float32", Schema.FLOAT32).field("float64", Schema.FLOAT64)
             .field("boolean", Schema.BOOLEAN).field("string", Schema.STRING).field("bytes", Schema.BYTES)
             .build())
SUPPORTED_VALUES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "float32": 32.0, "float64": 64.0,
                    "boolean": True, "string": "stringy", "bytes": b"bytes"}


def test_nested_struct():
    one = SchemaBuilder.struct().field("B", SUPPORTED).build()
    two = SchemaBuilder.struct().field("A", one).build()
    value = Struct(two).put("A", Struct(one).put("B", Struct(SUPPORTED, SUPPORTED_VALUES)))
    out = flatten().apply(value_record(two, value))
    assert out.value_schema.type is SchemaType.STRUCT
    assert len(out.value.schema.fields) == 9
    assert {name: out.value.get(f"A.B.{name}") for name in SUPPORTED_VALUES} == SUPPORTED_VALUES
    for name in SUPPORTED_VALUES:
        assert out.value_schema.field(f"A.B.{name}").schema == SUPPORTED.field(name).schema


def test_nested_map_with_delimiter():
    value = {"A": {"B": dict(SUPPORTED_VALUES)}}
    out = flatten(delimiter="#").apply(value_record(None, value))
    assert out.value_schema is None
    assert out.value == {f"A#B#{name}": item for name, item in SUPPORTED_VALUES.items()}


def test_optional_field_struct():
    inner = SchemaBuilder.struct().field("opt_int32", Schema.OPTIONAL_INT32).build()
    outer = SchemaBuilder.struct().field("B", inner).build()
    out = flatten().apply(value_record(outer, Struct(outer).put("B", Struct(inner).put("opt_int32", None))))
    assert out.value_schema.type is SchemaType.STRUCT
    assert out.value.get("B.opt_int32") is None


def test_optional_struct():
    schema = SchemaBuilder.struct().optional().field("opt_int32", Schema.OPTIONAL_INT32).build()
    out = flatten().apply(value_record(schema, None))
    assert out.value_schema.type is SchemaType.STRUCT
    assert out.value is None


def test_optional_nested_struct():
    inner = SchemaBuilder.struct().optional().field("opt_int32", Schema.OPTIONAL_INT32).build()
    outer = SchemaBuilder.struct().field("B", inner).build()
    out = flatten().apply(value_record(outer, Struct(outer).put("B", None)))
    assert out.value_schema.type is SchemaType.STRUCT
    assert out.value.get("B.opt_int32") is None


def test_optional_field_map():
    out = flatten().apply(value_record(None, {"B": {"opt_int32": None}}))
    assert out.value_schema is None
    assert out.value == {"B.opt_int32": None}


def test_key():
    record = SourceRecord(topic="topic", key={"A": {"B": 12}})
    out = flatten(FlattenKey).apply(record)
    assert out.key_schema is None
    assert out.key == {"A.B": 12}


def test_schemaless_array_is_kept():
    value = {"foo": ["bar", {"baz": {"lfg": "lfg"}}]}
    assert flatten().apply(value_record(None, value)).value == value


def test_array_with_schema_is_kept():
    nested = SchemaBuilder.struct().field("lfg", Schema.STRING).build()
    inner = SchemaBuilder.struct().field("baz", nested).build()
    schema = SchemaBuilder.struct().field("foo", SchemaBuilder.array(inner).doc("durk").build()).build()
    value = Struct(schema).put("foo", [Struct(inner).put("baz", Struct(nested).put("lfg", "lfg"))])
    out = flatten().apply(SourceRecord(topic="topic", value_schema=schema, value=value))
    assert out.value == value
    assert out.value_schema == schema


def test_optional_and_default_values_nested():
    plain = (SchemaBuilder.struct().optional()
             .field("req_field", Schema.STRING)
             .field("opt_field", SchemaBuilder.string().optional().default_value("child_default").build())
             .build())
    default = Struct(plain).put("req_field", "req_default")
    schema = SchemaBuilder.from_schema(plain).default_value(default).build()
    out = flatten().apply(value_record(schema, Struct(schema)))
    assert out is not None
    flat = out.value_schema
    assert flat.type is SchemaType.STRUCT
    assert len(flat.fields) == 2
    assert flat.field("req_field").schema == SchemaBuilder.string().optional().default_value("req_default").build()
    assert flat.field("opt_field").schema == SchemaBuilder.string().optional().default_value("child_default").build()


def test_tombstones_pass_through():
    out = flatten().apply(value_record(None, None))
    assert out.value is None and out.value_schema is None
    schema = (SchemaBuilder.struct().name("name").version(1).doc("doc")
              .field("magic", Schema.OPTIONAL_INT64).build())
    out = flatten().apply(value_record(schema, None))
    assert out.value is None and out.value_schema == schema


def test_map_with_null_fields():
    value = {"firstNull": None, "firstNonNull": "nonNull", "secondNull": None, "secondNonNull": "alsoNonNull",
             "thirdNonNull": None}
    out = flatten().apply(value_record(None, value)).value
    assert out == value and list(out) == list(value)


def test_struct_with_null_fields():
    builder = SchemaBuilder.struct()
    for name in ("firstNull", "firstNonNull", "secondNull", "secondNonNull", "thirdNonNull"):
        builder.field(name, Schema.OPTIONAL_STRING)
    schema = builder.build()
    value = Struct(schema, {"firstNonNull": "nonNull", "secondNonNull": "alsoNonNull"})
    assert flatten().apply(value_record(schema, value)).value == value


@pytest.mark.parametrize("item", [decimal.Decimal("1.5"), datetime.date(2024, 1, 1), object()])
def test_schemaless_values_connect_does_not_know_fail(item):
    with pytest.raises(DataError, match="not supported by Connect's data API"):
        flatten().apply(value_record(None, {"a": {"b": item}}))


def test_versions_of_key_and_value_agree():
    assert FlattenKey().version() == FlattenValue().version()
