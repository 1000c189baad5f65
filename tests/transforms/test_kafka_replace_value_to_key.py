"""Kafka's ReplaceFieldTest and ValueToKeyTest, case by case."""

from __future__ import annotations

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SinkRecord, Struct
from connectd.transforms import ReplaceFieldKey, ReplaceFieldValue, ValueToKey

from ._support import configured, value_record


SCHEMA = (SchemaBuilder.struct().field("dont", Schema.STRING).field("abc", Schema.INT32)
          .field("foo", Schema.BOOLEAN).field("etc", Schema.STRING).build())
INCLUDE = {"include": "abc,foo", "renames": "abc:xyz,foo:bar"}


def test_replace_tombstones():
    out = configured(ReplaceFieldValue, INCLUDE).apply(value_record(None, None))
    assert out.value is None and out.value_schema is None
    out = configured(ReplaceFieldValue, INCLUDE).apply(value_record(SCHEMA, None))
    assert out.value is None and out.value_schema == SCHEMA


def test_replace_schemaless():
    value = {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}
    out = configured(ReplaceFieldValue, {"exclude": "dont", "renames": "abc:xyz,foo:bar"}).apply(value_record(None, value))
    assert out.value == {"xyz": 42, "bar": True, "etc": "etc"}


def test_replace_with_schema():
    value = Struct(SCHEMA, {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"})
    out = configured(ReplaceFieldValue, INCLUDE).apply(value_record(SCHEMA, value)).value
    assert len(out.schema.fields) == 2
    assert out.get("xyz") == 42 and out.get("bar") is True


@pytest.mark.parametrize("side", ["key", "value"])
@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, 42)])
def test_replace_null_with_default(side, replace, expected):
    config = {"include": "abc", "renames": "abc:optional_with_default", "replace.null.with.default": str(replace).lower()}
    schema = SchemaBuilder.struct().field("abc", SchemaBuilder.int32().optional().default_value(42).build()).build()
    struct = Struct(schema).put("abc", None)
    if side == "key":
        record = SinkRecord(topic="test", kafka_partition=0, key_schema=schema, key=struct, kafka_offset=0)
        out = configured(ReplaceFieldKey, config).apply(record).key
    else:
        out = configured(ReplaceFieldValue, config).apply(value_record(schema, struct)).value
    assert len(out.schema.fields) == 1
    assert out.get_without_default("optional_with_default") == expected


# --- ValueToKeyTest ---------------------------------------------------------------------------


def test_value_to_key_schemaless():
    out = configured(ValueToKey, {"fields": "a,b"}).apply(value_record(None, {"a": 1, "b": 2, "c": 3}, topic=""))
    assert out.key_schema is None and out.key == {"a": 1, "b": 2}


def test_value_to_key_with_schema():
    schema = SchemaBuilder.struct().field("a", Schema.INT32).field("b", Schema.INT32).field("c", Schema.INT32).build()
    out = configured(ValueToKey, {"fields": "a,b"}).apply(value_record(schema, Struct(schema, {"a": 1, "b": 2, "c": 3})))
    expected_schema = SchemaBuilder.struct().field("a", Schema.INT32).field("b", Schema.INT32).build()
    assert out.key_schema == expected_schema
    assert out.key == Struct(expected_schema).put("a", 1).put("b", 2)


def test_value_to_key_missing_field():
    schema = SchemaBuilder.struct().field("a", Schema.INT32).build()
    with pytest.raises(DataError, match="^Field does not exist: not_exist$"):
        configured(ValueToKey, {"fields": "not_exist"}).apply(value_record(schema, Struct(schema).put("a", 1)))


@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, 42)])
def test_value_to_key_replace_null_with_default(replace, expected):
    schema = SchemaBuilder.struct().field(
        "optional_with_default", SchemaBuilder.int32().optional().default_value(42).build()).build()
    transform = configured(ValueToKey, {"fields": "optional_with_default", "replace.null.with.default": replace})
    out = transform.apply(value_record(schema, Struct(schema).put("optional_with_default", None)))
    assert out.key.get_without_default("optional_with_default") == expected
