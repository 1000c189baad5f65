"""Connect's logical types: Decimal, Date, Time and Timestamp.

Each is a named schema over a primitive one, exactly as in Kafka, so the
names, versions and parameters on the wire are Kafka's:

============ ======== ============================================= =========================
class        type     name                                          Python value
============ ======== ============================================= =========================
Decimal      bytes    ``org.apache.kafka.connect.data.Decimal``     ``decimal.Decimal``
Date         int32    ``org.apache.kafka.connect.data.Date``        ``datetime.date``
Time         int32    ``org.apache.kafka.connect.data.Time``        ``datetime.time``
Timestamp    int64    ``org.apache.kafka.connect.data.Timestamp``   ``datetime.datetime`` (UTC)
============ ======== ============================================= =========================

All have version 1; Decimal has a ``scale`` parameter. ``from_logical`` turns
the Python value into the primitive Kafka stores (unscaled two's-complement
bytes, days, milliseconds); ``to_logical`` goes back.

The class names are Kafka's; ``Decimal`` clashes with ``decimal.Decimal``, so
import the module (``from connectd.data import logical``) where both are used.
"""

from __future__ import annotations

import datetime
import decimal

from connectd.data.schema import DATE_NAME, DECIMAL_NAME, INT_RANGES, TIME_NAME, TIMESTAMP_NAME, Schema, SchemaType
from connectd.data.schema_builder import SchemaBuilder
from connectd.errors import DataError

__all__ = ["Date", "Decimal", "Time", "Timestamp", "LOGICAL_NAMES"]

MILLIS_PER_DAY = 86_400_000
_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_INT32_MIN, _INT32_MAX = INT_RANGES[SchemaType.INT32]


def _check_schema(schema: Schema, name: str, kind: str) -> None:
    if schema is None or schema.name != name:
        raise DataError(f"Requested conversion of {kind} object but the schema does not match.")


class Decimal:
    """Arbitrary-precision decimals with a fixed scale, stored as unscaled two's-complement bytes."""

    LOGICAL_NAME = DECIMAL_NAME
    SCALE_FIELD = "scale"

    def __init__(self) -> None:  # pragma: no cover - a namespace
        raise TypeError("connectd.data.logical.Decimal is a namespace, not a value type")

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        """A builder for a Decimal schema with *scale* digits after the point."""
        if scale.__class__ is bool or not isinstance(scale, int):
            raise DataError(f"Decimal scale must be an integer, got {scale!r}")
        return SchemaBuilder.bytes().name(DECIMAL_NAME).parameter(Decimal.SCALE_FIELD, str(scale)).version(1)

    @staticmethod
    def schema(scale: int) -> Schema:
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        """The schema's ``scale`` parameter. :raises DataError: if missing or not an integer."""
        text = (schema.parameters or {}).get(Decimal.SCALE_FIELD)
        if text is None:
            raise DataError("Invalid Decimal schema: scale parameter not found.")
        try:
            return int(text)
        except ValueError:
            raise DataError(f"Invalid scale parameter found in Decimal schema: {text!r}") from None

    @staticmethod
    def from_logical(schema: Schema, value: decimal.Decimal) -> bytes:
        """The unscaled value's big-endian two's-complement bytes (Java's ``BigInteger.toByteArray``).

        :raises DataError: if *value*'s scale differs from the schema's (quantize it first).
        """
        _check_schema(schema, DECIMAL_NAME, "Decimal")
        if not isinstance(value, decimal.Decimal) or not value.is_finite():
            raise DataError(f"Invalid type for Decimal, expected a finite decimal.Decimal but was {value!r}")
        scale = Decimal.scale(schema)
        sign, digits, exponent = value.as_tuple()
        if -exponent != scale:  # type: ignore[operator]
            raise DataError(
                f"Decimal value {value} has scale {-exponent} but its schema has scale {scale} "  # type: ignore[operator]
                f"(use value.quantize(decimal.Decimal(1).scaleb(-{scale})))"
            )
        unscaled = int("".join(map(str, digits)) or "0")
        if sign:
            unscaled = -unscaled
        return unscaled_bytes(unscaled)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> decimal.Decimal:
        """The decimal whose unscaled two's-complement bytes are *value*."""
        _check_schema(schema, DECIMAL_NAME, "Decimal")
        if not value:
            raise DataError("Invalid Decimal bytes: empty")
        unscaled = int.from_bytes(value, "big", signed=True)
        return decimal.Decimal(f"{unscaled}E{-Decimal.scale(schema)}")


