"""Kafka's ConnectHeadersTest, ConnectHeaderTest and SimpleHeaderConverterTest, case by case.

Not ported: the typed adders (addBoolean, addInt, …: Python has one ``add``) and hashCode (Headers are
mutable and unhashable in Python). Kafka's ``apply(key, transform)`` is ``apply(transform, key)`` here.
"""

from __future__ import annotations

import datetime
import decimal

import pytest

from connectd.data import (
    DataError,
    Header,
    Headers,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    SchemaType,
    SimpleHeaderConverter,
    Struct,
    convert_to_date,
    convert_to_decimal,
    convert_to_double,
    convert_to_integer,
    convert_to_long,
    convert_to_time,
    convert_to_timestamp,
)
from connectd.data.logical import Date, Decimal, Time, Timestamp

KEY, OTHER = "k1", "other key"


def populate(headers: Headers) -> Headers:
    return (headers.add(KEY, True, Schema.BOOLEAN).add(KEY, 0, Schema.INT32).add(OTHER, "other value", Schema.STRING)
            .add(KEY, None, Schema.OPTIONAL_STRING).add(KEY, "third", Schema.STRING))


def only(headers: Headers, key: str) -> Header:
    found = headers.all_with_name(key)
    assert len(found) == 1
    return found[0]


# --- ConnectHeadersTest ---------------------------------------------------------------------


def test_should_not_allow_null_key():
    with pytest.raises(DataError):
        Headers().add(None, "value", Schema.STRING)


def test_should_be_equals():
    headers, other = Headers(), Headers()
    assert headers == other
    populate(headers)
    assert headers != other
    populate(other)
    assert headers == other
    headers.add("wow", "some value", Schema.STRING)
    assert headers != other


def test_should_have_to_string():
    assert repr(Headers()) and repr(populate(Headers()))


def test_should_retain_latest_when_empty():
    headers = Headers().retain_latest(OTHER).retain_latest(KEY).retain_latest()
    assert len(headers) == 0


def test_should_add_multiple_headers_with_same_key_and_retain_latest():
    headers = populate(Headers())
    assert headers.last_with_name(KEY) == Header(KEY, Schema.STRING, "third")
    assert headers.all_with_name(KEY) == [
        Header(KEY, Schema.BOOLEAN, True), Header(KEY, Schema.INT32, 0),
        Header(KEY, Schema.OPTIONAL_STRING, None), Header(KEY, Schema.STRING, "third"),
    ]
    assert only(headers, OTHER) == Header(OTHER, Schema.STRING, "other value")
    headers.retain_latest(OTHER)
    assert only(headers, OTHER) == Header(OTHER, Schema.STRING, "other value")
    headers.retain_latest(KEY)
    assert only(headers, KEY) == Header(KEY, Schema.STRING, "third")
    headers.retain_latest()
    assert only(headers, OTHER) == Header(OTHER, Schema.STRING, "other value")
    assert only(headers, KEY) == Header(KEY, Schema.STRING, "third")


def test_should_add_headers_with_primitive_values():
    headers = Headers()
    for schema, value in [(Schema.BOOLEAN, True), (Schema.INT8, 0), (Schema.INT16, 0), (Schema.INT32, 0), (Schema.INT64, 0),
                          (Schema.FLOAT32, 1.0), (Schema.FLOAT64, 1.0), (Schema.OPTIONAL_STRING, None), (Schema.STRING, "third")]:
        headers.add(KEY, value, schema)
    assert len(headers.all_with_name(KEY)) == 9


def test_should_add_headers_with_null_object_values_with_optional_schema():
    headers = Headers()
    for key, schema, value in [("k1", Schema.BOOLEAN, True), ("k2", Schema.STRING, "hello"), ("k3", Schema.OPTIONAL_STRING, None)]:
        headers.add(key, value, schema)
        assert headers.last_with_name(key) == Header(key, schema, value)


@pytest.mark.parametrize(("schema", "value"), [
    (Schema.BOOLEAN, None), (Schema.STRING, None),               # shouldNotAddHeadersWithNullObjectValuesWithNonOptionalSchema
    (Schema.BOOLEAN, "wrong"), (Schema.OPTIONAL_STRING, 0),      # shouldNotAddHeadersWithObjectValuesAndMismatchedSchema
    (SchemaBuilder.int8().default_value(1).build(), None),       # a default does not make null fit (checkSchemaMatches)
])
def test_should_not_add_headers_that_do_not_fit(schema, value):
    with pytest.raises(DataError):
        Headers().add("k1", value, schema)


