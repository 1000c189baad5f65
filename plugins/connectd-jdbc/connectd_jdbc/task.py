"""The JDBC sink task: each put() is one transaction, committed before the task's flush ends.

connectd commits a batch's Kafka offsets only after ``pre_commit()`` (which
flushes), and that follows ``put()``: so the offsets never pass rows not
committed to the database, and a crash replays from the last committed batch
(at least once; ``insert.mode=upsert`` makes a replay idempotent).

put(records):

1. each record becomes a row of its table (:mod:`connectd_jdbc.rows`); a record
   that cannot (no struct value, a tombstone without ``delete.enabled``, a key
   that does not fit ``pk.mode``) goes to the errant record reporter, or fails
   the task when there is none;
2. consecutive records of one table, operation and shape make a run; within a
   keyed run (upsert, update, delete) the last record of a key wins, which is
   what writing them one after another would leave;
3. the previous put()'s write is finished if it was sent (below); a put() that
   will be sent has its rows formatted as COPY data first, while the database
   still writes the previous one;
4. tables are created (``auto.create``) or given missing columns
   (``auto.evolve``), each DDL statement committed on its own;
5. every run is written (:mod:`connectd_jdbc.dialects`) and the transaction
   committed. A put() that is one statement (PostgreSQL: inserts of one
   table that fit one COPY) runs it alone, in autocommit: a statement is
   atomic by itself, and the BEGIN and COMMIT round trips are saved. Such a
   put() is *sent*: it returns once the COPY is on its way, and the database
   inserts its rows while the task makes the next put()'s rows. Waiting for
   each COPY instead took more than half of a 500-record put().

A sent put() is finished by the next put(), ``flush()``/``pre_commit()`` or
``stop()``; its records are kept until then:

=========== ============================================ ===============================================
state       event                                        next
=========== ============================================ ===============================================
idle        put() sent                                   sent
sent        the COPY committed                           idle (its refused records reported)
sent        the COPY failed                              redo: its records written again as a put() of
                                                         them is, not sent, which raises (or reports)
                                                         as below
redo        written                                      idle
redo        transient failure, in put()                  redo; put() raises RetriableException, and the
                                                         retried put() writes them first
redo        transient failure, in flush()                idle; flush() raises: nothing is committed and
                                                         connectd reads the records again
redo        any other failure, no errant record reporter idle; the task fails (from flush(): connectd
                                                         goes on after a flush error, so the next put()
                                                         raises it)
=========== ============================================ ===============================================

``stop()`` waits for a sent COPY and logs its failure: its offsets were not
committed, so its records come again.

Failures (of a put() written at once, or written again):

- a lost connection, a deadlock or a lock timeout: the transaction is rolled
  back, the connection dropped, and put() raises ``RetriableException`` after
  ``context.timeout(retry.backoff.ms)``: connectd calls put() again with the
  same records, up to ``max.retries`` times in a row, then the task fails;
- any other database error (a constraint, a value the column refuses): with an
  errant record reporter (``errors.tolerance=all`` with a dead-letter topic or
  ``errors.log.enable``), the records are written again one per transaction
  and each one the database refuses is reported, the others kept; without one,
  the task fails naming the records and the database's message;
- a missing table without ``auto.create``, a missing column without
  ``auto.evolve``, DDL the database refuses: the records of that run are
  reported when there is an errant record reporter, else the task fails.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connectd import ConnectException, RetriableException, SinkRecord, SinkTask, TopicPartition

from connectd_jdbc.config import settings
from connectd_jdbc.dialects import dialect_for
from connectd_jdbc.rows import RecordError, Shape, Shapes, where

__all__ = ["JdbcSinkTask"]

log = logging.getLogger(__name__)


class _Run:
    """Consecutive records of one table, operation and shape, with their rows."""

    def __init__(self, table: str, operation: str, shape: Shape) -> None:
        self.table, self.operation, self.shape = table, operation, shape
        self._keyed = operation != "insert"
        self._width = len(shape.key_columns)
        self._records: list[SinkRecord] = []
        self._rows: list[tuple[Any, ...]] = []
        self._by_key: dict[tuple[Any, ...], tuple[SinkRecord, tuple[Any, ...]]] = {}
        #: nothing to write: deletes from a table that does not exist, or a table that cannot take the records
        self.void = False
        #: why the table cannot take the records (they are reported)
        self.refusal: ConnectException | None = None

    def add(self, record: SinkRecord, row: tuple[Any, ...]) -> None:
        self._records.append(record)
        self._rows.append(row)
        if self._keyed:
            key = row[:self._width]
            self._by_key.pop(key, None)  # the last record of a key wins, in its own place
            self._by_key[key] = (record, row)

    def items(self) -> list[tuple[SinkRecord, tuple[Any, ...]]]:
        """Every record and its row, in order: those a later record of their key supersedes too, so that
        written one by one, a refused record leaves the row as the records before it made it."""
        return list(zip(self._records, self._rows, strict=True))

    def rows(self) -> list[tuple[Any, ...]]:
        return [row for _record, row in self._by_key.values()] if self._keyed else self._rows


@dataclass
class _Put:
    """A put()'s records, their runs, and those that are no row (with why)."""

    records: list[SinkRecord]
    runs: list[_Run]
    refused: list[tuple[SinkRecord, Exception]] = field(default_factory=list)
    #: the rows as the database's send_insert() takes them, made before the last put() was finished
    data: Any = None


