"""The CDC source task against a real MariaDB with its binlog: snapshot, changes, exact resume, DDL, modes."""

from __future__ import annotations

import datetime
import decimal
import json
import logging
from typing import Any

import pytest
from connectd_mysql_cdc.task import MySqlSourceTask

from connectd import (
    Decimal,
    OffsetStorageReader,
    Schema,
    SchemaBuilder,
    SourceTaskContext,
)


def task_for(server, database: str, offset: dict | None = None, **overrides: str) -> MySqlSourceTask:
    config = server.config(**{"database.include.list": database, **overrides})

    def lookup(partitions):
        return {json.dumps(p, sort_keys=True, separators=(",", ":")): offset for p in partitions
                if offset is not None and p == {"server": "cdc"}}

    task = MySqlSourceTask()
    task.context = SourceTaskContext(config, OffsetStorageReader(lookup))
    task.start(config)
    return task


def poll_until(task: MySqlSourceTask, count: int, rounds: int = 100) -> list[Any]:
    """Records from successive polls until there are *count* (a bounded number of polls, each ≤ 0.4 s)."""
    records: list[Any] = []
    for _ in range(rounds):
        records += task.poll() or []
        if len(records) >= count:
            break
    assert len(records) == count, [summary(r) for r in records]
    return records


def summary(record) -> tuple:
    """(op, key id, after as a dict) of a change event; ("tombstone", key id) for a tombstone."""
    key = record.key.get("id") if record.key is not None else None
    if record.value is None:
        return ("tombstone", key)
    after = record.value.get("after")
    shown = {f.name: after.get(f.name) for f in after.schema.fields} if after is not None else None
    return (record.value.get("op"), key, shown)


def test_snapshot_then_every_change_in_order(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.items (id INT PRIMARY KEY, name VARCHAR(20))",
                           f"INSERT INTO {database}.items VALUES (1, 'a'), (2, 'b')")
    task = task_for(binlog_mariadb, database)
    try:
        snapshot = poll_until(task, 2)
        assert [summary(r) for r in snapshot] == [("r", 1, {"id": 1, "name": "a"}), ("r", 2, {"id": 2, "name": "b"})]
        assert [r.value.get("source").get("snapshot") for r in snapshot] == ["true", "last"]
        assert snapshot[0].source_offset["snapshot"] is True and "snapshot" not in snapshot[1].source_offset
        assert snapshot[0].topic == f"cdc.{database}.items" and snapshot[0].source_partition == {"server": "cdc"}
        binlog_mariadb.execute(f"INSERT INTO {database}.items VALUES (3, 'c')",
                               f"UPDATE {database}.items SET name = 'b2' WHERE id = 2",
                               f"DELETE FROM {database}.items WHERE id = 1",
                               f"UPDATE {database}.items SET id = 4 WHERE id = 3")  # the key changes
        changes = poll_until(task, 7)
        assert [summary(r) for r in changes] == [
            ("c", 3, {"id": 3, "name": "c"}), ("u", 2, {"id": 2, "name": "b2"}),
            ("d", 1, None), ("tombstone", 1),
            ("d", 3, None), ("tombstone", 3), ("c", 4, {"id": 4, "name": "c"})]
        update = changes[1].value
        assert update.get("before").get("name") == "b" and update.get("source").get("table") == "items"
        assert update.get("source").get("snapshot") == "false" and update.get("source").get("file").startswith("binlog")
    finally:
        task.stop()


def test_resumes_exactly_after_any_stored_offset(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, v INT)")
    task = task_for(binlog_mariadb, database, **{"snapshot.mode": "no_data"})
    try:
        connection = binlog_mariadb.connect(database)
        with connection.cursor() as cursor:  # one transaction of two multi-row events, then one more
            cursor.execute("BEGIN")
            cursor.execute("INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)")
            cursor.execute("INSERT INTO t VALUES (4, 0), (5, 0)")
            cursor.execute("COMMIT")
            cursor.execute("UPDATE t SET v = 1 WHERE id IN (1, 2)")
        connection.close()
        everything = poll_until(task, 7)
    finally:
        task.stop()
    ids = [(r.value.get("op"), r.key.get("id")) for r in everything]
    assert ids == [("c", 1), ("c", 2), ("c", 3), ("c", 4), ("c", 5), ("u", 1), ("u", 2)]
    for done in range(len(everything)):
        rest = resumed_from(binlog_mariadb, database, everything[done].source_offset, len(everything) - done - 1)
        assert [(r.value.get("op"), r.key.get("id")) for r in rest] == ids[done + 1:], done


def test_a_column_added_while_streaming_is_in_the_next_events(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY)")
    task = task_for(binlog_mariadb, database, **{"snapshot.mode": "no_data"})
    try:
        binlog_mariadb.execute(f"INSERT INTO {database}.t VALUES (1)",
                               f"ALTER TABLE {database}.t ADD COLUMN note VARCHAR(10)",
                               f"INSERT INTO {database}.t VALUES (2, 'new')")
        first, second = poll_until(task, 2)
    finally:
        task.stop()
    assert [f.name for f in first.value.get("after").schema.fields] == ["id"]
    assert summary(second) == ("c", 2, {"id": 2, "note": "new"})


