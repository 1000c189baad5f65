"""Kafka's NumberConverterTest (and its Short/Integer/Long/Float/Double subclasses), BooleanConverterTest,
ByteArrayConverterTest and StringConverterTest, case by case.

testVersionRetrievedFromAppInfoParser and friends are not ported: connectd converters have no version().
"""

from __future__ import annotations

import struct

import pytest

from connectd.data import (
    BooleanConverter,
    ByteArrayConverter,
    DataError,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    Schema,
    SchemaAndValue,
    ShortConverter,
    StringConverter,
)
from connectd.data._text import to_float32

TOPIC = "topic"


def configured(cls, config=None, is_key=False):
    instance = cls()
    instance.configure(config or {}, is_key)
    return instance


# --- NumberConverterTest ------------------------------------------------------------------

# (converter, schema, the serializer's format, samples): Float samples are float32 values, as Java's.
NUMBERS = [
    (ShortConverter, Schema.OPTIONAL_INT16, ">h", [-(2**15), 123, 2**15 - 1]),
    (IntegerConverter, Schema.OPTIONAL_INT32, ">i", [-(2**31), 123, 2**31 - 1]),
    (LongConverter, Schema.OPTIONAL_INT64, ">q", [-(2**63), 123, 2**63 - 1]),
    (FloatConverter, Schema.OPTIONAL_FLOAT32, ">f", [to_float32(1.4e-45), to_float32(1234.31), to_float32(3.4028235e38)]),
    (DoubleConverter, Schema.OPTIONAL_FLOAT64, ">d", [5e-324, 123.45, 1.7976931348623157e308]),
]
NUMBER_IDS = [cls.__name__ for cls, *_ in NUMBERS]


@pytest.mark.parametrize(("cls", "schema", "fmt", "samples"), NUMBERS, ids=NUMBER_IDS)
def test_converting_samples_to_and_from_bytes(cls, schema, fmt, samples):
    converter = configured(cls)
    for sample in samples:
        expected = struct.pack(fmt, sample)  # what Kafka's ShortSerializer … DoubleSerializer write
        assert converter.from_connect_data(TOPIC, schema, sample) == expected
        assert converter.to_connect_data(TOPIC, expected) == SchemaAndValue(schema, sample)
        assert converter.from_connect_header(TOPIC, "header", schema, sample) == expected
        assert converter.to_connect_header(TOPIC, "header", expected) == SchemaAndValue(schema, sample)


@pytest.mark.parametrize(("cls", "schema", "fmt", "samples"), NUMBERS, ids=NUMBER_IDS)
def test_number_converter_errors_and_nulls(cls, schema, fmt, samples):
    converter = configured(cls)
    with pytest.raises(DataError):  # testDeserializingDataWithTooManyBytes
        converter.to_connect_data(TOPIC, bytes(10))
    with pytest.raises(DataError):  # testDeserializingHeaderWithTooManyBytes
        converter.to_connect_header(TOPIC, "header", bytes(10))
    with pytest.raises(DataError):  # testSerializingIncorrectType
        converter.from_connect_data(TOPIC, schema, "not a valid number")
    with pytest.raises(DataError):  # testSerializingIncorrectHeader
        converter.from_connect_header(TOPIC, "header", schema, "not a valid number")
    assert converter.from_connect_data(TOPIC, schema, None) is None  # testNullToBytes
    assert converter.to_connect_data(TOPIC, None) == SchemaAndValue(schema, None)  # testBytesNullToNumber


# --- BooleanConverterTest -------------------------------------------------------------------


def test_boolean_converter():
    converter = configured(BooleanConverter)
    for schema in (Schema.BOOLEAN, None):  # testFromConnect, testFromConnectNullSchema
        assert converter.from_connect_data(TOPIC, schema, True) == b"\x01"
        assert converter.from_connect_data(TOPIC, schema, False) == b"\x00"
    with pytest.raises(DataError):  # testFromConnectWrongSchema
        converter.from_connect_data(TOPIC, Schema.INT32, False)
    with pytest.raises(DataError):  # testFromConnectInvalidValue
        converter.from_connect_data(TOPIC, Schema.BOOLEAN, "true")
    assert converter.from_connect_data(TOPIC, Schema.BOOLEAN, None) is None  # testFromConnectNullValue
    assert converter.to_connect_data(TOPIC, b"\x01") == SchemaAndValue(Schema.OPTIONAL_BOOLEAN, True)  # testToConnect
    assert converter.to_connect_data(TOPIC, b"\x00") == SchemaAndValue(Schema.OPTIONAL_BOOLEAN, False)
    assert converter.to_connect_data(TOPIC, None) == SchemaAndValue(Schema.OPTIONAL_BOOLEAN, None)  # testToConnectNullValue
    with pytest.raises(DataError):  # testToConnectInvalidValue
        converter.to_connect_data(TOPIC, b"42")


