"""String, byte-array, number, boolean and simple header converters; the built-in list."""

from __future__ import annotations

import datetime
import decimal
import math
import pickle
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectd.data import (
    BUILTIN_CONVERTERS,
    BooleanConverter,
    ByteArrayConverter,
    Converter,
    DataError,
    DoubleConverter,
    FloatConverter,
    HeaderConverter,
    Headers,
    IntegerConverter,
    JsonConverter,
    LongConverter,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    ShortConverter,
    SimpleHeaderConverter,
    StringConverter,
    Struct,
)
from connectd.data.schema import INT_RANGES, SchemaType
from connectd.errors import ConfigError

from ._strategies import names, schemas_and_values

UTC = datetime.timezone.utc


def configured(cls, **settings_):
    converter = cls()
    converter.configure({k.replace("_", "."): v for k, v in settings_.items()}, is_key=False)
    return converter


class TestStringConverter:
    def test_round_trip_and_schema(self):
        c = StringConverter()
        assert c.from_connect_data("t", Schema.STRING, "héllo") == "héllo".encode()
        assert c.to_connect_data("t", "héllo".encode()) == SchemaAndValue(Schema.OPTIONAL_STRING, "héllo")

    @settings(max_examples=100, deadline=None)
    @given(st.sampled_from(["UTF-8", "ISO-8859-1", "UTF-16", "cp500"]),
           st.lists(schemas_and_values(max_leaves=3) | st.tuples(st.none(), st.integers() | st.booleans()), max_size=6))
    def test_a_batch_is_each_value_converted(self, encoding, pairs):
        c = configured(StringConverter, converter_encoding=encoding)
        assert c.from_connect_batch("t", pairs) == [c.from_connect_data("t", schema, value) for schema, value in pairs]

    def test_tombstones(self):
        c = StringConverter()
        assert c.from_connect_data("t", None, None) is None
        assert c.to_connect_data("t", None) == SchemaAndValue(Schema.OPTIONAL_STRING, None)

    @pytest.mark.parametrize(
        "schema, value, text",
        [
            (Schema.INT32, 42, "42"),
            (Schema.BOOLEAN, True, "true"),
            (Schema.FLOAT64, 1e20, "1.0E20"),
            (Schema.FLOAT32, 0.10000000149011612, "0.1"),
            (None, decimal.Decimal("1.50"), "1.50"),
            (None, [1, "a", None], "[1, a, null]"),
            (None, {"k": 1}, "{k=1}"),
            (None, datetime.datetime(1970, 1, 1, tzinfo=UTC), "Thu Jan 01 00:00:00 UTC 1970"),
        ],
    )
    def test_other_values_as_java_prints_them(self, schema, value, text):
        assert StringConverter().from_connect_data("t", schema, value) == text.encode()

    def test_struct_as_java_prints_it(self):
        schema = SchemaBuilder.struct().field("a", Schema.INT8).field("b", Schema.OPTIONAL_STRING).build()
        assert StringConverter().from_connect_data("t", schema, Struct(schema, {"a": 1})) == b"Struct{a=1}"

    def test_bytes_pass_through(self):
        assert StringConverter().from_connect_data("t", None, b"\xff\x00") == b"\xff\x00"

    @pytest.mark.parametrize(
        "encoding, text, data",
        [
            ("UTF-8", "é", b"\xc3\xa9"),
            ("UTF8", "é", b"\xc3\xa9"),
            ("ISO-8859-1", "é", b"\xe9"),
            ("US-ASCII", "é", b"?"),  # Java replaces what the charset cannot hold
            ("UTF-16", "A", b"\xfe\xff\x00A"),  # Java: big-endian with a byte-order mark
            ("UTF-16LE", "A", b"A\x00"),
            ("windows-1252", "€", b"\x80"),
        ],
    )
    def test_encodings_match_java(self, encoding, text, data):
        c = configured(StringConverter, converter_encoding=encoding)
        assert c.from_connect_data("t", None, text) == data

    def test_utf16_reads_either_byte_order(self):
        c = configured(StringConverter, converter_encoding="UTF-16")
        assert c.to_connect_data("t", b"\xff\xfeA\x00").value == "A"
        assert c.to_connect_data("t", b"\x00A").value == "A"

    def test_malformed_input_is_replaced_like_java(self):
        assert StringConverter().to_connect_data("t", b"a\xffb").value == "a\ufffdb"

    def test_bad_encoding_is_a_config_error(self):
        with pytest.raises(ConfigError, match="converter.encoding='NOPE': expected the name of a character set"):
            configured(StringConverter, converter_encoding="NOPE")
        with pytest.raises(ConfigError, match="converter.encoding='base64'"):
            configured(StringConverter, converter_encoding="base64")

    def test_header_converter(self):
        c = StringConverter()
        assert c.to_connect_header("t", "h", c.from_connect_header("t", "h", Schema.STRING, "v")) == SchemaAndValue(
            Schema.OPTIONAL_STRING, "v"
        )

    def test_pickles(self):
        c = configured(StringConverter, converter_encoding="ISO-8859-1")
        assert pickle.loads(pickle.dumps(c)).from_connect_data("t", None, "é") == b"\xe9"

    @settings(max_examples=100, deadline=None)
    @given(st.text(), st.sampled_from(["UTF-8", "UTF-16", "UTF-32"]))
    def test_round_trip(self, text, encoding):
        c = configured(StringConverter, converter_encoding=encoding)
        assert c.to_connect_data("t", c.from_connect_data("t", Schema.STRING, text)) == SchemaAndValue(Schema.OPTIONAL_STRING, text)


