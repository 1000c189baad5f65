"""Kafka's DropHeadersTest, InsertHeaderTest, HeaderFromTest and NonEmptyListValidatorTest, case by case."""

from __future__ import annotations

import pytest

from connectd.data import Headers, Schema, SchemaBuilder, SourceRecord, Struct
from connectd.errors import ConfigError
from connectd.transforms import DropHeaders, HeaderFromKey, HeaderFromValue, InsertHeader
from connectd.transforms.base import NonEmptyList

from ._support import configured


def source_record(headers, *, key_schema=None, key="key", value_schema=None, value="value"):
    return SourceRecord(source_partition={"foo": "bar"}, source_offset={"baz": "quxx"}, topic="topic",
                        kafka_partition=0, key_schema=key_schema, key=key, value_schema=value_schema, value=value,
                        timestamp=0, headers=headers)


def assert_same_but_headers(original, out):
    for name in ("source_partition", "source_offset", "topic", "kafka_partition", "key_schema", "key",
                 "value_schema", "value", "timestamp"):
        assert getattr(out, name) == getattr(original, name), name


# --- DropHeadersTest -----------------------------------------------------------------------


@pytest.mark.parametrize("dropped", [[], ["existing-value"], ["existing-value", "existing-other-value"]])
def test_drop_headers(dropped):
    expected = Headers().add("existing", "existing-value", Schema.STRING)
    headers = expected.copy()
    for value in dropped:
        headers.add("to-drop", value, Schema.STRING)
    original = source_record(headers)
    out = configured(DropHeaders, {"headers": ["to-drop"]}).apply(original)
    assert_same_but_headers(original, out)
    assert out.headers == expected


def test_drop_headers_rejects_an_empty_list():
    with pytest.raises(ConfigError, match="headers"):
        configured(DropHeaders, {"headers": []})


def test_drop_headers_takes_blank_names_as_kafka_does():
    headers = Headers().add("", 1).add("a", 2).add("b", 3)
    out = configured(DropHeaders, {"headers": "a,"}).apply(source_record(headers))
    assert [header.key for header in out.headers] == ["b"]


# --- NonEmptyListValidatorTest -------------------------------------------------------------


def test_non_empty_list_validator():
    with pytest.raises(ValueError):
        NonEmptyList()([])
    NonEmptyList()(["foo"])
    NonEmptyList()(["foo", ""])


# --- InsertHeaderTest ----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "literal", "schema", "value"), [
    ("inserted", "inserted-value", Schema.STRING, "inserted-value"),
    ("existing", "inserted-value", Schema.STRING, "inserted-value"),
    ("inserted", "1", Schema.INT8, 1),
])
def test_insert_header(name, literal, schema, value):
    headers = Headers().add("existing", "existing-value", Schema.STRING)
    expected = headers.copy().add(name, value, schema)
    original = source_record(headers)
    out = configured(InsertHeader, {"header": name, "value.literal": literal}).apply(original)
    assert_same_but_headers(original, out)
    assert out.headers == expected
    assert [(h.key, h.schema, h.value) for h in out.headers][-1] == (name, schema, value)


@pytest.mark.parametrize("config", [{"header": None, "value.literal": "1"}, {"header": "inserted", "value.literal": None}])
def test_insert_header_rejects_null(config):
    with pytest.raises(ConfigError, match="null"):
        configured(InsertHeader, config)


def test_insert_header_takes_an_empty_name_and_literal_as_kafka_does():
    out = configured(InsertHeader, {"header": "", "value.literal": ""}).apply(source_record(Headers()))
    assert [(h.key, h.schema, h.value) for h in out.headers] == [("", Schema.STRING, "")]


# --- HeaderFromTest ------------------------------------------------------------------------

OPTIONAL_WITH_DEFAULT = SchemaBuilder.string().default_value("default").optional().build()
FOO = SchemaBuilder.struct().field("foo", Schema.STRING).build()
FOO_VALUE = Struct(FOO).put("foo", "foo-value")


def case(fields, headers):
    """fields: [(name, schema, value)], headers: [(name, schema, value)]"""
    return fields, headers


F1 = ("field1", Schema.STRING, "field1-value")
F2 = ("field2", Schema.STRING, "field2-value")
H1 = ("header1", Schema.STRING, "existing-value")

