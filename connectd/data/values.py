"""Kafka Connect's ``Values`` text format: what ``SimpleHeaderConverter`` writes and reads.

Writing (:func:`convert_to_string`): strings as they are, numbers as Java
prints them, ``true``/``false``, bytes in base64, arrays ``[1,2,3]``, maps
and structs ``{"key":value,...}`` (strings inside them quoted, ``\\`` and
``"`` escaped), dates ``2024-05-01``, times ``13:45:00.000Z``, timestamps
``2024-05-01T13:45:00.000Z``. As in Kafka the format follows the instant, not
the type: one before 1970-01-02 is written as a time, a later midnight as a date.

Reading (:func:`parse_string`) infers a schema from the text as Kafka does:
``null``; booleans; whole numbers as the smallest of int8/int16/int32/int64
that holds them; other numbers as float32, float64 or Decimal; ISO dates,
times and timestamps; ``[...]`` arrays and ``{...}`` maps whose elements share
a (widened) type; anything else is a string.

Converting (``convert_to_boolean`` … ``convert_to_decimal``, Kafka's
``Values.convertTo*``) gives a value as the asked-for type whatever it arrived
as: numbers widen or narrow, numeric text is read, other text is parsed as
above, Date/Time/Timestamp values count as days or milliseconds.

Where connectd reads differently from Kafka (it never writes differently):

* Arrays and maps holding ``null`` get an optional element schema; Kafka
  gives up and returns the whole text as a string.
* Arrays and maps without one common element type (or empty) get schema
  ``None``; Kafka uses a schema without an element schema.
* Escaped ``\\"`` and ``\\\\`` inside quoted strings are unescaped; Kafka keeps
  the backslashes.
* Text with something after a complete value (``1,2``) is a string; Kafka
  returns the first value.
* Dates and times must be valid (Kafka's parser rolls ``2024-13-01`` over
  into 2025).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import math
import re
from collections.abc import Mapping
from typing import Any

from connectd.data._text import decimal_text, java_double, java_float, to_float32
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.data.schema import INT_RANGES, Schema, SchemaAndValue, SchemaType, StructBase
from connectd.data.schema_builder import SchemaBuilder
from connectd.errors import DataError

__all__ = [
    "convert_to_boolean",
    "convert_to_byte",
    "convert_to_date",
    "convert_to_decimal",
    "convert_to_double",
    "convert_to_float",
    "convert_to_integer",
    "convert_to_list",
    "convert_to_long",
    "convert_to_map",
    "convert_to_short",
    "convert_to_string",
    "convert_to_struct",
    "convert_to_time",
    "convert_to_timestamp",
    "infer_schema",
    "parse_string",
]

_UTC = datetime.timezone.utc
_MILLIS_PER_DAY = 86_400_000
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


# --- writing ----------------------------------------------------------------------


def convert_to_string(schema: Schema | None, value: Any) -> str | None:
    """The text form of *value* (``None`` for ``None``). :raises DataError: for unsupported values."""
    if value is None:
        return None
    out: list[str] = []
    _append(out, value, schema, embedded=False)
    return "".join(out)


def _date_text(value: datetime.date | datetime.time) -> str:
    # As Kafka's Values.dateFormatFor, the format follows the instant, not the type: before the end
    # of the epoch's first day it is a time, at a later midnight a date, otherwise a timestamp.
    if isinstance(value, datetime.datetime):
        millis = Timestamp.from_logical(Timestamp.SCHEMA, value)
    elif isinstance(value, datetime.date):
        millis = (value.toordinal() - _EPOCH_ORDINAL) * _MILLIS_PER_DAY
    else:
        millis = Time.from_logical(Time.SCHEMA, value)
    days, of_day = divmod(millis, _MILLIS_PER_DAY)
    seconds, ms = divmod(of_day, 1000)
    time = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{ms:03d}Z"
    if millis < _MILLIS_PER_DAY:
        return time
    date = datetime.date.fromordinal(_EPOCH_ORDINAL + days)
    date_text = f"{date.year:04d}-{date.month:02d}-{date.day:02d}"
    return date_text if of_day == 0 else f"{date_text}T{time}"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _append(out: list[str], value: Any, schema: Schema | None, embedded: bool) -> None:
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(java_float(value) if schema is not None and schema.type is SchemaType.FLOAT32 else java_double(value))
    elif isinstance(value, decimal.Decimal):
        out.append(decimal_text(value))
    elif isinstance(value, str):
        out.append('"' + _escape(value) + '"' if embedded else value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        encoded = base64.b64encode(value).decode("ascii")
        out.append('"' + encoded + '"' if embedded else encoded)
    elif isinstance(value, (list, tuple)):
        element = schema._value_schema if schema is not None else None
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _append(out, item, element, True)
        out.append("]")
    elif isinstance(value, Mapping):
        key_schema = schema._key_schema if schema is not None else None
        value_schema = schema._value_schema if schema is not None else None
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(",")
            _append(out, key, key_schema, True)
            out.append(":")
            _append(out, item, value_schema, True)
        out.append("}")
    elif isinstance(value, StructBase):
        out.append("{")
        for field in value.schema._fields:
            if field.index:
                out.append(",")
            _append(out, field.name, None, True)
            out.append(":")
            item = value._values[field.index]
            _append(out, field.schema.default_value if item is None else item, field.schema, True)
        out.append("}")
    elif isinstance(value, (datetime.date, datetime.time)):
        out.append(_date_text(value))
    else:
        raise DataError(f"Failed to serialize unexpected value type {type(value).__name__}: {value!r}")


# --- inferring -----------------------------------------------------------------------


def infer_schema(value: Any) -> Schema | None:
    """A schema for *value* when one can be told from its Python type, else ``None``.

    ``int`` is int64, ``float`` float64; lists and dicts need one element type
    (``None`` elements make it optional); decimals, dates, times and
    timestamps get their logical schemas.
    """
    if isinstance(value, str):
        return Schema.STRING
    if value is True or value is False:
        return Schema.BOOLEAN
    if isinstance(value, int):
        return Schema.INT64
    if isinstance(value, float):
        return Schema.FLOAT64
    if isinstance(value, (bytes, bytearray)):
        return Schema.BYTES
    if isinstance(value, decimal.Decimal):
        return Decimal.schema(-value.as_tuple().exponent) if value.is_finite() else None  # type: ignore[operator]
    if isinstance(value, datetime.datetime):
        return Timestamp.SCHEMA
    if isinstance(value, datetime.date):
        return Date.SCHEMA
    if isinstance(value, datetime.time):
        return Time.SCHEMA
    if isinstance(value, StructBase):
        return value.schema
    if isinstance(value, (list, tuple)):
        element = _common_inferred(value)
        return SchemaBuilder.array(element).build() if element is not None else None
    if isinstance(value, Mapping):
        keys = _common_inferred(value.keys())
        items = _common_inferred(value.values())
        return SchemaBuilder.map(keys, items).build() if keys is not None and items is not None else None
    return None


def _common_inferred(values: Any) -> Schema | None:
    common: Schema | None = None
    optional = False
    for item in values:
        if item is None:
            optional = True
            continue
        schema = infer_schema(item)
        if schema is None or (common is not None and schema != common):
            return None
        common = schema
    if common is None:
        return None
    return _as_optional(common) if optional else common


def _as_optional(schema: Schema) -> Schema:
    if schema.optional:
        return schema
    if schema.type.is_primitive and schema.name is None and schema.default_value is None and not schema.parameters:
        return getattr(Schema, "OPTIONAL_" + schema.type.name)
    return SchemaBuilder.from_schema(schema).optional().build()


# --- parsing -----------------------------------------------------------------------------

_DELIMITERS = frozenset(':,{}[]"')
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME_RE = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")
_TIMESTAMP_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")
_UNESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)
_TRUE = SchemaAndValue(Schema.BOOLEAN, True)
_FALSE = SchemaAndValue(Schema.BOOLEAN, False)
_BIGGER_THAN_LONG = decimal.Decimal("1e19")
_NUMERIC_ORDER = {
    SchemaType.INT8: 0,
    SchemaType.INT16: 1,
    SchemaType.INT32: 2,
    SchemaType.INT64: 3,
    SchemaType.FLOAT32: 4,
    SchemaType.FLOAT64: 5,
}


def parse_string(text: str | None) -> SchemaAndValue:
    """Parse the text form back into a schema and value (see the module docs for the rules)."""
    if text is None:
        return SchemaAndValue.NULL
    if text == "":
        return SchemaAndValue(Schema.STRING, text)
    parser = _Parser(text)
    result = parser.parse(embedded=False)
    if parser.rest_is_blank():
        return result if result is not None else SchemaAndValue.NULL
    return SchemaAndValue(Schema.STRING, text)


def _tokenize(text: str) -> list[str]:
    # Kafka's tokenizer: the delimiters : , { } [ ] " are tokens of their own
    # unless escaped with a backslash; everything between them is one token.
    tokens: list[str] = []
    start = 0
    escaped = False
    for index, char in enumerate(text):
        if char == "\\":
            escaped = not escaped
        elif char in _DELIMITERS:
            if escaped:
                escaped = False
            else:
                if start < index:
                    tokens.append(text[start:index])
                tokens.append(char)
                start = index + 1
        else:
            escaped = False
    if start < len(text):
        tokens.append(text[start:])
    return tokens


class _Parser:
    __slots__ = ("text", "tokens", "pos")

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def has_next(self) -> bool:
        return self.pos < len(self.tokens)

    def rest_is_blank(self) -> bool:
        return all(not token.strip() for token in self.tokens[self.pos:])

    def next(self) -> str:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def can_consume(self, expected: str) -> bool:
        """Whether the next non-blank token is *expected*; consumes it if so (blanks are skipped either way)."""
        tokens = self.tokens
        position = self.pos
        if position >= len(tokens):
            return False
        while not tokens[position].strip() and position + 1 < len(tokens):
            position += 1
        self.pos = position
        if tokens[position].strip() == expected:
            self.pos = position + 1
            return True
        return False

    def literal(self, embedded: bool, word: str) -> bool:
        start = self.pos
        if self.can_consume(word) and (embedded or not self.has_next()):
            return True
        self.pos = start
        return False

    def parse(self, embedded: bool) -> SchemaAndValue | None:
        """The next value; ``None`` for ``null`` (or nothing left)."""
        if not self.has_next():
            return None
        if embedded and self.can_consume('"'):
            return self.parse_quoted()
        if self.literal(embedded, "null"):
            return None
        if self.literal(embedded, "true"):
            return _TRUE
        if self.literal(embedded, "false"):
            return _FALSE
        start = self.pos
        try:
            if self.can_consume("["):
                return self.parse_array()
            if self.can_consume("{"):
                return self.parse_map()
        except DataError:
            self.pos = start
        if not self.has_next():
            return None
        token = self.next()
        if not token.strip():
            return SchemaAndValue(Schema.STRING, token)
        return self.parse_token(embedded, token.strip())

    def parse_token(self, embedded: bool, token: str) -> SchemaAndValue:
        first = token[0]
        if "0" <= first <= "9":
            temporal = self.parse_temporal_tokens(token)
            if temporal is not None:
                return temporal
        if "0" <= first <= "9" or first in "+-":
            number = _parse_number(token)
            if number is not None:
                return number
        if embedded:
            raise DataError("Failed to parse embedded value")
        return SchemaAndValue(Schema.STRING, self.text)

    def parse_temporal_tokens(self, token: str) -> SchemaAndValue | None:
        # Unescaped colons split times and timestamps into five tokens.
        mark = self.pos
        if mark + 4 <= len(self.tokens):
            temporal = _parse_temporal(token + "".join(self.tokens[mark : mark + 4]))
            if temporal is not None:
                self.pos = mark + 4
                return temporal
        return _parse_temporal(token)

    def parse_quoted(self) -> SchemaAndValue:
        parts: list[str] = []
        while self.has_next():
            token = self.next()
            if token == '"':
                break
            parts.append(token)
        content = _UNESCAPE_RE.sub(r"\1", "".join(parts))
        temporal = _parse_temporal(content)
        return temporal if temporal is not None else SchemaAndValue(Schema.STRING, content)

    def parse_array(self) -> SchemaAndValue:
        result: list[Any] = []
        merger = _SchemaMerger()
        while self.has_next():
            if self.can_consume("]"):
                schema = merger.schema()
                if schema is None:
                    return SchemaAndValue(None, result)
                return SchemaAndValue(SchemaBuilder.array(schema).build(), [_align(schema, v) for v in result])
            if self.can_consume(","):
                raise DataError(f"Unable to parse an empty array element: {self.text}")
            element = self.parse(embedded=True)
            merger.merge(element)
            result.append(element.value if element is not None else None)
            mark = self.pos
            if self.can_consume("]"):
                self.pos = mark
            elif not self.can_consume(","):
                raise DataError("Array elements missing ',' delimiter")
        raise DataError(f"Array is missing terminating ']': {self.text}")

    def parse_map(self) -> SchemaAndValue:
        result: dict[Any, Any] = {}
        keys = _SchemaMerger()
        values = _SchemaMerger()
        while self.has_next():
            if self.can_consume("}"):
                key_schema, value_schema = keys.schema(), values.schema()
                if key_schema is None or value_schema is None:
                    return SchemaAndValue(None, result)
                aligned = {_align(key_schema, k): _align(value_schema, v) for k, v in result.items()}
                return SchemaAndValue(SchemaBuilder.map(key_schema, value_schema).build(), aligned)
            if self.can_consume(","):
                raise DataError(f"Unable to parse a map entry with no key or value: {self.text}")
            key = self.parse(embedded=True)
            if key is None or key.value is None:
                raise DataError(f"Map entry may not have a null key: {self.text}")
            if not self.can_consume(":"):
                raise DataError(f"Map entry is missing ':' in {self.text}")
            value = self.parse(embedded=True)
            try:
                result[key.value] = value.value if value is not None else None
            except TypeError:
                raise DataError(f"Map key is not hashable: {key.value!r}") from None
            self.can_consume(",")
            keys.merge(key)
            values.merge(value)
        raise DataError(f"Map is missing terminating '}}': {self.text}")


def _parse_temporal(token: str) -> SchemaAndValue | None:
    token = token.replace("\\:", ":")
    try:
        if len(token) == 13 and (match := _TIME_RE.fullmatch(token)):
            hour, minute, second, millis = map(int, match.groups())
            return SchemaAndValue(Time.SCHEMA, datetime.time(hour, minute, second, millis * 1000))
        if len(token) == 24 and (match := _TIMESTAMP_RE.fullmatch(token)):
            year, month, day, hour, minute, second, millis = map(int, match.groups())
            moment = datetime.datetime(year, month, day, hour, minute, second, millis * 1000, tzinfo=_UTC)
            return SchemaAndValue(Timestamp.SCHEMA, moment)
        if len(token) == 10 and (match := _DATE_RE.fullmatch(token)):
            return SchemaAndValue(Date.SCHEMA, datetime.date(*map(int, match.groups())))
    except ValueError:  # not a real date or time
        return None
    return None


def _parse_number(token: str) -> SchemaAndValue | None:
    if not _NUMBER_RE.fullmatch(token):
        return None
    number = decimal.Decimal(token)
    magnitude = abs(number)
    if magnitude <= _BIGGER_THAN_LONG and (magnitude >= 1 or magnitude == 0) and number == number.to_integral_value():
        integral = int(number)
        for schema_type in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64):
            low, high = INT_RANGES[schema_type]
            if low <= integral <= high:
                return SchemaAndValue(getattr(Schema, schema_type.name), integral)
    exponent = number.as_tuple().exponent
    if exponent != 0:
        as_double = float(number)
        as_float = to_float32(as_double)
        if not math.isinf(as_float):
            return SchemaAndValue(Schema.FLOAT32, as_float)
        if not math.isinf(as_double):
            return SchemaAndValue(Schema.FLOAT64, as_double)
    return SchemaAndValue(Decimal.schema(-exponent), number)  # type: ignore[operator]


class _SchemaMerger:
    """The common schema of parsed elements: numbers widen, anything else must match."""

    __slots__ = ("common", "compatible", "nullable")

    def __init__(self) -> None:
        self.common: Schema | None = None
        self.compatible = True
        self.nullable = False

    def merge(self, latest: SchemaAndValue | None) -> None:
        if latest is None or latest.schema is None:
            if latest is None or latest.value is None:
                self.nullable = True
            else:
                self.compatible = False
            return
        if not self.compatible:
            return
        if self.common is None:
            self.common = latest.schema
        else:
            self.common = _merge(self.common, latest.schema)
            self.compatible = self.common is not None

    def schema(self) -> Schema | None:
        if not self.compatible or self.common is None:
            return None
        return _as_optional(self.common) if self.nullable else self.common


def _merge(previous: Schema, new: Schema) -> Schema | None:
    if previous == new:
        return previous
    if previous.name is None and new.name is None:
        a, b = _NUMERIC_ORDER.get(previous.type), _NUMERIC_ORDER.get(new.type)
        if a is not None and b is not None:
            return previous if a >= b else new
    return None


def _align(schema: Schema, value: Any) -> Any:
    # Widened numbers: integers stored in a float column become floats.
    if value is None or isinstance(value, float) or value is True or value is False or not isinstance(value, int):
        return value
    if schema.type is SchemaType.FLOAT32:
        return to_float32(float(value))
    if schema.type is SchemaType.FLOAT64:
        return float(value)
    return value


# --- converting ----------------------------------------------------------------------
#
# Kafka's Values.convertTo*: the value as the asked-for type, whatever it arrived as. The schema
# is the value's own (may be None); it matters only for Date, Time and Timestamp values, which
# count as days or milliseconds. Python values are Connect's: int for int8…int64, float for
# float32/float64 (float32 rounded to single precision), decimal.Decimal, and datetime.date /
# datetime.time / datetime.datetime for Date, Time and Timestamp.

_NULL_MESSAGE = "Unable to convert a null value to a schema that requires a value"
_INT64 = SchemaType.INT64
_TEMPORAL_NAMES = (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unable(value: Any, target: Schema | str | None) -> DataError:
    where = "a number" if target is None else target if isinstance(target, str) else repr(target)
    return DataError(f"Unable to convert {_shown(value)} ({type(value).__name__}) to {where}")


def _in_range(number: int, schema_type: SchemaType) -> int:
    low, high = INT_RANGES[schema_type]
    if not low <= number <= high:
        raise DataError(f"{number} is out of range for {schema_type.value} ({low} to {high})")
    return number


def _decimal_of(text: str) -> decimal.Decimal | None:
    # Java's new BigDecimal(text): no blanks, no NaN or Infinity, no underscores.
    return decimal.Decimal(text) if _NUMBER_RE.fullmatch(text) else None


def _instant_millis(value: datetime.date | datetime.time) -> int:
    """Milliseconds since the epoch of a Connect temporal value, as the ``java.util.Date`` Kafka holds.

    A date is its midnight UTC, a time that time on 1970-01-01 UTC, a datetime itself (naive is UTC).
    """
    if isinstance(value, datetime.datetime):
        return Timestamp.from_logical(Timestamp.SCHEMA, value)
    if isinstance(value, datetime.date):
        return (value.toordinal() - _EPOCH_ORDINAL) * _MILLIS_PER_DAY
    return Time.from_logical(Time.SCHEMA, value)


def _as_long(value: Any, schema: Schema | None) -> int:
    """Kafka's ``Values.asLong``: a number, numeric text or (with its logical schema) a temporal value as an integer.

    Fractions are truncated toward zero. :raises DataError: for anything else, and outside int64.
    """
    if value.__class__ is not bool:
        if isinstance(value, int):
            return _in_range(value, _INT64)
        number = _decimal_of(value) if isinstance(value, str) else value
        if isinstance(number, (float, decimal.Decimal)):
            try:
                return _in_range(math.trunc(number), _INT64)
            except (ValueError, OverflowError):  # NaN, infinity
                raise _unable(value, None) from None
    if schema is not None:
        if isinstance(value, (datetime.date, datetime.time)) and schema.name in _TEMPORAL_NAMES:
            millis = _instant_millis(value)
            if schema.name == Timestamp.LOGICAL_NAME:
                return millis
            if schema.name == Time.LOGICAL_NAME:
                if not 0 <= millis < _MILLIS_PER_DAY:
                    raise DataError("Kafka Connect Time type should not have any date fields set to non-zero values.")
                return millis
            if millis % _MILLIS_PER_DAY:
                raise DataError("Kafka Connect Date type should not have any time fields set to non-zero values.")
            return millis // _MILLIS_PER_DAY
        raise _unable(value, schema)
    raise _unable(value, None)


def _as_double(value: Any, schema: Schema | None) -> float:
    """Kafka's ``Values.asDouble``: as :func:`_as_long`, keeping fractions."""
    if value.__class__ is not bool:
        if isinstance(value, float):
            return value
        number = _decimal_of(value) if isinstance(value, str) else value
        if isinstance(number, decimal.Decimal) and number.is_finite():
            return float(number)
        if isinstance(number, int):
            try:
                return float(number)
            except OverflowError:
                raise DataError(f"{number} is too large for float64") from None
    return float(_as_long(value, schema))