def test_should_remove_all_headers_with_same_key():
    assert not Headers().remove(KEY).all_with_name(KEY)
    headers = populate(Headers())
    assert Header(KEY, Schema.INT32, 0) in headers.all_with_name(KEY)
    headers.remove(KEY)
    assert not headers.all_with_name(KEY)
    assert only(headers, OTHER) == Header(OTHER, Schema.STRING, "other value")


def test_should_remove_all_headers():
    headers = populate(Headers()).clear()
    assert not headers.all_with_name(KEY) and not headers.all_with_name(OTHER)
    assert len(headers) == 0


@pytest.mark.parametrize(("schema", "value"), [
    # shouldValidateBuildInTypes
    (Schema.OPTIONAL_BOOLEAN, None), (Schema.OPTIONAL_BYTES, None), (Schema.OPTIONAL_INT8, None),
    (Schema.OPTIONAL_INT16, None), (Schema.OPTIONAL_INT32, None), (Schema.OPTIONAL_INT64, None),
    (Schema.OPTIONAL_FLOAT32, None), (Schema.OPTIONAL_FLOAT64, None), (Schema.OPTIONAL_STRING, None),
    (Schema.BOOLEAN, True), (Schema.BYTES, b""), (Schema.INT8, 0), (Schema.INT16, 0), (Schema.INT32, 0), (Schema.INT64, 0),
    (Schema.FLOAT32, 1.0), (Schema.FLOAT64, 1.0), (Schema.STRING, "value"),
    (SchemaBuilder.array(Schema.STRING).build(), []), (SchemaBuilder.array(Schema.STRING).build(), ["value"]),
    (SchemaBuilder.map(Schema.STRING, Schema.INT32).build(), {}),
    (SchemaBuilder.map(Schema.STRING, Schema.INT32).build(), {"a": 0}),
    (SchemaBuilder.struct().build(), Struct(SchemaBuilder.struct().build())),
    # shouldValidateLogicalTypes
    (Decimal.schema(3), decimal.Decimal("100.000")), (Time.SCHEMA, datetime.time(12)),
    (Date.SCHEMA, datetime.date(2024, 5, 1)), (Timestamp.SCHEMA, datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)),
])
def test_should_validate_matching_values(schema, value):
    assert Headers().add(KEY, value, schema).last_with_name(KEY) == Header(KEY, schema, value)


def test_should_validate_struct_header():
    schema = SchemaBuilder.struct().field("foo", Schema.OPTIONAL_BOOLEAN).field("bar", Schema.STRING).build()
    Headers().add(KEY, Struct(schema).put("foo", True).put("bar", "v"), schema)


@pytest.mark.parametrize(("schema", "value"), [
    # shouldNotValidateNullValuesWithBuiltInTypes
    (Schema.BOOLEAN, None), (Schema.BYTES, None), (Schema.INT8, None), (Schema.INT16, None), (Schema.INT32, None),
    (Schema.INT64, None), (Schema.FLOAT32, None), (Schema.FLOAT64, None), (Schema.STRING, None),
    (SchemaBuilder.array(Schema.STRING).build(), None), (SchemaBuilder.map(Schema.STRING, Schema.INT32).build(), None),
    (SchemaBuilder.struct().build(), None),
    # shouldNotValidateMismatchedValuesWithBuiltInTypes (Java's int-versus-long cases have no Python equivalent)
    (Schema.BOOLEAN, 0), (Schema.BYTES, "oops"), (Schema.INT8, 1.0), (Schema.INT16, 1.0), (Schema.INT64, 1.0),
    (Schema.FLOAT32, 1), (Schema.FLOAT64, 1), (Schema.STRING, True),
    (SchemaBuilder.array(Schema.STRING).build(), "value"), (SchemaBuilder.map(Schema.STRING, Schema.INT32).build(), "value"),
    (SchemaBuilder.struct().build(), []),
])
def test_should_not_validate_mismatched_values(schema, value):
    with pytest.raises(DataError):
        Headers().add(KEY, value, schema)


def test_should_duplicate_and_always_return_equivalent_but_different_object():
    headers = populate(Headers())
    assert headers.duplicate() == headers
    assert headers.duplicate() is not headers


def append_to_key(suffix: str):
    return lambda header: header.rename(header.key + suffix)


def remove_headers_of_type(schema_type: SchemaType):
    return lambda header: None if header.schema is not None and header.schema.type is schema_type else header


