"""Starting and stopping one task's streaming query.

Each task is one named query (``<connector>-<task>``) with a checkpoint
directory made for this run only: offsets live in Kafka or
the offsets file, so a checkpoint is scratch and is removed on stop.

Stopping, within ``task.shutdown.graceful.timeout.ms``::

    RUNNING --stop()--> DRAINING: the stop file exists, the reader reads no new data (a source
                        task's reader offers what its task polled before, as one last batch);
                        the batch in flight finishes, is written and commits its offsets
            --idle-->   query.stop()  (nothing lost, nothing replayed)
            --timeout-> query.stop() cancels the batch in flight; its offsets were
                        not stored, so the next run replays it (at-least-once)
    then                a sink task's plugin instances in executors on this host see the
                        stop file and stop, a source task's planner process stops its task;
                        stop() waits for them (bounded), then removes the run directory
                        (see :mod:`connectd.runtime.sink.executor`, :mod:`~connectd.runtime.source.task`)

All calls block (py4j): run them in a thread, never on the event loop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from connectd.connector import TopicPartition
from connectd.metrics import timed_commit
from connectd.runtime.fencing import LEASE_OPTION, fenced, lease_expired
from connectd.runtime.kafka import clients as kafka_clients
from connectd.runtime.kafka import io as kafka_io
from connectd.runtime.kafka import reading as kafka_reading
from connectd.runtime.offsets.store import store_offsets_hook
from connectd.runtime.sink import executor as executor_sink
from connectd.runtime.source import executor as source_executor
from connectd.runtime.source import task as source_task
from connectd.runtime.source import wire as source_wire
from connectd.runtime.source.active_topics import active_topics_file, record_topics

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = [
    "TaskQuery",
    "file_name_part",
    "live_registrations",
    "register_data_sources",
    "start_sink_query",
    "start_source_query",
    "start_spark_sink_query",
    "start_spark_source_query",
]

#: In a sink task's run directory: where partitions the task moved start next (kafka_reading.add_seeks).
_SEEK_FILE = "seek.json"
#: In a sink task's run directory: the partitions the task has paused (kafka_reading.set_paused).
_PAUSED_FILE = "paused.json"
#: In a sink task's run directory: how long its batches linger (kafka_reading.set_linger).
_LINGER_FILE = "linger.ms"
_IDLE_CHECKS = 3
_POLL_S = 0.1
#: The least time a stopping sink task waits for its instances in executors to stop.
_INSTANCES_STOP_S = 5.0


def file_name_part(name: str, limit: int = 100) -> str:
    """*name* (a connector's, a task's) as one part of a file name, never a path of its own:
    anything but letters, digits and ``_.-~`` is percent-encoded (``/`` and control
    characters among them), and a name longer than *limit* is cut, a hash of the whole
    name kept, so two names never share a directory. A plain name stays as it is."""
    encoded = urllib.parse.quote(name, safe="")
    if len(encoded) <= limit:
        return encoded
    return f"{encoded[:limit - 17]}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:16]}"


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

    def linger(self, ms: int) -> None:
        """Have a record-level sink task's next batches linger *ms* (``sink.batch.linger.ms``; 0: not).

        Nothing once the run directory is gone: the task stopped meanwhile (its run is over).
        """
        with contextlib.suppress(FileNotFoundError):
            kafka_reading.set_linger(self.workdir / _LINGER_FILE, ms)

    def is_active(self) -> bool:
        return self.query.isActive

    def progress(self) -> tuple[bool, float | None]:
        """Whether a trigger (planning and running a micro-batch) is under way, and when (wall clock,
        seconds) the query last reported progress: after each micro-batch, and every
        ``spark.sql.streaming.noDataProgressEventInterval`` while idle; ``None`` before the first."""
        trigger_active = bool(self.query.status.get("isTriggerActive"))
        last = self.query.lastProgress
        if last is None:
            return trigger_active, None
        began = datetime.datetime.fromisoformat(last.timestamp.replace("Z", "+00:00")).timestamp()
        return trigger_active, began + (last.batchDuration or 0) / 1000

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
        self._wait_for_instances(max(graceful_timeout_s, _INSTANCES_STOP_S))
        shutil.rmtree(self.workdir, ignore_errors=True)
        return self.stopped_gracefully

    def discard(self) -> None:
        """Remove the run directory of a query that ended by itself (it failed)."""
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _wait_for_instances(self, timeout_s: float) -> None:
        """Wait until the task's plugin instances on this host stopped (executors' saw the stop file;
        a source task's planner process was told to end by Spark), or their processes ended."""
        registered = Path(executor_sink.instances_dir(self.workdir))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and live_registrations(registered):
            time.sleep(_POLL_S)


