"""``JsonConverter``, byte-compatible with Kafka Connect's ``org.apache.kafka.connect.json.JsonConverter``.

With ``schemas.enable=true`` (the default) each key or value is an envelope
``{"schema":{...},"payload":...}``; the schema uses Kafka's type names
(``int8`` … ``int64``, ``float``, ``double``, ``boolean``, ``string``,
``bytes``, ``array``, ``map``, ``struct``) and Kafka's field order. Output is
compact JSON exactly as Jackson writes it: no spaces, non-ASCII as UTF-8,
doubles as Java prints them (``1.0``, ``1.0E20``), bytes in base64.

Speed: for each schema the converter compiles, once, the envelope prefix
(the schema's JSON) and a function that writes a payload; reading keeps the
schema's text as the cache key, so a record costs one payload parse — in
Kafka's compact layout and in any other spacing with the schema first (as
Python's ``json.dumps`` writes it); other envelopes are parsed whole. Both
caches are LRUs of ``schemas.cache.size`` entries. Struct payloads are
written and read by functions compiled per schema (see
:mod:`connectd.data._json_structs`); in a batch, a record whose schema text is
the previous record's skips the cache lookup, and, when orjson is installed,
a struct of primitive fields is parsed by orjson. Each shortcut hands any
record it is not sure of to the standard path, so results and errors are the
same with or without them.

Differences from Kafka, all on input Kafka would not write:

* Empty bytes read as ``SchemaAndValue(None, None)`` with schemas enabled too.
* Numbers that do not fit an integer schema, strings where numbers are
  expected and other type mismatches raise :class:`DataError`; Kafka's Jackson
  calls silently coerce them (``(byte) 300``, ``0`` for text).
* ``"NaN"``/``"Infinity"`` strings read back as floats (Kafka reads 0.0).
* NUMERIC decimals whose text has fewer (or exactly droppable) digits than
  the schema's scale are rescaled to it.
* A struct without a schema is written with its own schema (Kafka refuses).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import CaseInsensitiveValidString, ConfigKey, Importance, Range, Type
from connectd.data._json_structs import (
    RETRY,
    compile_payload_reader,
    compile_struct_decoder,
    compile_struct_encoder,
    is_plain_struct,
)
from connectd.data._text import decimal_text, json_double, json_float, json_quote, to_float32
from connectd.data.converter_base import Converter, HeaderConverter, check_batch_headers, converter_config_def
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.data.schema import (
    DATE_NAME,
    DECIMAL_NAME,
    INT_RANGES,
    TIME_NAME,
    TIMESTAMP_NAME,
    Field,
    Schema,
    SchemaAndValue,
    SchemaType,
    StructBase,
)
from connectd.data.struct import Struct
from connectd.errors import DataError

try:  # optional: reads flat struct payloads about three times faster than the json module
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None

if TYPE_CHECKING:
    from connectd.data.headers import Headers

__all__ = ["JsonConverter"]

Encoder = Callable[[Any], str]
Decoder = Callable[[Any], Any]

SCHEMAS_ENABLE_CONFIG = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"

_JSON_TYPE_NAMES = {
    SchemaType.BOOLEAN: "boolean",
    SchemaType.INT8: "int8",
    SchemaType.INT16: "int16",
    SchemaType.INT32: "int32",
    SchemaType.INT64: "int64",
    SchemaType.FLOAT32: "float",
    SchemaType.FLOAT64: "double",
    SchemaType.BYTES: "bytes",
    SchemaType.STRING: "string",
    SchemaType.ARRAY: "array",
    SchemaType.MAP: "map",
    SchemaType.STRUCT: "struct",
}
_SCHEMA_TYPES = {name: schema_type for schema_type, name in _JSON_TYPE_NAMES.items()}
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_ENVELOPE_START = '{"schema":'
_PAYLOAD_START = ',"payload":'
# The envelope's structure with any JSON whitespace (RFC 8259: space, tab, line feed, carriage return).
_ENVELOPE_HEAD = re.compile(r'[ \t\n\r]*\{[ \t\n\r]*"schema"[ \t\n\r]*:[ \t\n\r]*')
_PAYLOAD_HEAD = re.compile(r'[ \t\n\r]*,[ \t\n\r]*"payload"[ \t\n\r]*:[ \t\n\r]*')
_ENVELOPE_END = re.compile(r"[ \t\n\r]*\}[ \t\n\r]*\Z")
_JSON_SPACE = b" \t\n\r"
_NOTHING = object()
_ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional '
    "fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter "
    "configuration."
)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _decimal(text: str) -> decimal.Decimal:
    """A JSON number with a fraction or an exponent, exactly; one beyond any decimal's exponent
    (``0E1000000000000000000``: Java's BigDecimal refuses it too) is not valid data."""
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise ValueError(f"the number {text[:40]} is out of range") from None


# A JSON string, or the zeros leading a number (not those after a digit, a point or an exponent's sign).
_LEADING_ZEROS = re.compile(r'("(?:[^"\\]|\\.)*")|(?<![\w.+-])(-?)0+(?=[0-9])')


def _parse_allowing_leading_zeros(parse: Callable[[str], Any], text: str, error: ValueError) -> Any:
    """Parse *text*, which failed with *error*, again without zeros leading its numbers.

    Kafka's reader accepts them (Jackson's ALLOW_LEADING_ZEROS_FOR_NUMBERS: ``007``
    reads as 7); JSON does not. Only text that failed to parse comes here.
    :raises ValueError: *error*, when that does not help.
    """
    fixed = _LEADING_ZEROS.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
    if fixed != text:
        try:
            return parse(fixed)
        except (ValueError, RecursionError):
            pass
    raise error


def _node_type(value: Any) -> str:
    # Jackson's node type names, for messages that match Kafka's.
    if value is None:
        return "NULL"
    if value is True or value is False:
        return "BOOLEAN"
    if isinstance(value, (int, float, decimal.Decimal)):
        return "NUMBER"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, list):
        return "ARRAY"
    return "OBJECT"


