"""DropHeaders, HeaderFrom and InsertHeader."""

from __future__ import annotations

import pytest

from connectd.data import DataError, Headers, Schema, SchemaBuilder, SinkRecord, SourceRecord, Struct
from connectd.errors import ConfigError
from connectd.transforms import DropHeaders, HeaderFromKey, HeaderFromValue, InsertHeader

from ._support import configured


SCHEMA = SchemaBuilder.struct().name("V").field("a", Schema.INT32).field("b", Schema.OPTIONAL_STRING).field("c", Schema.BOOLEAN).build()


def struct_record(**extra):
    return SinkRecord(topic="t", kafka_offset=1, value_schema=SCHEMA, value=Struct(SCHEMA, {"a": 1, "b": "x", "c": True}),
                      headers=Headers([("keep", Schema.STRING, "k")]), **extra)


# --- DropHeaders ----------------------------------------------------------------------


def test_drop_headers_removes_every_header_with_the_names():
    headers = Headers().add("a", 1).add("b", 2).add("a", 3).add("c", 4)
    record = SourceRecord(topic="t", value="v", headers=headers)
    out = configured(DropHeaders, headers="a,c").apply(record)
    assert [h.key for h in out.headers] == ["b"]
    assert [h.key for h in record.headers] == ["a", "b", "a", "c"]  # the input keeps its headers


def test_drop_headers_needs_names():
    with pytest.raises(ConfigError, match=r"headers is required"):
        configured(DropHeaders)
    with pytest.raises(ConfigError, match=r"headers='': expected a non-empty list"):
        configured(DropHeaders, headers="")


# --- InsertHeader -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "literal, schema, value",
    [
        ("hello", Schema.STRING, "hello"),
        ("42", Schema.INT8, 42),
        ("true", Schema.BOOLEAN, True),
        ("[1,2]", SchemaBuilder.array(Schema.INT8).build(), [1, 2]),
    ],
)
def test_insert_header_parses_the_literal(literal, schema, value):
    record = SourceRecord(topic="t", value="v", headers=Headers().add("h", "old"))
    out = configured(InsertHeader, header="h", **{"value.literal": literal}).apply(record)
    assert [(h.key, h.schema, h.value) for h in out.headers] == [("h", None, "old"), ("h", schema, value)]
    assert len(record.headers) == 1


def test_insert_header_config_problems_together():
    with pytest.raises(ConfigError) as caught:
        configured(InsertHeader, header=None)
    assert str(caught.value).splitlines() == [
        "value.literal is required (the value of the header, set on every record)",
        "header: expected a string, got null",
    ]


# --- HeaderFrom -----------------------------------------------------------------------


def test_copy_fields_to_headers_with_schema():
    out = configured(HeaderFromValue, fields="a,b", headers="ha,hb", operation="copy").apply(struct_record())
    assert out.value is not None and out.value_schema is SCHEMA
    assert [(h.key, h.schema, h.value) for h in out.headers] == [
        ("keep", Schema.STRING, "k"), ("ha", Schema.INT32, 1), ("hb", Schema.OPTIONAL_STRING, "x"),
    ]


def test_move_fields_to_headers_with_schema():
    out = configured(HeaderFromValue, fields="a,c", headers="ha,hc", operation="move").apply(struct_record())
    assert [f.name for f in out.value_schema.fields] == ["b"]
    assert out.value_schema.name == "V"
    assert out.value.get("b") == "x"
    assert [h.key for h in out.headers] == ["keep", "ha", "hc"]


def test_move_fields_from_a_map_key():
    record = SourceRecord(topic="t", key={"a": 1, "b": 2}, value="v")
    out = configured(HeaderFromKey, fields="a,z", headers="ha,hz", operation="move").apply(record)
    assert out.key == {"b": 2}
    assert [(h.key, h.value) for h in out.headers] == [("ha", 1), ("hz", None)]
    assert record.key == {"a": 1, "b": 2}


def test_header_from_unknown_field_with_schema():
    with pytest.raises(DataError, match="Field does not exist: nope"):
        configured(HeaderFromValue, fields="nope", headers="h", operation="copy").apply(struct_record())


def test_header_from_requires_struct():
    with pytest.raises(DataError, match=r"Only Struct objects supported for \[header move\], found: null"):
        configured(HeaderFromValue, fields="a", headers="h", operation="move").apply(
            SourceRecord(topic="t", value_schema=SCHEMA, value=None))


def test_header_from_reports_every_problem():
    with pytest.raises(ConfigError) as caught:
        configured(HeaderFromValue, fields="a,b", headers="h", operation="swap")
    assert str(caught.value).splitlines() == [
        "operation='swap': expected one of [move, copy]",
        "headers='h': expected one header name per field (2 fields, 1 headers)",
    ]
