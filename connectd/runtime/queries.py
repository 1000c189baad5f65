"""Starting and stopping one task's streaming query.

Each task is one named query (``<connector>-<task>``) in its own FAIR pool,
with a checkpoint directory made for this run only: offsets live in Kafka or
the offsets file, so a checkpoint is scratch and is removed on stop.

Stopping, within ``task.shutdown.graceful.timeout.ms``::

    RUNNING --stop()--> DRAINING: the stop file exists, the reader offers no new data;
                        the batch in flight finishes, is written and commits its offsets
            --idle-->   query.stop()  (nothing lost, nothing replayed)
            --timeout-> query.stop() cancels the batch in flight; its offsets were
                        not stored, so the next run replays it (at-least-once)

All calls block (py4j): run them in a thread, never on the event loop.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from connectd.runtime import kafka_io, source_task

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = [
    "TaskQuery",
    "start_sink_query",
    "start_source_query",
    "start_spark_sink_query",
    "start_spark_source_query",
]

_IDLE_CHECKS = 3
_POLL_S = 0.1


@dataclass
class TaskQuery:
    """A running task's query and what its run owns."""

    name: str
    query: StreamingQuery
    workdir: Path
    stop_file: Path
    stopped_gracefully: bool | None = field(default=None)

    @property
    def pause_file(self) -> Path:
        return self.workdir / "pause"

    def pause(self) -> None:
        """Offer no new data (the batch in flight completes); the query stays up."""
        self.pause_file.touch()

    def resume(self) -> None:
        self.pause_file.unlink(missing_ok=True)

    def is_active(self) -> bool:
        return self.query.isActive

    def failure(self) -> str | None:
        """The error that ended the query, with its trace, if it failed."""
        exception = self.query.exception()
        return None if exception is None else str(exception)

    def stop(self, graceful_timeout_s: float) -> bool:
        """Stop the query; ``True`` when it stopped idle, ``False`` when a batch was cancelled."""
        self.stop_file.touch()
        deadline = time.monotonic() + graceful_timeout_s
        idle = 0
        while self.query.isActive and time.monotonic() < deadline:
            status = self.query.status
            idle = idle + 1 if not status["isTriggerActive"] and not status["isDataAvailable"] else 0
            if idle >= _IDLE_CHECKS:
                break
            time.sleep(_POLL_S)
        self.stopped_gracefully = idle >= _IDLE_CHECKS or not self.query.isActive
        self.query.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
        return self.stopped_gracefully


def _as_option(client: dict[str, Any] | str) -> str:
    return client if isinstance(client, str) else json.dumps(client)


def _start(spark: SparkSession, name: str, build: Callable[[Path], StreamingQuery], paused: bool = False) -> TaskQuery:
    """Start the query *build* makes, in the task's own FAIR pool and run directory.

    *build* gets the run directory (stop and pause files, scratch checkpoint);
    the directory is removed again if the query does not start. *paused*
    creates the pause file first, so not even a first batch is read.
    """
    _register(spark)
    workdir = Path(tempfile.mkdtemp(prefix=f"connectd-{name}-"))
    if paused:
        (workdir / "pause").touch()
    spark.sparkContext.setLocalProperty("spark.scheduler.pool", name)
    try:
        query = build(workdir)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    finally:
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", None)
    return TaskQuery(name, query, workdir, workdir / "stop")


def _kafka_stream(spark: SparkSession, workdir: Path, consumer_config: dict[str, Any] | str,
                  start: dict[str, int], max_records: int, rows: str = "records") -> Any:
    """The task's partitions from *start*, honouring the run's stop and pause files."""
    return (
        spark.readStream.format(kafka_io.FORMAT)
        .option(kafka_io.CLIENT_OPTION, _as_option(consumer_config))
        .option("start", json.dumps(start))
        .option("max.records", str(max_records))
        .option("rows", rows)
        .option("stop.file", str(workdir / "stop"))
        .option("pause.file", str(workdir / "pause"))
        .load()
    )


