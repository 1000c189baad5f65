"""The CDC source task: a consistent snapshot of the tables, then the binlog from the snapshot's position.

States (one task per server; ``poll()`` moves between them):

- **snapshot** — chosen at start by ``snapshot.mode`` when there are no stored
  offsets (or, with ``when_needed``, when the stored binlog file is gone from
  the server; or when the stored offset is of a snapshot that never finished).
  One transaction ``WITH CONSISTENT SNAPSHOT`` reads every captured table; its
  binlog position comes from the same instant (MariaDB:
  ``binlog_snapshot_file/position``, no lock; MySQL: under ``FLUSH TABLES
  WITH READ LOCK``, released at once). Each row is an ``op: r`` event whose
  offset says ``snapshot: true`` (a snapshot interrupted is read again from
  the start); the last one's offset is the binlog position alone, and its
  ``source.snapshot`` is ``last``.
- **streaming** — row events of captured tables become ``c``, ``u``, ``d``
  events (a delete followed by a tombstone; an update that changes the
  primary key becomes a delete, its tombstone and a create).

Offsets, one source partition ``{"server": <topic.prefix>}``, Debezium's
fields with Debezium's meaning, so that either can resume from the other's:
``file`` and ``pos`` are where the change's transaction starts (its ``BEGIN``
on MySQL, its GTID event on MariaDB), ``event`` how many binlog events of it
come before the change's row event — every event counted, the one that
starts it and each table map included — and ``row`` how many of the row
event's rows are done (this one included). A task resuming from them reads
the binlog from ``file``/``pos`` and, in that transaction, skips exactly that
many events and rows, so every change after the last stored one is emitted,
once, in order (a change whose batch was not yet stored comes again: at least
once).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from connectd import ConnectException, SourceRecord, SourceTask

from connectd_mysql_cdc.config import Settings, settings
from connectd_mysql_cdc.schemas import ColumnSpec, TableSchema, TableSchemas, now_ms, source_struct

__all__ = ["MySqlSourceTask"]

log = logging.getLogger(__name__)


def _connect(config: Settings, **extra: Any) -> Any:
    """A connection whose session is in UTC: the snapshot reads TIMESTAMPs, and information_schema gives their
    defaults, in the session's time zone; the binlog has them as seconds since the epoch."""
    import pymysql

    return pymysql.connect(**config.connection(), charset="utf8mb4", init_command="SET time_zone = '+00:00'",
                           **{"autocommit": False, **extra})


def _binlog_status(cursor: Any) -> tuple[str, int]:
    """The server's current binlog file and position."""
    import pymysql

    try:
        cursor.execute("SHOW BINARY LOG STATUS")  # MySQL 8.4 and newer
    except pymysql.err.ProgrammingError:
        cursor.execute("SHOW MASTER STATUS")
    row = cursor.fetchone()
    if not row:
        raise ConnectException("the server writes no binlog: start it with log_bin, binlog_format=ROW, "
                               "binlog_row_image=FULL and binlog_row_metadata=FULL")
    return row[0], int(row[1])


def _binlog_files(config: Settings) -> list[str]:
    connection = _connect(config)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW BINARY LOGS")
            return [row[0] for row in cursor.fetchall()]
    finally:
        connection.close()


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# The server's UTF-16 and UTF-32 character sets → Python's codecs (mysql-replication's: little-endian, or none).
_CODECS = {"utf16": "utf-16-be", "ucs2": "utf-16-be", "utf32": "utf-32-be", "utf16le": "utf-16-le"}


def _is_mariadb(cursor: Any) -> bool:
    cursor.execute("SELECT VERSION()")
    return "mariadb" in cursor.fetchone()[0].lower()