def test_should_transform_headers_when_empty():
    headers = Headers().apply(append_to_key("-suffix")).apply(append_to_key("-suffix"), KEY)
    assert len(headers) == 0


def test_should_transform_headers():
    headers = populate(Headers())
    assert len(headers) == 5
    assert headers.apply(append_to_key("-suffix")) is headers
    assert len(headers) == 5
    assert not headers.all_with_name(KEY) and not headers.all_with_name(OTHER)
    alt = KEY + "-suffix"
    assert headers.all_with_name(alt) == [
        Header(alt, Schema.BOOLEAN, True), Header(alt, Schema.INT32, 0),
        Header(alt, Schema.OPTIONAL_STRING, None), Header(alt, Schema.STRING, "third"),
    ]
    assert only(headers, OTHER + "-suffix") == Header(OTHER + "-suffix", Schema.STRING, "other value")


def test_should_transform_headers_with_key():
    headers = populate(Headers())
    headers.apply(append_to_key("-suffix"), KEY)
    assert len(headers) == 5
    assert not headers.all_with_name(KEY)
    alt = KEY + "-suffix"
    assert headers.all_with_name(alt) == [
        Header(alt, Schema.BOOLEAN, True), Header(alt, Schema.INT32, 0),
        Header(alt, Schema.OPTIONAL_STRING, None), Header(alt, Schema.STRING, "third"),
    ]
    assert only(headers, OTHER) == Header(OTHER, Schema.STRING, "other value")
    assert [h.key for h in headers] == [alt, alt, OTHER, alt, alt]  # order is kept


def test_should_transform_and_remove_headers():
    headers = populate(Headers())
    headers.apply(remove_headers_of_type(SchemaType.STRING), key=KEY)
    assert len(headers) == 3
    assert headers.all_with_name(KEY) == [Header(KEY, Schema.BOOLEAN, True), Header(KEY, Schema.INT32, 0)]
    assert headers.last_with_name(KEY) == Header(KEY, Schema.INT32, 0)
    assert only(headers, OTHER) == Header(OTHER, Schema.STRING, "other value")
    headers.apply(remove_headers_of_type(SchemaType.STRING))
    assert len(headers) == 2
    assert not headers.all_with_name(OTHER)
    assert headers.all_with_name(KEY) == [Header(KEY, Schema.BOOLEAN, True), Header(KEY, Schema.INT32, 0)]


def test_transform_results_are_checked_and_all_or_nothing():
    # connectd checks each result as add() does (Kafka stores it unchecked), and changes nothing on error.
    headers = populate(Headers())
    before = headers.copy()
    with pytest.raises(DataError):
        headers.apply(lambda h: h.with_value(Schema.INT8, "not a number") if h.key == OTHER else h)
    with pytest.raises(DataError):
        headers.apply(lambda h: "not a header")
    with pytest.raises(ZeroDivisionError):
        headers.apply(lambda h: h if h.key == KEY else 1 / 0)
    assert headers == before
    with pytest.raises(DataError):
        headers.apply(append_to_key("x"), key=5)
    with pytest.raises(TypeError, match="transform first"):
        headers.apply(KEY, append_to_key("x"))  # Kafka's argument order


def test_transform_may_return_plain_tuples_and_values_via_with_value():
    headers = Headers().add("n", "5", Schema.STRING)
    headers.apply(lambda h: h.with_value(Schema.INT32, convert_to_integer(h.schema, h.value)))
    assert only(headers, "n") == Header("n", Schema.INT32, 5)
    headers.apply(lambda h: ("m", h.schema, h.value + 1))
    assert only(headers, "m") == Header("m", Schema.INT32, 6)
    assert isinstance(only(headers, "m"), Header)


EPOCH_PLUS_TEN_THOUSAND_DAYS = datetime.date(1970, 1, 1) + datetime.timedelta(days=10_000)
EPOCH_PLUS_TEN_THOUSAND_MILLIS = datetime.datetime(1970, 1, 1, 0, 0, 10, tzinfo=datetime.timezone.utc)


def test_should_add_date():
    headers = Headers().add(KEY, EPOCH_PLUS_TEN_THOUSAND_DAYS, Date.SCHEMA)
    header = headers.last_with_name(KEY)
    assert convert_to_integer(header.schema, header.value) == 10_000
    assert convert_to_date(header.schema, header.value) is EPOCH_PLUS_TEN_THOUSAND_DAYS
    header = headers.add(OTHER, 10_000, Schema.INT32).last_with_name(OTHER)
    assert convert_to_integer(header.schema, header.value) == 10_000
    assert convert_to_date(header.schema, header.value) == EPOCH_PLUS_TEN_THOUSAND_DAYS