# --- ByteArrayConverterTest -----------------------------------------------------------------

SAMPLE_BYTES = b"sample string"


def test_byte_array_converter():
    converter = configured(ByteArrayConverter)
    assert converter.from_connect_data(TOPIC, Schema.BYTES, SAMPLE_BYTES) == SAMPLE_BYTES  # testFromConnect
    assert converter.from_connect_data(TOPIC, None, SAMPLE_BYTES) == SAMPLE_BYTES  # testFromConnectSchemaless
    with pytest.raises(DataError):  # testFromConnectBadSchema
        converter.from_connect_data(TOPIC, Schema.INT32, SAMPLE_BYTES)
    with pytest.raises(DataError):  # testFromConnectInvalidValue
        converter.from_connect_data(TOPIC, Schema.BYTES, 12)
    assert converter.from_connect_data(TOPIC, Schema.BYTES, None) is None  # testFromConnectNull
    # testFromConnectByteBufferValue: a memoryview is Python's ByteBuffer (a Java buffer's position has no equivalent).
    assert converter.from_connect_data(TOPIC, Schema.BYTES, memoryview(SAMPLE_BYTES)) == SAMPLE_BYTES
    assert converter.from_connect_data(TOPIC, Schema.BYTES, memoryview(b"")) == b""
    assert converter.to_connect_data(TOPIC, SAMPLE_BYTES) == SchemaAndValue(Schema.OPTIONAL_BYTES, SAMPLE_BYTES)  # testToConnect
    assert converter.to_connect_data(TOPIC, None) == SchemaAndValue(Schema.OPTIONAL_BYTES, None)  # testToConnectNull


# --- StringConverterTest --------------------------------------------------------------------

SAMPLE_STRING = "a string"


def test_string_converter_to_bytes():
    converter = StringConverter()  # Kafka's test uses it unconfigured: UTF-8
    assert converter.from_connect_data(TOPIC, Schema.STRING, SAMPLE_STRING) == SAMPLE_STRING.encode()  # testStringToBytes
    assert converter.from_connect_data(TOPIC, Schema.BOOLEAN, True) == b"true"  # testNonStringToBytes
    assert converter.from_connect_data(TOPIC, Schema.OPTIONAL_STRING, None) is None  # testNullToBytes
    assert converter.from_connect_data(TOPIC, None, True) == b"true"  # testToBytesIgnoresSchema


def test_string_converter_to_string():
    converter = StringConverter()
    assert converter.to_connect_data(TOPIC, SAMPLE_STRING.encode()) == SchemaAndValue(Schema.OPTIONAL_STRING, SAMPLE_STRING)
    assert converter.to_connect_data(TOPIC, None) == SchemaAndValue(Schema.OPTIONAL_STRING, None)  # testBytesNullToString


def test_string_converter_non_utf8_encoding():
    # testToBytesNonUtf8Encoding, testBytesToStringNonUtf8Encoding: Java's UTF-16 is big-endian with a byte-order mark.
    converter = configured(StringConverter, {"converter.encoding": "UTF-16"}, is_key=True)
    java_utf16 = b"\xfe\xff" + SAMPLE_STRING.encode("utf-16-be")
    assert converter.from_connect_data(TOPIC, Schema.STRING, SAMPLE_STRING) == java_utf16
    assert converter.to_connect_data(TOPIC, java_utf16) == SchemaAndValue(Schema.OPTIONAL_STRING, SAMPLE_STRING)


def test_string_converter_headers():
    converter = StringConverter()
    assert converter.from_connect_header(TOPIC, "hdr", Schema.STRING, SAMPLE_STRING) == SAMPLE_STRING.encode()
    assert converter.from_connect_header(TOPIC, "hdr", Schema.BOOLEAN, True) == b"true"
    assert converter.from_connect_header(TOPIC, "hdr", Schema.OPTIONAL_STRING, None) is None
