"""Kafka's ValuesTest, case by case: parseString, convertToString (escaping), inferSchema and convertTo*.

Not ported: the Parser's token-level cases (an internal class) and Java-type cases (Byte vs Short,
ByteBuffer is bytes here). Where connectd reads a text or converts a value differently on purpose
(docs/converters.md, "where connectd differs"), the case asserts connectd's result and says Kafka's.
"""

from __future__ import annotations

import datetime
import decimal

import pytest

from connectd.data import (
    DataError,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    SchemaType,
    Struct,
    convert_to_boolean,
    convert_to_byte,
    convert_to_date,
    convert_to_decimal,
    convert_to_double,
    convert_to_float,
    convert_to_integer,
    convert_to_list,
    convert_to_long,
    convert_to_map,
    convert_to_short,
    convert_to_string,
    convert_to_struct,
    convert_to_time,
    convert_to_timestamp,
    infer_schema,
    parse_string,
)
from connectd.data._text import to_float32
from connectd.data.logical import Date, Decimal, Time, Timestamp

UTC = datetime.timezone.utc
WHITESPACE = "\n \t \t\n"
D = decimal.Decimal
LONG_MAX, LONG_MIN = 2**63 - 1, -(2**63)
TS1 = datetime.datetime(2019, 8, 23, 14, 34, 54, 346000, tzinfo=UTC)


def array(element):
    return SchemaBuilder.array(element).build()


def map_(key, value):
    return SchemaBuilder.map(key, value).build()


