"""Columns into Connect schemas and values, and Debezium's change-event envelope around them.

A column is described the same way whether it comes from
``information_schema`` (the snapshot) or from the binlog's table map (with
``binlog_row_metadata=FULL``): a :class:`ColumnSpec`. So a table's records
have the same schemas before and after the snapshot, and a new schema
exactly when its columns changed (an ``ALTER TABLE`` is picked up from the
next change on).

Types (``time.precision.mode=connect``, Debezium's names):

================================ ===========================================
MariaDB/MySQL                    Connect
================================ ===========================================
TINYINT, SMALLINT                int16 (SMALLINT UNSIGNED: int32)
MEDIUMINT, INT                   int32 (INT UNSIGNED: int64)
BIGINT                           int64 (UNSIGNED: per bigint.unsigned.handling.mode)
FLOAT, DOUBLE                    float32, float64
DECIMAL(p, s)                    Decimal (scale s; per decimal.handling.mode)
DATE, TIME                       Date, Time (a TIME outside 00:00-24:00: null, and a warning)
DATETIME                         Timestamp (UTC)
TIMESTAMP                        string io.debezium.time.ZonedTimestamp (ISO-8601 in UTC, see below)
YEAR                             int32 io.debezium.time.Year
CHAR, VARCHAR, TEXT              string (MariaDB's JSON is a LONGTEXT: a string too)
ENUM                             string io.debezium.data.Enum (``allowed``: the labels)
SET                              string io.debezium.data.EnumSet (``allowed``; members in the column's order)
JSON (MySQL's)                   string io.debezium.data.Json
UUID (MariaDB)                   string io.debezium.data.Uuid (as MariaDB writes it)
INET6, INET4 (MariaDB)           string (the address as MariaDB writes it)
BINARY, VARBINARY, BLOB          bytes (BINARY(n): n bytes, padded with 0x00)
BIT(1), BIT(n)                   boolean, bytes (io.debezium.data.Bits)
================================ ===========================================

``allowed`` is the labels comma-separated, each ``,`` and ``\\`` in one
escaped with ``\\`` (Debezium's EnumeratedValues).

A TIMESTAMP is written as Debezium's binlog reader writes it (ZonedTimestamp.toIsoString with the column's
precision): ``2024-01-02T03:04:05Z``; a TIMESTAMP(n) with exactly n fractional digits
(``2024-01-02T03:04:05.120Z`` in a TIMESTAMP(3)); a TIMESTAMP without one with as many as it needs, none when
there is no fraction. The binlog holds seconds since the epoch and the snapshot's session is in UTC: both
read the same instant.

A zero date ('0000-00-00', sql_mode permitting) or one with a zero month or
day is null in a nullable column and, in a NOT NULL one, the column's
default, else the epoch (1970-01-01), as Debezium gives them; in the
snapshot and the binlog alike.

Primary key and NOT NULL columns are required fields; the others optional.
A column's default is its field's default, converted by Debezium's rules
(BinlogDefaultValueConverter, see :func:`_default_value`). The binlog has no
defaults: the task reads them from ``information_schema`` (see the task's
``_Definitions``).
"""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from connectd import ConnectException, Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp

from connectd_mysql_cdc.config import Settings

__all__ = ["ColumnSpec", "TableSchema", "TableSchemas", "source_struct"]

VERSION = "0.1.0"

log = logging.getLogger(__name__)

# The binlog's column type codes (MySQL's enum_field_types) → the names information_schema uses.
_BINLOG_TYPES = {
    1: "tinyint", 2: "smallint", 9: "mediumint", 3: "int", 8: "bigint", 4: "float", 5: "double", 0: "decimal",
    246: "decimal", 10: "date", 14: "date", 11: "time", 19: "time", 12: "datetime", 18: "datetime",
    7: "timestamp", 17: "timestamp", 13: "year", 15: "varchar", 253: "varchar", 254: "varchar", 249: "text",
    250: "text", 251: "text", 252: "text", 245: "json", 247: "enum", 248: "set", 16: "bit", 255: "geometry",
}
_NAMES = {"char": "varchar", "tinytext": "text", "mediumtext": "text", "longtext": "text",
          "tinyblob": "blob", "mediumblob": "blob", "longblob": "blob", "integer": "int", "dec": "decimal",
          "numeric": "decimal", "real": "double", "bool": "tinyint", "boolean": "tinyint"}
