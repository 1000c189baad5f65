"""Kafka's JsonConverterTest and JsonConverterConfigTest, case by case."""

from __future__ import annotations

import base64
import datetime
import decimal
import json

import pytest

from connectd.data import DataError, JsonConverter, Schema, SchemaAndValue, SchemaBuilder, Struct
from connectd.data.logical import Date, Decimal, Time, Timestamp


UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
D = decimal.Decimal
DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"


def configured(cls, config=None):
    instance = cls()
    instance.configure(config or {}, False)
    return instance


@pytest.fixture
def converter():
    return configured(JsonConverter)


def to_connect(converter, text: str) -> SchemaAndValue:
    return converter.to_connect_data("topic", text.encode())


def envelope(converter, schema, value) -> dict:
    """The envelope written for *value*, parsed; checks it has exactly schema and payload, as validateEnvelope."""
    written = json.loads(converter.from_connect_data("topic", schema, value), parse_float=D)
    assert set(written) == {"schema", "payload"}
    return written


# --- toConnect --------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    # testConnectSchemaMetadataTranslation, booleanToConnect
    ('{ "schema": { "type": "boolean" }, "payload": true }', SchemaAndValue(Schema.BOOLEAN, True)),
    ('{ "schema": { "type": "boolean" }, "payload": false }', SchemaAndValue(Schema.BOOLEAN, False)),
    ('{ "schema": { "type": "boolean", "optional": true }, "payload": null }', SchemaAndValue(Schema.OPTIONAL_BOOLEAN, None)),
    ('{ "schema": { "type": "boolean", "default": true }, "payload": null }',
     SchemaAndValue(SchemaBuilder.boolean().default_value(True).build(), True)),
    ('{ "schema": { "type": "boolean", "optional": false, "name": "bool", "version": 2, "doc": "the documentation",'
     ' "parameters": { "foo": "bar" }}, "payload": true }',
     SchemaAndValue(SchemaBuilder.boolean().required().name("bool").version(2).doc("the documentation")
                    .parameter("foo", "bar").build(), True)),
    # byteToConnect … doubleToConnect
    ('{ "schema": { "type": "int8" }, "payload": 12 }', SchemaAndValue(Schema.INT8, 12)),
    ('{ "schema": { "type": "int16" }, "payload": 12 }', SchemaAndValue(Schema.INT16, 12)),
    ('{ "schema": { "type": "int32" }, "payload": 12 }', SchemaAndValue(Schema.INT32, 12)),
    ('{ "schema": { "type": "int64" }, "payload": 12 }', SchemaAndValue(Schema.INT64, 12)),
    ('{ "schema": { "type": "int64" }, "payload": 4398046511104 }', SchemaAndValue(Schema.INT64, 4398046511104)),
    ('{ "schema": { "type": "float" }, "payload": 12.34 }', SchemaAndValue(Schema.FLOAT32, 12.34000015258789)),
    ('{ "schema": { "type": "double" }, "payload": 12.34 }', SchemaAndValue(Schema.FLOAT64, 12.34)),
    ('{ "schema": { "type": "bytes" }, "payload": "dGVzdC1zdHJpbmc=" }', SchemaAndValue(Schema.BYTES, b"test-string")),
    ('{ "schema": { "type": "string" }, "payload": "foo-bar-baz" }', SchemaAndValue(Schema.STRING, "foo-bar-baz")),
    # arrayToConnect, mapToConnectStringKeys, mapToConnectNonStringKeys
    ('{ "schema": { "type": "array", "items": { "type" : "int32" } }, "payload": [1, 2, 3] }',
     SchemaAndValue(SchemaBuilder.array(Schema.INT32).build(), [1, 2, 3])),
    ('{ "schema": { "type": "map", "keys": { "type" : "string" }, "values": { "type" : "int32" } },'
     ' "payload": { "key1": 12, "key2": 15} }',
     SchemaAndValue(SchemaBuilder.map(Schema.STRING, Schema.INT32).build(), {"key1": 12, "key2": 15})),
    ('{ "schema": { "type": "map", "keys": { "type" : "int32" }, "values": { "type" : "int32" } },'
     ' "payload": [ [1, 12], [2, 15] ] }',
     SchemaAndValue(SchemaBuilder.map(Schema.INT32, Schema.INT32).build(), {1: 12, 2: 15})),
    # nullSchemaPrimitiveToConnect
    ('{ "schema": null, "payload": null }', SchemaAndValue.NULL),
    ('{ "schema": null, "payload": true }', SchemaAndValue(None, True)),
    ('{ "schema": null, "payload": 12 }', SchemaAndValue(None, 12)),
    ('{ "schema": null, "payload": 12.24 }', SchemaAndValue(None, 12.24)),
    ('{ "schema": null, "payload": "a string" }', SchemaAndValue(None, "a string")),
    ('{ "schema": null, "payload": [1, "2", 3] }', SchemaAndValue(None, [1, "2", 3])),
    ('{ "schema": null, "payload": { "field1": 1, "field2": 2} }', SchemaAndValue(None, {"field1": 1, "field2": 2})),
])
def test_to_connect(converter, text, expected):
    result = to_connect(converter, text)
    assert result == expected
    assert type(result.value) is type(expected.value)


