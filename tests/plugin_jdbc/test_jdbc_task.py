"""The JDBC sink task against the machine's real PostgreSQL and MariaDB: modes, keys, DDL, transactions, errors."""

from __future__ import annotations

import datetime
import decimal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from connectd_jdbc.connector import JdbcSinkConnector
from connectd_jdbc.task import JdbcSinkTask

from connectd import (
    ConfigError,
    ConnectException,
    Date,
    Decimal,
    ErrantRecordReporter,
    RetriableException,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SinkTaskContext,
    Struct,
    Time,
    Timestamp,
    TopicPartition,
)
from connectd.broker import free_port

PERSON = SchemaBuilder.struct().name("person").field("id", Schema.INT32).field("name", Schema.OPTIONAL_STRING).build()
PERSON_KEY = SchemaBuilder.struct().field("id", Schema.INT32).build()


class Reporter(ErrantRecordReporter):
    """Keeps what was reported (the runtime's reporter sends it to the dead-letter topic)."""

    def __init__(self) -> None:
        self.reported: list[tuple[SinkRecord, BaseException]] = []

    def report(self, record, error):
        self.reported.append((record, error))


def task_for(database, reporter: ErrantRecordReporter | None = None, **config: str) -> JdbcSinkTask:
    settings = {"connection.url": database.url, "connection.user": database.user, **config}
    task = JdbcSinkTask()
    task.context = SinkTaskContext(settings, [TopicPartition("t", 0)])
    task.context.reporter = reporter
    task.start(settings)
    return task


def put_and_flush(task: JdbcSinkTask, records: list[SinkRecord]) -> None:
    """What connectd does with a batch: put(), then pre_commit() (which flushes) before offsets are committed."""
    task.put(records)
    task.pre_commit({})


def record(topic: str, value: Any, offset: int, *, key: Any = None, key_schema: Schema | None = None,
           value_schema: Schema | None = PERSON) -> SinkRecord:
    return SinkRecord(topic=topic, kafka_partition=0, key_schema=key_schema, key=key,
                      value_schema=value_schema if value is not None else None, value=value,
                      kafka_offset=offset, timestamp=None)


def person(id_: int, name: str | None) -> Struct:
    return Struct(PERSON, {"id": id_, "name": name})


def people(topic: str, *pairs: tuple[int, str | None], start: int = 0) -> list[SinkRecord]:
    return [record(topic, person(i, n), start + offset) for offset, (i, n) in enumerate(pairs)]


def keyed(topic: str, id_: int, name: str | None, offset: int) -> SinkRecord:
    return record(topic, person(id_, name) if name is not None else None, offset,
                  key=Struct(PERSON_KEY, {"id": id_}), key_schema=PERSON_KEY)


def test_insert_creates_the_table_from_the_schema(database, table):
    task = task_for(database, **{"auto.create": "true"})
    task.put(people(table, (1, "ada"), (2, None), (1, "ada again")))
    task.stop()
    assert database.columns(table) == ["id", "name"]
    assert database.rows(table, "id, name") == [(1, "ada"), (1, "ada again"), (2, None)]


def test_logical_types_and_every_primitive_round_trip(database, table):
    schema = (SchemaBuilder.struct()
              .field("i8", Schema.INT8).field("i16", Schema.INT16).field("i64", Schema.INT64)
              .field("f32", Schema.FLOAT32).field("f64", Schema.FLOAT64).field("flag", Schema.BOOLEAN)
              .field("raw", Schema.BYTES).field("price", Decimal.schema(2)).field("day", Date.SCHEMA)
              .field("at", Time.SCHEMA).field("ts", Timestamp.SCHEMA).build())
    value = Struct(schema, {
        "i8": -5, "i16": 300, "i64": 2**40, "f32": 1.5, "f64": 2.25, "flag": True, "raw": b"\x00\xff",
        "price": decimal.Decimal("12.34"), "day": datetime.date(2026, 11, 25), "at": datetime.time(13, 14, 15, 16000),
        "ts": datetime.datetime(2026, 11, 25, 10, 0, 0, 123000, tzinfo=datetime.UTC)})
    task = task_for(database, **{"auto.create": "true"})
    task.put([record(table, value, 0, value_schema=schema)])
    task.stop()
    (row,) = database.rows(table)
    assert row[:5] == (-5, 300, 2**40, 1.5, 2.25)
    assert bool(row[5]) is True and bytes(row[6]) == b"\x00\xff" and row[7] == decimal.Decimal("12.34")
    assert row[8] == datetime.date(2026, 11, 25)
    at = row[9] if isinstance(row[9], datetime.time) else (datetime.datetime.min + row[9]).time()  # MariaDB: timedelta
    assert at == datetime.time(13, 14, 15, 16000)
    assert row[10] == datetime.datetime(2026, 11, 25, 10, 0, 0, 123000)  # UTC wall-clock time


def test_timestamps_are_written_in_db_timezone(database, table):
    schema = SchemaBuilder.struct().field("ts", Timestamp.SCHEMA).build()
    instant = datetime.datetime(2026, 7, 1, 12, 0, tzinfo=datetime.UTC)
    task = task_for(database, **{"auto.create": "true", "db.timezone": "Europe/Paris"})
    task.put([record(table, Struct(schema, {"ts": instant}), 0, value_schema=schema)])
    task.stop()
    assert database.rows(table) == [(datetime.datetime(2026, 7, 1, 14, 0),)]  # CEST, UTC+2


