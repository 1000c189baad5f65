"""Kafka's SchemaProjectorTest, case by case, plus the places connectd names in its errors.

Java's boxed number types become Python's int and float: "(byte) 127 projected to int64" is the int 127
under an int64 schema, a float32 result is a float rounded to single precision. java.util.Date values
are the Python values logical.py uses.
"""

from __future__ import annotations

import datetime
import decimal
import pickle

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SchemaProjector, SchemaProjectorException, SchemaType, Struct
from connectd.data._text import to_float32
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.data.schema_projector import project

NUMERIC = [SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64, SchemaType.FLOAT32, SchemaType.FLOAT64]
NUMBER_VALUES = [127, 255, 32767, 327890, to_float32(1.2), 1.2345]


def primitive(schema_type: SchemaType, optional: bool = False) -> Schema:
    return getattr(Schema, ("OPTIONAL_" if optional else "") + schema_type.name)


def expected_number(value, target: SchemaType):
    if target is SchemaType.FLOAT32:
        return to_float32(float(value))
    return float(value) if target is SchemaType.FLOAT64 else value


@pytest.mark.parametrize(("source", "value", "target"), [
    (Schema.BOOLEAN, False, Schema.BOOLEAN), (Schema.BYTES, b"\x01\x02", Schema.BYTES), (Schema.STRING, "abc", Schema.STRING),
    (Schema.BOOLEAN, False, Schema.OPTIONAL_BOOLEAN), (Schema.BYTES, b"\x01\x02", Schema.OPTIONAL_BYTES),
    (Schema.STRING, "abc", Schema.OPTIONAL_STRING),
])
def test_primitive_type_projection(source, value, target):
    assert project(source, value, target) == value


@pytest.mark.parametrize(("source", "value", "target"), [
    (Schema.OPTIONAL_BOOLEAN, False, Schema.BOOLEAN), (Schema.OPTIONAL_BYTES, b"\x01\x02", Schema.BYTES),
    (Schema.OPTIONAL_STRING, "abc", Schema.STRING),
])
def test_optional_cannot_project_to_required_without_default(source, value, target):
    with pytest.raises(SchemaProjectorException, match="does not provide a default value"):
        project(source, value, target)


@pytest.mark.parametrize("i", range(len(NUMERIC)))
@pytest.mark.parametrize("optional_target", [False, True])
def test_numeric_type_projection(i, optional_target):
    source, value = primitive(NUMERIC[i]), NUMBER_VALUES[i]
    for target_type in NUMERIC[i:]:
        projected = project(source, value, primitive(target_type, optional_target))
        expected = expected_number(value, target_type)
        assert projected == pytest.approx(expected, abs=1e-6) if target_type is SchemaType.FLOAT64 else projected == expected
        assert type(projected) is type(expected)


@pytest.mark.parametrize("source_type", NUMERIC)
@pytest.mark.parametrize("target", [Schema.BOOLEAN, Schema.BYTES, Schema.STRING])
def test_numbers_do_not_promote_to_non_numbers(source_type, target):
    with pytest.raises(DataError):
        project(primitive(source_type), object(), target)


@pytest.mark.parametrize("i", range(1, len(NUMERIC)))
def test_numbers_do_not_narrow(i):
    with pytest.raises(SchemaProjectorException, match="Schema type mismatch"):
        project(primitive(NUMERIC[i]), 1, primitive(NUMERIC[i - 1]))


