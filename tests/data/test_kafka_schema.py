"""Kafka's ConnectSchemaTest, SchemaBuilderTest and StructTest, case by case.

Not ported: cases about Java types (byte vs int vs long, CharBuffer, java.util.Date for Date/Time/Timestamp,
hashCode of mutable objects), array and map schemas without element schemas (connectd's schemas always
have them), and Kafka's exact exception messages ("Invalid Java object for schema ...").
SchemaProjectorTest is not ported: connectd has no SchemaProjector.
"""

from __future__ import annotations

import datetime
import decimal

import pytest

from connectd.data import DataError, Field, Schema, SchemaBuilder, SchemaType, Struct
from connectd.data.logical import Date, Decimal, Time, Timestamp

FLAT = SchemaBuilder.struct().field("field", Schema.INT32).build()
MAP_INT_STRING = SchemaBuilder.map(Schema.INT32, Schema.STRING).build()
STRUCT = (SchemaBuilder.struct().field("first", Schema.INT32).field("second", Schema.STRING)
          .field("array", SchemaBuilder.array(Schema.INT32).build()).field("map", MAP_INT_STRING)
          .field("nested", FLAT).build())
PARENT = SchemaBuilder.struct().field("nested", FLAT).build()


# --- ConnectSchemaTest ----------------------------------------------------------------------


def test_fields_on_struct_schema():
    schema = SchemaBuilder.struct().field("foo", Schema.BOOLEAN).field("bar", Schema.INT32).build()
    assert len(schema.fields) == 2
    assert schema.field("foo").index == 0 and schema.field("bar").index == 1
    assert schema.field("other") is None


def test_fields_only_valid_for_structs():
    with pytest.raises(DataError):
        Schema.INT8.fields


@pytest.mark.parametrize(("schema", "value"), [
    (Schema.INT8, 1), (Schema.INT16, 1), (Schema.INT32, 1), (Schema.INT64, 1), (Schema.FLOAT32, 1.0), (Schema.FLOAT64, 1.0),
    (Schema.BOOLEAN, True), (Schema.STRING, "a string"), (Schema.BYTES, b"a byte array"), (Schema.BYTES, bytearray(b"a")),
    (SchemaBuilder.array(Schema.INT32).build(), [1, 2, 3]), (MAP_INT_STRING, {1: "value"}),
    (STRUCT, Struct(STRUCT, {"first": 1, "second": "foo", "array": [1, 2, 3], "map": {1: "value"},
                             "nested": Struct(FLAT).put("field", 12)})),
    # testValidateValueMatchingLogicalType
    (Decimal.schema(2), decimal.Decimal("1.56")), (Date.SCHEMA, datetime.date(1970, 1, 1)),
    (Time.SCHEMA, datetime.time(0)), (Timestamp.SCHEMA, datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)),
])
def test_validate_value_matching_type(schema, value):
    schema.validate_value(value)


@pytest.mark.parametrize(("schema", "value"), [
    # the Int8/Int16/Int32/Int64 mismatches are Java boxing (byte vs int vs long); ranges stand in for them
    (Schema.INT8, 128), (Schema.INT16, -(2**15) - 1), (Schema.INT32, 2**31), (Schema.INT64, 2**63),
    (Schema.INT32, 1.0), (Schema.FLOAT64, 1), (Schema.BOOLEAN, 1.0), (Schema.STRING, b"abc"), (Schema.BYTES, [1, "foo"]),
    (SchemaBuilder.array(Schema.INT32).build(), ["a", "b", "c"]),
    (SchemaBuilder.array(Schema.INT32).build(), [1, 2, "c"]),
    (MAP_INT_STRING, {"wrong key type": "value"}),
    (MAP_INT_STRING, {1: 2}),
    (MAP_INT_STRING, {1: "abc", "wrong": "it's as easy as one two three"}),
    (MAP_INT_STRING, {1: "abc", 2: b"wrong"}),
    (FLAT, Struct(SchemaBuilder.struct().field("x", Schema.INT32).build()).put("x", 1)),
    (Decimal.schema(2), 156), (Date.SCHEMA, 1000), (Time.SCHEMA, 1000), (Timestamp.SCHEMA, 1000),
])
def test_validate_value_mismatch(schema, value):
    with pytest.raises(DataError):
        schema.validate_value(value)


