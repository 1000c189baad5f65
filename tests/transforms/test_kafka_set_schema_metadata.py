"""Kafka's SetSchemaMetadataTest, case by case."""

from __future__ import annotations

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SinkRecord, Struct
from connectd.transforms import SetSchemaMetadataValue


def configured(config):
    transform = SetSchemaMetadataValue()
    transform.configure(config)
    return transform


def record(schema, value):
    return SinkRecord(topic="", kafka_partition=0, value_schema=schema, value=value, kafka_offset=0)


@pytest.mark.parametrize(("config", "name", "version"), [
    ({"schema.name": "foo"}, "foo", None),
    ({"schema.version": 42}, None, 42),
    ({"schema.name": "foo", "schema.version": "42"}, "foo", 42),
])
def test_name_and_version(config, name, version):
    out = configured(config).apply(record(SchemaBuilder.struct().build(), None))
    assert (out.value_schema.name, out.value_schema.version) == (name, version)


def assert_matching_schema(value, schema):
    assert value.schema is schema
    for field in schema.fields:
        assert value.schema.field(field.name).index == field.index
        assert value.schema.field(field.name).schema is field.schema


def test_struct_is_moved_onto_the_new_schema():
    schema = (SchemaBuilder.struct().name("my.orig.SchemaDefn").field("f1", Schema.STRING)
              .field("f2", Schema.INT32).build())
    out = configured({"schema.name": "foo", "schema.version": "42"}).apply(
        record(schema, Struct(schema).put("f1", "value1").put("f2", 1)))
    assert (out.value_schema.name, out.value_schema.version) == ("foo", 42)
    assert_matching_schema(out.value, out.value_schema)
    assert out.value.get("f1") == "value1" and out.value.get("f2") == 1


@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, "default")])
def test_struct_with_null_field(replace, expected):
    schema = (SchemaBuilder.struct().name("my.orig.SchemaDefn")
              .field("f1", SchemaBuilder.string().default_value("default").optional().build())
              .field("f2", Schema.INT32).build())
    transform = configured({"schema.name": "foo", "schema.version": "42", "replace.null.with.default": replace})
    out = transform.apply(record(schema, Struct(schema).put("f1", None).put("f2", 1)))
    assert (out.value_schema.name, out.value_schema.version) == ("foo", 42)
    assert_matching_schema(out.value, out.value_schema)
    assert out.value.get_without_default("f1") == expected


def test_value_schema_required():
    with pytest.raises(DataError):
        configured({"schema.name": "foo"}).apply(record(None, 42))


def test_null_value_without_schema_is_ignored():
    out = configured({"schema.name": "foo"}).apply(record(None, None))
    assert out.key is None and out.key_schema is None and out.value is None and out.value_schema is None


def test_non_struct_values_are_kept():
    out = configured({"schema.name": "foo"}).apply(record(Schema.INT32, 1))
    assert out.value == 1 and out.value_schema.name == "foo"
    out = configured({"schema.name": "foo"}).apply(record(Schema.OPTIONAL_INT32, None))
    assert out.value is None and out.value_schema.name == "foo" and out.value_schema.optional