def planned_ranges(checkpoint: Path, batch_id: int, start: dict[str, int]) -> list[tuple[str, int, int, int]] | None:
    """The offset ranges of micro-batch *batch_id* of a ``rows=ranges`` query, from Spark's offset log.

    Spark writes a batch's end offsets to ``<checkpoint>/offsets/<batch id>``
    before it runs the batch (its write-ahead log: ``v1``, a metadata line,
    then one line per source); the start is the previous batch's end, or
    *start* for the first. Reading them there costs a file read, where
    collecting the batch's rows costs a Spark job (≈100-200 ms a batch, most
    of a record's latency at low load). ``None`` when the log is not in the
    expected form (another Spark version): the caller then collects the rows.
    """
    def offsets(batch: int) -> dict[str, int] | None:
        try:
            lines = (checkpoint / "offsets" / str(batch)).read_text(encoding="utf-8").splitlines()
            if len(lines) != 3 or lines[0] != "v1":
                return None
            found = json.loads(lines[2])
            return {str(k): int(v) for k, v in found.items()} if isinstance(found, dict) else None
        except (OSError, ValueError, TypeError):
            return None

    end = offsets(batch_id)
    begin = start if batch_id == 0 else offsets(batch_id - 1)
    if end is None or begin is None:
        return None
    ranges = []
    for key, stop in end.items():
        first = begin.get(key, start.get(key, 0))
        if stop > first:
            ranges.append((*kafka_io.decode_tp(key), first, stop))
    return ranges


def _started(writer: Any, checkpoint: str | Path, name: str, trigger_interval: str) -> StreamingQuery:
    """*writer* started as the task's named query, micro-batches every *trigger_interval* at most."""
    return (
        writer.option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=trigger_interval)
        .queryName(name)
        .start()
    )


def _register(spark: SparkSession) -> None:
    # Queries start from worker threads; Spark looks Python data sources up in
    # the thread's active session, which a new thread does not have.
    spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)
    spark.dataSource.register(kafka_io.KafkaDataSource)
    spark.dataSource.register(source_task.SourceTaskDataSource)


def start_source_query(
    spark: SparkSession,
    *,
    connector: str,
    task_id: int,
    task_class: str,
    task_config: dict[str, str],
    connector_config: dict[str, str],
    worker_config: dict[str, str],
    producer_config: dict[str, Any] | str,
    offsets: dict[str, Any] | None = None,
    offsets_path: str | None = None,
    max_records: int = 10_000,
    paused: bool = False,
    trigger_interval: str = "100 milliseconds",
) -> TaskQuery:
    """Start a source task's query: plugin → transforms → converters → Kafka → offset store.

    :param task_class: dotted path of the plugin's :class:`~connectd.SourceTask`.
    :param producer_config: the data producer's :data:`~connectd.runtime.kafka_io.CLIENT_OPTION`
        value (:func:`~connectd.runtime.kafka_io.client_option`), or confluent-kafka settings.
    :param offsets: where the task's offsets are read and stored: an
        :func:`~connectd.runtime.offsets.open_offset_store` spec (JSON-serialisable; a topic's
        client as written, resolved in Spark's process).
    :param offsets_path: the offsets file, for ``{"kind": "file", "path": offsets_path}``.
    """
    if (offsets is None) == (offsets_path is None):
        raise ValueError("start_source_query needs one of offsets and offsets_path")
    offsets_spec = dict(offsets) if offsets is not None else {"kind": "file", "path": offsets_path}
    name = f"{connector}-{task_id}"
    spec = {
        "connector": connector,
        "task_id": task_id,
        "task_class": task_class,
        "task_config": task_config,
        "connector_config": connector_config,
        "worker_config": worker_config,
        "offsets": offsets_spec,
        # for dead-letter records, produced by the reader's own process
        "producer": _as_option(producer_config),
    }

    def build(workdir: Path) -> StreamingQuery:
        stream = (
            spark.readStream.format(source_task.FORMAT)
            .option(source_task.SPEC_OPTION, json.dumps(spec))
            .option("stop.file", str(workdir / "stop"))
            .option("pause.file", str(workdir / "pause"))
            .option("max.records", str(max_records))
            .load()
        )
        writer = (
            stream.writeStream.format(kafka_io.FORMAT)
            .option(kafka_io.CLIENT_OPTION, _as_option(producer_config))
            .option("commit.hook", "connectd.runtime.offsets:store_offsets_hook")
            # redacted: a topic store's spec carries client settings as written
            .option(kafka_io.COMMIT_HOOK_SECRET_ARG, json.dumps({**offsets_spec, "connector": connector}))
        )
        return _started(writer, workdir / "checkpoint", name, trigger_interval)

    return _start(spark, name, build, paused)


