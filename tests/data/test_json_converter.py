"""JsonConverter: Kafka's exact bytes both ways, settings, caches, tombstones, round trips."""

from __future__ import annotations

import datetime
import decimal
import json
import pickle

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from connectd.data import (
    DataError,
    Date,
    Decimal,
    Headers,
    JsonConverter,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
)
from connectd.errors import ConfigError

from ._strategies import expected_after_round_trip, json_like, schemas_and_values

UTC = datetime.timezone.utc
D = decimal.Decimal
DECIMAL_2 = '{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}}'


def converter(**settings_: object) -> JsonConverter:
    c = JsonConverter()
    c.configure({k.replace("_", "."): v for k, v in settings_.items()}, is_key=False)
    return c


def envelope(schema_json: str, payload_json: str) -> bytes:
    return ('{"schema":' + schema_json + ',"payload":' + payload_json + "}").encode()


PERSON = (
    SchemaBuilder.struct()
    .name("com.example.Person")
    .field("name", Schema.STRING)
    .field("age", SchemaBuilder.int32().optional().build())
    .field("tags", SchemaBuilder.array(Schema.STRING).build())
    .build()
)

# (id, schema, value, exact bytes Kafka's JsonConverter writes). Derived from
# JsonConverter.asJsonSchema/convertToJson and Jackson's compact output.
GOLDEN = [
    ("boolean", Schema.BOOLEAN, True, envelope('{"type":"boolean","optional":false}', "true")),
    ("int8", Schema.INT8, 12, envelope('{"type":"int8","optional":false}', "12")),
    ("int16", Schema.INT16, -12, envelope('{"type":"int16","optional":false}', "-12")),
    ("int32", Schema.INT32, 42, envelope('{"type":"int32","optional":false}', "42")),
    ("int64", Schema.INT64, 4398046511104, envelope('{"type":"int64","optional":false}', "4398046511104")),
    ("float32", Schema.FLOAT32, 12.34000015258789, envelope('{"type":"float","optional":false}', "12.34")),
    ("float64", Schema.FLOAT64, 12.34, envelope('{"type":"double","optional":false}', "12.34")),
    ("float64-whole", Schema.FLOAT64, 1.0, envelope('{"type":"double","optional":false}', "1.0")),
    ("float64-large", Schema.FLOAT64, 1e20, envelope('{"type":"double","optional":false}', "1.0E20")),
    ("float64-1e7", Schema.FLOAT64, 1e7, envelope('{"type":"double","optional":false}', "1.0E7")),
    ("float64-small", Schema.FLOAT64, 0.0001, envelope('{"type":"double","optional":false}', "1.0E-4")),
    ("float64-neg", Schema.FLOAT64, -1.5e-10, envelope('{"type":"double","optional":false}', "-1.5E-10")),
    ("float64-nan", Schema.FLOAT64, None, envelope('{"type":"double","optional":false}', '"NaN"')),
    ("bytes", Schema.BYTES, b"test-string", envelope('{"type":"bytes","optional":false}', '"dGVzdC1zdHJpbmc="')),
    ("string", Schema.STRING, "foo-bar-baz", envelope('{"type":"string","optional":false}', '"foo-bar-baz"')),
    ("string-utf8", Schema.STRING, "héllo €😀", envelope('{"type":"string","optional":false}', '"héllo €😀"')),
    (
        "string-escapes",
        Schema.STRING,
        'q"b\\n\n\t\x01\x1f/',
        envelope('{"type":"string","optional":false}', '"q\\"b\\\\n\\n\\t\\u0001\\u001F/"'),
    ),
    (
        "array",
        SchemaBuilder.array(Schema.INT32).build(),
        [1, 2, 3],
        envelope('{"type":"array","items":{"type":"int32","optional":false},"optional":false}', "[1,2,3]"),
    ),
    (
        "map-string-keys",
        SchemaBuilder.map(Schema.STRING, Schema.INT32).build(),
        {"key1": 12, "key2": 15},
        envelope(
            '{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},"optional":false}',
            '{"key1":12,"key2":15}',
        ),
    ),
    (
        "map-int-keys",
        SchemaBuilder.map(Schema.INT32, Schema.INT32).build(),
        {1: 12, 2: 15},
        envelope(
            '{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},"optional":false}',
            "[[1,12],[2,15]]",
        ),
    ),
    (
        "struct",
        SchemaBuilder.struct().field("field1", Schema.BOOLEAN).field("field2", Schema.STRING).build(),
        {"field1": True, "field2": "string"},
        envelope(
            '{"type":"struct","fields":[{"type":"boolean","optional":false,"field":"field1"},'
            '{"type":"string","optional":false,"field":"field2"}],"optional":false}',
            '{"field1":true,"field2":"string"}',
        ),
    ),
    (
        "struct-nested",
        PERSON,
        {"name": "Ada", "age": None, "tags": ["x"]},
        envelope(
            '{"type":"struct","fields":[{"type":"string","optional":false,"field":"name"},'
            '{"type":"int32","optional":true,"field":"age"},'
            '{"type":"array","items":{"type":"string","optional":false},"optional":false,"field":"tags"}],'
            '"optional":false,"name":"com.example.Person"}',
            '{"name":"Ada","age":null,"tags":["x"]}',
        ),
    ),
    ("optional-null", Schema.OPTIONAL_INT32, None, envelope('{"type":"int32","optional":true}', "null")),
    (
        "default-used",
        SchemaBuilder.int32().default_value(5).build(),
        None,
        envelope('{"type":"int32","optional":false,"default":5}', "5"),
    ),
    (
        "metadata",
        SchemaBuilder.boolean().name("bool").version(3).doc("the documentation").parameter("foo", "bar").build(),
        True,
        envelope(
            '{"type":"boolean","optional":false,"name":"bool","version":3,"doc":"the documentation",'
            '"parameters":{"foo":"bar"}}',
            "true",
        ),
    ),
    (
        "metadata-with-default",
        SchemaBuilder.string().optional().name("n").version(1).doc("d").parameter("a", "b").default_value("dv").build(),
        "v",
        envelope(
            '{"type":"string","optional":true,"name":"n","version":1,"doc":"d","parameters":{"a":"b"},"default":"dv"}',
            '"v"',
        ),
    ),
    (
        "struct-field-default",
        SchemaBuilder.struct().field("f", SchemaBuilder.int64().default_value(7).build()).build(),
        {"f": None},
        envelope('{"type":"struct","fields":[{"type":"int64","optional":false,"default":7,"field":"f"}],"optional":false}', '{"f":7}'),
    ),
    ("decimal", Decimal.schema(2), D("1.56"), envelope(DECIMAL_2, '"AJw="')),
    ("decimal-negative", Decimal.schema(2), D("-1.56"), envelope(DECIMAL_2, '"/2Q="')),
    ("decimal-zero", Decimal.schema(2), D("0.00"), envelope(DECIMAL_2, '"AA=="')),
    (
        "date",
        Date.SCHEMA,
        datetime.date(1997, 5, 19),
        envelope('{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1}', "10000"),
    ),
    (
        "date-before-epoch",
        Date.SCHEMA,
        datetime.date(1969, 12, 31),
        envelope('{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1}', "-1"),
    ),
    (
        "time",
        Time.SCHEMA,
        datetime.time(4, 0),
        envelope('{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1}', "14400000"),
    ),
    (
        "timestamp",
        Timestamp.SCHEMA,
        datetime.datetime(1970, 2, 16, 7, 6, 40, tzinfo=UTC),
        envelope('{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1}', "4000000000"),
    ),
    (
        "date-optional-default",
        Date.builder().optional().default_value(datetime.date(1970, 1, 1)).build(),
        None,
        envelope(
            '{"type":"int32","optional":true,"name":"org.apache.kafka.connect.data.Date","version":1,"default":0}', "0"
        ),
    ),
]