def resumed_from(server, database: str, offset: dict[str, Any], count: int) -> list[Any]:
    """The *count* records a task started from the stored *offset* reads."""
    task = task_for(server, database, offset=offset)
    try:
        return poll_until(task, count)
    finally:
        task.stop()


def snapshot_then_change(server, database: str, statement: str) -> tuple[Any, Any]:
    """The one row of the database read by the snapshot, then the one change *statement* makes, from the binlog."""
    task = task_for(server, database)
    try:
        (snapshot,) = poll_until(task, 1)
        server.execute(statement)
        (change,) = poll_until(task, 1)
    finally:
        task.stop()
    return snapshot, change


def test_types(binlog_mariadb, database):
    binlog_mariadb.execute(
        f"CREATE TABLE {database}.t (id INT UNSIGNED PRIMARY KEY, tiny TINYINT, small SMALLINT UNSIGNED, "
        "big BIGINT, f FLOAT, d DOUBLE, price DECIMAL(10, 2), day DATE, at TIME(3), dt DATETIME(3), "
        "ts TIMESTAMP(3) NULL, y YEAR, txt TEXT, bin VARBINARY(4), blb BLOB, e ENUM('x', 'y'), s SET('a', 'b'), "
        "j JSON, flag BIT(1), bits BIT(10))",
        f"INSERT INTO {database}.t VALUES (1, -3, 60000, -5, 1.5, 2.25, 12.34, '2026-11-25', '10:11:12.5', "
        "'2026-11-25 10:00:00.123', '2026-11-25 10:00:00.5', 2026, 'text', x'00ff', x'01', 'y', 'a,b', "
        "'{\"k\": 1}', b'1', b'1000000001')")
    expected = {"id": 1, "tiny": -3, "small": 60000, "big": -5, "f": 1.5, "d": 2.25, "price": decimal.Decimal("12.34"),
                "day": datetime.date(2026, 11, 25), "at": datetime.time(10, 11, 12, 500000),
                "dt": datetime.datetime(2026, 11, 25, 10, 0, 0, 123000),
                "ts": "2026-11-25T10:00:00.500Z", "y": 2026, "txt": "text",
                "bin": b"\x00\xff", "blb": b"\x01", "e": "y", "s": "a,b", "flag": True,
                "bits": (513).to_bytes(2, "little")}
    snapshot, change = snapshot_then_change(binlog_mariadb, database, f"UPDATE {database}.t SET big = -6 WHERE id = 1")
    for record, big in ((snapshot, -5), (change, -6)):
        after = summary(record)[2]
        assert json.loads(after.pop("j")) == {"k": 1}
        assert after == {**expected, "big": big}
    # the snapshot and the binlog describe the table with the same schema
    assert snapshot.value.get("after").schema == change.value.get("after").schema
    assert snapshot.key_schema == change.key_schema


def test_filters_and_snapshot_modes(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.kept (id INT PRIMARY KEY)",
                           f"CREATE TABLE {database}.other (id INT PRIMARY KEY)",
                           f"INSERT INTO {database}.kept VALUES (1)", f"INSERT INTO {database}.other VALUES (1)")
    only_kept = {"table.include.list": rf"{database}\.kept"}
    task = task_for(binlog_mariadb, database, **only_kept)
    try:
        assert [r.topic for r in poll_until(task, 1)] == [f"cdc.{database}.kept"]
    finally:
        task.stop()
    task = task_for(binlog_mariadb, database, **only_kept, **{"snapshot.mode": "never"})  # the binlog from its start
    try:
        assert [summary(r) for r in poll_until(task, 1, rounds=300)] == [("c", 1, {"id": 1})]
    finally:
        task.stop()
    task = task_for(binlog_mariadb, database, **only_kept, **{"snapshot.mode": "schema_only"})  # from now on
    try:
        assert task.poll() is None
        binlog_mariadb.execute(f"INSERT INTO {database}.kept VALUES (2)", f"INSERT INTO {database}.other VALUES (2)")
        assert [summary(r) for r in poll_until(task, 1)] == [("c", 2, {"id": 2})]
    finally:
        task.stop()


def test_when_needed_takes_a_new_snapshot_when_the_stored_binlog_is_gone(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY)", f"INSERT INTO {database}.t VALUES (7)")
    gone = {"file": "binlog.000000", "pos": 4, "event": 0, "row": 0}
    task = task_for(binlog_mariadb, database, offset=gone, **{"snapshot.mode": "when_needed"})
    try:
        assert [summary(r) for r in poll_until(task, 1)] == [("r", 7, {"id": 7})]
    finally:
        task.stop()


def test_unfinished_snapshot_is_read_again(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY)",
                           f"INSERT INTO {database}.t VALUES (1), (2), (3)")
    first = task_for(binlog_mariadb, database, **{"max.batch.size": "1"})
    try:
        (one,) = first.poll()
    finally:
        first.stop()
    again = task_for(binlog_mariadb, database, offset=one.source_offset)
    try:
        assert [summary(r)[:2] for r in poll_until(again, 3)] == [("r", 1), ("r", 2), ("r", 3)]
    finally:
        again.stop()