def test_validate_value_mismatch_struct_wrong_nested_schema():
    with pytest.raises(DataError):
        PARENT.validate_value(Struct(PARENT).put("nested", Struct(SchemaBuilder.struct().field("x", Schema.INT32).build()).put("x", 1)))


def test_primitive_equality():
    def schema(**changes):
        return Schema(SchemaType.INT8, **{"name": "name", "version": 2, "doc": "doc", **changes})
    assert schema() == schema()
    for changes in [{"optional": True}, {"default_value": 1}, {"name": "otherName"}, {"version": 4},
                    {"doc": "other doc"}, {"parameters": {"param": "value"}}]:
        assert schema() != schema(**changes)
    assert schema() != Schema(SchemaType.INT16, name="name", version=2, doc="doc")


def test_array_map_struct_equality():
    assert SchemaBuilder.array(Schema.INT8).build() == SchemaBuilder.array(Schema.INT8).build()
    assert SchemaBuilder.array(Schema.INT8).build() != SchemaBuilder.array(Schema.INT16).build()
    # testArrayDefaultValueEquality
    assert (SchemaBuilder.array(Schema.STRING).default_value(["a", "b"]).build()
            == SchemaBuilder.array(Schema.STRING).default_value(["a", "b"]).build())
    assert (SchemaBuilder.array(Schema.STRING).default_value(["a", "b"]).build()
            != SchemaBuilder.array(Schema.STRING).default_value(["b", "c"]).build())
    assert SchemaBuilder.map(Schema.INT8, Schema.INT16).build() == SchemaBuilder.map(Schema.INT8, Schema.INT16).build()
    assert SchemaBuilder.map(Schema.INT8, Schema.INT16).build() != SchemaBuilder.map(Schema.STRING, Schema.INT16).build()
    assert SchemaBuilder.map(Schema.INT8, Schema.INT16).build() != SchemaBuilder.map(Schema.INT8, Schema.STRING).build()
    fields = [Field("field", 0, Schema.INT8), Field("field2", 1, Schema.INT16)]
    assert Schema(SchemaType.STRUCT, fields=fields) == Schema(SchemaType.STRUCT, fields=list(fields))
    assert Schema(SchemaType.STRUCT, fields=fields) != Schema(
        SchemaType.STRUCT, fields=[fields[0], Field("different field name", 1, Schema.INT16)])


def test_empty_struct():
    empty = Schema(SchemaType.STRUCT)
    assert len(empty.fields) == 0
    Struct(empty)


def test_validate_list():
    optional_strings = SchemaBuilder.array(Schema.OPTIONAL_STRING).build()
    for value in ([], ["hello"], [None], ["hello", "world"], ["hello", None], [None, "world"]):
        optional_strings.validate_value(value)
    required_strings = SchemaBuilder.array(Schema.STRING).build()
    for value in ([], ["hello"], ["hello", "world"]):
        required_strings.validate_value(value)
    for schema, value in [(optional_strings, [True]), (required_strings, [None]), (required_strings, ["hello", None]),
                          (required_strings, [None, "world"])]:
        with pytest.raises(DataError):
            schema.validate_value(value)


def test_validate_map():
    optional_strings = SchemaBuilder.map(Schema.OPTIONAL_STRING, Schema.OPTIONAL_STRING).build()
    for value in ({}, {"key": "value"}, {"key": None}, {None: "value"}, {None: None}):
        optional_strings.validate_value(value)
    required_strings = SchemaBuilder.map(Schema.STRING, Schema.STRING).build()
    for value in ({}, {"key": "value"}):
        required_strings.validate_value(value)
    for schema, value in [(optional_strings, {"key": True}), (optional_strings, {True: "value"}),
                          (required_strings, {"key": None}), (required_strings, {None: "value"}),
                          (required_strings, {None: None}), (required_strings, {"key": True}), (required_strings, {True: "value"})]:
        with pytest.raises(DataError):
            schema.validate_value(value)


# --- SchemaBuilderTest ----------------------------------------------------------------------


