"""JsonConverter's compiled struct writers and readers (and its orjson reader) give what the step-by-step ones give.

The reference is the same converter with the compiled functions and orjson
switched off, so every value, error message and schema is compared with
what the converter did before they existed.
"""

from __future__ import annotations

import contextlib
import enum
import json
import math
import struct
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectd.data import DataError, JsonConverter, Schema, SchemaBuilder, SchemaType, Struct
from connectd.data import json_converter as json_converter_module
from connectd.data.schema import INT_RANGES, StructBase

from ._strategies import base_values, json_like, logical_schemas, names, primitive_schemas, schemas, values

EQUIVALENCE = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def step_by_step() -> Iterator[None]:
    """JsonConverter as it was: no compiled struct functions, no orjson.

    (The converter compiles a struct's functions when its cache entry is used a
    second time, so the tests below use each schema at least twice.)
    """
    with (
        mock.patch.object(json_converter_module, "compile_struct_encoder", lambda schema, fallback, *a, **k: fallback),
        mock.patch.object(json_converter_module, "compile_struct_decoder", lambda schema, fallback, *a, **k: fallback),
        mock.patch.object(json_converter_module, "compile_payload_reader", lambda *a, **k: None),
        mock.patch.object(json_converter_module, "orjson", None),
    ):
        yield


def converter(**settings_: object) -> JsonConverter:
    c = JsonConverter()
    c.configure({k.replace("_", "."): v for k, v in settings_.items()}, is_key=False)
    return c


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (so 1, 1.0 and True differ, as do 0.0 and -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, StructBase):
        return a.schema == b.schema and len(a._values) == len(b._values) and all(map(same, a._values, b._values))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except DataError as exc:
        return "error", str(exc)


def read_one_by_one(c: JsonConverter, datas: list[Any]) -> list[Any]:
    """What to_connect_batch did before it had a fast way: to_connect_data for each record."""
    return [c.to_connect_data("t", data) for data in datas]


def write_one_by_one(c: JsonConverter, items: list[tuple[Schema, Any]]) -> list[bytes | None]:
    """What from_connect_batch did: from_connect_data for each value."""
    return [c.from_connect_data("t", schema, value) for schema, value in items]


def same_outcome(fast: tuple[str, Any], reference: tuple[str, Any]) -> bool:
    return fast[0] == reference[0] and (fast[1] == reference[1] if fast[0] == "error" else same(fast[1], reference[1]))


# --- values that may not fit --------------------------------------------------------------


@st.composite
def struct_schemas(draw) -> Schema:
    # Mostly the field types the compiled functions handle inline, some of everything else.
    field_schemas = st.one_of(primitive_schemas(), primitive_schemas(), logical_schemas(), schemas(max_leaves=4))
    fields = draw(st.lists(st.tuples(names, field_schemas), max_size=6, unique_by=lambda f: f[0]))
    builder = SchemaBuilder.struct()
    for name, field_schema in fields:
        builder.field(name, field_schema)
    if draw(st.booleans()):
        builder.optional()
    if draw(st.booleans()):
        builder.name(draw(names))
    return builder.build()


JUNK = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5) | st.binary(max_size=3) | json_like


@st.composite
def maybe_broken(draw, schema: Schema) -> Any:
    """A value of struct *schema*, or one with a field replaced by junk (written unchecked)."""
    value = draw(values(schema))
    if value is None or not schema.fields or draw(st.booleans()):
        return value
    broken = list(value._values)
    broken[draw(st.integers(0, len(broken) - 1))] = draw(JUNK)
    return Struct._unchecked(schema, broken)


@st.composite
def struct_cases(draw) -> tuple[Schema, Any]:
    schema = draw(struct_schemas())
    return schema, draw(maybe_broken(schema))


class Small(enum.IntEnum):
    ONE = 1


class Real(float):
    pass


class Text(str):
    pass


PLAIN_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)