def _value(schema: Schema, raw: object) -> object:
    if isinstance(raw, dict) and schema.type is Schema.Type.STRUCT:
        return Struct(schema, raw)
    return raw


@pytest.mark.parametrize("schema, raw, expected", [g[1:] for g in GOLDEN], ids=[g[0] for g in GOLDEN])
def test_writes_kafkas_exact_bytes(schema, raw, expected):
    value = float("nan") if expected.endswith(b'"NaN"}') else _value(schema, raw)
    assert converter().from_connect_data("topic", schema, value) == expected


@pytest.mark.parametrize("schema, raw, data", [g[1:] for g in GOLDEN], ids=[g[0] for g in GOLDEN])
def test_reads_kafkas_bytes(schema, raw, data):
    result = converter().to_connect_data("topic", data)
    assert result.schema == schema
    if data.endswith(b'"NaN"}'):
        assert result.value != result.value
        return
    expected = expected_after_round_trip(schema, _value(schema, raw))
    assert result.value == expected


def test_numeric_decimals():
    c = converter(decimal_format="NUMERIC")
    assert c.from_connect_data("t", Decimal.schema(2), D("1.56")) == envelope(DECIMAL_2, "1.56")
    four = Decimal.schema(4)
    data = c.from_connect_data("t", four, D("1.5600"))
    assert data.endswith(b',"payload":1.5600}')
    assert c.to_connect_data("t", data).value.as_tuple() == D("1.5600").as_tuple()
    # Java's BigDecimal.toString: scientific for negative scales and tiny numbers.
    assert c.from_connect_data("t", Decimal.schema(-2), D("1.2E+3")).endswith(b',"payload":1.2E+3}')
    assert c.from_connect_data("t", Decimal.schema(10), D("1E-10")).endswith(b',"payload":1E-10}')
    assert c.from_connect_data("t", Decimal.schema(2), D("-0.00")).endswith(b',"payload":0.00}')


