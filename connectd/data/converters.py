"""The built-in converters, each a drop-in for its Kafka Connect namesake.

=====================  ==================================================  =========================================
class                  Kafka class                                         bytes
=====================  ==================================================  =========================================
StringConverter        org.apache.kafka.connect.storage.StringConverter    the text in ``converter.encoding``
ByteArrayConverter     org.apache.kafka.connect.converters.ByteArray…      passed through
ShortConverter         …connect.converters.ShortConverter                  2-byte big-endian two's complement
IntegerConverter       …connect.converters.IntegerConverter                4-byte big-endian two's complement
LongConverter          …connect.converters.LongConverter                   8-byte big-endian two's complement
FloatConverter         …connect.converters.FloatConverter                  4-byte big-endian IEEE 754
DoubleConverter        …connect.converters.DoubleConverter                 8-byte big-endian IEEE 754
BooleanConverter       …connect.converters.BooleanConverter                1 byte, 0 or 1
JsonConverter          org.apache.kafka.connect.json.JsonConverter         see :mod:`connectd.data.json_converter`
SimpleHeaderConverter  org.apache.kafka.connect.storage.SimpleHeader…      see :mod:`connectd.data.values`
=====================  ==================================================  =========================================

:data:`BUILTIN_CONVERTERS` lists each class with the names it is found by.
"""

from __future__ import annotations

import codecs
import re
import struct
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigKey, Importance, Type, Validator
from connectd.data._text import java_string
from connectd.data.converter_base import Converter, HeaderConverter, check_batch_headers, converter_config_def
from connectd.data.json_converter import JsonConverter
from connectd.data.schema import INT_RANGES, Schema, SchemaAndValue, SchemaType
from connectd.data.values import convert_to_string, parse_string
from connectd.errors import DataError

if TYPE_CHECKING:
    from connectd.data.headers import Headers

__all__ = [
    "BUILTIN_CONVERTERS",
    "BooleanConverter",
    "ByteArrayConverter",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "JsonConverter",
    "LongConverter",
    "ShortConverter",
    "SimpleHeaderConverter",
    "StringConverter",
]


class _Charset(Validator):
    """A text encoding Python knows under the Java name (UTF-8, ISO-8859-1, UTF-16, windows-1252, …)."""

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        try:
            "".encode(str(value))
        except LookupError:
            raise ValueError("expected the name of a character set such as UTF-8, ISO-8859-1 or UTF-16") from None

    def describe(self) -> str:
        return "a character set name (UTF-8, US-ASCII, ISO-8859-1, UTF-16, …)"


class _Codec:
    """Java's charset behaviour: unmappable characters become ``?``, malformed bytes U+FFFD,
    and UTF-16/UTF-32 are big-endian (UTF-16 with a byte-order mark), as the JVM writes them."""

    __slots__ = ("encode", "decode", "plain")

    def __init__(self, name: str) -> None:
        canonical = codecs.lookup(name).name
        if canonical == "utf-16":
            self.encode = lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be", "replace")
            self.decode = lambda data: data.decode(
                "utf-16" if data[:2] in (codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE) else "utf-16-be", "replace"
            )
        elif canonical == "utf-32":
            self.encode = lambda text: text.encode("utf-32-be", "replace")
            self.decode = lambda data: data.decode(
                "utf-32" if data[:4] in (codecs.BOM_UTF32_BE, codecs.BOM_UTF32_LE) else "utf-32-be", "replace"
            )
        else:
            self.encode = lambda text: text.encode(canonical, "replace")
            self.decode = lambda data: data.decode(canonical, "replace")
        #: The codec's name where ``str.encode(name, "replace")`` is all ``encode`` does (not UTF-16/32).
        self.plain = canonical if canonical not in ("utf-16", "utf-32") else None