# An ENUM's or SET's label in information_schema's column_type: set('a','it''s','back\\slash').
_MEMBER = re.compile(r"'((?:[^'\\]|''|\\.)*)'", re.DOTALL)


class _Unrepresentable(ValueError):
    """A value the column's Connect type cannot hold: the field becomes null and a warning says so.

    Debezium does the same under its default ``event.converting.failure.handling.mode=warn``.
    """


@dataclass(frozen=True)
class ColumnSpec:
    """What a column's values are: enough to choose its Connect schema and convert them."""

    name: str
    kind: str
    unsigned: bool = False
    #: DECIMAL: its precision; BIT: its bits; TIMESTAMP: its fractional digits.
    precision: int | None = None
    scale: int | None = None
    primary: bool = False
    #: BINARY(n): n, the byte length its values are padded to.
    length: int | None = None
    #: ENUM and SET: their labels, in the order of the column's definition (a SET's values are written in it).
    members: tuple[str, ...] = ()
    nullable: bool = True
    #: The column's default as Debezium's DDL parser gives it: a literal's text (unquoted), ``1970-01-01
    #: 00:00:00`` for CURRENT_TIMESTAMP, a BIT literal's digits; None when there is none or it is an expression.
    default: str | None = None

    @classmethod
    def from_information_schema(cls, name: str, data_type: str, column_type: str, precision: int | None,
                                scale: int | None, key: str, octet_length: int | None, is_nullable: str,
                                column_default: str | None = None, extra: str = "", *,
                                mariadb: bool = True) -> ColumnSpec:
        data_type = data_type.lower()
        kind = _NAMES.get(data_type, data_type)
        members = tuple(_unescaped(m) for m in _MEMBER.findall(column_type)) if kind in ("enum", "set") else ()
        if kind == "timestamp":  # timestamp(3); NUMERIC_PRECISION is null
            fsp = _FSP.search(column_type)
            precision = int(fsp.group(1)) if fsp else 0
        return cls(name, kind, "unsigned" in column_type.lower(), precision, scale, key == "PRI",
                   octet_length if kind == "binary" else None, members, is_nullable == "YES",
                   _default_expression(column_default, extra or "", mariadb))

    @classmethod
    def from_binlog(cls, column: Any, nullable: bool) -> ColumnSpec:
        """A column of a row event; *nullable* from its table map's null bitmap."""
        kind = _BINLOG_TYPES.get(column.type, f"type {column.type}")
        length = None
        if kind in ("varchar", "text") and (column.character_set_name or "").lower() == "binary":
            if column.type == 254:  # MYSQL_TYPE_STRING: fixed length, BINARY(n)
                kind, length = "binary", column.max_length
            else:
                kind = "varbinary" if kind == "varchar" else "blob"
        if kind == "decimal":
            precision = getattr(column, "precision", None)
        elif kind == "timestamp":  # MySQL's TIMESTAMP2 (type 17) has its fsp; the old TIMESTAMP (7) none
            precision = getattr(column, "fsp", 0)
        else:
            precision = getattr(column, "bits", None)
        if kind == "set":
            members = tuple(column.set_values or ())
        elif kind == "enum":  # mysql-replication puts "" (the index 0 of an invalid value) before the labels
            members = tuple(column.enum_values or ())[1:]
        else:
            members = ()
        return cls(column.name, kind, bool(column.unsigned), precision, getattr(column, "decimals", None),
                   bool(column.is_primary), length, members, nullable)

    def defined_as(self, defined: ColumnSpec) -> ColumnSpec:
        """This column of a table map with what only information_schema knows: the default, and which type
        (UUID, INET6, INET4) a BINARY is — *defined* being the column there, checked by :meth:`matches`."""
        kind = defined.kind
        return replace(self, kind=kind, default=defined.default, length=None if kind in _BINARY_LIKE else self.length,
                       members=defined.members if len(defined.members) == len(self.members) else self.members)

    def matches(self, defined: ColumnSpec) -> bool:
        """Whether *defined* (from information_schema) can be this column (from a table map)."""
        kind = "binary" if defined.kind in _BINARY_LIKE else defined.kind
        return (self.name == defined.name and self.kind == kind and self.nullable == defined.nullable
                and len(self.members) == len(defined.members))