@pytest.mark.parametrize(("source", "target_type", "value", "default", "expected"), [
    (Schema.OPTIONAL_BOOLEAN, SchemaType.BOOLEAN, False, True, False),
    (Schema.OPTIONAL_BYTES, SchemaType.BYTES, b"\x01\x02", b"\x03\x04", b"\x01\x02"),
    (Schema.OPTIONAL_STRING, SchemaType.STRING, "abc", "def", "abc"),
    (Schema.OPTIONAL_INT8, SchemaType.INT8, 12, 127, 12),
    (Schema.OPTIONAL_INT8, SchemaType.INT16, 12, 127, 12),
    (Schema.OPTIONAL_INT8, SchemaType.INT32, 12, 12789, 12),
    (Schema.OPTIONAL_INT8, SchemaType.INT64, 12, 127890, 12),
    (Schema.OPTIONAL_INT8, SchemaType.FLOAT32, 12, to_float32(3.45), 12.0),
    (Schema.OPTIONAL_INT8, SchemaType.FLOAT64, 12, 3.4567, 12.0),
    (Schema.OPTIONAL_INT16, SchemaType.INT16, 12, 127, 12),
    (Schema.OPTIONAL_INT16, SchemaType.INT32, 12, 12789, 12),
    (Schema.OPTIONAL_INT16, SchemaType.INT64, 12, 127890, 12),
    (Schema.OPTIONAL_INT16, SchemaType.FLOAT32, 12, to_float32(3.45), 12.0),
    (Schema.OPTIONAL_INT16, SchemaType.FLOAT64, 12, 3.4567, 12.0),
    (Schema.OPTIONAL_INT32, SchemaType.INT32, 12, 12789, 12),
    (Schema.OPTIONAL_INT32, SchemaType.INT64, 12, 127890, 12),
    (Schema.OPTIONAL_INT32, SchemaType.FLOAT32, 12, to_float32(3.45), 12.0),
    (Schema.OPTIONAL_INT32, SchemaType.FLOAT64, 12, 3.4567, 12.0),
    (Schema.OPTIONAL_INT64, SchemaType.INT64, 12, 127890, 12),
    (Schema.OPTIONAL_INT64, SchemaType.FLOAT32, 12, to_float32(3.45), 12.0),
    (Schema.OPTIONAL_INT64, SchemaType.FLOAT64, 12, 3.4567, 12.0),
    (Schema.OPTIONAL_FLOAT32, SchemaType.FLOAT32, to_float32(12.345), to_float32(3.45), to_float32(12.345)),
    (Schema.OPTIONAL_FLOAT32, SchemaType.FLOAT64, to_float32(12.345), 3.4567, 12.345),
    (Schema.OPTIONAL_FLOAT32, SchemaType.FLOAT64, 12.345, 3.4567, 12.345),
])
@pytest.mark.parametrize("optional", [True, False])
def test_primitive_optional_projection(source, target_type, value, default, expected, optional):
    # verifyOptionalProjection
    builder = SchemaBuilder(target_type)
    if optional:
        builder.optional()
    target = builder.default_value(default).build()
    projected = project(source, value, target)
    if target_type is SchemaType.FLOAT64:
        assert projected == pytest.approx(expected, abs=1e-6)
    else:
        assert projected == expected
    assert project(source, None, target) == (None if optional else default)


def test_struct_add_field():
    source = SchemaBuilder.struct().field("field", Schema.INT32).build()
    source_struct = Struct(source).put("field", 1)
    target = (SchemaBuilder.struct().field("field", Schema.INT32)
              .field("field2", SchemaBuilder.int32().default_value(123).build()).build())
    projected = project(source, source_struct, target)
    assert projected.schema is target
    assert projected.get("field") == 1
    assert projected.get("field2") == 123

    incompatible = SchemaBuilder.struct().field("field", Schema.INT32).field("field2", Schema.INT32).build()
    with pytest.raises(SchemaProjectorException, match="Required field `field2` is missing from source schema"):
        project(source, source_struct, incompatible)


def test_struct_remove_field():
    source = SchemaBuilder.struct().field("field", Schema.INT32).field("field2", Schema.INT32).build()
    source_struct = Struct(source).put("field", 1).put("field2", 234)
    target = SchemaBuilder.struct().field("field", Schema.INT32).build()
    projected = project(source, source_struct, target)
    assert projected.get("field") == 1
    with pytest.raises(DataError):
        projected.get("field2")


def test_struct_default_value():
    source = SchemaBuilder.struct().optional().field("field", Schema.INT32).field("field2", Schema.INT32).build()
    builder = SchemaBuilder.struct().field("field", Schema.INT32).field("field2", Schema.INT32)
    default = Struct(builder.build()).put("field", 12).put("field2", 345)
    target = builder.default_value(default).build()

    assert project(source, None, target) == default

    source_struct = Struct(source).put("field", 45).put("field2", 678)
    projected = project(source, source_struct, target)
    assert projected.get("field") == 45
    assert projected.get("field2") == 678