def test_timestamp_keys_and_naive_values_in_db_timezone(database, table):
    # Key columns get db.timezone's wall-clock time without an offset (a WHERE on them compares like with
    # like); value columns the instant in db.timezone; a naive value is an instant in UTC, as in Connect.
    key_schema = SchemaBuilder.struct().field("at", Timestamp.SCHEMA).build()
    schema = SchemaBuilder.struct().field("at", Timestamp.SCHEMA).field("seen", Timestamp.builder().optional().build()) \
        .field("name", Schema.OPTIONAL_STRING).build()
    at = datetime.datetime(2026, 1, 5, 8, 30, tzinfo=datetime.UTC)
    task = task_for(database, **{"auto.create": "true", "db.timezone": "Europe/Paris", "insert.mode": "upsert",
                                 "pk.mode": "record_key", "delete.enabled": "true"})

    def change(name: str | None, offset: int, seen: datetime.datetime | None = None) -> SinkRecord:
        value = None if name is None else Struct(schema, {"at": at, "seen": seen, "name": name})
        return record(table, value, offset, key=Struct(key_schema, {"at": at}), key_schema=key_schema,
                      value_schema=schema)

    put_and_flush(task, [change("a", 0, seen=datetime.datetime(2026, 1, 5, 9, 0))])  # naive: 09:00 UTC
    put_and_flush(task, [change("b", 1, seen=datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.UTC))])
    paris = datetime.datetime(2026, 1, 5, 9, 30)  # CET, UTC+1
    assert database.rows(table) == [(paris, datetime.datetime(2026, 1, 5, 10, 0), "b")]  # one row: the key met
    put_and_flush(task, [change(None, 2)])
    task.stop()
    assert database.rows(table) == []


@pytest.fixture
def server_zone_plus_5(database, monkeypatch) -> Iterator[None]:
    """New sessions of the database start in UTC+5, as on a server set to its local zone."""
    if database.kind == "postgresql":
        monkeypatch.setenv("PGTZ", "Asia/Karachi")  # libpq sets the session's TimeZone from it
        yield
        return
    (zone,) = database.query("SELECT @@global.time_zone")[0]
    database.query("SET GLOBAL time_zone = '+05:00'")
    try:
        yield
    finally:
        database.query("SET GLOBAL time_zone = %s", zone)


@pytest.mark.parametrize("mode", ["insert", "upsert"])
def test_zoned_columns_get_the_instant_whatever_the_server_zone(database, table, server_zone_plus_5, mode):
    # TIMESTAMPTZ (PostgreSQL) and TIMESTAMP (MariaDB) columns store instants, read and written in the
    # session's time zone; columns without a zone get db.timezone's wall-clock time (UTC by default).
    zoned = "TIMESTAMPTZ" if database.kind == "postgresql" else "TIMESTAMP(3) NULL"
    wall = "TIMESTAMP" if database.kind == "postgresql" else "DATETIME(3)"
    database.query(f"CREATE TABLE {database.quote(table)} (id INT PRIMARY KEY, ts {zoned}, wall {wall})")
    schema = SchemaBuilder.struct().field("id", Schema.INT32).field("ts", Timestamp.SCHEMA) \
        .field("wall", Timestamp.SCHEMA).build()
    instant = datetime.datetime(2026, 7, 1, 12, 0, 0, 250000, tzinfo=datetime.UTC)
    task = task_for(database, **{"insert.mode": mode, "pk.mode": "record_value" if mode == "upsert" else "none",
                                 **({"pk.fields": "id"} if mode == "upsert" else {})})
    task.put([record(table, Struct(schema, {"id": 1, "ts": instant, "wall": instant}), 0, value_schema=schema)])
    task.stop()
    epoch = "extract(epoch FROM ts)" if database.kind == "postgresql" else "UNIX_TIMESTAMP(ts)"
    ((seconds, wall_time),) = database.query(f"SELECT {epoch}, wall FROM {database.quote(table)}")
    assert float(seconds) == instant.timestamp()
    assert wall_time == datetime.datetime(2026, 7, 1, 12, 0, 0, 250000)


def test_a_zone_mariadb_does_not_know_is_said_in_the_log(mariadb, caplog):
    database = mariadb
    table = f"jdbc_{uuid.uuid4().hex[:10]}"
    database.query(f"CREATE TABLE {table} (ts TIMESTAMP(3) NULL)")
    schema = SchemaBuilder.struct().field("ts", Timestamp.SCHEMA).build()
    instant = datetime.datetime(2026, 7, 1, 12, 0, tzinfo=datetime.UTC)
    try:
        task = task_for(database, **{"db.timezone": "Europe/Paris"})
        task.put([record(table, Struct(schema, {"ts": instant}), 0, value_schema=schema)])
        task.stop()
        ((seconds,),) = database.query(f"SELECT UNIX_TIMESTAMP(ts) FROM {table}")
    finally:
        database.query(f"DROP TABLE {table}")
    (known,) = database.query("SELECT CONVERT_TZ('2026-07-01 12:00:00', 'UTC', 'Europe/Paris') IS NOT NULL")[0]
    if known:  # the server's time zone tables are loaded
        assert float(seconds) == instant.timestamp()
    else:
        assert "does not know db.timezone=Europe/Paris" in caplog.text


def test_upsert_by_value_fields_keeps_the_last_record_of_a_key(database, table):
    task = task_for(database, **{"auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_value",
                                 "pk.fields": "id"})
    task.put(people(table, (1, "a"), (2, "b"), (1, "a2")))  # the same key twice in one statement
    task.put(people(table, (2, "b2"), (3, "c"), start=3))
    task.stop()
    assert database.rows(table) == [(1, "a2"), (2, "b2"), (3, "c")]


def test_update_changes_existing_rows_and_inserts_none(database, table):
    task_for(database, **{"auto.create": "true"}).put(people(table, (1, "a"), (2, "b")))
    task = task_for(database, **{"insert.mode": "update", "pk.mode": "record_value", "pk.fields": "id"})
    task.put(people(table, (2, "b2"), (9, "nobody"), start=2))
    task.stop()
    assert database.rows(table) == [(1, "a"), (2, "b2")]


