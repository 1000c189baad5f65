"""ExtractField, HoistField, InsertField, ReplaceField, MaskField, ValueToKey, SetSchemaMetadata."""

from __future__ import annotations

import datetime
import decimal

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SinkRecord, SourceRecord, Struct
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.errors import ConfigError
from connectd.transforms import (
    ExtractFieldKey,
    ExtractFieldValue,
    HoistFieldKey,
    HoistFieldValue,
    InsertFieldKey,
    InsertFieldValue,
    MaskFieldKey,
    MaskFieldValue,
    ReplaceFieldKey,
    ReplaceFieldValue,
    SetSchemaMetadataKey,
    SetSchemaMetadataValue,
    ValueToKey,
)

UTC = datetime.timezone.utc

ADDRESS = SchemaBuilder.struct().name("Address").field("city", Schema.STRING).field("zip", Schema.OPTIONAL_STRING).build()
PERSON = (
    SchemaBuilder.struct().name("Person").version(2).doc("a person")
    .field("id", Schema.INT64)
    .field("name", Schema.STRING)
    .field("age", SchemaBuilder.int32().optional().default_value(18).build())
    .field("address", SchemaBuilder.struct().name("Address").field("city", Schema.STRING)
           .field("zip", Schema.OPTIONAL_STRING).optional().build())
    .build()
)


def person(**overrides):
    values = {"id": 1, "name": "Ada", "age": 36,
              "address": Struct(PERSON.field("address").schema, {"city": "London", "zip": "N1"})}
    values.update(overrides)
    return Struct(PERSON, values)


def configured(cls, **config):
    transform = cls()
    transform.configure(config)
    return transform


def on_value(schema, value, **extra):
    return SinkRecord(topic="people", kafka_partition=3, kafka_offset=99, timestamp=1_700_000_000_123,
                      value_schema=schema, value=value, **extra)


def on_key(schema, key):
    return SinkRecord(topic="people", kafka_partition=3, kafka_offset=99, key_schema=schema, key=key,
                      value_schema=Schema.STRING, value="v")


# --- ExtractField ------------------------------------------------------------------------


def test_extract_field_with_schema():
    out = configured(ExtractFieldValue, field="name").apply(on_value(PERSON, person()))
    assert out.value == "Ada" and out.value_schema == Schema.STRING


def test_extract_field_key_without_schema():
    out = configured(ExtractFieldKey, field="id").apply(on_key(None, {"id": 7, "x": 1}))
    assert out.key == 7 and out.key_schema is None and out.value == "v"


def test_extract_field_passes_nulls_through():
    out = configured(ExtractFieldValue, field="name").apply(on_value(PERSON, None))
    assert out.value is None and out.value_schema == Schema.STRING
    assert configured(ExtractFieldValue, field="name").apply(on_value(None, None)).value is None


def test_extract_missing_field():
    assert configured(ExtractFieldValue, field="nope").apply(on_value(None, {"a": 1})).value is None
    with pytest.raises(DataError, match="Unknown field: nope"):
        configured(ExtractFieldValue, field="nope").apply(on_value(PERSON, person()))


def test_extract_field_requires_struct_or_map():
    with pytest.raises(DataError, match=r"Only Struct objects supported for \[field extraction\], found: str"):
        configured(ExtractFieldValue, field="a").apply(on_value(PERSON, "x"))
    with pytest.raises(DataError, match=r"Only Map objects supported in absence of schema for \[field extraction\], found: int"):
        configured(ExtractFieldValue, field="a").apply(on_value(None, 5))


def test_extract_field_default_and_replace_null_with_default():
    record = on_value(PERSON, person(age=None))
    assert configured(ExtractFieldValue, field="age").apply(record).value == 18
    kept = configured(ExtractFieldValue, field="age", **{"replace.null.with.default": "false"}).apply(record)
    assert kept.value is None