def test_excluded_tables_and_columns_never_leave_the_database(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.users (id INT PRIMARY KEY, name VARCHAR(20), ssn VARCHAR(11))",
                           f"CREATE TABLE {database}.secrets (id INT PRIMARY KEY)",
                           f"INSERT INTO {database}.users VALUES (1, 'ada', '123-45-6789')",
                           f"INSERT INTO {database}.secrets VALUES (1)")
    task = task_for(binlog_mariadb, database, **{"table.exclude.list": rf"{database}\.secrets",
                                                 "column.exclude.list": rf"{database}\.users\.ssn"})
    try:
        assert [summary(r) for r in poll_until(task, 1)] == [("r", 1, {"id": 1, "name": "ada"})]
        binlog_mariadb.execute(f"INSERT INTO {database}.users VALUES (2, 'bob', '987-65-4321')",
                               f"INSERT INTO {database}.secrets VALUES (2)")
        assert [summary(r) for r in poll_until(task, 1)] == [("c", 2, {"id": 2, "name": "bob"})]
    finally:
        task.stop()


def test_include_and_exclude_lists_of_one_kind_are_refused():
    from connectd_mysql_cdc.connector import MySqlConnector

    problems = MySqlConnector().validate({"table.include.list": "a\\.b", "table.exclude.list": "a\\.c"})
    assert [(p.key, p.message) for p in problems] == [
        ("table.exclude.list", "cannot be used with table.include.list: set one of them")]


def snapshot_then_streamed(server, database: str, table: str, rows: list[str], **overrides: str) -> tuple[list, list]:
    """The *rows* (VALUES tuples, first column the id) read by the snapshot, then inserted again with ids + 100
    and read from the binlog: the after structs of both, as dicts without the id."""
    server.execute(*(f"INSERT INTO {database}.{table} VALUES {row}" for row in rows))
    task = task_for(server, database, **overrides)
    try:
        snapshot = poll_until(task, len(rows))
        server.execute(*(f"INSERT INTO {database}.{table} VALUES {row.replace('(', '(100 + ', 1)}" for row in rows))
        streamed = poll_until(task, len(rows))
    finally:
        task.stop()
    assert [r.value.get("op") for r in snapshot + streamed] == ["r"] * len(rows) + ["c"] * len(rows)
    return ([{k: v for k, v in summary(r)[2].items() if k != "id"} for r in snapshot],
            [{k: v for k, v in summary(r)[2].items() if k != "id"} for r in streamed])


def test_bigint_unsigned_beyond_int64_wraps_or_is_a_decimal(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, b BIGINT UNSIGNED)")
    rows = ["(1, 18446744073709551615)", "(2, 9223372036854775808)", "(3, 9223372036854775807)"]
    snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows)
    assert snapshot == streamed == [{"b": -1}, {"b": -2**63}, {"b": 2**63 - 1}]  # long (default): value - 2^64
    binlog_mariadb.execute(f"DELETE FROM {database}.t")
    snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows,
                                                **{"bigint.unsigned.handling.mode": "precise"})
    assert snapshot == streamed == [{"b": decimal.Decimal(2**64 - 1)}, {"b": decimal.Decimal(2**63)},
                                    {"b": decimal.Decimal(2**63 - 1)}]


def test_bigint_unsigned_precise_is_a_decimal_of_scale_0(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, b BIGINT UNSIGNED)",
                           f"INSERT INTO {database}.t VALUES (1, 1)")
    for mode, expected in (("long", Schema.OPTIONAL_INT64), ("precise", Decimal.builder(0).optional().build())):
        task = task_for(binlog_mariadb, database, **{"bigint.unsigned.handling.mode": mode})
        try:
            (record,) = poll_until(task, 1)
        finally:
            task.stop()
        assert record.value.get("after").schema.field("b").schema == expected, mode


def test_a_time_outside_a_day_is_null_and_a_warning(binlog_mariadb, database, caplog):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, tm TIME(1) NULL)")
    rows = ["(1, '-01:00:00')", "(2, '25:00:00.5')", "(3, '23:59:59.5')"]
    with caplog.at_level(logging.WARNING, logger="connectd_mysql_cdc"):
        snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows)
    assert snapshot == streamed == [{"tm": None}, {"tm": None}, {"tm": datetime.time(23, 59, 59, 500000)}]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 4, warnings
    for value in ("'-01:00:00'", "'25:00:00.5'"):
        assert sum(f"{database}.t.tm: TIME {value} is outside 00:00-24:00" in w for w in warnings) == 2, warnings


def test_set_members_in_the_columns_order_and_the_empty_set(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, s SET('z', 'a', 'm') NULL)")
    rows = ["(1, 'a,z')", "(2, 'm,a,z')", "(3, '')", "(4, NULL)"]
    snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows)
    assert snapshot == streamed == [{"s": "z,a"}, {"s": "z,a,m"}, {"s": ""}, {"s": None}]


def test_decimal_string_mode_is_plain_with_the_columns_scale(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, d DECIMAL(20, 8))")
    rows = ["(1, 0.00000010)", "(2, 12345678.5)", "(3, -0.00000001)", "(4, 0)"]
    snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows,
                                                **{"decimal.handling.mode": "string"})
    assert snapshot == streamed == [{"d": "0.00000010"}, {"d": "12345678.50000000"}, {"d": "-0.00000001"},
                                    {"d": "0.00000000"}]