def test_record_key_struct_and_tombstones_delete(database, table):
    task = task_for(database, **{"auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_key",
                                 "delete.enabled": "true"})
    task.put([keyed(table, 1, "a", 0), keyed(table, 2, "b", 1), keyed(table, 1, None, 2), keyed(table, 3, "c", 3)])
    task.put([keyed(table, 3, None, 4), keyed(table, 3, "c again", 5)])  # delete, then the key comes back
    task.stop()
    assert database.rows(table) == [(2, "b"), (3, "c again")]


def test_primitive_record_key_goes_to_the_named_column(database, table):
    value_schema = SchemaBuilder.struct().field("name", Schema.STRING).build()
    task = task_for(database, **{"auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_key",
                                 "pk.fields": "user_id"})
    task.put([record(table, Struct(value_schema, {"name": n}), offset, key=k, key_schema=Schema.STRING,
                     value_schema=value_schema) for offset, (k, n) in enumerate([("u1", "a"), ("u2", "b"),
                                                                                  ("u1", "c")])])
    task.stop()
    assert database.columns(table) == ["user_id", "name"]
    assert database.rows(table) == [("u1", "c"), ("u2", "b")]


def test_kafka_coordinates_as_the_key_make_replays_idempotent(database, table):
    task = task_for(database, **{"auto.create": "true", "insert.mode": "upsert", "pk.mode": "kafka"})
    batch = people(table, (1, "a"), (2, "b"))
    task.put(batch)
    task.put(batch)  # replayed after a crash: the same rows
    task.stop()
    assert database.columns(table) == ["__connect_topic", "__connect_partition", "__connect_offset", "id", "name"]
    assert database.rows(table, "__connect_offset") == [(table, 0, 0, 1, "a"), (table, 0, 1, 2, "b")]


def test_fields_whitelist_writes_only_those_fields(database, table):
    task = task_for(database, **{"auto.create": "true", "fields.whitelist": "id"})
    task.put(people(table, (1, "secret")))
    task.stop()
    assert database.columns(table) == ["id"] and database.rows(table) == [(1,)]


def test_auto_evolve_adds_optional_columns_and_refuses_required_ones(database, table):
    task = task_for(database, **{"auto.create": "true", "auto.evolve": "true"})
    task.put(people(table, (1, "a")))
    wider = SchemaBuilder.struct().field("id", Schema.INT32).field("name", Schema.OPTIONAL_STRING) \
        .field("email", Schema.OPTIONAL_STRING).field("level", SchemaBuilder.int32().default_value(7).build()).build()
    task.put([record(table, Struct(wider, {"id": 2, "name": "b", "email": "b@x", "level": 1}), 1, value_schema=wider)])
    assert database.columns(table) == ["id", "name", "email", "level"]
    assert database.rows(table) == [(1, "a", None, 7), (2, "b", "b@x", 1)]
    required = SchemaBuilder.struct().field("id", Schema.INT32).field("must", Schema.STRING).build()
    with pytest.raises(ConnectException, match="cannot add column must .* required and has no default"):
        task.put([record(table, Struct(required, {"id": 3, "must": "x"}), 2, value_schema=required)])
    task.stop()


@pytest.mark.parametrize("mode", ["insert", "upsert"])
def test_a_null_is_null_in_an_optional_field_with_a_default_and_the_default_in_a_required_one(database, table, mode):
    schema = (SchemaBuilder.struct().field("id", Schema.INT32)
              .field("note", SchemaBuilder.string().optional().default_value("none").build())
              .field("level", SchemaBuilder.int32().default_value(7).build()).build())
    key = SchemaBuilder.struct().field("id", Schema.INT32).build()
    rows = [Struct(schema, {"id": 1, "note": None, "level": 2}), Struct(schema, {"id": 2, "level": None}),
            Struct(schema, {"id": 3, "note": "set", "level": 3})]
    task = task_for(database, **{"auto.create": "true", "insert.mode": mode, "pk.mode": "record_key"})
    task.put([record(table, row, offset, key=Struct(key, {"id": row.get("id")}), key_schema=key, value_schema=schema)
              for offset, row in enumerate(rows)])
    task.stop()
    # Kafka's Struct.get (Confluent's sink) would write "none" for the NULLs a CDC source saw.
    assert database.rows(table, "id, note, level") == [(1, None, 2), (2, None, 7), (3, "set", 3)]


def test_missing_table_or_column_without_auto_ddl_fails_saying_what_to_set(database, table):
    task = task_for(database)
    with pytest.raises(ConnectException, match=f"table {table} does not exist and auto.create=false"):
        task.put(people(table, (1, "a")))
    database.query(f"CREATE TABLE {database.quote(table)} (id INT)")
    with pytest.raises(ConnectException, match=f"table {table} has no column name.*auto.evolve=true"):
        task.put(people(table, (1, "a")))
    task.stop()


def test_a_put_is_one_transaction(database, table):
    database.query(f"CREATE TABLE {database.quote(table)} (id INT PRIMARY KEY, name VARCHAR(20))")
    task = task_for(database)
    message = f"records {table}-0@0 to {table}-0@2 failed"
    with pytest.raises(ConnectException, match=message):
        # PostgreSQL: put() sent the COPY, and the flush finds it failed (the records written again fail again)
        put_and_flush(task, people(table, (1, "a"), (1, "duplicate"), (2, "b")))
    assert database.rows(table) == []  # nothing of the failed put, not even the rows before the bad one
    if database.kind == "postgresql":  # connectd goes on after a failed flush: the next put() fails the task
        with pytest.raises(ConnectException, match=message):
            task.put(people(table, (3, "c"), start=3))
    put_and_flush(task, people(table, (3, "c"), start=3))  # the task's connection is usable again
    task.stop()
    assert database.rows(table) == [(3, "c")]


def test_with_a_reporter_refused_records_are_reported_and_the_others_written(database, table):
    database.query(f"CREATE TABLE {database.quote(table)} (id INT PRIMARY KEY, name VARCHAR(20))")
    reporter = Reporter()
    task = task_for(database, reporter)
    batch = people(table, (1, "a"), (1, "duplicate"), (2, "b"))
    put_and_flush(task, batch)
    task.stop()
    assert database.rows(table) == [(1, "a"), (2, "b")]
    assert [r.kafka_offset for r, _ in reporter.reported] == [1]


