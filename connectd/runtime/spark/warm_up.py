"""A fresh SparkSession's first-query costs, paid before a worker of a cluster takes work.

The first streaming query of a session costs seconds that later ones do not
(measured on 2 cores: a first query of a Python data source 7.1 s, one of
another Python data source after it 1.3 s): Spark loads and compiles its
streaming classes and starts the Python data source planner, the executors'
Python worker daemon and the foreachBatch callback server. A worker joining a
cluster would pay them while the tasks the leader moved to it wait, stopped
on their old worker; :func:`warm_up` runs one query of one row through a
Python data source of its own first, before the worker joins.

A standalone worker does not warm up: its first task pays the same costs
itself, and a warm-up before it would only add its own batch.

Blocking (py4j): run it in a thread.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from connectd.logging import get_logger

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["warm_up"]

log = get_logger(__name__)
FORMAT = "connectd-warm-up"


class _OneRowReader(DataSourceStreamReader):
    """One offset step, one partition, one row."""

    def initialOffset(self) -> dict[str, int]:
        return {"row": 0}

    def latestOffset(self) -> dict[str, int]:
        return {"row": 1}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [InputPartition(0)] if start["row"] < end["row"] else []

    def read(self, partition: InputPartition) -> Any:
        yield (1,)

    def commit(self, end: dict[str, int]) -> None:
        pass


class WarmUpDataSource(DataSource):
    """The warm-up's source: a stream of one row."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return "value int"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _OneRowReader()


def warm_up(spark: SparkSession, timeout_s: float) -> bool:
    """Run the warm-up query to its end; whether it ran, within *timeout_s*.

    A failure or a timeout is logged and otherwise ignored: the warm-up only
    saves time, and a Spark that cannot run it fails the tasks themselves,
    saying why, when they start.
    """
    # lazy: Spark's Python workers import this module for the warm-up source and need none of
    # queries (the tasks' sources and sinks, prometheus_client: ~70 ms)
    from connectd.runtime.spark.queries import register_data_sources

    began = time.monotonic()
    checkpoint = tempfile.mkdtemp(prefix="connectd-warm-up-")
    rows: list[int] = []
    query = None
    try:
        register_data_sources(spark)  # the tasks' own sources, registered once per session
        spark.dataSource.register(WarmUpDataSource)
        query = (spark.readStream.format(FORMAT).load().writeStream
                 .foreachBatch(lambda frame, _batch_id: rows.append(frame.count()))
                 .option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True)
                 .queryName("connectd-warm-up")
                 .start())
        finished = query.awaitTermination(timeout_s)
    except Exception as exc:  # noqa: BLE001 - py4j and Spark raise many kinds; the warm-up only saves time
        message = str(exc).strip()
        log.warning("spark_warm_up_failed", error=message.splitlines()[0] if message else repr(exc))
        return False
    finally:
        if query is not None and query.isActive:
            query.stop()
        shutil.rmtree(checkpoint, ignore_errors=True)
    if not finished:
        log.warning("spark_warm_up_timed_out", timeout_s=timeout_s)
        return False
    log.info("spark_warmed_up", seconds=round(time.monotonic() - began, 2), rows=sum(rows))
    return True