def edge_values(schema: Schema) -> st.SearchStrategy[Any]:
    """Values at the edges of what the compiled functions handle inline, right and wrong."""
    schema_type = schema.type
    if schema_type in INT_RANGES:
        low, high = INT_RANGES[schema_type]
        return st.sampled_from([low, high, low - 1, high + 1, 0, -1, True, Small.ONE, 1.0])
    if schema_type in (SchemaType.FLOAT64, SchemaType.FLOAT32):
        return st.sampled_from([
            1e-3, 0.000999999, 1e7, 9999999.999, -1e-3, -0.0009, -1e7, 1e-300, 5e-324, 1e300, 3.4e38, 3.5e38,
            math.inf, -math.inf, math.nan, 0.0, -0.0, 1.5, Real(2.5), 1, True,
        ])
    if schema_type is SchemaType.STRING:
        return PLAIN_TEXT | st.sampled_from(["ABC", 'a"b', "a\\u00e9", "é", "\x01", "\x7f", "\u2028", Text("x"), b"x", 1])
    if schema_type is SchemaType.BOOLEAN:
        return st.sampled_from([True, False, 1, 0, None])
    return JUNK


@st.composite
def flat_cases(draw) -> tuple[Schema, Any]:
    """A struct of primitive (and logical) fields, with values typical, at the edges, or junk (unchecked)."""
    fields = draw(st.lists(st.tuples(names, primitive_schemas() | logical_schemas()), max_size=6, unique_by=lambda f: f[0]))
    builder = SchemaBuilder.struct()
    for name, field_schema in fields:
        builder.field(name, field_schema)
    schema = builder.build()
    chosen = [
        draw(st.one_of(base_values(f.schema), base_values(f.schema), edge_values(f.schema), st.none()))
        for f in schema.fields
    ]
    return schema, Struct._unchecked(schema, chosen)


SETTINGS = st.fixed_dictionaries({
    "schemas_enable": st.booleans(),
    "replace_null_with_default": st.booleans(),
    "decimal_format": st.sampled_from(["BASE64", "NUMERIC"]),
})


# --- writing --------------------------------------------------------------------------------


@EQUIVALENCE
@given(struct_cases(), SETTINGS)
def test_compiled_writers_write_what_step_by_step_writes(case, config):
    schema, value = case
    fast = converter(**config)
    with step_by_step():
        reference = converter(**config)
        expected = outcome(lambda: reference.from_connect_data("t", schema, value))
        expected_batch = outcome(lambda: write_one_by_one(reference, [(schema, value)] * 2))
    for _ in range(2):  # step by step, then compiled
        assert same_outcome(outcome(lambda: fast.from_connect_data("t", schema, value)), expected)
    assert same_outcome(outcome(lambda: fast.from_connect_batch("t", [(schema, value)] * 2)), expected_batch)


@EQUIVALENCE
@given(flat_cases(), SETTINGS)
def test_compiled_writers_write_flat_structs_as_step_by_step_does(case, config):
    schema, value = case
    fast = converter(**config)
    with step_by_step():
        expected = outcome(lambda: converter(**config).from_connect_data("t", schema, value))
    for _ in range(2):  # step by step, then compiled
        assert same_outcome(outcome(lambda: fast.from_connect_data("t", schema, value)), expected)


def test_writers_take_an_equal_schema_and_reject_another():
    schema = SchemaBuilder.struct().field("a", Schema.INT32).build()
    equal = SchemaBuilder.struct().field("a", Schema.INT32).build()
    other = SchemaBuilder.struct().field("b", Schema.INT32).build()
    c = converter()
    assert c.from_connect_data("t", schema, Struct(equal, {"a": 1})).endswith(b'"payload":{"a":1}}')
    with pytest.raises(DataError, match="Mismatching schema"):
        c.from_connect_data("t", schema, Struct(other, {"b": 1}))