def unscaled_bytes(unscaled: int) -> bytes:
    """Java's ``BigInteger.toByteArray()``: the fewest bytes holding the sign bit."""
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


class Date:
    """A calendar date, stored as an int32 count of days since 1970-01-01."""

    LOGICAL_NAME = DATE_NAME
    SCHEMA: Schema

    def __init__(self) -> None:  # pragma: no cover - a namespace
        raise TypeError("connectd.data.logical.Date is a namespace, not a value type")

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(DATE_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: datetime.date) -> int:
        """Days since the epoch. A ``datetime`` is accepted only at midnight UTC, as in Kafka."""
        _check_schema(schema, DATE_NAME, "Date")
        if isinstance(value, datetime.datetime):
            utc = value.astimezone(datetime.timezone.utc) if value.tzinfo else value
            if utc.time() != datetime.time(0):
                raise DataError("Kafka Connect Date type should not have any time fields set to non-zero values.")
            value = utc.date()
        if not isinstance(value, datetime.date):
            raise DataError(f"Invalid type for Date, expected datetime.date but was {type(value).__name__}")
        days = (value - _EPOCH_DATE).days
        return days

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.date:
        _check_schema(schema, DATE_NAME, "Date")
        try:
            return _EPOCH_DATE + datetime.timedelta(days=value)
        except OverflowError:
            raise DataError(f"Date value {value} days is outside the years Python supports (1 to 9999)") from None


class Time:
    """A time of day, stored as an int32 count of milliseconds since midnight."""

    LOGICAL_NAME = TIME_NAME
    SCHEMA: Schema

    def __init__(self) -> None:  # pragma: no cover - a namespace
        raise TypeError("connectd.data.logical.Time is a namespace, not a value type")

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(TIME_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: datetime.time) -> int:
        """Milliseconds since midnight (microseconds are truncated; an aware time is taken to UTC)."""
        _check_schema(schema, TIME_NAME, "Time")
        if not isinstance(value, datetime.time):
            raise DataError(f"Invalid type for Time, expected datetime.time but was {type(value).__name__}")
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        offset = value.utcoffset()
        if offset:
            millis = (millis - offset // datetime.timedelta(milliseconds=1)) % MILLIS_PER_DAY
        return millis

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.time:
        _check_schema(schema, TIME_NAME, "Time")
        if not 0 <= value < MILLIS_PER_DAY:
            raise DataError("Time values must use number of milliseconds greater than 0 and less than 86400000")
        seconds, millis = divmod(value, 1000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return datetime.time(hour, minute, second, millis * 1000)


class Timestamp:
    """An instant, stored as an int64 count of milliseconds since the epoch (UTC)."""

    LOGICAL_NAME = TIMESTAMP_NAME
    SCHEMA: Schema

    def __init__(self) -> None:  # pragma: no cover - a namespace
        raise TypeError("connectd.data.logical.Timestamp is a namespace, not a value type")

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int64().name(TIMESTAMP_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: datetime.datetime) -> int:
        """Milliseconds since the epoch; a naive datetime is taken as UTC; microseconds are truncated."""
        _check_schema(schema, TIMESTAMP_NAME, "Timestamp")
        if not isinstance(value, datetime.datetime):
            raise DataError(f"Invalid type for Timestamp, expected datetime.datetime but was {type(value).__name__}")
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.datetime:
        """A UTC-aware datetime."""
        _check_schema(schema, TIMESTAMP_NAME, "Timestamp")
        try:
            return _EPOCH + datetime.timedelta(milliseconds=value)
        except OverflowError:
            raise DataError(f"Timestamp value {value} ms is outside the years Python supports (1 to 9999)") from None


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()

#: Logical type name → its namespace class.
LOGICAL_NAMES: dict[str, type] = {
    DECIMAL_NAME: Decimal,
    DATE_NAME: Date,
    TIME_NAME: Time,
    TIMESTAMP_NAME: Timestamp,
}