def test_decimal_format_is_case_insensitive_and_read_both_ways():
    numeric = converter(decimal_format="numeric")
    base64 = converter()
    schema = Decimal.schema(17)
    precise = D("1.23456789123456789")
    for writer in (numeric, base64):
        data = writer.from_connect_data("t", schema, precise)
        for reader in (numeric, base64):
            assert reader.to_connect_data("t", data) == SchemaAndValue(schema, precise)


def test_decimal_default_follows_format():
    schema = Decimal.builder(2).default_value(D("1.56")).build()
    assert b'"default":"AJw="' in converter().from_connect_data("t", schema, None)
    assert b'"default":1.56' in converter(decimal_format="NUMERIC").from_connect_data("t", schema, None)


def test_decimal_scale_mismatch_is_explained():
    with pytest.raises(DataError, match=r"scale 1 but its schema has scale 2.*quantize"):
        converter().from_connect_data("t", Decimal.schema(2), D("1.5"))


def test_numeric_decimal_text_with_other_scale_is_rescaled_when_exact():
    data = envelope(DECIMAL_2, "12")
    assert converter().to_connect_data("t", data).value.as_tuple() == D("12.00").as_tuple()
    data = envelope(DECIMAL_2, "1.2345")  # would lose digits: kept as written, like Kafka
    assert converter().to_connect_data("t", data).value.as_tuple() == D("1.2345").as_tuple()


# Kafka's own test inputs (JsonConverterTest): spaces, other key orders, omitted "optional".
KAFKA_TEST_INPUTS = [
    ('{ "schema": { "type": "boolean" }, "payload": true }', Schema.BOOLEAN, True),
    ('{ "schema": { "type": "boolean", "optional": true }, "payload": null }', Schema.OPTIONAL_BOOLEAN, None),
    (
        '{ "schema": { "type": "boolean", "default": true }, "payload": null }',
        SchemaBuilder.boolean().default_value(True).build(),
        True,
    ),
    ('{ "schema": { "type": "float" }, "payload": 12.34 }', Schema.FLOAT32, 12.34000015258789),
    ('{ "schema": { "type": "int64" }, "payload": 4398046511104 }', Schema.INT64, 4398046511104),
    (
        '{ "schema": { "type": "map", "keys": { "type" : "int32" }, "values": { "type" : "int32" } }, '
        '"payload": [ [1, 12], [2, 15] ] }',
        SchemaBuilder.map(Schema.INT32, Schema.INT32).build(),
        {1: 12, 2: 15},
    ),
    (
        '{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
        '"default": "AJw=", "parameters": { "scale": "2" } }, "payload": null }',
        Decimal.builder(2).default_value(D("1.56")).build(),
        D("1.56"),
    ),
    (
        '{ "schema": { "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,  '
        '"optional": true, "default": 42 }, "payload": null }',
        Timestamp.builder().optional().default_value(datetime.datetime(1970, 1, 1, 0, 0, 0, 42000, UTC)).build(),
        datetime.datetime(1970, 1, 1, 0, 0, 0, 42000, UTC),
    ),
    ('{ "schema": null, "payload": 12 }', None, 12),
    ('{ "schema": null, "payload": 12.24 }', None, 12.24),
    ('{ "schema": null, "payload": [1, "2", 3] }', None, [1, "2", 3]),
    ('{ "schema": null, "payload": null }', None, None),
]