def test_strings_are_escaped_as_jackson_does():
    schema = SchemaBuilder.struct().field("s", Schema.STRING).field("o", Schema.OPTIONAL_STRING).build()
    text = 'a"b\\c\n\t\x01\x1f\x7f é \\u00e9'
    data = converter(schemas_enable=False).from_connect_data("t", schema, Struct(schema, {"s": text, "o": text}))
    quoted = r'"a\"b\\c\n\t\u0001\u001F' + "\x7f é " + r'\\u00e9"'
    assert data == ('{"s":' + quoted + ',"o":' + quoted + "}").encode()


def test_doubles_as_java_prints_them():
    schema = SchemaBuilder.struct().field("d", Schema.FLOAT64).field("f", Schema.FLOAT32).build()
    c = converter(schemas_enable=False)
    for d, text in [(1.0, "1.0"), (0.001, "0.001"), (1e7, "1.0E7"), (-1e-4, "-1.0E-4"), (math.inf, '"Infinity"'), (-0.0, "-0.0")]:
        assert c.from_connect_data("t", schema, Struct(schema, {"d": d, "f": 1.5})) == f'{{"d":{text},"f":1.5}}'.encode()


# --- reading ----------------------------------------------------------------------------------


@st.composite
def payload_texts(draw, schema: Schema, value: Any, config: dict[str, Any]) -> str:
    """The payload JSON of *value*, perhaps with a field replaced, dropped or added, or spaces around it."""
    with step_by_step():
        written = converter(schemas_enable=False, decimal_format=config["decimal_format"])
        payload = json.loads(written.from_connect_data("t", schema, value), parse_float=Number)
    change = draw(st.sampled_from(["none", "replace", "drop", "add", "spaces", "number-text"]))
    if isinstance(payload, dict) and payload and change in ("replace", "drop", "number-text"):
        key = draw(st.sampled_from(sorted(payload)))
        if change == "replace":
            payload[key] = draw(json_like)
        elif change == "drop":
            del payload[key]
        else:
            payload[key] = draw(NUMBER_TEXTS)
    elif isinstance(payload, dict) and change == "add":
        payload[draw(names)] = draw(json_like)
    text = _dumps(payload)
    return f" {text} " if change == "spaces" else text


class Number(str):
    """JSON number text, written as it is."""


def _dumps(value: Any) -> str:
    if isinstance(value, Number):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dumps(v) for v in value) + "]"
    return json.dumps(value, separators=(",", ":"))


NUMBER_TEXTS = st.one_of(
    st.sampled_from([
        "0", "-0", "1", "-1", "1.0", "-0.0", "1e5", "1E+2", "0.1e1", "1.5", "2.5e-3", "1e400", "-1e400", "1e-400",
        "9007199254740993", "9007199254740993.0", "9223372036854775807", "9223372036854775808",
        "-9223372036854775809", "18446744073709551616", "123456789012345678901234567890", "4.9e-324",
        "1.7976931348623157e308", "1.7976931348623159e308", "2147483647", "2147483648", "127", "128", "-129",
    ]),
    st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
    st.integers().map(str),
).map(Number)


@st.composite
def read_cases(draw, flat: bool = False) -> tuple[bytes, dict[str, Any]]:
    config = draw(SETTINGS)
    config["schemas_enable"] = True
    if flat:
        fields = draw(st.lists(st.tuples(names, primitive_schemas()), min_size=1, max_size=6, unique_by=lambda f: f[0]))
        builder = SchemaBuilder.struct()
        for name, field_schema in fields:
            builder.field(name, field_schema)
        schema = builder.build()
        chosen = [draw(st.one_of(base_values(f.schema), PLAIN_TEXT if f.schema.type is SchemaType.STRING else st.nothing(),
                                 edge_values(f.schema))) for f in schema.fields]
        value = Struct._unchecked(schema, chosen)
        with step_by_step():
            if outcome(lambda: converter().from_connect_data("t", schema, value))[0] != "ok":
                value = draw(values(schema))
    else:
        schema = draw(struct_schemas())
        value = draw(values(schema))
    with step_by_step():
        schema_json = converter()._schema_json(schema)
    return ('{"schema":' + schema_json + ',"payload":' + draw(payload_texts(schema, value, config)) + "}").encode(), config


