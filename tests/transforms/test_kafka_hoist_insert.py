"""Kafka's HoistFieldTest and InsertFieldTest, case by case."""

from __future__ import annotations

import datetime

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SchemaType, SourceRecord, Struct
from connectd.data.logical import Timestamp
from connectd.transforms import HoistFieldKey, InsertFieldKey, InsertFieldValue

from ._support import configured, key_record

UTC = datetime.timezone.utc


# --- HoistFieldTest --------------------------------------------------------------------------


def test_hoist_schemaless():
    out = configured(HoistFieldKey, field="magic").apply(key_record(None, 42))
    assert out.key_schema is None and out.key == {"magic": 42}


def test_hoist_with_schema():
    record = key_record(Schema.INT32, 42)
    out = configured(HoistFieldKey, field="magic").apply(record)
    assert out.key_schema.type is SchemaType.STRUCT
    assert out.key_schema.field("magic").schema == record.key_schema
    assert out.key.get("magic") == 42


def test_hoist_schemaless_map_is_mutable():
    out = configured(HoistFieldKey, field="magic").apply(key_record(None, 420))
    out.key["k"] = "v"
    assert out.key == {"k": "v", "magic": 420}


# --- InsertFieldTest ----------------------------------------------------------------------------

ALL = {"topic.field": "topic_field!", "partition.field": "partition_field", "timestamp.field": "timestamp_field?",
       "static.field": "instance_id", "static.value": "my-instance-id"}
SIMPLE = SchemaBuilder.struct().name("name").version(1).doc("doc").field("magic", Schema.OPTIONAL_INT64).build()


def test_insert_top_level_struct_required():
    with pytest.raises(DataError):
        configured(InsertFieldValue, **{"topic.field": "topic_field"}).apply(
            SourceRecord(topic="", kafka_partition=0, value_schema=Schema.INT32, value=42))


def test_insert_copies_the_schema_and_inserts_fields():
    transform = configured(InsertFieldValue, **ALL)
    record = SourceRecord(topic="test", kafka_partition=0, value_schema=SIMPLE, value=Struct(SIMPLE).put("magic", 42),
                          timestamp=789)
    out = transform.apply(record)
    schema = out.value_schema
    assert (schema.name, schema.version, schema.doc) == ("name", 1, "doc")
    assert schema.field("magic").schema == Schema.OPTIONAL_INT64
    assert out.value.get("magic") == 42
    assert schema.field("topic_field").schema == Schema.STRING
    assert out.value.get("topic_field") == "test"
    assert schema.field("partition_field").schema == Schema.OPTIONAL_INT32
    assert out.value.get("partition_field") == 0
    assert schema.field("timestamp_field").schema == Timestamp.builder().optional().build()
    assert out.value.get("timestamp_field") == datetime.datetime(1970, 1, 1, 0, 0, 0, 789000, tzinfo=UTC)
    assert schema.field("instance_id").schema == Schema.OPTIONAL_STRING
    assert out.value.get("instance_id") == "my-instance-id"
    again = transform.apply(SourceRecord(topic="test", kafka_partition=1, value_schema=SIMPLE, value=Struct(SIMPLE)))
    assert again.value_schema is out.value_schema


def test_insert_schemaless():
    record = SourceRecord(topic="test", kafka_partition=0, value={"magic": 42}, timestamp=123)
    out = configured(InsertFieldValue, **ALL).apply(record)
    assert out.value == {"magic": 42, "topic_field": "test", "partition_field": 0, "timestamp_field": 123,
                         "instance_id": "my-instance-id"}


@pytest.mark.parametrize("schema", [None, SIMPLE])
def test_insert_into_a_tombstone_leaves_it_alone(schema):
    out = configured(InsertFieldValue, **ALL).apply(SourceRecord(topic="test", kafka_partition=0, value_schema=schema))
    assert out.value is None and out.value_schema == schema


def test_insert_key_fields_into_a_tombstone():
    record = SourceRecord(topic="test", kafka_partition=0, key={"magic": 42})
    out = configured(InsertFieldKey, **ALL).apply(record)
    assert out.key == {"magic": 42, "topic_field": "test", "partition_field": 0, "instance_id": "my-instance-id"}
    assert out.key.get("timestamp_field") is None
    assert out.value is None


def test_insert_into_a_null_key_leaves_the_record_alone():
    record = SourceRecord(topic="test", kafka_partition=0, value={"magic": 42})
    assert configured(InsertFieldKey, **ALL).apply(record) is record


@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, 42)])
def test_insert_unset_optional_field(replace, expected):
    magic = SchemaBuilder.int64().optional().default_value(42).build()
    schema = SchemaBuilder.struct().name("name").version(1).doc("doc").field("magic_with_default", magic).build()
    record = SourceRecord(topic="test", kafka_partition=0, value_schema=schema,
                          value=Struct(schema).put("magic_with_default", None), timestamp=789)
    out = configured(InsertFieldValue, **ALL, **{"replace.null.with.default": replace}).apply(record)
    assert (out.value_schema.name, out.value_schema.version, out.value_schema.doc) == ("name", 1, "doc")
    assert out.value_schema.field("magic_with_default").schema == magic
    assert out.value.get_without_default("magic_with_default") == expected


def test_insert_versions_of_key_and_value_agree():
    assert InsertFieldKey().version() == InsertFieldValue().version()