CASES = {
    "basic copy": (case([F1, F2], [H1]), ["field1"], ["inserted1"], "copy", True,
                   case([F1, F2], [H1, ("inserted1", Schema.STRING, "field1-value")])),
    "basic move": (case([F1, F2], [H1]), ["field1"], ["inserted1"], "move", True,
                   case([F2], [H1, ("inserted1", Schema.STRING, "field1-value")])),
    "copy with preexisting header": (
        case([F1, F2], [("inserted1", Schema.STRING, "existing-value")]), ["field1"], ["inserted1"], "copy", True,
        case([F1, F2], [("inserted1", Schema.STRING, "existing-value"), ("inserted1", Schema.STRING, "field1-value")])),
    "move with preexisting header": (
        case([F1, F2], [("inserted1", Schema.STRING, "existing-value")]), ["field1"], ["inserted1"], "move", True,
        case([F2], [("inserted1", Schema.STRING, "existing-value"), ("inserted1", Schema.STRING, "field1-value")])),
    "copy with struct value": (
        case([("field1", FOO, FOO_VALUE), F2], [H1]), ["field1"], ["inserted1"], "copy", True,
        case([("field1", FOO, FOO_VALUE), F2], [H1, ("inserted1", FOO, FOO_VALUE)])),
    "move with struct value": (
        case([("field1", FOO, FOO_VALUE), F2], [H1]), ["field1"], ["inserted1"], "move", True,
        case([F2], [H1, ("inserted1", FOO, FOO_VALUE)])),
    "two headers from same field": (
        case([F1, F2], [H1]), ["field1", "field1"], ["inserted1", "inserted2"], "move", True,
        case([F2], [H1, ("inserted1", Schema.STRING, "field1-value"), ("inserted2", Schema.STRING, "field1-value")])),
    "two fields to same header": (
        case([F1, F2], [H1]), ["field1", "field2"], ["inserted1", "inserted1"], "move", True,
        case([], [H1, ("inserted1", Schema.STRING, "field1-value"), ("inserted1", Schema.STRING, "field2-value")])),
    "copy null field without default": (
        case([("field1", OPTIONAL_WITH_DEFAULT, "field1-value"), ("field2", OPTIONAL_WITH_DEFAULT, None)], [H1]),
        ["field1", "field2"], ["inserted1", "inserted2"], "copy", False,
        case([("field1", OPTIONAL_WITH_DEFAULT, "field1-value"), ("field2", OPTIONAL_WITH_DEFAULT, None)],
             [H1, ("inserted1", OPTIONAL_WITH_DEFAULT, "field1-value"), ("inserted2", OPTIONAL_WITH_DEFAULT, None)])),
    "move null field without default": (
        case([("field1", OPTIONAL_WITH_DEFAULT, "field1-value"), ("field2", OPTIONAL_WITH_DEFAULT, None)], [H1]),
        ["field1", "field2"], ["inserted1", "inserted2"], "move", False,
        case([], [H1, ("inserted1", OPTIONAL_WITH_DEFAULT, "field1-value"), ("inserted2", OPTIONAL_WITH_DEFAULT, None)])),
}


def build(built, key_side, with_schema):
    fields, headers = built
    if with_schema:
        builder = SchemaBuilder.struct()
        for name, schema, _ in fields:
            builder.field(name, schema)
        schema = builder.build()
        operand = Struct(schema)
        for name, _, value in fields:
            operand.put(name, value)
        record_headers = Headers([(name, schema_, value) for name, schema_, value in headers])
    else:
        schema = None
        operand = {name: value for name, _, value in fields}
        # schemaless: the headers carry no schema
        record_headers = Headers([(name, None, value) for name, _, value in headers])
    if key_side:
        return source_record(record_headers, key_schema=schema, key=operand)
    return source_record(record_headers, value_schema=schema, value=operand)


@pytest.mark.parametrize("with_schema", [True, False], ids=["with_schema", "schemaless"])
@pytest.mark.parametrize("key_side", [True, False], ids=["key", "value"])
@pytest.mark.parametrize("name", list(CASES))
def test_header_from(name, key_side, with_schema):
    original, fields, headers, operation, replace, expected = CASES[name]
    cls = HeaderFromKey if key_side else HeaderFromValue
    transform = configured(cls, {"fields": fields, "headers": headers, "operation": operation,
                                 "replace.null.with.default": replace})
    out = transform.apply(build(original, key_side, with_schema))
    want = build(expected, key_side, with_schema)
    assert_same_but_headers(want, out)
    assert out.headers == want.headers
    assert [(h.key, h.schema, h.value) for h in out.headers] == [(h.key, h.schema, h.value) for h in want.headers]


@pytest.mark.parametrize("cls", [HeaderFromKey, HeaderFromValue])
@pytest.mark.parametrize(("headers", "fields"), [(["foo"], ["foo", "bar"]), (["foo", "bar"], ["foo"]), ([], [])])
def test_header_from_invalid_configs(cls, headers, fields):
    with pytest.raises(ConfigError):
        configured(cls, {"headers": headers, "fields": fields, "operation": "copy", "replace.null.with.default": True})