def test_extract_nested_field_with_syntax_v2():
    transform = configured(ExtractFieldValue, field="address.city", **{"field.syntax.version": "v2"})
    out = transform.apply(on_value(PERSON, person()))
    assert out.value == "London" and out.value_schema == Schema.STRING
    assert transform.apply(on_value(None, {"address": {"city": "Paris"}})).value == "Paris"
    # V1 takes the dotted name literally.
    literal = configured(ExtractFieldValue, field="address.city")
    assert literal.apply(on_value(None, {"address.city": "Rome"})).value == "Rome"


def test_backticks_wrap_names_with_dots():
    transform = configured(ExtractFieldValue, field="`a.b`.c", **{"field.syntax.version": "V2"})
    assert transform.path.steps == ("a.b", "c")
    assert transform.apply(on_value(None, {"a.b": {"c": 3}})).value == 3


def test_unclosed_backtick_is_a_config_problem():
    with pytest.raises(ConfigError, match=r"field='`a.b': expected backticks in pairs"):
        configured(ExtractFieldValue, field="`a.b", **{"field.syntax.version": "V2"})


def test_bad_syntax_version():
    with pytest.raises(ConfigError, match=r"field.syntax.version='V3': expected one of \[V1, V2\]"):
        configured(ExtractFieldValue, field="a", **{"field.syntax.version": "V3"})


# --- HoistField --------------------------------------------------------------------------


def test_hoist_with_schema():
    out = configured(HoistFieldValue, field="wrapped").apply(on_value(PERSON, person()))
    assert out.value_schema.field("wrapped").schema == PERSON
    assert out.value.get("wrapped") == person()


def test_hoist_key_without_schema():
    out = configured(HoistFieldKey, field="k").apply(on_key(None, 42))
    assert out.key == {"k": 42} and out.key_schema is None


def test_hoist_null_needs_an_optional_schema():
    out = configured(HoistFieldKey, field="k").apply(on_key(Schema.OPTIONAL_INT32, None))
    assert out.key.get("k") is None
    with pytest.raises(DataError, match="null used for required field"):
        configured(HoistFieldKey, field="k").apply(on_key(Schema.INT32, None))


def test_hoist_field_is_required():
    with pytest.raises(ConfigError, match=r"field is required \(name of the single field"):
        configured(HoistFieldValue)


# --- InsertField ------------------------------------------------------------------------

INSERT_ALL = {
    "topic.field": "topic!",
    "partition.field": "partition",
    "offset.field": "offset?",
    "timestamp.field": "ts",
    "static.field": "source",
    "static.value": "crm",
}


def test_insert_fields_with_schema():
    out = configured(InsertFieldValue, **INSERT_ALL).apply(on_value(PERSON, person()))
    schema = out.value_schema
    assert schema.name == "Person" and schema.version == 2 and schema.doc == "a person"
    assert schema.field("topic").schema == Schema.STRING
    assert schema.field("partition").schema == Schema.OPTIONAL_INT32
    assert schema.field("offset").schema == Schema.OPTIONAL_INT64
    assert schema.field("ts").schema == Timestamp.builder().optional().build()
    assert schema.field("source").schema == Schema.OPTIONAL_STRING
    value = out.value
    assert (value.get("topic"), value.get("partition"), value.get("offset"), value.get("source")) == ("people", 3, 99, "crm")
    assert value.get("ts") == datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert value.get("name") == "Ada"
    value.validate()


def test_insert_fields_key_without_schema():
    out = configured(InsertFieldKey, **INSERT_ALL).apply(on_key(None, {"id": 1}))
    assert out.key == {"id": 1, "topic": "people", "partition": 3, "offset": 99, "source": "crm"}


def test_insert_timestamp_without_schema_is_epoch_millis():
    out = configured(InsertFieldValue, **{"timestamp.field": "ts"}).apply(on_value(None, {}))
    assert out.value == {"ts": 1_700_000_000_123}


def test_insert_skips_missing_partition_and_timestamp():
    record = SourceRecord(topic="t", value={"a": 1})
    out = configured(InsertFieldValue, **{"partition.field": "p", "timestamp.field": "ts", "topic.field": "t"}).apply(record)
    assert out.value == {"a": 1, "t": "t"}