class StringConverter(Converter, HeaderConverter):
    """Values as text: writes ``str(value)`` as Java would print it, reads an optional string.

    Strings are written as they are, other values as Java's ``toString`` prints
    them (``true``, ``1.5``, ``[a, b]``, ``{k=v}``, ``Struct{a=1}``); bytes are
    passed through unchanged.
    """

    config_def: ClassVar = converter_config_def(
        ConfigKey(
            "converter.encoding",
            Type.STRING,
            "The name of the character set to use for encoding strings as byte arrays (Java names work).",
            default="UTF-8",
            importance=Importance.HIGH,
            validator=_Charset(),
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._codec = _Codec("UTF-8")

    def configure(self, configs: Any, is_key: bool = False) -> None:
        super().configure(configs, is_key)
        self._codec = _Codec(self.config["converter.encoding"])

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config, "is_key": self.is_key}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.config, self.is_key = state["config"], state["is_key"]
        self._codec = _Codec(self.config["converter.encoding"])

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, str):
            return self._codec.encode(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        return self._codec.encode(java_string(value, schema))

    def to_connect_data(self, topic: str, data: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(Schema.OPTIONAL_STRING, None)
        return SchemaAndValue(Schema.OPTIONAL_STRING, self._codec.decode(bytes(data)))

    def from_connect_batch(self, topic, schemas_and_values, headers=None):  # type: ignore[no-untyped-def]
        # Strings (the usual values), integers (keys) and nulls without a call each; anything else as one record.
        encode, convert, plain = self._codec.encode, self.from_connect_data, self._codec.plain
        if plain is not None:  # str.encode itself: no call of ours per record
            return [None if value is None else value.encode(plain, "replace") if type(value) is str
                    else int.__repr__(value).encode(plain, "replace") if type(value) is int
                    else convert(topic, schema, value) for schema, value in schemas_and_values]
        return [None if value is None else encode(value) if type(value) is str else convert(topic, schema, value)
                for schema, value in schemas_and_values]

    def to_connect_batch(self, topic, datas, headers=None):  # type: ignore[no-untyped-def]
        check_batch_headers(datas, headers)
        decode, schema = self._codec.decode, Schema.OPTIONAL_STRING
        null = SchemaAndValue(schema, None)  # immutable: shared by every null
        return [null if data is None else SchemaAndValue(schema, decode(bytes(data))) for data in datas]

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)


class ByteArrayConverter(Converter, HeaderConverter):
    """Raw bytes in and out; the schema, if any, must be ``bytes``."""

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None) -> bytes | None:
        if schema is not None and schema.type is not SchemaType.BYTES:
            raise DataError(f"Invalid schema type for ByteArrayConverter: {schema.type.name}")
        if value is None:
            return None
        if isinstance(value, bytes):
            return value
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        raise DataError(f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}")

    def to_connect_data(self, topic: str, data: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        return SchemaAndValue(Schema.OPTIONAL_BYTES, None if data is None else bytes(data))

    def from_connect_batch(self, topic, schemas_and_values, headers=None):  # type: ignore[no-untyped-def]
        check_batch_headers(schemas_and_values, headers)
        convert = self.from_connect_data
        return [
            value if value.__class__ is bytes and (schema is None or schema.type is SchemaType.BYTES)
            else convert(topic, schema, value)
            for schema, value in schemas_and_values
        ]

    def to_connect_batch(self, topic, datas, headers=None):  # type: ignore[no-untyped-def]
        check_batch_headers(datas, headers)
        schema = Schema.OPTIONAL_BYTES
        return [SchemaAndValue(schema, data if data is None or data.__class__ is bytes else bytes(data)) for data in datas]

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)


class _NumberConverter(Converter, HeaderConverter):
    """Kafka's serializer formats for one number type; reads always give the optional schema."""

    result_schema: ClassVar[Schema]
    type_name: ClassVar[str]
    _format: ClassVar[struct.Struct]

    def _check(self, value: Any) -> Any:
        raise NotImplementedError

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None) -> bytes | None:
        if value is None:
            return None
        return self._format.pack(self._check(value))

    def to_connect_data(self, topic: str, data: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(self.result_schema, None)
        if len(data) != self._format.size:
            raise DataError(
                f"Failed to deserialize {self.type_name}: Size of data received by "
                f"{self.type_name.capitalize()}Deserializer is not {self._format.size}"
            )
        return SchemaAndValue(self.result_schema, self._format.unpack(data)[0])

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)


class _IntegralConverter(_NumberConverter):
    _range: ClassVar[tuple[int, int]]

    def _check(self, value: Any) -> int:
        if value.__class__ is bool or not isinstance(value, int):
            raise DataError(f"Failed to serialize to {self.type_name} (was {type(value).__name__})")
        low, high = self._range
        if not low <= value <= high:
            raise DataError(f"Failed to serialize to {self.type_name}: {value} is out of range ({low} to {high})")
        return value


class _FloatingConverter(_NumberConverter):
    def _check(self, value: Any) -> float:
        if not isinstance(value, float):
            raise DataError(f"Failed to serialize to {self.type_name} (was {type(value).__name__})")
        return value

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None) -> bytes | None:
        try:
            return super().from_connect_data(topic, schema, value, headers)
        except OverflowError:
            raise DataError(f"Failed to serialize to {self.type_name}: {value!r} is out of range") from None


class ShortConverter(_IntegralConverter):
    """int16 values as Kafka's ``ShortSerializer`` writes them (2 bytes, big-endian)."""

    result_schema = Schema.OPTIONAL_INT16
    type_name = "short"
    _format = struct.Struct(">h")
    _range = INT_RANGES[SchemaType.INT16]


class IntegerConverter(_IntegralConverter):
    """int32 values as Kafka's ``IntegerSerializer`` writes them (4 bytes, big-endian)."""

    result_schema = Schema.OPTIONAL_INT32
    type_name = "integer"
    _format = struct.Struct(">i")
    _range = INT_RANGES[SchemaType.INT32]


class LongConverter(_IntegralConverter):
    """int64 values as Kafka's ``LongSerializer`` writes them (8 bytes, big-endian)."""

    result_schema = Schema.OPTIONAL_INT64
    type_name = "long"
    _format = struct.Struct(">q")
    _range = INT_RANGES[SchemaType.INT64]


class FloatConverter(_FloatingConverter):
    """float32 values as Kafka's ``FloatSerializer`` writes them (4 bytes, big-endian IEEE 754)."""

    result_schema = Schema.OPTIONAL_FLOAT32
    type_name = "float"
    _format = struct.Struct(">f")