def _table_columns(cursor: Any, mariadb: bool, where: str = "", args: tuple[str, ...] = ()
                   ) -> dict[tuple[str, str], list[ColumnSpec]]:
    """The columns of the base tables (in *where*'s, if given) as information_schema has them."""
    cursor.execute(
        "SELECT c.table_schema, c.table_name, c.column_name, c.data_type, c.column_type, c.numeric_precision, "
        "c.numeric_scale, c.column_key, c.character_octet_length, c.is_nullable, c.column_default, c.extra "
        "FROM information_schema.columns c JOIN information_schema.tables t ON t.table_schema = c.table_schema AND "
        f"t.table_name = c.table_name WHERE t.table_type = 'BASE TABLE'{where} "
        "ORDER BY c.table_schema, c.table_name, c.ordinal_position", args)
    tables: dict[tuple[str, str], list[ColumnSpec]] = {}
    for database, table, *column in cursor.fetchall():
        tables.setdefault((database, table), []).append(ColumnSpec.from_information_schema(*column, mariadb=mariadb))
    return tables


class _Definitions:
    """What only information_schema knows of a table's columns, for the binlog's changes: their defaults, and
    which BINARY(n) columns are UUIDs or INET addresses.

    Read when a table's change first comes, and again when a table map's columns differ from what was read
    (a column added, dropped, retyped or made NOT NULL) or a DDL statement passes in the binlog. A change
    written before a DDL statement and read after the server ran it (a reader behind, or started from older
    offsets) gets the definitions of after it, where the columns still match by name and type.
    """

    def __init__(self, config: Settings) -> None:
        self._config = config
        self._connection: Any = None
        self._mariadb = True
        self._tables: dict[tuple[str, str], list[ColumnSpec]] = {}
        # (database, table, a table map's columns) → them with the definitions: one lookup per row event
        self._merged: dict[tuple[str, str, tuple[ColumnSpec, ...]], list[ColumnSpec]] = {}

    def columns(self, database: str, table: str, columns: list[ColumnSpec]) -> list[ColumnSpec]:
        key = (database, table, tuple(columns))
        found = self._merged.get(key)
        if found is None:
            defined = self._tables.get((database, table))
            if defined is None or len(defined) != len(columns) or \
                    not all(column.matches(other) for column, other in zip(columns, defined, strict=True)):
                defined = self._tables[(database, table)] = self._read(database, table)
                self._merged = {k: v for k, v in self._merged.items() if k[:2] != (database, table)}
            by_name = {column.name: column for column in defined}
            found = self._merged[key] = [
                column.defined_as(other) if (other := by_name.get(column.name)) and column.matches(other) else column
                for column in columns]
        return found

    def labels(self, database: str, table: str) -> dict[str, tuple[str, ...]]:
        """The labels of the table's ENUM and SET columns, by column name."""
        defined = self._tables.get((database, table))
        if defined is None:
            defined = self._tables[(database, table)] = self._read(database, table)
        return {column.name: column.members for column in defined if column.kind in ("enum", "set")}

    def clear(self) -> None:
        """Forget every definition read: a DDL statement may have changed them."""
        self._tables.clear()
        self._merged.clear()

    def _read(self, database: str, table: str) -> list[ColumnSpec]:
        import pymysql

        try:
            return self._query(database, table)
        except pymysql.err.OperationalError:  # the server may have closed a connection idle since the last read
            self.close()
            return self._query(database, table)

    def _query(self, database: str, table: str) -> list[ColumnSpec]:
        if self._connection is None:
            self._connection = _connect(self._config, autocommit=True)
            with self._connection.cursor() as cursor:
                self._mariadb = _is_mariadb(cursor)
        with self._connection.cursor() as cursor:
            found = _table_columns(cursor, self._mariadb, " AND c.table_schema = %s AND c.table_name = %s",
                                   (database, table))
        return found.get((database, table), [])

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception:  # already gone: nothing to do but say so
                log.debug("mysql_connection_close_failed", exc_info=True)