# MariaDB's types stored as BINARY(n), which the binlog gives as such.
_BINARY_LIKE = {"uuid": 16, "inet6": 16, "inet4": 4}
# information_schema.COLUMNS.COLUMN_DEFAULT: a number, MariaDB's quoted string or BIT literal, CURRENT_TIMESTAMP.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_QUOTED = re.compile(r"(?:_\w+)?'((?:[^'\\]|''|\\.)*)'", re.DOTALL)
_BITS = re.compile(r"[bB]'([01]*)'")
_NOW = re.compile(r"(current_timestamp|now|localtimestamp|localtime)(\(\d*\))?", re.IGNORECASE)
_FSP = re.compile(r"\((\d+)\)")
_ESCAPES = {"0": "\0", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "Z": "\x1a"}


def _unescaped(quoted: str) -> str:
    """A string literal's text between its quotes, as MariaDB writes it: ``''`` and backslash escapes."""
    return re.sub(r"''|\\(.)", lambda m: "'" if m.group(1) is None else _ESCAPES.get(m.group(1), m.group(1)),
                  quoted, flags=re.DOTALL)


def _default_expression(text: str | None, extra: str, mariadb: bool) -> str | None:
    """COLUMN_DEFAULT as Debezium's DDL parser reads the column's DEFAULT clause (its defaultValueExpression).

    MariaDB (10.2.7+) quotes literals there and writes ``NULL`` for DEFAULT NULL; MySQL writes literals bare
    and marks expressions DEFAULT_GENERATED in EXTRA. CURRENT_TIMESTAMP (NOW()) is ``1970-01-01 00:00:00``
    and any other expression no default, as in Debezium's DefaultValueParserListener.
    """
    if text is None:
        return None
    if not mariadb:
        generated = "DEFAULT_GENERATED" in extra.upper()
        if _NOW.fullmatch(text) and (generated or text.upper().startswith("CURRENT_TIMESTAMP")):
            return "1970-01-01 00:00:00"
        if generated:
            return None
        bits = _BITS.fullmatch(text)
        return bits.group(1) if bits else text
    if text == "NULL":
        return None
    if _NOW.fullmatch(text):
        return "1970-01-01 00:00:00"
    if quoted := _QUOTED.fullmatch(text):
        return _unescaped(quoted.group(1))
    if bits := _BITS.fullmatch(text):
        return bits.group(1)
    return text if _NUMBER.fullmatch(text) else None