class DoubleConverter(_FloatingConverter):
    """float64 values as Kafka's ``DoubleSerializer`` writes them (8 bytes, big-endian IEEE 754)."""

    result_schema = Schema.OPTIONAL_FLOAT64
    type_name = "double"
    _format = struct.Struct(">d")


class BooleanConverter(Converter, HeaderConverter):
    """Booleans as Kafka's ``BooleanSerializer`` writes them: one byte, 1 for true and 0 for false."""

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None) -> bytes | None:
        if schema is not None and schema.type is not SchemaType.BOOLEAN:
            raise DataError(f"Invalid schema type for BooleanConverter: {schema.type.name}")
        if value is None:
            return None
        if value is True:
            return b"\x01"
        if value is False:
            return b"\x00"
        raise DataError(f"BooleanConverter is not compatible with objects of type {type(value).__name__}")

    def to_connect_data(self, topic: str, data: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(Schema.OPTIONAL_BOOLEAN, None)
        if len(data) != 1:
            raise DataError("Failed to deserialize boolean: Size of data received by BooleanDeserializer is not 1")
        if data[0] > 1:
            raise DataError(f"Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: {data[0]}")
        return SchemaAndValue(Schema.OPTIONAL_BOOLEAN, data[0] == 1)

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)


class SimpleHeaderConverter(HeaderConverter):
    """Header values as UTF-8 text in Kafka's ``Values`` format, with the schema inferred on reading.

    See :mod:`connectd.data.values` for the format. Text that cannot be parsed
    is kept as bytes, as Kafka does.
    """

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        # Most header values are plain strings and integers, whose text is the same whatever the schema.
        cls = value.__class__
        if cls is str:
            return value.encode("utf-8")
        if cls is int:
            return int.__repr__(value).encode("ascii")
        if value is None:
            return None
        return convert_to_string(schema, value).encode("utf-8")  # type: ignore[union-attr]

    def from_connect_headers_batch(self, topic, headers):  # type: ignore[no-untyped-def]
        # As from_connect_header, with strings and integers inline: a source adds headers to every record.
        convert = self.from_connect_header
        return [[(key, value.encode("utf-8") if value.__class__ is str
                  else int.__repr__(value).encode("ascii") if value.__class__ is int
                  else convert(topic, key, schema, value)) for key, schema, value in record] if record else None
                for record in headers]

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue.NULL
        try:
            text = value.decode("utf-8", "replace") if value.__class__ is bytes else bytes(value).decode("utf-8", "replace")
            # What parse_string gives for the common texts, without tokenizing them.
            if _SHORT_INTEGER(text):
                number = int(text)
                for low, high, schema in _INTEGER_SCHEMAS:
                    if low <= number <= high:
                        return SchemaAndValue(schema, number)
            if _PLAIN_TEXT(text) and text.rstrip() not in _LITERALS:
                return SchemaAndValue(Schema.STRING, text)
            return parse_string(text)
        except Exception:  # as Kafka: whatever cannot be parsed stays bytes
            return SchemaAndValue(Schema.BYTES, bytes(value))


# Texts parse_string reads as an integer (up to 18 digits always fit int64), and as themselves:
# no delimiter, and not starting like a number or with white space (which parse_string strips).
_SHORT_INTEGER = re.compile(r"-?[0-9]{1,18}").fullmatch
_PLAIN_TEXT = re.compile(r'[^\s0-9+\-:,{}\[\]"][^:,{}\[\]"]*').fullmatch
_LITERALS = frozenset(("true", "false", "null"))
_INTEGER_SCHEMAS = tuple(
    (*INT_RANGES[schema.type], schema) for schema in (Schema.INT8, Schema.INT16, Schema.INT32, Schema.INT64)
)


def _aliases(cls: type, java_package: str) -> tuple[str, ...]:
    return (cls.__name__, f"{java_package}.{cls.__name__}")


#: Each built-in converter class with the names a configuration may use for it.
BUILTIN_CONVERTERS: list[tuple[type, tuple[str, ...]]] = [
    (StringConverter, _aliases(StringConverter, "org.apache.kafka.connect.storage")),
    (JsonConverter, _aliases(JsonConverter, "org.apache.kafka.connect.json")),
    (ByteArrayConverter, _aliases(ByteArrayConverter, "org.apache.kafka.connect.converters")),
    (ShortConverter, _aliases(ShortConverter, "org.apache.kafka.connect.converters")),
    (IntegerConverter, _aliases(IntegerConverter, "org.apache.kafka.connect.converters")),
    (LongConverter, _aliases(LongConverter, "org.apache.kafka.connect.converters")),
    (FloatConverter, _aliases(FloatConverter, "org.apache.kafka.connect.converters")),
    (DoubleConverter, _aliases(DoubleConverter, "org.apache.kafka.connect.converters")),
    (BooleanConverter, _aliases(BooleanConverter, "org.apache.kafka.connect.converters")),
    (SimpleHeaderConverter, _aliases(SimpleHeaderConverter, "org.apache.kafka.connect.storage")),
]