@pytest.mark.parametrize(("text", "expected"), [
    (None, SchemaAndValue.NULL),
    ("", SchemaAndValue(Schema.STRING, "")),
    (bytes([0xEF, 0xBF, 0xBF]).decode(), SchemaAndValue(Schema.STRING, "\uffff")),  # shouldNotEncounterInfiniteLoop
    ("{foo: 3}", SchemaAndValue(Schema.STRING, "{foo: 3}")),
    ("{3: foo}", SchemaAndValue(Schema.STRING, "{3: foo}")),
    ("[foo]", SchemaAndValue(Schema.STRING, "[foo]")),
    ("null=", SchemaAndValue(Schema.STRING, "null=")),
    ("true}", SchemaAndValue(Schema.STRING, "true}")),
    ("false]", SchemaAndValue(Schema.STRING, "false]")),
    (WHITESPACE + "true" + WHITESPACE, SchemaAndValue(Schema.BOOLEAN, True)),
    (WHITESPACE + "false" + WHITESPACE, SchemaAndValue(Schema.BOOLEAN, False)),
    (WHITESPACE + "null" + WHITESPACE, SchemaAndValue.NULL),  # Kafka returns null itself
    ("null", SchemaAndValue.NULL),
    ("[true, false]", SchemaAndValue(array(Schema.BOOLEAN), [True, False])),
    ("{true: false, false: true}", SchemaAndValue(map_(Schema.BOOLEAN, Schema.BOOLEAN), {True: False, False: True})),
    ("{6:9 4:20}", SchemaAndValue(Schema.STRING, "{6:9 4:20}")),
    ("[0 1 2]", SchemaAndValue(Schema.STRING, "[0 1 2]")),
    ("{null: 3}", SchemaAndValue(Schema.STRING, "{null: 3}")),
    ("[1, 2, 3,,,]", SchemaAndValue(Schema.STRING, "[1, 2, 3,,,]")),
    # shouldConvertStringOfListWithOnlyNumericElementTypesIntoListOfLargestNumericType, …ToFloat, …ToDouble
    ("[1, 2, 32768]", SchemaAndValue(array(Schema.INT32), [1, 2, 32768])),
    ("[1, 2, 3.4028235E38]", SchemaAndValue(array(Schema.FLOAT32), [1.0, 2.0, to_float32(3.4028235e38)])),
    ("[1, 2, 1.7976931348623157E308]", SchemaAndValue(array(Schema.FLOAT64), [1.0, 2.0, 1.7976931348623157e308])),
    # temporal values, bare, escaped and embedded
    ("2019-08-23T14:34:54.346Z", SchemaAndValue(Timestamp.SCHEMA, TS1)),
    ("2019-08-23", SchemaAndValue(Date.SCHEMA, datetime.date(2019, 8, 23))),
    ("14:34:54.346Z", SchemaAndValue(Time.SCHEMA, datetime.time(14, 34, 54, 346000))),
    ("2019-08-23T14\\:34\\:54.346Z", SchemaAndValue(Timestamp.SCHEMA, TS1)),
    ("14\\:34\\:54.346Z", SchemaAndValue(Time.SCHEMA, datetime.time(14, 34, 54, 346000))),
    ("[2019-08-23]", SchemaAndValue(array(Date.SCHEMA), [datetime.date(2019, 8, 23)])),
    ("[14:34:54.346Z]", SchemaAndValue(array(Time.SCHEMA), [datetime.time(14, 34, 54, 346000)])),
    ("[2019-08-23T14:34:54.346Z]", SchemaAndValue(array(Timestamp.SCHEMA), [TS1])),
    ("[2019-08-23T14:34:54.346Z,2019-01-23T15:12:34.567Z,   2019-04-23T19:12:34.567Z]",
     SchemaAndValue(array(Timestamp.SCHEMA), [TS1, datetime.datetime(2019, 1, 23, 15, 12, 34, 567000, tzinfo=UTC),
                                              datetime.datetime(2019, 4, 23, 19, 12, 34, 567000, tzinfo=UTC)])),
    ('{"k1":"14:34:54.346Z"}', SchemaAndValue(map_(Schema.STRING, Time.SCHEMA), {"k1": datetime.time(14, 34, 54, 346000)})),
    ('{"k1":14:34:54.346Z}', SchemaAndValue(map_(Schema.STRING, Time.SCHEMA), {"k1": datetime.time(14, 34, 54, 346000)})),
    # shouldParseArrayOfOnlyDecimals, shouldParseBigIntegerAsDecimalWithZeroScale
    ("[9223372036854775808, -9223372036854775809]",
     SchemaAndValue(array(Decimal.schema(0)), [D(LONG_MAX + 1), D(LONG_MIN - 1)])),
    (str(LONG_MAX + 1), SchemaAndValue(Decimal.schema(0), D(LONG_MAX + 1))),
    (str(LONG_MIN - 1), SchemaAndValue(Decimal.schema(0), D(LONG_MIN - 1))),
    # shouldParseByteAsInt8 … shouldParseDoubleAsFloat64
    ("127", SchemaAndValue(Schema.INT8, 127)), ("-128", SchemaAndValue(Schema.INT8, -128)),
    ("32767", SchemaAndValue(Schema.INT16, 32767)), ("-32768", SchemaAndValue(Schema.INT16, -32768)),
    ("2147483647", SchemaAndValue(Schema.INT32, 2**31 - 1)), ("-2147483648", SchemaAndValue(Schema.INT32, -(2**31))),
    (str(LONG_MAX), SchemaAndValue(Schema.INT64, LONG_MAX)), (str(LONG_MIN), SchemaAndValue(Schema.INT64, LONG_MIN)),
    ("3.4028235E38", SchemaAndValue(Schema.FLOAT32, to_float32(3.4028235e38))),
    ("-3.4028235E38", SchemaAndValue(Schema.FLOAT32, -to_float32(3.4028235e38))),
    ("1.7976931348623157E308", SchemaAndValue(Schema.FLOAT64, 1.7976931348623157e308)),
    ("-1.7976931348623157E308", SchemaAndValue(Schema.FLOAT64, -1.7976931348623157e308)),
    # shouldParseFractionalPartsAsIntegerWhenNoFractionalPart
    ("1.0", SchemaAndValue(Schema.INT8, 1)), ("1.1", SchemaAndValue(Schema.FLOAT32, to_float32(1.1))),
    ("300.0", SchemaAndValue(Schema.INT16, 300)), ("300.01", SchemaAndValue(Schema.FLOAT32, to_float32(300.01))),
    ("66000.0", SchemaAndValue(Schema.INT32, 66000)), ("66000.0008", SchemaAndValue(Schema.FLOAT32, to_float32(66000.0008))),
    # shouldParseStringsWithoutDelimiters, …WithEscapedDelimiters, …WithSingleDelimiter: they stay strings
    ("  ", SchemaAndValue(Schema.STRING, "  ")), ("simple string", SchemaAndValue(Schema.STRING, "simple string")),
    ("'simple' string", SchemaAndValue(Schema.STRING, "'simple' string")), ("si\\\\mple", SchemaAndValue(Schema.STRING, "si\\\\mple")),
    ('si\\"mple', SchemaAndValue(Schema.STRING, 'si\\"mple')), ("si\\{mple", SchemaAndValue(Schema.STRING, "si\\{mple")),
    ("a{b", SchemaAndValue(Schema.STRING, "a{b")), ('"simple" string', SchemaAndValue(Schema.STRING, '"simple" string')),
])
def test_parse_string(text, expected):
    result = parse_string(text)
    assert result == expected
    assert type(result.value) is type(expected.value)


