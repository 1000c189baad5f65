"""Task assembly: from a task's config to its running Spark query, and back to nothing.

Both herders (standalone and distributed) start and stop tasks here, so a
source or sink task is built the same way whoever decided it runs on this
worker::

    start(task) ── record-level source ─► start_source_query      (polled and produced in the task's
                │                         process on an executor's host; poll_on_driver: in Spark's
                │                         planner process, produced by an executor)
                ├─ Spark-level source  ─► start_spark_source_query (the plugin's own DataFrame)
                ├─ record-level sink   ─► start_sink_query: offset ranges put in an executor
                │                         (executor_sink), offsets committed here after the batch;
                │                         a pinned plugin: SinkTaskRunner in this process instead
                └─ Spark-level sink    ─► start_spark_sink_query   (write_batch per micro-batch)
    stop(handle) ── the query stops gracefully (bounded), then the task's clients close:
                    runner (close/stop the plugin), group consumer, dead-letter queue, Spark-level task

Configs reach Spark as written (``${provider:…}`` unresolved); what runs in
this process resolves them itself. Where a source task's offsets live is
the herder's choice (:attr:`TaskAssembler.source_offsets`): the offsets
file in standalone mode, the offsets topic in distributed mode.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectd.config.connector import ConnectorConfig, ErrorPolicy, client_overrides
from connectd.config.worker import WorkerConfig
from connectd.connector import (
    OffsetStorageReader,
    SinkTaskContext,
    SourceTaskContext,
    SparkSinkTask,
    SparkSourceTask,
    TopicPartition,
)
from connectd.errors import ConfigError, ConnectorError
from connectd.logging import get_logger
from connectd.metrics import timed_commit
from connectd.runtime.converter_choice import configure_converters
from connectd.runtime.dead_letters import DeadLetterQueue, ensure_dlq_topic
from connectd.runtime.error_handling import ErrorHandler
from connectd.runtime.fencing import fenced
from connectd.runtime.kafka.clients import client_option, decode_tp, encode_tp
from connectd.runtime.kafka.consumers import RangeReader, consumer_settings
from connectd.runtime.sink.executor import SinkSpec
from connectd.runtime.sink.task import SinkTaskRunner, assign_partitions, matching_topics, start_offsets
from connectd.runtime.source.wire import transactional_id
from connectd.runtime.spark.queries import (
    file_name_part,
    start_sink_query,
    start_source_query,
    start_spark_sink_query,
    start_spark_source_query,
)
from connectd.transforms.chain import TransformationChain

__all__ = ["TaskAssembler", "TaskHandle", "max_put_records", "task_class_name"]

log = get_logger(__name__)


def _servers(value: str) -> set[str]:
    return {server.strip() for server in value.split(",") if server.strip()}


def task_class_name(cls: type) -> str:
    """The dotted path a task class is loaded by."""
    return f"{cls.__module__}.{cls.__qualname__}"


def max_put_records(worker: Any, connector_config: Mapping[str, str]) -> int:
    """The most records one ``put()`` gets, as Kafka Connect's ``max.poll.records`` bounds them: the
    connector's ``consumer.override.max.poll.records`` (resolved), else the worker's
    ``consumer.max.poll.records``, else 500.

    :raises ConfigError: naming the key, if the value is not a positive integer.
    """
    key = "consumer.override.max.poll.records"
    value = connector_config.get(key)
    if value is None:
        key, value = "consumer.max.poll.records", worker.with_prefix("consumer.").get("max.poll.records", "500")
    try:
        records = int(str(value).strip())
    except ValueError:
        records = 0
    if records < 1:
        raise ConfigError([f"{key}={value!r}: expected a positive integer (the most records one put() gets)"])
    return records


@dataclass
class TaskHandle:
    """What one running task holds; :meth:`TaskAssembler.stop` releases it all."""

    query: Any = None
    runner: Any = None
    consumer: Any = None
    reader: Any = None
    dead_letters: Any = None
    spark_task: Any = None
    #: A sink task's partitions of all its topics when it started (for rediscovery).
    partitions: frozenset[TopicPartition] = frozenset()
    #: How many of them this sink task consumes.
    task_partitions: int | None = None
    #: The task's :class:`connectd.metrics.TaskMetrics` (``None``: not counted).
    metrics: Any = None


class TaskAssembler:
    """Builds and stops task queries for one worker.

    :param worker: the worker's configuration.
    :param spark: the worker's SparkSession.
    :param registry: the plugin registry.
    :param admin: ``admin(connector_config=None)``: the herder's confluent-kafka ``AdminClient`` (made
        on first use), the connector's own where its config has ``admin.override.*``.
    :param source_offsets: the offsets spec of a source connector's tasks, given its parsed config
        (``{"kind": "file", "path": …}`` or ``{"kind": "topic", …}``).
    :param on_topics: ``on_topics(connector, topics)``: a sink task's batch used *topics*.
    :param checkpoints: where Spark-level source tasks keep their Spark checkpoints between runs;
        ``None`` where a task may move between workers (a cluster), which refuses such tasks.
    :param lease_file: a cluster worker's lease (:mod:`connectd.runtime.fencing`), which every task's
        query honours: no batch planned, no offsets stored, once it ended; ``None``: no lease.
    """

    def __init__(self, worker: WorkerConfig, spark: Any, registry: Any, admin: Callable[..., Any],
                 source_offsets: Callable[[ConnectorConfig], dict[str, Any]],
                 on_topics: Callable[[str, Iterable[str]], None], checkpoints: Path | None = None,
                 lease_file: str | None = None) -> None:
        self.worker = worker
        self.spark = spark
        self.registry = registry
        self._admin = admin
        self.source_offsets = source_offsets
        self._on_topics = on_topics
        self.checkpoints = checkpoints
        self.lease_file = lease_file
        #: Record-level sink tasks on executors, first started first: who may linger (:meth:`_share_linger`).
        self._sinks: list[TaskHandle] = []
        self._sinks_lock = threading.Lock()

    # --- clients ---

    def client(self, client: str, connector_config: Mapping[str, str]) -> dict[str, Any]:
        """confluent-kafka settings for this worker's *client* with the connector's overrides."""
        return self.worker.client_config(client, "confluent", overrides=client_overrides(client, connector_config))

    def client_option(self, client: str, connector_config: Mapping[str, str]) -> str:
        """Client settings for Spark's processes, as written: they resolve placeholders themselves."""
        return client_option(self.worker.originals(), client, client_overrides(client, connector_config))

    def sink_partitions(self, settings: ConnectorConfig, metadata: Any = None) -> frozenset[TopicPartition]:
        """Every partition of the topics a sink connector consumes (``topics`` or ``topics.regex``)."""
        metadata = metadata if metadata is not None else self._admin().list_topics(timeout=30)
        topics = matching_topics(metadata.topics, list(settings.topics), settings.topics_regex)
        return frozenset(TopicPartition(t, p) for t in topics for p in metadata.topics[t].partitions)

    # --- start / stop ---

    def start(self, *, connector: str, connector_config: Mapping[str, str], settings: ConnectorConfig,
              task_class: type, task_id: int, task_config: Mapping[str, str], tasks: int, paused: bool,
              metrics: Any = None) -> TaskHandle:
        """Start one task's query (blocking: call it from a thread).

        :param connector_config: the connector's config as written (what Spark's processes get).
        :param settings: its declared keys, parsed (kind, topics, error handling).
        :param tasks: how many tasks the connector has (a sink task's share of partitions).
        :param metrics: the task's :class:`connectd.metrics.TaskMetrics`: its micro-batches and offset
            commits are counted there (record-level tasks).
        """
        handle = TaskHandle(metrics=metrics)
        try:
            if issubclass(task_class, SparkSourceTask):
                self._start_spark_source(handle, connector, connector_config, task_class, task_id, task_config,
                                         paused)
            elif settings.kind == "source":
                self._start_source(handle, connector, connector_config, settings, task_class, task_id, task_config,
                                   paused)
            else:
                self._start_sink(handle, connector, connector_config, settings, task_class, task_id, task_config,
                                 tasks, paused)
        except BaseException:
            self.release(handle)
            raise
        return handle

    def stop(self, handle: TaskHandle, graceful_timeout_s: float) -> None:
        """Stop the query (the batch in flight finishes, bounded by *graceful_timeout_s*), then release.

        A sink task stopping leaves the lingering tasks first: no other task's stop or start
        writes into its run directory once its query may remove it.
        """
        self._share_linger(gone=handle)
        try:
            if handle.query is not None and handle.query.is_active():
                if not handle.query.stop(graceful_timeout_s):
                    log.warning("task_stop_not_graceful",
                                message="the batch in flight was cancelled and will be replayed")
                    if handle.runner is not None:
                        handle.runner.failed = True  # its last batch did not finish: nothing more to commit
            elif handle.query is not None:  # it failed: nothing to stop, its scratch to remove
                handle.query.discard()
        finally:
            self.release(handle)

    def release(self, handle: TaskHandle) -> None:
        """Close the task's clients and plugin instance, each whatever the others did (a failure is
        logged with its trace); each is dropped so it is destroyed now."""
        self._share_linger(gone=handle)
        closers = [("runner", handle.runner, "close"), ("reader", handle.reader, "close"),
                   ("consumer", handle.consumer, "close"), ("dead_letters", handle.dead_letters, "close"),
                   ("spark_task", handle.spark_task, "stop")]
        handle.runner = handle.reader = handle.consumer = handle.dead_letters = handle.spark_task = None
        for part, holder, method in closers:
            if holder is None:
                continue
            try:
                getattr(holder, method)()
            except Exception as exc:  # noqa: BLE001 - the other parts are released all the same
                log.error("task_release_failed", part=part, error=f"{type(exc).__name__}: {exc}", exc_info=exc)

    def _share_linger(self, new: TaskHandle | None = None, gone: TaskHandle | None = None) -> None:
        """Give ``sink.batch.linger.ms`` to as many record-level sink tasks on executors as Spark
        has cores less one, first started first; the others' batches do not linger.

        A lingering batch holds a core for its whole time: more of them than cores would queue
        for the cores, and the core left over runs every other task's batches.
        """
        linger_ms = self.worker.get("sink.batch.linger.ms")
        with self._sinks_lock:
            if gone is not None:
                if not any(sink is gone for sink in self._sinks):
                    return
                self._sinks = [sink for sink in self._sinks if sink is not gone]
            if new is not None:
                self._sinks.append(new)
            cores = self.spark.sparkContext.defaultParallelism if linger_ms and self.spark is not None else 0
            for index, sink in enumerate(self._sinks):
                sink.query.linger(linger_ms if index < cores - 1 else 0)

    # --- the four kinds ---

    def _start_source(self, handle: TaskHandle, connector: str, connector_config: Mapping[str, str],
                      settings: ConnectorConfig, task_class: type, task_id: int, task_config: Mapping[str, str],
                      paused: bool) -> None:
        if settings.errors.dlq_topic:  # the reader's process sends to it; it must exist first
            self._ensure_dlq(settings.errors, connector_config)
        on_executors = not getattr(task_class, "poll_on_driver", False)
        handle.query = start_source_query(
            self.spark,
            connector=connector,
            task_id=task_id,
            task_class=task_class_name(task_class),
            task_config=dict(task_config),
            connector_config=dict(connector_config),
            worker_config=self.worker.originals(),
            producer_config=self.client_option("producer", connector_config),
            offsets=self.source_offsets(settings),
            admin_config=self.client_option("admin", connector_config),
            max_records=self.worker.get("source.batch.max.records"),
            paused=paused,
            metrics=handle.metrics,
            lease_file=self.lease_file,
            on_executors=on_executors,
            exactly_once=self._exactly_once(connector, task_id, on_executors, connector_config, settings),
        )

    def _exactly_once(self, connector: str, task_id: int, on_executors: bool,
                      connector_config: Mapping[str, str], settings: ConnectorConfig) -> dict[str, Any] | None:
        """A source task's transactions (:mod:`connectd.runtime.source.transactions`) with
        ``exactly.once.source.support=enabled``: Kafka Connect's transactional id, its boundary.

        :raises ConnectorError: the task is polled on the driver, where no transaction holds its records;
            or its records go to another Kafka cluster than its offsets topic's, which no transaction spans.
        """
        if not self.worker.exactly_once_source:
            return None
        if not on_executors:
            raise ConnectorError("exactly.once.source.support is enabled and this task is polled on the driver "
                                 "(poll_on_driver): exactly-once delivery needs its records produced where it is "
                                 "polled, on an executor")
        other = _servers(self.worker.providers.resolve(connector_config.get("producer.override.bootstrap.servers", "")))
        if other and other != _servers(str(self.worker.resolved("bootstrap.servers") or "")):
            raise ConnectorError("exactly.once.source.support is enabled and producer.override.bootstrap.servers "
                                 "names another Kafka cluster than the worker's, where the offsets topic is: no "
                                 "transaction spans two clusters (not supported yet: docs/exactly-once.md)")
        interval_ms = settings.transaction_interval_ms
        return {"transactional_id": transactional_id(str(self.worker.get("group.id")), connector, task_id),
                "boundary": settings.transaction_boundary,
                "interval_ms": interval_ms if interval_ms is not None else self.worker.get("offset.flush.interval.ms")}

    def _start_spark_source(self, handle: TaskHandle, connector: str, connector_config: Mapping[str, str],
                            task_class: type, task_id: int, task_config: Mapping[str, str], paused: bool) -> None:
        if self.checkpoints is None:
            raise ConnectorError(
                f"{task_class_name(task_class)} is a Spark-level source task: its progress is a Spark checkpoint "
                "on this machine, which a task moving to another worker would not find. Such tasks run on "
                "standalone workers only (not supported in distributed mode yet).")
        config = self._resolved(task_config)
        instance = task_class()
        instance.context = SourceTaskContext(config, OffsetStorageReader(lambda parts: {}))
        instance.initialize(instance.context)
        instance.start(config)
        handle.spark_task = instance
        checkpoint = self.checkpoints / file_name_part(f"{connector}-{task_id}")
        handle.query = start_spark_source_query(
            self.spark, connector=connector, task_id=task_id, task=instance, default_topic=config.get("topic"),
            producer_config=self.client_option("producer", connector_config), checkpoint=str(checkpoint),
            paused=paused,
        )

    def _start_sink(self, handle: TaskHandle, connector: str, connector_config: Mapping[str, str],
                    settings: ConnectorConfig, task_class: type, task_id: int, task_config: Mapping[str, str],
                    tasks: int, paused: bool) -> None:

        config = self._resolved(task_config)
        consumer_config = self.client("consumer", connector_config)
        metadata = self._admin().list_topics(timeout=30)
        handle.partitions = self.sink_partitions(settings, metadata)
        assigned = assign_partitions(handle.partitions, task_id, tasks)
        handle.task_partitions = len(assigned)
        group_settings = {**consumer_settings(consumer_config), "group.id": settings.group_id,
                          "enable.auto.commit": False}
        group = handle.consumer = Consumer(group_settings)

        metrics = handle.metrics

        def commit(offsets: Mapping[TopicPartition, int]) -> None:
            if fenced(self.lease_file, f"{connector}-{task_id}'s last"):
                return
            with timed_commit(metrics):
                group.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()],
                             asynchronous=False)
            if metrics is not None:
                metrics.sink_committed({(tp.topic, tp.partition): o for tp, o in offsets.items()})

        start = start_offsets(group, assigned, consumer_config.get("auto.offset.reset", "earliest"))
        if metrics is not None:  # what it reads from there on is active until committed
            metrics.sink_committed({decode_tp(key): offset for key, offset in start.items()})
        if issubclass(task_class, SparkSinkTask):
            instance = task_class()
            instance.context = SinkTaskContext(config, assigned)
            instance.initialize(instance.context)
            instance.start(config)
            handle.spark_task = instance
            # A task that keeps its own offsets (a table it commits them to) says where to start.
            for tp, offset in instance.context.rewinds.items():
                if tp in assigned:
                    start[encode_tp(tp.topic, tp.partition)] = offset

            def commit_batch(offsets: Mapping[TopicPartition, int]) -> None:
                # Called with the partitions the batch read: its topics are the ones consumed.
                self._on_topics(connector, {tp.topic for tp in offsets})
                commit(offsets)

            handle.query = start_spark_sink_query(
                self.spark, connector=connector, task_id=task_id, task=instance,
                consumer_config=self.client_option("consumer", connector_config), start=start, commit=commit_batch,
                max_records=self.worker.get("sink.batch.max.records"), paused=paused, lease_file=self.lease_file)
            return
        resolved = self._resolved(connector_config)
        policy = settings.errors
        if policy.dlq_topic:
            self._ensure_dlq(policy, connector_config, metadata)
        put_records = max_put_records(self.worker, resolved)
        batch_records = self.worker.get("sink.batch.max.records")
        # An idle task still gets put([]) and pre_commit this often, to flush on time.
        tick_ms = self.worker.get("offset.flush.interval.ms")
        consumer_option = self.client_option("consumer", connector_config)

        def topics_used(topics: Iterable[str]) -> None:
            self._on_topics(connector, topics)

        if not getattr(task_class, "pinned", False):
            spec = SinkSpec(
                connector=connector, task_id=task_id, run="", task_class=task_class_name(task_class),
                task_config=dict(task_config), connector_config=dict(connector_config),
                worker_config=self.worker.originals(), consumer=consumer_option,
                producer=self.client_option("producer", connector_config),
                partitions=[(tp.topic, tp.partition) for tp in assigned], put_records=put_records, workdir="")
            handle.query = start_sink_query(self.spark, connector=connector, task_id=task_id,
                                            consumer_config=consumer_option, start=start, commit=commit,
                                            on_topics=topics_used, spec=spec, max_records=batch_records,
                                            put_records=put_records, paused=paused, tick_ms=tick_ms,
                                            metrics=metrics, lease_file=self.lease_file)
            self._share_linger(new=handle)
            return
        send = None
        if policy.dlq_topic:
            handle.dead_letters = DeadLetterQueue(self.client("producer", connector_config), policy.dlq_topic)
            send = handle.dead_letters.send
        registry = self.registry
        runner = handle.runner = SinkTaskRunner(
            task_class(), config, assigned,
            configure_converters(self.worker.originals(), dict(connector_config),
                                 lambda n: registry.find_class("converter", n), self.worker.providers.resolve),
            TransformationChain(resolved, registry.find_class), commit,
            # Retries of a record give up once the task is stopping (the runner's stopping, set when its query starts).
            ErrorHandler(policy, connector, task_id, send, sleep=lambda seconds: runner.wait_to_retry(seconds)),
            handle.dead_letters,
        )
        handle.reader = RangeReader(group, settings=group_settings)  # the group's consumer reads, and commits
        handle.query = start_sink_query(self.spark, connector=connector, task_id=task_id,
                                        consumer_config=consumer_option, start=start, commit=commit,
                                        on_topics=topics_used, runner=handle.runner,
                                        reader=handle.reader, max_records=batch_records,
                                        put_records=put_records, paused=paused, tick_ms=tick_ms, metrics=metrics,
                                        lease_file=self.lease_file)

    def _resolved(self, config: Mapping[str, str]) -> dict[str, str]:
        resolve = self.worker.providers.resolve
        return {k: resolve(v) for k, v in config.items()}

    def _ensure_dlq(self, policy: ErrorPolicy, connector_config: Mapping[str, str], metadata: Any = None) -> None:
        ensure_dlq_topic(self._admin(connector_config), policy.dlq_topic, policy.dlq_replication_factor, metadata)