@pytest.mark.parametrize("text, schema, value", KAFKA_TEST_INPUTS)
def test_reads_any_json_layout(text, schema, value):
    assert converter().to_connect_data("t", text.encode()) == SchemaAndValue(schema, value)


def test_struct_from_kafka_with_field_first_and_missing_optional():
    text = (
        '{ "schema": { "type": "struct", "fields": [{ "field":"optional", "type": "string", "optional": true }, '
        '{  "field": "required", "type": "string" }] }, "payload": { "required": "required" } }'
    )
    schema = SchemaBuilder.struct().field("optional", Schema.OPTIONAL_STRING).field("required", Schema.STRING).build()
    assert converter().to_connect_data("t", text.encode()) == SchemaAndValue(schema, Struct(schema, {"required": "required"}))


def test_schema_null_envelope_and_schemaless_writing():
    c = converter()
    assert c.from_connect_data("t", None, True) == b'{"schema":null,"payload":true}'
    value = {"key1": 12, "key2": "string", "key3": [1.5, None]}
    assert c.from_connect_data("t", None, value) == b'{"schema":null,"payload":{"key1":12,"key2":"string","key3":[1.5,null]}}'
    assert c.from_connect_data("t", None, {"s": 1, 52: "x", False: True}) == (
        b'{"schema":null,"payload":[["s",1],[52,"x"],[false,true]]}'
    )
    with pytest.raises(DataError, match="does not have corresponding schema type"):
        c.from_connect_data("t", None, D("1.5"))


def test_schemas_disabled_is_plain_json():
    c = converter(schemas_enable="false")
    assert c.from_connect_data("t", PERSON, Struct(PERSON, {"name": "A", "tags": []})) == b'{"name":"A","age":null,"tags":[]}'
    assert c.from_connect_data("t", Schema.OPTIONAL_INT32, None) == b"null"
    assert c.to_connect_data("t", b'{ "a": "", "b": null, "c": 1.5, "d": [1] }') == SchemaAndValue(
        None, {"a": "", "b": None, "c": 1.5, "d": [1]}
    )
    assert c.to_connect_data("t", b"true") == SchemaAndValue(None, True)
    assert c.to_connect_data("t", b"null") == SchemaAndValue.NULL


class TestTombstones:
    def test_none_value_without_schema_is_none_bytes(self):
        for c in (converter(), converter(schemas_enable=False)):
            assert c.from_connect_data("t", None, None) is None

    @pytest.mark.parametrize("data", [None, b""])
    def test_none_or_empty_bytes_read_as_null(self, data):
        for c in (converter(), converter(schemas_enable=False)):
            assert c.to_connect_data("t", data) == SchemaAndValue(None, None)

    def test_batches_keep_tombstones(self):
        c = converter()
        out = c.from_connect_batch("t", [(None, None), (Schema.INT32, 1), SchemaAndValue(None, None)])
        assert out == [None, envelope('{"type":"int32","optional":false}', "1"), None]
        assert c.to_connect_batch("t", out) == [SchemaAndValue.NULL, SchemaAndValue(Schema.INT32, 1), SchemaAndValue.NULL]


class TestNullsAndDefaults:
    def test_required_null_is_an_error(self):
        with pytest.raises(DataError, match="null value for field that is required and has no default value"):
            converter().from_connect_data("t", Schema.INT32, None)

    def test_replace_null_with_default_off_writes_null(self):
        schema = SchemaBuilder.struct().field("f", SchemaBuilder.int32().optional().default_value(5).build()).build()
        value = Struct(schema)
        assert converter().from_connect_data("t", schema, value).endswith(b',"payload":{"f":5}}')
        off = converter(replace_null_with_default=False)
        data = off.from_connect_data("t", schema, value)
        assert data.endswith(b',"payload":{"f":null}}')
        assert off.to_connect_data("t", data).value.get_without_default("f") is None
        assert converter().to_connect_data("t", data).value.get_without_default("f") == 5

    def test_required_field_with_default_and_replace_off(self):
        schema = SchemaBuilder.struct().field("f", SchemaBuilder.int32().default_value(5).build()).build()
        with pytest.raises(DataError, match="^f: "):
            converter(replace_null_with_default=False).from_connect_data("t", schema, Struct(schema))

    def test_missing_required_field_when_reading(self):
        data = envelope('{"type":"struct","fields":[{"type":"int32","optional":false,"field":"f"}],"optional":false}', "{}")
        with pytest.raises(DataError, match="^f: Invalid null value for required INT32 field"):
            converter().to_connect_data("t", data)