class TestByteArrayConverter:
    def test_pass_through(self):
        c = ByteArrayConverter()
        assert c.from_connect_data("t", Schema.BYTES, b"\x00\x01") == b"\x00\x01"
        assert c.from_connect_data("t", None, bytearray(b"x")) == b"x"
        assert c.to_connect_data("t", b"\x00") == SchemaAndValue(Schema.OPTIONAL_BYTES, b"\x00")
        assert c.from_connect_data("t", None, None) is None
        assert c.to_connect_data("t", None) == SchemaAndValue(Schema.OPTIONAL_BYTES, None)

    def test_errors(self):
        with pytest.raises(DataError, match="Invalid schema type for ByteArrayConverter: STRING"):
            ByteArrayConverter().from_connect_data("t", Schema.STRING, b"x")
        with pytest.raises(DataError, match="not compatible with objects of type str"):
            ByteArrayConverter().from_connect_data("t", None, "x")

    @settings(max_examples=50, deadline=None)
    @given(st.lists(st.none() | st.binary(max_size=10), max_size=5))
    def test_batches(self, datas):
        c = ByteArrayConverter()
        assert c.from_connect_batch("t", [(None, d) for d in datas]) == datas
        assert c.to_connect_batch("t", datas) == [SchemaAndValue(Schema.OPTIONAL_BYTES, d) for d in datas]


NUMBERS = [
    (ShortConverter, Schema.OPTIONAL_INT16, 1, b"\x00\x01"),
    (ShortConverter, Schema.OPTIONAL_INT16, -2, b"\xff\xfe"),
    (IntegerConverter, Schema.OPTIONAL_INT32, 1, b"\x00\x00\x00\x01"),
    (IntegerConverter, Schema.OPTIONAL_INT32, -1, b"\xff\xff\xff\xff"),
    (IntegerConverter, Schema.OPTIONAL_INT32, 2**31 - 1, b"\x7f\xff\xff\xff"),
    (LongConverter, Schema.OPTIONAL_INT64, 1, b"\x00\x00\x00\x00\x00\x00\x00\x01"),
    (LongConverter, Schema.OPTIONAL_INT64, -(2**63), b"\x80\x00\x00\x00\x00\x00\x00\x00"),
    (FloatConverter, Schema.OPTIONAL_FLOAT32, 1.0, b"\x3f\x80\x00\x00"),
    (FloatConverter, Schema.OPTIONAL_FLOAT32, -2.5, b"\xc0\x20\x00\x00"),
    (DoubleConverter, Schema.OPTIONAL_FLOAT64, 1.0, b"\x3f\xf0\x00\x00\x00\x00\x00\x00"),
    (DoubleConverter, Schema.OPTIONAL_FLOAT64, 0.1, b"\x3f\xb9\x99\x99\x99\x99\x99\x9a"),
    (BooleanConverter, Schema.OPTIONAL_BOOLEAN, True, b"\x01"),
    (BooleanConverter, Schema.OPTIONAL_BOOLEAN, False, b"\x00"),
]