def test_insert_offset_needs_a_sink_record():
    with pytest.raises(DataError, match=r"Only SinkRecord supported for \[field insertion\], found: SourceRecord"):
        configured(InsertFieldValue, **{"offset.field": "o"}).apply(SourceRecord(topic="t", value={}))


def test_insert_leaves_tombstones_alone():
    record = on_value(PERSON, None)
    assert configured(InsertFieldValue, **{"topic.field": "t"}).apply(record) is record


def test_insert_keeps_nulls_or_defaults():
    record = on_value(PERSON, person(age=None))
    assert configured(InsertFieldValue, **{"topic.field": "t"}).apply(record).value.get_without_default("age") == 18
    kept = configured(InsertFieldValue, **{"topic.field": "t", "replace.null.with.default": False}).apply(record)
    assert kept.value.get_without_default("age") is None


def test_insert_config_problems_all_at_once():
    with pytest.raises(ConfigError) as caught:
        configured(InsertFieldValue, **{"replace.null.with.default": "x"})
    lines = str(caught.value).splitlines()
    assert lines == [
        "replace.null.with.default='x': expected true or false",
        "expected at least one of topic.field, partition.field, offset.field, timestamp.field, static.field "
        "(no field insertion is configured)",
    ]


def test_insert_static_field_needs_a_value():
    with pytest.raises(ConfigError, match="static.value is required when static.field is set"):
        configured(InsertFieldValue, **{"static.field": "s"})


def test_insert_requires_struct_or_map():
    with pytest.raises(DataError, match=r"Only Map objects supported in absence of schema for \[field insertion\]"):
        configured(InsertFieldValue, **{"topic.field": "t"}).apply(on_value(None, "text"))


# --- ReplaceField -----------------------------------------------------------------------


def test_replace_with_schema_excludes_includes_and_renames():
    transform = configured(ReplaceFieldValue, include="id,name,age", exclude="age", renames="name:full_name,id:key")
    out = transform.apply(on_value(PERSON, person()))
    assert [f.name for f in out.value_schema.fields] == ["key", "full_name"]
    assert out.value_schema.name == "Person"
    assert out.value.get("key") == 1 and out.value.get("full_name") == "Ada"


def test_replace_key_without_schema():
    out = configured(ReplaceFieldKey, exclude="b", renames="a:x").apply(on_key(None, {"a": 1, "b": 2, "c": 3}))
    assert out.key == {"x": 1, "c": 3}


def test_deprecated_blacklist_and_whitelist():
    transform = configured(ReplaceFieldValue, blacklist="b", whitelist="a,b")
    assert transform.apply(on_value(None, {"a": 1, "b": 2, "c": 3})).value == {"a": 1}
    assert [w.key for w in transform.config_warnings] == ["blacklist", "whitelist"]
    assert "use exclude instead" in str(transform.config_warnings[0])
    both = configured(ReplaceFieldValue, blacklist="a", exclude="b")
    assert both.apply(on_value(None, {"a": 1, "b": 2})).value == {"a": 1}
    assert "ignored because exclude is also set" in str(both.config_warnings[0])


def test_replace_renames_must_be_pairs():
    with pytest.raises(ConfigError, match=r"renames='a:b,c': expected old:new pairs, got 'c'"):
        configured(ReplaceFieldValue, renames="a:b,c")


def test_replace_keeps_nulls_with_replace_null_with_default_false():
    record = on_value(PERSON, person(age=None))
    assert configured(ReplaceFieldValue, include="age").apply(record).value.get_without_default("age") == 18
    kept = configured(ReplaceFieldValue, include="age", **{"replace.null.with.default": "false"}).apply(record)
    assert kept.value.get_without_default("age") is None


def test_replace_leaves_tombstones_alone():
    record = on_value(None, None)
    assert configured(ReplaceFieldValue, exclude="a").apply(record) is record


# --- MaskField --------------------------------------------------------------------------