def convert_to_boolean(schema: Schema | None, value: Any) -> bool | None:
    """*value* as a boolean (Kafka's ``Values.convertToBoolean``); ``None`` for ``None``.

    Text is parsed first (``"true"``, ``"false"``); otherwise any number, numeric text or
    temporal value is ``True`` unless its integer part is 0.

    :raises DataError: if *value* cannot be read as a boolean or a number.
    """
    if value is None:
        return None
    if value is True or value is False:
        return value
    if isinstance(value, str):
        parsed = parse_string(value).value
        if parsed is True or parsed is False:
            return parsed
    return _as_long(value, schema) != 0


def _convert_to_int(schema: Schema | None, value: Any, schema_type: SchemaType) -> int | None:
    if value is None:
        return None
    return _in_range(_as_long(value, schema), schema_type)


def convert_to_byte(schema: Schema | None, value: Any) -> int | None:
    """*value* as an int8 ``int`` (Kafka's ``Values.convertToByte``); ``None`` for ``None``.

    Numbers and numeric text are truncated toward zero; a Date, Time or Timestamp value (with
    its schema) counts as days or milliseconds.

    :raises DataError: if *value* is not a number, or is out of range for int8 (Kafka wraps it).
    """
    return _convert_to_int(schema, value, SchemaType.INT8)