class TestNumberConverters:
    @pytest.mark.parametrize("cls, schema, value, data", NUMBERS)
    def test_kafka_serializer_formats(self, cls, schema, value, data):
        c = cls()
        assert c.from_connect_data("t", None, value) == data
        assert c.to_connect_data("t", data) == SchemaAndValue(schema, value)
        assert c.from_connect_header("t", "h", None, value) == data
        assert c.to_connect_header("t", "h", data) == SchemaAndValue(schema, value)

    @pytest.mark.parametrize("cls, schema", list(dict.fromkeys((n[0], n[1]) for n in NUMBERS)))
    def test_nulls(self, cls, schema):
        c = cls()
        assert c.from_connect_data("t", schema, None) is None
        assert c.to_connect_data("t", None) == SchemaAndValue(schema, None)

    @pytest.mark.parametrize(
        "cls, data, message",
        [
            (IntegerConverter, b"\x00\x01", "Size of data received by IntegerDeserializer is not 4"),
            (ShortConverter, b"", "Size of data received by ShortDeserializer is not 2"),
            (LongConverter, b"\x00", "Size of data received by LongDeserializer is not 8"),
            (DoubleConverter, b"\x00", "Size of data received by DoubleDeserializer is not 8"),
            (BooleanConverter, b"\x00\x00", "Size of data received by BooleanDeserializer is not 1"),
            (BooleanConverter, b"\x02", "Unexpected byte received by BooleanDeserializer: 2"),
        ],
    )
    def test_wrong_sizes(self, cls, data, message):
        with pytest.raises(DataError, match=message):
            cls().to_connect_data("t", data)

    @pytest.mark.parametrize(
        "cls, value, message",
        [
            (IntegerConverter, "1", r"Failed to serialize to integer \(was str\)"),
            (IntegerConverter, True, r"Failed to serialize to integer \(was bool\)"),
            (ShortConverter, 2**15, "out of range"),
            (FloatConverter, 1, r"Failed to serialize to float \(was int\)"),
            (FloatConverter, 1e39, "out of range"),
            (BooleanConverter, 1, "not compatible with objects of type int"),
        ],
    )
    def test_wrong_values(self, cls, value, message):
        with pytest.raises(DataError, match=message):
            cls().from_connect_data("t", None, value)

    def test_boolean_checks_the_schema(self):
        with pytest.raises(DataError, match="Invalid schema type for BooleanConverter: INT8"):
            BooleanConverter().from_connect_data("t", Schema.INT8, True)

    @settings(max_examples=100, deadline=None)
    @given(st.data())
    def test_round_trips(self, data):
        cls, schema_type = data.draw(
            st.sampled_from(
                [
                    (ShortConverter, SchemaType.INT16),
                    (IntegerConverter, SchemaType.INT32),
                    (LongConverter, SchemaType.INT64),
                    (FloatConverter, SchemaType.FLOAT32),
                    (DoubleConverter, SchemaType.FLOAT64),
                    (BooleanConverter, SchemaType.BOOLEAN),
                ]
            )
        )
        if schema_type in INT_RANGES:
            value = data.draw(st.integers(*INT_RANGES[schema_type]))
        elif schema_type is SchemaType.FLOAT32:
            value = data.draw(st.floats(width=32, allow_nan=False))
        elif schema_type is SchemaType.FLOAT64:
            value = data.draw(st.floats(allow_nan=False))
        else:
            value = data.draw(st.booleans())
        c = cls()
        encoded = c.from_connect_data("t", None, value)
        assert c.to_connect_data("t", encoded).value == value
        assert c.to_connect_batch("t", c.from_connect_batch("t", [(None, value)])) == [c.to_connect_data("t", encoded)]

    def test_float_nan_survives(self):
        assert math.isnan(FloatConverter().to_connect_data("t", struct.pack(">f", math.nan)).value)


