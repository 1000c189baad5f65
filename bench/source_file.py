"""FileStreamSource (or datagen) → Kafka through connectd, beside raw confluent-kafka and quixstreams, on the
embedded broker.

One run, one broker, one SparkSession (``--master``, ``local[2]`` by default):

1. raw baseline: confluent-kafka alone produces the same N 200-byte lines
   (idempotent, acks=all, linger 5 ms) into a topic: the producer's limit;
2. connectd: a FileStreamSource connector (StringConverter) on a file of N
   such lines, in a standalone herder in this process; a consumer counts the
   records arriving in its topic. Records/s from the first record seen to
   the last; the connector's creation to its first record apart;
3. the Python peer, in the same run: quixstreams' Source API reading the same
   file line by line and producing each line (the same producer settings as
   the raw baseline), counted the same way (skipped, and said so, where
   quixstreams is not installed: ``pip install -e '.[bench]'`` in a
   benchmark's own environment, as it pins an older confluent-kafka);
4. where the time goes: Spark's progress per micro-batch (addBatch is the
   task's process producing the batch and the worker storing its offsets);
5. a second FileStreamSource connector created on the same, running worker:
   its creation to its first record in Kafka (``running_worker_first_record_s``);
6. four FileStreamSource tasks at once (the others deleted): the peak memory of the worker's
   whole process tree (``four_sources``; ``bench/source_memory.py`` measures it on a worker in a
   process of its own, idle and under load).

``--source datagen`` runs datagen's orders (JsonConverter without schemas) instead of the file,
on both sides: connectd's DatagenConnector, and a quixstreams Source producing what the same
generator and converters make, and a third: datagen's orders written out by hand in one confluent-kafka
loop (``hand_written``: no schema, no Connect values, no converter), the bound on any Python datagen's
share of the raw producer. ``--with-sink`` is the pipeline variant: a FileStreamSink connector reads the
topic while the source writes it (the rate is still the source's).

Run:  .venv/bin/python bench/source_file.py [--records 1000000] [--master local[2]] [--with-sink]
      [--conf spark.key=value]
Prints a JSON summary (BENCHMARKS.md, "Sources at speed", holds the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import runtime_pipeline as rp


def write_lines(path: Path, records: int) -> None:
    """*records* lines of ``RECORD_BYTES`` bytes each (newline apart), printable ASCII."""
    pool = rp.value_pool()
    with open(path, "wb") as out:
        for i in range(records):
            out.write(pool[i % len(pool)] + b"\n")


async def source_run(herder: Any, bootstrap: str, topic: str, path: Path | None, records: int,
                     memory: Any) -> dict[str, Any]:
    counter = rp.TopicCounter(bootstrap, topic, records)
    counter.start()
    cpu = rp.cpu_sample()
    t_put = time.monotonic()
    if path is None:  # datagen
        await herder.put({"name": "bench-file-source", **DATAGEN, "kafka.topic": topic, "iterations": str(records)})
    else:
        await herder.put({"name": "bench-file-source", "connector.class": "FileStreamSource", "file": str(path),
                          "topic": topic})
    try:
        await rp.wait_for("source → Kafka", lambda: counter.count >= records, max(180, records / 2000), herder,
                          "bench-file-source", counter)
    finally:
        counter.halt.set()
        await asyncio.to_thread(counter.join, 10)
    return {
        **rp.steady_rates(counter.count, counter.first_count, counter.first, counter.last,
                          counter.value_bytes + counter.key_bytes),
        "total_records": counter.count,
        "put_to_first_record_s": round(counter.first - t_put, 1),
        "put_to_last_record_s": round(counter.last - t_put, 1),
        "cpu_from_put": rp.cpu_since(cpu),
        "cpu": counter.cpu_steady,
        "spark": await asyncio.to_thread(rp.progress_summary, herder.task_queries("bench-file-source")[0]),
        "memory_mib": memory.take(),
    }


try:  # the peer's source, at module level: quixstreams runs it in a process of its own (spawned)
    from quixstreams.sources import Source

    class FileSource(Source):
        """The file's lines, each produced as it is read: what a quixstreams user writes."""

        def __init__(self, path: Path, name: str) -> None:
            super().__init__(name=name)
            self.path = path

        def run(self) -> None:
            with open(self.path, "rb") as lines:
                for line in lines:
                    if not self.running:
                        return
                    self.produce(value=line[:-1])
    class DatagenSource(Source):
        """datagen's orders, produced as generated: the same generator and converters connectd's
        DatagenConnector uses (what a quixstreams user with those records would write), each record's
        key and JSON value produced as soon as its poll returned."""

        def __init__(self, records: int, topic: str, name: str) -> None:
            super().__init__(name=name)
            self.records, self.topic = records, topic

        def run(self) -> None:
            from connectd_datagen.task import DatagenTask

            from connectd.connector import OffsetStorageReader, SourceTaskContext
            from connectd.data.converters import StringConverter
            from connectd.data.json_converter import JsonConverter

            config = {**DATAGEN, "kafka.topic": self.topic, "iterations": str(self.records), "task.id": "0"}
            task = DatagenTask()
            task.context = SourceTaskContext(config, OffsetStorageReader(lambda partitions: {}))
            task.initialize(task.context)
            task.start(config)
            keys, values = StringConverter(), JsonConverter()
            keys.configure({}, is_key=True)
            values.configure({"schemas.enable": "false"}, is_key=False)
            sent = 0
            try:
                while self.running and sent < self.records:
                    polled = task.poll()
                    if not polled:
                        continue
                    for key, value in zip(keys.from_connect_batch(self.topic, [(r.key_schema, r.key) for r in polled]),
                                          values.from_connect_batch(self.topic,
                                                                    [(r.value_schema, r.value) for r in polled]),
                                          strict=True):
                        self.produce(key=key, value=value)
                    sent += len(polled)
            finally:
                task.stop()