class TestErrors:
    def test_envelope_required_when_schemas_enabled(self):
        with pytest.raises(DataError, match='requires "schema" and "payload" fields'):
            converter().to_connect_data("t", b'{"a":1}')
        with pytest.raises(DataError, match='requires "schema" and "payload" fields'):
            converter().to_connect_data("t", b'{"schema":null,"payload":1,"extra":2}')

    def test_invalid_json(self):
        with pytest.raises(DataError, match="serialization error"):
            converter().to_connect_data("t", b"{not json")
        with pytest.raises(DataError, match="serialization error"):
            converter(schemas_enable=False).to_connect_data("t", b"NaN")

    @pytest.mark.parametrize(
        "schema_json, message",
        [
            ('{"optional":false}', "Schema must contain 'type' field"),
            ('{"type":"nope"}', "Unknown schema type: nope"),
            ('{"type":"array"}', "Array schema did not specify the element type"),
            ('{"type":"map","values":{"type":"int8"}}', "Map schema did not specify the key type"),
            ('{"type":"struct","fields":{}}', 'Struct schema\'s "fields" argument is not an array.'),
            ('{"type":"struct","fields":[{"type":"int8"}]}', "Struct schema's field name not specified properly"),
            ('{"type":"int8","parameters":{"a":1}}', "Schema parameters must have string values."),
        ],
    )
    def test_bad_schemas(self, schema_json, message):
        with pytest.raises(DataError, match=message.replace("(", r"\(").replace(".", r"\.")):
            converter().to_connect_data("t", envelope(schema_json, "null"))

    def test_type_mismatches_name_the_place(self):
        with pytest.raises(DataError, match=r"^tags\[1\]: Invalid type for STRING: expected str, got int 2"):
            converter().from_connect_data("t", PERSON, Struct._unchecked(PERSON, ["a", None, ["x", 2]]))
        with pytest.raises(DataError, match="Invalid type for FLOAT64"):
            converter().from_connect_data("t", Schema.FLOAT64, True)
        with pytest.raises(DataError, match="out of range for int8"):
            converter().from_connect_data("t", Schema.INT8, 128)
        with pytest.raises(DataError, match="Mismatching schema"):
            other = SchemaBuilder.struct().field("x", Schema.INT8).build()
            converter().from_connect_data("t", PERSON, Struct(other, {"x": 1}))
        data = envelope('{"type":"array","items":{"type":"int8","optional":false},"optional":false}', '[1,"x"]')
        with pytest.raises(DataError, match=r"^\[1\]: Invalid STRING value for int8 field"):
            converter().to_connect_data("t", data)
        with pytest.raises(DataError, match="out of range for int8"):
            converter().to_connect_data("t", envelope('{"type":"int8","optional":false}', "300"))


class TestConfig:
    def test_defaults(self):
        c = JsonConverter()
        assert (c.schemas_enabled, c.cache_size, c.decimal_numeric, c.replace_null_with_default) == (True, 1000, False, True)

    def test_every_bad_setting_is_reported_with_what_was_expected(self):
        with pytest.raises(ConfigError) as info:
            converter(decimal_format="FOO", schemas_enable="maybe", schemas_cache_size="-1")
        text = str(info.value)
        assert "decimal.format='FOO': expected one of [BASE64, NUMERIC] (any case)" in text
        assert "schemas.enable='maybe': expected true or false" in text
        assert "schemas.cache.size='-1': expected" in text and "[0,...]" in text
        assert len(info.value.problems) == 3

    def test_unknown_settings_are_ignored(self):
        converter(**{"some_other_setting": "x"})

    def test_string_values_as_in_properties_files(self):
        c = JsonConverter()
        c.configure({"schemas.enable": "false", "schemas.cache.size": "5", "decimal.format": "numeric"}, is_key=True)
        assert (c.schemas_enabled, c.cache_size, c.decimal_numeric, c.is_key) == (False, 5, True, True)
        assert c.config["converter.type"] == "key"


