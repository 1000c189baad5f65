"""Kafka records (an Arrow table: topic, partition, offset, timestamp, value) into the rows of a Delta table.

Runs in Spark executors. ``value.format``:

- ``json``: each value a JSON object, its fields the columns. With
  JsonConverter's envelope (``{"schema": …, "payload": …}``) the Connect schema
  gives the types; without, pyarrow infers them. A value that is JSON but not
  an object becomes a ``value`` column holding its JSON text.
- ``string``: one ``value`` column, the value as UTF-8 text.
- ``bytes``: one ``value`` column, the bytes.

Connect types in Delta terms (from the envelope's schema):

=================================== ======================================
Connect                             Delta (Arrow)
=================================== ======================================
int8, int16, int32, int64           byte, short, integer, long
float32, float64, boolean, string   float, double, boolean, string
bytes                               binary
Decimal (scale s)                   decimal(precision or 38, s)
Date                                date
Time                                string (HH:MM:SS.fff: Delta has no time type)
Timestamp                           timestamp (UTC, microseconds)
struct, array                       struct, array
map                                 string (its JSON text)
=================================== ======================================

Records with a null value (tombstones) are skipped: an append-only table has
nothing to delete by key. So are envelopes whose payload is null (what
JsonConverter writes for a null value with a schema); an envelope whose schema
is null (a schemaless value with ``schemas.enable=true``) is read as its
payload alone. A value that cannot be read fails the batch,
naming the record; schemaless values whose field fits no one type (``1`` and
``"x"``) fail it naming the field and the records' offsets.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
from typing import Any

import pyarrow as pa

__all__ = ["KAFKA_COLUMNS", "RecordError", "records_table"]

KAFKA_COLUMNS = ("_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp")
_EPOCH = datetime.date(1970, 1, 1)
_EPOCH_TIME = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_PRIMITIVES = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
               "float32": pa.float32(), "float64": pa.float64(), "boolean": pa.bool_(), "string": pa.string(),
               "bytes": pa.binary()}
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_DECIMAL_BYTES = _DECIMAL.encode()
_DATE = "org.apache.kafka.connect.data.Date"
_TIME = "org.apache.kafka.connect.data.Time"
_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"


class RecordError(ValueError):
    """A record whose value cannot become a row."""


def _arrow_type(schema: dict[str, Any]) -> pa.DataType:
    name, kind = schema.get("name"), schema.get("type")
    if name == _DECIMAL:
        parameters = schema.get("parameters") or {}
        return pa.decimal128(int(parameters.get("connect.decimal.precision", 38)), int(parameters.get("scale", 0)))
    if name == _DATE:
        return pa.date32()
    if name == _TIME:
        return pa.string()
    if name == _TIMESTAMP:
        return pa.timestamp("us", tz="UTC")
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    if kind == "struct":
        return pa.struct([pa.field(f["field"], _arrow_type(f), nullable=True) for f in schema.get("fields", [])])
    if kind == "array":
        return pa.list_(_arrow_type(schema["items"]))
    if kind == "map":
        return pa.string()
    raise RecordError(f"unknown Connect type {kind!r}")


def _converter(schema: dict[str, Any]) -> Any:
    """A function of a struct payload to its row, made once per schema: fields that need no conversion
    (numbers, strings, booleans) are taken as they are."""
    fields = [(f["field"], None if f.get("type") in _AS_IS and not f.get("name") else f)
              for f in schema.get("fields", [])]
    if _DECIMAL in json.dumps(schema):
        # numbers may come as decimals (see _row): float fields convert theirs
        fields = [(name, {"type": schema_field["type"]} if field is None and schema_field.get("type") in _FLOATS
                   else field) for (name, field), schema_field in zip(fields, schema.get("fields", []), strict=True)]

    def convert(payload: dict[str, Any]) -> dict[str, Any]:
        return {name: payload.get(name) if field is None else _convert(field, payload.get(name))
                for name, field in fields}
    return convert


_AS_IS = frozenset({"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string"})
_FLOATS = frozenset({"float32", "float64"})


def _convert(schema: dict[str, Any], value: Any) -> Any:
    """A payload value (as JsonConverter writes it) as the Python value of its Arrow type."""
    if value is None:
        return None
    name, kind = schema.get("name"), schema.get("type")
    if name == _DECIMAL:
        scale = int((schema.get("parameters") or {}).get("scale", 0))
        if isinstance(value, str):
            unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
            return decimal.Decimal(unscaled).scaleb(-scale)
        return decimal.Decimal(str(value))
    if name == _DATE:
        return _EPOCH + datetime.timedelta(days=value)
    if name == _TIME:
        return (datetime.datetime.min + datetime.timedelta(milliseconds=value)).time().isoformat(timespec="milliseconds")
    if name == _TIMESTAMP:
        return _EPOCH_TIME + datetime.timedelta(milliseconds=value)
    if kind in _FLOATS:
        return float(value)  # a decimal where the value's numbers were parsed as decimals
    if kind == "bytes":
        return base64.b64decode(value)
    if kind == "struct":
        return {f["field"]: _convert(f, value.get(f["field"])) for f in schema.get("fields", [])}
    if kind == "array":
        return [_convert(schema["items"], item) for item in value]
    if kind == "map":
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return value


class _Group:
    """Rows of one value schema, with their Kafka coordinates."""

    def __init__(self, schema: pa.Schema | None) -> None:
        self.schema = schema
        self.rows: list[Any] = []
        self.kafka: list[tuple[str, int, int, int | None]] = []


def records_table(records: pa.Table, value_format: str, kafka_columns: bool) -> pa.Table:
    """*records* (topic, partition, offset, timestamp, value) as rows; tombstones skipped."""
    topics, partitions = records.column("topic").to_pylist(), records.column("partition").to_pylist()
    offsets, timestamps = records.column("offset").to_pylist(), records.column("timestamp").to_pylist()
    values = records.column("value").to_pylist()
    groups: dict[Any, _Group] = {}
    schemas: list[tuple[dict[str, Any], pa.Schema, Any]] = []
    for topic, partition, offset, timestamp, value in zip(topics, partitions, offsets, timestamps, values,
                                                          strict=True):
        if value is None:
            continue
        try:
            read = _row(bytes(value), value_format, schemas)
        except (ValueError, TypeError, KeyError, decimal.InvalidOperation) as error:
            raise RecordError(f"record {topic}-{partition}@{offset}: {error}") from error
        if read is None:
            continue
        key, row, schema = read
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(schema)
        group.rows.append(row)
        group.kafka.append((topic, partition, offset, timestamp))
    tables = []
    for group in groups.values():
        try:
            if group.schema is None:  # schemaless JSON objects: the union of their fields, types inferred
                table = pa.Table.from_struct_array(pa.array(group.rows))
            else:
                table = pa.Table.from_pylist(group.rows, schema=group.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as error:
            clash = _clash(group.rows) if group.schema is None else None
            raise RecordError(f"records {_where(group.kafka)}: " + (
                f"field {clash}: its values fit no one column type ({error}); give the records a schema "
                "(JsonConverter's envelope)" if clash else str(error))) from error
        if kafka_columns:
            coordinates = list(zip(*group.kafka, strict=True))
            table = (table.append_column(KAFKA_COLUMNS[0], pa.array(coordinates[0], pa.string()))
                     .append_column(KAFKA_COLUMNS[1], pa.array(coordinates[1], pa.int32()))
                     .append_column(KAFKA_COLUMNS[2], pa.array(coordinates[2], pa.int64()))
                     .append_column(KAFKA_COLUMNS[3], pa.array(coordinates[3], pa.int64())))
        tables.append(table)
    if not tables:
        return pa.table({})
    try:
        return pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise RecordError(f"records {_where([row for group in groups.values() for row in group.kafka])}: their "
                          f"schemas (or, without one, their values) disagree on a field's type: {error}") from error


def _where(kafka: list[tuple[str, int, int, int | None]]) -> str:
    """The records of *kafka* (topic, partition, offset, timestamp) as ``orders-0@3..9``, per partition."""
    spans: dict[tuple[str, int], tuple[int, int]] = {}
    for topic, partition, offset, _ in kafka:
        low, high = spans.get((topic, partition), (offset, offset))
        spans[topic, partition] = (min(low, offset), max(high, offset))
    return ", ".join(f"{topic}-{partition}@{low}..{high}" for (topic, partition), (low, high) in sorted(spans.items()))


def _clash(rows: list[dict[str, Any]]) -> str | None:
    """The first field of schemaless *rows* whose values have no one Arrow type."""
    for name in dict.fromkeys(name for row in rows for name in row):
        try:
            pa.array([row.get(name) for row in rows])
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return name
    return None


def _row(value: bytes, value_format: str,
         schemas: list[tuple[dict[str, Any], pa.Schema, Any]]) -> tuple[Any, Any, pa.Schema | None] | None:
    """(group key, row dict, Arrow schema or None to infer) of one value, or ``None`` for an enveloped null."""
    if value_format == "string":
        return "string", {"value": value.decode("utf-8")}, pa.schema([("value", pa.string())])
    if value_format == "bytes":
        return "bytes", {"value": value}, pa.schema([("value", pa.binary())])
    # A Decimal field written as a JSON number (JsonConverter's decimal.format=NUMERIC) is exact only if the
    # number is never a float: parse such values' numbers as decimals (float fields turn them back).
    exact = _DECIMAL_BYTES in value
    parsed = json.loads(value, parse_float=decimal.Decimal) if exact else json.loads(value)
    envelope = isinstance(parsed, dict) and set(parsed) == {"schema", "payload"}
    if exact and not (envelope and isinstance(parsed["schema"], dict)):
        parsed = json.loads(value)  # schemaless after all: its numbers are inferred as JSON's
        envelope = isinstance(parsed, dict) and set(parsed) == {"schema", "payload"}
    if envelope and parsed["payload"] is None:
        return None  # JsonConverter's null value, with or without a schema: a tombstone
    if envelope and parsed["schema"] is None:
        parsed = parsed["payload"]  # JsonConverter's schemaless value (schemas.enable=true)
    elif envelope and isinstance(parsed["schema"], dict):
        schema_json = parsed["schema"]
        # Records of a batch mostly share one schema: compare with those seen (equal dicts), newest first.
        for index in range(len(schemas) - 1, -1, -1):
            if schemas[index][0] == schema_json:
                break
        else:
            if schema_json.get("type") != "struct":
                raise RecordError(f"the schema is a {schema_json.get('type')}, not a struct")
            schemas.append((schema_json, pa.schema(list(_arrow_type(schema_json))), _converter(schema_json)))
            index = len(schemas) - 1
        _, arrow, convert = schemas[index]
        return index, convert(parsed["payload"]), arrow
    if isinstance(parsed, dict):
        return "inferred", parsed, None
    return "json", {"value": json.dumps(parsed)}, pa.schema([("value", pa.string())])