def test_should_add_time():
    value = EPOCH_PLUS_TEN_THOUSAND_MILLIS.time()
    headers = Headers().add(KEY, value, Time.SCHEMA)
    header = headers.last_with_name(KEY)
    assert convert_to_long(header.schema, header.value) == 10_000
    assert convert_to_time(header.schema, header.value) is value
    header = headers.add(OTHER, 10_000, Schema.INT64).last_with_name(OTHER)
    assert convert_to_long(header.schema, header.value) == 10_000
    assert convert_to_time(header.schema, header.value) == value


def test_should_add_timestamp():
    value = EPOCH_PLUS_TEN_THOUSAND_MILLIS
    headers = Headers().add(KEY, value, Timestamp.SCHEMA)
    header = headers.last_with_name(KEY)
    assert convert_to_long(header.schema, header.value) == 10_000
    assert convert_to_timestamp(header.schema, header.value) is value
    header = headers.add(OTHER, 10_000, Schema.INT64).last_with_name(OTHER)
    assert convert_to_long(header.schema, header.value) == 10_000
    assert convert_to_timestamp(header.schema, header.value) == value


def test_should_add_decimal():
    value = decimal.Decimal("3.038573478e+3")
    scale = -value.as_tuple().exponent
    header = Headers().add(KEY, value, Decimal.schema(scale)).last_with_name(KEY)
    assert convert_to_double(header.schema, header.value) == pytest.approx(float(value), abs=0.00001)
    assert convert_to_decimal(header.schema, header.value, scale) == value
    truncated = value.quantize(decimal.Decimal("0.001"), rounding=decimal.ROUND_DOWN)
    converted = convert_to_decimal(header.schema, header.value, 3)
    assert converted.quantize(decimal.Decimal("0.001"), rounding=decimal.ROUND_DOWN) == truncated


# --- ConnectHeaderTest ----------------------------------------------------------------------


def test_header_allows_null_values_and_null_schema():
    assert Headers().add(KEY, None, Schema.OPTIONAL_STRING).last_with_name(KEY) == Header(KEY, Schema.OPTIONAL_STRING, None)
    assert Headers().add(KEY, None).last_with_name(KEY) == Header(KEY, None, None)
    assert Headers().add(KEY, "non-null value").last_with_name(KEY) == Header(KEY, None, "non-null value")


def test_header_gets_schema_from_struct():
    schema = SchemaBuilder.struct().field("foo", Schema.STRING).field("bar", Schema.INT32).build()
    value = Struct(schema).put("foo", "value").put("bar", 100)
    header = Headers().add(KEY, value).last_with_name(KEY)
    assert header.schema is schema
    assert header.value is value


def test_header_satisfies_equals():
    h1, h2 = Header(KEY, Schema.STRING, "non-null value"), Header(KEY, Schema.STRING, "non-null value")
    assert h1 == h2 and hash(h1) == hash(h2)
    assert Header(KEY, Schema.INT8, 100) != h2


# --- SimpleHeaderConverterTest --------------------------------------------------------------

STRING_MAP = {"foo": "123", "bar": "baz"}
STRING_MAP_SCHEMA = SchemaBuilder.map(Schema.STRING, Schema.STRING).build()
STRING_SHORT_MAP = {"foo": 12345, "bar": 0, "baz": -4321}
STRING_SHORT_MAP_SCHEMA = SchemaBuilder.map(Schema.STRING, Schema.INT16).build()
STRING_INT_MAP = {"foo": 1234567890, "bar": 0, "baz": -987654321}
STRING_INT_MAP_SCHEMA = SchemaBuilder.map(Schema.STRING, Schema.INT32).build()
INT_LIST, INT_LIST_SCHEMA = [1234567890, -987654321], SchemaBuilder.array(Schema.INT32).build()
STRING_LIST, STRING_LIST_SCHEMA = ["foo", "bar"], SchemaBuilder.array(Schema.STRING).build()


def round_trip(schema, value) -> tuple[bytes | None, SchemaAndValue]:
    converter = SimpleHeaderConverter()
    serialized = converter.from_connect_header("topic", "header", schema, value)
    return serialized, converter.to_connect_header("topic", "header", serialized)


@pytest.mark.parametrize("schema", [Schema.STRING, Schema.OPTIONAL_STRING])
def test_should_convert_null_value(schema):
    assert round_trip(schema, None) == (None, SchemaAndValue(None, None))