@pytest.mark.parametrize(("builder", "default", "invalid"), [
    (SchemaBuilder.int8, 12, "invalid"), (SchemaBuilder.int16, 12, "invalid"), (SchemaBuilder.int32, 12, "invalid"),
    (SchemaBuilder.int64, 12, "invalid"), (SchemaBuilder.float32, 12.0, "invalid"), (SchemaBuilder.float64, 12.0, "invalid"),
    (SchemaBuilder.boolean, True, "invalid"), (SchemaBuilder.string, "a default string", True),
    (SchemaBuilder.bytes, b"a default byte array", "a string, not bytes"),
])
def test_primitive_builders(builder, default, invalid):
    plain = builder().build()
    assert plain.optional is False and plain.default_value is None
    assert (plain.name, plain.version, plain.doc, plain.parameters) == (None, None, None, None)
    schema = builder().name("name").optional().default_value(default).version(2).doc("doc").build()
    assert schema.optional is True and schema.default_value == default
    assert (schema.name, schema.version, schema.doc, schema.parameters) == ("name", 2, "doc", None)
    # testInt8BuilderInvalidDefault …: Kafka refuses the default when it is given, before build()
    with pytest.raises(DataError, match="Invalid default value"):
        builder().default_value(invalid)


def test_parameters():
    expected = {"foo": "val", "bar": "baz"}
    assert SchemaBuilder.string().parameter("foo", "val").parameter("bar", "baz").build().parameters == expected
    assert SchemaBuilder.string().parameters(expected).build().parameters == expected


def test_struct_builder():
    schema = SchemaBuilder.struct().field("field1", Schema.INT8).field("field2", Schema.INT8).build()
    assert [(f.name, f.index, f.schema) for f in schema.fields] == [("field1", 0, Schema.INT8), ("field2", 1, Schema.INT8)]


def test_non_struct_cant_have_fields():
    with pytest.raises(DataError):
        SchemaBuilder.int8().field("field", SchemaBuilder.int8().build())


def test_array_and_map_builders():
    assert SchemaBuilder.array(Schema.INT8).build().value_schema == Schema.INT8
    assert SchemaBuilder.array(Schema.INT8).default_value([1, 2]).build().default_value == [1, 2]
    with pytest.raises(DataError):  # testArrayBuilderInvalidDefault
        SchemaBuilder.array(Schema.INT8).default_value(["string"]).build()
    schema = SchemaBuilder.map(Schema.INT8, Schema.INT8).default_value({5: 10}).build()
    assert (schema.key_schema, schema.value_schema, schema.default_value) == (Schema.INT8, Schema.INT8, {5: 10})
    with pytest.raises(DataError):  # testMapBuilderInvalidDefault
        SchemaBuilder.map(Schema.INT8, Schema.INT8).default_value({5: "foo"}).build()


def test_builder_empty_struct():
    schema = SchemaBuilder.struct().build()
    assert len(schema.fields) == 0
    Struct(schema)


def test_duplicate_fields():
    with pytest.raises(DataError):
        (SchemaBuilder.struct().name("testing").field("id", SchemaBuilder.string().doc("").build())
         .field("id", SchemaBuilder.string().doc("").build()).build())


def test_default_fields_overwriting():
    builder = SchemaBuilder.string().name("testing").version(123)
    builder.name("testing").version(123)  # the same values again are fine
    assert builder.build().name == "testing"
    with pytest.raises(DataError):
        builder.version(456)


@pytest.mark.parametrize("make", [
    lambda: SchemaBuilder.struct().field(None, Schema.STRING).build(),      # testFieldNameNull
    lambda: SchemaBuilder.struct().field("fieldName", None).build(),        # testFieldSchemaNull
    lambda: SchemaBuilder.array(None).build(),                              # testArraySchemaNull
    lambda: SchemaBuilder.map(None, Schema.STRING).build(),                 # testMapKeySchemaNull
    lambda: SchemaBuilder.map(Schema.STRING, None).build(),                 # testMapValueSchemaNull
    lambda: SchemaBuilder(None),                                            # testTypeNotNull
])
def test_nulls_are_refused(make):
    with pytest.raises(DataError):
        make()


# --- StructTest -----------------------------------------------------------------------------

