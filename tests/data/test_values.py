"""Kafka's Values text format (SimpleHeaderConverter): writing, parsing, inferring."""

from __future__ import annotations

import datetime
import decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectd.data import Date, Decimal, Schema, SchemaBuilder, SimpleHeaderConverter, Struct, Time, Timestamp
from connectd.data._text import to_float32
from connectd.data.schema import INT_RANGES, SchemaType
from connectd.data.values import convert_to_string, infer_schema, parse_string

UTC = datetime.timezone.utc
D = decimal.Decimal


def array(schema):
    return SchemaBuilder.array(schema).build()


def mapping(key, value):
    return SchemaBuilder.map(key, value).build()


PARSED = [
    ("null", None, None),
    ("true", Schema.BOOLEAN, True),
    ("false", Schema.BOOLEAN, False),
    ("true}", Schema.STRING, "true}"),
    ("1", Schema.INT8, 1),
    ("-128", Schema.INT8, -128),
    ("128", Schema.INT16, 128),
    ("40000", Schema.INT32, 40000),
    ("5000000000", Schema.INT64, 5000000000),
    ("1.0", Schema.INT8, 1),
    ("1E+3", Schema.INT16, 1000),
    ("1.5", Schema.FLOAT32, 1.5),
    ("0.1", Schema.FLOAT32, to_float32(0.1)),
    ("1e39", Schema.FLOAT64, 1e39),
    ("12345678901234567890", Decimal.schema(0), D("12345678901234567890")),
    ("hello world", Schema.STRING, "hello world"),
    ("  ", Schema.STRING, "  "),
    ("", Schema.STRING, ""),
    ("1,2", Schema.STRING, "1,2"),
    ("[1,2", Schema.STRING, "[1,2"),
    ("[1,2,3]", array(Schema.INT8), [1, 2, 3]),
    ("[1, 1000]", array(Schema.INT16), [1, 1000]),
    ("[1,2.5]", array(Schema.FLOAT32), [1.0, 2.5]),
    ("[1,null]", array(Schema.OPTIONAL_INT8), [1, None]),
    ('["a",1]', None, ["a", 1]),
    ("[]", None, []),
    ('["a","b\\"c"]', array(Schema.STRING), ["a", 'b"c']),
    ('{"a":1,"b":2}', mapping(Schema.STRING, Schema.INT8), {"a": 1, "b": 2}),
    ("{1:true, 2:false}", mapping(Schema.INT8, Schema.BOOLEAN), {1: True, 2: False}),
    ('{"a":[1,2]}', mapping(Schema.STRING, array(Schema.INT8)), {"a": [1, 2]}),
    ("{}", None, {}),
    ("2024-05-01", Date.SCHEMA, datetime.date(2024, 5, 1)),
    ("2024-13-01", Schema.STRING, "2024-13-01"),
    ("13:45:00.123Z", Time.SCHEMA, datetime.time(13, 45, 0, 123000)),
    ("2024-05-01T13:45:00.123Z", Timestamp.SCHEMA, datetime.datetime(2024, 5, 1, 13, 45, 0, 123000, UTC)),
    ('["2024-05-01"]', array(Date.SCHEMA), [datetime.date(2024, 5, 1)]),
    ("[2024-05-01T13:45:00.123Z]", array(Timestamp.SCHEMA), [datetime.datetime(2024, 5, 1, 13, 45, 0, 123000, UTC)]),
]


@pytest.mark.parametrize("text, schema, value", PARSED)
def test_parse(text, schema, value):
    result = parse_string(text)
    assert (result.schema, result.value) == (schema, value)


@pytest.mark.parametrize(
    "schema, value, text",
    [
        (None, "plain", "plain"),
        (None, True, "true"),
        (None, 1.0, "1.0"),
        (Schema.FLOAT32, to_float32(0.1), "0.1"),
        (None, 1e-5, "1.0E-5"),
        (None, D("1.50"), "1.50"),
        (None, b"hi", "aGk="),
        (None, [b"hi", None], '["aGk=",null]'),
        (None, ["a", 'q"\\'], '["a","q\\"\\\\"]'),
        (None, {"k": [1, 2], "j": {}}, '{"k":[1,2],"j":{}}'),
        (None, datetime.time(1, 2, 3, 4000), "01:02:03.004Z"),
        # the format follows the instant, as Kafka's Values.dateFormatFor: before 1970-01-02 a time
        (None, datetime.datetime(5, 1, 2, 3, tzinfo=UTC), "03:00:00.000Z"),
        (None, datetime.date(1970, 1, 1), "00:00:00.000Z"),
        (None, datetime.datetime(1970, 1, 1, 5, tzinfo=UTC), "05:00:00.000Z"),
        (None, datetime.datetime(2024, 5, 1, tzinfo=UTC), "2024-05-01"),
        (None, datetime.datetime(2024, 5, 1, 0, 0, 0, 1000, tzinfo=UTC), "2024-05-01T00:00:00.001Z"),
        (None, datetime.date(2024, 5, 1), "2024-05-01"),
    ],
)
def test_convert_to_string(schema, value, text):
    assert convert_to_string(schema, value) == text