def test_binary_keeps_its_trailing_zero_bytes_and_varbinary_is_not_padded(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, b BINARY(4), vb VARBINARY(4))")
    rows = ["(1, x'61000000', x'0100')", "(2, x'ff', x'ff')", "(3, x'00000000', x'')"]
    snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows)
    assert snapshot == streamed == [{"b": b"a\0\0\0", "vb": b"\x01\x00"}, {"b": b"\xff\0\0\0", "vb": b"\xff"},
                                    {"b": b"\0\0\0\0", "vb": b""}]


def test_a_binary_primary_key_is_the_same_kafka_key_in_the_snapshot_and_the_binlog(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id BINARY(16) PRIMARY KEY, v INT)",
                           f"INSERT INTO {database}.t VALUES (x'0102030405060708090a0b0c0d0e0f00', 1)")
    snapshot, update = snapshot_then_change(binlog_mariadb, database, f"UPDATE {database}.t SET v = 2")
    assert update.value.get("op") == "u"
    assert snapshot.key == update.key and snapshot.key.get("id") == bytes(range(1, 16)) + b"\0"


def test_zero_dates_are_null_when_nullable_and_the_epoch_when_not_null(binlog_mariadb, database):
    # the default sql_mode refuses zero dates; TIMESTAMPs as UTC, as the task reads them
    session = ("SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'")
    binlog_mariadb.execute(*session, f"CREATE TABLE {database}.t (id INT PRIMARY KEY, d DATE NOT NULL, "
                           "dt DATETIME(3) NOT NULL, ts TIMESTAMP(3) NOT NULL DEFAULT '0000-00-00 00:00:00', "
                           "dn DATE NULL, dtn DATETIME NULL, tsn TIMESTAMP NULL)")
    zero, zero_time = "'0000-00-00'", "'0000-00-00 00:00:00'"
    rows = [f"(1, {zero}, {zero_time}, {zero_time}, {zero}, {zero_time}, {zero_time})",
            "(2, '2020-00-00', '2020-01-00 00:00:00', 0, '2020-00-00', '2020-01-00 00:00:00', 0)",
            ("(3, '1970-01-01', '1970-01-01 00:00:00', '1970-01-01 00:00:01', '1970-01-01', '1970-01-01 00:00:00', "
             "'1970-01-01 00:00:01')")]
    binlog_mariadb.execute(*session, *(f"INSERT INTO {database}.t VALUES {row}" for row in rows))
    task = task_for(binlog_mariadb, database)
    try:
        snapshot = poll_until(task, 3)
        binlog_mariadb.execute(*session, *(f"INSERT INTO {database}.t VALUES {row.replace('(', '(10 + ', 1)}"
                                           for row in rows))
        streamed = poll_until(task, 3)
    finally:
        task.stop()
    epoch = datetime.datetime(1970, 1, 1)
    # a NOT NULL TIMESTAMP's epoch is Debezium's "1970-01-01T00:00:00Z", without a fraction whatever its precision
    zeros = {"d": epoch.date(), "dt": epoch, "ts": "1970-01-01T00:00:00Z", "dn": None, "dtn": None, "tsn": None}
    real = {"d": epoch.date(), "dt": epoch, "ts": "1970-01-01T00:00:01.000Z", "dn": epoch.date(), "dtn": epoch,
            "tsn": "1970-01-01T00:00:01Z"}
    expected = [zeros, zeros, real]  # and a real 1970-01-01 00:00:00 DATETIME is not taken for a zero one
    for records in (snapshot, streamed):
        assert [{k: v for k, v in summary(r)[2].items() if k != "id"} for r in records] == expected


def zoned(default: str | None = None, optional: bool = True) -> Schema:
    builder = SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").version(1)
    if default is not None:
        builder.default_value(default)
    return (builder.optional() if optional else builder).build()


def test_timestamps_are_debeziums_zoned_timestamps_in_utc_whatever_the_servers_time_zone(binlog_mariadb, database):
    # Debezium (BinlogValueConverters, ZonedTimestamp.toIsoString): ISO-8601 in UTC, a TIMESTAMP(n) with n
    # fractional digits, a TIMESTAMP with none. The server's time zone is +05:00 here (its sessions' too): the
    # values, keys and defaults are still the instants in UTC, in the snapshot and the binlog alike.
    binlog_mariadb.execute("SET GLOBAL time_zone = '+05:00'")
    try:
        binlog_mariadb.execute(
            f"CREATE TABLE {database}.t (id INT PRIMARY KEY, t0 TIMESTAMP NULL, t3 TIMESTAMP(3) NULL, "
            "t6 TIMESTAMP(6) NULL DEFAULT '2024-01-02 08:04:05.5')")
        rows = ["(1, '2024-01-02 08:04:05', '2024-01-02 08:04:05.12', '2024-01-02 08:04:05.123456')",
                "(2, '2024-01-02 08:04:06', '2024-01-02 08:04:06', '2024-01-02 08:04:06')", "(3, NULL, NULL, '2038-01-19 08:14:07.999999')"]
        snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows)
        assert snapshot == streamed == [
            {"t0": "2024-01-02T03:04:05Z", "t3": "2024-01-02T03:04:05.120Z", "t6": "2024-01-02T03:04:05.123456Z"},
            {"t0": "2024-01-02T03:04:06Z", "t3": "2024-01-02T03:04:06.000Z", "t6": "2024-01-02T03:04:06.000000Z"},
            {"t0": None, "t3": None, "t6": "2038-01-19T03:14:07.999999Z"}]
        binlog_mariadb.execute(f"DELETE FROM {database}.t WHERE id <> 1")
        snapshot, update = snapshot_then_change(
            binlog_mariadb, database, f"UPDATE {database}.t SET t0 = '2024-01-02 08:04:07' WHERE id = 1")
        assert after_fields(snapshot) == after_fields(update) == {
            "id": Schema.INT32, "t0": zoned(), "t3": zoned(), "t6": zoned("2024-01-02T03:04:05.500000Z")}
        assert update.value.get("after").get("t0") == "2024-01-02T03:04:07Z"
        # a TIMESTAMP primary key: the same Kafka key in the snapshot and the binlog
        binlog_mariadb.execute(f"DROP TABLE {database}.t",
                               f"CREATE TABLE {database}.k (id TIMESTAMP(3) PRIMARY KEY, v INT)",
                               f"INSERT INTO {database}.k VALUES ('2024-01-02 08:04:05.25', 1)")
        snapshot, update = snapshot_then_change(binlog_mariadb, database, f"UPDATE {database}.k SET v = 2")
        assert snapshot.key == update.key and update.key.get("id") == "2024-01-02T03:04:05.250Z"
        assert snapshot.key_schema.field("id").schema == zoned(optional=False)
    finally:
        binlog_mariadb.execute("SET GLOBAL time_zone = '+00:00'")