def convert_to_short(schema: Schema | None, value: Any) -> int | None:
    """*value* as an int16 ``int`` (Kafka's ``Values.convertToShort``); see :func:`convert_to_byte`."""
    return _convert_to_int(schema, value, SchemaType.INT16)


def convert_to_integer(schema: Schema | None, value: Any) -> int | None:
    """*value* as an int32 ``int`` (Kafka's ``Values.convertToInteger``); see :func:`convert_to_byte`."""
    return _convert_to_int(schema, value, SchemaType.INT32)


def convert_to_long(schema: Schema | None, value: Any) -> int | None:
    """*value* as an int64 ``int`` (Kafka's ``Values.convertToLong``); see :func:`convert_to_byte`."""
    return _convert_to_int(schema, value, SchemaType.INT64)


def convert_to_float(schema: Schema | None, value: Any) -> float | None:
    """*value* as a float32 value (Kafka's ``Values.convertToFloat``): a ``float`` rounded to single precision.

    ``None`` for ``None``. :raises DataError: if *value* is not a number or numeric text.
    """
    if value is None:
        return None
    return to_float32(_as_double(value, schema))


def convert_to_double(schema: Schema | None, value: Any) -> float | None:
    """*value* as a float64 ``float`` (Kafka's ``Values.convertToDouble``); ``None`` for ``None``.

    :raises DataError: if *value* is not a number or numeric text.
    """
    if value is None:
        return None
    return _as_double(value, schema)


