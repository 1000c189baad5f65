"""The JDBC sink (connectd-jdbc) into PostgreSQL and MariaDB, next to the drivers' own bulk loads.

N rows of (id INT, name TEXT ~20 chars, amount DECIMAL(2), at TIMESTAMP), each database on 127.0.0.1:

1. the limit: the driver alone loads the rows, already as Python tuples of
   the values the task sends (Timestamps as the records' instants, in UTC), in
   one transaction (PostgreSQL: psycopg ``COPY … FROM STDIN``; MariaDB:
   PyMySQL's multi-row ``INSERT`` through ``executemany``, 3,000 rows a
   statement). For reference, PostgreSQL also with the Timestamps made naive
   beforehand (not timed), which psycopg formats faster;
2. the task alone: ``JdbcSinkTask.put()`` of the same rows as Connect
   records (struct values with the schema), 500 a call as connectd hands them
   (``consumer.max.poll.records``; ``--put-records`` for other sizes, with
   ``batch.size`` raised to match, so that a call is one statement), each
   call a transaction, then ``pre_commit()`` (which waits for the last one),
   as connectd ends a batch;
3. end to end (PostgreSQL): the rows as JSON with schemas in a 1-partition
   topic of the embedded broker, a worker in this process (Spark
   ``local[2]``) running the connector with ``tasks.max=1``, ``put()`` in a
   Spark executor; counted from the group's first committed offset to the
   one reaching N.

Steps 1 and 2 run ``--repeat`` times, interleaved (limit, then the task, each
into a new table after a CHECKPOINT, so that one run's WAL is not the next
one's work); each ratio is a run's limit over the same round's task, and the
summary gives every run and the medians.

Run:  .venv/bin/python bench/jdbc_sink.py [--records 200000] [--put-records 500 5000] [--repeat 3]
Prints a JSON summary (BENCHMARKS.md, "JDBC sink", holds the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import decimal
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import runtime_pipeline as rp
from sink_executors import until_committed

PG = {"url": "jdbc:postgresql://127.0.0.1:5432/test", "user": "postgres"}
MARIADB = {"url": "jdbc:mariadb://127.0.0.1:3306/test", "user": "root"}
CHUNK = 500
DDL = "(id INT NOT NULL, name TEXT, amount DECIMAL(18, 2) NOT NULL, at TIMESTAMP NOT NULL)"
MARIADB_DDL = "(id INT NOT NULL, name TEXT, amount DECIMAL(18, 2) NOT NULL, at DATETIME(3) NOT NULL)"


def rows(count: int) -> list[tuple[Any, ...]]:
    base = datetime.datetime(2026, 11, 25, tzinfo=datetime.UTC)
    return [(i, f"customer-{i:012d}", decimal.Decimal(i % 100000).scaleb(-2),
             base + datetime.timedelta(milliseconds=i)) for i in range(count)]


def schema() -> Any:
    from connectd import Decimal, Schema, SchemaBuilder, Timestamp

    return (SchemaBuilder.struct().name("payment").field("id", Schema.INT32).field("name", Schema.OPTIONAL_STRING)
            .field("amount", Decimal.schema(2)).field("at", Timestamp.SCHEMA).build())


def records(topic: str, values: list[tuple[Any, ...]]) -> list[Any]:
    from connectd import SinkRecord, Struct

    value_schema = schema()
    return [SinkRecord(topic=topic, kafka_partition=0, key_schema=None, key=None, value_schema=value_schema,
                       value=Struct.from_field_values(value_schema, list(row)), kafka_offset=offset, timestamp=None)
            for offset, row in enumerate(values)]


def connect(kind: str) -> Any:
    if kind == "postgresql":
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=5432, dbname="test", user="postgres")
    import pymysql

    return pymysql.connect(host="127.0.0.1", port=3306, user="root", database="test", charset="utf8mb4")


def execute(kind: str, statement: str) -> None:
    connection = connect(kind)
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement)
        connection.commit()
    finally:
        connection.close()


def new_table(kind: str, table: str) -> None:
    if kind == "postgresql":
        execute(kind, "CHECKPOINT")  # the earlier loads' WAL written out before this one is timed
    execute(kind, f"CREATE TABLE {table} {DDL if kind == 'postgresql' else MARIADB_DDL}")


def raw_load(kind: str, table: str, values: list[tuple[Any, ...]], naive: bool = False) -> float:
    """Seconds for the driver alone to load *values* in one transaction (*naive*: Timestamps without their
    zone, made so before the clock starts)."""
    new_table(kind, table)
    plain = [(i, n, a, at.replace(tzinfo=None)) for i, n, a, at in values] if naive else values
    connection = connect(kind)
    try:
        began = time.perf_counter()
        with connection.cursor() as cursor:
            if kind == "postgresql":
                with cursor.copy(f"COPY {table} (id, name, amount, at) FROM STDIN") as copy:
                    for row in plain:
                        copy.write_row(row)
            else:
                for start in range(0, len(plain), 3000):
                    cursor.executemany(f"INSERT INTO {table} (id, name, amount, at) VALUES (%s, %s, %s, %s)",
                                       plain[start:start + 3000])
        connection.commit()
        return time.perf_counter() - began
    finally:
        connection.close()


def task_load(kind: str, table: str, batch: list[Any], chunk: int = CHUNK) -> float:
    """Seconds for ``JdbcSinkTask.put()`` to write *batch*, *chunk* records a call, and ``pre_commit()``."""
    from connectd_jdbc.task import JdbcSinkTask

    from connectd import SinkTaskContext

    new_table(kind, table)
    database = PG if kind == "postgresql" else MARIADB
    config = {"connection.url": database["url"], "connection.user": database["user"], "table.name.format": table,
              "batch.size": str(max(chunk, 3000))}
    task = JdbcSinkTask()
    task.context = SinkTaskContext(config)
    task.start(config)
    try:
        began = time.perf_counter()
        for start in range(0, len(batch), chunk):
            task.put(batch[start:start + chunk])
        task.pre_commit({})
        return time.perf_counter() - began
    finally:
        task.stop()


def fill_topic(bootstrap: str, topic: str, values: list[tuple[Any, ...]]) -> None:
    import base64

    from confluent_kafka import Producer

    fields = [{"field": "id", "type": "int32", "optional": False},
              {"field": "name", "type": "string", "optional": True},
              {"field": "amount", "type": "bytes", "optional": False, "version": 1,
               "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
              {"field": "at", "type": "int64", "optional": False, "version": 1,
               "name": "org.apache.kafka.connect.data.Timestamp"}]
    envelope_schema = {"type": "struct", "name": "payment", "optional": False, "fields": fields}
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for i, name, amount, at in values:
        unscaled = int(amount.scaleb(2))
        payload = {"id": i, "name": name, "at": int(at.timestamp() * 1000),
                   "amount": base64.b64encode(unscaled.to_bytes(8, "big", signed=True)).decode()}
        while True:
            try:
                producer.produce(topic, json.dumps({"schema": envelope_schema, "payload": payload}).encode(),
                                 partition=0)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


async def end_to_end(bootstrap: str, spark: Any, tmp: Path, topic: str, table: str, count: int) -> dict[str, Any]:
    from confluent_kafka import Consumer

    herder = await rp.started_herder(bootstrap, spark, tmp)
    name = f"bench-jdbc-{table}"
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": f"connect-{name}"})
    try:
        began = time.monotonic()
        await herder.put({"name": name, "connector.class": "JdbcSink", "topics": topic, "tasks.max": "1",
                          "connection.url": PG["url"], "connection.user": PG["user"], "table.name.format": table,
                          "auto.create": "true",
                          "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
        return await until_committed(herder, group, topic, name, 1, count, began, 0, partitions=1)
    finally:
        group.close()
        await herder.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--put-records", type=int, nargs="+", default=[CHUNK],
                        help="records per put() in the task-alone runs (consumer.max.poll.records; default 500)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the limit and the task-alone runs")
    parser.add_argument("--no-end-to-end", action="store_true", help="skip step 3 (Kafka → executor → table)")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    count = args.records
    values = rows(count)
    batch = records("bench", values)
    suffix = uuid.uuid4().hex[:8]
    summary: dict[str, Any] = {"records": count, "machine": rp.machine_info(), "loadavg_start": rp.loadavg(),
                               "date": time.strftime("%Y-%m-%d")}
    tables = []
    try:
        for kind in ("postgresql", "mariadb"):
            runs: dict[str, list[float]] = {"raw": [], **{f"put_{size}": [] for size in args.put_records}}
            ratios: dict[str, list[float]] = {f"put_{size}{naive}": [] for size in args.put_records
                                              for naive in ("", "_naive")}
            for round_ in range(args.repeat):
                raw_table = f"bench_raw_{suffix}_{round_}"
                tables.append((kind, raw_table))
                raw = raw_load(kind, raw_table, values)
                execute(kind, f"DROP TABLE {raw_table}")
                runs["raw"].append(count / raw)
                raw_naive = None
                if kind == "postgresql":
                    raw_naive = raw_load(kind, raw_table, values, naive=True)
                    runs.setdefault("raw_naive", []).append(count / raw_naive)
                    execute(kind, f"DROP TABLE {raw_table}")
                for size in args.put_records:
                    task_table = f"bench_task_{suffix}_{size}_{round_}"
                    tables.append((kind, task_table))
                    task = task_load(kind, task_table, batch, size)
                    execute(kind, f"DROP TABLE {task_table}")
                    runs[f"put_{size}"].append(count / task)
                    ratios[f"put_{size}"].append(raw / task)
                    if raw_naive is not None:
                        ratios[f"put_{size}_naive"].append(raw_naive / task)
            summary[kind] = {"raw_rows_per_s": round(statistics.median(runs["raw"])),
                             "raw_runs": [round(r) for r in runs["raw"]]}
            if "raw_naive" in runs:
                summary[kind]["raw_naive_rows_per_s"] = round(statistics.median(runs["raw_naive"]))
                summary[kind]["raw_naive_runs"] = [round(r) for r in runs["raw_naive"]]
            for size in args.put_records:
                summary[kind][f"task_rows_per_s_put_{size}"] = round(statistics.median(runs[f"put_{size}"]))
                summary[kind][f"task_runs_put_{size}"] = [round(r) for r in runs[f"put_{size}"]]
                summary[kind][f"task_vs_raw_put_{size}"] = round(statistics.median(ratios[f"put_{size}"]), 2)
                summary[kind][f"task_vs_raw_runs_put_{size}"] = [round(r, 2) for r in ratios[f"put_{size}"]]
                if ratios[f"put_{size}_naive"]:
                    summary[kind][f"task_vs_raw_naive_put_{size}"] = round(
                        statistics.median(ratios[f"put_{size}_naive"]), 2)
            print(kind, json.dumps(summary[kind]), file=sys.stderr)

        if not args.no_end_to_end:
            from connectd.broker import EmbeddedBroker

            with tempfile.TemporaryDirectory(prefix="connectd-bench-") as tmp_name, \
                    EmbeddedBroker(host="127.0.0.1") as broker:
                tmp, bootstrap, topic = Path(tmp_name), broker.bootstrap_servers, "bench-jdbc"
                rp.create_topic(bootstrap, topic, 1)
                fill_topic(bootstrap, topic, values)
                spark = rp.bench_spark(bootstrap, tmp)
                try:
                    table = f"bench_e2e_{suffix}"
                    tables.append(("postgresql", table))
                    e2e = asyncio.run(end_to_end(bootstrap, spark, tmp, topic, table, count))
                finally:
                    rp.bench_spark_stop(spark)
            summary["postgresql"]["end_to_end"] = e2e
            summary["postgresql"]["end_to_end_vs_raw"] = round(e2e["records_per_s"] / summary["postgresql"]["raw_rows_per_s"], 2)
    finally:
        for kind, table in tables:
            execute(kind, f"DROP TABLE IF EXISTS {table}")
    summary["loadavg_end"] = rp.loadavg()
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