@pytest.mark.parametrize(("text", "expected"), [
    ('{ "schema": { "type": "int8" }, "payload": 0012 }', SchemaAndValue(Schema.INT8, 12)),
    ('{ "schema": { "type": "int16" }, "payload": 000123 }', SchemaAndValue(Schema.INT16, 123)),
    ('{ "schema": { "type": "int32" }, "payload": 000012345 }', SchemaAndValue(Schema.INT32, 12345)),
    ('{ "schema": { "type": "int64" }, "payload": 00000123456789 }', SchemaAndValue(Schema.INT64, 123456789)),
])
def test_number_with_leading_zeros_to_connect(converter, text, expected):
    # Kafka's reader allows leading zeros (ALLOW_LEADING_ZEROS_FOR_NUMBERS), though JSON does not.
    assert to_connect(converter, text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("0012", 12),
    ("-007", -7),
    ('{"a": [00, 000.5, 1.005, 1e005], "b": "0012"}', {"a": [0, 0.5, 1.005, 1e5], "b": "0012"}),
])
def test_number_with_leading_zeros_schemaless(text, expected):
    # The same reader serves schemas.enable=false; zeros inside strings, decimals and exponents stay.
    assert configured(JsonConverter, {"schemas.enable": False}).to_connect_data("topic", text.encode()) == (None, expected)


def test_struct_to_connect(converter):
    text = ('{ "schema": { "type": "struct", "fields": [{ "field": "field1", "type": "boolean" },'
            ' { "field": "field2", "type": "string" }] }, "payload": { "field1": true, "field2": "string" } }')
    schema = SchemaBuilder.struct().field("field1", Schema.BOOLEAN).field("field2", Schema.STRING).build()
    assert to_connect(converter, text) == SchemaAndValue(schema, Struct(schema, {"field1": True, "field2": "string"}))


def test_struct_with_optional_field_to_connect(converter):
    text = ('{ "schema": { "type": "struct", "fields": [{ "field":"optional", "type": "string", "optional": true },'
            ' {  "field": "required", "type": "string" }] }, "payload": { "required": "required" } }')
    schema = SchemaBuilder.struct().field("optional", Schema.OPTIONAL_STRING).field("required", Schema.STRING).build()
    assert to_connect(converter, text) == SchemaAndValue(schema, Struct(schema, {"required": "required"}))


def test_null_to_connect(converter):
    assert converter.to_connect_data("topic", None) == SchemaAndValue.NULL


def test_empty_bytes_to_connect_schemaless():
    assert configured(JsonConverter, {"schemas.enable": False}).to_connect_data("topic", b"") == SchemaAndValue.NULL


def test_schemaless_with_empty_field_value_to_connect():
    converter = configured(JsonConverter, {"schemas.enable": False})
    assert to_connect(converter, '{ "a": "", "b": null}') == SchemaAndValue(None, {"a": "", "b": None})


def decimal_schema_text(*extra: str) -> str:
    return ('{ "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
            + "".join(f"{e}, " for e in extra) + '"parameters": { "scale": "%s" } }')