def convert_to_list(schema: Schema | None, value: Any) -> list[Any]:
    """*value* as a list (Kafka's ``Values.convertToList``): a list as it is, a tuple as a list, text parsed.

    :raises DataError: for ``None`` (as in Kafka) and anything that is not, or does not parse as, an array.
    """
    if value is None:
        raise DataError(_NULL_MESSAGE)
    if isinstance(value, str):
        value = parse_string(value).value
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    raise _unable(value, "an array")


def convert_to_map(schema: Schema | None, value: Any) -> Mapping[Any, Any]:
    """*value* as a map (Kafka's ``Values.convertToMap``): a mapping as it is, text parsed.

    :raises DataError: for ``None`` (as in Kafka) and anything that is not, or does not parse as, a map.
    """
    if value is None:
        raise DataError(_NULL_MESSAGE)
    if isinstance(value, str):
        value = parse_string(value).value
    if isinstance(value, Mapping):
        return value
    raise _unable(value, "a map")


def convert_to_struct(schema: Schema | None, value: Any) -> StructBase:
    """*value* if it is a struct (Kafka's ``Values.convertToStruct``): nothing else converts to one.

    :raises DataError: for ``None`` (as in Kafka) and anything but a struct.
    """
    if value is None:
        raise DataError(_NULL_MESSAGE)
    if isinstance(value, StructBase):
        return value
    raise _unable(value, "a struct")