def live_registrations(directory: Path) -> list[Path]:
    """The registrations in a run's instances *directory* whose process is alive: each file's name
    ends with its process id. A process killed (SIGKILL) never removed its own: it is removed here,
    so that a stop does not wait out its timeout for it — also while the killed process is a zombie
    its parent has not reaped yet (it exists, and will never run again)."""
    live = []
    for path in directory.iterdir() if directory.is_dir() else ():
        pid = path.name.rsplit("-", 1)[-1]
        try:
            os.kill(int(pid), 0)
            if _zombie(int(pid)):
                raise ProcessLookupError
        except ProcessLookupError:
            path.unlink(missing_ok=True)
            continue
        except (ValueError, PermissionError):
            pass  # not a pid, or another user's process: it counts as alive
        live.append(path)
    return live


def _zombie(pid: int) -> bool:
    """Whether process *pid* has ended and waits to be reaped (Linux's ``/proc``; elsewhere: no)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] == b"Z"  # the state follows the command's ")"
    except (OSError, IndexError):
        return False


def _as_option(client: dict[str, Any] | str) -> str:
    return client if isinstance(client, str) else json.dumps(client)


def _start(spark: SparkSession, name: str, build: Callable[[Path], StreamingQuery], paused: bool = False) -> TaskQuery:
    """Start the query *build* makes, in its own run directory.

    *build* gets the run directory (stop and pause files, scratch checkpoint);
    the directory is removed again if the query does not start. *paused*
    creates the pause file first, so not even a first batch is read.
    """
    register_data_sources(spark)
    workdir = Path(tempfile.mkdtemp(prefix=f"connectd-{file_name_part(name)}-"))
    if paused:
        (workdir / "pause").touch()
    # No scheduler pool of its own: FIFO (WorkerConfig.spark_conf) serves every task's batches in
    # turn, where a pool per task under FAIR starved the last-named tasks.
    try:
        query = build(workdir)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return TaskQuery(name, query, workdir, workdir / "stop")


def _kafka_stream(spark: SparkSession, workdir: Path, consumer_config: dict[str, Any] | str,
                  start: dict[str, int], max_records: int, rows: str = "records", source: str = kafka_clients.FORMAT,
                  options: dict[str, str] | None = None, lease_file: str | None = None) -> Any:
    """The task's partitions from *start*, honouring the run's stop and pause files and the worker's lease."""
    return (
        spark.readStream.format(source)
        .options(**(options or {}))
        .options(**({LEASE_OPTION: lease_file} if lease_file else {}))
        .option(kafka_clients.CLIENT_OPTION, _as_option(consumer_config))
        .option("start", json.dumps(start))
        .option("max.records", str(max_records))
        .option("rows", rows)
        .option("stop.file", str(workdir / "stop"))
        .option("pause.file", str(workdir / "pause"))
        .option("seek.file", str(workdir / _SEEK_FILE))
        .option("paused.file", str(workdir / _PAUSED_FILE))
        .option("linger.file", str(workdir / _LINGER_FILE))
        .load()
    )


def _started(writer: Any, checkpoint: str | Path, name: str, trigger_interval: str) -> StreamingQuery:
    """*writer* started as the task's named query, micro-batches every *trigger_interval* at most."""
    return (
        writer.option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=trigger_interval)
        .queryName(name)
        .start()
    )


def register_data_sources(spark: SparkSession) -> None:
    """Register connectd's Python data sources in *spark*, once, and make it this thread's active session."""
    # Queries start from worker threads; Spark looks Python data sources up in
    # the thread's active session, which a new thread does not have.
    spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)
    with _register_lock:  # tasks start concurrently
        if getattr(spark, "_connectd_data_sources", False):
            return  # registering again would only make Spark warn that each replaced itself
        spark.dataSource.register(kafka_io.KafkaDataSource)
        spark.dataSource.register(executor_sink.SinkTaskDataSource)
        spark.dataSource.register(source_task.SourceTaskDataSource)
        spark.dataSource.register(source_executor.SourceExecutorDataSource)
        spark._connectd_data_sources = True