class JdbcSinkTask(SinkTask):
    """Writes records to PostgreSQL or MariaDB/MySQL tables; see the module's docstring."""

    def start(self, config: Mapping[str, str]) -> None:
        self._settings = settings(config)
        self._dialect = dialect_for(self._settings)
        self._shapes = Shapes(self._settings)
        self._connection: Any = None
        self._columns: dict[str, set[str]] = {}  # table → its (folded) column names, as last read
        self._tables: dict[str, str] = {}  # topic → its table
        self._retries_left = self._settings.max_retries
        self._reporter = self.context.errant_record_reporter()
        self._sent: _Put | None = None  # a put() whose COPY was sent, not yet finished
        self._redo: _Put | None = None  # a sent put() whose COPY failed, to be written again
        self._failure: ConnectException | None = None  # raised by flush(), for the next put() to raise

    def put(self, records: list[SinkRecord]) -> None:
        if self._failure is not None:  # a flush() found it; connectd went on after it
            failure, self._failure = self._failure, None
            raise failure
        if not records:
            return
        refused: list[tuple[SinkRecord, Exception]] = []  # reported once the others are written
        put = _Put(records, self._runs(records, refused), refused)
        if self._sent is not None and self._sendable(put.runs):
            try:  # while the database still writes the last put()
                put.data = self._dialect.copy_data(self._connection, put.runs[0].rows())
            except self._dialect.errors:
                pass  # a value psycopg refuses: raised where it is handled, as the put() is written
        self._finish_sent(in_put=True)
        self._complete(put, send=True)

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Wait for a sent put(): everything put() took is committed when this returns."""
        self._finish_sent(in_put=False)

    def stop(self) -> None:
        sent, self._sent = self._sent, None
        if sent is not None and self._connection is not None:
            try:
                failure = self._dialect.sent_outcome(self._connection)
            except self._dialect.errors as error:
                failure = str(error).strip()
            if failure is not None:
                log.warning("jdbc_write_failed_at_stop: records %s to %s: %s; their offsets were not committed, so "
                            "they are read again", where(sent.records[0]), where(sent.records[-1]), failure)
        self._close()

    def _one_statement(self, runs: list[_Run]) -> bool:
        """Whether *runs* are written by one statement, atomic by itself."""
        return len(runs) == 1 and self._dialect.atomic_insert(runs[0].operation, len(runs[0].rows()))

    def _sendable(self, runs: list[_Run]) -> bool:
        """Whether *runs* are one statement of a database that can send it (:meth:`Dialect.send_insert`)."""
        return self._dialect.sends and self._one_statement(runs)

    def _complete(self, put: _Put, send: bool = False) -> None:
        """Write *put*'s runs (or send them, if *send* and they are one statement), report its refused records."""
        errors = self._dialect.errors
        try:
            try:
                if self._write(put.runs, send, put.data):
                    self._sent = put
                    return
            except errors as error:
                if self._dialect.is_transient(error):
                    raise
                self._rollback()
                if self._reporter is None:
                    raise ConnectException(f"writing records {where(put.records[0])} to {where(put.records[-1])} "
                                           f"failed: {error}".strip()) from error
                self._one_by_one(put.runs)
            self._report_refused(put)
        except errors as error:  # transient: try the same records again
            self._close()
            if self._retries_left == 0:
                raise ConnectException(f"writing records failed {self._settings.max_retries + 1} times in a row, "
                                       f"the last time: {error}".strip()) from error
            self._retries_left -= 1
            log.warning("jdbc_write_retried: %s (retries left: %d)", str(error).strip(), self._retries_left)
            self.context.timeout(self._settings.retry_backoff_ms)
            raise RetriableException(f"database unavailable: {error}".strip()) from error
        self._retries_left = self._settings.max_retries

    def _finish_sent(self, in_put: bool) -> None:
        """Finish the put() that was sent, writing its records again if its COPY failed (see the table)."""
        sent, self._sent = self._sent, None
        if sent is not None:
            try:
                failure = self._dialect.sent_outcome(self._connection)
            except self._dialect.errors as error:  # the connection was lost: whether it committed is unknown
                self._close()
                failure = str(error).strip()
            if failure is None:
                self._report_refused(sent)
                self._retries_left = self._settings.max_retries
                return
            log.info("jdbc_sent_write_failed: records %s to %s: %s; writing them again", where(sent.records[0]),
                     where(sent.records[-1]), failure)
            self._redo = sent
        redo = self._redo
        if redo is None:
            return
        try:
            self._complete(redo)
        except RetriableException:
            if not in_put:
                self._redo = None  # nothing is committed: connectd reads these records again
            raise
        except ConnectException as error:
            self._redo = None
            if not in_put:
                self._failure = error
            raise
        self._redo = None

    def _report_refused(self, put: _Put) -> None:
        refused = put.refused + [(record, run.refusal) for run in put.runs if run.refusal is not None
                                 for record, _row in run.items()]
        for record, error in refused:
            self._report(record, error)

    # -- records into runs ------------------------------------------------------------------------

    def _runs(self, records: list[SinkRecord], refused: list[tuple[SinkRecord, Exception]]) -> list[_Run]:
        """*records* in runs; those that are no row added to *refused* (or the task fails, without a reporter)."""
        runs: list[_Run] = []
        current: _Run | None = None
        table_format, tables, mode, shape_of = self._settings.table_name_format, self._tables, \
            self._settings.insert_mode, self._shapes.of
        for record in records:
            try:
                shape = shape_of(record)
                row = shape.row(record)
            except RecordError as error:
                if self._reporter is None:
                    raise ConnectException(str(error)) from error
                refused.append((record, error))
                continue
            table = tables.get(record.topic)
            if table is None:
                table = tables[record.topic] = table_format.replace("${topic}", record.topic)
            operation = mode if record.value is not None else "delete"
            if current is None or current.shape is not shape or current.table != table \
                    or current.operation != operation:
                current = _Run(table, operation, shape)
                runs.append(current)
            current.add(record, row)
        return runs

    def _report(self, record: SinkRecord, error: Exception) -> None:
        if self._reporter is None:
            raise ConnectException(str(error)) from error
        self._reporter.report(record, error)

    # -- writing ----------------------------------------------------------------------------------

    def _connect(self) -> Any:
        if self._connection is None:
            self._connection = self._dialect.connect()
        return self._connection

    def _write(self, runs: list[_Run], send: bool = False, data: Any = None) -> bool:
        """Write *runs* and commit; ``True`` if they were sent instead (*send*, and they are one statement
        the database can send), not yet done. *data*: their ``Dialect.copy_data``, if made already."""
        connection = self._connect()
        for run in runs:
            try:
                self._prepare(connection, run)
            except ConnectException as error:
                if self._reporter is None:
                    raise
                # As Confluent's sink: with error reporting, the records of a table that cannot take them
                # are reported (once the others are written: not again when the put() is retried).
                run.refusal, run.void = error, True
        if self._one_statement(runs):
            run = runs[0]
            if send and not run.void and self._dialect.send_insert(connection, run.table, run.shape.columns,
                                                                    run.rows(), data):
                return True
            # One statement is a transaction by itself: no BEGIN and COMMIT round trips.
            connection.autocommit = True
            try:
                with connection.cursor() as cursor:
                    self._write_run(cursor, run, run.rows())
            finally:
                connection.autocommit = False
            return False
        with connection.cursor() as cursor:
            for run in runs:
                self._write_run(cursor, run, run.rows())
        connection.commit()
        return False

    def _write_run(self, cursor: Any, run: _Run, rows: list[tuple[Any, ...]]) -> None:
        dialect, shape = self._dialect, run.shape
        if run.void:
            return
        if run.operation == "insert":
            dialect.insert(cursor, run.table, shape.columns, rows)
        elif run.operation == "upsert":
            dialect.upsert(cursor, run.table, shape.key_columns, shape.value_columns, rows)
        elif run.operation == "update":
            dialect.update(cursor, run.table, shape.key_columns, shape.value_columns, rows)
        else:
            dialect.delete(cursor, run.table, shape.key_columns, rows)

    def _one_by_one(self, runs: list[_Run]) -> None:
        """Each record in a transaction of its own; those the database refuses are reported."""
        connection = self._connect()
        for run in runs:
            for record, row in run.items():
                try:
                    with connection.cursor() as cursor:
                        self._write_run(cursor, run, [row])
                    connection.commit()
                except self._dialect.errors as error:
                    if self._dialect.is_transient(error):
                        raise
                    self._rollback()
                    self._report(record, error)

    def _prepare(self, connection: Any, run: _Run) -> None:
        """Make *run*'s table and columns exist (auto.create, auto.evolve), or fail saying why."""
        table, settings, dialect = run.table, self._settings, self._dialect
        known = self._columns.get(table)
        if run.operation == "delete":
            # Deletes need only the key columns, which the table has if it has rows to delete; a table not
            # there has none (Confluent's sink would create it with the key columns alone).
            if known is None:
                known = self._read_columns(connection, table)
                if known is not None:
                    self._columns[table] = known
            run.void = known is None
            if run.void:
                log.info("jdbc_deletes_skipped: table %s does not exist, so it has no rows to delete", table)
            return
        if known is None or self._missing(known, run.shape):
            known = self._read_columns(connection, table)
        if known is None:
            if not settings.auto_create:
                raise ConnectException(f"table {table} does not exist and auto.create=false: create it, or set "
                                       "auto.create=true to create it from the records' schema")
            refused = self._ddl(connection, dialect.create_table(table, run.shape.key_columns, run.shape.value_columns))
            known = self._read_columns(connection, table)
            if known is None:
                raise ConnectException(f"table {table} could not be created: {refused}")
            log.info("jdbc_table_created: %s", table)
        missing = self._missing(known, run.shape)
        if missing and not settings.auto_evolve:
            raise ConnectException(f"table {table} has no column {', '.join(c.name for c in missing)}, which records "
                                   "have: add it, or set auto.evolve=true to add such columns")
        refusals = []
        for column in missing:
            if not column.optional and not column.has_default:
                raise ConnectException(f"cannot add column {column.name} to table {table}: the field is required "
                                       "and has no default, and existing rows would have no value for it")
            refused = self._ddl(connection, dialect.add_column(table, column))
            if refused is None:
                log.info("jdbc_column_added: %s.%s", table, column.name)
            else:
                refusals.append(refused)
        if missing:
            known = self._read_columns(connection, table) or set()
            still = self._missing(known, run.shape)
            if still:
                raise ConnectException(f"column {', '.join(c.name for c in still)} could not be added to table "
                                       f"{table}: {'; '.join(refusals)}")
        self._columns[table] = known

    def _missing(self, known: set[str], shape: Shape) -> list[Any]:
        fold = self._dialect.fold
        return [column for column in shape.columns if fold(column.name) not in known]

    def _read_columns(self, connection: Any, table: str) -> set[str] | None:
        with connection.cursor() as cursor:
            found = self._dialect.columns(cursor, table)
        connection.commit()  # end the read's transaction
        return found

    def _ddl(self, connection: Any, statement: str) -> str | None:
        """Run *statement* in a transaction of its own; what the database said if it refused.

        A refusal is not yet a failure: another task may have made the same change at the
        same moment, and the caller reads the table again to decide.
        """
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement)
            connection.commit()
        except self._dialect.errors as error:
            if self._dialect.is_transient(error):
                raise
            self._rollback()
            return f"{statement}: {str(error).strip()}"
        return None

    def _rollback(self) -> None:
        if self._connection is None:
            return
        try:
            self._connection.rollback()
        except self._dialect.errors:
            self._close()

    def _close(self) -> None:
        connection, self._connection = self._connection, None
        self._columns.clear()  # a new connection reads the tables again
        if connection is not None:
            try:
                connection.close()
            except self._dialect.errors:
                log.debug("jdbc_close_failed", exc_info=True)