def _read_both(datas: list[bytes], config: dict[str, Any]) -> None:
    fast = converter(**config)
    with step_by_step():
        reference = converter(**config)
        expected = [outcome(lambda d=d: reference.to_connect_data("t", d)) for d in datas]
        expected_batch = outcome(lambda: read_one_by_one(reference, datas))
    got = [outcome(lambda d=d: fast.to_connect_data("t", d)) for d in datas]
    assert all(map(same_outcome, got, expected))
    got_batch = outcome(lambda: fast.to_connect_batch("t", datas))
    assert same_outcome(got_batch, expected_batch)
    if got_batch[0] == "ok":
        # The same schema objects as single reads from the same converter (the same cache entries).
        assert all(sv.schema is single.schema for sv, (_, single) in zip(got_batch[1], got))


@EQUIVALENCE
@given(st.lists(read_cases(), min_size=1, max_size=3))
def test_compiled_readers_read_what_step_by_step_reads(cases):
    config = cases[0][1]
    datas = [data for data, _ in cases]
    # Each twice in a row: the second goes the batch's fast way.
    _read_both([d for data in datas for d in (data, data)], config)


@EQUIVALENCE
@given(st.lists(read_cases(flat=True), min_size=1, max_size=3))
def test_flat_structs_read_the_same_with_or_without_orjson(cases):
    config = cases[0][1]
    datas = [data for data, _ in cases]
    _read_both([d for data in datas for d in (data, data, data)], config)


def test_orjson_reads_flat_structs_in_batches():
    pytest.importorskip("orjson")
    schema = SchemaBuilder.struct().field("n", Schema.INT64).field("d", Schema.FLOAT64).field("s", Schema.OPTIONAL_STRING).build()
    c = converter()
    datas = [c.from_connect_data("t", schema, Struct(schema, {"n": i, "d": i / 4, "s": None})) for i in range(3)]
    key = datas[0][10 : datas[0].index(b',"payload":')].decode()
    with mock.patch.object(json_converter_module.orjson, "loads", wraps=json_converter_module.orjson.loads) as loads:
        c.to_connect_batch("t", datas)
        assert loads.call_count == 0  # a schema's first batch: step by step, as it may never come again
        out = c.to_connect_batch("t", datas)
    assert loads.call_count == 2  # the first record finds the schema the standard way
    assert [sv.value.get("d") for sv in out] == [0.0, 0.25, 0.5]
    assert all(sv.schema is c._to_connect[key][0] for sv in out)


@pytest.mark.parametrize(
    "payload, expected",
    [
        ('{"n":1.0,"d":1}', [1, 1.0]),  # an int field given 1.0 truncates, as Java's intValue() does
        ('{"n":9223372036854775808,"d":1}', None),
        ('{"n":1,"d":123456789012345678901234567890}', [1, 1.2345678901234568e29]),
        ('{"n":1,"d":1e400}', [1, math.inf]),
        ('{"n":1,"d":-0.0}', [1, -0.0]),
        ('{"n":1,"d":"NaN"}', [1, math.nan]),
        ('{"n":1}', None),
        ('{"n":1,"d":2,"extra":[[[[]]]]}', [1, 2.0]),
        ('{"n":1,"d":2,"n":3}', [3, 2.0]),
        ('{"n":1,"d":"\\ud800"}', None),
        ('{"n":true,"d":2}', None),
    ],
)
def test_numbers_and_odd_payloads_read_as_before(payload, expected):
    schema = SchemaBuilder.struct().field("n", Schema.INT64).field("d", Schema.FLOAT64).build()
    first = converter().from_connect_data("t", schema, Struct(schema, {"n": 0, "d": 0.0}))
    data = first[: first.index(b',"payload":') + 11] + payload.encode() + b"}"
    for variant in (data, data.replace(b'"payload":', b'"payload": '), data[:-1] + b" }"):
        _read_both([first, variant, variant], {})
        result = outcome(lambda: converter().to_connect_batch("t", [first, variant])[1])
        if expected is None:
            assert result[0] == "error"
        else:
            assert result[0] == "ok" and same(list(result[1].value._values), expected)