def two_table_transaction(server, database: str) -> tuple[list[Any], tuple[str, int]]:
    """A transaction of row events in two tables (each statement with its own table map), then one more
    change; its records as read from the binlog, and the server's binlog position from just before it."""
    server.execute(f"CREATE TABLE {database}.a (id INT PRIMARY KEY, v INT)",
                   f"CREATE TABLE {database}.b (id INT PRIMARY KEY, v INT)")
    task = task_for(server, database, **{"snapshot.mode": "no_data"})
    try:
        (before,) = server.query("SHOW MASTER STATUS")[:1]
        connection = server.connect(database)
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("INSERT INTO a VALUES (1, 0), (2, 0)")
            cursor.execute("INSERT INTO b VALUES (1, 0)")
            cursor.execute("UPDATE a SET v = 1")
            cursor.execute("INSERT INTO b VALUES (2, 0), (3, 0)")
            cursor.execute("COMMIT")
            cursor.execute("INSERT INTO a VALUES (3, 0)")
        connection.close()
        records = poll_until(task, 8)
    finally:
        task.stop()
    return records, (before[0], int(before[1]))


def changes(records: list[Any]) -> list[tuple[str, str, int]]:
    return [(r.value.get("source").get("table"), r.value.get("op"), r.key.get("id")) for r in records]


def test_resumes_exactly_after_each_record_of_a_transaction_over_two_tables(binlog_mariadb, database):
    everything, _ = two_table_transaction(binlog_mariadb, database)
    assert changes(everything) == [("a", "c", 1), ("a", "c", 2), ("b", "c", 1), ("a", "u", 1), ("a", "u", 2),
                                   ("b", "c", 2), ("b", "c", 3), ("a", "c", 3)]
    for done in range(len(everything)):
        rest = resumed_from(binlog_mariadb, database, everything[done].source_offset, len(everything) - done - 1)
        assert changes(rest) == changes(everything)[done + 1:], done


def test_offsets_are_debeziums_and_a_debezium_offset_resumes_right_after_its_record(binlog_mariadb, database):
    everything, (file, start) = two_table_transaction(binlog_mariadb, database)
    # What Debezium's MariaDB connector writes (BinlogStreamingChangeEventSource.handleEvent and
    # BinlogOffsetContext): file/pos of the transaction's GTID event, which starts it; event = the events of
    # the transaction completed before the record's, every one counted (the GTID event and each table map
    # included); row = the rows of the record's event done, this one included. ANNOTATE_ROWS events are in the
    # file but are sent to a replica only if it asks for them, which neither connectd nor Debezium (with
    # include.query off) does.
    events = [(int(pos), kind) for _, pos, kind, *_ in binlog_mariadb.query(f"SHOW BINLOG EVENTS IN '{file}' "
                                                                            f"FROM {start}")
              if kind != "Annotate_rows"]
    assert [kind for _, kind in events[:10]] == ["Gtid", "Table_map", "Write_rows_v1", "Table_map", "Write_rows_v1",
                                                 "Table_map", "Update_rows_v1", "Table_map", "Write_rows_v1", "Xid"]
    gtid_pos = events[0][0]
    expected = [(2, 1), (2, 2), (4, 1), (6, 1), (6, 2), (8, 1), (8, 2)]  # (event, row) of each record
    transaction = everything[:7]
    assert [(r.source_offset["file"], r.source_offset["pos"], r.source_offset["event"], r.source_offset["row"])
            for r in transaction] == [(file, gtid_pos, event, row) for event, row in expected]
    for done, (event, row) in enumerate(expected):
        debezium = {"file": file, "pos": gtid_pos, "event": event, "row": row, "server_id": 1,
                    "ts_sec": transaction[done].source_offset["ts_sec"]}
        rest = resumed_from(binlog_mariadb, database, debezium, len(everything) - done - 1)
        assert changes(rest) == changes(everything)[done + 1:], done


def after_fields(record) -> dict[str, Schema]:
    return {f.name: f.schema for f in record.value.get("after").schema.fields}


