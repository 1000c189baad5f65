"""``MaskField``: replace fields with an empty value of their type, or with a replacement."""

from __future__ import annotations

import datetime
import decimal
import math
import re
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, Importance, NonEmptyString, Type
from connectd.data import DataError, Schema, SchemaType, Struct
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.transforms.base import (
    KeyOrValue,
    KeySide,
    NonEmptyList,
    ValueSide,
    replace_null_key,
    require_map,
    require_struct,
)

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["MaskField", "MaskFieldKey", "MaskFieldValue"]

PURPOSE = "mask fields"
_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_INT_RANGES = {
    SchemaType.INT8: 8, SchemaType.INT16: 16, SchemaType.INT32: 32, SchemaType.INT64: 64,
}
_F32 = struct.Struct("<f")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class MaskField(KeyOrValue):
    """Mask fields with the empty value of their type (0, false, "", empty array or map, the epoch).

    With ``replacement``, numeric and string fields get that value instead,
    converted to the field's type. Use :class:`MaskFieldKey` or
    :class:`MaskFieldValue` (Kafka's ``MaskField$Key`` / ``MaskField$Value``).
    """

    Key: ClassVar[type[MaskField]]
    Value: ClassVar[type[MaskField]]

    config_def = ConfigDef([
        ConfigKey("fields", Type.LIST, "Names of the fields to mask.", importance=Importance.HIGH,
                  validator=NonEmptyList()),
        ConfigKey("replacement", Type.STRING,
                  "A value to mask the fields with instead of the empty value of their type, converted to the "
                  "field's type. Only numeric and string fields can take it.",
                  default=None, importance=Importance.LOW, validator=NonEmptyString()),
        replace_null_key(),
    ])

    def setup(self, config: dict[str, Any]) -> None:
        self.fields: list[str] = config["fields"]
        self._masked = frozenset(self.fields)
        self.replacement: str | None = config["replacement"]
        self.replace_null_with_default: bool = config["replace.null.with.default"]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            original = require_map(value, PURPOSE)
            updated = dict(original)
            for field in self.fields:
                updated[field] = self._mask(None, original.get(field))
            return self.new_record(record, None, updated)
        struct = require_struct(value, PURPOSE)
        updated_struct = Struct(struct.schema)
        get = struct.get if self.replace_null_with_default else struct.get_without_default
        for field in struct.schema.fields:
            original = get(field)
            updated_struct.put(field, self._mask(field.schema, original) if field.name in self._masked else original)
        return self.new_record(record, schema, updated_struct)

    def _mask(self, schema: Schema | None, value: Any) -> Any:
        if value is None:
            return None
        if self.replacement is None:
            return _empty(schema, value)
        return _replacement(schema, value, self.replacement)


def _describe(schema: Schema | None, value: Any) -> str:
    if schema is not None:
        return f'"{schema.name}"' if schema.name else schema.type.value
    return type(value).__name__


def _empty(schema: Schema | None, value: Any) -> Any:
    if schema is not None:
        name, kind = schema.name, schema.type
        if name == Decimal.LOGICAL_NAME:
            return decimal.Decimal(0).scaleb(-Decimal.scale(schema))
        if name == Date.LOGICAL_NAME:
            return _EPOCH.date()
        if name == Time.LOGICAL_NAME:
            return datetime.time(0)
        if name == Timestamp.LOGICAL_NAME:
            return _EPOCH
        if kind in _INT_RANGES:
            return 0
        if kind in (SchemaType.FLOAT32, SchemaType.FLOAT64):
            return 0.0
        if kind is SchemaType.BOOLEAN:
            return False
        if kind is SchemaType.STRING:
            return ""
        if kind is SchemaType.ARRAY:
            return []
        if kind is SchemaType.MAP:
            return {}
        raise DataError(f"Cannot mask value of type: {_describe(schema, value)}")
    if value is True or value is False:
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, str):
        return ""
    if isinstance(value, datetime.datetime):
        return _EPOCH
    if isinstance(value, datetime.date):
        return _EPOCH.date()
    if isinstance(value, datetime.time):
        return datetime.time(0)
    if isinstance(value, (list, tuple)):
        return []
    if isinstance(value, Mapping):
        return {}
    raise DataError(f"Cannot mask value of type: {_describe(schema, value)}")


def _replacement(schema: Schema | None, value: Any, text: str) -> Any:
    kind = schema.type if schema is not None else None
    name = schema.name if schema is not None else None
    if name == Decimal.LOGICAL_NAME or (schema is None and isinstance(value, decimal.Decimal)):
        number = _parse_number(text)
        return number.quantize(decimal.Decimal(1).scaleb(-Decimal.scale(schema))) if schema is not None else number
    if name is not None:
        raise DataError(f"Cannot mask value of type {_describe(schema, value)} with custom replacement.")
    if kind in _INT_RANGES or (schema is None and isinstance(value, int) and not isinstance(value, bool)):
        # Kafka's Values: BigDecimal(text).longValue(), then narrowed as Java narrows (wrapping).
        bits = _INT_RANGES.get(kind, 64)  # type: ignore[arg-type]
        number = int(_parse_number(text)) & ((1 << 64) - 1)
        number &= (1 << bits) - 1
        return number - (1 << bits) if number >> (bits - 1) else number
    if kind in (SchemaType.FLOAT32, SchemaType.FLOAT64) or (schema is None and isinstance(value, float)):
        # BigDecimal(text).doubleValue(): too large is infinite, as in Kafka.
        number = float(_parse_number(text))
        return _to_float32(number) if kind is SchemaType.FLOAT32 else number
    if kind is SchemaType.STRING or (schema is None and isinstance(value, str)):
        return text
    raise DataError(f"Cannot mask value of type {_describe(schema, value)} with custom replacement.")


def _to_float32(number: float) -> float:
    try:
        return _F32.unpack(_F32.pack(number))[0]
    except OverflowError:
        return math.copysign(math.inf, number)


def _parse_number(text: str) -> decimal.Decimal:
    if not _NUMBER.fullmatch(text.strip()):
        raise DataError(f"Unable to convert {text} (str) to number")
    return decimal.Decimal(text.strip())


class MaskFieldKey(KeySide, MaskField):
    """``MaskField`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.MaskField$Key``)."""


class MaskFieldValue(ValueSide, MaskField):
    """``MaskField`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.MaskField$Value``)."""


MaskField.Key = MaskFieldKey
MaskField.Value = MaskFieldValue