# --- every inline type, exhaustively -----------------------------------------------------

PRIMITIVE_TYPES = [t for t in SchemaType if t.is_primitive and t is not SchemaType.BYTES]


def _field_variants(schema_type: SchemaType) -> list[Schema]:
    builder = SchemaBuilder(schema_type)
    default = {SchemaType.BOOLEAN: True, SchemaType.STRING: "d", SchemaType.FLOAT32: 0.5, SchemaType.FLOAT64: 0.25}.get(schema_type, 7)
    return [builder.build(), SchemaBuilder(schema_type).optional().build(), SchemaBuilder(schema_type).default_value(default).build()]


def _edges(schema_type: SchemaType) -> list[Any]:
    if schema_type in INT_RANGES:
        low, high = INT_RANGES[schema_type]
        return [low, high, low - 1, high + 1, 0, -1, 42, True, Small.ONE, 1.0, "1", None]
    if schema_type in (SchemaType.FLOAT64, SchemaType.FLOAT32):
        return [
            1e-3, 0.000999999, 0.0001, 1e7, 9999999.999, 10000000.5, -1e-3, -0.0009, -1e7, -9999999.0, 1e-300, 5e-324,
            1e300, 3.4e38, 3.5e38, 1.1754943508222875e-38, math.inf, -math.inf, math.nan, 0.0, -0.0, 1.5, 0.1, 100.0,
            Real(2.5), 1, True, "1.5", None,
        ]
    if schema_type is SchemaType.STRING:
        return ["", "ABC", "Hello World", 'a"b', "a\\b", "a\\u00e9", "é", "\x01", "\x1f", "\n\t", "\x7f", "\u2028", Text("x"), b"x", 1, None]
    return [True, False, 1, 0, "true", None]


@pytest.mark.parametrize("schema_type", PRIMITIVE_TYPES, ids=lambda t: t.value)
@pytest.mark.parametrize("replace_null_with_default", [True, False])
def test_every_inline_field_writes_as_before(schema_type, replace_null_with_default):
    for field_schema in _field_variants(schema_type):
        schema = SchemaBuilder.struct().field("before", Schema.INT8).field("x", field_schema).build()
        fast = converter(replace_null_with_default=replace_null_with_default)
        with step_by_step():
            reference = converter(replace_null_with_default=replace_null_with_default)
        for edge in _edges(schema_type):
            value = Struct._unchecked(schema, [1, edge])
            with step_by_step():
                expected = outcome(lambda: reference.from_connect_data("t", schema, value))
            for _ in range(2):  # step by step (the first time only), then compiled
                assert same_outcome(outcome(lambda: fast.from_connect_data("t", schema, value)), expected), (field_schema, edge)


READ_TEXTS = [
    "0", "-0", "1", "-1", "1.0", "1.5", "-1.5", "-0.0", "1e5", "1E+2", "0.1e1", "2.5e-3", "1e400", "-1e400", "1e-400",
    "9007199254740993", "9007199254740993.0", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "123456789012345678901234567890",
    "4.9e-324", "1.7976931348623157e308", "1.7976931348623159e308", "3.4028235e38", "3.4028236e38", "1e-50",
    "2147483647", "2147483648", "-2147483649", "32767", "32768", "127", "128", "-129", "0.999", "127.9",
    "true", "false", "null", '"x"', '"1.5"', '"NaN"', '"Infinity"', '"-Infinity"', '"inf"', '"\\ud800"', '"\\u0000"',
    '"a\\"b"', "[]", "{}", "[1]",
]