class TestCaches:
    def test_schema_caches_are_lru_bounded(self):
        c = converter(schemas_cache_size=2)
        for n in range(3):
            schema = SchemaBuilder.int32().version(n).build()
            c.to_connect_data("t", c.from_connect_data("t", schema, n))
        assert len(c._to_json) == 2 and len(c._to_connect) == 2

    def test_equal_schemas_share_an_entry_and_layouts_differ(self):
        c = converter()
        c.from_connect_data("t", SchemaBuilder.boolean().build(), True)
        c.from_connect_data("t", SchemaBuilder.boolean().build(), True)
        assert len(c._to_json) == 1
        c.to_connect_data("t", b'{"schema":{"type":"boolean"},"payload":true}')
        c.to_connect_data("t", b'{"schema":{"type":"boolean"},"payload":false}')
        c.to_connect_data("t", b'{"schema":{"type":"boolean","optional":false},"payload":true}')
        assert len(c._to_connect) == 2

    def test_cache_size_zero_still_works(self):
        c = converter(schemas_cache_size=0)
        data = c.from_connect_data("t", PERSON, Struct(PERSON, {"name": "a", "tags": []}))
        assert c.to_connect_data("t", data).value == Struct(PERSON, {"name": "a", "tags": []})
        assert not c._to_json and not c._to_connect

    def test_a_payload_key_inside_parameters_does_not_confuse_the_fast_path(self):
        schema = SchemaBuilder.int8().parameter("x", "1").parameter("payload", "2").build()
        c = converter()
        data = c.from_connect_data("t", schema, 5)
        assert b'"parameters":{"x":"1","payload":"2"}' in data
        for _ in range(2):
            assert c.to_connect_data("t", data) == SchemaAndValue(schema, 5)


LAYOUTS = {  # how producers other than Kafka Connect lay an envelope out
    "python json.dumps": {},
    "pretty": {"indent": 2},
    "tabs and newlines": {"indent": "\t", "separators": (" ,\r\n", " :\t")},
}


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_spaced_envelopes_read_as_compact_ones_and_parse_their_schema_once(layout):
    c = converter()
    compact = [c.from_connect_data("t", PERSON, Struct(PERSON, {"name": str(n), "age": n, "tags": ["a"]}))
               for n in range(4)]
    spaced = [json.dumps(json.loads(data), **layout).encode() for data in compact]
    spaced[2] = b"\n " + spaced[2] + b" \n"  # space around the envelope too
    reader = converter()
    assert reader.to_connect_batch("t", spaced) == [c.to_connect_data("t", data) for data in compact]
    assert [reader.to_connect_data("t", data) for data in spaced] == reader.to_connect_batch("t", spaced)
    # One entry, keyed by the schema's own text: no canonical form of it is made per record.
    (key,) = reader._to_connect
    assert json.loads(key) == json.loads(compact[0])["schema"] and spaced[0].decode().find(key) > 0


@pytest.mark.parametrize(("data", "error"), [
    (b'{"schema": {"type": "int8"}, "payload": 1} x', "serialization error"),
    (b'{"schema": {"type": "int8"}, "payload": 1, "x": 2}', "requires \"schema\" and \"payload\" fields"),
    (b'{"schema": {"type": "int8"}, "payload": 300}', "int8"),
])
def test_spaced_envelopes_fail_as_compact_ones(data, error):
    c = converter()
    good = b'{"schema": {"type": "int8"}, "payload": 1}'
    with pytest.raises(DataError, match=error):
        c.to_connect_batch("t", [good, data])
    with pytest.raises(DataError, match=error):
        c.to_connect_data("t", data)


def test_header_converter_interface():
    c = converter()
    data = c.from_connect_header("t", "h", Schema.STRING, "v")
    assert data == envelope('{"type":"string","optional":false}', '"v"')
    assert c.to_connect_header("t", "h", data) == SchemaAndValue(Schema.STRING, "v")


def test_batches_accept_headers_and_match_single_calls():
    c = converter()
    items = [SchemaAndValue(PERSON, Struct(PERSON, {"name": str(n), "tags": []})) for n in range(3)]
    out = c.from_connect_batch("t", items, [Headers()] * 3)
    assert out == [c.from_connect_data("t", s, v) for s, v in items]
    assert c.to_connect_batch("t", out, [None] * 3) == items