@pytest.mark.parametrize(("text", "value", "kafka"), [
    # Kafka: a MAP or ARRAY schema without key/element schemas; connectd's schemas always have them, so: none.
    ("{}", {}, "MAP"),
    ("[]", [], "ARRAY"),
    ("[[]]", [[]], "ARRAY of ARRAY"),
    ("[{}]", [{}], "ARRAY of MAP"),
    ('{"a":{}}', {"a": {}}, "MAP of MAP"),
    ('{"a":[]}', {"a": []}, "MAP of ARRAY"),
    ("{3: null}", {3: None}, "MAP with INT8 keys"),
    ("[null]", [None], "ARRAY"),
    ('[1, 2, 300, "four"]', [1, 2, 300, "four"], "ARRAY"),                      # shouldParseStringListWithMultipleElementTypes
    ('["four", 1, 2, 300]', ["four", 1, 2, 300], "ARRAY"),
    ('{1:1, 2:1, 300:300, "four":1}', {1: 1, 2: 1, 300: 300, "four": 1}, "MAP"),  # shouldParseStringMapWithMultipleKeyTypes
    ('{4:"four", 1:1, 2:1, 300:300}', {4: "four", 1: 1, 2: 1, 300: 300}, "MAP"),  # …WithMultipleValueTypes
    ('["1.0", 9223372036854775808, -9223372036854775809, 1, 1]',                  # shouldNotConvertArrayValuesToDecimal
     ["1.0", D(LONG_MAX + 1), D(LONG_MIN - 1), 1, 1], "ARRAY"),
])
def test_parse_string_without_common_schema(text, value, kafka):
    assert parse_string(text) == SchemaAndValue(None, value)


@pytest.mark.parametrize(("text", "schema", "value"), [
    # Kafka gives up on these and returns the text as a string; connectd makes the elements optional.
    ("[1, null]", array(Schema.OPTIONAL_INT8), [1, None]),
    ("[null, 1]", array(Schema.OPTIONAL_INT8), [None, 1]),
])
def test_parse_string_with_null_elements(text, schema, value):
    assert parse_string(text) == SchemaAndValue(schema, value)


def test_escape_strings_with_embedded_quotes_and_backslashes():
    # shouldEscapeStringsWithEmbeddedQuotesAndBackslashes: Values.escape is what strings inside arrays get.
    assert convert_to_string(None, ['three"blind\\"mice']) == '["three\\"blind\\\\\\"mice"]'