def test_records_that_are_no_rows_are_reported_or_fail_the_task(database, table):
    schemaless = record(table, {"id": 1}, 0, value_schema=None)
    tombstone = record(table, None, 1)
    reporter = Reporter()
    task = task_for(database, reporter, **{"auto.create": "true"})
    put_and_flush(task, [schemaless, tombstone, *people(table, (3, "c"), start=2)])
    task.stop()
    assert database.rows(table) == [(3, "c")]
    messages = [str(error) for _, error in reporter.reported]
    assert "the value is a dict without a schema" in messages[0] and "schemas.enable=true" in messages[0]
    assert "null value (a tombstone) and delete.enabled=false" in messages[1]
    with pytest.raises(ConnectException, match=f"record {table}-0@0: the value is a dict without a schema"):
        task_for(database, **{"auto.create": "true"}).put([schemaless])


def test_unreachable_database_is_retried_then_fails(database):
    url = database.url.replace(":5432/", f":{free_port()}/").replace(":3306/", f":{free_port()}/")
    settings = {"connection.url": url, "connection.user": database.user, "connection.password": "pw-9f2e",
                "connection.attempts": "2", "connection.backoff.ms": "1", "max.retries": "2",
                "retry.backoff.ms": "250"}
    task = JdbcSinkTask()
    task.context = SinkTaskContext(settings, [TopicPartition("t", 0)])
    task.start(settings)
    batch = people("t", (1, "a"))
    for _ in range(2):
        with pytest.raises(RetriableException) as retried:
            task.put(batch)
        assert task.context.retry_timeout_ms == 250 and "pw-9f2e" not in str(retried.value)
    with pytest.raises(ConnectException, match="failed 3 times in a row") as failed:
        task.put(batch)
    assert not isinstance(failed.value, RetriableException) and "pw-9f2e" not in str(failed.value)


def test_quote_never_and_a_schema_qualified_table(postgresql):
    database = postgresql
    database.query("CREATE SCHEMA IF NOT EXISTS jdbc_test")
    task = task_for(database, **{"auto.create": "true", "quote.sql.identifiers": "never",
                                 "table.name.format": "jdbc_test.Kafka_${topic}"})
    task.put(people("Orders", (1, "a")))
    task.stop()
    try:
        assert database.query("SELECT id, name FROM jdbc_test.kafka_orders") == [(1, "a")]  # folded to lower case
    finally:
        database.query("DROP TABLE IF EXISTS jdbc_test.kafka_orders")


@pytest.mark.parametrize(("config", "key", "message"), [
    ({"delete.enabled": "true"}, "delete.enabled", "expected pk.mode=record_key"),
    ({"insert.mode": "upsert"}, "insert.mode", "expected a pk.mode other than none"),
    ({"pk.fields": "id"}, "pk.fields", "pk.mode=none has none"),
    ({"pk.mode": "kafka", "pk.fields": "a,b"}, "pk.fields", "expected three names"),
    ({"connection.url": "postgresql://h/db"}, "connection.url", "expected a JDBC URL starting with jdbc:"),
    ({"connection.url": "jdbc:oracle:thin:@h:1521:x"}, "connection.url", "not jdbc:oracle:"),
    ({"connection.url": "jdbc:mysql://h/db?useSSL=true"}, "connection.url", "TLS to MariaDB/MySQL is not supported"),
    ({"connection.url": "jdbc:mysql://h/db?useCursorFetch=true"}, "connection.url", "not supported: useCursorFetch"),
    ({"connection.url": "jdbc:mysql://h/db?serverTimezone=Europe/Paris"}, "connection.url",
     "differs from db.timezone=UTC"),
    ({"connection.url": "jdbc:postgresql://h/db?sslfactory=x.Y"}, "connection.url",
     'invalid connection option "sslfactory"'),
    ({"connection.url": "jdbc:postgresql://h/db?stringtype=varchar"}, "connection.url",
     "expected stringtype=unspecified"),
    ({"connection.url": "jdbc:postgresql://h"}, "connection.url", "expected a host and a database"),
])
def test_settings_that_do_not_fit_together_are_refused(config, key, message):
    settings = {"connection.url": "jdbc:postgresql://127.0.0.1/test", **config}
    problems = JdbcSinkConnector().validate(settings)
    assert [(p.key, message in p.message) for p in problems] == [(key, True)]
    with pytest.raises(ConfigError, match=message):
        task = JdbcSinkTask()
        task.context = SinkTaskContext(settings)
        task.start(settings)


def test_password_in_the_url_is_kept_secret():
    from connectd_jdbc.config import settings

    parsed = settings({"connection.url": "jdbc:postgresql://db.example:6432/app?user=app&password=s3cr3t&sslmode=require"})
    connection = parsed.connection
    assert (connection.host, connection.port, connection.database, connection.user) == ("db.example", 6432, "app", "app")
    assert connection.password.value() == "s3cr3t" and "s3cr3t" not in repr(parsed)
    assert connection.options == {"sslmode": "require"}
    mysql = settings({"connection.url": "jdbc:mysql://db.example/app?user=app&password=s3cr3t",
                      "connection.user": "admin"}).connection
    assert (mysql.user, mysql.password.value(), mysql.options) == ("admin", "s3cr3t", {})  # connection.user wins


def test_pgjdbc_url_parameters_become_libpq_ones():
    from connectd_jdbc.config import settings

    url = ("jdbc:postgresql://db.example/app?ssl=true&ApplicationName=orders-sink&connectTimeout=7&loginTimeout=30"
           "&currentSchema=sales&reWriteBatchedInserts=true&stringtype=unspecified&keepalives=1")
    assert settings({"connection.url": url}).connection.options == {
        "sslmode": "verify-full", "application_name": "orders-sink", "connect_timeout": "7",
        "options": "-c search_path=sales", "keepalives": "1"}
    explicit = settings({"connection.url": "jdbc:postgresql://db.example/app?sslmode=require&ssl=true"})
    assert explicit.connection.options == {"sslmode": "require"}  # sslmode says how, as in pgJDBC


