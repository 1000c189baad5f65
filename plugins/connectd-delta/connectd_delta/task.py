"""The Delta sink task: executors write Parquet files, the worker commits them with the batch's offsets.

Per micro-batch (``write_batch``):

1. the worker reads, for each of the task's partitions, the offset its table
   already holds: the version of the Delta *application transaction*
   ``connectd-<connector>-<topic>-<partition>`` (the next offset to write);
2. each Spark task (one Kafka partition of the batch, on an executor) drops
   the records below that offset (written by an earlier run of this batch),
   turns the rest into rows (:mod:`connectd_delta.rows`), names the columns
   the table has as it does (Delta's names are case-insensitive) and casts
   them to its types, keeping the struct fields the table lacks, leaves out
   those with no value yet (null type), writes them as Parquet files into
   the table's directory (one per Hive-style partition of the table's
   partition columns: an existing table's own, ``partition.by`` for a table
   the sink creates), and returns only the files' names, sizes and types and
   the partition's first and last offsets;
3. the worker checks that every file's column and nested field types are the
   table's (and each other's), adds what the table lacks (columns, nested
   struct fields; a void column takes its first values' type) in a commit of
   the schema alone, checks that no other writer moved the partitions'
   offsets meanwhile, then commits every file of the batch **and** each
   partition's new application transaction version in one Delta transaction
   (again, after checking the files anew, when another task changed the
   schema just before).

So a batch is in the table entirely, with its offsets, or not at all: a
crash before the commit leaves files no commit names (Delta ignores them;
``VACUUM`` removes them), and the batch is read again; a crash after it but
before connectd commits the group's offsets replays the batch, whose records
step 2 then drops. At start the task moves its partitions to the offsets the
table holds (``context.offset``), so records already in the table are not
even read again.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from connectd import ConnectException, SparkSinkTask, TopicPartition

from connectd_delta.config import Settings, settings

__all__ = ["DeltaSinkTask", "write_partition"]

log = logging.getLogger(__name__)

#: How often a commit is tried when another writer changed the table meanwhile.
_COMMIT_ATTEMPTS = 5


def app_id(connector: str, topic: str, partition: int) -> str:
    """The Delta application transaction that holds *topic*/*partition*'s next offset for *connector*."""
    return f"connectd-{connector}-{topic}-{partition}"


def _partition_value(value: Any) -> str | None:
    """*value* of a partition column as Delta's log holds it (the protocol's "partition value serialization")."""
    import datetime
    import decimal

    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:  # Delta's timestamp: ISO 8601 in UTC, the protocol's form without a zone doubt
            return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")  # timestamp_ntz
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # never an exponent (1E+2)
    return str(value)


def _partition_path(names: tuple[str, ...], values: tuple[Any, ...]) -> tuple[str, dict[str, str | None]]:
    from urllib.parse import quote

    parts, partition_values = [], {}
    for name, value in zip(names, values, strict=True):
        text = _partition_value(value)
        partition_values[name] = text
        parts.append(f"{name}={quote(text, safe='') if text is not None else '__HIVE_DEFAULT_PARTITION__'}")
    return "/".join(parts), partition_values


def write_partition(rows: Iterator[Any], plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Spark's ``mapPartitions`` function: one Spark partition's records into Parquet files; see the module doc.

    Yields one dict per file written and one per Kafka partition seen (its last offset).
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from connectd_delta.rows import records_table

    columns: tuple[list[Any], ...] = ([], [], [], [], [])
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    if not columns[0]:
        return
    records = pa.table({"topic": pa.array(columns[0], pa.string()), "partition": pa.array(columns[1], pa.int32()),
                        "offset": pa.array(columns[2], pa.int64()), "timestamp": pa.array(columns[3], pa.int64()),
                        "value": pa.array([bytes(v) if v is not None else None for v in columns[4]], pa.binary())})
    out: list[dict[str, Any]] = []
    stored: dict[str, int] = plan["stored"]
    keys = pc.binary_join_element_wise(records.column("topic"), pc.cast(records.column("partition"), pa.string()),
                                       "\x00")
    minimum = pa.array([stored.get(key, 0) for key in keys.to_pylist()], pa.int64())
    for key in set(keys.to_pylist()):
        topic, partition = key.split("\x00")
        mask = pc.equal(keys, key)
        span = pc.min_max(pc.filter(records.column("offset"), mask)).as_py()
        out.append({"kind": "offset", "topic": topic, "partition": int(partition), "first": span["min"],
                    "last": span["max"]})
    fresh = records.filter(pc.greater_equal(records.column("offset"), minimum))
    if fresh.num_rows:
        by_table: dict[str, Any] = {}
        if "${topic}" in plan["table_uri"]:
            for topic in set(fresh.column("topic").to_pylist()):
                by_table[plan["table_uri"].replace("${topic}", topic)] = fresh.filter(
                    pc.equal(fresh.column("topic"), topic))
        else:
            by_table[plan["table_uri"]] = fresh
        for uri, part in by_table.items():
            converted = records_table(part, plan["value_format"], plan["kafka_columns"])
            if converted.num_rows == 0:
                continue  # only tombstones
            sources = sorted({f"{topic}-{partition}" for topic, partition in zip(
                part.column("topic").to_pylist(), part.column("partition").to_pylist(), strict=True)})
            typed = _without_null_types(_cast_to_table(converted, plan["schemas"].get(uri), uri, sources),
                                        plan["partition_by"][uri])
            out += _write_files(typed, uri, plan, sources, pafs, pq, pc)
    yield from out


def _cast_to_table(rows: Any, schema_bytes: bytes | None, uri: str, sources: list[str]) -> Any:
    """Columns the table already has as its own: spelled as the table spells them (Delta's names are
    case-insensitive), cast to its types (an int32 field into a long column) and, inside structs, with the fields
    the table lacks kept (the worker adds them to the table's schema) and those it has but the records lack null; a
    value the cast would change (1.5 into a long column) fails the batch."""
    import pyarrow as pa

    table_schema = pa.ipc.read_schema(pa.py_buffer(schema_bytes)) if schema_bytes is not None else pa.schema([])
    table_fields = {field.name.lower(): field for field in table_schema}
    _check_spelling([field.name for field in rows.schema], "", uri, sources)
    for index, field in enumerate(rows.schema):
        table_field = table_fields.get(field.name.lower())
        spelled = _spelled(field.type, table_field.type if table_field is not None else None, field.name, uri,
                           sources)
        column = rows.column(index)
        if spelled != field.type:  # the same data, its struct fields renamed
            column = pa.chunked_array([chunk.view(spelled) for chunk in column.chunks], spelled)
        if table_field is None:
            if spelled != field.type:
                rows = rows.set_column(index, field.with_type(spelled), column)
            continue
        wanted = _evolved(table_field.type, spelled)
        if wanted != spelled:
            try:
                column = column.cast(wanted)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                raise ConnectException(f"{uri}: column {table_field.name} is {table_field.type} in the table, "
                                       f"{field.type} in records of {', '.join(sources)}: {error}") from error
        rows = rows.set_column(index, pa.field(table_field.name, wanted), column)
    return rows


def _check_spelling(names: list[str], path: str, uri: str, sources: list[str]) -> None:
    """Fail if two of *names* (fields of the records' column or struct at *path*) differ only in case: Delta's
    names are case-insensitive, so they would be one column, and delta-rs refuses such a schema."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            raise ConnectException(f"{uri}: fields {path}{other} and {path}{name} in records of {', '.join(sources)} "
                                   "differ only in case; Delta's column names are case-insensitive, so they would "
                                   "be one column: rename one of them in the records")


def _spelled(data_type: Any, table_type: Any, path: str, uri: str, sources: list[str]) -> Any:
    """*data_type* (of the records' column or field at *path*, as they spell it) with its struct fields named as
    the table's *table_type* names them (``None``: the table has no such column), at any depth."""
    import pyarrow as pa

    if pa.types.is_struct(data_type):
        _check_spelling([field.name for field in data_type.fields], f"{path}.", uri, sources)
        names = {field.name.lower(): field for field in table_type.fields} \
            if table_type is not None and pa.types.is_struct(table_type) else {}
        fields = []
        for field in data_type.fields:
            table_field = names.get(field.name.lower())
            name = table_field.name if table_field is not None else field.name
            fields.append(field.with_name(name).with_type(_spelled(
                field.type, table_field.type if table_field is not None else None, f"{path}.{field.name}", uri,
                sources)))
        return pa.struct(fields)
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        item = table_type.value_type if table_type is not None and (
            pa.types.is_list(table_type) or pa.types.is_large_list(table_type)) else None
        value_field = data_type.value_field.with_type(_spelled(data_type.value_type, item, f"{path}[]", uri, sources))
        return pa.list_(value_field) if pa.types.is_list(data_type) else pa.large_list(value_field)
    return data_type


def _evolved(table_type: Any, data_type: Any) -> Any:
    """The type of a column (or struct field) that is *table_type* in the table (``None``: not there yet) once
    values of *data_type* are written to it, as Delta's schema merge makes it: a struct keeps its fields, in their
    order and types, and gains the ones it lacks (at the end), in structs at any depth and in lists; a
    ``void`` part (Arrow's null type: a column of an older writer that never had a value) takes the values' type.
    Any other type is the table's: values are cast to it."""
    import pyarrow as pa

    if table_type is None or pa.types.is_null(table_type):
        return data_type
    if pa.types.is_null(data_type):
        return table_type
    if pa.types.is_struct(table_type) and pa.types.is_struct(data_type):
        given = {field.name: field for field in data_type.fields}
        known = {field.name for field in table_type.fields}
        fields = [field.with_type(_evolved(field.type, given[field.name].type)) if field.name in given else field
                  for field in table_type.fields]
        fields += [field.with_type(_nullable(field.type)).with_nullable(True) for field in data_type.fields
                   if field.name not in known]
        return pa.struct(fields)
    if (pa.types.is_list(table_type) or pa.types.is_large_list(table_type)) and (
            pa.types.is_list(data_type) or pa.types.is_large_list(data_type)):
        value_field = table_type.value_field.with_type(_evolved(table_type.value_type, data_type.value_type))
        return pa.list_(value_field) if pa.types.is_list(table_type) else pa.large_list(value_field)
    return table_type


def _typed(data_type: Any) -> Any:
    """*data_type* without its parts of Arrow's null type (struct fields, list items), ``None`` if nothing is left."""
    import pyarrow as pa

    if pa.types.is_null(data_type):
        return None
    if pa.types.is_struct(data_type):
        fields = [field.with_type(typed) for field in data_type.fields
                  for typed in [_typed(field.type)] if typed is not None]
        return pa.struct(fields) if fields else None
    if pa.types.is_list(data_type):
        item = _typed(data_type.value_type)
        return None if item is None else pa.list_(data_type.value_field.with_type(item))
    return data_type


def _without_null_types(rows: Any, partition_by: list[str]) -> Any:
    """*rows* without the columns (and struct fields) that only ever held nulls, empty lists or empty objects;
    partition columns stay, since every file needs them.

    Inference gives them Arrow's null type, which would become a Delta column of type void: no later value
    could be cast to it, so every later batch with one would fail. Left out, the column is added by the first
    batch that has a value for it.
    """
    for name, data_type in zip(rows.column_names, rows.schema.types, strict=True):
        if name in partition_by:
            continue
        typed = _typed(data_type)
        if typed is None:
            rows = rows.drop_columns([name])
        elif typed != data_type:
            rows = rows.set_column(rows.column_names.index(name), name, rows.column(name).cast(typed))
    return rows


def _write_files(rows: Any, uri: str, plan: dict[str, Any], sources: list[str], pafs: Any, pq: Any,
                 pc: Any) -> list[dict[str, Any]]:
    filesystem, root = pafs.FileSystem.from_uri(uri if "://" in uri else os.path.abspath(uri))
    names = tuple(plan["partition_by"][uri])
    missing = [name for name in names if name not in rows.schema.names]
    if missing:
        raise ConnectException(f"{uri} is partitioned by {', '.join(missing)}, which the records do not have")
    if names:
        combos = rows.select(list(names)).group_by(list(names)).aggregate([]).to_pylist()
    else:
        combos = [{}]
    out = []
    for combo in combos:
        part = rows
        for name in names:
            value = combo[name]
            part = part.filter(pc.is_null(part.column(name)) if value is None else pc.equal(part.column(name), value))
        directory, partition_values = _partition_path(names, tuple(combo[name] for name in names))
        data = part.drop_columns(list(names)) if names else part
        relative = f"{directory}/" if directory else ""
        relative += f"part-{plan['batch_id']:08d}-{uuid.uuid4().hex}.parquet"
        full = f"{root.rstrip('/')}/{relative}"
        filesystem.create_dir(full.rsplit("/", 1)[0], recursive=True)
        pq.write_table(data, full, filesystem=filesystem)
        info = filesystem.get_file_info(full)
        out.append({"kind": "file", "table": uri, "path": relative, "size": info.size, "rows": data.num_rows,
                    "partition_values": json.dumps(partition_values), "mtime": int(time.time() * 1000),
                    "schema": part.schema.serialize().to_pybytes(), "sources": sources})
    return out


def _nullable(data_type: Any) -> Any:
    """*data_type* with every nested field nullable: whether a struct's field may be null is no conflict
    (a Connect schema's required field and an inferred one are the same column to a reader)."""
    import pyarrow as pa

    if pa.types.is_struct(data_type):
        return pa.struct([field.with_type(_nullable(field.type)).with_nullable(True) for field in data_type.fields])
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        item = data_type.value_field.with_type(_nullable(data_type.value_type)).with_nullable(True)
        return pa.list_(item) if pa.types.is_list(data_type) else pa.large_list(item)
    if pa.types.is_map(data_type):
        return pa.map_(_nullable(data_type.key_type), _nullable(data_type.item_type))
    return data_type


def _nodes(data_type: Any, path: tuple[str, ...], out: dict[tuple[str, ...], tuple[tuple[str, ...], str]]) -> None:
    """Every column and nested field of a column of *data_type* at *path*, into *out*: by its path in lower case
    (Delta's names are case-insensitive), its path as spelled and its type (a leaf's, or struct, array, map).
    Parts of Arrow's null type have no type yet (a void column, a partition value null in a whole file): any type
    fits them, so they are left out."""
    import pyarrow as pa

    if pa.types.is_null(data_type):
        return
    key = tuple(segment.lower() for segment in path)
    if pa.types.is_struct(data_type):
        out[key] = (path, "struct")
        for field in data_type.fields:
            _nodes(field.type, (*path, field.name), out)
    elif pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        out[key] = (path, "array")
        _nodes(data_type.value_type, (*path, "[]"), out)
    elif pa.types.is_map(data_type):
        out[key] = (path, "map")
        _nodes(data_type.key_type, (*path, "{key}"), out)
        _nodes(data_type.item_type, (*path, "{value}"), out)
    else:
        out[key] = (path, str(data_type))


def _shown(path: tuple[str, ...]) -> str:
    """A column's or nested field's path as the log and errors name it: ``addr.city``, ``lines[].sku``."""
    return path[0] + "".join(segment if segment in ("[]", "{key}", "{value}") else f".{segment}"
                             for segment in path[1:])


def _schema_nodes(schema: Any) -> dict[tuple[str, ...], tuple[tuple[str, ...], str]]:
    out: dict[tuple[str, ...], tuple[tuple[str, ...], str]] = {}
    for field in schema:
        _nodes(field.type, (field.name,), out)
    return out


def _delta_types(schema: Any) -> Any:
    """*schema* in Delta's terms: string and large_string alike, list items named alike."""
    import pyarrow as pa
    from deltalake import Schema

    return pa.schema(Schema.from_arrow(schema).to_arrow())


def _check_types(uri: str, files: list[Any], written: list[Any], table_schema: Any) -> None:
    """Fail, before anything is committed, if a written file (*files*, their Arrow schemas *written*, in Delta's
    terms) has a column or nested field of another type than the table's (*table_schema*, ``None`` for a table to
    create) or than another file's, or names it otherwise than in case only.

    Executors infer schemaless types each on their own records (1 is a long, 1.5 a double), and another task may
    add a column first; but Delta readers read a file's column as the table's type, and a Parquet long is no
    double to them (Spark no more than delta-rs): committing such a file would leave the table unreadable.
    """
    found: dict[tuple[str, ...], dict[str, set[str]]] = {}
    spelled: dict[tuple[str, ...], dict[str, set[str]]] = {}
    shown: dict[tuple[str, ...], str] = {}
    for row, schema in zip(files, written, strict=True):
        for key, (path, node) in _schema_nodes(schema).items():
            found.setdefault(key, {}).setdefault(node, set()).update(row["sources"])
            spelled.setdefault(key, {}).setdefault(path[-1], set()).update(row["sources"])
            shown.setdefault(key, _shown(path))
    table_nodes = _schema_nodes(table_schema) if table_schema is not None else {}
    conflicts = []
    for key, types in found.items():
        table_path, table_type = table_nodes.get(key, (None, None))
        if key[:-1] in found and (len(found[key[:-1]]) > 1 or len(spelled[key[:-1]]) > 1):
            continue  # its parent conflicts already
        names = spelled[key]
        if len(names) > 1 or (table_path is not None and table_path[-1] not in names):
            in_files = "; ".join(f"{name} in the files of {', '.join(sorted(sources))}"
                                 for name, sources in names.items())
            table_name = f" (the table has {_shown(table_path)})" if table_path is not None else ""
            conflicts.append(f"{shown[key]}: spelled {in_files}{table_name}, one name to Delta (its names are "
                             "case-insensitive)")
        elif len(types) > 1 or (table_type is not None and table_type not in types):
            in_files = "; ".join(f"{data_type} in the files of {', '.join(sorted(sources))}"
                                 for data_type, sources in types.items())
            conflicts.append(f"{shown[key]}: {in_files}" + (f" (the table has {table_type})" if table_type else ""))
    if conflicts:
        raise ConnectException(f"{uri}: columns with conflicting types, nothing committed: {' | '.join(conflicts)}. "
                               "Give the records a schema (JsonConverter's envelope), or add the column to the "
                               "table with the wider type first")


def _evolved_schema(table_schema: Any, written: list[Any]) -> Any:
    """The table's schema (*table_schema*, ``None`` for a table to create) once the files of *written* schemas are
    in it: new columns at the end, new nested fields in their structs, void parts typed (see :func:`_evolved`)."""
    import pyarrow as pa

    fields = {field.name: field for field in table_schema} if table_schema is not None else {}
    for schema in written:
        for field in schema:
            known = fields.get(field.name)
            fields[field.name] = known.with_type(_evolved(known.type, field.type)) if known is not None \
                else field.with_type(_nullable(field.type)).with_nullable(True)
    return pa.schema(list(fields.values()))


def _new_in(evolved: Any, current: Any) -> list[str]:
    """The columns and nested fields of *evolved* that *current* lacks or has as void (their parents only, for
    those in a parent that is new itself)."""
    before, after = _schema_nodes(current), _schema_nodes(evolved)
    return [_shown(path) for key, (path, _) in after.items()
            if key not in before and (len(key) == 1 or key[:-1] in before)]


class DeltaSinkTask(SparkSinkTask):
    """Exactly-once appends to Delta tables; see the module's docstring."""

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self._settings: Settings = settings(config)
        if not self._settings.connector:
            raise ConnectException("the Delta sink needs the connector's name in its config")
        self._tables: dict[str, Any] = {}
        for tp, offset in self._stored(self.context.assignment()).items():
            self.context.offset(tp, offset)  # the table knows how far it got: start there
        for uri in {self._settings.table_for(tp.topic) for tp in self.context.assignment()}:
            self._partitioning(uri, self._table(uri))  # a partition.by the table contradicts fails now
        log.info("delta_sink_started: %s", self._settings.table_uri)

    def _table(self, uri: str) -> Any:
        """The table at *uri* brought up to date, or ``None`` if there is none yet."""
        from deltalake import DeltaTable

        table = self._tables.get(uri)
        if table is not None:
            table.update_incremental()
            return table
        if not DeltaTable.is_deltatable(uri, storage_options=self._settings.storage_options or None):
            return None
        table = self._tables[uri] = DeltaTable(uri, storage_options=self._settings.storage_options or None)
        return table

    def _partitioning(self, uri: str, table: Any) -> list[str]:
        """The columns the files for *uri* are partitioned by: an existing table's own, since every file must be
        laid out as the table says (Delta reads a partition column from the path, never from the file);
        ``partition.by`` only shapes a table the sink creates, and must not contradict one that exists."""
        wanted = list(self._settings.partition_by)
        if table is None:
            return wanted
        columns = list(table.metadata().partition_columns)
        if wanted and wanted != columns:
            raise ConnectException(
                f"{uri} is partitioned by {', '.join(columns) or 'no column'}, but partition.by is "
                f"{', '.join(wanted)}: an existing table keeps its partitioning; set partition.by to the table's "
                "columns or leave it empty")
        return columns

    def _stored(self, partitions: Any) -> dict[TopicPartition, int]:
        """The next offset each of *partitions* has in its table (those it has)."""
        found = {}
        for tp in partitions:
            table = self._table(self._settings.table_for(tp.topic))
            version = table.transaction_version(app_id(self._settings.connector, tp.topic, tp.partition)) \
                if table is not None else None
            if version is not None:
                found[tp] = version
        return found

    def write_batch(self, batch: Any, batch_id: int) -> None:
        import functools

        import pyarrow as pa

        stored = self._stored(self.context.assignment())
        uris = {self._settings.table_for(tp.topic) for tp in self.context.assignment()}
        schemas, partitioning = {}, {}
        for uri in uris:
            table = self._table(uri)
            partitioning[uri] = self._partitioning(uri, table)
            if table is not None:
                schemas[uri] = pa.schema(table.schema().to_arrow()).serialize().to_pybytes()
        plan = {"stored": {f"{tp.topic}\x00{tp.partition}": offset for tp, offset in stored.items()},
                "table_uri": self._settings.table_uri, "value_format": self._settings.value_format,
                "kafka_columns": self._settings.kafka_columns, "partition_by": partitioning,
                "batch_id": batch_id, "schemas": schemas}
        results = (batch.select("topic", "partition", "offset", "timestamp", "value").rdd
                   .mapPartitions(functools.partial(write_partition, plan=plan)).collect())
        files: dict[str, list[Any]] = {}
        versions: dict[str, dict[TopicPartition, int]] = {}
        first: dict[TopicPartition, int] = {}
        for row in results:
            if row["kind"] == "file":
                files.setdefault(row["table"], []).append(row)
            else:
                tp = TopicPartition(row["topic"], row["partition"])
                next_offset = max(row["last"] + 1, stored.get(tp, 0))
                versions.setdefault(self._settings.table_for(tp.topic), {})[tp] = next_offset
                first[tp] = min(row["first"], first.get(tp, row["first"]))
        for tp, offset in sorted(first.items()):
            # The task starts each partition where its table got to, so this is no replay of its own: the topic
            # was deleted and made again (its offsets start over), or another writer went on with the partition.
            if offset < stored.get(tp, 0):
                log.warning("delta_records_already_in_table: %s-%d from offset %d: the table holds it up to offset "
                            "%d, so the records below are skipped as written before (a topic deleted and made "
                            "again needs a new connector name or table)",
                            tp.topic, tp.partition, offset, stored[tp])
        for uri in sorted(set(files) | set(versions)):
            self._commit(uri, files.get(uri, []), versions.get(uri, {}), partitioning[uri], stored)

    def _commit(self, uri: str, files: list[Any], versions: Mapping[TopicPartition, int],
                partition_by: list[str], stored: Mapping[TopicPartition, int]) -> None:
        import pyarrow as pa
        from deltalake import Schema
        from deltalake.exceptions import CommitFailedError
        from deltalake.transaction import (
            AddAction,
            CommitProperties,
            Transaction,
            create_table_with_add_actions,
        )

        connector = self._settings.connector
        transactions = [Transaction(app_id(connector, tp.topic, tp.partition), version)
                        for tp, version in sorted(versions.items())]
        adds = [AddAction(row["path"], row["size"], json.loads(row["partition_values"]), row["mtime"], True,
                          json.dumps({"numRecords": row["rows"]})) for row in files]
        written = [_delta_types(pa.ipc.read_schema(pa.py_buffer(row["schema"]))) for row in files]
        commit = CommitProperties(app_transactions=transactions)
        table = self._table(uri)
        if table is None:
            if not files:
                return  # tombstones only: no table to keep offsets in yet, and nothing lost by moving past them
            _check_types(uri, files, written, None)
            schema = _evolved_schema(None, written)
            untyped = [name for name in partition_by if pa.types.is_null(schema.field(name).type)]
            if untyped:  # null in every record: Delta has no column type for that, and a stuck task helps nobody
                log.warning("delta_partition_column_as_string: %s: %s has no value in the records that create the "
                            "table; the column is made a string", uri, ", ".join(untyped))
            schema = pa.schema([field.with_type(pa.string()) if field.name in untyped else field for field in schema])
            try:
                create_table_with_add_actions(uri, Schema.from_arrow(schema), adds, mode="append",
                                              partition_by=partition_by or None,
                                              storage_options=self._settings.storage_options or None,
                                              commit_properties=commit)
            except Exception:
                # Another task (tasks.max > 1 start together) created it first: append to it instead.
                table = self._table(uri)
                if table is None:
                    raise
                log.info("delta_table_created_meanwhile: %s", uri)
            else:
                log.info("delta_table_created: %s (%d files)", uri, len(adds))
                return
        if not files and all(version == stored.get(tp) for tp, version in versions.items()):
            return  # every record was in the table already (or a tombstone of a partition that got no further)
        if self._partitioning(uri, table) != partition_by:
            raise ConnectException(f"{uri} was created meanwhile, partitioned by "
                                   f"{', '.join(table.metadata().partition_columns) or 'no column'}; this batch's "
                                   f"files are partitioned by {', '.join(partition_by) or 'no column'}: "
                                   "nothing committed")
        for attempt in range(_COMMIT_ATTEMPTS):
            self._evolve(uri, table, files, written)
            # Offsets the batch did not start from: another writer (a task of this connector still running
            # elsewhere, after a rebalance) committed these partitions meanwhile, and the batch's files may hold its
            # records. From here on delta-rs itself refuses a concurrent commit of the same application transactions.
            moved = [f"{tp.topic}-{tp.partition} (now {now}, the batch started from {stored.get(tp)})"
                     for tp in sorted(versions) for now in [table.transaction_version(
                         app_id(connector, tp.topic, tp.partition))] if now != stored.get(tp)]
            if moved:
                raise ConnectException(f"{uri}: offsets committed by another writer since the batch began: "
                                       f"{', '.join(moved)}; nothing committed (the task starts again from the "
                                       "table's offsets)")
            try:
                table.create_write_transaction(adds, "append", table.schema(), partition_by=partition_by or None,
                                               commit_properties=commit)
                return
            except CommitFailedError as error:
                # Another task changed the table's schema since it was read (it added a column of its batch): check
                # the files against the schema as it is now, and commit again.
                if attempt == _COMMIT_ATTEMPTS - 1:
                    raise
                log.info("delta_commit_again: %s: %s", uri, error)
                table.update_incremental()

    def _evolve(self, uri: str, table: Any, files: list[Any], written: list[Any]) -> None:
        """Check the files against *table*'s schema and add what they have and it lacks (a commit of the schema
        alone), *table* brought up to date."""
        import pyarrow as pa
        from deltalake import write_deltalake

        for attempt in range(_COMMIT_ATTEMPTS):
            current = pa.schema(table.schema().to_arrow())
            _check_types(uri, files, written, current)
            evolved = _evolved_schema(current, written)
            if evolved == current:
                return
            try:
                # An append of no rows that merges the schema: a commit of the new schema alone. delta-rs merges
                # nested struct fields (in structs and lists of structs) and types void columns, which
                # alter.add_columns does not do for the latter.
                write_deltalake(table, evolved.empty_table(), mode="append", schema_mode="merge")
                log.info("delta_schema_evolved: %s: %s", uri, ", ".join(_new_in(evolved, current)))
            except Exception:  # another task may have changed the schema first: read it again
                if attempt == _COMMIT_ATTEMPTS - 1:
                    raise
            table.update_incremental()

    def stop(self) -> None:
        self._tables.clear()