@pytest.mark.parametrize(("schema", "value"), [
    (Schema.STRING, "null"), (Schema.STRING, "simple"), (Schema.STRING, ""),
    (Schema.STRING, 'three"blind\\"mice'), (Schema.STRING, "string with delimiters: <>?,./\\=+-!@#$%^&*(){}[]|;':"),
    (Schema.BOOLEAN, False), (Schema.BOOLEAN, True), (Schema.INT8, 0), (Schema.INT8, 1), (Schema.FLOAT32, 1.0),
    (Schema.FLOAT64, 1.5), (map_(Schema.STRING, Schema.STRING), {"foo": "123", "bar": "baz"}),
    (map_(Schema.STRING, Schema.INT16), {"foo": 12345, "bar": 0, "baz": -4321}),
    (map_(Schema.STRING, Schema.INT32), {"foo": 1234567890, "bar": 0, "baz": -987654321}),
    (array(Schema.STRING), ["foo", "bar"]), (array(Schema.INT32), [1234567890, -987654321]),
])
def test_round_trip(schema, value):
    # assertRoundTrip: the text, converted back to the schema's type with convertTo*, gives the value, twice.
    # (Kafka also compares inferSchema of the result: connectd infers int64 for every int, float64 for every float.)
    text = convert_to_string(schema, value)
    result = convert_to(schema, text)
    assert result == value
    assert type(result) is type(value)
    assert convert_to(schema, convert_to_string(schema, result)) == value
    assert parse_string(text).value == value or schema.type in (SchemaType.STRING, SchemaType.FLOAT32)


# --- convertTo* ------------------------------------------------------------------------------

CONVERT_TO = {
    SchemaType.STRING: convert_to_string,
    SchemaType.INT8: convert_to_byte,
    SchemaType.INT16: convert_to_short,
    SchemaType.INT32: convert_to_integer,
    SchemaType.INT64: convert_to_long,
    SchemaType.FLOAT32: convert_to_float,
    SchemaType.FLOAT64: convert_to_double,
    SchemaType.BOOLEAN: convert_to_boolean,
    SchemaType.ARRAY: convert_to_list,
    SchemaType.MAP: convert_to_map,
}


def convert_to(desired: Schema, value):
    """ValuesTest.convertTo: the convertTo* function for the desired type, with a string schema as Kafka's test passes."""
    return CONVERT_TO[desired.type](Schema.STRING, value)


@pytest.mark.parametrize("schema", [getattr(Schema, prefix + t.name) for t in CONVERT_TO if t.is_primitive
                                    for prefix in ("", "OPTIONAL_")])
def test_convert_null_value(schema):
    # shouldConvertNullValue: the scalar conversions give None for None.
    assert convert_to(schema, None) is None


@pytest.mark.parametrize(("text", "expected"), [("false", False), ("0", False), ("true", True), ("1", True),
                                                ("0.5", False), ("-2", True), ("1e3", True)])
def test_convert_boolean_values(text, expected):
    # shouldConvertBooleanValues: text is parsed; numbers are true unless their integer part is 0.
    assert convert_to_boolean(Schema.STRING, text) is expected
    assert convert_to_boolean(Schema.BOOLEAN, expected) is expected  # assertShortCircuit


def test_fail_to_parse_invalid_boolean_value_string():
    with pytest.raises(DataError):
        convert_to_boolean(Schema.STRING, '"green"')


@pytest.mark.parametrize(("schema", "value"), [
    (Schema.INT8, 0), (Schema.INT8, 1), (Schema.INT16, -32768), (Schema.INT32, 2**31 - 1), (Schema.INT64, 1),
    (Schema.INT64, LONG_MIN), (Schema.FLOAT32, 1.0), (Schema.FLOAT32, to_float32(1.1)), (Schema.FLOAT64, 1.0),
])
def test_convert_numbers(schema, value):
    # shouldConvertInt8, shouldConvertInt64, shouldConvertFloat32, shouldConvertFloat64 (round trip and short circuit)
    assert convert_to(schema, convert_to_string(schema, value)) == value
    assert convert_to(schema, value) == value


