"""``Cast``: cast fields, or the whole key or value, to another primitive type.

``spec=age:int32,score:float64`` casts two fields of a struct or map;
``spec=int64`` casts the whole key or value. Numbers narrow as Java's do
(``(byte) 300`` is 44, ``(int) 1.9`` is 1), strings parse as Java's
``Long.parseLong`` / ``Double.parseDouble`` would, booleans become 1 or 0 and
back (``"true"`` in any case is true, anything else false), and anything
casts to a string as Kafka Connect prints it (bytes in base64, dates in ISO
8601). Logical types cast to numbers as the number they are stored as
(days, milliseconds); Decimal as its value.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, Importance, Type, Validator
from connectd.data import DataError, Schema, SchemaBuilder, SchemaType, Struct, convert_to_string
from connectd.data.logical import Date, Time, Timestamp
from connectd.transforms.base import (
    KeyOrValue,
    KeySide,
    ValueSide,
    build_with_default,
    copy_schema_basics,
    is_logical,
    replace_null_key,
    require_map,
    require_struct,
)

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["Cast", "CastKey", "CastValue"]

PURPOSE = "cast types"

_T = SchemaType
INPUT_TYPES = (_T.INT8, _T.INT16, _T.INT32, _T.INT64, _T.FLOAT32, _T.FLOAT64, _T.BOOLEAN, _T.STRING, _T.BYTES)
OUTPUT_TYPES = INPUT_TYPES[:-1]
_TYPE_LIST = ", ".join(t.value for t in OUTPUT_TYPES)
_BITS = {_T.INT8: 8, _T.INT16: 16, _T.INT32: 32, _T.INT64: 64}
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_FLOAT = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_F32 = struct.Struct("<f")

#: The key of a whole-value cast in the parsed spec.
WHOLE_VALUE = None


def parse_spec(items: list[str]) -> dict[str | None, SchemaType]:
    """``["a:int32", "b:string"]`` → ``{"a": INT32, "b": STRING}``; ``["int64"]`` → ``{None: INT64}``.

    :raises ValueError: ``expected …`` naming the bad entry.
    """
    if not items:
        raise ValueError("expected at least one field:type pair, or a single type to cast the whole value to")
    casts: dict[str | None, SchemaType] = {}
    wrong: list[str] = []
    for item in items:
        parts = item.split(":")
        if len(parts) > 2 or not all(part.strip() for part in parts):
            wrong.append(f"{item!r} is not field:type or a type")
            continue
        field = parts[0].strip() if len(parts) == 2 else WHOLE_VALUE
        type_name = parts[-1].strip()
        try:
            target = SchemaType(type_name.lower())
        except ValueError:
            wrong.append(f"{type_name!r} in {item!r} is not a type")
            continue
        if target not in OUTPUT_TYPES:
            wrong.append(f"{item!r} casts to {target.value}, which Cast cannot produce")
            continue
        casts[field] = target
    if wrong:
        raise ValueError(f"expected field:type pairs or a single type, with types from {_TYPE_LIST}; " + "; ".join(wrong))
    if WHOLE_VALUE in casts and len(items) > 1:
        raise ValueError("expected a single entry when casting the whole value to one type, got several")
    return casts


class _SpecValidator(Validator):
    def __call__(self, value: Any) -> None:
        if value is not None:
            parse_spec(value)

    def describe(self) -> str:
        return "list of field:type pairs (e.g. a:int32,b:string), or one type for the whole value"


class Cast(KeyOrValue):
    """Cast fields, or the whole key or value, to int8, int16, int32, int64, float32, float64, boolean or string.

    Use :class:`CastKey` or :class:`CastValue` (Kafka's ``Cast$Key`` / ``Cast$Value``).
    """

    Key: ClassVar[type[Cast]]
    Value: ClassVar[type[Cast]]

    config_def = ConfigDef([
        ConfigKey(
            "spec", Type.LIST,
            "Fields and the type to cast each to, as field1:type,field2:type, for structs and maps; or a single "
            f"type to cast the whole key or value to. Types are {_TYPE_LIST}; bytes can only be cast to string "
            "(base64).",
            importance=Importance.HIGH, validator=_SpecValidator(),
        ),
        replace_null_key(),
    ])

    def setup(self, config: dict[str, Any]) -> None:
        self.casts = parse_spec(config["spec"])
        self.whole_value_type = self.casts.get(WHOLE_VALUE)
        self.replace_null_with_default: bool = config["replace.null.with.default"]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            return self._apply_schemaless(record, value)
        return self._apply_with_schema(record, schema, value)

    def _apply_schemaless(self, record: ConnectRecord, value: Any) -> ConnectRecord:
        if self.whole_value_type is not None:
            return self.new_record(record, None, cast_value(None, value, self.whole_value_type))
        original = require_map(value, PURPOSE)
        updated = dict(original)
        for field, target in self.casts.items():
            updated[field] = cast_value(None, original.get(field), target)
        return self.new_record(record, None, updated)

    def _apply_with_schema(self, record: ConnectRecord, schema: Schema, value: Any) -> ConnectRecord:
        if self.whole_value_type is not None:
            updated_schema = self.schema_cache.get(schema, self._build_schema)
            return self.new_record(record, updated_schema, cast_value(schema, value, self.whole_value_type))
        struct = require_struct(value, PURPOSE)
        updated_schema = self.schema_cache.get(struct.schema, self._build_schema)
        return self.new_record(record, updated_schema, self._cast_struct(struct, updated_schema))

    def _cast_struct(self, struct: Struct, updated_schema: Schema) -> Struct:
        updated = Struct(updated_schema)
        get = struct.get if self.replace_null_with_default else struct.get_without_default
        for field in struct.schema.fields:
            original = get(field)
            target = self.casts.get(field.name)
            updated.put(field.name, cast_value(field.schema, original, target) if target is not None else original)
        return updated

    def _build_schema(self, schema: Schema) -> Schema:
        if self.whole_value_type is not None:
            target = self.whole_value_type
            # A logical type's name must not survive a cast to another type.
            builder = SchemaBuilder(target) if is_logical(schema) else copy_schema_basics(schema, SchemaBuilder(target))
            if schema.optional:
                builder.optional()
            if schema.default_value is not None:
                builder.default_value(cast_value(schema, schema.default_value, target))
            return builder.build()
        if schema.type is not SchemaType.STRUCT:
            raise DataError(f"Only Struct objects supported for [{PURPOSE}], found: {schema.type.value} schema")
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            target = self.casts.get(field.name)
            if target is None:
                builder.field(field.name, field.schema)
                continue
            field_builder = SchemaBuilder(target)
            if field.schema.optional:
                field_builder.optional()
            if field.schema.default_value is not None:
                field_builder.default_value(cast_value(field.schema, field.schema.default_value, target))
            builder.field(field.name, field_builder.build())
        if schema.optional:
            builder.optional()
        default = schema.default_value
        if default is None:
            return builder.build()
        return build_with_default(builder, lambda plain: self._cast_struct(default, plain))


class CastKey(KeySide, Cast):
    """``Cast`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.Cast$Key``)."""


class CastValue(ValueSide, Cast):
    """``Cast`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.Cast$Value``)."""


Cast.Key = CastKey
Cast.Value = CastValue


# --- casting one value --------------------------------------------------------------


def _inferred_type(value: Any) -> SchemaType | None:
    if value is True or value is False:
        return _T.BOOLEAN
    if isinstance(value, int):
        return _T.INT64
    if isinstance(value, float):
        return _T.FLOAT64
    if isinstance(value, str):
        return _T.STRING
    if isinstance(value, (bytes, bytearray)):
        return _T.BYTES
    if isinstance(value, (list, tuple)):
        return _T.ARRAY
    if isinstance(value, Mapping):
        return _T.MAP
    if isinstance(value, Struct):
        return _T.STRUCT
    return None


def cast_value(schema: Schema | None, value: Any, target: SchemaType) -> Any:
    """*value* (of *schema*, or of the type its Python type implies) cast to *target*.

    :raises DataError: for a type Cast cannot read, or a string that is not a number of *target*.
    """
    if value is None:
        return None
    source = schema.type if schema is not None else _inferred_type(value)
    if source is None:
        raise DataError(
            f"Cast transformation was passed a value of type {type(value).__name__} "
            "which is not supported by Connect's data API"
        )
    if source not in INPUT_TYPES:
        raise DataError(
            f"Cast transformation does not support casting from {source.value}; supported types are "
            + ", ".join(t.value for t in INPUT_TYPES)
        )
    if target is _T.STRING:
        return convert_to_string(schema, value)
    if schema is not None and schema.name is not None:
        value = _stored_form(schema, value)
    try:
        if target in _BITS:
            return _to_integer(value, _BITS[target])
        if target is _T.FLOAT64:
            return _to_float(value)
        if target is _T.FLOAT32:
            return _to_float32(_to_float(value))
        if target is _T.BOOLEAN:
            return _to_boolean(value)
    except (ValueError, OverflowError):
        raise DataError(f"Value ({value}) was out of range for requested data type {target.value}") from None
    raise DataError(f"{target.value} is not supported in the Cast transformation.")  # pragma: no cover - checked above


def _stored_form(schema: Schema, value: Any) -> Any:
    # Date, Time and Timestamp cast as the number Kafka stores; Decimal as its value.
    if schema.name == Date.LOGICAL_NAME and isinstance(value, datetime.date):
        return Date.from_logical(schema, value)
    if schema.name == Time.LOGICAL_NAME and isinstance(value, datetime.time):
        return Time.from_logical(schema, value)
    if schema.name == Timestamp.LOGICAL_NAME and isinstance(value, datetime.datetime):
        return Timestamp.from_logical(schema, value)
    return value


def _wrap(number: int, bits: int) -> int:
    """Java's narrowing of an integer to *bits* bits (two's complement, wrapping)."""
    mask = (1 << bits) - 1
    number &= mask
    return number - (1 << bits) if number >> (bits - 1) else number


def _java_float_to_int(number: float, bits: int) -> int:
    # Java: (int) d or (long) d saturate and truncate; NaN is 0. byte and short go through int.
    if math.isnan(number):
        return 0
    wide = 64 if bits == 64 else 32
    low, high = -(1 << (wide - 1)), (1 << (wide - 1)) - 1
    if math.isinf(number):
        whole = high if number > 0 else low
    else:
        whole = max(low, min(high, math.trunc(number)))
    return _wrap(whole, bits)


def _to_integer(value: Any, bits: int) -> int:
    if value is True or value is False:
        return int(value)
    if isinstance(value, int):
        return _wrap(value, bits)
    if isinstance(value, float):
        return _java_float_to_int(value, bits)
    if isinstance(value, decimal.Decimal):
        return _wrap(int(value), bits)
    if isinstance(value, str):
        if not _JAVA_INTEGER.fullmatch(value):
            raise ValueError(value)
        number = int(value)
        if _wrap(number, bits) != number:
            raise ValueError(value)
        return number
    raise DataError(f"Unexpected type in Cast transformation: {type(value).__name__}")


def _to_float(value: Any) -> float:
    if value is True or value is False:
        return 1.0 if value else 0.0
    if isinstance(value, (int, float, decimal.Decimal)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if not _JAVA_FLOAT.fullmatch(text):
            raise ValueError(value)
        return float(text[:-1] if text[-1] in "fFdD" else text)
    raise DataError(f"Unexpected type in Cast transformation: {type(value).__name__}")


def _to_float32(number: float) -> float:
    try:
        return _F32.unpack(_F32.pack(number))[0]
    except OverflowError:
        return math.copysign(math.inf, number)


def _to_boolean(value: Any) -> bool:
    if value is True or value is False:
        return value
    if isinstance(value, float):
        return _java_float_to_int(value, 64) != 0
    if isinstance(value, (int, decimal.Decimal)):
        return _wrap(int(value), 64) != 0
    if isinstance(value, str):
        return value.lower() == "true"
    raise DataError(f"Unexpected type in Cast transformation: {type(value).__name__}")

