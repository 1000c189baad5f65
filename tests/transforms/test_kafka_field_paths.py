"""Kafka's FieldPathNotationTest, SingleFieldPathTest, FieldSyntaxVersionTest and ExtractFieldTest, case by case."""

from __future__ import annotations

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SinkRecord, Struct
from connectd.errors import ConfigError
from connectd.transforms import ExtractFieldKey, ExtractFieldValue
from connectd.transforms._paths import FieldPath

from ._support import key_record


def v2(path):
    return FieldPath(path, "V2")


# --- FieldPathNotationTest ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["foo.bar.baz", "foo`bar`", "foo.`bar.baz`"])
def test_v1_is_one_step_whatever_it_holds(path):
    assert FieldPath(path, "V1").steps == (path,)


@pytest.mark.parametrize(("path", "steps"), [
    # empty names are kept
    ("..", ("", "", "")),
    ("foo..", ("foo", "", "")),
    (".bar.", ("", "bar", "")),
    ("..baz", ("", "", "baz")),
    # an empty path has no steps
    ("", ()),
    ("foobarbaz", ("foobarbaz",)),
    ("foo.bar.baz", ("foo", "bar", "baz")),
    ("foo`bar`baz", ("foo`bar`baz",)),
    # backticks wrapping a name
    ("`foo.bar.baz`", ("foo.bar.baz",)),
    ("foo.`bar.baz`", ("foo", "bar.baz")),
    ("`foo.bar`.baz", ("foo.bar", "baz")),
    ("foo.`bar`.baz", ("foo", "bar", "baz")),
    # backticks that do not wrap are part of the name
    ("foo.``bar.baz`", ("foo", "`bar.baz")),
    ("foo.`bar.baz``", ("foo", "bar.baz`")),
    ("foo.`ba`r.baz`", ("foo", "ba`r.baz")),
    ("foo.ba`r.baz", ("foo", "ba`r", "baz")),
    ("foo.``bar``.baz", ("foo", "`bar`", "baz")),
    ("``foo.bar.baz``", ("`foo.bar.baz`",)),
    # escaped backticks
    ("foo.`bar\\`.baz`", ("foo", "bar`.baz")),
    ("foo.`bar.`baz`", ("foo", "bar.`baz")),
    ("foo.`bar\\`.`baz`", ("foo", "bar`.`baz")),
    ("foo.`bar\\\\`.\\`baz`", ("foo", "bar\\`.\\`baz")),
])
def test_v2_steps(path, steps):
    assert v2(path).steps == steps


@pytest.mark.parametrize(("path", "position"), [
    ("`foo.bar.baz", 0), ("foo.`bar.baz", 4), ("foo.bar.`baz", 8), ("foo.bar.`baz\\`", 8),
])
def test_v2_incomplete_backticks_name_the_position(path, position):
    with pytest.raises(ValueError, match=f"position {position} "):
        v2(path)
    with pytest.raises(ConfigError, match=f"position {position} "):
        ExtractFieldValue().configure({"field": path, "field.syntax.version": "V2"})


# --- FieldSyntaxVersionTest -----------------------------------------------------------------


def test_syntax_version_default_is_v1():
    transform = ExtractFieldValue()
    transform.configure({"field": "a.b"})
    assert transform.path.steps == ("a.b",)


@pytest.mark.parametrize(("given", "steps"), [("v1", ("a.b",)), ("V1", ("a.b",)), ("v2", ("a", "b")), ("V2", ("a", "b"))])
def test_syntax_version_in_any_case(given, steps):
    transform = ExtractFieldValue()
    transform.configure({"field": "a.b", "field.syntax.version": given})
    assert transform.path.steps == steps


@pytest.mark.parametrize("given", ["v3", "V 1", "v", "V 2", "2", "1"])
def test_wrong_syntax_versions(given):
    with pytest.raises(ConfigError, match="field.syntax.version"):
        ExtractFieldValue().configure({"field": "a", "field.syntax.version": given})


# --- SingleFieldPathTest ---------------------------------------------------------------------

BAR = SchemaBuilder.struct().field("bar", Schema.INT32).build()
FOO = SchemaBuilder.struct().field("foo", BAR).build()
BAZ = SchemaBuilder.struct().field("inner", Schema.STRING).optional().build()
BAR_BAZ = SchemaBuilder.struct().field("bar", Schema.INT32).field("baz", BAZ).build()
FOO_BAR_BAZ = SchemaBuilder.struct().field("foo", BAR_BAZ).build()


def test_find_field():
    assert v2("foo.bar").field_from(FOO) == BAR.field("bar")
    assert v2("foo").field_from(FOO) == FOO.field("foo")


def test_field_not_found_is_none():
    assert v2("un.known").field_from(FOO) is None
    assert v2("foo.unknown").field_from(FOO) is None
    assert v2("unknown").field_from(FOO) is None
    assert v2("test").field_from(None) is None


