"""The Delta sink task: executors write Parquet files, the worker commits them with the batch's offsets.

Per micro-batch (``write_batch``):

1. the worker reads, for each of the task's partitions, the offset its table
   already holds: the version of the Delta *application transaction*
   ``connectd-<connector>-<topic>-<partition>`` (the next offset to write);
2. each Spark task (one Kafka partition of the batch, on an executor) drops
   the records below that offset (written by an earlier run of this batch),
   turns the rest into rows (:mod:`connectd_delta.rows`), casts the columns
   the table has to its types, leaves out those with no value yet (null
   type), writes them as Parquet files into the table's directory (one per
   Hive-style partition of the table's partition columns: an existing
   table's own, ``partition.by`` for a table the sink creates), and returns
   only the files' names, sizes and types and the partition's last offset;
3. the worker checks that every file's column types are the table's (and
   each other's), adds the table's missing columns (a metadata commit), then
   commits every file of the batch **and** each partition's new application
   transaction version in one Delta transaction.

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


def app_id(connector: str, topic: str, partition: int) -> str:
    """The Delta application transaction that holds *topic*/*partition*'s next offset for *connector*."""
    return f"connectd-{connector}-{topic}-{partition}"


def _partition_path(names: tuple[str, ...], values: tuple[Any, ...]) -> tuple[str, dict[str, str | None]]:
    from urllib.parse import quote

    parts, partition_values = [], {}
    for name, value in zip(names, values, strict=True):
        text = None if value is None else str(value).lower() if isinstance(value, bool) else str(value)
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
        last = pc.max(pc.filter(records.column("offset"), mask)).as_py()
        out.append({"kind": "offset", "topic": topic, "partition": int(partition), "last": last})
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
    """Columns the table already has, cast to its types (an int32 field into a long column); a value the cast
    would change (1.5 into a long column) fails the batch."""
    import pyarrow as pa

    if schema_bytes is None:
        return rows
    table_schema = pa.ipc.read_schema(pa.py_buffer(schema_bytes))
    for index, field in enumerate(rows.schema):
        wanted = table_schema.field(field.name).type if field.name in table_schema.names else None
        if wanted is not None and wanted != field.type:
            dropped = _fields_not_in(field.type, wanted, field.name)
            if dropped:  # the cast drops them: say so, every batch, rather than lose them unseen
                log.warning("delta_nested_fields_dropped: %s: %s not in the table's column %s (only top-level "
                            "columns are added); records of %s", uri, ", ".join(dropped), field.name,
                            ", ".join(sources))
            try:
                rows = rows.set_column(index, pa.field(field.name, wanted), rows.column(index).cast(wanted))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                raise ConnectException(f"{uri}: column {field.name} is {wanted} in the table, {field.type} in "
                                       f"records of {', '.join(sources)}: {error}") from error
    return rows


def _fields_not_in(data_type: Any, wanted: Any, path: str) -> list[str]:
    """The struct fields (dotted paths under *path*) that *data_type* has and the table's *wanted* type lacks."""
    import pyarrow as pa

    if pa.types.is_struct(data_type) and pa.types.is_struct(wanted):
        names = {field.name: field.type for field in wanted.fields}
        return [found for field in data_type.fields for found in (
            [f"{path}.{field.name}"] if field.name not in names
            else _fields_not_in(field.type, names[field.name], f"{path}.{field.name}"))]
    if pa.types.is_list(data_type) and pa.types.is_list(wanted):
        return _fields_not_in(data_type.value_type, wanted.value_type, f"{path}[]")
    return []


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


def _check_types(uri: str, files: list[Any], written: list[Any], table_schema: Any) -> None:
    """Fail, before anything is committed, if a written file (*files*, their Arrow schemas *written*) has a
    column of another type than the table's (*table_schema*, ``None`` for a table to create) or than another
    file's.

    Executors infer schemaless types each on their own records (1 is a long, 1.5 a double), and another task may
    add a column first; but Delta readers read a file's column as the table's type, and a Parquet long is no
    double to them (Spark no more than delta-rs): committing such a file would leave the table unreadable.
    """
    import pyarrow as pa
    from deltalake import Schema

    found: dict[str, dict[Any, set[str]]] = {}
    for row, schema in zip(files, written, strict=True):
        for field in pa.schema(Schema.from_arrow(schema).to_arrow()):  # in Delta's terms: string, large_string alike
            found.setdefault(field.name, {}).setdefault(_nullable(field.type), set()).update(row["sources"])
    conflicts = []
    for name, types in found.items():
        table_type = _nullable(table_schema.field(name).type) \
            if table_schema is not None and name in table_schema.names else None
        if len(types) > 1 or (table_type is not None and table_type not in types):
            in_files = "; ".join(f"{data_type} in the files of {', '.join(sorted(sources))}"
                                 for data_type, sources in types.items())
            conflicts.append(f"{name}: {in_files}" + (f" (the table has {table_type})" if table_type else ""))
    if conflicts:
        raise ConnectException(f"{uri}: columns with conflicting types, nothing committed: {' | '.join(conflicts)}. "
                               "Give the records a schema (JsonConverter's envelope), or add the column to the "
                               "table with the wider type first")


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
        for row in results:
            if row["kind"] == "file":
                files.setdefault(row["table"], []).append(row)
            else:
                tp = TopicPartition(row["topic"], row["partition"])
                next_offset = max(row["last"] + 1, stored.get(tp, 0))
                versions.setdefault(self._settings.table_for(tp.topic), {})[tp] = next_offset
        for uri in sorted(set(files) | set(versions)):
            self._commit(uri, files.get(uri, []), versions.get(uri, {}), partitioning[uri])

    def _commit(self, uri: str, files: list[Any], versions: Mapping[TopicPartition, int],
                partition_by: list[str]) -> None:
        import pyarrow as pa
        from deltalake import Schema
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
        written = [pa.ipc.read_schema(pa.py_buffer(row["schema"])) for row in files]
        commit = CommitProperties(app_transactions=transactions)
        table = self._table(uri)
        if table is None:
            if not files:
                return  # nothing to create a table from (tombstones only): the batch is read again next time
            _check_types(uri, files, written, None)
            schema = pa.unify_schemas(written, promote_options="permissive")
            untyped = [name for name in partition_by if pa.types.is_null(schema.field(name).type)]
            if untyped:  # null in every record: Delta has no column type for that, and a stuck task helps nobody
                log.warning("delta_partition_column_as_string: %s: %s has no value in the records that create the "
                            "table; the column is made a string", uri, ", ".join(untyped))
            schema = pa.schema([field.with_nullable(True).with_type(pa.string()) if field.name in untyped
                                else field.with_nullable(True) for field in schema])
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
        if self._partitioning(uri, table) != partition_by:
            raise ConnectException(f"{uri} was created meanwhile, partitioned by "
                                   f"{', '.join(table.metadata().partition_columns) or 'no column'}; this batch's "
                                   f"files are partitioned by {', '.join(partition_by) or 'no column'}: "
                                   "nothing committed")
        for attempt in range(3):
            current = pa.schema(table.schema().to_arrow())
            _check_types(uri, files, written, current)
            new = list({field.name: field.with_nullable(True) for schema in written for field in schema
                        if field.name not in current.names}.values())
            if not new:
                break
            try:
                table.alter.add_columns(list(Schema.from_arrow(pa.schema(new)).fields))
                log.info("delta_columns_added: %s: %s", uri, ", ".join(field.name for field in new))
            except Exception:  # another task may have changed the schema first: read it again
                if attempt == 2:
                    raise
            table.update_incremental()
        table.create_write_transaction(adds, "append", table.schema(), partition_by=partition_by or None,
                                       commit_properties=commit)

    def stop(self) -> None:
        self._tables.clear()
