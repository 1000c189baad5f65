"""Kafka's MaskFieldTest, case by case."""

from __future__ import annotations

import datetime
import decimal

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SinkRecord, Struct
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.errors import ConfigError
from connectd.transforms import MaskFieldValue

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
NOW = datetime.datetime(2024, 5, 7, 13, 5, 9, 42000, tzinfo=UTC)

SCHEMA = (SchemaBuilder.struct()
          .field("magic", Schema.INT32).field("bool", Schema.BOOLEAN).field("byte", Schema.INT8)
          .field("short", Schema.INT16).field("int", Schema.INT32).field("long", Schema.INT64)
          .field("float", Schema.FLOAT32).field("double", Schema.FLOAT64).field("string", Schema.STRING)
          .field("date", Date.SCHEMA).field("time", Time.SCHEMA).field("timestamp", Timestamp.SCHEMA)
          .field("decimal", Decimal.schema(0))
          .field("array", SchemaBuilder.array(Schema.INT32).build())
          .field("map", SchemaBuilder.map(Schema.STRING, Schema.STRING).build())
          .field("withDefault", SchemaBuilder.string().optional().default_value("default").build())
          .build())

VALUES = {"magic": 42, "bool": True, "byte": 42, "short": 42, "int": 42, "long": 42, "float": 42.0, "double": 42.0,
          "string": "55.121.20.20", "date": NOW, "bigdec": decimal.Decimal("42.0"), "list": [42],
          "map": {"key": "value"}}


def values_with_schema():
    return Struct(SCHEMA, {
        "magic": 42, "bool": True, "byte": 42, "short": 42, "int": 42, "long": 42, "float": 42.0, "double": 42.0,
        "string": "hmm", "date": NOW.date(), "time": NOW.time(), "timestamp": NOW, "decimal": decimal.Decimal(42),
        "array": [1, 2, 3], "map": {"what": "what"}, "withDefault": None,
    })


def transform(fields, replacement):
    xform = MaskFieldValue()
    xform.configure({"fields": fields, "replacement": replacement, "replace.null.with.default": False})
    return xform


def record(schema, value):
    return SinkRecord(topic="", kafka_partition=0, value_schema=schema, value=value, kafka_offset=0)


def test_schemaless():
    fields = [name for name in VALUES if name != "magic"]
    out = transform(fields, None).apply(record(None, dict(VALUES))).value
    assert out == {"magic": 42, "bool": False, "byte": 0, "short": 0, "int": 0, "long": 0, "float": 0.0,
                   "double": 0.0, "string": "", "date": EPOCH, "bigdec": decimal.Decimal(0), "list": [], "map": {}}


def test_with_schema():
    fields = [field.name for field in SCHEMA.fields if field.name != "magic"]
    out = transform(fields, None).apply(record(SCHEMA, values_with_schema())).value
    assert out.get("magic") == 42
    assert out.get("bool") is False
    assert (out.get("byte"), out.get("short"), out.get("int"), out.get("long")) == (0, 0, 0, 0)
    assert (out.get("float"), out.get("double"), out.get("string")) == (0.0, 0.0, "")
    assert out.get("date") == datetime.date(1970, 1, 1)
    assert out.get("time") == datetime.time(0)
    assert out.get("timestamp") == EPOCH
    assert out.get("decimal") == decimal.Decimal(0)
    assert out.get("array") == [] and out.get("map") == {}
    assert out.get_without_default("withDefault") is None


@pytest.mark.parametrize(("field", "replacement"), [
    ("short", 123), ("byte", 123), ("int", 123), ("long", 123), ("float", 123.0), ("double", 123.0),
    ("string", "123"), ("bigdec", decimal.Decimal("123.0")),
])
def test_schemaless_with_replacement(field, replacement):
    out = transform([field], str(replacement)).apply(record(None, dict(VALUES))).value
    assert out[field] == replacement


@pytest.mark.parametrize(("fields", "replacement"), [
    (["date"], str(NOW)), (["int", "date"], str(NOW)), (["bool"], "false"), (["list"], "[123]"),
    (["map"], "{123=321}"),
])
def test_schemaless_unsupported_replacement_type(fields, replacement):
    # With int and date, whichever field comes first fails the record (Kafka's order is a HashSet's).
    with pytest.raises(DataError, match="Cannot mask value of type|Unable to convert"):
        transform(fields, replacement).apply(record(None, dict(VALUES)))


@pytest.mark.parametrize(("field", "replacement"), [
    ("short", 123), ("byte", 123), ("int", 123), ("long", 123), ("float", 123.0), ("double", 123.0),
    ("string", "123"), ("decimal", decimal.Decimal("123.0")),
])
def test_with_schema_and_replacement(field, replacement):
    out = transform([field], str(replacement)).apply(record(SCHEMA, values_with_schema())).value
    assert out.get(field) == replacement


@pytest.mark.parametrize(("field", "replacement"), [("time", str(NOW)), ("timestamp", str(NOW)), ("array", "[123]")])
def test_with_schema_unsupported_replacement_type(field, replacement):
    with pytest.raises(DataError, match="Cannot mask value of type"):
        transform([field], replacement).apply(record(SCHEMA, values_with_schema()))


@pytest.mark.parametrize(("fields", "replacement"), [
    (["byte"], "foo"), (["short"], "foo"), (["int"], "foo"), (["long"], "foo"), (["float"], "foo"),
    (["double"], "foo"), (["bigdec"], "foo"), (["int"], str(NOW)), (["int"], "<object>"), (["string", "int"], "foo"),
])
def test_replacement_type_mismatch(fields, replacement):
    with pytest.raises(DataError):
        transform(fields, replacement).apply(record(None, dict(VALUES)))


def test_empty_replacement_is_a_config_error():
    with pytest.raises(ConfigError, match="replacement"):
        transform(["short"], "")


def test_empty_list_and_map_replacements_are_mutable():
    out = transform(["array", "map"], None).apply(record(SCHEMA, values_with_schema())).value
    array, mapping = out.get("array"), out.get("map")
    assert array == [] and mapping == {}
    array.append(0)
    mapping["k"] = "v"
    assert out.get("array") == [0] and out.get("map") == {"k": "v"}


@pytest.mark.parametrize(("replace", "expected"), [(True, ""), (False, None)])
def test_replace_null_with_default(replace, expected):
    xform = MaskFieldValue()
    xform.configure({"fields": "withDefault", "replace.null.with.default": replace})
    assert xform.apply(record(SCHEMA, values_with_schema())).value.get_without_default("withDefault") == expected


@pytest.mark.parametrize(("field", "replacement", "expected"), [
    # Kafka's Values: BigDecimal(text).longValue(), narrowed as Java narrows.
    ("byte", "300", 44), ("short", "70000", 4464), ("int", "123.9", 123), ("long", "1e2", 100),
    ("double", "1e400", float("inf")), ("float", "1e39", float("inf")),
])
def test_numeric_replacements_convert_as_java_does(field, replacement, expected):
    assert transform([field], replacement).apply(record(SCHEMA, values_with_schema())).value.get(field) == expected