_register_lock = threading.Lock()


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
    admin_config: dict[str, Any] | str | None = None,
    max_records: int = 100_000,
    paused: bool = False,
    trigger_interval: str = "100 milliseconds",
    metrics: Any = None,
    lease_file: str | None = None,
    on_executors: bool = True,
    exactly_once: dict[str, Any] | None = None,
) -> TaskQuery:
    """Start a source task's query: plugin → transforms → converters → Kafka → offset store.

    :param task_class: dotted path of the plugin's :class:`~connectd.SourceTask`.
    :param producer_config: the data producer's :data:`~connectd.runtime.kafka.clients.CLIENT_OPTION`
        value (:func:`~connectd.runtime.kafka.clients.client_option`), or confluent-kafka settings.
    :param offsets: where the task's offsets are read and stored: an
        :func:`~connectd.runtime.offsets.store.open_offset_store` spec (JSON-serialisable; a topic's
        client as written, resolved in Spark's process).
    :param offsets_path: the offsets file, for ``{"kind": "file", "path": offsets_path}``.
    :param admin_config: the admin client's, as *producer_config*, for the topics the task creates
        (``topic.creation.*``); ``None``: the producer's settings.
    :param metrics: the task's :class:`connectd.metrics.TaskMetrics`, told of each batch and offset commit.
    :param lease_file: the worker's lease (:mod:`connectd.runtime.fencing`): once it ended, no batch is
        taken and no batch's offsets are stored.
    :param on_executors: the task runs on an executor's host, its records produced there
        (:mod:`connectd.runtime.source.executor`); ``False`` (``SourceTask.poll_on_driver``): it
        is polled in Spark's planner process on this host (:mod:`connectd.runtime.source.task`).
    :param exactly_once: ``{"transactional_id": …, "boundary": …, "interval_ms": …}``: the task's records and
        their offsets are written in transactions by the task's own process
        (:mod:`connectd.runtime.source.transactions`), and this process stores no offsets for it.
        Needs an offsets topic and the task on an executor.
    """
    if (offsets is None) == (offsets_path is None):
        raise ValueError("start_source_query needs one of offsets and offsets_path")
    offsets_spec = dict(offsets) if offsets is not None else {"kind": "file", "path": offsets_path}
    if exactly_once is not None and (not on_executors or offsets_spec.get("kind") != "topic"):
        raise ValueError("exactly-once delivery needs the task on an executor and its offsets in a topic")
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
        "admin": _as_option(admin_config if admin_config is not None else producer_config),
        "run": uuid.uuid4().hex,
        **({source_wire.EXACTLY_ONCE: dict(exactly_once)} if exactly_once is not None else {}),
    }
    local = spark.sparkContext.master.startswith("local")  # executors on this host
    tracking = str(worker_config.get("topic.tracking.enable", "true")).strip().lower() != "false"

    def build(workdir: Path) -> StreamingQuery:
        stored_dir = workdir / "stored"
        options = {source_task.SPEC_OPTION: json.dumps(spec), "stop.file": str(workdir / "stop"),
                   "pause.file": str(workdir / "pause"), "max.records": str(max_records),
                   "stored.dir": str(stored_dir), **({LEASE_OPTION: lease_file} if lease_file else {})}
        if local and on_executors:  # the task's host flags records waiting in the run directory
            options["host.local"] = "true"
            # Its process starts now, beside this one, while Spark starts the query.
            source_wire.prepare(source_executor.run_key(spec), json.dumps(options))
        elif local:  # executors on this host: batches as files
            options["handoff.dir"] = str(workdir / "batches")
        stream = (spark.readStream.format(source_executor.FORMAT if on_executors else source_task.FORMAT)
                  .options(**options).load())
        store = json.dumps({**offsets_spec, "connector": connector})
        topics_file = active_topics_file(workdir) if tracking and on_executors else None
        topics_written: set[str] = set()

        def each_batch(frame: Any, batch_id: int) -> None:
            # Collecting the batch is producing it (source_task.SourceTaskReader.read, in an
            # executor); its offsets come back only once every record was acknowledged.
            began = time.monotonic()
            offsets: dict[str, str] = {}
            records = 0
            stored = []
            for row in frame.collect():
                if row["source_partition"] is not None:
                    offsets[row["source_partition"]] = row["source_offset"]
                records += row["records"] or 0
                if row["stored"] is not None:
                    stored.append(row["stored"])
            if offsets and fenced(lease_file, f"batch {batch_id}"):
                return
            if offsets and exactly_once is None:  # else committed with the records, by the task's process
                with timed_commit(metrics):
                    store_offsets_hook(store, batch_id, offsets, records)
            if metrics is not None:
                metrics.batch(time.monotonic() - began, records, "source")
                for text in stored:
                    metrics.task_counts(json.loads(text).get("stats", {}))
            if topics_file is not None:  # the host reports each batch's topics (KIP-558)
                for text in stored:
                    record_topics(topics_file, set(json.loads(text).get("topics") or ()), topics_written)
            for index, text in enumerate(stored):  # commit_record and commit follow (source_task, "Acknowledgements")
                stored_dir.mkdir(exist_ok=True)
                temporary = stored_dir / f"{batch_id:012d}-{index}.tmp"
                temporary.write_text(text, encoding="utf-8")
                temporary.replace(temporary.with_suffix(".json"))

        return _started(stream.writeStream.foreachBatch(each_batch), workdir / "checkpoint", name,
                        trigger_interval)

    return _start(spark, name, build, paused)