class _Snapshot:
    """One consistent read of every captured table, as ``op: r`` records, then where the binlog goes on."""

    def __init__(self, config: Settings, schemas: TableSchemas) -> None:
        import pymysql.cursors

        self._config = config
        self._connection = _connect(config, cursorclass=pymysql.cursors.SSCursor)
        with self._connection.cursor() as cursor:
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            mariadb = _is_mariadb(cursor)
            if mariadb:
                cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                cursor.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
                status = dict(cursor.fetchall())
                self.position = (status["Binlog_snapshot_file"], int(status["Binlog_snapshot_position"]))
            else:
                cursor.execute("FLUSH TABLES WITH READ LOCK")
                try:
                    cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                    self.position = _binlog_status(cursor)
                finally:
                    cursor.execute("UNLOCK TABLES")
            tables = _table_columns(cursor, mariadb)
        self.tables = [schemas.get(database, table, columns) for (database, table), columns in tables.items()
                       if config.captures(database, table)]
        log.info("mysql_snapshot_started: %d tables at %s:%d", len(self.tables), *self.position)

    def rows(self) -> Iterator[tuple[TableSchema, dict[str, Any]]]:
        for table in self.tables:
            names = [field.name for field in table.value_schema.fields]  # excluded columns are not even read
            read, shown = 0, time.monotonic()
            with self._connection.cursor() as cursor:
                cursor.execute(f"SELECT {', '.join(_quoted(name) for name in names)} FROM "
                               f"{_quoted(table.database)}.{_quoted(table.table)}")
                while batch := cursor.fetchmany(self._config.fetch_size):
                    for row in batch:
                        yield table, dict(zip(names, row, strict=True))
                    read += len(batch)
                    if time.monotonic() - shown > 10:  # a big table: say how far it got
                        log.info("mysql_snapshot_progress: %s.%s: %d rows read", table.database, table.table, read)
                        shown = time.monotonic()
            log.info("mysql_snapshot_table_done: %s.%s: %d rows", table.database, table.table, read)

    def close(self) -> None:
        try:
            self._connection.rollback()
        finally:
            self._connection.close()


