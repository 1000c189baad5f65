"""Text forms that must match the JVM's byte for byte.

Java prints doubles and floats with ``Double.toString`` / ``Float.toString``
(shortest digits that read back to the same value, plain notation between
10^-3 and 10^7, ``1.0E20`` style outside), Jackson escapes JSON strings with
upper-case ``\\u00XX`` and writes non-ASCII as UTF-8. Python's ``repr`` and
``json`` differ in small ways; these helpers close the gap.
"""

from __future__ import annotations

import datetime
import math
import re
import struct
from decimal import Decimal

from connectd.data.schema import SchemaType, StructBase

__all__ = [
    "decimal_text",
    "java_double",
    "java_float",
    "json_double",
    "json_float",
    "json_quote",
    "to_float32",
]

_F32 = struct.Struct("<f")
_INF = math.inf


def to_float32(value: float) -> float:
    """*value* rounded to the nearest IEEE single (±inf when it overflows)."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(_INF, value)


def _repr_digits(text: str) -> tuple[str, int]:
    """Significant digits and decimal exponent of a positive number's text.

    ``"1.25e-07"`` → ``("125", -7)``, ``"12345678.0"`` → ``("12345678", 7)``.
    """
    if "e" in text:
        mantissa, exponent = text.split("e")
        digits = mantissa.replace(".", "").rstrip("0") or "0"
        return digits, int(exponent)
    whole, _, fraction = text.partition(".")
    if whole.strip("0"):
        return (whole.lstrip("0") + fraction).rstrip("0"), len(whole.lstrip("0")) - 1
    significant = fraction.lstrip("0")
    return significant.rstrip("0"), -(len(fraction) - len(significant) + 1)


def _closest_two_digits(value: float, digits: str, exponent: int, reads_back) -> tuple[str, int]:
    # Java's rule (JDK 19+): when one digit suffices, a two-digit decimal that
    # also reads back and lies closer to the value wins. Only subnormals have
    # rounding intervals wide enough for that to happen.
    candidate = f"{value:.1e}"
    mantissa, exp_text = candidate.split("e")
    two = mantissa.replace(".", "")
    if two.endswith("0") or reads_back(float(candidate)) != value:
        return digits, exponent
    exact = Decimal(value)
    one_digit = Decimal(f"{digits}E{exponent}")
    if abs(Decimal(candidate) - exact) < abs(one_digit - exact):
        return two, int(exp_text)
    return digits, exponent


def _java_text(negative: bool, digits: str, exponent: int, plain: bool) -> str:
    sign = "-" if negative else ""
    if plain:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            return f"{sign}{whole}.{digits[exponent + 1:] or '0'}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def java_double(value: float) -> str:
    """``Double.toString(value)``: ``1.0``, ``0.001``, ``1.0E7``, ``1.0E-4``, ``NaN``, ``-Infinity``."""
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = -value if value < 0 else value
    if 1e-3 <= magnitude < 1e7:
        return repr(value)  # Python's shortest round-trip text is Java's here
    digits, exponent = _repr_digits(repr(magnitude))
    if len(digits) == 1 and magnitude < 1e-300:
        digits, exponent = _closest_two_digits(magnitude, digits, exponent, float)
    return _java_text(value < 0, digits, exponent, plain=False)


def java_float(value: float) -> str:
    """``Float.toString((float) value)``: the shortest digits that read back as the same float."""
    value = to_float32(value)
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = -value if value < 0 else value
    for precision in range(9):
        text = f"{magnitude:.{precision}e}"
        if to_float32(float(text)) == magnitude:
            break
    digits, exponent = _repr_digits(text)
    if len(digits) == 1 and magnitude < 1e-40:
        digits, exponent = _closest_two_digits(magnitude, digits, exponent, to_float32)
    return _java_text(value < 0, digits, exponent, plain=1e-3 <= magnitude < 1e7)


# Jackson's QUOTE_NON_NUMERIC_NUMBERS (on by default) writes these as strings.
_NON_FINITE = {"NaN": '"NaN"', "Infinity": '"Infinity"', "-Infinity": '"-Infinity"'}


def json_double(value: float) -> str:
    """A double as Jackson writes it."""
    text = java_double(value)
    return _NON_FINITE.get(text, text)


def json_float(value: float) -> str:
    """A float32 as Jackson writes it."""
    text = java_float(value)
    return _NON_FINITE.get(text, text)


def decimal_text(value: Decimal) -> str:
    """``BigDecimal.toString()``: the same scientific rules as Python's, but no negative zero."""
    if value.is_zero() and value.is_signed():
        value = value.copy_abs()
    return str(value)


_ESCAPE_RE = re.compile(r'[\x00-\x1f"\\]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
for _code in range(0x20):
    _ESCAPES.setdefault(chr(_code), f"\\u{_code:04X}")
del _code


def _escape(match: re.Match[str]) -> str:
    return _ESCAPES[match.group()]


def json_quote(text: str) -> str:
    """A JSON string literal as Jackson writes it (non-ASCII left as is, upper-case hex escapes)."""
    if _ESCAPE_RE.search(text) is None:
        return '"' + text + '"'
    return '"' + _ESCAPE_RE.sub(_escape, text) + '"'


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def java_string(value: object, schema: object = None) -> str:
    """What Java's ``String.valueOf`` prints for the Connect value (``StringConverter``'s output).

    Strings as they are, ``true``/``false``, numbers as Java prints them,
    lists ``[a, b]``, maps ``{k=v}``, structs ``Struct{a=1,b=x}``, dates as
    ``java.util.Date`` prints them in UTC.
    """
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if getattr(schema, "type", None) is SchemaType.FLOAT32:
            return java_float(value)
        return java_double(value)
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, (list, tuple)):
        element = getattr(schema, "_value_schema", None)
        return "[" + ", ".join(java_string(item, element) for item in value) + "]"
    if isinstance(value, dict):
        key_schema = getattr(schema, "_key_schema", None)
        value_schema = getattr(schema, "_value_schema", None)
        return "{" + ", ".join(f"{java_string(k, key_schema)}={java_string(v, value_schema)}" for k, v in value.items()) + "}"
    if isinstance(value, StructBase):
        parts = [
            f"{field.name}={java_string(item, field.schema)}"
            for field, item in zip(value.schema._fields, value._values)
            if item is not None
        ]
        return "Struct{" + ",".join(parts) + "}"
    if isinstance(value, (datetime.date, datetime.time)):
        if isinstance(value, datetime.datetime):
            moment = value.astimezone(datetime.timezone.utc) if value.tzinfo else value
        elif isinstance(value, datetime.date):
            moment = datetime.datetime(value.year, value.month, value.day)
        else:
            moment = datetime.datetime(1970, 1, 1, value.hour, value.minute, value.second)
        return (
            f"{_DAYS[moment.weekday()]} {_MONTHS[moment.month - 1]} {moment.day:02d} "
            f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d} UTC {moment.year}"
        )
    return str(value)
