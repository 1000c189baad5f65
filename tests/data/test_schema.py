"""Schemas, the builder, fields, validation and the logical types."""

from __future__ import annotations

import datetime
import decimal
import enum
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectd.data import (
    DataError,
    Date,
    Decimal,
    Field,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    SchemaType,
    Struct,
    Time,
    Timestamp,
)
from connectd.data.schema import _values_checker, validate_value
from connectd.errors import ConnectdError

from ._strategies import json_like, logical_schemas, names, primitive_schemas, schemas, schemas_and_values, values

UTC = datetime.timezone.utc
D = decimal.Decimal


class TestConstants:
    @pytest.mark.parametrize("schema_type", [t for t in SchemaType if t.is_primitive])
    def test_required_and_optional_constants(self, schema_type):
        required = getattr(Schema, schema_type.name)
        optional = getattr(Schema, "OPTIONAL_" + schema_type.name)
        assert (required.type, required.optional) == (schema_type, False)
        assert (optional.type, optional.optional) == (schema_type, True)
        assert required.name is required.version is required.doc is required.parameters is required.default_value is None

    def test_type_names_are_kafkas(self):
        assert [t.value for t in SchemaType] == [
            "int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "array", "map", "struct",
        ]
        assert Schema.Type is SchemaType

    def test_data_error_is_a_connectd_error(self):
        assert issubclass(DataError, ConnectdError)


class TestBuilder:
    def test_struct_with_everything(self):
        schema = (
            SchemaBuilder.struct()
            .name("com.example.Person")
            .version(2)
            .doc("a person")
            .parameter("k", "v")
            .field("name", Schema.STRING)
            .field("age", SchemaBuilder.int32().optional())
            .optional()
            .build()
        )
        assert schema.type is SchemaType.STRUCT and schema.optional
        assert (schema.name, schema.version, schema.doc, dict(schema.parameters)) == ("com.example.Person", 2, "a person", {"k": "v"})
        assert schema.fields == (Field("name", 0, Schema.STRING), Field("age", 1, Schema.OPTIONAL_INT32))
        assert schema.field("age") == Field("age", 1, Schema.OPTIONAL_INT32)
        assert schema.field("missing") is None

    def test_array_and_map(self):
        array = SchemaBuilder.array(Schema.INT8).build()
        assert array.value_schema is Schema.INT8
        mapping = SchemaBuilder.map(Schema.STRING, array).build()
        assert (mapping.key_schema, mapping.value_schema) == (Schema.STRING, array)

    def test_wrong_accessors_raise(self):
        with pytest.raises(DataError, match="Cannot list fields on non-struct type"):
            Schema.INT8.fields
        with pytest.raises(DataError, match="Cannot look up fields on non-struct type"):
            Schema.INT8.field("x")
        with pytest.raises(DataError, match="key schema on non-map type"):
            SchemaBuilder.array(Schema.INT8).build().key_schema
        with pytest.raises(DataError, match="value schema on non-array and non-map type"):
            Schema.STRING.value_schema

    def test_fields_only_on_structs_and_unique(self):
        with pytest.raises(DataError, match="Cannot create fields on type int32"):
            SchemaBuilder.int32().field("f", Schema.INT8)
        with pytest.raises(DataError, match="field name duplication f"):
            SchemaBuilder.struct().field("f", Schema.INT8).field("f", Schema.INT16)
        with pytest.raises(DataError, match="cannot be null or empty"):
            SchemaBuilder.struct().field("", Schema.INT8)

    def test_attributes_cannot_change_once_set(self):
        with pytest.raises(DataError, match="name has already been set"):
            SchemaBuilder.int8().name("a").name("b")
        with pytest.raises(DataError, match="optional has already been set"):
            SchemaBuilder.int8().optional().required()
        SchemaBuilder.int8().name("a").name("a").optional().optional()  # the same value is fine

    def test_from_schema_allows_overrides(self):
        original = SchemaBuilder.int8().name("a").version(1).build()
        changed = SchemaBuilder.from_schema(original).name("b").optional().build()
        assert (changed.name, changed.version, changed.optional) == ("b", 1, True)
        assert original.name == "a"

    def test_default_is_validated(self):
        assert SchemaBuilder.int8().default_value(5).build().default_value == 5
        with pytest.raises(DataError, match="Invalid default value: expected int for schema type int8, got str"):
            SchemaBuilder.int8().default_value("5").build()
        with pytest.raises(DataError, match="out of range for int8"):
            SchemaBuilder.int8().default_value(128).build()

    def test_parameters_are_ordered_and_read_only(self):
        schema = SchemaBuilder.string().parameter("b", "1").parameter("a", "2").build()
        assert list(schema.parameters) == ["b", "a"]
        with pytest.raises(TypeError):
            schema.parameters["c"] = "3"  # type: ignore[index]

    def test_schemas_are_immutable(self):
        with pytest.raises(AttributeError, match="immutable"):
            Schema.INT8.optional = True  # type: ignore[misc]

    def test_bad_constructor_arguments(self):
        with pytest.raises(DataError, match="needs a value schema"):
            Schema(SchemaType.ARRAY)
        with pytest.raises(DataError, match="needs a key schema and a value schema"):
            Schema(SchemaType.MAP, value_schema=Schema.INT8)
        with pytest.raises(DataError, match="only struct schemas have fields"):
            Schema(SchemaType.INT8, fields=[Field("a", 0, Schema.INT8)])
        with pytest.raises(DataError, match="must be a Field with index 0"):
            Schema(SchemaType.STRUCT, fields=[Field("a", 1, Schema.INT8)])