def _schema_and_converter(spec: ColumnSpec, settings: Settings) -> tuple[SchemaBuilder, Callable[[Any], Any]]:
    kind = spec.kind
    if kind in ("tinyint", "smallint"):
        return (SchemaBuilder.int32() if kind == "smallint" and spec.unsigned else SchemaBuilder.int16()), int
    if kind in ("mediumint", "int"):
        return (SchemaBuilder.int64() if kind == "int" and spec.unsigned else SchemaBuilder.int32()), int
    if kind == "bigint" and spec.unsigned:
        if settings.bigint_unsigned_mode == "precise":
            return Decimal.builder(0), lambda value: decimal.Decimal(int(value))
        return SchemaBuilder.int64(), _wrapped_long
    if kind == "bigint":
        return SchemaBuilder.int64(), int
    if kind == "year":
        return SchemaBuilder.int32().name("io.debezium.time.Year").version(1), int
    if kind in ("float", "double"):
        return (SchemaBuilder.float32() if kind == "float" else SchemaBuilder.float64()), float
    if kind == "decimal":
        if settings.decimal_mode == "double":
            return SchemaBuilder.float64(), float
        scale = spec.scale or 0
        quantum = decimal.Decimal(1).scaleb(-scale)
        if settings.decimal_mode == "string":  # plain notation with the column's scale, as Debezium's toPlainString
            return SchemaBuilder.string(), lambda value: format(decimal.Decimal(value).quantize(quantum), "f")
        builder = Decimal.builder(scale)
        if spec.precision:
            builder.parameter("connect.decimal.precision", str(spec.precision))
        return builder, lambda value: decimal.Decimal(value).quantize(quantum)
    if kind == "date":
        return Date.builder(), _date
    if kind == "time":
        return Time.builder(), _time
    if kind == "datetime":
        return Timestamp.builder(), _timestamp
    if kind == "timestamp":
        return SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").version(1), \
            _zoned_timestamp(spec.precision or 0)
    if kind in ("varchar", "text"):
        return SchemaBuilder.string(), _text
    if kind == "json":  # MySQL's; MariaDB's JSON is a LONGTEXT (a plain string, in Debezium's events too)
        return SchemaBuilder.string().name("io.debezium.data.Json").version(1), _text
    if kind == "enum":
        return SchemaBuilder.string().name("io.debezium.data.Enum").version(1).parameter(
            "allowed", _allowed(spec.members)), _text
    if kind == "set":
        order = {member: index for index, member in enumerate(spec.members)}
        return (SchemaBuilder.string().name("io.debezium.data.EnumSet").version(1)
                .parameter("allowed", _allowed(spec.members)), lambda value: _set(value, order))
    if kind == "uuid":  # the snapshot reads MariaDB's text, the binlog the 16 bytes it is stored as
        return SchemaBuilder.string().name("io.debezium.data.Uuid").version(1), _uuid
    if kind == "inet6":
        return SchemaBuilder.string(), _inet6
    if kind == "inet4":
        return SchemaBuilder.string(), _inet4
    if kind == "binary" and spec.length:
        # The binlog drops a BINARY value's trailing 0x00 bytes, the snapshot keeps them; padded (as Debezium
        # does, DBZ-254) a BINARY primary key is the same Kafka key in both.
        length = spec.length
        return SchemaBuilder.bytes(), lambda value: _bytes(value).ljust(length, b"\0")
    if kind in ("binary", "varbinary", "blob"):
        return SchemaBuilder.bytes(), _bytes
    if kind == "bit":
        bits = spec.precision or 1
        if bits == 1:
            return SchemaBuilder.boolean(), lambda value: bool(_bit_int(value))
        builder = SchemaBuilder.bytes().name("io.debezium.data.Bits").version(1).parameter("length", str(bits))
        return builder, lambda value: _bit_int(value).to_bytes((bits + 7) // 8, "little")
    raise ConnectException(f"column {spec.name!r}: {kind} columns are not supported yet")


_EPOCH = datetime.datetime(1970, 1, 1)
# What a zero date is in a NOT NULL column (a TIMESTAMP's: Debezium's, without a fraction whatever the precision).
_ZERO_DATES = {"date": _EPOCH.date(), "datetime": _EPOCH, "timestamp": "1970-01-01T00:00:00Z"}


def _date(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.date()
    return value if isinstance(value, datetime.date) else None  # PyMySQL gives a zero date as its text


def _time(value: Any) -> Any:
    if isinstance(value, datetime.time):
        return value
    if isinstance(value, datetime.timedelta):
        if not datetime.timedelta(0) <= value < datetime.timedelta(days=1):
            raise _Unrepresentable(f"TIME '{_time_text(value)}' is outside 00:00-24:00, which Connect's Time "
                                   "cannot hold")
        return (datetime.datetime.min + value).time()
    return None


def _time_text(value: datetime.timedelta) -> str:
    """A TIME as MariaDB writes it: -01:00:00, 25:00:00.5."""
    sign, value = ("-", -value) if value < datetime.timedelta(0) else ("", value)
    minutes, seconds = divmod(value.days * 86400 + value.seconds, 60)
    fraction = f".{value.microseconds:06d}".rstrip("0") if value.microseconds else ""
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}:{seconds:02d}{fraction}"


def _timestamp(value: Any) -> Any:
    # naive: UTC (the session's time zone); PyMySQL gives a zero date as its text
    return value if isinstance(value, datetime.datetime) else None


def _zoned_timestamp(fsp: int) -> Callable[[Any], Any]:
    """A TIMESTAMP (naive, UTC) as Debezium's ZonedTimestamp string: n fractional digits in a TIMESTAMP(n),
    else as many as there are. The binlog writes a zero TIMESTAMP as 0, the epoch, which no real one is;
    PyMySQL gives one as its text: both are null."""
    if 1 <= fsp <= 6:
        width, zeros = 20 + fsp, "." + "0" * fsp + "Z"  # 2024-01-02T03:04:05. and the digits

        def fixed(value: Any) -> Any:
            if value.__class__ is not datetime.datetime or value == _EPOCH:
                return None
            return value.isoformat()[:width] + "Z" if value.microsecond else value.isoformat() + zeros
        return fixed

    def shortest(value: Any) -> Any:
        if value.__class__ is not datetime.datetime or value == _EPOCH:
            return None
        return value.isoformat().rstrip("0") + "Z" if value.microsecond else value.isoformat() + "Z"
    return shortest


def _text(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _allowed(members: Sequence[str]) -> str:
    """An Enum's or EnumSet's ``allowed`` parameter: the labels, each ``\\`` and ``,`` escaped with ``\\``."""
    return ",".join(m.replace("\\", "\\\\").replace(",", "\\,") for m in members)


def _uuid(value: Any) -> str:
    if isinstance(value, str) and value:  # the snapshot's text (the binlog gives b"" as "")
        return value
    return str(uuid.UUID(bytes=_bytes(value).ljust(16, b"\0")))  # the binlog drops trailing 0x00 bytes


def _inet6(value: Any) -> str:
    """An INET6 as MariaDB writes it: RFC 5952's text, but IPv4-mapped and -compatible ones end dotted."""
    if isinstance(value, str) and value:
        return value
    raw = _bytes(value).ljust(16, b"\0")
    if raw[:10] == bytes(10) and (raw[10:12] == b"\xff\xff" or (raw[10:12] == bytes(2) and raw[12:14] != bytes(2))):
        return ("::ffff:" if raw[10] else "::") + ".".join(str(b) for b in raw[12:])
    return ipaddress.IPv6Address(raw).compressed


def _inet4(value: Any) -> str:
    if isinstance(value, str) and value:
        return value
    return str(ipaddress.IPv4Address(_bytes(value).ljust(4, b"\0")))


def _wrapped_long(value: Any) -> int:
    """BIGINT UNSIGNED as int64: above 2^63-1 the same 64 bits read as signed (Debezium's ``long`` mode)."""
    value = int(value)
    return value - 2**64 if value >= 2**63 else value


def _set(value: Any, order: dict[str, int]) -> Any:
    if isinstance(value, (set, frozenset)):  # the binlog's: unordered
        return ",".join(sorted(value, key=lambda member: order.get(member, len(order))))
    return _text(value)


def _bytes(value: Any) -> Any:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _bit_int(value: Any) -> int:
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "big")
    if isinstance(value, str):
        return int(value, 2) if value else 0
    return int(value)


_ZERO_DAY = r"(\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2})"
_ZERO_DATE = re.compile(_ZERO_DAY)
_ZERO_TIMESTAMP = re.compile(_ZERO_DAY + r" 00:00:00(\.\d{1,6})?")
_DATETIME = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,6})\d*)?)?")
_TIME = re.compile(r"(?:\d{4}-\d{1,2}-\d{1,2} )?(-)?(\d+):(\d{1,2}):(\d{1,2})(?:\.(\d{1,6})\d*)?")
_NUMERIC = {"tinyint", "smallint", "mediumint", "int", "bigint", "year", "float", "double", "decimal", "bit"}