def _parsed_temporal(schema: Schema | None, value: Any) -> SchemaAndValue:
    # Parsed text comes with the schema parse_string infers: the given one describes the text.
    # (Kafka keeps the given one, so "14:34:54.346Z" with a string schema fails to convert there.)
    if value is None:
        raise DataError(_NULL_MESSAGE)
    return parse_string(value) if isinstance(value, str) else SchemaAndValue(schema, value)


def convert_to_time(schema: Schema | None, value: Any) -> datetime.time:
    """*value* as a Time value, a ``datetime.time`` (Kafka's ``Values.convertToTime``).

    A time is kept; a Timestamp (or, without a schema, any date or datetime) gives its UTC time of
    day; a number or numeric text is milliseconds since midnight; other text is parsed first.

    :raises DataError: for ``None`` (as in Kafka) and values that do not convert.
    """
    schema, value = _parsed_temporal(schema, value)
    if isinstance(value, (datetime.date, datetime.time)):
        name = schema.name if schema is not None else None
        if schema is None or name in (Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
            if isinstance(value, datetime.time) and name != Timestamp.LOGICAL_NAME:
                return value
            return Time.to_logical(Time.SCHEMA, _instant_millis(value) % _MILLIS_PER_DAY)
    return Time.to_logical(Time.SCHEMA, _as_long(value, schema))


def convert_to_date(schema: Schema | None, value: Any) -> datetime.date:
    """*value* as a Date value, a ``datetime.date`` (Kafka's ``Values.convertToDate``).

    A date is kept; a Timestamp (or, without a schema, any datetime or time) gives its UTC date;
    a number or numeric text is days since 1970-01-01; other text is parsed first.

    :raises DataError: for ``None`` (as in Kafka) and values that do not convert.
    """
    schema, value = _parsed_temporal(schema, value)
    if isinstance(value, (datetime.date, datetime.time)):
        name = schema.name if schema is not None else None
        if schema is None or name in (Date.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
            if type(value) is datetime.date and name != Timestamp.LOGICAL_NAME:
                return value
            millis = _instant_millis(value)
            days = millis // _MILLIS_PER_DAY
            if name == Timestamp.LOGICAL_NAME and millis < 0:
                # As Kafka, whole days toward zero: a Timestamp before 1970 goes up to the next midnight.
                days = -(-millis // _MILLIS_PER_DAY)
            return Date.to_logical(Date.SCHEMA, days)
    return Date.to_logical(Date.SCHEMA, _in_range(_as_long(value, schema), SchemaType.INT32))


def convert_to_timestamp(schema: Schema | None, value: Any) -> datetime.datetime:
    """*value* as a Timestamp value, a UTC ``datetime.datetime`` (Kafka's ``Values.convertToTimestamp``).

    A datetime is kept; a date is its midnight UTC; a time is that time on 1970-01-01 UTC; a
    number or numeric text is milliseconds since the epoch; other text is parsed first.

    :raises DataError: for ``None`` (as in Kafka) and values that do not convert.
    """
    schema, value = _parsed_temporal(schema, value)
    if isinstance(value, (datetime.date, datetime.time)):
        name = schema.name if schema is not None else None
        if schema is None or name == Timestamp.LOGICAL_NAME:
            if isinstance(value, datetime.datetime):
                return value
            return Timestamp.to_logical(Timestamp.SCHEMA, _instant_millis(value))
        if name == Date.LOGICAL_NAME:
            return Timestamp.to_logical(Timestamp.SCHEMA, _as_long(value, schema) * _MILLIS_PER_DAY)
        if name == Time.LOGICAL_NAME:
            return Timestamp.to_logical(Timestamp.SCHEMA, _as_long(value, schema))
    return Timestamp.to_logical(Timestamp.SCHEMA, _as_long(value, schema))


def convert_to_decimal(schema: Schema | None, value: Any, scale: int) -> decimal.Decimal:
    """*value* as a ``decimal.Decimal`` (Kafka's ``Values.convertToDecimal``).

    A decimal is kept as it is (not rescaled); bytes are the unscaled two's-complement value
    with *scale*; other numbers go through float64 and take Java's text for it (``5`` gives
    ``Decimal("5.0")``); text is read as Java's ``BigDecimal`` reads it.

    :raises DataError: for ``None`` (as in Kafka), non-finite numbers and values that do not convert.
    """
    if value is None:
        raise DataError(_NULL_MESSAGE)
    target = Decimal.schema(scale)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Decimal.to_logical(target, bytes(value))
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise _unable(value, target)
        return value
    if isinstance(value, (int, float)) and value.__class__ is not bool:
        double = _as_double(value, None)
        if math.isnan(double) or math.isinf(double):
            raise _unable(value, target)
        return decimal.Decimal(java_double(double))
    if isinstance(value, str):
        number = _decimal_of(value)
        if number is not None:
            return number
    raise _unable(value, target)
