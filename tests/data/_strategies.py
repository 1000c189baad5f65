"""Hypothesis strategies: Connect schemas (nested) and values that fit them."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from hypothesis import strategies as st

from connectd.data import Date, Decimal, Schema, SchemaBuilder, SchemaType, Struct, Time, Timestamp
from connectd.data.schema import INT_RANGES

UTC = datetime.timezone.utc

PRIMITIVES = [t for t in SchemaType if t.is_primitive]
LOGICAL = ["decimal", "date", "time", "timestamp"]

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
metadata_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=10)


def _truncate_ms(moment):
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def base_values(schema: Schema) -> st.SearchStrategy[Any]:
    """Non-null values of *schema*."""
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        return st.integers(-(10**30), 10**30).map(lambda n: decimal.Decimal(f"{n}E{-scale}"))
    if name == Date.LOGICAL_NAME:
        return st.dates()
    if name == Time.LOGICAL_NAME:
        return st.times().map(_truncate_ms)
    if name == Timestamp.LOGICAL_NAME:
        return st.datetimes(timezones=st.just(UTC)).map(_truncate_ms)
    t = schema.type
    if t in INT_RANGES:
        low, high = INT_RANGES[t]
        return st.integers(low, high)
    if t is SchemaType.FLOAT32:
        return st.floats(width=32, allow_nan=False, allow_infinity=False)
    if t is SchemaType.FLOAT64:
        return st.floats(allow_nan=False, allow_infinity=False)
    if t is SchemaType.BOOLEAN:
        return st.booleans()
    if t is SchemaType.STRING:
        return st.text(max_size=20)
    if t is SchemaType.BYTES:
        return st.binary(max_size=20)
    if t is SchemaType.ARRAY:
        return st.lists(values(schema.value_schema), max_size=4)
    if t is SchemaType.MAP:
        return st.dictionaries(base_values(schema.key_schema), values(schema.value_schema), max_size=4)
    field_values = [values(field.schema) for field in schema.fields]
    return st.tuples(*field_values).map(lambda vs: Struct._unchecked(schema, list(vs)))


def values(schema: Schema) -> st.SearchStrategy[Any]:
    """Values of *schema*, ``None`` included when it is optional or has a default."""
    base = base_values(schema)
    if schema.optional or schema.default_value is not None:
        return st.none() | base
    return base


@st.composite
def _decorate(draw, builder: SchemaBuilder, *, allow_default: bool = True) -> Schema:
    if draw(st.booleans()):
        builder.optional()
    if draw(st.integers(0, 3)) == 0:
        builder.name(draw(names))
    if draw(st.integers(0, 3)) == 0:
        builder.version(draw(st.integers(-(2**31), 2**31 - 1)))
    if draw(st.integers(0, 3)) == 0:
        builder.doc(draw(metadata_text))
    if draw(st.integers(0, 4)) == 0:
        builder.parameters(draw(st.dictionaries(names, metadata_text, min_size=1, max_size=2)))
    schema = builder.build()
    if allow_default and draw(st.integers(0, 3)) == 0:
        default = draw(base_values(schema))
        schema = SchemaBuilder.from_schema(schema).default_value(default).build()
    return schema


@st.composite
def logical_schemas(draw) -> Schema:
    kind = draw(st.sampled_from(LOGICAL))
    if kind == "decimal":
        builder = Decimal.builder(draw(st.integers(-5, 12)))
    else:
        builder = {"date": Date, "time": Time, "timestamp": Timestamp}[kind].builder()
    if draw(st.booleans()):
        builder.optional()
    schema = builder.build()
    if draw(st.integers(0, 3)) == 0:
        schema = SchemaBuilder.from_schema(schema).default_value(draw(base_values(schema))).build()
    return schema


def primitive_schemas() -> st.SearchStrategy[Schema]:
    return st.sampled_from(PRIMITIVES).flatmap(lambda t: _decorate(SchemaBuilder(t)))


def key_schemas() -> st.SearchStrategy[Schema]:
    """Hashable, required key schemas (string keys make JSON objects, others [key, value] pairs)."""
    return st.sampled_from(PRIMITIVES).map(Schema) | st.sampled_from(
        [Decimal.schema(3), Date.SCHEMA, Time.SCHEMA, Timestamp.SCHEMA]
    )


def _extend(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    arrays = children.flatmap(lambda c: _decorate(SchemaBuilder.array(c), allow_default=False))
    maps = st.tuples(key_schemas(), children).flatmap(
        lambda kv: _decorate(SchemaBuilder.map(kv[0], kv[1]), allow_default=False)
    )

    @st.composite
    def structs(draw) -> Schema:
        fields = draw(st.lists(st.tuples(names, children), max_size=4, unique_by=lambda f: f[0]))
        builder = SchemaBuilder.struct()
        for name, schema in fields:
            builder.field(name, schema)
        return draw(_decorate(builder, allow_default=False))

    return arrays | maps | structs()


def schemas(max_leaves: int = 8) -> st.SearchStrategy[Schema]:
    """Any schema: primitives, logical types, and arrays/maps/structs of them, nested."""
    return st.recursive(primitive_schemas() | logical_schemas(), _extend, max_leaves=max_leaves)


@st.composite
def schemas_and_values(draw, max_leaves: int = 8) -> tuple[Schema, Any]:
    schema = draw(schemas(max_leaves))
    return schema, draw(values(schema))


def expected_after_round_trip(schema: Schema, value: Any) -> Any:
    """What a round trip yields: ``None`` replaced by defaults (``replace.null.with.default``)."""
    if value is None:
        return schema.default_value
    t = schema.type
    if t is SchemaType.ARRAY:
        return [expected_after_round_trip(schema.value_schema, v) for v in value]
    if t is SchemaType.MAP:
        return {k: expected_after_round_trip(schema.value_schema, v) for k, v in value.items()}
    if t is SchemaType.STRUCT:
        return Struct._unchecked(
            schema, [expected_after_round_trip(f.schema, v) for f, v in zip(schema.fields, value._values)]
        )
    return value


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=10,
)

__all__ = [
    "base_values",
    "expected_after_round_trip",
    "json_like",
    "key_schemas",
    "schemas",
    "schemas_and_values",
    "values",
]