@pytest.mark.parametrize(("text", "schema", "value"), [
    # decimalToConnect … highPrecisionNumericDecimalToConnect
    ('{ "schema": %s, "payload": "AJw=" }' % (decimal_schema_text() % 2), Decimal.schema(2), D("1.56")),
    ('{ "schema": %s, "payload": null }' % (decimal_schema_text('"optional": true') % 2),
     Decimal.builder(2).optional().build(), None),
    ('{ "schema": %s, "payload": null }' % (decimal_schema_text('"default": "AJw="') % 2),
     Decimal.builder(2).default_value(D("1.56")).build(), D("1.56")),
    ('{ "schema": %s, "payload": null }' % (decimal_schema_text('"optional": true', '"default": "AJw="') % 2),
     Decimal.builder(2).optional().default_value(D("1.56")).build(), D("1.56")),
    ('{ "schema": %s, "payload": 1.56 }' % (decimal_schema_text() % 2), Decimal.schema(2), D("1.56")),
    ('{ "schema": %s, "payload": 1.5600 }' % (decimal_schema_text() % 4), Decimal.schema(4), D("1.5600")),
    ('{ "schema": %s, "payload": 1.23456789123456789 }' % (decimal_schema_text() % 17),
     Decimal.schema(17), D("1.23456789123456789")),
])
def test_decimal_to_connect(converter, text, schema, value):
    result = to_connect(converter, text)
    assert result.schema == schema
    assert result.value == value
    if value is not None:
        assert result.value.as_tuple() == value.as_tuple()  # BigDecimal equality includes the scale


def logical_text(kind: str, name: str, *extra: str) -> str:
    return '{ "type": "%s", "name": "org.apache.kafka.connect.data.%s", "version": 1%s }' % (
        kind, name, "".join(f", {e}" for e in extra))


@pytest.mark.parametrize(("schema_text", "payload", "schema", "value"), [
    (logical_text("int32", "Date"), "10000", Date.SCHEMA, datetime.date(1970, 1, 1) + datetime.timedelta(days=10000)),
    (logical_text("int32", "Date", '"optional": true'), "null", Date.builder().optional().build(), None),
    (logical_text("int32", "Date", '"default": 0'), "null",
     Date.builder().default_value(datetime.date(1970, 1, 1)).build(), datetime.date(1970, 1, 1)),
    (logical_text("int32", "Date", '"optional": true', '"default": 0'), "null",
     Date.builder().optional().default_value(datetime.date(1970, 1, 1)).build(), datetime.date(1970, 1, 1)),
    (logical_text("int32", "Time"), "14400000", Time.SCHEMA, datetime.time(4)),
    (logical_text("int32", "Time", '"optional": true'), "null", Time.builder().optional().build(), None),
    (logical_text("int32", "Time", '"default": 0'), "null",
     Time.builder().default_value(datetime.time(0)).build(), datetime.time(0)),
    (logical_text("int32", "Time", '"optional": true', '"default": 0'), "null",
     Time.builder().optional().default_value(datetime.time(0)).build(), datetime.time(0)),
    (logical_text("int64", "Timestamp"), "4000000000", Timestamp.SCHEMA, EPOCH + datetime.timedelta(milliseconds=4_000_000_000)),
    (logical_text("int64", "Timestamp", '"optional": true'), "null", Timestamp.builder().optional().build(), None),
    (logical_text("int64", "Timestamp", '"default": 42'), "null",
     Timestamp.builder().default_value(EPOCH + datetime.timedelta(milliseconds=42)).build(),
     EPOCH + datetime.timedelta(milliseconds=42)),
    (logical_text("int64", "Timestamp", '"optional": true', '"default": 42'), "null",
     Timestamp.builder().optional().default_value(EPOCH + datetime.timedelta(milliseconds=42)).build(),
     EPOCH + datetime.timedelta(milliseconds=42)),
])
def test_logical_to_connect(converter, schema_text, payload, schema, value):
    assert to_connect(converter, '{ "schema": %s, "payload": %s }' % (schema_text, payload)) == SchemaAndValue(schema, value)