def test_not_null_columns_are_required_and_fields_have_the_columns_defaults(binlog_mariadb, database, caplog):
    # Debezium's rules (BinlogDefaultValueConverter): CURRENT_TIMESTAMP is the epoch in a DATETIME and in a NOT
    # NULL TIMESTAMP, a zero date no default in a nullable column and the epoch in a NOT NULL one, an expression
    # no default, a default the field cannot hold (a TIME of -1 h) no default and a warning.
    binlog_mariadb.execute(
        "SET SESSION sql_mode = ''",
        f"CREATE TABLE {database}.t (id INT NOT NULL DEFAULT 7 PRIMARY KEY, n INT NOT NULL DEFAULT 5, "
        "must VARCHAR(10) NOT NULL, quoted VARCHAR(20) DEFAULT 'it''s\\n\\\\', "
        "dt DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), "
        "ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, "
        "tsn TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP, dtn DATETIME NULL DEFAULT NOW(), "
        "d0 DATE NOT NULL DEFAULT '0000-00-00', d0n DATE NULL DEFAULT '0000-00-00', d DATE NOT NULL DEFAULT '2000-01-02', "
        "bits BIT(10) DEFAULT b'1000000001', flag BIT(1) NOT NULL DEFAULT 1, e ENUM('x', 'y') NOT NULL DEFAULT 'y', "
        "s SET('a', 'b') DEFAULT 'b,a', price DECIMAL(5, 2) DEFAULT 1.5, dbl DOUBLE DEFAULT 1e3, "
        "tm TIME DEFAULT '10:00:00', tmx TIME DEFAULT '-01:00:00', expr INT DEFAULT (1 + 1), y YEAR DEFAULT 2020, "
        "blb BLOB DEFAULT 'abc', bin BINARY(4) DEFAULT 'ab', big BIGINT UNSIGNED DEFAULT 18446744073709551615, "
        "yes TINYINT DEFAULT TRUE, u UUID NOT NULL DEFAULT '01020304-0506-0708-090a-0b0c0d0e0f10', "
        "ip INET6 NOT NULL DEFAULT '::1', plain INT)",
        # a zero date in a NOT NULL column is its default (Debezium's convertValue), else the epoch
        f"INSERT INTO {database}.t (must, d0, d0n, d) VALUES ('m', '0000-00-00', '0000-00-00', '0000-00-00')")
    epoch = datetime.datetime(1970, 1, 1)
    expected = {  # field → (required, default)
        "id": (True, 7), "n": (True, 5), "must": (True, None), "quoted": (False, "it's\n\\"), "dt": (True, epoch),
        "ts": (True, "1970-01-01T00:00:00Z"), "tsn": (False, None), "dtn": (False, epoch), "d0": (True, epoch.date()),
        "d0n": (False, None), "d": (True, datetime.date(2000, 1, 2)), "bits": (False, (513).to_bytes(2, "little")),
        "flag": (True, True), "e": (True, "y"), "s": (False, "a,b"), "price": (False, decimal.Decimal("1.50")),
        "dbl": (False, 1000.0), "tm": (False, datetime.time(10)), "tmx": (False, None), "expr": (False, None),
        "y": (False, 2020), "blb": (False, b"abc"), "bin": (False, b"ab\0\0"), "big": (False, -1), "yes": (False, 1),
        "u": (True, None),  # Debezium's UUID converter takes no text default: none
        "ip": (True, "::1"), "plain": (False, None)}
    task = task_for(binlog_mariadb, database)
    try:
        with caplog.at_level(logging.WARNING, logger="connectd_mysql_cdc"):
            (snapshot,) = poll_until(task, 1)
        binlog_mariadb.execute("SET SESSION sql_mode = ''", f"INSERT INTO {database}.t (id, must, d0, d0n, d) "
                               "VALUES (8, 'm', '0000-00-00', '0000-00-00', '0000-00-00')")
        (streamed,) = poll_until(task, 1)
    finally:
        task.stop()
    assert after_fields(snapshot) == after_fields(streamed)  # the binlog's defaults come from information_schema
    assert snapshot.key_schema == streamed.key_schema and snapshot.key_schema.field("id").schema.default_value == 7
    for record in (snapshot, streamed):
        assert {name: (not schema.optional, schema.default_value)
                for name, schema in after_fields(record).items()} == expected
        after = record.value.get("after")
        assert (after.get("must"), after.get("d0"), after.get("d0n"), after.get("d")) == (
            "m", epoch.date(), None, datetime.date(2000, 1, 2))
    assert any("mysql_default_unconvertible" in r.getMessage() and "tmx" in r.getMessage() for r in caplog.records)


