"""Cast: every supported type, with and without schemas, key and value, whole-value casts."""

from __future__ import annotations

import base64
import datetime
import decimal
import math

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SchemaType, SinkRecord, SourceRecord, Struct
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.errors import ConfigError
from connectd.transforms import Cast, CastKey, CastValue

UTC = datetime.timezone.utc


def cast(side, **config):
    transform = side()
    transform.configure(config)
    return transform


def value_record(schema, value):
    return SourceRecord(topic="t", value_schema=schema, value=value)


# --- configuration -------------------------------------------------------------------


def test_spec_is_required():
    with pytest.raises(ConfigError, match=r"spec is required"):
        cast(CastValue)


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("", "expected at least one field:type pair"),
        ("a:bytes", "'a:bytes' casts to bytes, which Cast cannot produce"),
        ("a:struct", "casts to struct"),
        ("a:nope", "'nope' in 'a:nope' is not a type"),
        ("a:b:c", "'a:b:c' is not field:type or a type"),
        ("a:", "'a:' is not field:type"),
        ("int8,a:int16", "expected a single entry when casting the whole value"),
    ],
)
def test_bad_specs_name_the_key_and_what_was_expected(spec, expected):
    with pytest.raises(ConfigError) as caught:
        cast(CastValue, spec=spec)
    message = str(caught.value)
    assert message.startswith(f"spec={spec!r}: expected")
    assert expected in message


def test_every_bad_entry_of_a_spec_is_reported_with_the_other_bad_keys():
    with pytest.raises(ConfigError) as caught:
        cast(CastValue, spec="a:bytes,b:nope", **{"replace.null.with.default": "maybe"})
    message = str(caught.value)
    assert "'a:bytes'" in message and "'b:nope'" in message
    assert "replace.null.with.default='maybe': expected true or false" in message
    assert len(caught.value.problems) == 2


def test_types_are_case_insensitive_and_trimmed():
    transform = cast(CastValue, spec=" a : INT8 , b:Float64")
    assert transform.casts == {"a": SchemaType.INT8, "b": SchemaType.FLOAT64}


def test_nested_class_names():
    assert Cast.Key is CastKey and Cast.Value is CastValue


# --- schemaless ----------------------------------------------------------------------


def test_schemaless_fields():
    transform = cast(CastValue, spec="a:int8,b:string,c:float32,d:boolean,e:int64")
    record = value_record(None, {"a": 300, "b": 1.5, "c": "2.5", "d": "TRUE", "e": True, "other": [1]})
    out = transform.apply(record)
    assert out.value == {"a": 44, "b": "1.5", "c": 2.5, "d": True, "e": 1, "other": [1]}
    assert out.value_schema is None
    assert record.value["a"] == 300  # the input is not changed


def test_schemaless_missing_field_becomes_null_as_in_kafka():
    out = cast(CastValue, spec="missing:int32").apply(value_record(None, {"a": 1}))
    assert out.value == {"a": 1, "missing": None}


def test_schemaless_whole_value_key():
    record = SourceRecord(topic="t", key="42", value="v")
    out = cast(CastKey, spec="int32").apply(record)
    assert out.key == 42 and out.key_schema is None and out.value == "v"


def test_schemaless_requires_a_map():
    with pytest.raises(DataError, match=r"Only Map objects supported in absence of schema for \[cast types\], found: list"):
        cast(CastValue, spec="a:int8").apply(value_record(None, [1, 2]))


def test_schemaless_unsupported_python_type():
    with pytest.raises(DataError, match="not supported by Connect's data API"):
        cast(CastValue, spec="a:string").apply(value_record(None, {"a": object()}))


def test_tombstones_pass_through():
    record = value_record(None, None)
    assert cast(CastValue, spec="a:int8").apply(record) is record


# --- with a schema: every input type to every output type ------------------------------