@pytest.mark.parametrize("schema_type", PRIMITIVE_TYPES, ids=lambda t: t.value)
@pytest.mark.parametrize("replace_null_with_default", [True, False])
def test_every_number_and_odd_text_reads_as_before(schema_type, replace_null_with_default):
    for field_schema in _field_variants(schema_type):
        schema = SchemaBuilder.struct().field("before", Schema.INT8).field("x", field_schema).build()
        with step_by_step():
            first = converter().from_connect_data("t", schema, Struct._unchecked(schema, [1, _edges(schema_type)[0]]))
        head = first[: first.index(b',"payload":') + 11]
        datas = [first]
        for text in READ_TEXTS:
            datas += [head + b'{"before":1,"x":' + text.encode() + b"}}", head + b'{"x":' + text.encode() + b',"before":1}}']
        config = {"replace_null_with_default": replace_null_with_default}
        fast = converter(**config)
        with step_by_step():
            reference = converter(**config)
            expected = [outcome(lambda d=d: reference.to_connect_data("t", d)) for d in datas]
        got = [("error", str(sv)) if isinstance(sv, DataError) else ("ok", sv) for sv in _each(fast, datas)]
        for data, g, e in zip(datas, got, expected):
            assert same_outcome(g, e), (field_schema, data[len(head):])


def _each(c: JsonConverter, datas: list[bytes]) -> list[Any]:
    # Each after the first in a batch of its own, so every one goes the batch's fast way.
    out = []
    for data in datas:
        try:
            out.append(c.to_connect_batch("t", [datas[0], data])[1])
        except DataError as exc:
            out.append(exc)
    return out


def test_deep_nesting_in_another_key_reads_as_before():
    schema = SchemaBuilder.struct().field("n", Schema.INT64).build()
    first = converter().from_connect_data("t", schema, Struct(schema, {"n": 1}))
    head = first[: first.index(b',"payload":') + 11]
    fast = converter()
    fast.to_connect_batch("t", [first, first])  # compiled from the next batch on
    for depth in (10, 990, 1000, 1020, 1100):
        data = head + b'{"n":1,"deep":' + b"[" * depth + b"]" * depth + b"}}"
        with step_by_step():
            expected = outcome(lambda: read_one_by_one(converter(), [first, data]))
        assert same_outcome(outcome(lambda: fast.to_connect_batch("t", [first, data])), expected)


def _variants(first: bytes) -> list[bytes]:
    head = first[: first.index(b',"payload":') + 11]
    payload = first[len(head) : -1]
    return [
        first,
        head + payload + b"]",
        head + payload + b"}x",
        head + payload + b"} ",
        head + payload[:-1] + b"}",
        b'{"schemX":' + first[10:],
        b' {"schema":' + first[10:],
        first.replace(b',"payload":', b',"payloaX":'),
        first.replace(b',"payload":', b', "payload":'),
        first.replace(b',"payload":', b',"payload":\n'),
        head + b'{"a":1,"b":"x","c":2.5}}',
        head + b"null}",
        head + b'{"a":NaN,"b":"x","c":1}}',
        head + b'{"a":1,"b":"x\x01","c":1}}',
        head + b'{"a":1,"b":"\\x","c":1}}',
        head + b'{"a":1,"b":"x","c":Infinity}}',
        first[:-1],
        bytearray(first),
        memoryview(first),
        b"",
        first.replace(b'"field":"a"', b'"field":"A"'),
        first.replace(b'"x"', b'"\xff"'),
    ]