class JsonConverter(Converter, HeaderConverter):
    """Kafka Connect's JSON converter; also a header converter.

    Settings (see ``docs/converters.md``): ``schemas.enable``, ``schemas.cache.size``,
    ``decimal.format`` (``BASE64`` or ``NUMERIC``), ``replace.null.with.default``.
    """

    config_def: ClassVar = converter_config_def(
        ConfigKey(
            SCHEMAS_ENABLE_CONFIG,
            Type.BOOLEAN,
            "Include schemas within each of the serialized values and keys: the "
            '{"schema": ..., "payload": ...} envelope. With false, plain JSON is written and read and no '
            "schema is inferred (values read back with schema null).",
            default=True,
            importance=Importance.HIGH,
            group="Schemas",
        ),
        ConfigKey(
            SCHEMAS_CACHE_SIZE_CONFIG,
            Type.INT,
            "The maximum number of schemas that can be cached in this converter instance (in each direction).",
            default=1000,
            importance=Importance.HIGH,
            validator=Range.at_least(0),
            group="Schemas",
        ),
        ConfigKey(
            DECIMAL_FORMAT_CONFIG,
            Type.STRING,
            "Controls which format this converter will serialize decimals in: BASE64 (the unscaled value's "
            "two's-complement bytes in base64) or NUMERIC (a JSON number). Case insensitive. Both formats are "
            "read whatever the setting.",
            default="BASE64",
            importance=Importance.LOW,
            validator=CaseInsensitiveValidString("BASE64", "NUMERIC"),
            group="Serialization",
        ),
        ConfigKey(
            REPLACE_NULL_WITH_DEFAULT_CONFIG,
            Type.BOOLEAN,
            "Whether to replace fields that have a default value and that are null to the default value. "
            "When set to true, the default value is used, otherwise null is used.",
            default=True,
            importance=Importance.LOW,
            group="Serialization",
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._apply()

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        super().configure(configs, is_key)
        self._apply()

    def _apply(self) -> None:
        config = self.config
        self.schemas_enabled: bool = config[SCHEMAS_ENABLE_CONFIG]
        self.cache_size: int = config[SCHEMAS_CACHE_SIZE_CONFIG]
        self.decimal_numeric: bool = config[DECIMAL_FORMAT_CONFIG].upper() == "NUMERIC"
        self.replace_null_with_default: bool = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._reset_caches()

    def _reset_caches(self) -> None:
        # schema → (envelope prefix, payload encoder, envelope encoder, compiling to come);
        # structs are compiled when their entry is used a second time.
        self._to_json: OrderedDict[Schema, tuple[str, Encoder, Encoder, bool]] = OrderedDict()
        # schema JSON text → (schema, payload decoder, orjson payload reader or None, compiling to come)
        self._to_connect: OrderedDict[str, tuple[Schema | None, Decoder, Decoder | None, bool]] = OrderedDict()
        self._json = json.JSONDecoder(parse_float=_decimal, parse_constant=_reject_constant)

    # Compiled functions are closures; drop them when pickled into Spark workers.
    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config, "is_key": self.is_key}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.config = state["config"]
        self.is_key = state["is_key"]
        self._apply()

    # -- Converter / HeaderConverter ------------------------------------------------------

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> bytes | None:
        if schema is None:
            if value is None:
                return None
            payload = self._encode_schemaless(value)
            text = '{"schema":null,"payload":' + payload + "}" if self.schemas_enabled else payload
        else:
            _, encode, envelope, _ = self._compiled(schema)
            text = envelope(value) if self.schemas_enabled else encode(value)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise DataError(f"Converting Kafka Connect data to byte[] failed due to serialization error: {exc}") from None

    def from_connect_batch(
        self,
        topic: str,
        schemas_and_values: Sequence[SchemaAndValue | tuple[Schema | None, Any]],
        headers: Sequence[Headers | None] | None = None,
    ) -> list[bytes | None]:
        check_batch_headers(schemas_and_values, headers)
        out: list[bytes | None] = []
        append = out.append
        compiled = self._compiled
        local: dict[Schema, Encoder] = {}
        which = 2 if self.schemas_enabled else 1
        last_schema: object = _NOTHING
        encode: Encoder = _plain
        for schema, value in schemas_and_values:
            if schema is not last_schema:  # a batch mostly has one schema object: skip hashing it
                if schema is None:
                    append(self.from_connect_data(topic, None, value))
                    continue
                encode = local.get(schema)  # type: ignore[assignment]
                if encode is None:
                    encode = local[schema] = compiled(schema)[which]
                last_schema = schema
            text = encode(value)
            try:
                append(text.encode("utf-8"))
            except UnicodeEncodeError as exc:
                raise DataError(f"Converting Kafka Connect data to byte[] failed due to serialization error: {exc}") from None
        return out

    def to_connect_data(self, topic: str, data: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        if not data:
            return SchemaAndValue.NULL
        try:
            text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}") from None
        if not self.schemas_enabled:
            try:
                try:
                    value = json.loads(text, parse_constant=_reject_constant)
                except ValueError as exc:
                    value = _parse_allowing_leading_zeros(
                        lambda fixed: json.loads(fixed, parse_constant=_reject_constant), text, exc
                    )
                return SchemaAndValue(None, value)
            except (ValueError, RecursionError) as exc:
                raise DataError(
                    f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
                ) from None
        schema, decode, payload = self._read_envelope(text)
        return SchemaAndValue(schema, decode(payload))

    def to_connect_batch(
        self,
        topic: str,
        datas: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None = None,
    ) -> list[SchemaAndValue]:
        check_batch_headers(datas, headers)
        if not self.schemas_enabled:
            return [self.to_connect_data(topic, data) for data in datas]
        out: list[SchemaAndValue] = []
        append = out.append
        read = self._read_envelope_keyed
        scan = self._json.scan_once
        loads = orjson.loads if orjson is not None else None
        pair = tuple.__new__
        # Records of a batch mostly share one schema. While *key*, the schema text of the
        # last record read, is the most recently used cache entry, a record starting with
        # the same text needs no slicing, hashing or cache update to find its schema.
        key: str | None = None
        prefix = ""  # '{"schema":' + key + ',"payload":' (in the compact layout)
        envelope_end = _ENVELOPE_END.match
        prefix_bytes = b""
        schema: Schema | None = None
        decode: Decoder = _plain
        reader: Decoder | None = None
        after = after_bytes = 0
        for data in datas:
            if not data:
                append(SchemaAndValue.NULL)
                continue
            if (
                reader is not None
                and data.__class__ is bytes
                and data.startswith(prefix_bytes)
                and len(data) > after_bytes + 1
                and data[-1] == 0x7D  # "}"
                and data[after_bytes] not in _JSON_SPACE
                and data[-2] not in _JSON_SPACE
            ):
                # The payload is exactly data[after_bytes:-1] (the standard way reads no
                # space around it); orjson also checks that it is valid UTF-8.
                try:
                    value = reader(loads(data[after_bytes:-1]))
                except Exception:  # not valid JSON (or UTF-8) for orjson: the standard way says why
                    value = RETRY
                if value is not RETRY:
                    append(pair(SchemaAndValue, (schema, value)))
                    continue
            try:
                text = data.decode("utf-8")
            except (UnicodeDecodeError, AttributeError):
                append(self.to_connect_data(topic, data))
                key = reader = None
                continue
            if key is not None and text.startswith(prefix):
                # What _read_envelope does for this text, as the cache already holds key.
                try:
                    payload, end = scan(text, after)
                except Exception:  # not a payload this way reads: the standard way says why
                    end = -1
                if (end == len(text) - 1 and text[end] == "}") or (end > 0 and envelope_end(text, end)):
                    append(pair(SchemaAndValue, (schema, decode(payload))))
                    continue
            schema, decode, payload, key, prefix = read(text)
            if key is not None:
                after = len(prefix)
                reader = self._to_connect[key][2] if loads is not None else None
                if reader is not None:
                    prefix_bytes = prefix.encode("utf-8")
                    after_bytes = len(prefix_bytes)
            else:
                reader = None
            append(pair(SchemaAndValue, (schema, decode(payload))))
        return out

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

    # -- schemas as JSON ---------------------------------------------------------------------

    def as_json_schema(self, schema: Schema | None) -> dict[str, Any] | None:
        """The schema's JSON form (Kafka's ``asJsonSchema``) as a dict."""
        if schema is None:
            return None
        return json.loads(self._schema_json(schema), parse_float=decimal.Decimal)

    def as_connect_schema(self, json_schema: Mapping[str, Any] | None) -> Schema | None:
        """The schema a JSON schema describes (Kafka's ``asConnectSchema``). :raises DataError: if invalid."""
        if json_schema is None:
            return None
        return self._parse_schema(json_schema)

    # -- writing -------------------------------------------------------------------------------

    def _compiled(self, schema: Schema) -> tuple[str, Encoder, Encoder, bool]:
        """(envelope prefix, payload encoder, envelope encoder, whether compiling is still to come)."""
        cache = self._to_json
        entry = cache.get(schema)
        if entry is not None:
            cache.move_to_end(schema)
            if entry[3]:  # used again: now compiling pays
                encode, envelope = self._struct_encoders(schema, entry[0])
                entry = cache[schema] = (entry[0], encode, envelope, False)  # type: ignore[assignment]
            return entry
        # First use: the step-by-step functions, quick to make, as a schema may be used only once.
        prefix = _ENVELOPE_START + self._schema_json(schema) + _PAYLOAD_START
        encode = self._encoder(schema, compiled=False)

        def envelope(value: Any) -> str:
            return prefix + encode(value) + "}"

        entry = (prefix, encode, envelope, is_plain_struct(schema))
        if self.cache_size > 0:
            cache[schema] = entry
            if len(cache) > self.cache_size:
                cache.popitem(last=False)
        return entry

    def _schema_json(self, schema: Schema) -> str:
        # Kafka's asJsonSchema: type, items | keys, values | fields, optional,
        # name, version, doc, parameters, default; a struct field's schema ends
        # with its "field" name.
        schema_type = schema.type
        parts = ['"type":"' + _JSON_TYPE_NAMES[schema_type] + '"']
        if schema_type is SchemaType.ARRAY:
            parts.append('"items":' + self._schema_json(schema._value_schema))  # type: ignore[arg-type]
        elif schema_type is SchemaType.MAP:
            parts.append('"keys":' + self._schema_json(schema._key_schema))  # type: ignore[arg-type]
            parts.append('"values":' + self._schema_json(schema._value_schema))  # type: ignore[arg-type]
        elif schema_type is SchemaType.STRUCT:
            fields = [
                self._schema_json(field.schema)[:-1] + ',"field":' + json_quote(field.name) + "}"
                for field in schema._fields
            ]
            parts.append('"fields":[' + ",".join(fields) + "]")
        parts.append('"optional":true' if schema.optional else '"optional":false')
        if schema.name is not None:
            parts.append('"name":' + json_quote(schema.name))
        if schema.version is not None:
            parts.append(f'"version":{schema.version}')
        if schema.doc is not None:
            parts.append('"doc":' + json_quote(schema.doc))
        if schema.parameters is not None:
            params = ",".join(json_quote(k) + ":" + json_quote(v) for k, v in schema.parameters.items())
            parts.append('"parameters":{' + params + "}")
        if schema.default_value is not None:
            parts.append('"default":' + self._base_encoder(schema, compiled=False)(schema.default_value))
        return "{" + ",".join(parts) + "}"

    def _encoder(self, schema: Schema, compiled: bool = True) -> Encoder:
        """A function writing a value of *schema* (``None`` handled as Kafka does) as JSON text.

        :param compiled: with structs compiled (see :mod:`connectd.data._json_structs`): faster
            to run, slower to make, so worth it for a schema used more than once.
        """
        if compiled and is_plain_struct(schema):
            return self._struct_encoders(schema)[0]
        return self._null_encoder(schema, self._base_encoder(schema, compiled))

    def _struct_encoders(self, schema: Schema, prefix: str | None = None) -> tuple[Encoder, Encoder | None]:
        """The compiled encoder of a struct schema and, with *prefix*, the one writing the whole envelope."""
        field_encoders = [self._encoder(field.schema) for field in schema._fields]
        step_by_step = self._null_encoder(schema, self._struct_encoder(schema, True, field_encoders))
        names = [json_quote(field.name) for field in schema._fields]
        replace = self.replace_null_with_default
        encode = compile_struct_encoder(schema, step_by_step, field_encoders, names, replace)
        if prefix is None:
            return encode, None

        def envelope_step_by_step(value: Any) -> str:
            return prefix + step_by_step(value) + "}"

        envelope = compile_struct_encoder(schema, envelope_step_by_step, field_encoders, names, replace, (prefix, "}"))
        return encode, envelope

    def _null_encoder(self, schema: Schema, base: Encoder) -> Encoder:
        """*base* (for values that are not ``None``) with ``None`` written as Kafka does."""
        default = schema.default_value
        if default is not None and self.replace_null_with_default:
            default_text = base(default)
            return lambda value: default_text if value is None else base(value)
        if schema.optional:
            return lambda value: "null" if value is None else base(value)

        def required(value: Any) -> str:
            if value is None:
                raise DataError("Conversion error: null value for field that is required and has no default value")
            return base(value)

        return required

    def _base_encoder(self, schema: Schema, compiled: bool = True) -> Encoder:
        """Like :meth:`_encoder` for values that are not ``None``."""
        name = schema.name
        if name is not None:
            logical = self._logical_encoder(schema, name)
            if logical is not None:
                return logical
        schema_type = schema.type
        if schema_type in INT_RANGES:
            low, high = INT_RANGES[schema_type]

            def integer(value: Any) -> str:
                if value.__class__ is int and low <= value <= high:
                    return int.__repr__(value)
                return _reject(schema, value, "int")

            return integer
        if schema_type is SchemaType.FLOAT64:
            return lambda value: json_double(value) if isinstance(value, float) else _reject(schema, value, "float")
        if schema_type is SchemaType.FLOAT32:
            return lambda value: json_float(value) if isinstance(value, float) else _reject(schema, value, "float")
        if schema_type is SchemaType.BOOLEAN:
            return lambda value: "true" if value is True else "false" if value is False else _reject(schema, value, "bool")
        if schema_type is SchemaType.STRING:
            return lambda value: json_quote(value) if isinstance(value, str) else _reject(schema, value, "str")
        if schema_type is SchemaType.BYTES:
            return lambda value: (
                '"' + base64.b64encode(value).decode("ascii") + '"'
                if isinstance(value, (bytes, bytearray, memoryview))
                else _reject(schema, value, "bytes")
            )
        if schema_type is SchemaType.ARRAY:
            return self._array_encoder(schema, compiled)
        if schema_type is SchemaType.MAP:
            return self._map_encoder(schema, compiled)
        return self._struct_encoder(schema, compiled)

    def _logical_encoder(self, schema: Schema, name: str) -> Encoder | None:
        if name == DECIMAL_NAME:
            if self.decimal_numeric:

                def numeric(value: Any) -> str:
                    if not isinstance(value, decimal.Decimal) or not value.is_finite():
                        raise DataError(f"Invalid type for Decimal, expected a finite decimal.Decimal but was {value!r}")
                    return decimal_text(value)

                return numeric
            return lambda value: '"' + base64.b64encode(Decimal.from_logical(schema, value)).decode("ascii") + '"'
        if name == DATE_NAME:
            return lambda value: int.__repr__(Date.from_logical(schema, value))
        if name == TIME_NAME:
            return lambda value: int.__repr__(Time.from_logical(schema, value))
        if name == TIMESTAMP_NAME:
            return lambda value: int.__repr__(Timestamp.from_logical(schema, value))
        return None

    def _array_encoder(self, schema: Schema, compiled: bool) -> Encoder:
        element = self._encoder(schema._value_schema, compiled)  # type: ignore[arg-type]

        def array(value: Any) -> str:
            if not isinstance(value, (list, tuple)):
                return _reject(schema, value, "list")
            try:
                return "[" + ",".join([element(item) for item in value]) + "]"
            except DataError:
                _locate_in_list(element, value)
                raise

        return array

    def _map_encoder(self, schema: Schema, compiled: bool) -> Encoder:
        key_schema: Schema = schema._key_schema  # type: ignore[assignment]
        encode_key = self._encoder(key_schema, compiled)
        encode_value = self._encoder(schema._value_schema, compiled)  # type: ignore[arg-type]
        if key_schema.type is SchemaType.STRING:
            # String keys: a JSON object (Kafka writes the key node's text, so a null key is "null").
            def object_key(key: Any) -> str:
                if key is None:
                    text = encode_key(None)  # the default's text, "null", or an error
                    return '"null"' if text == "null" else text
                if not isinstance(key, str):
                    return _reject(key_schema, key, "str")
                return json_quote(key)

            def as_object(value: Any) -> str:
                if not isinstance(value, Mapping):
                    return _reject(schema, value, "dict")
                try:
                    return "{" + ",".join([object_key(k) + ":" + encode_value(v) for k, v in value.items()]) + "}"
                except DataError:
                    _locate_in_map(object_key, encode_value, value)
                    raise

            return as_object

        # Other keys: an array of [key, value] pairs.
        def as_pairs(value: Any) -> str:
            if not isinstance(value, Mapping):
                return _reject(schema, value, "dict")
            try:
                return "[" + ",".join(["[" + encode_key(k) + "," + encode_value(v) + "]" for k, v in value.items()]) + "]"
            except DataError:
                _locate_in_map(encode_key, encode_value, value)
                raise

        return as_pairs

    def _struct_encoder(
        self, schema: Schema, compiled: bool, field_encoders: Sequence[Encoder] | None = None
    ) -> Encoder:
        """The step-by-step struct encoder: one call per field (see :mod:`connectd.data._json_structs`)."""
        if field_encoders is None:
            field_encoders = [self._encoder(field.schema, compiled) for field in schema._fields]
        plan = [
            (("," if field.index else "") + json_quote(field.name) + ":", field.index, field_encoders[field.index])
            for field in schema._fields
        ]
        names = [field.name for field in schema._fields]

        def struct(value: Any) -> str:
            if not isinstance(value, StructBase) or (value.schema is not schema and value.schema != schema):
                raise DataError(
                    "Mismatching schema." if isinstance(value, StructBase) else _mismatch_text(schema, value, "Struct")
                )
            values = value._values
            try:
                return "{" + "".join([prefix + encode(values[index]) for prefix, index, encode in plan]) + "}"
            except DataError:
                for _, index, encode in plan:
                    try:
                        encode(values[index])
                    except DataError as exc:
                        raise exc.at(names[index]) from None
                raise

        return struct

    def _encode_schemaless(self, value: Any) -> str:
        """Kafka's ``convertToJson(null, value)``: the JSON type follows the Python type."""
        if value is None:
            return "null"
        if value is True or value is False:
            return "true" if value else "false"
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float):
            return json_double(value)
        if isinstance(value, str):
            return json_quote(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return '"' + base64.b64encode(value).decode("ascii") + '"'
        if isinstance(value, (list, tuple)):
            return "[" + ",".join([self._encode_schemaless(item) for item in value]) + "]"
        if isinstance(value, Mapping):
            if all(isinstance(key, str) for key in value):
                return "{" + ",".join([json_quote(k) + ":" + self._encode_schemaless(v) for k, v in value.items()]) + "}"
            pairs = ["[" + self._encode_schemaless(k) + "," + self._encode_schemaless(v) + "]" for k, v in value.items()]
            return "[" + ",".join(pairs) + "]"
        if isinstance(value, StructBase):
            return self._compiled(value.schema)[1](value)
        raise DataError(f"Python type {type(value).__name__} does not have corresponding schema type.")

    # -- reading ------------------------------------------------------------------------------

    def _read_envelope(self, text: str) -> tuple[Schema | None, Decoder, Any]:
        """The schema, its payload decoder and the parsed payload of an envelope."""
        schema, decode, payload, _, _ = self._read_envelope_keyed(text)
        return schema, decode, payload

    def _read_envelope_keyed(self, text: str) -> tuple[Schema | None, Decoder, Any, str | None, str]:
        """:meth:`_read_envelope`, then the schema's text when it is now the most recently used cache
        key, and the text before the payload (``'{"schema":' + key + ',"payload":'`` in the compact
        layout) that a record of the same schema and layout starts with."""
        raw_decode = self._json.raw_decode
        head = _ENVELOPE_HEAD.match(text)
        if head is not None:
            # Schema first, payload second, any JSON spacing around them (Kafka writes none; Python's
            # json.dumps a space after each separator): the schema's exact text is the cache key.
            # A cached key is a complete JSON value, so when the text up to the first
            # ',"payload":' is one, that is where the schema ends.
            start = head.end()
            try:
                found = _PAYLOAD_HEAD.search(text, start)
                entry = self._to_connect.get(text[start:found.start()]) if found is not None else None
                if entry is not None:
                    split, after = found.start(), found.end()
                    entry = self._used_again(text[start:split], entry)
                else:
                    parsed, split = raw_decode(text, start)
                    found = _PAYLOAD_HEAD.match(text, split)
                    if found is None:
                        raise ValueError("not the schema, then the payload")
                    after = found.end()
                    entry = self._schema_entry(text[start:split], parsed)
                payload, end = raw_decode(text, after)
                if (end == len(text) - 1 and text[end] == "}") or _ENVELOPE_END.match(text, end):
                    key = text[start:split] if self.cache_size > 0 else None
                    return entry[0], entry[1], payload, key, text[:after]
            except (ValueError, RecursionError):
                pass
        try:
            try:
                envelope = self._json.decode(text)
            except ValueError as exc:
                envelope = _parse_allowing_leading_zeros(self._json.decode, text, exc)
        except (ValueError, RecursionError) as exc:
            raise DataError(f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}") from None
        if not isinstance(envelope, dict) or len(envelope) != 2 or "schema" not in envelope or "payload" not in envelope:
            raise DataError(_ENVELOPE_ERROR)
        key = json.dumps(envelope["schema"], sort_keys=True, separators=(",", ":"), default=str)
        schema, decode, _, _ = self._schema_entry("~" + key, envelope["schema"])
        return schema, decode, envelope["payload"], None, ""

    def _schema_entry(self, key: str, parsed: Any) -> tuple[Schema | None, Decoder, Decoder | None, bool]:
        cache = self._to_connect
        entry = cache.get(key)
        if entry is not None:
            return self._used_again(key, entry)
        if parsed is None:
            entry = (None, _plain, None, False)
        else:
            if not isinstance(parsed, dict):
                raise DataError("Schema must contain 'type' field")
            schema = self._parse_schema(parsed)
            # First use: the step-by-step decoder, quick to make, as a schema may be used only once.
            entry = (schema, self._decoder(schema, compiled=False), None, is_plain_struct(schema))
        if self.cache_size > 0:
            cache[key] = entry
            if len(cache) > self.cache_size:
                cache.popitem(last=False)
        return entry

    def _used_again(
        self, key: str, entry: tuple[Schema | None, Decoder, Decoder | None, bool]
    ) -> tuple[Schema | None, Decoder, Decoder | None, bool]:
        """A cache hit: the entry, most recently used now, and compiled if it was not yet."""
        cache = self._to_connect
        cache.move_to_end(key)
        if entry[3]:  # used again: now compiling pays
            schema: Schema = entry[0]  # type: ignore[assignment]
            reader = compile_payload_reader(schema, self.replace_null_with_default) if orjson is not None else None
            entry = cache[key] = (schema, self._decoder(schema), reader, False)
        return entry

    def _parse_schema(self, node: Mapping[str, Any]) -> Schema:
        """Kafka's ``asConnectSchema``."""
        type_name = node.get("type")
        if not isinstance(type_name, str):
            raise DataError("Schema must contain 'type' field")
        schema_type = _SCHEMA_TYPES.get(type_name)
        if schema_type is None:
            raise DataError(f"Unknown schema type: {type_name}")
        fields: list[Field] | None = None
        key_schema = value_schema = None
        if schema_type is SchemaType.ARRAY:
            items = node.get("items")
            if not isinstance(items, dict):
                raise DataError("Array schema did not specify the element type")
            value_schema = self._parse_schema(items)
        elif schema_type is SchemaType.MAP:
            if "keys" not in node:
                raise DataError("Map schema did not specify the key type")
            if "values" not in node:
                raise DataError("Map schema did not specify the value type")
            keys, values = node["keys"], node["values"]
            if not isinstance(keys, dict) or not isinstance(values, dict):
                raise DataError("Map schema's key and value schemas must be JSON objects")
            key_schema, value_schema = self._parse_schema(keys), self._parse_schema(values)
        elif schema_type is SchemaType.STRUCT:
            field_nodes = node.get("fields")
            if not isinstance(field_nodes, list):
                raise DataError("Struct schema's \"fields\" argument is not an array.")
            fields = []
            seen: set[str] = set()
            for field_node in field_nodes:
                name = field_node.get("field") if isinstance(field_node, dict) else None
                if not isinstance(name, str):
                    raise DataError("Struct schema's field name not specified properly")
                if name in seen:
                    raise DataError(f"Cannot create field because of field name duplication {name}")
                seen.add(name)
                fields.append(Field(name, len(fields), self._parse_schema(field_node)))
        version = node.get("version")
        if version.__class__ is not int:
            version = None
        parameters = None
        params_node = node.get("parameters")
        if isinstance(params_node, dict) and params_node:
            for value in params_node.values():
                if not isinstance(value, str):
                    raise DataError("Schema parameters must have string values.")
            parameters = dict(params_node)
        name = node.get("name")
        doc = node.get("doc")
        attributes = dict(
            optional=node.get("optional") is True,
            name=name if isinstance(name, str) else None,
            version=version,
            doc=doc if isinstance(doc, str) else None,
            parameters=parameters,
            fields=fields,
            key_schema=key_schema,
            value_schema=value_schema,
        )
        schema = Schema(schema_type, **attributes)
        if "default" in node:
            default = self._decoder(schema, compiled=False)(node["default"])
            if default is not None:
                schema = Schema(schema_type, default_value=default, **attributes)
        return schema

    def _decoder(self, schema: Schema, compiled: bool = True) -> Decoder:
        """A function turning a parsed JSON value into the Connect value of *schema*.

        :param compiled: with structs compiled, as for :meth:`_encoder`.
        """
        if compiled and is_plain_struct(schema):
            field_decoders = [self._decoder(field.schema) for field in schema._fields]
            step_by_step = self._null_decoder(schema, self._struct_decoder(schema, True, field_decoders))
            return compile_struct_decoder(schema, step_by_step, field_decoders, self.replace_null_with_default)
        return self._null_decoder(schema, self._base_decoder(schema, compiled))

    def _null_decoder(self, schema: Schema, base: Decoder) -> Decoder:
        """*base* (for values that are not ``None``) with ``None`` read as Kafka does."""
        default = schema.default_value
        if default is not None and self.replace_null_with_default:
            return lambda value: default if value is None else base(value)
        if schema.optional:
            return lambda value: None if value is None else base(value)
        type_name = schema.type.name

        def required(value: Any) -> Any:
            if value is None:
                raise DataError(f"Invalid null value for required {type_name} field")
            return base(value)

        return required

    def _base_decoder(self, schema: Schema, compiled: bool = True) -> Decoder:
        name = schema.name
        if name is not None:
            logical = _logical_decoder(schema, name)
            if logical is not None:
                return logical
        schema_type = schema.type
        if schema_type in INT_RANGES:
            low, high = INT_RANGES[schema_type]

            def integer(value: Any) -> int:
                if value.__class__ is not int:
                    if not isinstance(value, decimal.Decimal):
                        raise _unexpected(schema, value)
                    if value.adjusted() > 18:  # checked before int() builds a huge number
                        raise DataError(f"{value} is out of range for {schema_type.value}")
                    value = int(value)  # Java's intValue() truncates fractions
                if not low <= value <= high:
                    raise DataError(f"{value} is out of range for {schema_type.value}")
                return value

            return integer
        if schema_type is SchemaType.FLOAT64 or schema_type is SchemaType.FLOAT32:
            narrow = to_float32 if schema_type is SchemaType.FLOAT32 else float

            def floating(value: Any) -> float:
                if value.__class__ is int or isinstance(value, decimal.Decimal):
                    return narrow(float(value))
                if isinstance(value, str) and value in _NON_FINITE:
                    return _NON_FINITE[value]
                raise _unexpected(schema, value)

            return floating
        if schema_type is SchemaType.BOOLEAN:

            def boolean(value: Any) -> bool:
                if value is True or value is False:
                    return value
                raise _unexpected(schema, value)

            return boolean
        if schema_type is SchemaType.STRING:

            def string(value: Any) -> str:
                if isinstance(value, str):
                    return value
                raise _unexpected(schema, value)

            return string
        if schema_type is SchemaType.BYTES:
            return lambda value: _decode_base64(value, "Invalid bytes field")
        if schema_type is SchemaType.ARRAY:
            return self._array_decoder(schema, compiled)
        if schema_type is SchemaType.MAP:
            return self._map_decoder(schema, compiled)
        return self._struct_decoder(schema, compiled)

    def _array_decoder(self, schema: Schema, compiled: bool) -> Decoder:
        element = self._decoder(schema._value_schema, compiled)  # type: ignore[arg-type]

        def array(value: Any) -> list[Any]:
            if not isinstance(value, list):
                raise DataError(f"Arrays should be encoded as JSON arrays, but found {_node_type(value)}")
            try:
                return [element(item) for item in value]
            except DataError:
                _locate_in_list(element, value)
                raise

        return array

    def _map_decoder(self, schema: Schema, compiled: bool) -> Decoder:
        key_schema: Schema = schema._key_schema  # type: ignore[assignment]
        decode_value = self._decoder(schema._value_schema, compiled)  # type: ignore[arg-type]
        if key_schema.type is SchemaType.STRING:

            def from_object(value: Any) -> dict[Any, Any]:
                if not isinstance(value, dict):
                    raise DataError(f"Maps with string fields should be encoded as JSON objects, but found {_node_type(value)}")
                try:
                    return {key: decode_value(item) for key, item in value.items()}
                except DataError:
                    _locate_in_map(str, decode_value, value)
                    raise

            return from_object
        decode_key = self._decoder(key_schema, compiled)

        def from_pairs(value: Any) -> dict[Any, Any]:
            if not isinstance(value, list):
                raise DataError(
                    f"Maps with non-string fields should be encoded as JSON array of tuples, but found {_node_type(value)}"
                )
            result: dict[Any, Any] = {}
            for entry in value:
                if not isinstance(entry, list):
                    raise DataError(f"Found invalid map entry instead of array tuple: {_node_type(entry)}")
                if len(entry) != 2:
                    raise DataError(f"Found invalid map entry, expected length 2 but found :{len(entry)}")
                key = decode_key(entry[0])
                try:
                    result[key] = decode_value(entry[1])
                except TypeError:
                    raise DataError(f"Map key {key!r} cannot be a Python dict key (not hashable)") from None
                except DataError as exc:
                    raise exc.at(f"[{key!r}]") from None
            return result

        return from_pairs

    def _struct_decoder(
        self, schema: Schema, compiled: bool, field_decoders: Sequence[Decoder] | None = None
    ) -> Decoder:
        """The step-by-step struct decoder: one call per field (see :mod:`connectd.data._json_structs`)."""
        if field_decoders is None:
            field_decoders = [self._decoder(field.schema, compiled) for field in schema._fields]
        plan = [(field.name, field_decoders[field.index]) for field in schema._fields]
        unchecked = Struct._unchecked

        def struct(value: Any) -> Struct:
            if not isinstance(value, dict):
                raise DataError(f"Structs should be encoded as JSON objects, but found {_node_type(value)}")
            get = value.get
            try:
                return unchecked(schema, [decode(get(name)) for name, decode in plan])
            except DataError:
                for name, decode in plan:
                    try:
                        decode(get(name))
                    except DataError as exc:
                        raise exc.at(name) from None
                raise

        return struct


# --- helpers ---------------------------------------------------------------------------------


def _mismatch_text(schema: Schema, value: Any, expected: str) -> str:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"Invalid type for {schema.type.name}: expected {expected}, got {type(value).__name__} {shown}"


def _reject(schema: Schema, value: Any, expected: str) -> str:
    if expected == "int" and isinstance(value, int) and value.__class__ is not bool:
        low, high = INT_RANGES[schema.type]
        if not low <= value <= high:
            if value.__class__ is int:
                raise DataError(f"{value} is out of range for {schema.type.value} ({low} to {high})")
        else:
            return int.__repr__(value)  # an int subclass such as IntEnum
    raise DataError(_mismatch_text(schema, value, expected))


def _unexpected(schema: Schema, value: Any) -> DataError:
    return DataError(f"Invalid {_node_type(value)} value for {schema.type.value} field: {value!r}")


def _decode_base64(value: Any, message: str) -> bytes:
    if not isinstance(value, str):
        raise DataError(f"{message}: expected a base64 string, found {_node_type(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise DataError(f"{message}: not valid base64") from None


def _logical_decoder(schema: Schema, name: str) -> Decoder | None:
    if name == DECIMAL_NAME:
        scale = Decimal.scale(schema)

        def to_decimal(value: Any) -> decimal.Decimal:
            if isinstance(value, str):
                return Decimal.to_logical(schema, _decode_base64(value, "Invalid bytes for Decimal field"))
            if value.__class__ is int or isinstance(value, decimal.Decimal):
                return _rescale(decimal.Decimal(value), scale)
            raise DataError(
                f"Invalid type for Decimal, underlying representation should be numeric or bytes but was {_node_type(value)}"
            )

        return to_decimal
    if name in (DATE_NAME, TIME_NAME):
        logical = Date if name == DATE_NAME else Time
        kind = "Date" if name == DATE_NAME else "Time"
        low, high = INT_RANGES[SchemaType.INT32]

        def from_int(value: Any) -> Any:
            if value.__class__ is not int or not low <= value <= high:
                raise DataError(f"Invalid type for {kind}, underlying representation should be integer but was {_node_type(value)}")
            return logical.to_logical(schema, value)

        return from_int
    if name == TIMESTAMP_NAME:

        def from_long(value: Any) -> datetime.datetime:
            if value.__class__ is not int:
                raise DataError(
                    f"Invalid type for Timestamp, underlying representation should be integral but was {_node_type(value)}"
                )
            return Timestamp.to_logical(schema, value)

        return from_long
    return None


def _rescale(value: decimal.Decimal, scale: int) -> decimal.Decimal:
    # A JSON number's own scale is kept (as Kafka does) unless it converts exactly.
    sign, digits, exponent = value.as_tuple()
    if exponent == -scale or abs(exponent + scale) > 1000:  # type: ignore[operator]
        return value
    unscaled = int("".join(map(str, digits)) or "0")
    shift = exponent + scale  # type: ignore[operator]
    if shift > 0:
        unscaled *= 10**shift
    else:
        unscaled, remainder = divmod(unscaled, 10**-shift)
        if remainder:
            return value
    return decimal.Decimal(f"{'-' if sign else ''}{unscaled}E{-scale}")


def _plain(value: Any) -> Any:
    """A payload read without a schema: numbers with a fraction become floats."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _locate_in_list(convert: Callable[[Any], Any], items: Sequence[Any]) -> None:
    for index, item in enumerate(items):
        try:
            convert(item)
        except DataError as exc:
            raise exc.at(index) from None


def _locate_in_map(convert_key: Callable[[Any], Any], convert_value: Callable[[Any], Any], items: Mapping[Any, Any]) -> None:
    for key, item in items.items():
        try:
            convert_key(key)
            convert_value(item)
        except DataError as exc:
            raise exc.at(f"[{key!r}]") from None