class TestSimpleHeaderConverter:
    @pytest.mark.parametrize(
        "schema, value, text",
        [
            (Schema.STRING, "hello", "hello"),
            (Schema.INT32, 42, "42"),
            (Schema.BOOLEAN, False, "false"),
            (Schema.FLOAT64, 0.5, "0.5"),
            (SchemaBuilder.array(Schema.STRING).build(), ["a", 'b"c'], '["a","b\\"c"]'),
            (SchemaBuilder.map(Schema.STRING, Schema.INT8).build(), {"a": 1}, '{"a":1}'),
            (None, datetime.date(2024, 5, 1), "2024-05-01"),
            (None, datetime.datetime(2024, 5, 1, 13, 45, 0, 123000, UTC), "2024-05-01T13:45:00.123Z"),
            (None, b"\x00\x01", "AAE="),
        ],
    )
    def test_writes_kafkas_text(self, schema, value, text):
        assert SimpleHeaderConverter().from_connect_header("t", "h", schema, value) == text.encode()

    def test_reads_with_inferred_schemas(self):
        c = SimpleHeaderConverter()
        assert c.to_connect_header("t", "h", b"42") == SchemaAndValue(Schema.INT8, 42)
        assert c.to_connect_header("t", "h", b"hello") == SchemaAndValue(Schema.STRING, "hello")
        assert c.to_connect_header("t", "h", b"[1,2]") == SchemaAndValue(SchemaBuilder.array(Schema.INT8).build(), [1, 2])

    def test_nulls(self):
        c = SimpleHeaderConverter()
        assert c.from_connect_header("t", "h", Schema.OPTIONAL_STRING, None) is None
        assert c.to_connect_header("t", "h", None) == SchemaAndValue.NULL
        assert c.to_connect_header("t", "h", b"null") == SchemaAndValue.NULL

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.none() | st.lists(st.tuples(names, schemas_and_values(max_leaves=3).filter(
        lambda pair: pair[1] is not None or pair[0].optional)), max_size=4), max_size=6))
    def test_a_batch_of_headers_is_each_header_converted(self, records):
        headers = [None if record is None else Headers([(key, schema, value) for key, (schema, value) in record])
                   for record in records]
        converter = SimpleHeaderConverter()
        one_by_one = [[(key, converter.from_connect_header("t", key, schema, value)) for key, schema, value in h]
                      if h else None for h in headers]
        assert converter.from_connect_headers_batch("t", headers) == one_by_one
        assert HeaderConverter.from_connect_headers_batch(converter, "t", headers) == one_by_one

    def test_is_only_a_header_converter(self):
        assert isinstance(SimpleHeaderConverter(), HeaderConverter)
        assert not isinstance(SimpleHeaderConverter(), Converter)


class TestBuiltins:
    def test_every_converter_with_short_and_java_names(self):
        by_class = dict(BUILTIN_CONVERTERS)
        assert by_class[StringConverter] == ("StringConverter", "org.apache.kafka.connect.storage.StringConverter")
        assert by_class[JsonConverter] == ("JsonConverter", "org.apache.kafka.connect.json.JsonConverter")
        assert by_class[SimpleHeaderConverter] == (
            "SimpleHeaderConverter",
            "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        )
        for cls in (ByteArrayConverter, ShortConverter, IntegerConverter, LongConverter, FloatConverter, DoubleConverter, BooleanConverter):
            assert by_class[cls] == (cls.__name__, f"org.apache.kafka.connect.converters.{cls.__name__}")
        aliases = [alias for _, names in BUILTIN_CONVERTERS for alias in names]
        assert len(aliases) == len(set(aliases)) == 20

    @pytest.mark.parametrize("cls", [cls for cls, _ in BUILTIN_CONVERTERS])
    def test_every_converter_is_configurable_and_declares_converter_type(self, cls):
        converter = cls()
        converter.configure({}, is_key=True)
        assert converter.is_key and converter.config["converter.type"] == "key"
        assert "converter.type" in cls.config_def
        with pytest.raises(ConfigError, match="converter.type='sideways': expected one of \\[key, value, header\\]"):
            converter.configure({"converter.type": "sideways"})
        converter.configure({"converter.type": "header"})
        assert converter.config["converter.type"] == "header"
        converter.close()

    @pytest.mark.parametrize("cls", [cls for cls, _ in BUILTIN_CONVERTERS if issubclass(cls, Converter)])
    def test_batches_match_single_calls(self, cls):
        samples = {
            StringConverter: [(Schema.STRING, "a"), (None, None)],
            JsonConverter: [(Schema.STRING, "a"), (None, None), (None, {"x": [1]})],
            ByteArrayConverter: [(Schema.BYTES, b"a"), (None, None)],
            ShortConverter: [(None, 1), (None, None)],
            IntegerConverter: [(None, 1), (None, None)],
            LongConverter: [(None, 1), (None, None)],
            FloatConverter: [(None, 1.5), (None, None)],
            DoubleConverter: [(None, 1.5), (None, None)],
            BooleanConverter: [(None, True), (None, None)],
        }[cls]
        c = cls()
        out = c.from_connect_batch("t", samples)
        assert out == [c.from_connect_data("t", s, v) for s, v in samples]
        assert c.to_connect_batch("t", out) == [c.to_connect_data("t", d) for d in out]
        assert c.to_connect_batch("t", out, [None] * len(out)) == c.to_connect_batch("t", out)
        with pytest.raises(ValueError):
            c.to_connect_batch("t", out, [None])
