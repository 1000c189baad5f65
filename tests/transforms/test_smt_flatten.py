"""Flatten: nested structs (with schemas) and nested maps (without)."""

from __future__ import annotations

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SourceRecord, Struct
from connectd.transforms import FlattenKey, FlattenValue


def flatten(cls=FlattenValue, **config):
    transform = cls()
    transform.configure(config)
    return transform


INNER = SchemaBuilder.struct().field("x", Schema.INT32).field("y", Schema.OPTIONAL_STRING).build()
OPTIONAL_INNER = SchemaBuilder.struct().field("x", Schema.INT32).field("y", Schema.OPTIONAL_STRING).optional().build()
NESTED = (
    SchemaBuilder.struct().name("Outer").version(1)
    .field("id", Schema.INT64)
    .field("inner", INNER)
    .field("maybe", OPTIONAL_INNER)
    .field("deep", SchemaBuilder.struct().field("inner", INNER).build())
    .field("tags", SchemaBuilder.array(Schema.STRING).build())
    .build()
)


def nested_value(maybe=True):
    deep_schema = NESTED.field("deep").schema
    return Struct(NESTED, {
        "id": 1,
        "inner": Struct(INNER, {"x": 2, "y": "b"}),
        "maybe": Struct(OPTIONAL_INNER, {"x": 3}) if maybe else None,
        "deep": Struct(deep_schema, {"inner": Struct(INNER, {"x": 4, "y": None})}),
        "tags": ["a"],
    })


def test_nested_structs():
    out = flatten().apply(SourceRecord(topic="t", value_schema=NESTED, value=nested_value()))
    schema = out.value_schema
    assert schema.name == "Outer" and schema.version == 1
    assert [f.name for f in schema.fields] == [
        "id", "inner.x", "inner.y", "maybe.x", "maybe.y", "deep.inner.x", "deep.inner.y", "tags",
    ]
    assert schema.field("inner.x").schema == Schema.INT32
    # Under an optional struct every field becomes optional.
    assert schema.field("maybe.x").schema == Schema.OPTIONAL_INT32
    assert schema.field("tags").schema == SchemaBuilder.array(Schema.STRING).build()
    value = out.value
    assert value.to_dict() == {
        "id": 1, "inner.x": 2, "inner.y": "b", "maybe.x": 3, "maybe.y": None,
        "deep.inner.x": 4, "deep.inner.y": None, "tags": ["a"],
    }
    value.validate()


def test_null_optional_struct_leaves_its_fields_null():
    out = flatten().apply(SourceRecord(topic="t", value_schema=NESTED, value=nested_value(maybe=False)))
    assert out.value.get("maybe.x") is None and out.value.get("maybe.y") is None


def test_delimiter_and_key_side():
    out = flatten(FlattenKey, delimiter="_").apply(SourceRecord(topic="t", key_schema=NESTED, key=nested_value()))
    assert "deep_inner_x" in [f.name for f in out.key_schema.fields]


def test_defaults_come_from_the_field_or_an_enclosing_struct():
    plain = SchemaBuilder.struct().field("x", Schema.INT32).field("y", SchemaBuilder.string().default_value("own").build())
    default = Struct(plain.build(), {"x": 9})
    inner = (SchemaBuilder.struct().field("x", Schema.INT32).field("y", SchemaBuilder.string().default_value("own").build())
             .default_value(default).build())
    schema = SchemaBuilder.struct().field("inner", inner).build()
    out = flatten().apply(SourceRecord(topic="t", value_schema=schema, value=Struct(schema, {"inner": Struct(inner, {"x": 1})})))
    assert out.value_schema.field("inner.x").schema.default_value == 9
    assert out.value_schema.field("inner.y").schema.default_value == "own"
    assert out.value.get("inner.x") == 1 and out.value.get("inner.y") == "own"


def test_schemaless_nested_maps():
    value = {"a": 1, "b": {"c": 2, "d": {"e": "x", "f": None}}, "g": [1, {"h": 2}], "n": None, "bytes": b"1"}
    out = flatten(delimiter="/").apply(SourceRecord(topic="t", value=value))
    assert out.value == {"a": 1, "b/c": 2, "b/d/e": "x", "b/d/f": None, "g": [1, {"h": 2}], "n": None, "bytes": b"1"}
    assert out.value_schema is None


def test_schemaless_rejects_structs_inside_maps():
    with pytest.raises(DataError, match=r"Flatten transformation does not support Struct for record without schemas \(for field a\.s\)"):
        flatten().apply(SourceRecord(topic="t", value={"a": {"s": Struct(INNER, {"x": 1})}}))


def test_a_map_inside_a_struct_fails_as_in_kafka():
    schema = SchemaBuilder.struct().field("attrs", SchemaBuilder.map(Schema.STRING, Schema.INT32).build()).build()
    with pytest.raises(DataError, match=r"does not support MAP for record with schemas \(for field attrs\)"):
        flatten().apply(SourceRecord(topic="t", value_schema=schema, value=Struct(schema, {"attrs": {"k": 1}})))


def test_requires_struct_or_map_and_passes_tombstones():
    record = SourceRecord(topic="t", value=None)
    assert flatten().apply(record) is record
    with pytest.raises(DataError, match=r"Only Map objects supported in absence of schema for \[flattening\], found: str"):
        flatten().apply(SourceRecord(topic="t", value="x"))
    with pytest.raises(DataError, match=r"Only Struct objects supported for \[flattening\], found: int"):
        flatten().apply(SourceRecord(topic="t", value_schema=Schema.INT32, value=1))


def test_clashing_names_fail():
    schema = SchemaBuilder.struct().field("a.x", Schema.INT32).field("a", INNER).build()
    value = Struct(schema, {"a.x": 1, "a": Struct(INNER, {"x": 2})})
    with pytest.raises(DataError, match="field name duplication a.x"):
        flatten().apply(SourceRecord(topic="t", value_schema=schema, value=value))


def test_schema_is_cached():
    transform = flatten()
    first = transform.apply(SourceRecord(topic="t", value_schema=NESTED, value=nested_value()))
    second = transform.apply(SourceRecord(topic="t", value_schema=NESTED, value=nested_value(maybe=False)))
    assert first.value_schema is second.value_schema


def test_unknown_keys_warn():
    transform = flatten(delimitr="_")
    assert [str(w) for w in transform.config_warnings] == ["warning: unknown key 'delimitr' (did you mean 'delimiter'?)"]


def test_delimiter_default_is_a_dot():
    assert FlattenValue.config_def["delimiter"].default == "."
    assert flatten().delimiter == "."