def test_pickles_without_its_caches():
    c = converter(decimal_format="NUMERIC")
    c.from_connect_data("t", PERSON, Struct(PERSON, {"name": "a", "tags": []}))
    copy = pickle.loads(pickle.dumps(c))
    assert copy.decimal_numeric and not copy._to_json
    assert copy.from_connect_data("t", Decimal.schema(1), D("1.5")).endswith(b"1.5}")


def test_as_json_schema_and_back():
    c = converter()
    as_json = c.as_json_schema(PERSON)
    assert list(as_json) == ["type", "fields", "optional", "name"]
    assert c.as_connect_schema(as_json) == PERSON
    assert c.as_json_schema(None) is None and c.as_connect_schema(None) is None


# --- properties ----------------------------------------------------------------------------

ROUND_TRIP = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@ROUND_TRIP
@given(schemas_and_values(), st.sampled_from(["BASE64", "NUMERIC"]))
def test_round_trip_with_schemas(schema_and_value, decimal_format):
    schema, value = schema_and_value
    c = converter(decimal_format=decimal_format)
    data = c.from_connect_data("t", schema, value)
    result = c.to_connect_data("t", data)
    assert result.schema == schema
    assert result.value == expected_after_round_trip(schema, value)
    # Deterministic: writing what was read gives the same bytes.
    assert c.from_connect_data("t", result.schema, result.value) == data
    # A fresh converter (no cache) reads the same.
    assert converter().to_connect_data("t", data) == result


@ROUND_TRIP
@given(schemas_and_values())
def test_plain_json_is_the_envelopes_payload(schema_and_value):
    schema, value = schema_and_value
    enveloped = converter().from_connect_data("t", schema, value)
    plain = converter(schemas_enable=False).from_connect_data("t", schema, value)
    schema_json = converter()._schema_json(schema).encode()
    assert enveloped == b'{"schema":' + schema_json + b',"payload":' + plain + b"}"
    assert json.loads(enveloped)["payload"] == json.loads(plain)
    assert converter(schemas_enable=False).to_connect_data("t", plain) == SchemaAndValue(None, json.loads(plain))


@settings(max_examples=200, deadline=None)
@given(json_like)
def test_schemaless_round_trip(value):
    for c in (converter(), converter(schemas_enable=False)):
        data = c.from_connect_data("t", None, value)
        if value is None:
            assert data is None
            continue
        assert json.loads(data) == ({"schema": None, "payload": value} if c.schemas_enabled else value)
        assert c.to_connect_data("t", data) == SchemaAndValue(None, value)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False))
def test_doubles_read_back_exactly(number):
    data = converter().from_connect_data("t", Schema.FLOAT64, number)
    assert converter().to_connect_data("t", data).value == number


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=False))
def test_floats_read_back_exactly(number):
    data = converter().from_connect_data("t", Schema.FLOAT32, number)
    assert converter().to_connect_data("t", data).value == number


_FRAGMENTS = st.sampled_from(
    [
        '{"schema":', ',"payload":', "}", "{", "[", "]", ",", ":", "null", "true", "1", "-1.5", "1E+999999999",
        '"AJw="', '"x"', '"type"', '"int8"', '"struct"', '"fields"', '"field"', '"array"', '"items"', '"map"',
        '"keys"', '"values"', '"optional"', '"default"', '"name"', '"parameters"', '"scale"', '"2"',
        '"org.apache.kafka.connect.data.Decimal"', '"org.apache.kafka.connect.data.Date"', '"bytes"', "300",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40) | st.lists(_FRAGMENTS, max_size=25).map(lambda parts: "".join(parts).encode()))
@example(b"0E1000000000000000000")  # beyond any Decimal's exponent: InvalidOperation, once not a DataError
def test_garbage_only_ever_raises_data_error(data):
    for c in (converter(), converter(schemas_enable=False)):
        try:
            c.to_connect_data("t", data)
        except DataError:
            pass


def test_hostile_numbers_and_nesting():
    with pytest.raises(DataError, match="out of range"):  # beyond any Decimal's exponent
        converter().to_connect_data("t", envelope(DECIMAL_2, "0E1000000000000000000"))
    with pytest.raises(DataError, match="out of range"):
        converter().to_connect_data("t", envelope('{"type":"int64","optional":false}', "1E+999999999"))
    numeric = converter().to_connect_data("t", envelope(DECIMAL_2, "1E+999999999")).value
    assert numeric == D("1E+999999999")
    with pytest.raises(DataError):
        converter().to_connect_data("t", b"[" * 100000 + b"]" * 100000)