class TestEquality:
    def test_structural(self):
        a = SchemaBuilder.struct().name("x").field("f", Schema.INT8).build()
        b = SchemaBuilder.struct().name("x").field("f", Schema.INT8).build()
        assert a == b and hash(a) == hash(b) and a is not b
        assert a != SchemaBuilder.struct().name("y").field("f", Schema.INT8).build()
        assert a != SchemaBuilder.struct().name("x").field("f", Schema.INT16).build()
        assert Schema.INT8 != Schema.OPTIONAL_INT8
        assert SchemaBuilder.int8().default_value(1).build() != SchemaBuilder.int8().default_value(2).build()
        assert SchemaBuilder.string().parameters({}).build() != Schema.STRING  # {} is not "no parameters", as in Kafka
        ab = SchemaBuilder.string().parameter("a", "1").parameter("b", "2").build()
        ba = SchemaBuilder.string().parameter("b", "2").parameter("a", "1").build()
        assert ab == ba and hash(ab) == hash(ba)  # parameters compare as maps, as in Kafka

    @settings(max_examples=100, deadline=None)
    @given(schemas())
    def test_copies_are_equal(self, schema):
        copy = SchemaBuilder.from_schema(schema).build()
        assert copy == schema and hash(copy) == hash(schema)
        assert pickle.loads(pickle.dumps(schema)) == schema


class TestValidation:
    @pytest.mark.parametrize(
        "schema, value",
        [
            (Schema.INT8, 127),
            (Schema.INT64, -(2**63)),
            (Schema.FLOAT32, 1.5),
            (Schema.BOOLEAN, False),
            (Schema.BYTES, bytearray(b"x")),
            (SchemaBuilder.array(Schema.STRING).build(), ("a", "b")),
            (SchemaBuilder.map(Schema.STRING, Schema.OPTIONAL_INT8).build(), {"a": None}),
            (Decimal.schema(2), D("1.00")),
            (Date.SCHEMA, datetime.date(2024, 1, 1)),
            (Time.SCHEMA, datetime.time(1, 2)),
            (Timestamp.SCHEMA, datetime.datetime(2024, 1, 1, tzinfo=UTC)),
        ],
    )
    def test_valid(self, schema, value):
        schema.validate_value(value)

    @pytest.mark.parametrize(
        "schema, value, message",
        [
            (Schema.INT8, 128, "128 is out of range for int8 (-128 to 127)"),
            (Schema.INT32, True, "expected int for schema type int32, got bool True"),
            (Schema.FLOAT64, 1, "expected float for schema type float64, got int 1"),
            (Schema.STRING, None, "null used for required field, schema type string"),
            (Schema.BOOLEAN, 1, "expected bool for schema type boolean, got int 1"),
            (SchemaBuilder.array(Schema.STRING).build(), ["a", 1], r"^\[1\]: expected str"),
            (SchemaBuilder.map(Schema.STRING, Schema.INT8).build(), {"k": "v"}, r"^\['k'\]: expected int"),
            (Decimal.schema(2), 1.5, 'expected decimal.Decimal for schema "org.apache.kafka.connect.data.Decimal"'),
            (Decimal.schema(2), D("NaN"), "not a finite decimal"),
            (Time.SCHEMA, datetime.datetime(2024, 1, 1), "expected datetime.time"),
            (Timestamp.SCHEMA, datetime.date(2024, 1, 1), "expected datetime.datetime"),
        ],
    )
    def test_invalid(self, schema, value, message):
        with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)") if "^" not in message else message):
            schema.validate_value(value)

    @settings(max_examples=150, deadline=None)
    @given(schemas_and_values())
    def test_generated_values_are_valid(self, schema_and_value):
        schema, value = schema_and_value
        schema.validate_value(value)