def test_defaults_follow_alter_table_while_streaming(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY)")
    task = task_for(binlog_mariadb, database, **{"snapshot.mode": "no_data"})
    try:
        binlog_mariadb.execute(f"INSERT INTO {database}.t VALUES (1)",
                               f"ALTER TABLE {database}.t ADD COLUMN level INT NOT NULL DEFAULT 3",
                               f"INSERT INTO {database}.t VALUES (2, 4)")
        first, added = poll_until(task, 2)
        # the table map is the same after this one: the ALTER TABLE in the binlog makes the defaults read again
        binlog_mariadb.execute(f"ALTER TABLE {database}.t ALTER COLUMN level SET DEFAULT 9",
                               f"INSERT INTO {database}.t VALUES (3, 5)")
        (changed,) = poll_until(task, 1)
        binlog_mariadb.execute(f"ALTER TABLE {database}.t ADD COLUMN must VARCHAR(5) NOT NULL",
                               f"INSERT INTO {database}.t VALUES (4, 6, 'x')")
        (without,) = poll_until(task, 1)
    finally:
        task.stop()
    assert list(after_fields(first)) == ["id"]
    level = after_fields(added)["level"]
    assert (level.optional, level.default_value) == (False, 3)
    assert after_fields(changed)["level"].default_value == 9
    must = after_fields(without)["must"]  # MariaDB fills the rows there with '', but the column has no default
    assert (must.optional, must.default_value) == (False, None)


def test_enum_set_and_year_have_debeziums_semantic_schemas(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, e ENUM('a,b', 'c\\\\d', 'x'), "
                           "s SET('p', 'q\\\\r') NOT NULL, y YEAR, j JSON)")
    rows = ["(1, 'a,b', 'q\\\\r,p', 2026, '[1]')", "(2, 'c\\\\d', '', NULL, NULL)"]
    snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows)
    assert snapshot == streamed == [{"e": "a,b", "s": "p,q\\r", "y": 2026, "j": "[1]"},
                                    {"e": "c\\d", "s": "", "y": None, "j": None}]
    task = task_for(binlog_mariadb, database)
    try:
        fields = after_fields(poll_until(task, 4)[0])
    finally:
        task.stop()
    # Debezium's EnumeratedValues: the labels comma-separated, "," and "\" escaped with "\"
    assert fields["e"] == SchemaBuilder.string().name("io.debezium.data.Enum").version(1) \
        .parameter("allowed", "a\\,b,c\\\\d,x").optional().build()
    assert fields["s"] == SchemaBuilder.string().name("io.debezium.data.EnumSet").version(1) \
        .parameter("allowed", "p,q\\\\r").build()
    assert fields["y"] == SchemaBuilder.int32().name("io.debezium.time.Year").version(1).optional().build()
    # MariaDB's JSON is a LONGTEXT (SHOW CREATE TABLE says so): a plain string, as in Debezium's events
    assert fields["j"] == Schema.OPTIONAL_STRING


def test_mysql_json_columns_are_io_debezium_data_json():
    from connectd_mysql_cdc.config import settings
    from connectd_mysql_cdc.schemas import ColumnSpec, TableSchema

    config = settings({"database.hostname": "h", "database.user": "u", "database.server.id": "1",
                       "topic.prefix": "cdc"})
    table = TableSchema(config, "db", "t", [ColumnSpec("id", "int", primary=True, nullable=False),
                                            ColumnSpec("j", "json")])
    assert table.value_schema.field("j").schema == \
        SchemaBuilder.string().name("io.debezium.data.Json").version(1).optional().build()


def test_uuid_inet6_and_inet4_columns_read_as_mariadb_writes_them(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, u UUID NOT NULL, ip INET6, ip4 INET4)")
    addresses = ["::", "::1", "1::", "::ffff:1.2.3.4", "::1.2.3.4", "::ffff:0.0.0.1", "2001:db8::ff00:42:8329",
                 "1:0:0:1::", "fe80::1:0:0:0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"]
    uuids = ["01020304-0506-0708-090a-0b0c0d0e0f00", "00000000-0000-0000-0000-000000000000",
             "7961fcd3-e95e-11f1-91c1-02fc00000001", "ffffffff-ffff-ffff-ffff-ffffffffffff"]
    fours = ["0.0.0.0", "10.0.0.1", "255.255.255.255"]
    rows = [f"({i}, '{uuids[i % len(uuids)]}', '{address}', '{fours[i % len(fours)]}')"
            for i, address in enumerate(addresses)] + ["(99, UUID(), NULL, NULL)"]
    snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows)
    # the snapshot reads MariaDB's own text; the binlog the bytes the types are stored as
    assert [r["ip"] for r in snapshot[:-1]] == addresses
    assert snapshot[:-1] == streamed[:-1] == [
        {"u": uuids[i % len(uuids)], "ip": address, "ip4": fours[i % len(fours)]} for i, address in enumerate(addresses)]
    assert streamed[-1]["ip"] is None and len(streamed[-1]["u"]) == 36
    binlog_mariadb.execute(f"CREATE TABLE {database}.k (id UUID PRIMARY KEY, v INT)",
                           f"INSERT INTO {database}.k VALUES ('01020304-0506-0708-090a-0b0c0d0e0f00', 1)")
    binlog_mariadb.execute(f"DROP TABLE {database}.t")
    snapshot, update = snapshot_then_change(binlog_mariadb, database, f"UPDATE {database}.k SET v = 2")
    assert snapshot.key == update.key and update.key.get("id") == "01020304-0506-0708-090a-0b0c0d0e0f00"
    assert snapshot.key_schema.field("id").schema == SchemaBuilder.string().name("io.debezium.data.Uuid").version(1) \
        .build()
    assert after_fields(snapshot) == after_fields(update)
    assert after_fields(update)["id"] == snapshot.key_schema.field("id").schema


