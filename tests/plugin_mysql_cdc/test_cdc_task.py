"""The CDC source task against a real MariaDB with its binlog: snapshot, changes, exact resume, DDL, modes."""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

from connectd_mysql_cdc.task import MySqlSourceTask

from connectd import OffsetStorageReader, SourceTaskContext


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
        resumed = task_for(binlog_mariadb, database, offset=everything[done].source_offset)
        try:
            rest = poll_until(resumed, len(everything) - done - 1)
        finally:
            resumed.stop()
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
                "ts": datetime.datetime(2026, 11, 25, 10, 0, 0, 500000), "y": 2026, "txt": "text",
                "bin": b"\x00\xff", "blb": b"\x01", "e": "y", "s": "a,b", "flag": True,
                "bits": (513).to_bytes(2, "little")}
    snapshot_task = task_for(binlog_mariadb, database)
    try:
        (snapshot,) = poll_until(snapshot_task, 1)
        binlog_mariadb.execute(f"UPDATE {database}.t SET big = -6 WHERE id = 1")
        (change,) = poll_until(snapshot_task, 1)
    finally:
        snapshot_task.stop()
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