@pytest.mark.parametrize("cache_size", [0, 1, 1000])
@pytest.mark.parametrize("with_orjson", [True, False])
def test_envelope_variants_read_as_before(cache_size, with_orjson):
    schema = SchemaBuilder.struct().field("a", Schema.INT32).field("b", Schema.STRING).field("c", Schema.FLOAT64).build()
    nested = SchemaBuilder.struct().field("a", Schema.INT32).field("s", schema).build()
    for top, value in [
        (schema, Struct(schema, {"a": 1, "b": "x", "c": 2.5})),
        (nested, Struct(nested, {"a": 1, "s": Struct(schema, {"a": 2, "b": "x", "c": 0.5})})),
    ]:
        first = converter().from_connect_data("t", top, value)
        datas = _variants(first)
        config = {"schemas_cache_size": cache_size}
        with contextlib.ExitStack() as stack:
            if not with_orjson:
                stack.enter_context(mock.patch.object(json_converter_module, "orjson", None))
            fast = converter(**config)
            got = [outcome(lambda d=d: fast.to_connect_batch("t", [first, d, d])) for d in datas]
        with step_by_step():
            reference = converter(**config)
            expected = [outcome(lambda d=d: read_one_by_one(reference, [first, d, d])) for d in datas]
        for data, g, e in zip(datas, got, expected):
            assert same_outcome(g, e), bytes(data)
            if g[0] == "ok" and e[0] == "ok":
                # Schema objects are shared (or not) as before: only cache entries are shared.
                assert [a.schema is b.schema for a in g[1] for b in g[1]] == [
                    a.schema is b.schema for a in e[1] for b in e[1]
                ], bytes(data)


@pytest.mark.parametrize("cache_size", [1, 2])
def test_cache_order_is_kept_around_records_read_one_by_one(cache_size):
    one = SchemaBuilder.struct().field("a", Schema.INT32).build()
    two = SchemaBuilder.struct().field("b", Schema.INT32).build()
    c = converter()
    a, b = c.from_connect_data("t", one, Struct(one, {"a": 1})), c.from_connect_data("t", two, Struct(two, {"b": 2}))
    for datas in ([a, memoryview(b), a], [a, bytearray(b), a, b, a], [a, a, memoryview(a), b, a]):
        got = converter(schemas_cache_size=cache_size).to_connect_batch("t", datas)
        with step_by_step():
            expected = read_one_by_one(converter(schemas_cache_size=cache_size), datas)
        assert all(map(same, got, expected))
        # Which records share schema objects shows which cache entries were evicted and read again.
        assert [x.schema is y.schema for x in got for y in got] == [x.schema is y.schema for x in expected for y in expected]


@EQUIVALENCE
@given(st.lists(st.one_of(struct_cases(), flat_cases(), st.tuples(st.none(), st.none() | json_like)), max_size=6), SETTINGS)
def test_batches_of_mixed_schemas_write_as_one_by_one(items, config):
    items = items + items[:2]  # the same schema objects again, after others
    fast = converter(**config)
    with step_by_step():
        expected = outcome(lambda: write_one_by_one(converter(**config), items))
    for _ in range(2):  # step by step, then compiled
        assert same_outcome(outcome(lambda: fast.from_connect_batch("t", items)), expected)


def test_a_schema_is_compiled_only_when_used_again():
    schema = SchemaBuilder.struct().field("n", Schema.INT64).build()
    c = converter()
    data = c.from_connect_data("t", schema, Struct(schema, {"n": 1}))
    assert c._to_json[schema][3] is True  # not compiled yet
    c.from_connect_data("t", schema, Struct(schema, {"n": 2}))
    assert c._to_json[schema][3] is False
    c.to_connect_data("t", data)
    (entry,) = c._to_connect.values()
    assert entry[3] is True
    c.to_connect_data("t", data)
    (entry,) = c._to_connect.values()
    assert entry[3] is False
    uncached = converter(schemas_cache_size=0)
    for _ in range(3):
        assert uncached.to_connect_data("t", uncached.from_connect_data("t", schema, Struct(schema, {"n": 3}))).value.get("n") == 3