def start_sink_query(
    spark: SparkSession,
    *,
    connector: str,
    task_id: int,
    consumer_config: dict[str, Any] | str,
    start: dict[str, int],
    commit: Callable[[dict[Any, int]], None],
    on_topics: Callable[[set[str]], None],
    spec: executor_sink.SinkSpec | None = None,
    runner: Any = None,
    reader: Any = None,
    max_records: int = 100_000,
    put_records: int = 500,
    paused: bool = False,
    trigger_interval: str = "100 milliseconds",
    tick_ms: int = 0,
    linger_ms: int = 0,
    metrics: Any = None,
    lease_file: str | None = None,
) -> TaskQuery:
    """Start a record-level sink task's query: Kafka → converters → transforms → plugin → group offsets.

    A micro-batch is the offset ranges of the task's partitions (at most
    *max_records* records). With a *spec* they are read and put in an
    executor (:mod:`connectd.runtime.sink.executor`) and this process only
    commits what the executor's ``pre_commit`` allowed, once the whole batch
    succeeded. With a *runner* and *reader* instead (a plugin that declares
    :attr:`~connectd.SinkTask.pinned`), this process reads and puts them.

    :param consumer_config: the data consumer's :data:`~connectd.runtime.kafka.clients.CLIENT_OPTION`
        value, or confluent-kafka settings.
    :param start: ``{"topic:partition": offset}`` to read from (the group's committed offsets).
    :param commit: ``commit({TopicPartition: next offset})`` stores offsets in the group.
    :param on_topics: told the topics each batch consumed (KIP-558).
    :param spec: the task for executors; its ``run`` and ``workdir`` are filled in here.
    :param runner: a pinned task's :class:`~connectd.runtime.sink.task.SinkTaskRunner` (started).
    :param reader: its :class:`~connectd.runtime.kafka.consumers.RangeReader`.
    :param put_records: the most records of one ``put``.
    :param tick_ms: after this long without records, a batch without any (a tick): the task's
        ``put([])`` and ``pre_commit``, so it can flush on time (the worker's
        ``offset.flush.interval.ms``); 0 for none.
    :param linger_ms: with a *spec*: a batch with records goes on putting the records that arrive
        until this long after it began (:func:`connectd.runtime.sink.executor.run`); 0 for never.
        :meth:`TaskQuery.linger` changes it for the next batches.
    :param lease_file: the worker's lease (:mod:`connectd.runtime.fencing`): once it ended, no batch
        is planned (*commit* is the one to refuse offsets then).
    """
    if (spec is None) == (runner is None):
        raise ValueError("start_sink_query needs a spec (executors) or a runner (pinned), not both")
    name = f"{connector}-{task_id}"

    def build(workdir: Path) -> StreamingQuery:
        if spec is not None:
            task_spec = dataclasses.replace(spec, run=uuid.uuid4().hex, workdir=str(workdir),
                                            put_records=put_records, max_records=max_records,
                                            lease_file=lease_file or "")
            kafka_reading.set_linger(workdir / _LINGER_FILE, linger_ms)

            def each_batch(frame: Any, batch_id: int) -> None:
                # Collecting the batch is running it: executor_sink.SinkTaskReader.read puts it.
                began = time.monotonic()
                results = frame.collect()
                if not results:
                    return
                on_topics({row["topic"] for row in results})
                safe = {TopicPartition(row["topic"], row["partition"]): row["committed"]
                        for row in results if row["committed"] is not None}
                if safe:
                    commit(safe)
                seeks = {kafka_clients.encode_tp(row["topic"], row["partition"]): row["seek"]
                         for row in results if row["seek"] is not None}
                if seeks:
                    kafka_reading.add_seeks(workdir / _SEEK_FILE, seeks)
                kafka_reading.set_paused(workdir / _PAUSED_FILE,
                                         {kafka_clients.encode_tp(row["topic"], row["partition"])
                                          for row in results if row["paused"]})
                if metrics is not None:
                    metrics.batch(time.monotonic() - began, sum(row["records"] or 0 for row in results), "sink")
                    metrics.sink_read({(row["topic"], row["partition"]): row["end"]
                                       for row in results if row["end"] is not None})
                    for row in results:
                        if row["stats"] is not None:
                            counts = json.loads(row["stats"])
                            lag = counts.pop("lag")
                            metrics.task_counts(counts, {kafka_clients.decode_tp(key): n for key, n in lag.items()})

            stream = _kafka_stream(spark, workdir, consumer_config, start, max_records, "ranges",
                                   executor_sink.FORMAT, {executor_sink.SPEC_OPTION: task_spec.to_json(),
                                                          "tick.ms": str(tick_ms)}, lease_file)
        else:
            stop_file = workdir / "stop"
            # A put() being retried gives up once the task stops, or once the worker's lease ended.
            runner.stopping = lambda: stop_file.exists() or lease_expired(lease_file)

            def each_batch(frame: Any, batch_id: int) -> None:
                began = time.monotonic()
                rows = frame.collect()
                ranges = [(row["topic"], row["partition"], row["start"], row["end"]) for row in rows]
                if ranges:
                    on_topics({topic for topic, _, _, _ in ranges})
                    runner.process_ranges(ranges, reader, put_records)
                    if runner.seeks:
                        kafka_reading.add_seeks(workdir / _SEEK_FILE,
                                                {kafka_clients.encode_tp(tp.topic, tp.partition): offset
                                                 for tp, offset in runner.seeks.items()})
                    kafka_reading.set_paused(workdir / _PAUSED_FILE,
                                             {kafka_clients.encode_tp(tp.topic, tp.partition) for tp in runner.paused})
                    if metrics is not None:
                        metrics.batch(time.monotonic() - began, sum(end - begin for _, _, begin, end in ranges), "sink")
                        metrics.sink_read({(topic, partition): end for topic, partition, _, end in ranges})
                        metrics.task_counts(runner.take_counts(), {(row["topic"], row["partition"]): row["lag"]
                                                                   for row in rows if row["lag"] is not None})

            stream = _kafka_stream(spark, workdir, consumer_config, start, max_records, "ranges",
                                   options={"tick.ms": str(tick_ms)}, lease_file=lease_file)
        return _started(stream.writeStream.foreachBatch(each_batch), workdir / "checkpoint", name, trigger_interval)

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
            rows.writeStream.format(kafka_clients.FORMAT)
            .option(kafka_clients.CLIENT_OPTION, _as_option(producer_config))
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
    lease_file: str | None = None,
) -> TaskQuery:
    """Start a Spark-level sink task: Kafka → its ``write_batch`` → offsets committed to the group.

    :param task: a started :class:`~connectd.SparkSinkTask`.
    :param commit: ``commit({TopicPartition: next offset})``, called after ``write_batch`` returned.
    :param lease_file: the worker's lease (:mod:`connectd.runtime.fencing`): once it ended, no batch
        is planned.
    """
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
            _kafka_stream(spark, workdir, consumer_config, start, max_records, lease_file=lease_file)
            .writeStream.foreachBatch(each_batch)
        )
        return _started(writer, workdir / "checkpoint", name, trigger_interval)

    return _start(spark, name, build, paused)