def start_sink_query(
    spark: SparkSession,
    *,
    connector: str,
    task_id: int,
    runner: Any,
    consumer_config: dict[str, Any] | str,
    start: dict[str, int],
    reader: Any = None,
    max_records: int = 100_000,
    put_records: int = 500,
    paused: bool = False,
    trigger_interval: str = "100 milliseconds",
) -> TaskQuery:
    """Start a sink task's query: Kafka → (worker process) converters → transforms → plugin → group offsets.

    :param runner: a :class:`~connectd.runtime.sink_task.SinkTaskRunner` (its task already started).
    :param consumer_config: the data consumer's :data:`~connectd.runtime.kafka_io.CLIENT_OPTION`
        value, or confluent-kafka settings.
    :param start: ``{"topic:partition": offset}`` to read from (the group's committed offsets).
    :param reader: a :class:`~connectd.runtime.kafka_io.RangeReader` in this process: the query's
        micro-batches are then offset ranges that it reads here (fast); without one, the records
        themselves come through Spark.
    :param max_records: the most records of one micro-batch.
    :param put_records: the most records of one ``put`` (with a *reader*).
    """
    name = f"{connector}-{task_id}"

    def build(workdir: Path) -> StreamingQuery:
        checkpoint = workdir / "checkpoint"

        def each_batch(frame: Any, batch_id: int) -> None:
            if reader is None:
                runner.process(frame.collect())
                return
            ranges = planned_ranges(checkpoint, batch_id, start)
            if ranges is None:
                ranges = [tuple(row) for row in frame.collect()]
            runner.process_ranges(ranges, reader, put_records)

        writer = (
            _kafka_stream(spark, workdir, consumer_config, start, max_records,
                          "records" if reader is None else "ranges")
            .writeStream.foreachBatch(each_batch)
        )
        return _started(writer, checkpoint, name, trigger_interval)

    return _start(spark, name, build, paused)


def start_spark_source_query(
    spark: SparkSession,
    *,
    connector: str,
    task_id: int,
    task: Any,
    default_topic: str | None,
    producer_config: dict[str, Any] | str,
    checkpoint: str,
    paused: bool = False,
    trigger_interval: str = "100 milliseconds",
) -> TaskQuery:
    """Start a Spark-level source task: its streaming DataFrame → Kafka.

    :param task: a started :class:`~connectd.SparkSourceTask`.
    :param checkpoint: the task's own checkpoint directory, kept between runs: it is the
        source's only record of its progress.
    """
    from pyspark.sql import functions as F

    name = f"{connector}-{task_id}"

    def build(workdir: Path) -> StreamingQuery:
        frame = task.stream(spark)
        columns = set(frame.columns)
        if "value" not in columns:
            raise ValueError(f"{type(task).__name__}.stream() must return a DataFrame with a value column")
        if "topic" not in columns and not default_topic:
            raise ValueError(f"{type(task).__name__}.stream() has no topic column and the connector sets no topic")

        def column(column_name: str, kind: str) -> Any:
            return F.col(column_name).cast(kind) if column_name in columns else F.lit(None).cast(kind)

        topic = F.coalesce(F.col("topic"), F.lit(default_topic)) if "topic" in columns else F.lit(default_topic)
        rows = frame.select(
            topic.alias("topic"),
            column("partition", "int").alias("partition"),
            column("key", "binary").alias("key"),
            F.col("value").cast("binary").alias("value"),
            column("timestamp", "long").alias("timestamp"),
            column("headers", "array<struct<key: string, value: binary>>").alias("headers"),
            F.lit(None).cast("string").alias("source_partition"),
            F.lit(None).cast("string").alias("source_offset"),
        )
        writer = (
            rows.writeStream.format(kafka_io.FORMAT)
            .option(kafka_io.CLIENT_OPTION, _as_option(producer_config))
        )
        return _started(writer, checkpoint, name, trigger_interval)

    return _start(spark, name, build, paused)


def start_spark_sink_query(
    spark: SparkSession,
    *,
    connector: str,
    task_id: int,
    task: Any,
    consumer_config: dict[str, Any] | str,
    start: dict[str, int],
    commit: Any,
    max_records: int = 10_000,
    paused: bool = False,
    trigger_interval: str = "100 milliseconds",
) -> TaskQuery:
    """Start a Spark-level sink task: Kafka → its ``write_batch`` → offsets committed to the group.

    :param task: a started :class:`~connectd.SparkSinkTask`.
    :param commit: ``commit({TopicPartition: next offset})``, called after ``write_batch`` returned.
    """
    from pyspark.sql import functions as F

    from connectd.connector import TopicPartition

    name = f"{connector}-{task_id}"

    def each_batch(frame: Any, batch_id: int) -> None:
        frame = frame.persist()
        try:
            ends = frame.groupBy("topic", "partition").agg(F.max("offset").alias("last")).collect()
            if not ends:
                return
            task.write_batch(frame, batch_id)
            commit({TopicPartition(row["topic"], row["partition"]): row["last"] + 1 for row in ends})
        finally:
            frame.unpersist()

    def build(workdir: Path) -> StreamingQuery:
        writer = (
            _kafka_stream(spark, workdir, consumer_config, start, max_records)
            .writeStream.foreachBatch(each_batch)
        )
        return _started(writer, workdir / "checkpoint", name, trigger_interval)

    return _start(spark, name, build, paused)