def _default_value(spec: ColumnSpec, convert: Callable[[Any], Any], where: str) -> Any:
    """The column's default as its field's value (None: no default), by Debezium's BinlogDefaultValueConverter.

    A zero date (or CURRENT_TIMESTAMP in a TIMESTAMP) is no default in a nullable column and the epoch in a
    NOT NULL one; CURRENT_TIMESTAMP in a DATETIME is the epoch. A default the field cannot hold is no default
    and a warning, as under Debezium's event.converting.failure.handling.mode=warn.
    """
    text, kind = spec.default, spec.kind
    if text is None or kind == "uuid":  # Debezium's UUID converter takes no text: no default (and a warning)
        return None
    if kind in _NUMERIC or kind in _ZERO_DATES or kind == "time":
        text = text.strip()
    fallback = None if spec.nullable else _ZERO_DATES.get(kind)
    try:
        if kind in _NUMERIC and text.lower() in ("true", "false"):  # BOOLEAN is TINYINT(1)
            raw: Any = int(text.lower() == "true")
        elif kind in _NUMERIC - {"float", "double", "decimal", "bit"}:
            raw = int(decimal.Decimal(text))
        elif kind in ("float", "double"):
            raw = float(text)
        elif kind == "decimal":
            raw = decimal.Decimal(text)
        elif kind in _ZERO_DATES:
            if text == "0" or _ZERO_TIMESTAMP.fullmatch(text) or (kind == "date" and _ZERO_DATE.fullmatch(text)) \
                    or (kind == "timestamp" and text == "1970-01-01 00:00:00"):
                return fallback
            raw = _parse_datetime(text)
            raw = raw.date() if kind == "date" else raw
        elif kind == "time":
            raw = _parse_time(text)
        elif kind in ("binary", "varbinary", "blob"):
            raw = text.encode("utf-8")
        else:
            raw = text
        value = convert(raw)
    except (ValueError, TypeError, ArithmeticError) as error:
        log.warning("mysql_default_unconvertible: %s.%s: DEFAULT %r: %s: no default", where, spec.name, text, error)
        return fallback
    return fallback if value is None else value