@pytest.mark.parametrize(("function", "value", "expected"), [
    (convert_to_byte, 3.9, 3), (convert_to_byte, -3.9, -3), (convert_to_short, "12.7", 12), (convert_to_integer, D("-7.5"), -7),
    (convert_to_long, "1E3", 1000), (convert_to_long, "+5", 5), (convert_to_integer, 2**31 - 1, 2**31 - 1),
    (convert_to_float, 1.1, to_float32(1.1)), (convert_to_float, "3.4028235E38", to_float32(3.4028235e38)),
    (convert_to_float, 1e300, float("inf")), (convert_to_double, 7, 7.0), (convert_to_double, D("0.1"), 0.1),
    (convert_to_double, ".5", 0.5),
])
def test_convert_numbers_between_types(function, value, expected):
    # asLong/asDouble: numbers of any type and numeric text (Java's BigDecimal syntax), truncated toward zero.
    result = function(None, value)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(("function", "value"), [
    # Kafka wraps these ((byte) 300 is 44); connectd refuses them.
    (convert_to_byte, 128), (convert_to_byte, "300"), (convert_to_short, 32768), (convert_to_integer, 2**31),
    (convert_to_integer, -(2**31) - 1.0), (convert_to_long, 2**63), (convert_to_long, 1e19), (convert_to_boolean, 2**64),
    # Kafka turns NaN into 0 and infinities into Long.MIN_VALUE/MAX_VALUE; connectd refuses them.
    (convert_to_long, float("nan")), (convert_to_integer, float("inf")), (convert_to_long, D("NaN")),
    # not numbers (Java's BigDecimal reads no blanks, NaN or underscores either)
    (convert_to_long, True), (convert_to_double, False), (convert_to_integer, " 1"), (convert_to_long, "1_000"),
    (convert_to_double, "NaN"), (convert_to_long, b"\x01"), (convert_to_double, [1]), (convert_to_long, "abc"),
])
def test_fail_to_convert_numbers(function, value):
    with pytest.raises(DataError):
        function(None, value)


def test_number_conversion_errors_say_what_and_why():
    with pytest.raises(DataError, match=r"300 is out of range for int8 \(-128 to 127\)"):
        convert_to_byte(Schema.STRING, "300")
    with pytest.raises(DataError, match=r"Unable to convert 'abc' \(str\) to Schema\(string\)"):
        convert_to_long(Schema.STRING, "abc")
    with pytest.raises(DataError, match=r"Unable to convert True \(bool\) to a number"):
        convert_to_long(None, True)


def test_convert_empty_struct():
    struct = Struct(SchemaBuilder.struct().build())
    for value in (None, "", {}):
        with pytest.raises(DataError):
            convert_to_struct(struct.schema, value)
    assert convert_to_struct(struct.schema, struct) is struct


@pytest.mark.parametrize(("text", "expected"), [
    # shouldParseStringOfMapWith{String,Short,Int}Values{Without,With}WhitespaceAsMap
    ('{"foo":"123","bar":"baz"}', {"foo": "123", "bar": "baz"}),
    ('{ "foo" : "123", \n"bar" : "baz" } ', {"foo": "123", "bar": "baz"}),
    ('{"foo":12345,"bar":0,"baz":-4321}', {"foo": 12345, "bar": 0, "baz": -4321}),
    (' { "foo" :  12345 , "bar" : 0,  "baz" : -4321 }  ', {"foo": 12345, "bar": 0, "baz": -4321}),
    ('{"foo":1234567890,"bar":0,"baz":-987654321}', {"foo": 1234567890, "bar": 0, "baz": -987654321}),
    (' { "foo" :  1234567890 , "bar" : 0,  "baz" : -987654321 }  ', {"foo": 1234567890, "bar": 0, "baz": -987654321}),
    ("{}", {}),
])
def test_convert_to_map_parses_text(text, expected):
    assert convert_to_map(Schema.STRING, text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # shouldConvertStringOfListWithOnlyNumericElementTypesIntoListOfLargestNumericType, …IntegralTypesToFloat/Double
    ("[1, 2, 32768]", [1, 2, 32768]),
    ("[1, 2, 3.4028235E38]", [1.0, 2.0, to_float32(3.4028235e38)]),
    ("[1, 2, 1.7976931348623157E308]", [1.0, 2.0, 1.7976931348623157e308]),
    ('["foo", "bar"]', ["foo", "bar"]),
    ('[1, 2, 300, "four"]', [1, 2, 300, "four"]),  # no common element schema: still a list (Kafka's too)
    ("[]", []),
])
def test_convert_to_list_parses_text(text, expected):
    assert convert_to_list(Schema.STRING, text) == expected


def test_convert_to_list_and_map_keep_values():
    items, mapping = [1, 2], {"a": 1}
    assert convert_to_list(None, items) is items
    assert convert_to_list(None, (1, 2)) == [1, 2]
    assert convert_to_map(None, mapping) is mapping