INPUTS = [
    (Schema.INT8, 42),
    (Schema.INT16, 42),
    (Schema.INT32, 42),
    (Schema.INT64, 42),
    (Schema.FLOAT32, 42.0),
    (Schema.FLOAT64, 42.0),
    (Schema.BOOLEAN, True),
    (Schema.STRING, "42"),
]
EXPECTED = {
    SchemaType.INT8: 42,
    SchemaType.INT16: 42,
    SchemaType.INT32: 42,
    SchemaType.INT64: 42,
    SchemaType.FLOAT32: 42.0,
    SchemaType.FLOAT64: 42.0,
    SchemaType.BOOLEAN: True,
}
OUTPUTS = list(EXPECTED) + [SchemaType.STRING]


@pytest.mark.parametrize("source, source_value", INPUTS, ids=[s.type.value for s, _ in INPUTS])
@pytest.mark.parametrize("target", OUTPUTS, ids=[t.value for t in OUTPUTS])
def test_field_cast_with_schema(source, source_value, target):
    schema = SchemaBuilder.struct().name("r").field("f", source).field("keep", Schema.STRING).build()
    record = value_record(schema, Struct(schema, {"f": source_value, "keep": "k"}))
    out = cast(CastValue, spec=f"f:{target.value}").apply(record)
    assert out.value_schema.name == "r"
    assert out.value_schema.field("f").schema == Schema(target)
    assert out.value_schema.field("keep").schema == Schema.STRING
    result = out.value.get("f")
    if target is SchemaType.STRING:
        expected = {SchemaType.BOOLEAN: "true", SchemaType.STRING: "42"}.get(source.type)
        if expected is None:
            expected = "42.0" if source.type in (SchemaType.FLOAT32, SchemaType.FLOAT64) else "42"
        assert result == expected
    elif source.type is SchemaType.BOOLEAN:
        assert result == (True if target is SchemaType.BOOLEAN else 1)
    elif source.type is SchemaType.STRING and target is SchemaType.BOOLEAN:
        assert result is False  # Boolean.parseBoolean("42")
    else:
        assert result == EXPECTED[target]
        assert type(result) is type(EXPECTED[target])
    assert out.value.get("keep") == "k"
    out.value.validate()


@pytest.mark.parametrize("source, source_value", INPUTS, ids=[s.type.value for s, _ in INPUTS])
@pytest.mark.parametrize("target", OUTPUTS, ids=[t.value for t in OUTPUTS])
def test_whole_value_cast_with_schema(source, source_value, target):
    out = cast(CastKey, spec=target.value).apply(SourceRecord(topic="t", key_schema=source, key=source_value))
    assert out.key_schema == Schema(target)
    out.key_schema.validate_value(out.key)


def test_optionality_and_defaults_are_kept_and_cast():
    field_schema = SchemaBuilder.int32().optional().default_value(7).build()
    schema = SchemaBuilder.struct().field("f", field_schema).optional().build()
    out = cast(CastValue, spec="f:string").apply(value_record(schema, Struct(schema)))
    cast_field = out.value_schema.field("f").schema
    assert cast_field.optional and cast_field.default_value == "7"
    assert out.value_schema.optional
    assert out.value.get("f") == "7"  # the null took the default before the cast


def test_replace_null_with_default_false_keeps_the_null():
    field_schema = SchemaBuilder.int32().optional().default_value(7).build()
    schema = SchemaBuilder.struct().field("f", field_schema).build()
    out = cast(CastValue, spec="f:int64", **{"replace.null.with.default": "false"}).apply(value_record(schema, Struct(schema)))
    assert out.value.get_without_default("f") is None


def test_whole_value_default_and_optional():
    schema = SchemaBuilder.int64().optional().default_value(5).build()
    out = cast(CastValue, spec="string").apply(value_record(schema, 12))
    assert out.value_schema.optional and out.value_schema.default_value == "5"
    assert out.value == "12"


