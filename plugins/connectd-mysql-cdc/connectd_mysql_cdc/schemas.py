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
DATETIME, TIMESTAMP              Timestamp (UTC)
YEAR                             int32
CHAR, VARCHAR, TEXT, ENUM, SET,  string (a SET's members in the column's order)
JSON
BINARY, VARBINARY, BLOB          bytes (BINARY(n): n bytes, padded with 0x00)
BIT(1), BIT(n)                   boolean, bytes (io.debezium.data.Bits)
================================ ===========================================

A zero date ('0000-00-00', sql_mode permitting) or one with a zero month or
day is null in a nullable column and the epoch (1970-01-01) in a NOT NULL
one, as Debezium gives them; in the snapshot and the binlog alike.

Primary key columns are required; the others optional.
"""

from __future__ import annotations

import datetime
import decimal
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
# A SET's member in information_schema's column_type: set('a','it''s').
_MEMBER = re.compile(r"'((?:[^']|'')*)'")


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
    precision: int | None = None
    scale: int | None = None
    primary: bool = False
    #: BINARY(n): n, the byte length its values are padded to.
    length: int | None = None
    #: SET: its members, in the order of the column's definition (the order its values are written in).
    members: tuple[str, ...] = ()
    nullable: bool = True

    @classmethod
    def from_information_schema(cls, name: str, data_type: str, column_type: str, precision: int | None,
                                scale: int | None, key: str, octet_length: int | None,
                                is_nullable: str) -> ColumnSpec:
        data_type = data_type.lower()
        kind = _NAMES.get(data_type, data_type)
        members = tuple(m.replace("''", "'") for m in _MEMBER.findall(column_type)) if kind == "set" else ()
        return cls(name, kind, "unsigned" in column_type.lower(), precision, scale, key == "PRI",
                   octet_length if kind == "binary" else None, members, is_nullable == "YES")

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
        precision = getattr(column, "precision", None) if kind == "decimal" else getattr(column, "bits", None)
        members = tuple(column.set_values or ()) if kind == "set" else ()
        return cls(column.name, kind, bool(column.unsigned), precision, getattr(column, "decimals", None),
                   bool(column.is_primary), length, members, nullable)


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
    if kind in ("bigint", "year"):
        return (SchemaBuilder.int64() if kind == "bigint" else SchemaBuilder.int32()), int
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
    if kind == "timestamp":  # the binlog writes a zero TIMESTAMP as 0, the epoch, which no real one is
        return Timestamp.builder(), lambda value: None if value == _EPOCH else _timestamp(value)
    if kind in ("varchar", "text", "enum", "json"):
        return SchemaBuilder.string(), _text
    if kind == "set":
        order = {member: index for index, member in enumerate(spec.members)}
        return SchemaBuilder.string(), lambda value: _set(value, order)
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
# What a zero date is in a NOT NULL column.
_ZERO_DATES = {"date": _EPOCH.date(), "datetime": _EPOCH, "timestamp": _EPOCH}


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


def _text(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


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


class TableSchema:
    """The schemas of one table's records (key, value, envelope) and the converters of its columns."""

    def __init__(self, settings: Settings, database: str, table: str, columns: Sequence[ColumnSpec]) -> None:
        self.database, self.table = database, table
        self.topic = f"{settings.prefix}.{database}.{table}"
        base = f"{settings.prefix}.{database}.{table}"
        value = SchemaBuilder.struct().name(f"{base}.Value").optional()
        key = SchemaBuilder.struct().name(f"{base}.Key")
        self._converters: list[tuple[str, Callable[[Any], Any], Any]] = []
        key_names = []
        for spec in columns:
            if not spec.primary and not settings.keeps_column(database, table, spec.name):
                continue  # column.include.list / column.exclude.list: never converted, never sent
            builder, convert = _schema_and_converter(spec, settings)
            if spec.primary:
                key.field(spec.name, builder.build())
                key_names.append(spec.name)
            value.field(spec.name, (builder if spec.primary else builder.optional()).build())
            zero = None if spec.nullable else _ZERO_DATES.get(spec.kind)
            self._converters.append((spec.name, convert, zero))
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
        for name, convert, zero in self._converters:
            raw = row.get(name)
            try:
                values[name] = None if raw is None else convert(raw)
                if values[name] is None and zero is not None:  # a NOT NULL column's zero date: the epoch
                    values[name] = zero
            except _Unrepresentable as error:
                if name in self._key_names:  # a key field cannot be null
                    raise ConnectException(f"{self.database}.{self.table}.{name}: cannot convert {raw!r}: {error}") \
                        from error
                log.warning("mysql_value_unconvertible: %s.%s.%s: %s: the field is null", self.database,
                            self.table, name, error)
                values[name] = None
            except (ValueError, TypeError, decimal.InvalidOperation) as error:
                raise ConnectException(f"{self.database}.{self.table}.{name}: cannot convert {raw!r}: {error}") \
                    from error
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