MASKABLE = (
    SchemaBuilder.struct()
    .field("i8", Schema.INT8).field("i64", Schema.INT64).field("f32", Schema.FLOAT32).field("f64", Schema.FLOAT64)
    .field("b", Schema.BOOLEAN).field("s", Schema.STRING).field("arr", SchemaBuilder.array(Schema.INT32).build())
    .field("map", SchemaBuilder.map(Schema.STRING, Schema.INT32).build())
    .field("dec", Decimal.schema(2)).field("date", Date.SCHEMA).field("time", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
    .field("none", Schema.OPTIONAL_STRING).field("kept", Schema.STRING)
    .build()
)
MASKED_NAMES = "i8,i64,f32,f64,b,s,arr,map,dec,date,time,ts,none"


def maskable():
    moment = datetime.datetime(2024, 5, 7, 1, 2, 3, tzinfo=UTC)
    return Struct(MASKABLE, {
        "i8": 5, "i64": 6, "f32": 1.5, "f64": 2.5, "b": True, "s": "secret", "arr": [1, 2], "map": {"a": 1},
        "dec": decimal.Decimal("9.99"), "date": moment.date(), "time": datetime.time(1, 2, 3), "ts": moment,
        "none": None, "kept": "visible",
    })


def test_mask_with_schema_uses_empty_values_of_each_type():
    out = configured(MaskFieldValue, fields=MASKED_NAMES).apply(on_value(MASKABLE, maskable()))
    value = out.value
    assert out.value_schema is MASKABLE
    assert [value.get(n) for n in ("i8", "i64", "f32", "f64", "b", "s", "arr", "map")] == [0, 0, 0.0, 0.0, False, "", [], {}]
    assert value.get("dec") == decimal.Decimal("0.00") and value.get("dec").as_tuple().exponent == -2
    assert value.get("date") == datetime.date(1970, 1, 1)
    assert value.get("time") == datetime.time(0)
    assert value.get("ts") == datetime.datetime(1970, 1, 1, tzinfo=UTC)
    assert value.get("none") is None and value.get("kept") == "visible"
    Decimal.from_logical(Decimal.schema(2), value.get("dec"))  # still serializable


def test_mask_with_replacement():
    transform = configured(MaskFieldValue, fields="i8,i64,f64,s,dec", replacement="12")
    value = transform.apply(on_value(MASKABLE, maskable())).value
    assert [value.get(n) for n in ("i8", "i64", "f64", "s")] == [12, 12, 12.0, "12"]
    assert value.get("dec") == decimal.Decimal("12.00")


def test_mask_replacement_errors():
    with pytest.raises(DataError, match="Cannot mask value of type boolean with custom replacement"):
        configured(MaskFieldValue, fields="b", replacement="1").apply(on_value(MASKABLE, maskable()))
    with pytest.raises(DataError, match=r"Unable to convert abc \(str\) to number"):
        configured(MaskFieldValue, fields="i8", replacement="abc").apply(on_value(MASKABLE, maskable()))
    with pytest.raises(DataError, match="out of range"):
        configured(MaskFieldValue, fields="i8", replacement="1000").apply(on_value(MASKABLE, maskable()))


def test_mask_key_without_schema():
    key = {"n": 5, "f": 1.5, "s": "x", "b": True, "l": [1], "m": {"a": 1}, "d": decimal.Decimal("1.5"), "other": 1}
    out = configured(MaskFieldKey, fields="n,f,s,b,l,m,d,absent").apply(on_key(None, key))
    assert out.key == {"n": 0, "f": 0.0, "s": "", "b": False, "l": [], "m": {}, "d": decimal.Decimal(0), "other": 1,
                       "absent": None}
    replaced = configured(MaskFieldKey, fields="n,s", replacement="7").apply(on_key(None, key))
    assert replaced.key["n"] == 7 and replaced.key["s"] == "7"


def test_mask_bytes_is_not_supported_as_in_kafka():
    schema = SchemaBuilder.struct().field("raw", Schema.BYTES).build()
    with pytest.raises(DataError, match="Cannot mask value of type: bytes"):
        configured(MaskFieldValue, fields="raw").apply(on_value(schema, Struct(schema, {"raw": b"x"})))


def test_mask_config_problems():
    with pytest.raises(ConfigError) as caught:
        configured(MaskFieldValue, fields="", replacement="")
    assert str(caught.value).splitlines() == [
        "fields='': expected a non-empty list of non-empty names",
        "replacement='': expected a non-empty string",
    ]


# --- ValueToKey -------------------------------------------------------------------------


def test_value_to_key_with_schema():
    out = configured(ValueToKey, fields="id,name").apply(on_value(PERSON, person()))
    assert out.key_schema == SchemaBuilder.struct().field("id", Schema.INT64).field("name", Schema.STRING).build()
    assert out.key.get("id") == 1 and out.key.get("name") == "Ada"
    assert out.value == person()


def test_value_to_key_without_schema():
    out = configured(ValueToKey, fields="a,missing").apply(on_value(None, {"a": 1, "b": 2}))
    assert out.key == {"a": 1, "missing": None} and out.key_schema is None


def test_value_to_key_missing_field_with_schema():
    with pytest.raises(DataError, match="Field does not exist: nope"):
        configured(ValueToKey, fields="nope").apply(on_value(PERSON, person()))


def test_value_to_key_fields_must_be_unique_and_present():
    with pytest.raises(ConfigError, match=r"fields='a,a': expected each name once, got a more than once"):
        configured(ValueToKey, fields="a,a")
    with pytest.raises(ConfigError, match=r"fields is required"):
        configured(ValueToKey)


def test_value_to_key_replace_null_with_default():
    record = on_value(PERSON, person(age=None))
    assert configured(ValueToKey, fields="age").apply(record).key.get("age") == 18
    kept = configured(ValueToKey, fields="age", **{"replace.null.with.default": "false"}).apply(record)
    assert kept.key.get_without_default("age") is None


# --- SetSchemaMetadata ------------------------------------------------------------------


def test_set_schema_metadata_on_a_struct_value():
    out = configured(SetSchemaMetadataValue, **{"schema.name": "com.example.Person", "schema.version": "7"}).apply(
        on_value(PERSON, person()))
    assert out.value_schema.name == "com.example.Person" and out.value_schema.version == 7
    assert out.value_schema.doc == "a person"
    assert out.value.schema is out.value_schema
    assert out.value.get("name") == "Ada"
    out.value.validate()


def test_set_schema_metadata_on_a_primitive_key():
    out = configured(SetSchemaMetadataKey, **{"schema.version": 3}).apply(on_key(Schema.STRING, "k"))
    assert out.key_schema.version == 3 and out.key_schema.name is None and out.key == "k"


def test_set_schema_metadata_keeps_a_struct_default():
    plain = SchemaBuilder.struct().field("a", Schema.INT32).optional().build()
    schema = SchemaBuilder.struct().field("a", Schema.INT32).optional().default_value(Struct(plain, {"a": 1})).build()
    out = configured(SetSchemaMetadataValue, **{"schema.name": "n"}).apply(on_value(schema, None))
    assert out.value_schema.name == "n" and out.value_schema.default_value.get("a") == 1


def test_set_schema_metadata_needs_a_schema():
    with pytest.raises(DataError, match=r"Schema required for \[updating schema metadata\]"):
        configured(SetSchemaMetadataValue, **{"schema.name": "n"}).apply(on_value(None, {"a": 1}))
    record = on_value(None, None)
    assert configured(SetSchemaMetadataValue, **{"schema.name": "n"}).apply(record) is record


def test_set_schema_metadata_config_problems():
    with pytest.raises(ConfigError, match=r"expected schema.name, schema.version or both"):
        configured(SetSchemaMetadataValue)
    with pytest.raises(ConfigError, match=r"schema.version='v2': expected a 32-bit integer"):
        configured(SetSchemaMetadataValue, **{"schema.version": "v2"})