def test_struct_default_is_cast_too():
    plain = SchemaBuilder.struct().field("f", Schema.INT32).optional()
    default = Struct(plain.build(), {"f": 1})
    schema = SchemaBuilder.struct().field("f", Schema.INT32).optional().default_value(default).build()
    out = cast(CastValue, spec="f:string").apply(value_record(schema, Struct(schema, {"f": 2})))
    assert out.value_schema.default_value.get("f") == "1"
    assert out.value.get("f") == "2"


def test_the_updated_schema_is_cached():
    schema = SchemaBuilder.struct().field("f", Schema.INT32).build()
    transform = cast(CastValue, spec="f:int64")
    first = transform.apply(value_record(schema, Struct(schema, {"f": 1})))
    second = transform.apply(value_record(schema, Struct(schema, {"f": 2})))
    assert first.value_schema is second.value_schema
    assert len(transform.schema_cache) == 1


def test_new_settings_derive_new_schemas_and_close_empties_the_cache():
    schema = SchemaBuilder.struct().field("f", Schema.INT32).build()
    transform = cast(CastValue, spec="f:int64")
    assert transform.apply(value_record(schema, Struct(schema, {"f": 1}))).value_schema.field("f").schema.type \
        is SchemaType.INT64
    transform.configure({"spec": "f:string"})  # not the int64 schema derived before
    assert transform.apply(value_record(schema, Struct(schema, {"f": 1}))).value_schema.field("f").schema.type \
        is SchemaType.STRING
    transform.close()
    assert len(transform.schema_cache) == 0


def test_with_schema_requires_a_struct_for_field_casts():
    with pytest.raises(DataError, match=r"Only Struct objects supported for \[cast types\]"):
        cast(CastValue, spec="f:int8").apply(value_record(Schema.INT32, 5))


def test_unsupported_input_types():
    schema = SchemaBuilder.struct().field("f", SchemaBuilder.array(Schema.INT32).build()).build()
    with pytest.raises(DataError, match="does not support casting from array"):
        cast(CastValue, spec="f:string").apply(value_record(schema, Struct(schema, {"f": [1]})))


# --- value conversions ----------------------------------------------------------------


@pytest.mark.parametrize(
    "schema, value, target, expected",
    [
        (Schema.INT32, 300, "int8", 44),  # Java's (byte) wraps
        (Schema.INT32, -129, "int8", 127),
        (Schema.INT64, 2**40 + 5, "int32", 5),
        (Schema.INT32, 70000, "int16", 4464),
        (Schema.FLOAT64, 1.9, "int32", 1),
        (Schema.FLOAT64, -1.9, "int64", -1),
        (Schema.FLOAT64, 1e20, "int32", 2**31 - 1),  # saturates
        (Schema.FLOAT64, 1e20, "int8", -1),  # (byte) (int) 1e20
        (Schema.FLOAT64, -1e30, "int64", -(2**63)),
        (Schema.FLOAT64, math.nan, "int16", 0),
        (Schema.FLOAT64, 0.5, "boolean", False),  # longValue() != 0
        (Schema.INT8, -3, "boolean", True),
        (Schema.STRING, "TrUe", "boolean", True),
        (Schema.STRING, "yes", "boolean", False),
        (Schema.STRING, "-17", "int8", -17),
        (Schema.STRING, "+17", "int64", 17),
        (Schema.STRING, "1.5e3", "float64", 1500.0),
        (Schema.STRING, "2.5f", "float32", 2.5),
        (Schema.STRING, "NaN", "float64", "nan"),
        (Schema.STRING, "-Infinity", "float64", -math.inf),
        (Schema.FLOAT64, 1.1, "float32", 1.100000023841858),  # rounded to single precision
        (Schema.FLOAT64, 1e300, "float32", math.inf),
        (Schema.BOOLEAN, False, "float64", 0.0),
        (Schema.FLOAT32, 1.100000023841858, "string", "1.1"),  # Float.toString
        (Schema.FLOAT64, 1e21, "string", "1.0E21"),  # Double.toString
        (Schema.BYTES, b"\x00\xffhi", "string", base64.b64encode(b"\x00\xffhi").decode()),
        (Schema.INT64, -5, "string", "-5"),
    ],
)
def test_java_conversions(schema, value, target, expected):
    out = cast(CastValue, spec=target).apply(value_record(schema, value))
    if expected == "nan":
        assert math.isnan(out.value)
    else:
        assert out.value == expected