def test_a_url_written_for_the_java_drivers_works_unchanged(database, table):
    url = {"postgresql": f"{database.url}?currentSchema=jdbc_test&ApplicationName=connectd-test&connectTimeout=5",
           "mariadb": f"{database.url}?useSSL=false&serverTimezone=UTC&rewriteBatchedStatements=true"
                      "&connectTimeout=5000&allowPublicKeyRetrieval=true"}[database.kind]
    if database.kind == "postgresql":
        database.query("CREATE SCHEMA IF NOT EXISTS jdbc_test")
    task = task_for(database, **{"connection.url": url, "auto.create": "true"})
    try:
        task.put(people(table, (1, "a"), (2, "b")))
    finally:
        task.stop()
    where = f"jdbc_test.{table}" if database.kind == "postgresql" else table  # currentSchema: the search path
    try:
        assert database.query(f"SELECT id, name FROM {where} ORDER BY id") == [(1, "a"), (2, "b")]
    finally:
        database.query(f"DROP TABLE IF EXISTS {where}")


def test_the_example_config_in_etc_is_valid():
    import json
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "etc" / "connectors" / "jdbc-sink-postgresql.json"
    config = json.loads(example.read_text())["config"]
    own = {key: value for key, value in config.items() if key in JdbcSinkConnector.config_def}
    assert [p for p in JdbcSinkConnector.config_def.validate(own) if p.is_error] == []
    assert JdbcSinkConnector().validate(own) == []


@pytest.mark.parametrize("mode", ["insert", "upsert", "update"])
def test_key_only_records_write_their_key_columns(database, table, mode):
    # pk.mode=record_value without pk.fields: every field is a key column, none is left to set.
    task = task_for(database, **{"auto.create": "true", "insert.mode": mode, "pk.mode": "record_value"})
    task.put(people(table, (1, "a"), (2, "b")))
    task.put(people(table, (1, "a"), (3, "c"), start=2) if mode != "insert" else people(table, (3, "c"), start=2))
    task.stop()
    assert database.rows(table) == ([] if mode == "update" else [(1, "a"), (2, "b"), (3, "c")])


def test_key_only_values_with_record_keys(database, table):
    task = task_for(database, **{"auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_key",
                                 "delete.enabled": "true"})
    task.put([record(table, Struct(PERSON_KEY, {"id": id_}), offset, key=Struct(PERSON_KEY, {"id": id_}),
                     key_schema=PERSON_KEY, value_schema=PERSON_KEY) for offset, id_ in enumerate([1, 2, 1])]
             + [keyed(table, 2, None, 3)])
    task.stop()
    assert database.columns(table) == ["id"] and database.rows(table) == [(1,)]


def test_a_record_that_fills_no_column_is_reported(database, table):
    empty = SchemaBuilder.struct().build()
    reporter = Reporter()
    task = task_for(database, reporter, **{"auto.create": "true"})
    put_and_flush(task, [record(table, Struct(empty, {}), 0, value_schema=empty), *people(table, (1, "a"), start=1)])
    task.stop()
    assert database.rows(table) == [(1, "a")]
    ((reported, error),) = reporter.reported
    assert reported.kafka_offset == 0 and "no column to write" in str(error)


def test_a_later_record_of_a_cached_shape_without_a_key_is_reported(database, table):
    reporter = Reporter()
    task = task_for(database, reporter, **{"auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_key"})
    keyless = record(table, person(2, "b"), 1, key=None, key_schema=PERSON_KEY)
    task.put([keyed(table, 1, "a", 0), keyless])
    task.stop()
    assert database.rows(table) == [(1, "a")]
    assert [(r.kafka_offset, "needs a key" in str(e)) for r, e in reporter.reported] == [(1, True)]


def test_tombstones_for_a_table_not_there_delete_nothing(database, table):
    # Confluent's sink would create the table from the key alone; there is nothing to delete in it.
    task = task_for(database, **{"auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_key",
                                 "delete.enabled": "true"})
    task.put([keyed(table, 1, None, 0), keyed(table, 2, "b", 1), keyed(table, 2, None, 2), keyed(table, 3, "c", 3)])
    task.stop()
    assert database.columns(table) == ["id", "name"] and database.rows(table) == [(3, "c")]
    task = task_for(database, **{"insert.mode": "upsert", "pk.mode": "record_key", "delete.enabled": "true"})
    task.put([keyed("other_" + table, 1, None, 0)])  # no table, no auto.create: nothing to delete either
    task.stop()


def test_defaults_are_written_as_values_are(database, table):
    instant = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
    path = "C:\\new\\'é\\"  # MariaDB reads a backslash in a string literal as an escape
    schema = (SchemaBuilder.struct().field("id", Schema.INT32)
              .field("path", SchemaBuilder.string().optional().default_value(path).build())
              .field("raw", SchemaBuilder.bytes().default_value(b"\x00\xff").build())
              .field("ts", Timestamp.builder().default_value(instant).build()).build())
    task = task_for(database, **{"auto.create": "true", "db.timezone": "Europe/Paris"})
    task.put([record(table, Struct(schema, {"id": 1, "path": "x", "raw": b"x", "ts": instant}), 0,
                     value_schema=schema)])
    task.stop()
    database.query(f"INSERT INTO {database.quote(table)} (id) VALUES (2)")
    rows = [(i, p, bytes(r), ts) for i, p, r, ts in database.rows(table)]
    paris = datetime.datetime(2026, 1, 1, 13, 0)  # the values' wall-clock time in db.timezone
    assert rows == [(1, "x", b"x", paris), (2, path, b"\x00\xff", paris)]