def test_struct_text_uses_defaults_and_reads_back_as_a_map():
    schema = SchemaBuilder.struct().field("a", Schema.INT8).field("b", SchemaBuilder.string().default_value("d").build()).build()
    text = convert_to_string(schema, Struct(schema, {"a": 1}))
    assert text == '{"a":1,"b":"d"}'
    assert parse_string(text).value == {"a": 1, "b": "d"}


def test_infer_schema():
    assert infer_schema("x") == Schema.STRING
    assert infer_schema(1) == Schema.INT64
    assert infer_schema([1, None]) == array(Schema.OPTIONAL_INT64)
    assert infer_schema({"a": 1.5}) == mapping(Schema.STRING, Schema.FLOAT64)
    assert infer_schema([1, "a"]) is None
    assert infer_schema([]) is None
    assert infer_schema(D("1.25")) == Decimal.schema(2)
    assert infer_schema(datetime.datetime(2024, 1, 1)) == Timestamp.SCHEMA
    assert infer_schema(object()) is None


# --- properties: what survives a trip through the text format -------------------------------

header = SimpleHeaderConverter()


def round_trip(schema, value):
    return header.to_connect_header("t", "h", header.from_connect_header("t", "h", schema, value))


@settings(max_examples=150, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_integers_come_back_in_the_smallest_type(number):
    result = round_trip(Schema.INT64, number)
    assert result.value == number
    smallest = next(t for t in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64)
                    if INT_RANGES[t][0] <= number <= INT_RANGES[t][1])
    assert result.schema.type is smallest


@settings(max_examples=150, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float32_values_come_back_equal(number):
    # "9.156461E7" is a whole number, so it reads back as int32 91564610 (as in
    # Kafka); as a float32 that is the same value.
    result = round_trip(Schema.FLOAT32, number)
    assert to_float32(float(result.value)) == number
    assert result.schema.type in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64, SchemaType.FLOAT32)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=12).filter(lambda s: len(s) not in (10, 13, 24)), min_size=1, max_size=5))
def test_lists_of_any_strings_come_back(strings):
    result = round_trip(array(Schema.STRING), strings)
    assert result == (array(Schema.STRING), strings)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=8).filter(lambda s: len(s) != 10), st.integers(-100, 100), min_size=1, max_size=4))
def test_string_maps_come_back(mapping_):
    result = round_trip(mapping(Schema.STRING, Schema.INT8), mapping_)
    assert result == (mapping(Schema.STRING, Schema.INT8), mapping_)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(categories=("L",)), min_size=1).filter(lambda s: s not in ("true", "false", "null")))
def test_words_stay_strings(word):
    assert round_trip(Schema.STRING, word) == (Schema.STRING, word)


@settings(max_examples=100, deadline=None)
@given(st.datetimes(min_value=datetime.datetime(1000, 1, 1), timezones=st.just(UTC)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)))
def test_timestamps_come_back(moment):
    # As in Kafka, a timestamp at midnight is written as a date, and anything before 1970-01-02 as a time.
    if moment.time() != datetime.time(0) and moment >= datetime.datetime(1970, 1, 2, tzinfo=UTC):
        assert round_trip(Timestamp.SCHEMA, moment) == (Timestamp.SCHEMA, moment)
    if moment.date() >= datetime.date(1970, 1, 2):
        assert round_trip(Date.SCHEMA, moment.date()) == (Date.SCHEMA, moment.date())
    assert round_trip(Time.SCHEMA, moment.timetz().replace(tzinfo=None)) == (Time.SCHEMA, moment.time())


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=30))
def test_parsing_never_fails(text):
    result = header.to_connect_header("t", "h", text.encode())
    if result.schema is not None:
        result.schema.validate_value(result.value)
