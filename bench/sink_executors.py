"""Kafka → FileStreamSink with put() in Spark executors, beside raw confluent-kafka, on the embedded broker.

One run, one broker, one SparkSession (``--master``, ``local[2]`` by default):

1. raw baseline: confluent-kafka produces N 200-byte records into a
   4-partition topic, and one consumer reads them back;
2. throughput: a FileStreamSink connector (StringConverter) reads the topic
   from the start with ``tasks.max`` 1, then (another connector, another
   group) 2 and 4. Progress is the group's committed offsets, polled every
   0.2 s: records/s from the first commit to the one that reaches N;
3. start-up: the connector created on a running worker → its first commit;
4. latency: with the ``tasks.max=1`` connector caught up, a child process
   produces records at ``--latency-rate`` whose value carries the send time
   and tails the sink's file (runtime_pipeline.py's latency child);
5. peak memory (PSS) of the worker process, Spark's JVM and its Python
   workers during each run.

Run:  .venv/bin/python bench/sink_executors.py [--records 500000] [--master local[2]] [--conf spark.key=value]
Prints a JSON summary (BENCHMARKS.md, "Sinks on executors", holds the figures).
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

PARTITIONS = 4


class PssPeak(rp.MemoryPeak):
    """:class:`runtime_pipeline.MemoryPeak` by proportional set size (PSS), not RSS.

    Spark's Python workers are forked from one daemon and share most of their
    pages; RSS counts those once per process, PSS shares them out, so the sum
    is what the processes really hold.
    """

    def sample(self) -> None:
        processes = rp._processes()
        me = os.getpid()
        sizes = {"worker": 0, "jvm": 0, "python_workers": 0}
        count = 0
        for pid in rp._mine(processes, self.exclude_pid):
            try:
                rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            except OSError:
                continue
            kib = next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
            kind = "worker" if pid == me else "jvm" if processes[pid][1] == "java" else "python_workers"
            count += kind == "python_workers"
            sizes[kind] += kib * 1024
        sizes["total"] = sum(sizes.values())
        sizes["python_worker_processes"] = count * 2**20  # shown as a count after take()'s MiB division
        for kind, size in sizes.items():
            self._peaks[kind] = max(self._peaks.get(kind, 0), size)


def committed_total(consumer: Any, topic: str, partitions: int = PARTITIONS) -> int:
    from confluent_kafka import TopicPartition

    found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    return sum(max(tp.offset, 0) for tp in found)


async def until_committed(herder: Any, group: Any, topic: str, name: str, tasks: int, records: int, began: float,
                          nbytes: int, partitions: int = PARTITIONS) -> dict[str, Any]:
    """Poll *group*'s committed offsets of *topic* every 0.2 s until they total *records*; the rates from
    the first commit seen to the last (:func:`runtime_pipeline.steady_rates`) and the time from *began*
    to the first commit. Raises if one of the connector's *tasks* fails."""
    first = first_count = last = None
    done = 0
    deadline = time.monotonic() + max(300, records / 1000)
    while done < records:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name}: {done} of {records} committed")
        for task in range(tasks):
            status = herder.status.task(name, task)
            if status is not None and status.state == "FAILED":
                raise RuntimeError(f"{name}-{task} failed:\n{status.trace}")
        done = await asyncio.to_thread(committed_total, group, topic, partitions)
        now = time.monotonic()
        if done and first is None:
            first, first_count = now, done
        if done:
            last = now
        await asyncio.sleep(0.2)
    return {**rp.steady_rates(done, first_count or 0, first, last, nbytes),
            "put_to_first_commit_s": round((first or began) - began, 1)}


