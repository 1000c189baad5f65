"""MariaDB → Kafka → PostgreSQL: the CDC source and the JDBC sink in one `connectd standalone` process.

Inserts, updates, deletes and an ALTER TABLE run on MariaDB while the worker
streams them; the worker is SIGKILLed (with Spark's JVM) in the middle and
started again. At the end PostgreSQL's tables equal MariaDB's. A TIMESTAMP
column arrives as Debezium's ZonedTimestamp, an ISO-8601 string in UTC: the
JDBC sink makes it a text column of those strings (as Confluent's does).
"""

from __future__ import annotations

import datetime
import decimal
import json
import random
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ETC = Path(__file__).resolve().parents[2] / "etc" / "connectors"
PG = {"host": "127.0.0.1", "port": 5432, "dbname": "test", "user": "postgres"}


def pg_rows(table: str, columns: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(**PG, autocommit=True) as connection:
        try:
            return [tuple(r) for r in connection.execute(f'SELECT {columns} FROM "{table}" ORDER BY id')]
        except psycopg.errors.UndefinedTable:
            return []


def pg_columns(table: str) -> dict[str, str]:
    """The table's columns and their types."""
    import psycopg

    with psycopg.connect(**PG, autocommit=True) as connection:
        return dict(connection.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s "
            "ORDER BY ordinal_position", (table,)))


def zoned_timestamp(seconds: decimal.Decimal) -> str:
    """A TIMESTAMP(3)'s UNIX_TIMESTAMP() as the events carry it: Debezium's ZonedTimestamp, three digits."""
    whole, fraction = divmod(seconds, 1)
    at = datetime.datetime.fromtimestamp(int(whole), datetime.UTC)
    return f"{at:%Y-%m-%dT%H:%M:%S}.{int(fraction * 1000):03d}Z"


class Writer(threading.Thread):
    """Changes on MariaDB, each its own transaction: a fixed, seeded sequence, with an ALTER TABLE half way."""

    def __init__(self, server, database: str, operations: int) -> None:
        super().__init__(name="mariadb-writer", daemon=True)
        self.server, self.database, self.operations = server, database, operations
        self.done = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            chance = random.Random(7)
            connection = self.server.connect(self.database)
            with connection.cursor() as cursor:
                for step in range(self.operations):
                    if step == self.operations // 2:
                        cursor.execute("ALTER TABLE customers ADD COLUMN tier VARCHAR(10) DEFAULT 'basic'")
                    customer = chance.randrange(400)
                    kind = chance.random()
                    tier = ", tier = 'gold'" if kind < 0.1 else ", tier = NULL" if kind < 0.2 else ""
                    tier = tier if step > self.operations // 2 else ""
                    if kind < 0.5:  # a NULL note is NULL, not the column's default, on both sides
                        cursor.execute("INSERT INTO customers (id, name, balance, seen, note) "
                                       "VALUES (%s, %s, %s, NOW(3), %s) ON DUPLICATE KEY UPDATE name = VALUES(name)",
                                       (customer, f"customer {customer} at {step}", step / 100,
                                        None if kind < 0.25 else f"n{step}"))
                    elif kind < 0.8:
                        cursor.execute(f"UPDATE customers SET balance = balance + 1.25{tier} WHERE id = %s",
                                       (customer,))
                    else:
                        cursor.execute("DELETE FROM customers WHERE id = %s", (customer,))
                    self.done = step + 1
                    time.sleep(0.01)
            connection.close()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            self.error = error


def test_mariadb_to_postgresql_survives_a_sigkill(binlog_mariadb, database, broker, tmp_path: Path, wait_until,
                                                   worker_config, connectd_processes):
    table = f"{database}_customers"
    binlog_mariadb.execute(
        f"CREATE TABLE {database}.customers (id INT PRIMARY KEY, name VARCHAR(60), balance DECIMAL(12, 2), "
        "seen DATETIME(3), note VARCHAR(20) DEFAULT 'none', "
        "changed TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3))",
        f"INSERT INTO {database}.customers (id, name, balance, seen, note) VALUES " + ", ".join(
            f"({i}, 'first {i}', {i}.50, '2026-11-25 10:00:00.{i % 1000:03d}', {'NULL' if i % 4 else 'DEFAULT'})"
            for i in range(0, 400, 2)))
    worker = worker_config.file(**{"task.shutdown.graceful.timeout.ms": "20000"})
    # The example configs in etc/, pointed at this test's server and database.
    source = json.loads((ETC / "mariadb-cdc.json").read_text())
    source["config"].update({"database.port": str(binlog_mariadb.port), "database.include.list": database,
                             "database.server.id": "5401", "poll.interval.ms": "200"})
    sink = json.loads((ETC / "cdc-to-postgresql.json").read_text())
    sink["config"]["topics.regex"] = rf"cdc\.{database}\..*"
    for name, config in (("source.json", source), ("sink.json", sink)):
        (tmp_path / name).write_text(json.dumps(config))
    files = [str(worker), str(tmp_path / "source.json"), str(tmp_path / "sink.json")]
    writer = Writer(binlog_mariadb, database, operations=900)
    process = connectd_processes.start("standalone", *files)
    try:
        wait_until(lambda: len(pg_rows(table, "id")), "the snapshot in PostgreSQL", until=lambda n: n >= 200,
                   timeout=180)
        writer.start()
        wait_until(lambda: writer.done, "the writer under way", until=lambda n: n >= 200, timeout=60)
        connectd_processes.kill(process)  # Spark's JVM included: nothing in flight is committed
        process = connectd_processes.start("standalone", *files)
        writer.join(120)
        assert writer.error is None and writer.done == 900, writer.error

        def differences() -> tuple[list[tuple], list[tuple]]:
            """The rows only MariaDB has, and those only PostgreSQL has (a few of each)."""
            columns = "id, name, balance, seen, note, tier"
            mariadb = {(*row[:-1], zoned_timestamp(row[-1])) for row in binlog_mariadb.query(
                f"SELECT {columns}, UNIX_TIMESTAMP(changed) FROM {database}.customers")}
            pg = set(pg_rows(table, f"{columns}, changed") if "tier" in pg_columns(table) else [])
            return sorted(mariadb - pg)[:3], sorted(pg - mariadb)[:3]

        wait_until(differences, "PostgreSQL to equal MariaDB", until=lambda rows: rows == ([], []), timeout=240)
        assert pg_columns(table)["changed"] == "text"
        assert connectd_processes.terminate(process) == 0
    finally:
        import psycopg

        with psycopg.connect(**PG, autocommit=True) as connection:
            connection.execute(f'DROP TABLE IF EXISTS "{table}"')
