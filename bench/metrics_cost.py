"""What the Prometheus metrics cost a sink task: FileStreamSink with the worker's metrics on and off.

One broker, one SparkSession (``local[2]``), one N-record 4-partition topic.
Each round runs a FileStreamSink connector (``tasks.max`` 4, StringConverter,
``put()`` in Spark executors) over the whole topic twice, in a group of its
own each time: once as the worker runs it, counting every micro-batch
(durations, records, offset commits, the executor's put() counts, errors and
lag brought back with each batch), once with the worker's per-task metrics
switched off (the herder hands the queries metrics that count nothing). Rounds alternate
the order, so drift on a shared machine falls on both. Throughput is
sink_executors.py's: records/s from the group's first commit to the one that
reaches N.

Off leaves what executors count (a few integer sums per batch, and their
JSON in the batch's first result row); on adds the worker's side.

Run:  .venv/bin/python bench/metrics_cost.py [--records 300000] [--rounds 3]
Prints a JSON summary (BENCHMARKS.md, "Metrics cost", holds the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import runtime_pipeline as rp
import sink_executors as se


class _Off:
    """A task's metrics that count nothing: every method of TaskMetrics does nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


async def rounds(bootstrap: str, spark: Any, tmp: Path, topic: str, records: int, count: int) -> dict[str, Any]:
    herder = await rp.started_herder(bootstrap, spark, tmp)
    with_metrics = herder.metrics.task
    rates: dict[str, list[float]] = {"on": [], "off": []}
    memory = se.PssPeak(os.getpid())
    try:
        for index in range(count * 2):
            mode = ("on", "off")[(index + index // 2) % 2]  # on off, off on, on off, …
            herder.metrics.task = with_metrics if mode == "on" else (lambda connector, task: _Off())
            name = f"bench-sink-4-{index}"
            print(f"round {index // 2 + 1}, metrics {mode} ...", file=sys.stderr)
            result = await se.sink_run(herder, bootstrap, topic, tmp / f"{name}.txt", 4, records, memory, name)
            await herder.delete(name)
            rates[mode].append(result["records_per_s"])
            print(json.dumps({"mode": mode, "records_per_s": result["records_per_s"]}), file=sys.stderr)
    finally:
        await herder.stop()
    on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
    return {"records_per_s": rates, "median_on": on, "median_off": off, "cost_percent": round(100 * (off - on) / off, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from connectd.broker import EmbeddedBroker

    summary: dict[str, Any] = {"records": args.records, "rounds": args.rounds, "machine": rp.machine_info(),
                               "loadavg_start": rp.loadavg(), "date": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory(prefix="connectd-bench-") as tmp_name, EmbeddedBroker(host="127.0.0.1") as broker:
        tmp, bootstrap, topic = Path(tmp_name), broker.bootstrap_servers, "bench-metrics"
        rp.create_topic(bootstrap, topic, se.PARTITIONS)
        rp.raw_produce(bootstrap, topic, args.records)
        spark = rp.bench_spark(bootstrap, tmp)
        try:
            summary["sink_tasks_4"] = asyncio.run(rounds(bootstrap, spark, tmp, topic, args.records, args.rounds))
        finally:
            rp.bench_spark_stop(spark)
    summary["loadavg_end"] = rp.loadavg()
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
