"""The Delta sink (connectd-delta) next to FileStreamSink, from the same topic, in one run.

N records of JSON with JsonConverter's schema envelope (an order: id, country,
price as Decimal, a Timestamp; ≈420 bytes) in a 4-partition topic of the
embedded broker; a worker in this process (Spark ``local[2]``) runs, one
after the other, each with ``tasks.max=2`` and its own group:

1. FileStreamSink (StringConverter): each value a line of a file, ``put()`` in
   executors;
2. DeltaSink: the values parsed into columns, Parquet files written by the
   executors, one Delta commit per micro-batch with the batch's offsets.

Micro-batches are at most 20,000 records (``sink.batch.max.records``).
Throughput is counted from the group's first committed offset to the one
reaching N, as in bench/sink_executors.py.

Run:  .venv/bin/python bench/delta_sink.py [--records 200000]
Prints a JSON summary (BENCHMARKS.md, "Delta sink", holds the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import runtime_pipeline as rp
from sink_executors import PARTITIONS, until_committed

SCHEMA = {"type": "struct", "name": "order", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "country", "type": "string", "optional": True},
    {"field": "price", "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
     "version": 1, "parameters": {"scale": "2"}},
    {"field": "at", "type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp",
     "version": 1},
]}


def fill(bootstrap: str, topic: str, count: int) -> int:
    """*count* order records into *topic*; their total size in bytes."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    total = 0
    for i in range(count):
        payload = {"id": i, "country": ("fr", "de", "es", "it")[i % 4], "at": 1_795_600_000_000 + i,
                   "price": base64.b64encode((i % 100_000).to_bytes(4, "big")).decode()}
        value = json.dumps({"schema": SCHEMA, "payload": payload}).encode()
        total += len(value)
        while True:
            try:
                producer.produce(topic, value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0
    return total


async def run(herder: Any, bootstrap: str, topic: str, name: str, config: dict[str, str], count: int,
              nbytes: int) -> dict[str, Any]:
    from confluent_kafka import Consumer

    group = Consumer({"bootstrap.servers": bootstrap, "group.id": f"connect-{name}"})
    try:
        began = time.monotonic()
        await herder.put({"name": name, "topics": topic, "tasks.max": "2", **config})
        result = await until_committed(herder, group, topic, name, 2, count, began, nbytes)
        await herder.delete(name)
        return result
    finally:
        group.close()


async def runs(bootstrap: str, spark: Any, tmp: Path, topic: str, count: int, nbytes: int) -> dict[str, Any]:
    # Batches of 20,000 records at most, so that the rate is seen over many commits.
    herder = await rp.started_herder(bootstrap, spark, tmp, **{"sink.batch.max.records": "20000"})
    try:
        file_sink = await run(herder, bootstrap, topic, "bench-file", {
            "connector.class": "FileStreamSink", "file": str(tmp / "out.txt"),
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"}, count, nbytes)
        print("file", json.dumps(file_sink), file=sys.stderr)
        delta = await run(herder, bootstrap, topic, "bench-delta", {
            "connector.class": "DeltaSink", "table.uri": str(tmp / "table")}, count, nbytes)
        print("delta", json.dumps(delta), file=sys.stderr)
    finally:
        await herder.stop()
    from deltalake import DeltaTable

    table = DeltaTable(str(tmp / "table"))
    return {"file_sink": file_sink, "delta_sink": delta, "delta_rows": table.count(), "delta_version": table.version()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from connectd.broker import EmbeddedBroker

    summary: dict[str, Any] = {"records": args.records, "machine": rp.machine_info(), "loadavg_start": rp.loadavg(),
                               "date": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory(prefix="connectd-bench-") as tmp_name, EmbeddedBroker(host="127.0.0.1") as broker:
        tmp, bootstrap, topic = Path(tmp_name), broker.bootstrap_servers, "bench-delta"
        rp.create_topic(bootstrap, topic, PARTITIONS)
        nbytes = fill(bootstrap, topic, args.records)
        summary["bytes_per_record"] = round(nbytes / args.records)
        spark = rp.bench_spark(bootstrap, tmp)
        try:
            summary.update(asyncio.run(runs(bootstrap, spark, tmp, topic, args.records, nbytes)))
        finally:
            rp.bench_spark_stop(spark)
    summary["delta_vs_file"] = round(summary["delta_sink"]["records_per_s"] / summary["file_sink"]["records_per_s"], 2)
    summary["loadavg_end"] = rp.loadavg()
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