def _parse_datetime(text: str) -> datetime.datetime:
    found = _DATETIME.fullmatch(text)
    if found is None:
        raise ValueError("not a date and time")
    *parts, fraction = found.groups()
    return datetime.datetime(*(int(part or 0) for part in parts), int((fraction or "0").ljust(6, "0")))


def _parse_time(text: str) -> datetime.timedelta:
    found = _TIME.fullmatch(text)
    if found is None:
        raise ValueError("not a time")
    sign, hours, minutes, seconds, fraction = found.groups()
    value = datetime.timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds),
                               microseconds=int((fraction or "0").ljust(6, "0")))
    return -value if sign else value


class TableSchema:
    """The schemas of one table's records (key, value, envelope) and the converters of its columns.

    A NOT NULL column's field is required; a column's default is its field's default (Debezium's rules:
    :func:`_default_value`). A NOT NULL column read as null (a zero date) or as a value its type cannot hold
    is its default, or else the epoch for a date; else the task fails.
    """

    def __init__(self, settings: Settings, database: str, table: str, columns: Sequence[ColumnSpec]) -> None:
        self.database, self.table = database, table
        self.topic = f"{settings.prefix}.{database}.{table}"
        base = f"{settings.prefix}.{database}.{table}"
        value = SchemaBuilder.struct().name(f"{base}.Value").optional()
        key = SchemaBuilder.struct().name(f"{base}.Key")
        # name, converter, what a null becomes (None: stays null), whether the field is required
        self._converters: list[tuple[str, Callable[[Any], Any], Any, bool]] = []
        key_names = []
        for spec in columns:
            if not spec.primary and not settings.keeps_column(database, table, spec.name):
                continue  # column.include.list / column.exclude.list: never converted, never sent
            builder, convert = _schema_and_converter(spec, settings)
            default = _default_value(spec, convert, f"{database}.{table}")
            if default is not None:
                builder.default_value(default)
            required = spec.primary or not spec.nullable
            if spec.primary:
                key.field(spec.name, builder.build())
                key_names.append(spec.name)
            value.field(spec.name, (builder if required else builder.optional()).build())
            fill = None if not required else default if default is not None else _ZERO_DATES.get(spec.kind)
            self._converters.append((spec.name, convert, fill, required))
        self.value_schema = value.build()
        self.key_schema = key.build() if key_names else None
        self._key_names = key_names
        self.envelope = (SchemaBuilder.struct().name(f"{base}.Envelope").version(1)
                         .field("before", self.value_schema).field("after", self.value_schema)
                         .field("source", SOURCE_SCHEMA).field("op", Schema.STRING)
                         .field("ts_ms", Schema.OPTIONAL_INT64).field("transaction", TRANSACTION_SCHEMA).build())

    def value(self, row: dict[str, Any]) -> Struct:
        """A row (column name → value, as PyMySQL or the binlog gives it) as the Value struct."""
        values = {}
        for name, convert, fill, required in self._converters:
            raw = row.get(name)
            try:
                value = None if raw is None else convert(raw)
            except _Unrepresentable as error:
                if required and (fill is None or name in self._key_names):  # the field cannot be null
                    raise ConnectException(f"{self.database}.{self.table}.{name}: cannot convert {raw!r}: {error}") \
                        from error
                log.warning("mysql_value_unconvertible: %s.%s.%s: %s: the field is %s", self.database, self.table,
                            name, error, "its default" if required else "null")
                value = None
            except (ValueError, TypeError, decimal.InvalidOperation) as error:
                raise ConnectException(f"{self.database}.{self.table}.{name}: cannot convert {raw!r}: {error}") \
                    from error
            if value is None and required:  # a NOT NULL column's zero date: its default, else the epoch
                if fill is None:
                    raise ConnectException(f"{self.database}.{self.table}.{name}: the NOT NULL column's value "
                                           f"{raw!r} is null in its Connect type, and the column has no default")
                value = fill
            values[name] = value
        return Struct(self.value_schema, values)

    def key(self, value: Struct) -> Struct | None:
        if self.key_schema is None:
            return None
        return Struct(self.key_schema, {name: value.get(name) for name in self._key_names})