FLAT_STRUCT = (SchemaBuilder.struct().field("int8", Schema.INT8).field("int16", Schema.INT16).field("int32", Schema.INT32)
               .field("int64", Schema.INT64).field("float32", Schema.FLOAT32).field("float64", Schema.FLOAT64)
               .field("boolean", Schema.BOOLEAN).field("string", Schema.STRING).field("bytes", Schema.BYTES).build())
ARRAY = SchemaBuilder.array(Schema.INT8).build()
MAP = SchemaBuilder.map(Schema.INT32, Schema.STRING).build()
NESTED_CHILD = SchemaBuilder.struct().field("int8", Schema.INT8).build()
NESTED = SchemaBuilder.struct().field("array", ARRAY).field("map", MAP).field("nested", NESTED_CHILD).build()
DEFAULT_FIELD = SchemaBuilder.int8().default_value(0).build()
FLAT_VALUES = {"int8": 12, "int16": 12, "int32": 12, "int64": 12, "float32": 12.0, "float64": 12.0,
               "boolean": True, "string": "foobar", "bytes": b"foobar"}


def test_flat_struct():
    struct = Struct(FLAT_STRUCT, FLAT_VALUES)
    assert struct.to_dict() == FLAT_VALUES
    struct.validate()


def test_complex_struct():
    struct = Struct(NESTED, {"array": [1, 2], "map": {1: "string"}, "nested": Struct(NESTED_CHILD).put("int8", 12)})
    assert struct.get("array") == [1, 2] and struct.get("map") == {1: "string"}
    assert struct.get("nested").get("int8") == 12
    struct.validate()


@pytest.mark.parametrize(("schema", "field", "value"), [
    (FLAT_STRUCT, "int8", "should fail because this is a string, not int8"),
    (NESTED, "array", ["should fail since elements should be int8s"]),
    (NESTED, "map", {"should fail because keys should be int8s": 12}),
    (NESTED, "nested", Struct(SchemaBuilder.struct().field("x", Schema.INT8).build())),  # testInvalidStructFieldSchema
    (NESTED, "nested", Struct(NESTED_CHILD)),                                          # testInvalidStructFieldValue
])
def test_invalid_field_values(schema, field, value):
    with pytest.raises(DataError):
        Struct(schema).put(field, value)


def test_missing_fields():
    with pytest.raises(DataError):
        Struct(SchemaBuilder.struct().field("field", Schema.INT8).build()).validate()
    Struct(SchemaBuilder.struct().field("field", Schema.OPTIONAL_INT8).build()).validate()
    with_default = Struct(SchemaBuilder.struct().field("field", DEFAULT_FIELD).build())
    with_default.validate()
    assert with_default.get("field") == 0
    assert Struct(SchemaBuilder.struct().field("field", Schema.INT8).build()).get("field") is None


def test_equals():
    assert Struct(FLAT_STRUCT, FLAT_VALUES) == Struct(FLAT_STRUCT, FLAT_VALUES)
    assert Struct(FLAT_STRUCT, FLAT_VALUES) != Struct(FLAT_STRUCT, {**FLAT_VALUES, "string": "mismatching string"})
    assert Struct(FLAT_STRUCT, FLAT_VALUES) != Struct(FLAT_STRUCT, {**FLAT_VALUES, "bytes": b"mismatching_string"})

    def nested(array, map_, int8):
        return Struct(NESTED, {"array": array, "map": map_, "nested": Struct(NESTED_CHILD).put("int8", int8)})
    assert nested([1, 2], {1: "string"}, 12) == nested([1, 2], {1: "string"}, 12)
    assert nested([1, 2], {1: "string"}, 12) != nested([1, 2, 3], {2: "string"}, 13)


def test_validate_and_put_name_the_field():
    schema = SchemaBuilder.struct().field("one", Schema.STRING).field("two", Schema.STRING).field("three", Schema.STRING).build()
    with pytest.raises(DataError, match="^one: null used for required field"):  # testValidateStructWithNullValue
        Struct(schema).validate()
    with pytest.raises(DataError, match="^one: null used for required field"):  # testInvalidPutIncludesFieldName
        Struct(schema).put("one", None)
    with pytest.raises(DataError):  # testPutNullField
        Struct(schema).put(None, "valid")