class TestLogicalTypes:
    def test_schemas_are_kafkas(self):
        decimal_schema = Decimal.schema(2)
        assert (decimal_schema.type, decimal_schema.name, decimal_schema.version) == (
            SchemaType.BYTES, "org.apache.kafka.connect.data.Decimal", 1,
        )
        assert dict(decimal_schema.parameters) == {"scale": "2"}
        assert (Date.SCHEMA.type, Date.SCHEMA.name, Date.SCHEMA.version) == (SchemaType.INT32, "org.apache.kafka.connect.data.Date", 1)
        assert (Time.SCHEMA.type, Time.SCHEMA.name) == (SchemaType.INT32, "org.apache.kafka.connect.data.Time")
        assert (Timestamp.SCHEMA.type, Timestamp.SCHEMA.name) == (SchemaType.INT64, "org.apache.kafka.connect.data.Timestamp")

    @pytest.mark.parametrize(
        "value, scale, unscaled",
        [
            (D("1.56"), 2, b"\x00\x9c"),
            (D("-1.56"), 2, b"\xff\x64"),
            (D("0"), 0, b"\x00"),
            (D("1.27"), 2, b"\x7f"),
            (D("-1.28"), 2, b"\x80"),
            (D("1.28"), 2, b"\x00\x80"),
            (D("1E+3"), -3, b"\x01"),
            (D("12345678901234567890.123"), 3, (12345678901234567890123).to_bytes(10, "big", signed=True)),
        ],
    )
    def test_decimal_bytes_are_javas_big_integer(self, value, scale, unscaled):
        schema = Decimal.schema(scale)
        assert Decimal.from_logical(schema, value) == unscaled
        assert Decimal.to_logical(schema, unscaled).as_tuple() == value.as_tuple()

    def test_decimal_errors(self):
        with pytest.raises(DataError, match="scale parameter not found"):
            Decimal.scale(SchemaBuilder.bytes().name(Decimal.LOGICAL_NAME).build())
        with pytest.raises(DataError, match="schema does not match"):
            Decimal.from_logical(Schema.BYTES, D("1"))

    def test_date(self):
        assert Date.from_logical(Date.SCHEMA, datetime.date(1970, 1, 11)) == 10
        assert Date.to_logical(Date.SCHEMA, -1) == datetime.date(1969, 12, 31)
        assert Date.from_logical(Date.SCHEMA, datetime.datetime(1970, 1, 2, tzinfo=UTC)) == 1
        with pytest.raises(DataError, match="should not have any time fields"):
            Date.from_logical(Date.SCHEMA, datetime.datetime(1970, 1, 2, 1))
        with pytest.raises(DataError, match="outside the years Python supports"):
            Date.to_logical(Date.SCHEMA, 2**31 - 1)

    def test_time(self):
        assert Time.from_logical(Time.SCHEMA, datetime.time(4, 0, 0, 1999)) == 14_400_001
        assert Time.to_logical(Time.SCHEMA, 86_399_999) == datetime.time(23, 59, 59, 999000)
        plus_two = datetime.timezone(datetime.timedelta(hours=2))
        assert Time.from_logical(Time.SCHEMA, datetime.time(1, 0, tzinfo=plus_two)) == 23 * 3_600_000
        with pytest.raises(DataError, match="less than 86400000"):
            Time.to_logical(Time.SCHEMA, 86_400_000)

    def test_timestamp(self):
        moment = datetime.datetime(1970, 2, 16, 7, 6, 40, tzinfo=UTC)
        assert Timestamp.from_logical(Timestamp.SCHEMA, moment) == 4_000_000_000
        assert Timestamp.from_logical(Timestamp.SCHEMA, moment.replace(tzinfo=None)) == 4_000_000_000
        assert Timestamp.to_logical(Timestamp.SCHEMA, 4_000_000_000) == moment
        assert Timestamp.to_logical(Timestamp.SCHEMA, -1) == datetime.datetime(1969, 12, 31, 23, 59, 59, 999000, UTC)
        assert Timestamp.from_logical(Timestamp.SCHEMA, datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, UTC)) == -1