def test_a_field_with_a_default_made_optional_later_writes_nulls(database, table):
    # Confluent's sink makes a nullable column of a field with a default, as this one does.
    required = SchemaBuilder.struct().field("id", Schema.INT32) \
        .field("level", SchemaBuilder.int32().default_value(7).build()).build()
    optional = SchemaBuilder.struct().field("id", Schema.INT32).field("level", Schema.OPTIONAL_INT32).build()
    task = task_for(database, **{"auto.create": "true"})
    task.put([record(table, Struct(required, {"id": 1, "level": 1}), 0, value_schema=required),
              record(table, Struct(optional, {"id": 2, "level": None}), 1, value_schema=optional)])
    task.stop()
    assert database.rows(table) == [(1, 1), (2, None)]


def test_decimal_columns_keep_the_schema_scale(database, table):
    schema = SchemaBuilder.struct().field("d", Decimal.schema(35)).build()
    value = decimal.Decimal("1." + "123456789" * 3 + "12345678")  # 35 decimals
    task = task_for(database, **{"auto.create": "true"})
    task.put([record(table, Struct(schema, {"d": value}), 0, value_schema=schema)])
    task.stop()
    assert database.rows(table) == [(value,)]


def test_a_refused_record_leaves_the_row_its_earlier_records_made(database, table):
    database.query(f"CREATE TABLE {database.quote(table)} (id INT PRIMARY KEY, name VARCHAR(5))")
    reporter = Reporter()
    task = task_for(database, reporter, **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"})
    task.put(people(table, (1, "a"), (2, "b"), (1, "too long for the column"), (2, "b2")))
    task.stop()
    assert database.rows(table) == [(1, "a"), (2, "b2")]
    assert [r.kafka_offset for r, _ in reporter.reported] == [2]


def test_nul_characters_postgresql_refuses_are_reported_or_fail_the_task(postgresql):
    database, table = postgresql, f"jdbc_{uuid.uuid4().hex[:10]}"
    try:
        for mode in ("insert", "upsert"):
            config = {"auto.create": "true", "insert.mode": mode, "pk.mode": "record_value", "pk.fields": "id"}
            reporter = Reporter()
            task = task_for(database, reporter, **config)
            task.put(people(table, (1, "a\x00b"), (2, "ünï😀")))
            task.stop()
            assert database.rows(table) == [(2, "ünï😀")]
            assert [(r.kafka_offset, "NUL" in str(e)) for r, e in reporter.reported] == [(0, True)]
            with pytest.raises(ConnectException, match=f"records {table}-0@0 to {table}-0@0 failed: .*NUL"):
                task_for(database, **config).put(people(table, (3, "\x00")))
            database.query(f"DROP TABLE {database.quote(table)}")
    finally:
        database.query(f"DROP TABLE IF EXISTS {database.quote(table)}")


def test_nan_and_infinity(database, table):
    schema = SchemaBuilder.struct().field("id", Schema.INT32).field("f", Schema.FLOAT64).build()
    values = [1.5, float("nan"), float("inf"), float("-inf")]
    reporter = Reporter()
    task = task_for(database, reporter, **{"auto.create": "true"})
    task.put([record(table, Struct(schema, {"id": i, "f": f}), i, value_schema=schema) for i, f in enumerate(values)])
    task.stop()
    rows = database.rows(table)
    if database.kind == "postgresql":  # stored as they are
        assert [str(f) for _, f in rows] == ["1.5", "nan", "inf", "-inf"] and reporter.reported == []
    else:  # MariaDB has no such values: refused, reported
        assert rows == [(0, 1.5)] and [r.kafka_offset for r, _ in reporter.reported] == [1, 2, 3]


@pytest.mark.parametrize("mode", ["insert", "upsert"])
def test_a_put_longer_than_batch_size_is_still_one_transaction(database, table, mode):
    database.query(f"CREATE TABLE {database.quote(table)} (id INT PRIMARY KEY, name VARCHAR(20))")
    config = {"batch.size": "7", "insert.mode": mode, "pk.mode": "record_value", "pk.fields": "id"}
    task = task_for(database, **config)
    task.put(people(table, *[(i, f"n{i}") for i in range(50)]))
    assert len(database.rows(table)) == 50
    with pytest.raises(ConnectException):  # the last statement fails: nothing of the put stays
        task.put(people(table, *[(i, "x") for i in range(100, 120)], (1, "far too long for the column"), start=50))
    task.stop()
    assert len(database.rows(table)) == 50 and database.rows(table)[1] == (1, "n1")


@pytest.mark.parametrize("mode", ["insert", "upsert", "update"])
def test_columns_the_records_lack_keep_their_default(database, table, mode):
    database.query(f"CREATE TABLE {database.quote(table)} (id INT PRIMARY KEY, name VARCHAR(20), "
                   "level INT DEFAULT 7, note VARCHAR(20))")
    database.query(f"INSERT INTO {database.quote(table)} VALUES (1, 'old', 1, 'kept')")
    task = task_for(database, **{"insert.mode": mode, "pk.mode": "record_value", "pk.fields": "id"})
    task.put(people(table, (1, "new")) if mode != "insert" else people(table, (2, "b")))
    task.put(people(table, (3, "c"), start=1) if mode == "upsert" else [])
    task.stop()
    expected = {"insert": [(1, "old", 1, "kept"), (2, "b", 7, None)],
                "upsert": [(1, "new", 1, "kept"), (3, "c", 7, None)],
                "update": [(1, "new", 1, "kept")]}[mode]
    assert database.rows(table) == expected


def test_topics_with_dashes_and_unicode_field_names(database):
    schema = SchemaBuilder.struct().field("id", Schema.INT32).field("prénom", Schema.OPTIONAL_STRING).build()
    topic = f"orders-{uuid.uuid4().hex[:6]}-eu"
    task = task_for(database, **{"auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_value",
                                 "pk.fields": "id", "table.name.format": "kafka_${topic}"})
    try:
        task.put([record(topic, Struct(schema, {"id": 1, "prénom": n}), offset, value_schema=schema)
                  for offset, n in enumerate(["Zoë", "Zoë 😀"])])
        task.stop()
        assert database.columns(f"kafka_{topic}") == ["id", "prénom"]
        assert database.rows(f"kafka_{topic}") == [(1, "Zoë 😀")]
    finally:
        database.query(f"DROP TABLE IF EXISTS {database.quote('kafka_' + topic)}")


def test_with_a_reporter_records_a_table_cannot_take_are_reported_and_the_others_written(database, table):
    database.query(f"CREATE TABLE {database.quote(table)} (id INT PRIMARY KEY)")
    other = f"{table}_b"
    reporter = Reporter()
    task = task_for(database, reporter, **{"auto.create": "true"})  # no auto.evolve: name has no column
    try:
        task.put([*people(table, (1, "a"), (2, "b")), *people(other, (3, "c"), start=2)])
        task.stop()
        assert database.rows(table) == [] and database.rows(other) == [(3, "c")]
        assert [(r.kafka_offset, "has no column name" in str(e)) for r, e in reporter.reported] == [(0, True),
                                                                                                     (1, True)]
    finally:
        database.query(f"DROP TABLE IF EXISTS {database.quote(other)}")


def test_refused_records_are_not_reported_again_when_a_put_is_retried(database):
    url = database.url.replace(":5432/", f":{free_port()}/").replace(":3306/", f":{free_port()}/")
    reporter = Reporter()
    task = task_for(database, reporter, **{"connection.url": url, "connection.attempts": "1", "max.retries": "1",
                                           "retry.backoff.ms": "1"})
    batch = [record("t", {"id": 1}, 0, value_schema=None), *people("t", (2, "b"), start=1)]
    with pytest.raises(RetriableException):
        task.put(batch)
    with pytest.raises(ConnectException, match="failed 2 times in a row"):
        task.put(batch)
    assert reporter.reported == []  # the put() failed as a whole: its offsets are not committed


@pytest.mark.parametrize("mode", ["insert", "upsert", "update"])
def test_percent_signs_in_table_and_field_names(database, mode):
    # The drivers' parameters are %s: a % in a name must reach the database as itself.
    schema = (SchemaBuilder.struct().field("id%s", Schema.INT32).field("growth%", Schema.OPTIONAL_STRING)
              .field("100%%", Schema.OPTIONAL_INT32).build())
    table = f"p%_{uuid.uuid4().hex[:6]}"
    task = task_for(database, **{"auto.create": "true", "insert.mode": mode, "pk.mode": "record_value",
                                 "pk.fields": "id%s", "table.name.format": table,
                                 "delete.enabled": "false"})
    try:
        if mode == "update":
            database.query(f"CREATE TABLE {database.quote(table)} ({database.quote('id%s')} INT PRIMARY KEY, "
                           f"{database.quote('growth%')} VARCHAR(9), {database.quote('100%%')} INT)")
            database.query(f"INSERT INTO {database.quote(table)} VALUES (1, 'x', 0)")
        ids = [1, 2] if mode == "insert" else [1, 1]
        task.put([record("t", Struct(schema, {"id%s": i, "growth%": g, "100%%": n}), offset, value_schema=schema)
                  for offset, (i, g, n) in enumerate(zip(ids, ["5%", "7%"], [1, 2], strict=True))])
        task.stop()
        assert database.columns(table) == ["id%s", "growth%", "100%%"]
        expected = {"insert": [(1, "5%", 1), (2, "7%", 2)]}.get(mode, [(1, "7%", 2)])
        assert database.rows(table, order_by="3") == expected
    finally:
        database.query(f"DROP TABLE IF EXISTS {database.quote(table)}")


# -- a put() sent to PostgreSQL (the task's docstring has the states) ------------------------------


@pytest.fixture
def own_role(postgresql) -> Iterator[tuple[str, str]]:
    """A PostgreSQL role of this test's own and a table (empty) it may write: the test can refuse the
    role logins, so that the task's reconnections fail as they do when the database went away."""
    role, table = f"jdbc_role_{uuid.uuid4().hex[:8]}", f"jdbc_{uuid.uuid4().hex[:10]}"
    postgresql.query(f"CREATE ROLE {role} LOGIN")
    postgresql.query(f'CREATE TABLE "{table}" (id INT PRIMARY KEY, name TEXT)')
    postgresql.query(f'GRANT SELECT, INSERT ON "{table}" TO {role}')
    try:
        yield role, table
    finally:
        postgresql.query(f"ALTER ROLE {role} LOGIN")
        postgresql.query(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'")
        postgresql.query(f'DROP TABLE IF EXISTS "{table}"')
        postgresql.query(f"DROP ROLE {role}")


@dataclass
class Held:
    """*own_role*'s role and table, a connection (*holder*) that inserted key 1 in a transaction left open
    (a COPY of the same key waits for it), and the tasks made with :meth:`task`, stopped afterwards."""

    database: Any
    role: str
    table: str
    holder: Any
    tasks: list[JdbcSinkTask]

    def task(self, reporter: ErrantRecordReporter | None = None, **config: str) -> JdbcSinkTask:
        task = task_for(self.database, reporter, **{"connection.user": self.role, **config})
        self.tasks.append(task)
        return task


@pytest.fixture
def held(postgresql, own_role) -> Iterator[Held]:
    role, table = own_role
    holder = postgresql.connect()
    holder.autocommit = False
    holder.execute(f'INSERT INTO "{table}" VALUES (1, %s)', ("held",))
    state = Held(postgresql, role, table, holder, [])
    try:
        yield state
    finally:
        holder.rollback()
        holder.close()
        for task in state.tasks:
            task.stop()


def _copy_waiting(postgresql, role: str) -> bool:
    return bool(postgresql.query("SELECT 1 FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock' "
                                 "AND query LIKE 'COPY%%'", role))


def _lose_the_connection_while_the_copy_waits(postgresql, role: str, holder: Any, wait_until) -> None:
    """The task's COPY waiting for *holder*'s key: its connection is killed, and its logins refused (the
    database is gone, for the task); then the holder lets go."""
    wait_until(lambda: _copy_waiting(postgresql, role), "the sent COPY to wait for the held key")
    postgresql.query(f"ALTER ROLE {role} NOLOGIN")
    postgresql.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", role)
    holder.rollback()


def test_a_sent_put_returns_while_postgresql_writes_and_flush_waits_for_it(postgresql, held, wait_until):
    role, table, holder = held.role, held.table, held.holder
    task = held.task()
    task.put(people(table, (1, "a"), (2, "b")))  # returns: its COPY waits for the holder's row
    wait_until(lambda: _copy_waiting(postgresql, role), "the sent COPY to wait for the held key")
    assert postgresql.rows(table) == []
    holder.rollback()
    task.pre_commit({})  # waits for the COPY, which then commits
    assert postgresql.rows(table) == [(1, "a"), (2, "b")]


def test_a_sent_put_larger_than_the_sockets_buffers_is_sent_whole_while_postgresql_waits(postgresql, held,
                                                                                          wait_until):
    # ~40 MB of COPY data: the server stops reading it while its first row waits for the holder's key, so
    # put() waits to write more (reading what the server sends meanwhile), and goes on once it may.
    role, table, holder = held.role, held.table, held.holder
    task = held.task(**{"batch.size": "20000"})
    long_name = "n" * 2000
    batch = people(table, *((i, long_name) for i in range(1, 20_001)))
    put = threading.Thread(target=task.put, args=(batch,))
    try:
        put.start()
        wait_until(lambda: _copy_waiting(postgresql, role), "the sent COPY to wait for the held key")
        holder.rollback()
        put.join(60)
        assert not put.is_alive()
        task.pre_commit({})
        assert postgresql.query(f'SELECT count(*), min(id), max(id), min(length(name)) FROM "{table}"') == [
            (20_000, 1, 20_000, 2000)]
    finally:
        holder.rollback()  # the put() can end, whatever failed
        put.join(60)


@pytest.mark.parametrize("reporting", [True, False])
def test_a_sent_put_that_failed_is_written_again_and_reported_or_fails_the_task(postgresql, held, wait_until,
                                                                                reporting):
    role, table, holder = held.role, held.table, held.holder
    reporter = Reporter() if reporting else None
    task = held.task(reporter)
    task.put(people(table, (1, "a"), (2, "b")))
    wait_until(lambda: _copy_waiting(postgresql, role), "the sent COPY to wait for the held key")
    holder.commit()  # the COPY fails: key 1 exists now
    if reporting:
        task.pre_commit({})  # written again, one record a transaction: the refused one reported
        assert postgresql.rows(table) == [(1, "held"), (2, "b")]
        assert [(r.kafka_offset, "duplicate key" in str(e)) for r, e in reporter.reported] == [(0, True)]
    else:
        message = f"records {table}-0@0 to {table}-0@1 failed: duplicate key"
        with pytest.raises(ConnectException, match=message):
            task.pre_commit({})
        # connectd logs a failed pre_commit and reads the records again: the next put() fails the task
        with pytest.raises(ConnectException, match=message):
            task.put(people(table, (1, "a"), (2, "b")))
        assert postgresql.rows(table) == [(1, "held")]


def test_a_sent_put_whose_connection_was_lost_is_retried_by_the_next_put(postgresql, held, wait_until):
    role, table, holder = held.role, held.table, held.holder
    task = held.task(**{"connection.attempts": "1", "max.retries": "3", "retry.backoff.ms": "5"})
    task.put(people(table, (1, "a"), (2, "b")))
    _lose_the_connection_while_the_copy_waits(postgresql, role, holder, wait_until)
    second = people(table, (3, "c"), start=2)
    with pytest.raises(RetriableException):  # finishing the sent put: its connection lost, no new one
        task.put(second)
    assert task.context.retry_timeout_ms == 5
    postgresql.query(f"ALTER ROLE {role} LOGIN")
    task.put(second)  # connectd puts the same records again: the first put's records are written first
    task.pre_commit({})
    assert postgresql.rows(table) == [(1, "a"), (2, "b"), (3, "c")]


def test_a_sent_put_whose_connection_was_lost_at_flush_is_left_to_be_read_again(postgresql, held,
                                                                                   wait_until):
    role, table, holder = held.role, held.table, held.holder
    task = held.task(**{"connection.attempts": "1", "max.retries": "3", "retry.backoff.ms": "5"})
    first = people(table, (1, "a"), (2, "b"))
    task.put(first)
    _lose_the_connection_while_the_copy_waits(postgresql, role, holder, wait_until)
    with pytest.raises(RetriableException):  # nothing is committed; connectd reads the records again
        task.pre_commit({})
    postgresql.query(f"ALTER ROLE {role} LOGIN")
    put_and_flush(task, first)  # as connectd puts them again: written once, not twice
    assert postgresql.rows(table) == [(1, "a"), (2, "b")]


def test_stop_waits_for_a_sent_put_and_logs_its_failure(postgresql, own_role, caplog):
    _role, table = own_role
    task = task_for(postgresql)
    task.put(people(table, (1, "a"), (2, "b")))
    task.put(people(table, (2, "again"), start=2))  # sent, and fails: key 2 is there
    with caplog.at_level("WARNING", logger="connectd_jdbc.task"):
        task.stop()
    assert postgresql.rows(table) == [(1, "a"), (2, "b")]
    assert f"jdbc_write_failed_at_stop: records {table}-0@2 to {table}-0@2" in caplog.text
    assert "read again" in caplog.text