@pytest.mark.parametrize(
    "schema, value, target",
    [
        (Schema.STRING, "300", "int8"),
        (Schema.STRING, " 42", "int32"),
        (Schema.STRING, "4.2", "int32"),
        (Schema.STRING, "forty", "float64"),
        (Schema.STRING, "9223372036854775808", "int64"),
    ],
)
def test_strings_that_do_not_parse(schema, value, target):
    with pytest.raises(DataError, match=rf"Value \({value}\) was out of range for requested data type {target}"):
        cast(CastValue, spec=target).apply(value_record(schema, value))


def test_bytes_only_cast_to_string():
    with pytest.raises(DataError, match="Unexpected type in Cast transformation: bytes"):
        cast(CastValue, spec="int32").apply(value_record(Schema.BYTES, b"12"))


def test_logical_types_cast_as_stored_numbers_and_print_as_iso():
    date_schema, time_schema, ts_schema = Date.SCHEMA, Time.SCHEMA, Timestamp.SCHEMA
    dec_schema = Decimal.schema(2)
    schema = (
        SchemaBuilder.struct()
        .field("d", date_schema).field("t", time_schema).field("ts", ts_schema).field("dec", dec_schema)
        .field("d2", date_schema).field("ts2", ts_schema).field("dec2", dec_schema).field("dec3", dec_schema)
        .build()
    )
    moment = datetime.datetime(2024, 5, 7, 13, 5, 9, 42000, tzinfo=UTC)
    value = Struct(schema, {
        "d": moment.date(), "t": moment.time().replace(tzinfo=None), "ts": moment, "dec": decimal.Decimal("12.34"),
        "d2": moment.date(), "ts2": moment, "dec2": decimal.Decimal("-3.99"), "dec3": decimal.Decimal("0.50"),
    })
    spec = "d:int32,t:int32,ts:int64,dec:float64,d2:string,ts2:string,dec2:int32,dec3:string"
    out = cast(CastValue, spec=spec).apply(value_record(schema, value)).value
    assert out.get("d") == (moment.date() - datetime.date(1970, 1, 1)).days
    assert out.get("t") == ((13 * 60 + 5) * 60 + 9) * 1000 + 42
    assert out.get("ts") == int(moment.timestamp() * 1000)
    assert out.get("dec") == 12.34
    assert out.get("d2") == "2024-05-07"
    assert out.get("ts2") == "2024-05-07T13:05:09.042Z"
    assert out.get("dec2") == -3
    assert out.get("dec3") == "0.50"


def test_whole_value_cast_of_a_logical_type_drops_its_name():
    moment = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    out = cast(CastValue, spec="int64").apply(value_record(Timestamp.SCHEMA, moment))
    assert out.value_schema == Schema.INT64
    assert out.value == 1704067200000


def test_key_and_value_variants_touch_only_their_side():
    schema = SchemaBuilder.struct().field("f", Schema.INT32).build()
    record = SinkRecord(topic="t", kafka_offset=3, key_schema=schema, key=Struct(schema, {"f": 1}),
                        value_schema=schema, value=Struct(schema, {"f": 2}))
    key_out = cast(CastKey, spec="f:string").apply(record)
    assert key_out.key.get("f") == "1" and key_out.value is record.value
    value_out = cast(CastValue, spec="f:string").apply(record)
    assert value_out.value.get("f") == "2" and value_out.key is record.key
    assert value_out.kafka_offset == 3