class _Stream:
    """The binlog from a position, as change records; tracks the offsets described in the module docstring."""

    def __init__(self, config: Settings, schemas: TableSchemas, file: str, pos: int, skip_events: int = 0,
                 skip_rows: int = 0, gtid: str | None = None) -> None:
        from pymysqlreplication import BinLogStreamReader
        from pymysqlreplication.event import (
            GtidEvent,
            HeartbeatLogEvent,
            MariadbAnnotateRowsEvent,
            MariadbGtidEvent,
            NotImplementedEvent,
            QueryEvent,
            RotateEvent,
            RowsQueryLogEvent,
            XidEvent,
        )
        from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent

        self._kinds = {"write": WriteRowsEvent, "update": UpdateRowsEvent, "delete": DeleteRowsEvent,
                       "rotate": RotateEvent, "query": QueryEvent, "xid": XidEvent,
                       "gtid": GtidEvent, "mariadb_gtid": MariadbGtidEvent, "heartbeat": HeartbeatLogEvent,
                       "table_map": TableMapEvent}
        self._config, self._schemas = config, schemas
        connection = config.connection()
        # Every event that can come inside a transaction must reach records(), as it counts in ``event``:
        # the row-query annotations (sent when the binlog has them: MySQL's binlog_rows_query_log_events;
        # MariaDB's only to a replica asking for them, which this one does not) and events mysql-replication
        # cannot read (NotImplementedEvent) too.
        self._reader = BinLogStreamReader(
            connection_settings=connection, server_id=config.server_id, resume_stream=True, blocking=True,
            log_file=file, log_pos=pos, slave_heartbeat=config.poll_interval_s, enable_logging=False,
            only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, RotateEvent, QueryEvent, XidEvent,
                         GtidEvent, MariadbGtidEvent, HeartbeatLogEvent, TableMapEvent, RowsQueryLogEvent,
                         MariadbAnnotateRowsEvent, NotImplementedEvent],
            filter_non_implemented_events=False)
        self.file, self.pos = file, pos  # where the transaction under way started
        self._events = 0  # events of it completed (Debezium's completeEvent())
        # The stored offset's transaction is the first to start after file/pos: its first skip_events events
        # were done, and skip_rows rows of the first row event after them.
        self._skip_events, self._skip_rows = skip_events, skip_rows
        self._skipping = False  # in the stored offset's transaction, among the events done before
        # on MySQL, pos is the BEGIN after the GTID event: a transaction resumed has its GTID from the offset
        self._gtid = gtid
        # table id → its table map's null bitmap: which columns are nullable (mysql-replication's Table forgets it)
        self._null_bitmaps: dict[int, bytes] = {}
        self._definitions = _Definitions(config)
        log.info("mysql_binlog_reading: %s:%d (skipping %d events, %d rows)", file, pos, skip_events, skip_rows)

    def records(self, limit: int, wait_s: float) -> list[SourceRecord]:
        """Up to *limit* records; returns sooner when the binlog is idle (a heartbeat) or after *wait_s*."""
        out: list[SourceRecord] = []
        deadline = time.monotonic() + wait_s
        while len(out) < limit and time.monotonic() < deadline:
            event = self._reader.fetchone()
            if event is None:
                break
            out += self._event(event)
            # Debezium's completeEvent() runs after each event, whatever its kind: so does this count
            self._events += 1
            if self._skipping:
                self._skip_events -= 1
                self._skipping = self._skip_events > 0
            if isinstance(event, self._kinds["heartbeat"]):  # the binlog is idle
                break
        return out

    def _event(self, event: Any) -> list[SourceRecord]:
        """One binlog event: its changes, if any, after keeping track of the transaction it is in."""
        kinds = self._kinds
        query = event.query.strip().upper() if isinstance(event, kinds["query"]) else None
        if isinstance(event, kinds["rotate"]):
            self.file, self.pos, self._events = event.next_binlog, event.position, 0
        elif isinstance(event, kinds["table_map"]):
            self._null_bitmaps[event.table_id] = bytes(event.null_bitmask)
            if self._config.captures(event.schema, event.table):
                self._decode_as_defined(event)
        elif isinstance(event, kinds["gtid"]):  # MySQL: the BEGIN that follows starts the transaction
            self._gtid = str(event.gtid)
        elif isinstance(event, kinds["mariadb_gtid"]) or query == "BEGIN":
            # A transaction starts (MariaDB's GTID event stands for its BEGIN): Debezium's startNextTransaction().
            if isinstance(event, kinds["mariadb_gtid"]):
                self._gtid = str(event.gtid)
            self.file, self.pos = self._reader.log_file, event.packet.log_pos - event.packet.event_size
            self._events = 0
            self._skipping = self._skip_events > 0
        elif isinstance(event, kinds["xid"]) or query == "COMMIT":
            # The transaction is done; what was left to skip was in it, and the next one starts after here.
            self.file, self.pos = self._reader.log_file, self._reader.log_pos
            self._events, self._skipping, self._skip_events, self._skip_rows = 0, False, 0, 0
        elif isinstance(event, (kinds["write"], kinds["update"], kinds["delete"])):
            if self._skipping:
                return []
            skip_rows, self._skip_rows = self._skip_rows, 0  # only the first row event after the skipped ones
            if self._config.captures(event.schema, event.table):
                return self._changes(event, self._events, skip_rows)
        elif query is not None:  # DDL (an ALTER TABLE, …): the columns' defaults may have changed
            self._definitions.clear()
        return []

    def _decode_as_defined(self, event: Any) -> None:
        """Have mysql-replication decode the table's strings right, before it reads its rows (it does so
        lazily, with the table map's columns): UTF-16 and UTF-32 big-endian, as the server writes them, and the
        ENUM and SET labels of a non-UTF-8 column as information_schema has them (the table map's are decoded
        as UTF-8: a latin1 'ä' is '')."""
        labels = None
        for column in event.columns:
            codec = _CODECS.get(column.character_set_name or "")
            if codec is not None:
                column.character_set_name = codec
            if (column.enum_values or column.set_values) and not (column.collation_name or "").startswith("utf8"):
                if labels is None:
                    labels = self._definitions.labels(event.schema, event.table)
                defined = labels.get(column.name)
                if defined is None:
                    continue
                if column.enum_values and len(defined) == len(column.enum_values) - 1:
                    column.enum_values = ["", *defined]  # index 0: an invalid value's ''
                elif column.set_values and len(defined) == len(column.set_values):
                    column.set_values = list(defined)

    def _changes(self, event: Any, index: int, skip_rows: int) -> list[SourceRecord]:
        nulls = self._null_bitmaps.get(event.table_id)
        columns = self._definitions.columns(event.schema, event.table, [
            ColumnSpec.from_binlog(c, nulls is None or bool(nulls[i // 8] & (1 << i % 8)))
            for i, c in enumerate(event.columns)])
        table = self._schemas.get(event.schema, event.table, columns)
        sets = {c.name for c in event.columns if c.set_values}
        packet = event.packet
        start = packet.log_pos - packet.event_size
        out = []
        for number, row in enumerate(event.rows):
            if number < skip_rows:
                continue
            offset = {"file": self.file, "pos": self.pos, "event": index, "row": number + 1,
                      "server_id": packet.server_id, "ts_sec": event.timestamp, "transaction_id": None,
                      "gtid": self._gtid}
            source = source_struct(self._config, database=table.database, table=table.table,
                                   ts_ms=event.timestamp * 1000, snapshot="false", server_id=packet.server_id,
                                   gtid=self._gtid, file=self._reader.log_file, pos=start, row=number)
            if isinstance(event, self._kinds["write"]):
                out += _change(self._config, table, "c", None, table.value(_values(row, "", sets)), source, offset)
            elif isinstance(event, self._kinds["delete"]):
                out += _change(self._config, table, "d", table.value(_values(row, "", sets)), None, source, offset)
            else:
                before = table.value(_values(row, "before_", sets))
                after = table.value(_values(row, "after_", sets))
                if table.key(before) == table.key(after):
                    out += _change(self._config, table, "u", before, after, source, offset)
                else:  # the primary key changed: the old row goes, a new one comes (as Debezium does)
                    out += _change(self._config, table, "d", before, None, source, offset)
                    out += _change(self._config, table, "c", None, after, source, offset)
        return out

    def close(self) -> None:
        try:
            self._reader.close()
        finally:
            self._definitions.close()


def _values(row: dict[str, Any], image: str, sets: set[str]) -> dict[str, Any]:
    """A binlog row's *image* (``""``, ``before_`` or ``after_``), with its empty SETs ``""`` and not null.

    mysql-replication reads an empty SET as None; it tells them apart from NULLs in ``none_sources``.
    """
    values = row[f"{image}values"]
    if not sets:  # most tables: nothing to look at, row after row
        return values
    from pymysqlreplication.constants import NONE_SOURCE

    empty = [name for name, source in row[f"{image}none_sources"].items()
             if source == NONE_SOURCE.EMPTY_SET and name in sets]
    return {**values, **dict.fromkeys(empty, "")} if empty else values


def _change(config: Settings, table: TableSchema, op: str, before: Any, after: Any, source: Any,
            offset: Mapping[str, Any]) -> list[SourceRecord]:
    from connectd import Struct

    key = table.key(after if after is not None else before)
    value = Struct(table.envelope, {"before": before, "after": after, "source": source, "op": op,
                                    "ts_ms": now_ms()})
    partition = {"server": config.prefix}
    records = [SourceRecord(topic=table.topic, kafka_partition=None, key_schema=table.key_schema, key=key,
                            value_schema=table.envelope, value=value, timestamp=None,
                            source_partition=partition, source_offset=dict(offset))]
    if op == "d" and config.tombstones:
        records.append(SourceRecord(topic=table.topic, kafka_partition=None, key_schema=table.key_schema, key=key,
                                    value_schema=None, value=None, timestamp=None, source_partition=partition,
                                    source_offset=dict(offset)))
    return records


class MySqlSourceTask(SourceTask):
    """Snapshot, then binlog; see the module's docstring."""

    def start(self, config: Mapping[str, str]) -> None:
        self._config = settings(config)
        self._schemas = TableSchemas(self._config)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._snapshot: _Snapshot | None = None
        self._rows: Iterator[tuple[TableSchema, dict[str, Any]]] | None = None
        self._pending: tuple[TableSchema, dict[str, Any]] | None = None
        self._stream: _Stream | None = None
        partition = {"server": self._config.prefix}
        stored = self.context.offset_storage_reader.offset(partition)
        mode = self._config.snapshot_mode
        resumable = bool(stored) and not stored.get("snapshot")
        if resumable and mode == "when_needed" and stored["file"] not in _binlog_files(self._config):
            log.warning("mysql_binlog_gone: %s is no longer on the server: a new snapshot", stored["file"])
            resumable = False
        if resumable:
            self._stream = _Stream(self._config, self._schemas, stored["file"], int(stored["pos"]),
                                   int(stored.get("event", 0)), int(stored.get("row", 0)), stored.get("gtid"))
        elif mode in ("initial", "when_needed"):
            self._snapshot = _Snapshot(self._config, self._schemas)
            self._rows = self._snapshot.rows()
        elif mode == "never":
            self._stream = _Stream(self._config, self._schemas, _binlog_files(self._config)[0], 4)
        else:  # no_data: from now on
            connection = _connect(self._config)
            try:
                with connection.cursor() as cursor:
                    file, pos = _binlog_status(cursor)
            finally:
                connection.close()
            self._stream = _Stream(self._config, self._schemas, file, pos)

    def poll(self) -> list[SourceRecord] | None:
        with self._lock:
            if self._stopping.is_set():
                return None
            if self._rows is not None:
                return self._snapshot_records()
            assert self._stream is not None
            try:
                return self._stream.records(self._config.max_batch, self._config.poll_interval_s * 2) or None
            except Exception:
                if self._stopping.is_set():
                    return None
                raise

    def _snapshot_records(self) -> list[SourceRecord]:
        assert self._snapshot is not None and self._rows is not None
        file, pos = self._snapshot.position
        out: list[SourceRecord] = []
        for row in self._rows:
            if self._pending is not None:
                out += self._read_event(*self._pending, last=False)
            self._pending = row
            if len(out) >= self._config.max_batch:
                return out
        if self._pending is not None:  # the snapshot's last row: its offset says the snapshot is done
            out += self._read_event(*self._pending, last=True)
        self._snapshot.close()
        self._snapshot = self._rows = self._pending = None
        log.info("mysql_snapshot_done: binlog from %s:%d", file, pos)
        self._stream = _Stream(self._config, self._schemas, file, pos)
        return out

    def _read_event(self, table: TableSchema, row: dict[str, Any], *, last: bool) -> list[SourceRecord]:
        assert self._snapshot is not None
        file, pos = self._snapshot.position
        offset: dict[str, Any] = {"file": file, "pos": pos, "event": 0, "row": 0}
        if not last:
            offset["snapshot"] = True
        source = source_struct(self._config, database=table.database, table=table.table, ts_ms=now_ms(),
                               snapshot="last" if last else "true", server_id=0, gtid=None, file=file, pos=pos,
                               row=0)
        return _change(self._config, table, "r", None, table.value(row), source, offset)

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:  # poll() returns within poll.interval.ms
            if self._stream is not None:
                self._stream.close()
            if self._snapshot is not None:
                self._snapshot.close()