def test_schema_and_value():
    pair = SchemaAndValue(Schema.INT8, 1)
    schema, value = pair
    assert (schema, value) == (Schema.INT8, 1)
    assert SchemaAndValue.NULL == SchemaAndValue(None, None)


def test_struct_schema_repr_is_readable():
    schema = SchemaBuilder.struct().name("p").field("a", Schema.OPTIONAL_INT8).build()
    assert repr(schema) == "Schema(struct, name='p', fields=[a: Schema(int8, optional)])"
    assert repr(Struct(schema, {"a": 1})) == "Struct{a=1}"


# --- the compiled check of a struct's values -------------------------------------------------

class Small(enum.IntEnum):
    ONE = 1


EDGE_LIST = [
    True, False, 0, -1, 2**7, -(2**7) - 1, 2**15, 2**31, -(2**31) - 1, 2**63, -(2**63) - 1, Small.ONE, 1.5, float("nan"),
    "x", b"x", bytearray(b"x"), [1], ["x"], {"k": 1}, (), None,
]
EDGES = st.sampled_from(EDGE_LIST)


@st.composite
def struct_values(draw):
    field_schemas = st.one_of(primitive_schemas(), logical_schemas(), schemas(max_leaves=3))
    fields = draw(st.lists(st.tuples(names, field_schemas), max_size=6, unique_by=lambda f: f[0]))
    builder = SchemaBuilder.struct()
    for name, field_schema in fields:
        builder.field(name, field_schema)
    schema = builder.build()
    chosen = [draw(st.one_of(values(f.schema), EDGES, json_like)) for f in schema.fields]
    return schema, chosen


def _fits(schema, value) -> bool:
    try:
        validate_value(schema, value)
    except DataError:
        return False
    return True


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(struct_values())
def test_compiled_check_decides_as_validate_value(case):
    schema, chosen = case
    expected = all(_fits(f.schema, v) for f, v in zip(schema.fields, chosen))
    assert _values_checker(schema)(chosen) is expected
    assert _values_checker(schema)(tuple(chosen)) is expected
    assert _values_checker(schema)(chosen + [None]) is False
    assert _values_checker(schema) is _values_checker(schema)  # compiled once


@pytest.mark.parametrize("schema_type", [t for t in SchemaType if t.is_primitive])
def test_compiled_check_of_each_primitive_type(schema_type):
    for field_schema in (Schema(schema_type), Schema(schema_type, optional=True)):
        schema = SchemaBuilder.struct().field("x", field_schema).build()
        for value in EDGE_LIST:
            assert _values_checker(schema)([value]) is _fits(field_schema, value), (field_schema, value)


def test_schema_type_hash_is_fast_and_consistent():
    assert {t: t.value for t in SchemaType}[SchemaType.STRUCT] == "struct"
    assert hash(SchemaType.INT8) == hash(SchemaType.INT8) and SchemaType.INT8 in {SchemaType.INT8}
    assert pickle.loads(pickle.dumps(SchemaType.MAP)) is SchemaType.MAP
    assert hash(SchemaBuilder.int8().build()) == hash(Schema.INT8)