def test_nested_schema_projection():
    source_flat = SchemaBuilder.struct().field("field", Schema.INT32).build()
    target_flat = (SchemaBuilder.struct().field("field", Schema.INT32)
                   .field("field2", SchemaBuilder.int32().default_value(123).build()).build())

    def nested(flat: Schema) -> Schema:
        return (SchemaBuilder.struct().field("first", Schema.INT32).field("second", Schema.STRING)
                .field("array", SchemaBuilder.array(Schema.INT32).build())
                .field("map", SchemaBuilder.map(Schema.INT32, Schema.STRING).build())
                .field("nested", flat).build())

    source_nested, target_nested = nested(source_flat), nested(target_flat)
    source_struct = (Struct(source_nested).put("first", 1).put("second", "abc").put("array", [1, 2])
                     .put("map", {5: "def"}).put("nested", Struct(source_flat).put("field", 113)))
    projected = project(source_nested, source_struct, target_nested)
    assert projected.get("first") == 1
    assert projected.get("second") == "abc"
    assert projected.get("array") == [1, 2]
    assert projected.get("map") == {5: "def"}
    inner = projected.get("nested")
    assert inner.schema is target_flat
    assert inner.get("field") == 113
    assert inner.get("field2") == 123


@pytest.mark.parametrize(("schema", "value"), [
    (Decimal.schema(2), decimal.Decimal("1.56")), (Date.SCHEMA, 1000), (Time.SCHEMA, 231), (Timestamp.SCHEMA, 34567),
    (Date.SCHEMA, datetime.date(2024, 5, 1)), (Time.SCHEMA, datetime.time(13, 45)),
    (Timestamp.SCHEMA, datetime.datetime(2024, 5, 1, 13, 45, tzinfo=datetime.timezone.utc)),
])
def test_logical_type_projection(schema, value):
    projected = project(schema, value, schema)
    assert projected == value and type(projected) is type(value)


@pytest.mark.parametrize("logical", [Decimal.schema(2), Date.SCHEMA, Time.SCHEMA, Timestamp.SCHEMA])
def test_logical_types_project_only_to_themselves(logical):
    named = SchemaBuilder.int32().name("invalidLogicalTypeName").build()
    for source, target in [(logical, Schema.BOOLEAN), (logical, named), (Schema.BOOLEAN, logical)]:
        with pytest.raises(SchemaProjectorException):
            project(source, None, target)
    with pytest.raises(SchemaProjectorException, match="Schema parameters not equal"):
        project(Decimal.schema(2), decimal.Decimal("1.56"), Decimal.schema(3))
    with pytest.raises(SchemaProjectorException, match="Schema name mismatch"):
        project(Date.SCHEMA, 1, Schema.INT64)  # an int32 would widen, but the name must match


def test_array_projection():
    source = SchemaBuilder.array(Schema.INT32).build()
    assert project(source, [1, 2, 3], source) == [1, 2, 3]

    optional_source = SchemaBuilder.array(Schema.INT32).optional().build()
    target = SchemaBuilder.array(Schema.INT32).default_value([1, 2, 3]).build()
    assert project(optional_source, [4, 5], target) == [4, 5]
    assert project(optional_source, None, target) == [1, 2, 3]

    promoted = SchemaBuilder.array(Schema.INT64).default_value([1, 2, 3]).build()
    assert project(optional_source, [4, 5], promoted) == [4, 5]
    assert project(optional_source, None, promoted) == [1, 2, 3]
    widened = SchemaBuilder.array(Schema.FLOAT64).default_value([1.0]).build()
    assert project(optional_source, (4, 5), widened) == [4.0, 5.0]
    assert all(type(item) is float for item in project(optional_source, [4, 5], widened))

    with pytest.raises(SchemaProjectorException):
        project(optional_source, None, SchemaBuilder.array(Schema.INT32).build())
    with pytest.raises(SchemaProjectorException):
        project(optional_source, None, SchemaBuilder.array(Schema.BOOLEAN).build())