def test_field_lookup_through_a_non_struct_fails():
    with pytest.raises(DataError, match="non-struct"):
        v2("foo.bar.x").field_from(FOO)


def test_values_in_maps():
    value = {"foo": {"bar": 42, "baz": None}}
    assert v2("foo.bar").value_from(value) == 42
    assert v2("foo.baz").value_from(value) is None
    for path in ("un.known", "foo.unknown", "unknown", "foo.baz.inner"):
        assert v2(path).value_from(value) is None


def test_values_in_structs():
    value = Struct(FOO_BAR_BAZ).put("foo", Struct(BAR_BAZ).put("bar", 42).put("baz", None))
    assert v2("foo.bar").value_from(value) == 42
    assert v2("foo.baz").value_from(value) is None
    for path in ("un.known", "foo.unknown", "unknown", "foo.baz.inner"):
        assert v2(path).value_from(value) is None


def test_a_value_on_the_way_must_be_of_the_kind_walked():
    with pytest.raises(DataError, match=r"Only Map objects supported .*nested field access"):
        v2("foo.bar.x").value_from({"foo": {"bar": 42}})
    with pytest.raises(DataError, match=r"Only Struct objects supported .*nested field access"):
        v2("foo.bar.x").value_from(Struct(FOO).put("foo", Struct(BAR).put("bar", 42)))


# --- ExtractFieldTest ---------------------------------------------------------------------------


def extract_key(**config):
    transform = ExtractFieldKey()
    transform.configure(config)
    return transform


def test_extract_schemaless():
    out = extract_key(field="magic").apply(key_record(None, {"magic": 42}))
    assert out.key_schema is None and out.key == 42


def test_extract_schemaless_nested_path():
    out = extract_key(field="magic.foo", **{"field.syntax.version": "V2"}).apply(key_record(None, {"magic": {"foo": 42}}))
    assert out.key_schema is None and out.key == 42


def test_extract_null_schemaless():
    out = extract_key(field="magic").apply(key_record(None, None))
    assert out.key_schema is None and out.key is None


def test_extract_with_schema():
    schema = SchemaBuilder.struct().field("magic", Schema.INT32).build()
    out = extract_key(field="magic").apply(key_record(schema, Struct(schema).put("magic", 42)))
    assert out.key_schema == Schema.INT32 and out.key == 42


def test_extract_with_schema_nested_path():
    foo = SchemaBuilder.struct().field("foo", Schema.INT32).build()
    schema = SchemaBuilder.struct().field("magic", foo).build()
    key = Struct(schema).put("magic", Struct(foo).put("foo", 42))
    out = extract_key(field="magic.foo", **{"field.syntax.version": "V2"}).apply(key_record(schema, key))
    assert out.key_schema == Schema.INT32 and out.key == 42


def test_extract_null_with_schema():
    schema = SchemaBuilder.struct().field("magic", Schema.INT32).optional().build()
    out = extract_key(field="magic").apply(key_record(schema, None))
    assert out.key_schema == Schema.INT32 and out.key is None


def test_extract_missing_field_schemaless_is_null():
    out = extract_key(field="nonexistent").apply(key_record(None, {"magic": 42}))
    assert out.key_schema is None and out.key is None
    nested = extract_key(field="magic.nonexistent", **{"field.syntax.version": "V2"})
    out = nested.apply(key_record(None, {"magic": {"foo": 42}}))
    assert out.key_schema is None and out.key is None


def test_extract_missing_field_with_schema_fails():
    schema = SchemaBuilder.struct().field("magic", Schema.INT32).build()
    with pytest.raises(DataError, match="^Unknown field: nonexistent$"):
        extract_key(field="nonexistent").apply(key_record(schema, Struct(schema).put("magic", 42)))
    foo = SchemaBuilder.struct().field("foo", Schema.INT32).build()
    nested = SchemaBuilder.struct().field("magic", foo).build()
    key = Struct(nested).put("magic", Struct(foo).put("foo", 42))
    with pytest.raises(DataError, match="^Unknown field: magic.nonexistent$"):
        extract_key(field="magic.nonexistent", **{"field.syntax.version": "V2"}).apply(key_record(nested, key))


@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, 42)])
def test_extract_unset_optional_with_default(replace, expected):
    schema = SchemaBuilder.struct().field(
        "optional_with_default", SchemaBuilder.int32().optional().default_value(42).build()).build()
    struct = Struct(schema).put("optional_with_default", None)
    config = {"field": "optional_with_default", "replace.null.with.default": replace}
    assert extract_key(**config).apply(key_record(schema, struct)).key == expected
    value = ExtractFieldValue()
    value.configure(config)
    record = SinkRecord(topic="test", kafka_partition=0, value_schema=schema, value=struct, kafka_offset=0)
    assert value.apply(record).value == expected