def test_a_jdbc_sink_makes_not_null_columns_with_defaults_and_refuses_one_without(binlog_mariadb, database):
    """What etc/connectors/cdc-to-postgresql.json does with the events (as Confluent's JDBC sink with Debezium's):
    semantic types are their base types, NOT NULL columns come with their defaults, and a NOT NULL column
    added without a default cannot be added (rows there would have no value)."""
    import psycopg
    from connectd_jdbc.task import JdbcSinkTask
    from connectd_mysql_cdc.unwrap import ExtractNewRecordState

    from connectd import ConnectException, SinkRecord, SinkTaskContext, TopicPartition

    target = f"{database}_t"
    binlog_mariadb.execute("SET time_zone = '+00:00'",
                           f"CREATE TABLE {database}.t (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL DEFAULT 'anon', "
                           "e ENUM('x', 'y') NOT NULL DEFAULT 'x', s SET('a', 'b'), y YEAR, u UUID, ip INET6, "
                           "at TIMESTAMP(3) NULL DEFAULT '2026-01-01 00:00:00')",
                           f"INSERT INTO {database}.t VALUES (1, 'ada', 'y', 'a,b', 2026, "
                           "'01020304-0506-0708-090a-0b0c0d0e0f10', '::1', '2026-11-25 10:00:00.5')")
    unwrap = ExtractNewRecordState()
    unwrap.configure({})
    sink_config = {"connection.url": "jdbc:postgresql://127.0.0.1:5432/test", "connection.user": "postgres",
                   "insert.mode": "upsert", "pk.mode": "record_key", "auto.create": "true", "auto.evolve": "true"}
    sink = JdbcSinkTask()
    sink.context = SinkTaskContext(sink_config, [TopicPartition(target, 0)])
    sink.start(sink_config)
    offset = 0

    def put(records: list[Any]) -> None:
        nonlocal offset
        for source in records:
            offset += 1
            sink.put([unwrap.apply(SinkRecord(topic=target, kafka_partition=0, key_schema=source.key_schema,
                                              key=source.key, value_schema=source.value_schema, value=source.value,
                                              kafka_offset=offset, timestamp=None))])

    def pg(sql: str, *arguments: Any) -> list[tuple]:
        with psycopg.connect(host="127.0.0.1", port=5432, dbname="test", user="postgres", autocommit=True) as c:
            found = c.execute(sql, arguments or None)
            return [tuple(r) for r in found] if found.description else []

    columns = ("SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns "
               "WHERE table_name = %s ORDER BY ordinal_position")
    task = task_for(binlog_mariadb, database)
    try:
        put(poll_until(task, 1))
        # A field with a default makes a nullable column with that default (as Confluent's sink does); a
        # TIMESTAMP, a ZonedTimestamp string, is a text column of those strings (as with Confluent's sink).
        assert pg(columns, target) == [("id", "integer", "NO", None), ("name", "text", "YES", "'anon'::text"),
                               ("e", "text", "YES", "'x'::text"), ("s", "text", "YES", None),
                               ("y", "integer", "YES", None), ("u", "text", "YES", None), ("ip", "text", "YES", None),
                               ("at", "text", "YES", "'2026-01-01T00:00:00.000Z'::text")]
        binlog_mariadb.execute(f"ALTER TABLE {database}.t ADD COLUMN level INT NOT NULL DEFAULT 3",
                               f"INSERT INTO {database}.t (id, level) VALUES (2, 4)")
        put(poll_until(task, 1))
        assert pg(columns, target)[-1] == ("level", "integer", "YES", "3")
        assert pg(f'SELECT * FROM "{target}" ORDER BY id') == [
            (1, "ada", "y", "a,b", 2026, "01020304-0506-0708-090a-0b0c0d0e0f10", "::1", "2026-11-25T10:00:00.500Z", 3),
            (2, "anon", "x", None, None, None, None, "2026-01-01T00:00:00.000Z", 4)]
        binlog_mariadb.execute(f"ALTER TABLE {database}.t ADD COLUMN must INT NOT NULL",
                               f"INSERT INTO {database}.t (id, must) VALUES (3, 5)")
        with pytest.raises(ConnectException, match="cannot add column must .* required and has no default"):
            put(poll_until(task, 1))
    finally:
        task.stop()
        sink.stop()
        pg(f'DROP TABLE IF EXISTS "{target}"')


def test_utf16_utf32_and_latin1_enum_labels_read_from_the_binlog_as_in_the_snapshot(binlog_mariadb, database):
    binlog_mariadb.execute(f"CREATE TABLE {database}.t (id INT PRIMARY KEY, a VARCHAR(10) CHARACTER SET utf16, "
                           "b VARCHAR(10) CHARACTER SET ucs2, c VARCHAR(10) CHARACTER SET utf32, "
                           "d VARCHAR(10) CHARACTER SET utf16le, e ENUM('ä', 'b'), s SET('ö', 'x')) CHARACTER SET latin1")
    rows = ["(1, 'héllo€', 'héllo€', 'héllo😀', 'hé€', 'ä', 'x,ö')", "(2, NULL, '', 'x', 'y', 'b', '')"]
    snapshot, streamed = snapshot_then_streamed(binlog_mariadb, database, "t", rows)
    assert snapshot == streamed == [{"a": "héllo€", "b": "héllo€", "c": "héllo😀", "d": "hé€", "e": "ä", "s": "ö,x"},
                                    {"a": None, "b": "", "c": "x", "d": "y", "e": "b", "s": ""}]