@pytest.mark.parametrize(("schema", "value"), [
    (Schema.STRING, "simple"),
    (Schema.STRING, ""),
    (Schema.STRING, 'three"blind\\"mice'),
    (Schema.STRING, "string with delimiters: <>?,./\\=+-!@#$%^&*(){}[]|;':"),
    (STRING_MAP_SCHEMA, STRING_MAP),
    (STRING_SHORT_MAP_SCHEMA, STRING_SHORT_MAP),
    (STRING_INT_MAP_SCHEMA, STRING_INT_MAP),
    (STRING_LIST_SCHEMA, STRING_LIST),
    (INT_LIST_SCHEMA, INT_LIST),
])
def test_round_trip(schema, value):
    serialized, result = round_trip(schema, value)
    assert serialized is not None
    assert result == SchemaAndValue(schema, value)
    serialized_again, result_again = round_trip(result.schema, result.value)
    assert result_again == result and serialized_again == serialized


@pytest.mark.parametrize(("text", "schema", "value"), [
    ('{"foo":"123","bar":"baz"}', STRING_MAP_SCHEMA, STRING_MAP),
    ('{ "foo" : "123", \n"bar" : "baz" } ', STRING_MAP_SCHEMA, STRING_MAP),
    ('{"foo":12345,"bar":0,"baz":-4321}', STRING_SHORT_MAP_SCHEMA, STRING_SHORT_MAP),
    (' { "foo" :  12345 , "bar" : 0,  "baz" : -4321 }  ', STRING_SHORT_MAP_SCHEMA, STRING_SHORT_MAP),
    ('{"foo":1234567890,"bar":0,"baz":-987654321}', STRING_INT_MAP_SCHEMA, STRING_INT_MAP),
    (' { "foo" :  1234567890 , "bar" : 0,  "baz" : -987654321 }  ', STRING_INT_MAP_SCHEMA, STRING_INT_MAP),
])
def test_should_parse_string_of_map(text, schema, value):
    assert round_trip(Schema.STRING, text)[1] == SchemaAndValue(schema, value)


@pytest.mark.parametrize("value", [
    {"foo": "bar", "baz": 3456},  # shouldConvertMapWithStringKeysAndMixedValuesToMap
    ["foo", 13344],               # shouldConvertListWithMixedValuesToListWithoutSchema
    {},                           # shouldConvertEmptyMapToMap
    [],                           # shouldConvertEmptyListToList
])
def test_mixed_or_empty_collections(value):
    # Kafka gives a map or array schema without key or element schemas; connectd's schemas always have
    # them, so it gives no schema (docs/converters.md, "where connectd differs").
    assert round_trip(None, value)[1] == SchemaAndValue(None, value)


# --- the fast paths for plain strings and integers give what the general parser gives ----------


@pytest.mark.parametrize(("text", "expected"), [
    ("42", SchemaAndValue(Schema.INT8, 42)),
    ("-129", SchemaAndValue(Schema.INT16, -129)),
    ("0012", SchemaAndValue(Schema.INT8, 12)),
    ("2147483648", SchemaAndValue(Schema.INT64, 2147483648)),
    ("9223372036854775808", SchemaAndValue(Decimal.schema(0), decimal.Decimal("9223372036854775808"))),
    ("abc-123", SchemaAndValue(Schema.STRING, "abc-123")),
    ("orders ", SchemaAndValue(Schema.STRING, "orders ")),
    (" 42", SchemaAndValue(Schema.INT8, 42)),
    ("true", SchemaAndValue(Schema.BOOLEAN, True)),
    ("true ", SchemaAndValue(Schema.BOOLEAN, True)),
    ("null", SchemaAndValue(None, None)),
    ("2024-05-01", SchemaAndValue(Date.SCHEMA, datetime.date(2024, 5, 1))),
])
def test_simple_header_converter_reads_common_texts(text, expected):
    read = SimpleHeaderConverter().to_connect_header("topic", "header", text.encode())
    assert read == expected
    assert type(read.value) is type(expected.value)


@pytest.mark.parametrize(("schema", "value", "text"), [
    (Schema.STRING, "a:b", b"a:b"), (None, "é", "é".encode()), (Schema.INT64, -5, b"-5"), (None, 2**70, b"1180591620717411303424"),
])
def test_simple_header_converter_writes_common_values(schema, value, text):
    assert SimpleHeaderConverter().from_connect_header("topic", "header", schema, value) == text
