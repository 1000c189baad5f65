"""What differs between PostgreSQL and MariaDB/MySQL: connecting, quoting, column types, DDL and writes.

Writes, per run of records of one table and shape (:mod:`connectd_jdbc.task`):

============ ============================================ ==================================================
insert.mode  PostgreSQL (psycopg 3)                        MariaDB/MySQL (PyMySQL)
============ ============================================ ==================================================
insert       ``COPY t (…) FROM STDIN``                     multi-row ``INSERT INTO t (…) VALUES (…), (…)``
upsert       ``INSERT … ON CONFLICT (pk) DO UPDATE``       ``INSERT … ON DUPLICATE KEY UPDATE``
update       ``UPDATE t SET … WHERE pk = …``               the same
delete       ``DELETE FROM t WHERE pk = …``                the same
============ ============================================ ==================================================

Each in statements of at most ``batch.size`` rows (executemany is pipelined by
psycopg and folded into multi-row statements by PyMySQL), inside the put()'s
one transaction.

A put() that is one PostgreSQL COPY may be *sent* (:meth:`Dialect.send_insert`):
its rows, the statement and its end go to the server, which runs it in
autocommit while the task goes on; :meth:`Dialect.sent_outcome` later waits for
how it ended. This is libpq's own asynchronous API (``PQsendQuery``,
``PQputCopyData``, ``PQputCopyEnd``, ``PQgetResult``, through psycopg's
``Connection.pgconn``), the rows formatted by psycopg's ``Copy`` as its COPY
would send them.

Time zones: a session starts in ``db.timezone`` and Timestamp values are sent
as the record's instant in that zone. Columns without a zone (PostgreSQL
``TIMESTAMP``, MariaDB ``DATETIME``) keep its wall-clock time (PostgreSQL
ignores the offset of a value written to such a column; PyMySQL writes the
wall-clock time alone); zoned columns (PostgreSQL ``TIMESTAMPTZ``, MariaDB
``TIMESTAMP``) get the record's instant whatever zone the server is set to.
Key columns get the wall-clock time without an offset, so that a
``WHERE key = …`` compares like with like and uses the key's index.
"""

from __future__ import annotations

import datetime
import decimal
import logging
import math
import select
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from connectd import Date, Decimal, SchemaType, Time, Timestamp

from connectd_jdbc.config import MYSQL, POSTGRESQL, UTC_NAMES, Connection, Settings
from connectd_jdbc.rows import Column

__all__ = ["Dialect", "dialect_for"]

log = logging.getLogger(__name__)


def _chunks(rows: Sequence[Any], size: int):
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