SOURCE_SCHEMA = (
    SchemaBuilder.struct().name("io.debezium.connector.mysql.Source")
    .field("version", Schema.STRING).field("connector", Schema.STRING).field("name", Schema.STRING)
    .field("ts_ms", Schema.INT64)
    .field("snapshot", SchemaBuilder.string().optional().default_value("false").name("io.debezium.data.Enum")
           .version(1).parameter("allowed", "true,last,false,incremental").build())
    .field("db", Schema.STRING).field("sequence", Schema.OPTIONAL_STRING).field("table", Schema.OPTIONAL_STRING)
    .field("server_id", Schema.INT64).field("gtid", Schema.OPTIONAL_STRING).field("file", Schema.STRING)
    .field("pos", Schema.INT64).field("row", Schema.INT32).field("thread", Schema.OPTIONAL_INT64)
    .field("query", Schema.OPTIONAL_STRING).build())

TRANSACTION_SCHEMA = (
    SchemaBuilder.struct().name("event.block").version(1).optional()
    .field("id", Schema.STRING).field("total_order", Schema.INT64).field("data_collection_order", Schema.INT64)
    .build())


def source_struct(settings: Settings, *, database: str, table: str, ts_ms: int, snapshot: str, server_id: int,
                  gtid: str | None, file: str, pos: int, row: int) -> Struct:
    return Struct(SOURCE_SCHEMA, {
        "version": VERSION, "connector": "mysql", "name": settings.prefix, "ts_ms": ts_ms, "snapshot": snapshot,
        "db": database, "table": table, "server_id": server_id, "gtid": gtid, "file": file, "pos": pos, "row": row,
    })


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class TableSchemas:
    """A :class:`TableSchema` per table and column set, made once."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._cache: dict[tuple[str, str, tuple[ColumnSpec, ...]], TableSchema] = {}

    def get(self, database: str, table: str, columns: Sequence[ColumnSpec]) -> TableSchema:
        key = (database, table, tuple(columns))
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = TableSchema(self._settings, database, table, columns)
        return found