def test_map_projection():
    source = SchemaBuilder.map(Schema.INT32, Schema.INT32).optional().build()
    target = SchemaBuilder.map(Schema.INT32, Schema.INT32).default_value({1: 2}).build()
    assert project(source, {3: 4}, target) == {3: 4}
    assert project(source, None, target) == {1: 2}

    promoted = SchemaBuilder.map(Schema.INT64, Schema.FLOAT32).default_value({3: 4.5}).build()
    projected = project(source, {3: 4}, promoted)
    assert projected == {3: 4.0} and type(projected[3]) is float
    assert project(source, None, promoted) == {3: 4.5}

    with pytest.raises(SchemaProjectorException):
        project(source, None, SchemaBuilder.map(Schema.INT32, Schema.INT32).build())
    with pytest.raises(SchemaProjectorException):
        project(source, None, SchemaBuilder.map(Schema.BOOLEAN, Schema.STRING).build())


def test_maybe_compatible():
    source = SchemaBuilder.int32().name("source").build()
    with pytest.raises(SchemaProjectorException, match="Schema name mismatch"):
        project(source, 12, SchemaBuilder.int32().name("target").build())
    with pytest.raises(SchemaProjectorException):
        project(source, 34, SchemaBuilder.int32().parameters({"key": "value"}).build())


def test_project_missing_default_valued_struct_field():
    source = SchemaBuilder.struct().build()
    target = SchemaBuilder.struct().field("id", SchemaBuilder.int64().default_value(42).build()).build()
    assert project(source, Struct(source), target).get("id") == 42


def test_project_missing_optional_struct_field():
    source = SchemaBuilder.struct().build()
    target = SchemaBuilder.struct().field("id", Schema.OPTIONAL_INT64).build()
    assert project(source, Struct(source), target).get("id") is None


def test_project_missing_required_field():
    source = SchemaBuilder.struct().build()
    target = SchemaBuilder.struct().field("id", Schema.INT64).build()
    with pytest.raises(SchemaProjectorException):
        project(source, Struct(source), target)


# --- connectd's additions ---------------------------------------------------------------------


def test_errors_name_the_place():
    inner = SchemaBuilder.struct().field("n", Schema.INT32).build()
    source = SchemaBuilder.struct().field("items", SchemaBuilder.array(inner).build()).build()
    target_inner = SchemaBuilder.struct().field("n", Schema.STRING).build()
    target = SchemaBuilder.struct().field("items", SchemaBuilder.array(target_inner).build()).build()
    record = Struct(source).put("items", [Struct(inner).put("n", 1), Struct(inner).put("n", 2)])
    with pytest.raises(SchemaProjectorException) as info:
        project(source, record, target)
    assert info.value.path == "items[0].n"
    assert str(info.value) == "items[0].n: Schema type mismatch. source type: int32 and target type: string"


def test_source_field_defaults_are_projected():
    # As Kafka (Struct.get), an unset source field with a default projects its default.
    source = SchemaBuilder.struct().field("n", SchemaBuilder.int8().default_value(5).build()).build()
    target = SchemaBuilder.struct().field("n", Schema.INT64).build()
    assert project(source, Struct(source), target).get("n") == 5


@pytest.mark.parametrize(("schema", "value"), [
    (SchemaBuilder.struct().build(), {"a": 1}), (SchemaBuilder.array(Schema.INT32).build(), 5),
    (SchemaBuilder.map(Schema.STRING, Schema.INT32).build(), [1]),
])
def test_wrong_value_class_is_an_error(schema, value):
    # Kafka fails with a ClassCastException.
    with pytest.raises(SchemaProjectorException):
        project(schema, value, schema)


def test_kafka_names_and_pickling():
    assert SchemaProjector.project(Schema.INT8, 1, Schema.INT64) == 1
    assert issubclass(SchemaProjectorException, DataError)
    error = SchemaProjectorException("boom").at("field")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is SchemaProjectorException and str(copy) == "field: boom"