@pytest.mark.parametrize(("function", "text"), [
    (convert_to_list, "[1, 2, 3,,,]"),                                       # …ToListFromStringWithExtraDelimiters
    (convert_to_list, '[1, 2, 3, "four",,,]'),                               # …NonCommonElementTypeAndBlankElement
    (convert_to_map, ' { "foo" :  1234567890 ,, "bar" : 0,  "baz" : -987654321 }  '),      # …WithBlankEntry
    (convert_to_map, ' { "foo" :  1234567890 , "a", "bar" : 0,  "baz" : -987654321 }  '),  # …OfMalformedMap
    (convert_to_map, " { ,,  , , }  "),                                                    # …WithOnlyBlankEntries
    (convert_to_map, ' { "foo" :  "1234567890" ,, "bar" : "0",  "baz" : "boz" }  '),      # …WithBlankEntries
    (convert_to_list, "simple"), (convert_to_map, "[1]"), (convert_to_list, 5), (convert_to_map, [1]),
    (convert_to_list, None), (convert_to_map, None),
])
def test_fail_to_convert_to_list_or_map(function, text):
    with pytest.raises(DataError):
        function(Schema.STRING, text)


@pytest.mark.parametrize("function", [convert_to_time, convert_to_date, convert_to_timestamp])
def test_fail_to_convert_null_time(function):
    # shouldFailToConvertNullTime: unlike the scalar conversions, None is an error, as in Kafka.
    with pytest.raises(DataError, match="null value"):
        function(None, None)


NOW = datetime.datetime(2024, 5, 1, 13, 45, 12, 345000, tzinfo=UTC)
NOW_MILLIS = Timestamp.from_logical(Timestamp.SCHEMA, NOW)
MILLIS_OF_DAY = NOW_MILLIS % 86_400_000
DAYS = NOW_MILLIS // 86_400_000
TODAY = datetime.date(2024, 5, 1)


def test_convert_time_values():
    # shouldConvertTimeValues
    assert convert_to_time(Time.SCHEMA, NOW.timetz().replace(tzinfo=None)) == datetime.time(13, 45, 12, 345000)
    assert convert_to_time(Timestamp.SCHEMA, NOW) == datetime.time(13, 45, 12, 345000)   # keeps the time of day
    assert convert_to_time(Time.SCHEMA, str(MILLIS_OF_DAY)) == datetime.time(13, 45, 12, 345000)
    assert convert_to_time(Time.SCHEMA, MILLIS_OF_DAY) == datetime.time(13, 45, 12, 345000)
    # ISO 8601 text (Kafka's test says it is broken by tokenizing at ':'; connectd's parser reads it)
    assert convert_to_time(None, "13:45:12.345Z") == datetime.time(13, 45, 12, 345000)
    assert convert_to_time(Schema.STRING, "13:45:12.345Z") == datetime.time(13, 45, 12, 345000)  # Kafka: DataException
    assert convert_to_time(None, NOW) == datetime.time(13, 45, 12, 345000)    # no schema: the value's own type tells
    with pytest.raises(DataError):
        convert_to_time(Time.SCHEMA, 86_400_000)


def test_convert_date_values():
    # shouldConvertDateValues
    assert convert_to_date(Date.SCHEMA, TODAY) is TODAY
    assert convert_to_date(Timestamp.SCHEMA, NOW) == TODAY   # drops the time of day
    assert convert_to_date(Date.SCHEMA, str(DAYS)) == TODAY
    assert convert_to_date(Date.SCHEMA, DAYS) == TODAY
    assert convert_to_date(None, "2024-05-01") == TODAY
    assert convert_to_date(Schema.STRING, "2024-05-01") == TODAY  # Kafka: DataException
    assert convert_to_date(None, NOW) == TODAY
    # Kafka counts a Timestamp's days toward zero: an instant on 1969-12-31 gives 1970-01-01.
    assert convert_to_date(Timestamp.SCHEMA, datetime.datetime(1969, 12, 31, 12, tzinfo=UTC)) == datetime.date(1970, 1, 1)
    with pytest.raises(DataError):
        convert_to_date(Date.SCHEMA, 2**31)