async def sink_run(herder: Any, bootstrap: str, topic: str, out: Path, tasks: int, records: int,
                   memory: PssPeak, name: str | None = None) -> dict[str, Any]:
    """A FileStreamSink with *tasks* tasks over *topic* until its group committed *records*;
    *name* its name (and group's), ``bench-sink-<tasks>`` by default."""
    from confluent_kafka import Consumer

    name = name or f"bench-sink-{tasks}"
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": f"connect-{name}"})
    memory.take()
    cpu = rp.cpu_sample()
    t_put = time.monotonic()
    await herder.put({"name": name, "connector.class": "FileStreamSink", "topics": topic, "file": str(out),
                      "tasks.max": str(tasks), "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
    result = {
        "tasks": tasks,
        **await until_committed(herder, group, topic, name, tasks, records, t_put, records * rp.RECORD_BYTES),
        "cpu_from_put": rp.cpu_since(cpu),
        "memory_mib": memory.take(),
        "spark": [await asyncio.to_thread(rp.progress_summary, q) for q in herder.task_queries(name)],
    }
    group.close()
    return result


async def runs(bootstrap: str, spark: Any, tmp: Path, topic: str, records: int, raw_ends: dict[int, int],
               latency_rate: int, latency_seconds: float, memory: PssPeak,
               worker_settings: dict[str, str] | None = None) -> dict[str, Any]:
    herder = await rp.started_herder(bootstrap, spark, tmp, **(worker_settings or {}))
    out: dict[str, Any] = {}
    try:
        for tasks in (4, 2):
            print(f"tasks.max={tasks} ...", file=sys.stderr)
            out[f"tasks_{tasks}"] = await sink_run(herder, bootstrap, topic, tmp / f"sink-{tasks}.txt", tasks,
                                                   records, memory)
            await herder.delete(f"bench-sink-{tasks}")
        print("tasks.max=1 ...", file=sys.stderr)
        out_file = tmp / "sink-1.txt"
        out["tasks_1"] = await sink_run(herder, bootstrap, topic, out_file, 1, records, memory)
        await asyncio.sleep(1.0)
        print("latency ...", file=sys.stderr)
        spec = {"bootstrap": bootstrap, "topic": topic, "file": str(out_file),
                "file_offset": out_file.stat().st_size, "start": {str(p): o for p, o in raw_ends.items()},
                "rate": latency_rate, "seconds": latency_seconds}
        out["latency"] = await asyncio.to_thread(rp.run_latency_child, spec)
    finally:
        await herder.stop()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--master", default="local[2]", help="spark.master (default local[2])")
    parser.add_argument("--latency-rate", type=int, default=2000)
    parser.add_argument("--latency-seconds", type=float, default=20.0)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="more spark.* settings of the worker (repeatable)")
    parser.add_argument("--worker", action="append", default=[], metavar="KEY=VALUE",
                        help="more worker settings, e.g. sink.batch.linger.ms=1000 (repeatable)")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from connectd.broker import EmbeddedBroker

    summary: dict[str, Any] = {"records": args.records, "master": args.master, "conf": args.conf,
                               "worker": args.worker, "machine": rp.machine_info(),
                               "loadavg_start": rp.loadavg(), "date": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory(prefix="connectd-bench-") as tmp_name, EmbeddedBroker(host="127.0.0.1") as broker:
        tmp, bootstrap, topic = Path(tmp_name), broker.bootstrap_servers, "bench-sink"
        rp.create_topic(bootstrap, topic, PARTITIONS)
        rp.PARTITIONS = PARTITIONS  # raw_consume reads every partition
        summary["raw"] = {"produce": rp.raw_produce(bootstrap, topic, args.records)}
        summary["raw"]["consume"], raw_ends = rp.raw_consume(bootstrap, topic, args.records)
        print(json.dumps(summary["raw"]), file=sys.stderr)
        t0 = time.monotonic()
        spark = rp.bench_spark(bootstrap, tmp, args.master, **dict(item.split("=", 1) for item in args.conf))
        summary["spark_start_s"] = round(time.monotonic() - t0, 1)
        memory = PssPeak(broker.pid)
        memory.start()
        try:
            summary["connectd"] = asyncio.run(runs(bootstrap, spark, tmp, topic, args.records, raw_ends,
                                                   args.latency_rate, args.latency_seconds, memory,
                                                   dict(item.split("=", 1) for item in args.worker)))
        finally:
            memory.halt.set()
            rp.bench_spark_stop(spark)
    summary["loadavg_end"] = rp.loadavg()
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