except ImportError:
    FileSource = DatagenSource = None  # type: ignore[assignment,misc]

#: The datagen connector both sides run (``--source datagen``): orders, as fast as it goes.
DATAGEN = {"connector.class": "DatagenConnector", "quickstart": "orders", "max.interval": "0", "batch.size": "5000",
           "value.converter": "org.apache.kafka.connect.json.JsonConverter",
           "value.converter.schemas.enable": "false"}


def ceiling_produce(bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    """The fastest datagen Python can be (``--source datagen``): datagen's orders written out by hand.

    One loop draws each field of the orders quickstart (the same ranges and patterns), formats the
    record's JSON with one f-string, its key and its three headers (``task.generation``, ``task.id``,
    ``current.iteration``, as the header converter writes them) and produces it, with the raw
    baseline's producer settings and clock (the first produce to the flush). No schema is read, no
    Connect value or record is made and no converter runs: what it leaves out, any generator of
    arbitrary schemas must do, so its share of the raw producer bounds any Python datagen's.
    """
    import random

    producer, failures = rp.acked_producer(bootstrap, topic)
    draw = random.Random(1).random
    digits = tuple(tuple(f"{n:0{width}d}" for n in range(10 ** width)) if width else ("",) for width in range(3))
    some = tuple(tuple(f"{n:0{width}d}" for n in range(10 ** width) if "0" not in f"{n:0{width}d}")
                 if width else ("",) for width in range(3))  # [1-9]{0,2}
    produce, poll = producer.produce, producer.poll
    fixed = [("task.generation", b"0"), ("task.id", b"0")]
    start, nbytes = time.perf_counter(), 0
    for i in range(records):
        tail, city, state = digits[int(draw() * 3)], some[int(draw() * 3)], some[int(draw() * 3)]
        value = (f'{{"ordertime":{1487715775521 + int(draw() * 31557589079)},"orderid":{i},'
                 f'"itemid":"Item_{1 + int(draw() * 9)}{tail[int(draw() * len(tail))]}",'
                 f'"orderunits":{0.1 + draw() * 9.9!r},"address":{{"city":"City_{city[int(draw() * len(city))]}",'
                 f'"state":"State_{state[int(draw() * len(state))]}","zipcode":{10000 + int(draw() * 89999)}}}}}'
                 ).encode()
        key = str(i).encode()
        nbytes += len(value) + len(key)
        while True:  # inline, as rp.raw_produce's: a call a record would be measured too
            try:
                produce(topic, value, key, headers=[*fixed, ("current.iteration", key)])
                break
            except BufferError:
                poll(0.01)
        if i % 1000 == 0:
            poll(0)
    rp.flush_acked(producer, failures, "hand-written orders")
    return rp.rates(records, nbytes, time.perf_counter() - start)


def peer_run(bootstrap: str, topic: str, path: Path, records: int, state_dir: Path, source: str) -> dict[str, Any]:
    """quixstreams' Source API producing the file's lines (or datagen's orders) into *topic*, counted
    as connectd's are."""
    if FileSource is None:
        return {"skipped": "quixstreams is not installed (pip install -e '.[bench]')"}
    import quixstreams
    from quixstreams import Application

    counter = rp.TopicCounter(bootstrap, topic, records)
    counter.start()
    app = Application(broker_address=bootstrap, consumer_group="bench-quix", auto_create_topics=False,
                      state_dir=str(state_dir), producer_extra_config=dict(rp.PRODUCER_TUNING))
    started = time.monotonic()
    peer = FileSource(path, name="bench-file") if source == "file" else DatagenSource(records, topic, "bench-datagen")
    app.add_source(peer, topic=app.topic(topic, key_serializer="bytes", value_serializer="bytes"))
    app.run()  # returns once the source's run() returned and its producer was flushed
    counter.join(max(60, records / 2000))
    counter.halt.set()
    if counter.count < records:
        raise RuntimeError(f"quixstreams: {counter.count} of {records} records arrived")
    return {
        "quixstreams": quixstreams.__version__,
        **rp.steady_rates(counter.count, counter.first_count, counter.first, counter.last,
                          counter.value_bytes + counter.key_bytes),
        "start_to_last_record_s": round(counter.last - started, 1),
    }


async def first_record_on_a_running_worker(herder: Any, bootstrap: str, tmp: Path) -> float:
    """Seconds from a new FileStreamSource connector's creation to its first record in Kafka, on
    the worker that has run the benchmark's connector (Spark warm)."""
    path = tmp / "second.txt"
    write_lines(path, 100)
    rp.create_topic(bootstrap, "bench-file-second", 1)
    counter = rp.TopicCounter(bootstrap, "bench-file-second", 1)
    counter.start()
    began = time.monotonic()
    await herder.put({"name": "bench-file-second", "connector.class": "FileStreamSource", "file": str(path),
                      "topic": "bench-file-second"})
    try:
        await rp.wait_for("the second connector's first record", lambda: counter.count >= 1, 120, herder,
                          "bench-file-second", counter)
    finally:
        counter.halt.set()
        await asyncio.to_thread(counter.join, 10)
    return round(counter.first - began, 2)


async def sources_memory(herder: Any, bootstrap: str, tmp: Path, memory: Any, tasks: int = 4,
                         lines: int = 200_000) -> dict[str, Any]:
    """Peak memory of the worker's whole process tree with *tasks* FileStreamSource tasks running at
    once (the benchmark's other connectors deleted first), each moving *lines* lines."""
    for name in list(herder.connectors()):
        await herder.delete(name)
    topics = [f"bench-file-many-{index}" for index in range(tasks)]  # a topic each (rp.TopicCounter)
    for topic in topics:
        rp.create_topic(bootstrap, topic, 1)
    counter = rp.TopicCounter(bootstrap, topics, tasks * lines)
    counter.start()
    memory.take()  # the peaks from here on
    for index, topic in enumerate(topics):
        path = tmp / f"many-{index}.txt"
        write_lines(path, lines)
        await herder.put({"name": f"bench-file-many-{index}", "connector.class": "FileStreamSource",
                          "file": str(path), "topic": topic})
    try:
        await rp.wait_for(f"{tasks} sources → Kafka", lambda: counter.count >= tasks * lines,
                          max(180, tasks * lines / 2000), herder, "bench-file-many-0", counter)
    finally:
        counter.halt.set()
        await asyncio.to_thread(counter.join, 10)
    return {"tasks": tasks, "records": counter.count, "memory_mib": memory.take()}


async def runs(bootstrap: str, spark: Any, tmp: Path, topic: str, path: Path | None, records: int,
               memory: Any, with_sink: bool, settings: dict[str, str]) -> dict[str, Any]:
    herder = await rp.started_herder(bootstrap, spark, tmp, **settings)
    try:
        if with_sink:  # the pipeline: a sink reads the topic while the source writes it
            await herder.put({"name": "bench-file-sink", "connector.class": "FileStreamSink", "topics": topic,
                              "file": str(tmp / "out.txt")})
        result = await source_run(herder, bootstrap, topic, path, records, memory)
        if with_sink:
            result["sink_lines_when_source_done"] = sum(1 for _ in open(tmp / "out.txt", "rb"))
        result["running_worker_first_record_s"] = await first_record_on_a_running_worker(herder, bootstrap, tmp)
        result["four_sources"] = await sources_memory(herder, bootstrap, tmp, memory)
        return result
    finally:
        await herder.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]", help="spark.master (default local[2])")
    parser.add_argument("--source", choices=("file", "datagen"), default="file",
                        help="FileStreamSource on a file of 200-byte lines (default), or datagen's orders "
                             "(JsonConverter without schemas); the peer produces the same records")
    parser.add_argument("--with-sink", action="store_true",
                        help="the pipeline variant: a FileStreamSink reads the topic while the source writes it")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="more settings of the worker, spark.* or connectd's (repeatable)")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    # stdout is the JSON summary's alone: Spark's JVM, which inherits file descriptor 1 and logs there,
    # gets stderr in its place.
    summary_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    from connectd.broker import EmbeddedBroker

    summary: dict[str, Any] = {"records": args.records, "master": args.master, "conf": args.conf,
                               "source": args.source, "with_sink": args.with_sink,
                               "machine": rp.machine_info(), "loadavg_start": rp.loadavg(),
                               "date": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory(prefix="connectd-bench-") as tmp_name, EmbeddedBroker(host="127.0.0.1") as broker:
        tmp, bootstrap = Path(tmp_name), broker.bootstrap_servers
        rp.PARTITIONS = 1
        rp.create_topic(bootstrap, "bench-raw", 1)
        rp.create_topic(bootstrap, "bench-file", 1)
        rp.create_topic(bootstrap, "bench-quix", 1)
        summary["raw_produce"] = rp.raw_produce(bootstrap, "bench-raw", args.records)
        print(json.dumps(summary["raw_produce"]), file=sys.stderr)
        path = tmp / "in.txt" if args.source == "file" else None
        if path is not None:
            write_lines(path, args.records)
        summary["peer"] = peer_run(bootstrap, "bench-quix", path, args.records, tmp / "quix-state", args.source)
        print(json.dumps(summary["peer"]), file=sys.stderr)
        if args.source == "datagen":
            rp.create_topic(bootstrap, "bench-ceiling", 1)
            summary["hand_written"] = ceiling_produce(bootstrap, "bench-ceiling", args.records)
            print(json.dumps(summary["hand_written"]), file=sys.stderr)
        t0 = time.monotonic()
        settings = dict(item.split("=", 1) for item in args.conf)  # the session's and the herder's
        spark = rp.bench_spark(bootstrap, tmp, args.master, **settings)
        summary["spark_start_s"] = round(time.monotonic() - t0, 1)
        memory = rp.MemoryPeak(broker.pid)
        memory.start()
        try:
            summary["connectd"] = asyncio.run(runs(bootstrap, spark, tmp, "bench-file", path, args.records, memory,
                                                   args.with_sink, settings))
        finally:
            memory.halt.set()
            rp.bench_spark_stop(spark)
    summary["ratio_to_raw"] = round(summary["connectd"]["records_per_s"]
                                    / summary["raw_produce"]["records_per_s"], 3)
    if "hand_written" in summary:
        summary["hand_written_ratio_to_raw"] = round(summary["hand_written"]["records_per_s"]
                                                     / summary["raw_produce"]["records_per_s"], 3)
    if "records_per_s" in summary["peer"]:
        summary["ratio_to_peer"] = round(summary["connectd"]["records_per_s"] / summary["peer"]["records_per_s"], 3)
    summary["loadavg_end"] = rp.loadavg()
    print(json.dumps(summary, indent=2), file=summary_out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