def test_convert_timestamp_values():
    # shouldConvertTimestampValues
    assert convert_to_timestamp(Timestamp.SCHEMA, NOW) is NOW
    assert convert_to_timestamp(Date.SCHEMA, TODAY) == datetime.datetime(2024, 5, 1, tzinfo=UTC)
    assert convert_to_timestamp(Time.SCHEMA, MILLIS_OF_DAY) == datetime.datetime(1970, 1, 1, 13, 45, 12, 345000, tzinfo=UTC)
    assert convert_to_timestamp(Time.SCHEMA, datetime.time(13, 45, 12, 345000)) == datetime.datetime(
        1970, 1, 1, 13, 45, 12, 345000, tzinfo=UTC)
    assert convert_to_timestamp(Timestamp.SCHEMA, str(NOW_MILLIS)) == NOW
    assert convert_to_timestamp(Timestamp.SCHEMA, NOW_MILLIS) == NOW
    assert convert_to_timestamp(Schema.STRING, "2024-05-01T13:45:12.345Z") == NOW
    assert convert_to_timestamp(None, TODAY) == datetime.datetime(2024, 5, 1, tzinfo=UTC)


def test_convert_temporal_values_to_numbers():
    # asLong with a logical schema: days or milliseconds (ConnectHeadersTest's shouldAddDate/Time/Timestamp)
    assert convert_to_integer(Date.SCHEMA, TODAY) == DAYS
    assert convert_to_long(Time.SCHEMA, datetime.time(0, 0, 10)) == 10_000
    assert convert_to_long(Timestamp.SCHEMA, NOW) == NOW_MILLIS
    assert convert_to_double(Timestamp.SCHEMA, NOW) == float(NOW_MILLIS)
    assert convert_to_boolean(Timestamp.SCHEMA, NOW) is True
    with pytest.raises(DataError):
        convert_to_long(None, NOW)        # without its schema a date is not a number
    with pytest.raises(DataError):
        convert_to_long(Date.SCHEMA, NOW)  # a Date must be a midnight


def test_convert_decimal_values():
    # shouldConvertDecimalValues: every form of 1.0 gives the same decimal
    value = D("1.0")
    encoded = Decimal.from_logical(Decimal.schema(1), value)
    for form in (1.0, "1.0", value, encoded, bytearray(encoded), memoryview(encoded)):
        result = convert_to_decimal(None, form, 1)
        assert result == value and result.as_tuple() == value.as_tuple()
    assert convert_to_decimal(None, 5, 0).as_tuple() == D("5.0").as_tuple()       # through the double 5.0, as Kafka
    assert convert_to_decimal(None, 1e20, 0).as_tuple() == D("1.0E20").as_tuple()  # Java's Double.toString
    assert convert_to_decimal(None, D("3.038573478e+3"), 6) == D("3038.573478")  # shouldAddDecimal: kept, not rescaled


@pytest.mark.parametrize("value", [None, "abc", " 1", float("nan"), float("inf"), D("NaN"), True, [1], datetime.date(2024, 5, 1)])
def test_fail_to_convert_to_decimal(value):
    # shouldFailToConvertNullToDecimal, and values Kafka also refuses (NumberFormatException there, DataError here)
    with pytest.raises(DataError):
        convert_to_decimal(None, value, 1)


@pytest.mark.parametrize(("value", "expected"), [
    (b"\x00", Schema.BYTES),                                    # shouldInferByteSchema
    (bytearray(b"\x00"), Schema.BYTES),
    ([], None),                                                 # shouldInferNoSchemaForEmptyList
    ([object()], None),                                         # shouldInferNoSchemaForListContainingObject
    ({}, None),                                                 # shouldInferNoSchemaForEmptyMap
    ({object(): object()}, None),                               # shouldInferNoSchemaForMapContainingObject
])
def test_infer_schema(value, expected):
    assert infer_schema(value) == expected


def test_infer_struct_schema():
    struct = Struct(SchemaBuilder.struct().build())
    assert infer_schema(struct) is struct.schema