def test_cache_schema_to_connect_conversion(converter):
    # sizeOfToConnectSchemaCache: one entry per distinct schema text.
    assert len(converter._to_connect) == 0
    to_connect(converter, '{ "schema": { "type": "boolean" }, "payload": true }')
    to_connect(converter, '{ "schema": { "type": "boolean" }, "payload": true }')
    assert len(converter._to_connect) == 1
    to_connect(converter, '{ "schema": { "type": "boolean", "optional": true }, "payload": true }')
    assert len(converter._to_connect) == 2
    to_connect(converter, '{ "schema": { "type": "boolean", "optional": false }, "payload": true }')
    assert len(converter._to_connect) == 3


# --- fromConnect ------------------------------------------------------------------------


@pytest.mark.parametrize(("schema", "value", "schema_json", "payload"), [
    # testJsonSchemaMetadataTranslation, booleanToJson … stringToJson
    (Schema.BOOLEAN, True, {"type": "boolean", "optional": False}, True),
    (Schema.OPTIONAL_BOOLEAN, None, {"type": "boolean", "optional": True}, None),
    (SchemaBuilder.boolean().default_value(True).build(), True, {"type": "boolean", "optional": False, "default": True}, True),
    (SchemaBuilder.boolean().required().name("bool").version(3).doc("the documentation").parameter("foo", "bar").build(), True,
     {"type": "boolean", "optional": False, "name": "bool", "version": 3, "doc": "the documentation",
      "parameters": {"foo": "bar"}}, True),
    (Schema.INT8, 12, {"type": "int8", "optional": False}, 12),
    (Schema.INT16, 12, {"type": "int16", "optional": False}, 12),
    (Schema.INT32, 12, {"type": "int32", "optional": False}, 12),
    (Schema.INT64, 4398046511104, {"type": "int64", "optional": False}, 4398046511104),
    (Schema.FLOAT64, 12.34, {"type": "double", "optional": False}, D("12.34")),
    (Schema.BYTES, b"test-string", {"type": "bytes", "optional": False}, base64.b64encode(b"test-string").decode()),
    (Schema.STRING, "test-string", {"type": "string", "optional": False}, "test-string"),
    # arrayToJson, mapToJsonStringKeys
    (SchemaBuilder.array(Schema.INT32).build(), [1, 2, 3],
     {"type": "array", "items": {"type": "int32", "optional": False}, "optional": False}, [1, 2, 3]),
    (SchemaBuilder.map(Schema.STRING, Schema.INT32).build(), {"key1": 12, "key2": 15},
     {"type": "map", "keys": {"type": "string", "optional": False}, "values": {"type": "int32", "optional": False},
      "optional": False}, {"key1": 12, "key2": 15}),
    # decimalToJson, dateToJson, timeToJson, timestampToJson
    (Decimal.schema(2), D("1.56"),
     {"type": "bytes", "optional": False, "name": DECIMAL_NAME, "version": 1, "parameters": {"scale": "2"}},
     base64.b64encode(bytes([0, 0x9C])).decode()),
    (Date.SCHEMA, datetime.date(1970, 1, 1) + datetime.timedelta(days=10000),
     {"type": "int32", "optional": False, "name": "org.apache.kafka.connect.data.Date", "version": 1}, 10000),
    (Time.SCHEMA, datetime.time(4),
     {"type": "int32", "optional": False, "name": "org.apache.kafka.connect.data.Time", "version": 1}, 14400000),
    (Timestamp.SCHEMA, EPOCH + datetime.timedelta(milliseconds=4_000_000_000),
     {"type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}, 4000000000),
])
def test_to_json(converter, schema, value, schema_json, payload):
    written = envelope(converter, schema, value)
    assert written == {"schema": schema_json, "payload": payload}


def test_float_to_json(converter):
    written = envelope(converter, Schema.FLOAT32, 12.34)
    assert written["schema"] == {"type": "float", "optional": False}
    assert abs(float(written["payload"]) - 12.34) < 0.001


def test_map_to_json_non_string_keys(converter):
    written = envelope(converter, SchemaBuilder.map(Schema.INT32, Schema.INT32).build(), {1: 12, 2: 15})
    assert written["schema"] == {"type": "map", "keys": {"type": "int32", "optional": False},
                                 "values": {"type": "int32", "optional": False}, "optional": False}
    assert sorted(written["payload"]) == [[1, 12], [2, 15]]


def test_struct_to_json(converter):
    schema = (SchemaBuilder.struct().field("field1", Schema.BOOLEAN).field("field2", Schema.STRING)
              .field("field3", Schema.STRING).field("field4", Schema.BOOLEAN).build())
    value = Struct(schema, {"field1": True, "field2": "string2", "field3": "string3", "field4": False})
    assert envelope(converter, schema, value) == {
        "schema": {"type": "struct", "optional": False, "fields": [
            {"field": "field1", "type": "boolean", "optional": False},
            {"field": "field2", "type": "string", "optional": False},
            {"field": "field3", "type": "string", "optional": False},
            {"field": "field4", "type": "boolean", "optional": False},
        ]},
        "payload": {"field1": True, "field2": "string2", "field3": "string3", "field4": False},
    }


def test_struct_schema_identical(converter):
    def build():
        return (SchemaBuilder.struct().field("field1", Schema.BOOLEAN).field("field2", Schema.STRING)
                .field("field3", Schema.STRING).field("field4", Schema.BOOLEAN).build())
    schema, input_schema = build(), build()
    value = Struct(input_schema, {"field1": True, "field2": "string2", "field3": "string3", "field4": False})
    converter.from_connect_data("topic", schema, value)
    assert value.schema == schema


@pytest.mark.parametrize(("schema", "value", "payload"), [
    (Decimal.schema(2), D("1.56"), "1.56"),       # decimalToNumericJson
    (Decimal.schema(4), D("1.5600"), "1.5600"),   # decimalWithTrailingZerosToNumericJson
])
def test_decimal_to_numeric_json(schema, value, payload):
    converter = configured(JsonConverter, {"decimal.format": "NUMERIC"})
    written = envelope(converter, schema, value)
    assert written["schema"] == {"type": "bytes", "optional": False, "name": DECIMAL_NAME, "version": 1,
                                 "parameters": {"scale": schema.parameters["scale"]}}
    assert isinstance(written["payload"], D) and str(written["payload"]) == payload


def test_decimal_to_json_without_schema(converter):
    with pytest.raises(DataError):
        converter.from_connect_data("topic", None, D("1.56"))


@pytest.mark.parametrize(("value", "payload"), [
    (True, True),                                                             # nullSchemaAndPrimitiveToJson
    ([1, "string", True], [1, "string", True]),                               # nullSchemaAndArrayToJson
    ({"key1": 12, "key2": "string", "key3": True}, {"key1": 12, "key2": "string", "key3": True}),  # nullSchemaAndMapToJson
])
def test_null_schema_to_json(converter, value, payload):
    written = json.loads(converter.from_connect_data("topic", None, value))
    assert written == {"schema": None, "payload": payload}


def test_null_schema_and_map_non_string_keys_to_json(converter):
    written = json.loads(converter.from_connect_data("topic", None, {"string": 12, 52: "string", False: True}))
    assert written["schema"] is None
    assert sorted(written["payload"], key=json.dumps) == sorted([["string", 12], [52, "string"], [False, True]], key=json.dumps)


@pytest.mark.parametrize("schemas_enable", [True, False])  # nullSchemaAndNullValueToJson, nullValueToJson
def test_null_schema_and_null_value_to_json(schemas_enable):
    converter = configured(JsonConverter, {"schemas.enable": schemas_enable})
    assert converter.from_connect_data("topic", None, None) is None


def test_mismatch_schema_json(converter):
    with pytest.raises(DataError):
        converter.from_connect_data("topic", Schema.FLOAT64, True)


def test_no_schema_to_connect_and_to_json():
    converter = configured(JsonConverter, {"schemas.enable": False})
    assert converter.to_connect_data("topic", b"true") == SchemaAndValue(None, True)
    assert converter.from_connect_data("topic", None, True) == b"true"


def test_cache_schema_to_json_conversion(converter):
    # sizeOfFromConnectSchemaCache: equal schemas share an entry.
    assert len(converter._to_json) == 0
    converter.from_connect_data("topic", SchemaBuilder.boolean().build(), True)
    converter.from_connect_data("topic", SchemaBuilder.boolean().build(), True)
    assert len(converter._to_json) == 1
    converter.from_connect_data("topic", SchemaBuilder.boolean().optional().build(), True)
    assert len(converter._to_json) == 2


# testJsonSchemaCacheSizeFromConfigFile reads a Java test resource; configuring from a properties file is
# tested with the worker configuration. testVersionRetrievedFromAppInfoParser: connectd converters have no version().


def test_string_header(converter):
    written = json.loads(converter.from_connect_header("topic", "headerName", Schema.STRING, "test-string"))
    assert written == {"schema": {"type": "string", "optional": False}, "payload": "test-string"}
    read = converter.to_connect_header("topic", "headerName", b'{ "schema": { "type": "string" }, "payload": "foo-bar-baz" }')
    assert read == SchemaAndValue(Schema.STRING, "foo-bar-baz")


OPTIONAL_WITH_DEFAULT = SchemaBuilder.string().optional().default_value("default").build()
OPTIONAL_WITH_DEFAULT_JSON = '{"type":"string","optional":true,"default":"default"}'
STRUCT_WITH_DEFAULT = SchemaBuilder.struct().field("field1", OPTIONAL_WITH_DEFAULT).build()
STRUCT_WITH_DEFAULT_JSON = ('{"type":"struct","fields":[{"type":"string","optional":true,"default":"default",'
                            '"field":"field1"}],"optional":false}')


@pytest.mark.parametrize(("replace", "payload"), [(True, '"default"'), (False, "null")])
def test_serialize_null(replace, payload):
    # serializeNullToDefault, serializeNullToNull
    converter = configured(JsonConverter, {"replace.null.with.default": replace})
    written = converter.from_connect_data("topic", OPTIONAL_WITH_DEFAULT, None)
    assert written == ('{"schema":%s,"payload":%s}' % (OPTIONAL_WITH_DEFAULT_JSON, payload)).encode()


@pytest.mark.parametrize(("replace", "payload"), [(True, '"default"'), (False, "null")])
def test_serialize_field_null(replace, payload):
    # serializeFieldNullToDefault, serializeFieldNullToNull
    converter = configured(JsonConverter, {"replace.null.with.default": replace})
    written = converter.from_connect_data("topic", STRUCT_WITH_DEFAULT, Struct(STRUCT_WITH_DEFAULT))
    assert written == ('{"schema":%s,"payload":{"field1":%s}}' % (STRUCT_WITH_DEFAULT_JSON, payload)).encode()


@pytest.mark.parametrize(("replace", "expected"), [(True, "default"), (False, None)])
def test_deserialize_null(replace, expected):
    # deserializeNullToDefault, deserializeNullToNull
    converter = configured(JsonConverter, {"replace.null.with.default": replace})
    read = to_connect(converter, '{"schema":%s,"payload":null}' % OPTIONAL_WITH_DEFAULT_JSON)
    assert read.value == expected


@pytest.mark.parametrize(("replace", "expected"), [(True, "default"), (False, None)])
def test_deserialize_field_null(replace, expected):
    # deserializeFieldNullToDefault, deserializeFieldNullToNull
    converter = configured(JsonConverter, {"replace.null.with.default": replace})
    read = to_connect(converter, '{"schema":%s,"payload":{"field1":null}}' % STRUCT_WITH_DEFAULT_JSON)
    assert read.value == Struct(STRUCT_WITH_DEFAULT).put("field1", expected)
    assert read.value.get_without_default("field1") == expected


# --- JsonConverterConfigTest ------------------------------------------------------------


def test_decimal_format_config_is_case_insensitive():
    converter = configured(JsonConverter, {"converter.type": "key", "decimal.format": "NuMeRiC"})
    assert converter.from_connect_data("topic", Decimal.schema(2), D("1.56")).endswith(b'"payload":1.56}')