class Dialect:
    """A database's SQL and driver; subclasses fill in the differences."""

    #: Exceptions of the driver: every database error, and those worth trying again.
    errors: tuple[type[BaseException], ...] = ()
    _types: ClassVar[dict[Any, str]] = {}
    _quote_char = '"'

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.quoting = settings.quote_identifiers

    # -- connecting -------------------------------------------------------------------------------

    def connect(self) -> Any:
        """A new connection, not in autocommit; ``connection.attempts`` tries, the last error raised."""
        attempts = self.settings.connection_attempts
        for attempt in range(1, attempts + 1):
            try:
                connection = self._connect(self.settings.connection)
            except self.errors:
                if attempt == attempts:
                    raise
                time.sleep(self.settings.connection_backoff_s)
                continue
            try:
                self._set_time_zone(connection)
                connection.commit()
            except BaseException:
                connection.close()
                raise
            return connection
        raise AssertionError("unreachable")

    def _connect(self, connection: Connection) -> Any:
        raise NotImplementedError

    def _set_time_zone(self, connection: Any) -> None:
        """Make *connection*'s session read and write zoned values in ``db.timezone``."""
        raise NotImplementedError

    def atomic_insert(self, operation: str, rows: int) -> bool:
        """Whether writing *rows* rows by *operation* is one statement, atomic without a transaction."""
        return False

    def is_transient(self, error: BaseException) -> bool:
        """Whether *error* may go away by itself: a lost connection, a deadlock, a lock wait."""
        raise NotImplementedError

    #: Whether :meth:`send_insert` can send.
    sends = False

    def copy_data(self, connection: Any, rows: list[tuple[Any, ...]]) -> Any:
        """*rows* as :meth:`send_insert` sends them, made without using *connection*'s socket."""
        raise NotImplementedError

    def send_insert(self, connection: Any, table: str, columns: Sequence[Column], rows: list[tuple[Any, ...]],
                    data: Any = None) -> bool:
        """Send *rows* (or their :meth:`copy_data`) to *table* as one statement in autocommit, without
        waiting for the database.

        ``True``: sent; *connection* must not be used before :meth:`sent_outcome`. ``False``: not sent
        (this database cannot, the connection is in a transaction, or the statement could not start);
        the caller writes the rows as usual, which says why they cannot be written.
        """
        return False

    def sent_outcome(self, connection: Any) -> str | None:
        """Wait for the statement :meth:`send_insert` sent: ``None`` once it committed, else the
        database's reason why it did not (nothing of it was written)."""
        raise NotImplementedError

    # -- names ------------------------------------------------------------------------------------

    def quote(self, name: str) -> str:
        if not self.quoting:
            return name
        q = self._quote_char
        return q + name.replace(q, q + q) + q

    def table(self, name: str) -> str:
        """*name* (``table`` or ``schema.table``) as SQL."""
        return ".".join(self.quote(part) for part in name.split("."))

    # Statements with parameters: both drivers' placeholders are ``%s``, so a ``%`` of a name is ``%%``.

    def _p(self, name: str) -> str:
        """*name* quoted, for a statement with parameters."""
        return self.quote(name).replace("%", "%%")

    def _ptable(self, name: str) -> str:
        """:meth:`table` for a statement with parameters."""
        return self.table(name).replace("%", "%%")

    def fold(self, name: str) -> str:
        """*name* as the database compares it to the names it holds."""
        return name

    # -- tables -----------------------------------------------------------------------------------

    def columns(self, cursor: Any, table: str) -> set[str] | None:
        """The (folded) column names of *table*, or ``None`` when it does not exist."""
        schema, _, bare = table.rpartition(".")
        cursor.execute(self._columns_sql, (schema or None, self.fold(bare)))
        found = {self.fold(row[0]) for row in cursor.fetchall()}
        return found or None

    _columns_sql = ""

    def column_type(self, column: Column, key: bool) -> str:
        schema = column.schema
        if schema.name == Decimal.LOGICAL_NAME:
            return self._decimal_type(int(schema.parameters.get("scale", "0")))
        found = self._types.get(schema.name) or self._types.get(schema.type)
        if found is None:
            raise ValueError(f"column {column.name!r}: no SQL type for a {schema.type.value}")
        if key and (schema.type, key) in self._types:
            return self._types[(schema.type, key)]
        return found

    def _decimal_type(self, scale: int) -> str:
        return "DECIMAL"

    def column_definition(self, column: Column, key: bool) -> str:
        definition = f"{self.quote(column.name)} {self.column_type(column, key)}"
        literal = self._literal(column)
        # As Confluent's: a field with a default makes a nullable column, so that a later version of
        # the schema may make the field optional and write NULLs to it.
        if key or (not column.optional and literal is None):
            definition += " NOT NULL"
        if literal is not None:
            definition += f" DEFAULT {literal}"
        return definition

    def create_table(self, table: str, key_columns: Sequence[Column], value_columns: Sequence[Column]) -> str:
        parts = [self.column_definition(c, True) for c in key_columns]
        parts += [self.column_definition(c, False) for c in value_columns]
        if key_columns:
            parts.append(f"PRIMARY KEY({', '.join(self.quote(c.name) for c in key_columns)})")
        return f"CREATE TABLE IF NOT EXISTS {self.table(table)} ({', '.join(parts)})"

    def add_column(self, table: str, column: Column) -> str:
        return f"ALTER TABLE {self.table(table)} ADD COLUMN {self.column_definition(column, False)}"

    def _literal(self, column: Column) -> str | None:
        """*column*'s default as SQL, written as the column's values are; ``None`` without one."""
        value = column.schema.default_value
        if value is None:
            return None
        if isinstance(value, bool):
            return self._boolean(value)
        if isinstance(value, (bytes, bytearray)):
            return self._bytes(bytes(value))
        if isinstance(value, float) and not math.isfinite(value):
            return self._string("NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity")
        if isinstance(value, (int, float, decimal.Decimal)):
            return str(value)
        if isinstance(value, datetime.datetime):
            if column.schema.name == Timestamp.LOGICAL_NAME:  # an instant: db.timezone's wall-clock time
                aware = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
                value = aware.astimezone(self.settings.db_timezone).replace(tzinfo=None)
            return self._string(value.isoformat(sep=" "))
        if isinstance(value, (datetime.date, datetime.time)):
            return self._string(value.isoformat())
        return self._string(str(value))

    def _string(self, value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    def _bytes(self, value: bytes) -> str:
        return f"X'{value.hex()}'"

    def _boolean(self, value: bool) -> str:
        return "TRUE" if value else "FALSE"

    # -- writes -----------------------------------------------------------------------------------

    def insert(self, cursor: Any, table: str, columns: Sequence[Column], rows: list[tuple[Any, ...]]) -> None:
        names = ", ".join(self._p(c.name) for c in columns)
        marks = ", ".join(["%s"] * len(columns))
        self._executemany(cursor, f"INSERT INTO {self._ptable(table)} ({names}) VALUES ({marks})", rows)

    def upsert(self, cursor: Any, table: str, key_columns: Sequence[Column], value_columns: Sequence[Column],
               rows: list[tuple[Any, ...]]) -> None:
        raise NotImplementedError

    def update(self, cursor: Any, table: str, key_columns: Sequence[Column], value_columns: Sequence[Column],
               rows: list[tuple[Any, ...]]) -> None:
        """*rows* are key values then other values; sent as other values then key values."""
        if not value_columns:
            return  # nothing to set: an update of the key alone changes nothing
        sets = ", ".join(f"{self._p(c.name)} = %s" for c in value_columns)
        keys = " AND ".join(f"{self._p(c.name)} = %s" for c in key_columns)
        width = len(key_columns)
        self._executemany(cursor, f"UPDATE {self._ptable(table)} SET {sets} WHERE {keys}",
                          [row[width:] + row[:width] for row in rows])

    def delete(self, cursor: Any, table: str, key_columns: Sequence[Column], rows: list[tuple[Any, ...]]) -> None:
        keys = " AND ".join(f"{self._p(c.name)} = %s" for c in key_columns)
        self._executemany(cursor, f"DELETE FROM {self._ptable(table)} WHERE {keys}", rows)

    def _executemany(self, cursor: Any, statement: str, rows: list[tuple[Any, ...]]) -> None:
        for chunk in _chunks(rows, self.settings.batch_size):
            cursor.executemany(statement, chunk)


class PostgreSql(Dialect):
    _types: ClassVar[dict[Any, str]] = {
        SchemaType.INT8: "SMALLINT", SchemaType.INT16: "SMALLINT", SchemaType.INT32: "INT",
        SchemaType.INT64: "BIGINT", SchemaType.FLOAT32: "REAL", SchemaType.FLOAT64: "DOUBLE PRECISION",
        SchemaType.BOOLEAN: "BOOLEAN", SchemaType.STRING: "TEXT", SchemaType.BYTES: "BYTEA",
        Date.LOGICAL_NAME: "DATE", Time.LOGICAL_NAME: "TIME", Timestamp.LOGICAL_NAME: "TIMESTAMP",
    }
    _columns_sql = ("SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = COALESCE(%s, current_schema()) AND table_name = %s")
    sends = True

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        import psycopg

        self._psycopg = psycopg
        self.errors = (psycopg.Error,)

    def _connect(self, connection: Connection) -> Any:
        arguments = {"host": connection.host, "port": connection.port, "dbname": connection.database,
                     **connection.options}
        if connection.user:
            arguments["user"] = connection.user
        if connection.password is not None:
            arguments["password"] = connection.password.value()
        return self._psycopg.connect(autocommit=False, **arguments)

    def _set_time_zone(self, connection: Any) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('TimeZone', %s, false)", (self.settings.db_timezone.key,))

    def is_transient(self, error: BaseException) -> bool:
        return isinstance(error, (self._psycopg.OperationalError, self._psycopg.InterfaceError))

    def atomic_insert(self, operation: str, rows: int) -> bool:
        return operation == "insert" and rows <= self.settings.batch_size  # one COPY

    def fold(self, name: str) -> str:
        return name if self.quoting else name.lower()

    def _string(self, value: str) -> str:
        if "\\" not in value:
            return super()._string(value)
        # an escape string: the same whatever standard_conforming_strings says
        return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"

    def _bytes(self, value: bytes) -> str:
        return f"decode('{value.hex()}', 'hex')"

    def add_column(self, table: str, column: Column) -> str:
        # IF NOT EXISTS: two tasks may evolve the same table at once.
        return f"ALTER TABLE {self.table(table)} ADD COLUMN IF NOT EXISTS {self.column_definition(column, False)}"

    def insert(self, cursor: Any, table: str, columns: Sequence[Column], rows: list[tuple[Any, ...]]) -> None:
        statement = self._copy_statement(table, columns)
        for chunk in _chunks(rows, self.settings.batch_size):
            with cursor.copy(statement) as copy:
                for row in chunk:
                    copy.write_row(row)

    def _copy_statement(self, table: str, columns: Sequence[Column]) -> str:
        return f"COPY {self.table(table)} ({', '.join(self.quote(c.name) for c in columns)}) FROM STDIN"

    def copy_data(self, connection: Any, rows: list[tuple[Any, ...]]) -> list[bytes]:
        """*rows* as COPY data, formatted by psycopg as its COPY sends them (nothing is sent: *connection*
        may be busy with a statement sent before); a value psycopg refuses raises."""
        data = _Collected()
        with connection.cursor() as cursor, self._psycopg.Copy(cursor, binary=False, writer=data) as copy:
            for row in rows:
                copy.write_row(row)
        return data.parts

    def send_insert(self, connection: Any, table: str, columns: Sequence[Column], rows: list[tuple[Any, ...]],
                    data: list[bytes] | None = None) -> bool:
        pq = self._psycopg.pq
        pgconn = connection.pgconn
        if pgconn.transaction_status != pq.TransactionStatus.IDLE:
            return False  # a statement inside a transaction is not committed by itself
        if data is None:
            data = self.copy_data(connection, rows)  # before anything is sent: a value psycopg refuses raises here
        pgconn.send_query(self._copy_statement(table, columns).encode(connection.info.encoding))
        started = _next_result(pgconn)
        if started is None or started.status != pq.ExecStatus.COPY_IN:
            while _next_result(pgconn) is not None:
                pass
            return False
        for part in data:  # each at most psycopg's buffer size (32 KiB)
            while pgconn.put_copy_data(part) == 0:
                _wait(pgconn, writing=True)
        while pgconn.put_copy_end(None) == 0:
            _wait(pgconn, writing=True)
        while pgconn.flush():
            _wait(pgconn, writing=True)
        return True

    def sent_outcome(self, connection: Any) -> str | None:
        pq, pgconn = self._psycopg.pq, connection.pgconn
        failure = None
        while (result := _next_result(pgconn)) is not None:
            if result.status != pq.ExecStatus.COMMAND_OK:
                message = (result.error_message or b"").decode(connection.info.encoding, "replace").strip()
                failure = failure or message or pq.ExecStatus(result.status).name
        return failure

    def upsert(self, cursor: Any, table: str, key_columns: Sequence[Column], value_columns: Sequence[Column],
               rows: list[tuple[Any, ...]]) -> None:
        columns = [*key_columns, *value_columns]
        names = ", ".join(self._p(c.name) for c in columns)
        marks = ", ".join(["%s"] * len(columns))
        keys = ", ".join(self._p(c.name) for c in key_columns)
        if value_columns:
            sets = ", ".join(f"{self._p(c.name)} = EXCLUDED.{self._p(c.name)}" for c in value_columns)
            action = f"DO UPDATE SET {sets}"
        else:
            action = "DO NOTHING"
        self._executemany(cursor, f"INSERT INTO {self._ptable(table)} ({names}) VALUES ({marks}) "
                                  f"ON CONFLICT ({keys}) {action}", rows)


class _Collected:
    """A psycopg ``copy.Writer`` keeping the COPY data psycopg formats, to be sent later."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: Any) -> None:
        self.parts.append(bytes(data))

    def finish(self, exc: BaseException | None = None) -> None:
        pass


def _wait(pgconn: Any, writing: bool = False) -> None:
    """Until *pgconn*'s socket can be read (*writing*: or written); the GIL is released meanwhile.

    While writing, what the server sent is read (an error ends a COPY early): a server waiting for
    its answer to be read is never left waiting for us while we wait for it.
    """
    poller = select.poll()  # not select(): any descriptor number
    poller.register(pgconn.socket, select.POLLIN | select.POLLOUT if writing else select.POLLIN)
    ready = poller.poll()
    if writing and any(events & select.POLLIN for _fd, events in ready):
        pgconn.consume_input()


def _next_result(pgconn: Any) -> Any:
    """The connection's next result (``None`` after a statement's last), waited for without blocking others."""
    while True:
        pgconn.consume_input()
        if not pgconn.is_busy():
            return pgconn.get_result()
        _wait(pgconn)


class MySql(Dialect):
    """MariaDB and MySQL."""

    _quote_char = "`"
    _types: ClassVar[dict[Any, str]] = {
        SchemaType.INT8: "TINYINT", SchemaType.INT16: "SMALLINT", SchemaType.INT32: "INT",
        SchemaType.INT64: "BIGINT", SchemaType.FLOAT32: "FLOAT", SchemaType.FLOAT64: "DOUBLE",
        SchemaType.BOOLEAN: "TINYINT", SchemaType.STRING: "LONGTEXT", SchemaType.BYTES: "LONGBLOB",
        # a key column needs a bounded length
        (SchemaType.STRING, True): "VARCHAR(256)", (SchemaType.BYTES, True): "VARBINARY(1024)",
        Date.LOGICAL_NAME: "DATE", Time.LOGICAL_NAME: "TIME(3)", Timestamp.LOGICAL_NAME: "DATETIME(3)",
    }
    _columns_sql = ("SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = COALESCE(%s, DATABASE()) AND table_name = %s")
    # Client errors (2000–2999: connection lost or refused) and server errors that pass:
    # too many connections, shutdown, lock wait timeout, deadlock, connection killed.
    _TRANSIENT = frozenset({1040, 1053, 1205, 1213, 1927})

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        import pymysql

        self._pymysql = pymysql
        self.errors = (pymysql.err.Error,)

    def _connect(self, connection: Connection) -> Any:
        return self._pymysql.connect(
            host=connection.host, port=connection.port, database=connection.database,
            user=connection.user or "", password=connection.password.value() if connection.password else "",
            autocommit=False, charset="utf8mb4",
            **{name: int(value) for name, value in connection.options.items()})  # connect_timeout

    def _set_time_zone(self, connection: Any) -> None:
        zone = self.settings.db_timezone.key
        with connection.cursor() as cursor:
            try:
                cursor.execute("SET time_zone = %s", ("+00:00" if zone in UTC_NAMES else zone,))
            except self._pymysql.err.OperationalError as error:
                if not error.args or error.args[0] != 1298:  # unknown or incorrect time zone
                    raise
                log.warning("jdbc_time_zone_unknown_to_server: the server does not know db.timezone=%s (its time "
                            "zone tables are not loaded: mariadb-tzinfo-to-sql): DATETIME columns get %s wall-clock "
                            "times, but TIMESTAMP columns read them in the server's own zone", zone, zone)

    def is_transient(self, error: BaseException) -> bool:
        pymysql = self._pymysql
        if isinstance(error, pymysql.err.InterfaceError):
            return True
        code = error.args[0] if isinstance(error, pymysql.err.OperationalError) and error.args else None
        return isinstance(code, int) and (2000 <= code < 3000 or code in self._TRANSIENT)

    def fold(self, name: str) -> str:
        return name.lower()  # column names compare without case

    def columns(self, cursor: Any, table: str) -> set[str] | None:
        schema, _, bare = table.rpartition(".")
        cursor.execute(self._columns_sql, (schema or None, bare))  # table names keep their case
        found = {row[0].lower() for row in cursor.fetchall()}
        return found or None

    def _decimal_type(self, scale: int) -> str:
        # The schema's scale as it is: a smaller one would round every value (MariaDB allows 38, MySQL 30;
        # beyond that the server refuses the table).
        return f"DECIMAL(65, {scale})"

    def _string(self, value: str) -> str:
        # a backslash starts an escape in MariaDB/MySQL strings (unless sql_mode=NO_BACKSLASH_ESCAPES)
        return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"

    def _boolean(self, value: bool) -> str:
        return "1" if value else "0"

    def upsert(self, cursor: Any, table: str, key_columns: Sequence[Column], value_columns: Sequence[Column],
               rows: list[tuple[Any, ...]]) -> None:
        columns = [*key_columns, *value_columns]
        names = ", ".join(self._p(c.name) for c in columns)
        marks = ", ".join(["%s"] * len(columns))
        updated = value_columns or key_columns[:1]  # with no other column, a no-op keeps the row
        sets = ", ".join(f"{self._p(c.name)} = VALUES({self._p(c.name)})" for c in updated)
        statement = f"INSERT INTO {self._ptable(table)} ({names}) VALUES ({marks}) ON DUPLICATE KEY UPDATE {sets}"
        if "%" in sets:
            # PyMySQL's multi-row executemany() left a %% after VALUES (…) as it was until 2026 (PyMySQL
            # #1276): such names go row by row, through execute(), which reads %% as % in every version.
            for row in rows:
                cursor.execute(statement, row)
            return
        self._executemany(cursor, statement, rows)


def dialect_for(settings: Settings) -> Dialect:
    return {POSTGRESQL: PostgreSql, MYSQL: MySql}[settings.connection.dialect](settings)

