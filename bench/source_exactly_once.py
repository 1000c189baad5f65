"""FileStreamSource → Kafka with exactly-once delivery on and off, in one run, beside raw confluent-kafka
and quixstreams, on the embedded broker.

One run, one broker, one SparkSession (``--master``, ``local[2]`` by default), one file of N 200-byte lines:

1. raw baseline: confluent-kafka alone produces N such lines (idempotent, acks=all, linger 5 ms);
2. the Python peer: quixstreams' Source API producing the file's lines (skipped, and said so, where
   quixstreams is not installed: ``pip install -e '.[bench]'`` in a benchmark's own environment);
3. connectd, the same FileStreamSource task's query (``start_source_query``, as a distributed
   worker starts it, its offsets in an offsets topic) three times, each into a topic of its own:
   ``off`` (at least once: the worker stores the offsets after each micro-batch),
   ``poll`` (exactly once: each poll()'s records and their offsets one transaction) and
   ``interval`` (exactly once, ``transaction.boundary.interval.ms``, ``--interval-ms``, 1000 by
   default; a micro-batch's end commits too). The order of the three is rotated by ``--rotate``.

Records/s from the query's start to the last record a read_committed consumer sees (and from the
first record to the last: a transaction's records are seen at its commit, all at once); the
transactions each exactly-once run committed (offsets records written). A short run first warms
Spark up, unreported.

Run:  .venv/bin/python bench/source_exactly_once.py [--records 1000000] [--master local[2]]
      [--batch-size 2000] [--interval-ms 1000] [--rotate 0]
Prints a JSON summary (BENCHMARKS.md, "Exactly-once sources", holds the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import runtime_pipeline as rp
from source_file import peer_run, write_lines

MODES = ("off", "poll", "interval")


def transactions_committed(bootstrap: str, offsets_topic: str) -> int:
    """Offsets records in *offsets_topic* (one per transaction here: one source partition)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-offsets", "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(offsets_topic, 0, OFFSET_BEGINNING)])
        count = 0
        while True:
            message = consumer.poll(10)
            if message is None:
                return count
            if message.error() is None:
                count += 1
            elif message.error().code() == KafkaError._PARTITION_EOF:
                return count
    finally:
        consumer.close()


def connectd_run(spark: Any, bootstrap: str, tmp: Path, path: Path, records: int, mode: str, batch_size: int,
                 interval_ms: int, name: str | None = None) -> dict[str, Any]:
    """One run of the task's query in *mode* (``off``, ``poll``, ``interval``) into a topic of its own (*name*)."""
    from connectd.runtime.kafka.clients import client_option
    from connectd.runtime.spark.queries import start_source_query

    name = name or mode
    topic, offsets_topic = f"bench-eos-{name}", f"bench-eos-{name}-offsets"
    rp.create_topic(bootstrap, topic, 1)
    rp.create_topic(bootstrap, offsets_topic, 1)
    worker = {"bootstrap.servers": bootstrap, "key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.storage.StringConverter",
              "offset.storage.file.filename": str(tmp / "unused.offsets")}
    connector = {"name": f"eos-{name}", "connector.class": "FileStreamSource", "file": str(path), "topic": topic,
                 "batch.size": str(batch_size)}
    exactly_once = None if mode == "off" else {
        "transactional_id": f"bench-eos-{name}-0", "boundary": mode, "interval_ms": interval_ms}
    counter = rp.TopicCounter(bootstrap, topic, records)
    counter.start()
    started = time.monotonic()
    query = start_source_query(
        spark, connector=connector["name"], task_id=0, task_class="connectd_file.tasks.FileStreamSourceTask",
        task_config=connector, connector_config=connector, worker_config=worker,
        producer_config={"bootstrap.servers": bootstrap}, max_records=100_000, exactly_once=exactly_once,
        offsets={"kind": "topic", "topic": offsets_topic, "client": client_option(worker, "producer")})
    try:
        counter.join(max(180, records / 2000))
    finally:
        counter.halt.set()
        query.stop(graceful_timeout_s=60)
    if counter.count < records:
        raise RuntimeError(f"connectd ({mode}): {counter.count} of {records} records arrived")
    # From the query's start: a read_committed consumer sees a transaction's records at its commit,
    # all at once, so first-to-last alone would flatter the exactly-once runs.
    seconds = counter.last - started
    return {
        "from_start": rp.rates(counter.count, counter.value_bytes + counter.key_bytes, seconds),
        "first_to_last": rp.steady_rates(counter.count, counter.first_count, counter.first, counter.last,
                                         counter.value_bytes + counter.key_bytes),
        "transactions": None if mode == "off" else transactions_committed(bootstrap, offsets_topic),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]", help="spark.master (default local[2])")
    parser.add_argument("--batch-size", type=int, default=2000, help="FileStreamSource's lines per poll()")
    parser.add_argument("--interval-ms", type=int, default=1000, help="transaction.boundary.interval.ms")
    parser.add_argument("--rotate", type=int, default=0, help="start the three connectd runs at this one")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from connectd.broker import EmbeddedBroker

    order = [MODES[(args.rotate + i) % len(MODES)] for i in range(len(MODES))]
    summary: dict[str, Any] = {"records": args.records, "master": args.master, "batch_size": args.batch_size,
                               "interval_ms": args.interval_ms, "order": order, "machine": rp.machine_info(),
                               "loadavg_start": rp.loadavg(), "date": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory(prefix="connectd-bench-") as tmp_name, EmbeddedBroker(host="127.0.0.1") as broker:
        tmp, bootstrap = Path(tmp_name), broker.bootstrap_servers
        rp.PARTITIONS = 1
        for topic in ("bench-raw", "bench-quix"):
            rp.create_topic(bootstrap, topic, 1)
        summary["raw_produce"] = rp.raw_produce(bootstrap, "bench-raw", args.records)
        print(json.dumps(summary["raw_produce"]), file=sys.stderr)
        path = tmp / "in.txt"
        write_lines(path, args.records)
        summary["peer"] = peer_run(bootstrap, "bench-quix", path, args.records, tmp / "quix-state", "file")
        print(json.dumps(summary["peer"]), file=sys.stderr)
        spark = rp.bench_spark(bootstrap, tmp, args.master)
        try:
            warm = tmp / "warm.txt"
            write_lines(warm, 10_000)
            connectd_run(spark, bootstrap, tmp, warm, 10_000, "off", args.batch_size, args.interval_ms, "warm-up")
            for mode in order:
                summary[mode] = connectd_run(spark, bootstrap, tmp, path, args.records, mode, args.batch_size,
                                             args.interval_ms)
                print(json.dumps({mode: summary[mode]}), file=sys.stderr)
        finally:
            rp.bench_spark_stop(spark)
    off = summary["off"]["from_start"]["records_per_s"]
    for mode in ("poll", "interval"):
        summary[f"{mode}_to_off"] = round(summary[mode]["from_start"]["records_per_s"] / off, 3)
        summary[f"{mode}_to_raw"] = round(summary[mode]["from_start"]["records_per_s"]
                                          / summary["raw_produce"]["records_per_s"], 3)
        if "records_per_s" in summary["peer"]:
            summary[f"{mode}_to_peer"] = round(summary[mode]["from_start"]["records_per_s"]
                                               / summary["peer"]["records_per_s"], 3)
    summary["off_to_raw"] = round(off / summary["raw_produce"]["records_per_s"], 3)
    if "records_per_s" in summary["peer"]:
        summary["off_to_peer"] = round(off / summary["peer"]["records_per_s"], 3)
    summary["loadavg_end"] = rp.loadavg()
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
