"""A record-level sink task's micro-batches, handled inside Spark executors.

::

    worker process (driver, control plane)        executor Python worker (data plane)
    ──────────────────────────────────────        ───────────────────────────────────
    connectd-sink-task reader (connectd-kafka's):
      a batch = offset ranges up to the high
      watermarks, sink.batch.max.records at most
    foreachBatch: collect() ── read(ranges) ──►   the task's instance in this Python worker
                                                  (made on first use: start(), open(partitions))
                                                  RangeReader reads the ranges (consumer kept)
                                                  converters ─► transforms ─► put(), max.poll.records each
                                                  pre_commit(batch ends) ─► the offsets it says are safe
                                                  sink.batch.linger.ms: records arriving at the task's
                                                  partitions are put and pre-committed as they come
                         ◄── one row per range ── (topic, partition, end, committed, seek)
    a partition read past its planned end: the next batch starts there (seek)
    the Spark job succeeded: commit those offsets to the connector's group
    the job failed: nothing is committed; the query fails and the task is FAILED with the trace

Reading a batch is handling it (:class:`SinkTaskReader`): the driver
collects the batch's rows, which are what the executor's ``pre_commit``
allowed, and no record crosses a process. The whole batch is one Spark
partition (the reader gives one input partition), so one Spark task handles it and batches run one after another:
**at most one instance of a task id processes records at any moment**, and
records keep their order per Kafka partition. The result rows reach the
driver only when every range was put and flushed, so an aborted batch
commits nothing; the next run replays it (at-least-once).

Instances
---------
Spark keeps its Python workers between tasks, and each keeps the instances
it made, by ``(connector, task id)``, for the task's *run* (one query; a
restart or a move is a new run)::

    (none) ──first batch of the run here──► OPEN: start(config), open(partitions)
    OPEN ──batch──► OPEN                     (put, pre_commit; the lease is renewed; the task's
                                            pauses as the driver knows them are set first)
    OPEN ──batch of a newer run here──► close(partitions), stop(); a new instance
    OPEN ──task stopped──► close, stop      when this host sees the run's directory go
                                            (local mode, executors on the driver's host)
    OPEN ──idle IDLE_STOP_S──► close, stop  otherwise (a batch went to another Python
                                            worker, the task stopped, moved or was deleted)
    OPEN ──batch failed──► close, stop      before the error goes back to Spark
    OPEN ──Python worker told to exit (SIGTERM, SIGHUP)──► close, stop

Every instance is thus stopped within ``IDLE_STOP_S`` of its last batch at
the latest, and within a second of its task stopping where the executor
shares the driver's file system; :meth:`connectd.runtime.spark.queries.TaskQuery.stop`
waits for those (each instance registers itself in the run directory while
it is open). Spark stops Python workers idle for a minute with SIGKILL,
which nothing can catch: ``IDLE_STOP_S`` is shorter, so an idle instance has
been stopped by then.

A plugin whose task must be one instance for its whole life (it holds
records past ``pre_commit``, or state that must not be split) sets
:attr:`connectd.SinkTask.pinned`; it then runs in the worker process
(:class:`connectd.runtime.sink.task.SinkTaskRunner` fed by a local range
reader), as in Kafka Connect.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import DataSource

from connectd.connector import TopicPartition
from connectd.logging import configure_spark_process, get_logger
from connectd.runtime.fencing import lease_expired
from connectd.runtime.kafka.clients import decode_tp, encode_tp
from connectd.runtime.kafka.reading import KafkaStreamReader, batch_ends
from connectd.transforms.chain import TransformationChain

__all__ = ["FORMAT", "IDLE_STOP_S", "SPEC_OPTION", "SinkSpec", "SinkTaskDataSource", "instances_dir", "run"]

FORMAT = "connectd-sink-task"
# Spark redacts option values whose key matches spark.redaction.regex.
SPEC_OPTION = "task.secret.spec"
#: A batch's rows: per range, its end and the offset pre_commit allowed to commit (or null),
#: where the partition's next batch starts when the task moved it there (``context.offset``, or the
#: first record not put of a partition paused during the batch; else null), and whether the task
#: has it paused (``context.pause``); and how many records the batch read of it (the range's length).
#: The first row's ``stats`` (JSON, null on the others) is what the task did for its metrics:
#: :meth:`connectd.runtime.sink.task.SinkTaskRunner.take_counts` and ``lag``, records past each
#: range's end when the batch was planned (``{"topic:partition": n}``).
RESULT_SCHEMA = ("topic string, partition int, end long, committed long, seek long, paused boolean, records long, "
                 "stats string")

#: An instance that has had no batch for this long is closed and stopped.
IDLE_STOP_S = 30.0

_REAP_EVERY_S = 0.25
#: The longest a lingering batch waits for records at a time (between looks at its stop file).
_LINGER_WAIT_S = 0.1

log = get_logger(__name__)


@dataclass(frozen=True)
class SinkSpec:
    """What an executor needs to run a task: configs as written (resolved there), never live objects."""

    connector: str
    task_id: int
    run: str
    task_class: str
    task_config: dict[str, str]
    connector_config: dict[str, str]
    worker_config: dict[str, str]
    consumer: str  #: the data consumer's kafka.clients client option
    producer: str  #: for dead-letter records
    partitions: list[tuple[str, int]]
    put_records: int
    workdir: str  #: the run directory on the driver's host (stop file, instance registrations)
    max_records: int = 100_000  #: ``sink.batch.max.records``: a lingering batch reads no more either
    #: The worker's lease (connectd.runtime.fencing) on the driver's host; "": none.
    lease_file: str = ""

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> SinkSpec:
        data = json.loads(text)
        data["partitions"] = [tuple(p) for p in data["partitions"]]
        return cls(**data)


def instances_dir(workdir: str | os.PathLike[str]) -> str:
    """Where open instances of the run in *workdir* register (one file per process, its name ending
    with the process's id: :func:`connectd.runtime.spark.queries.live_registrations`)."""
    return os.path.join(os.fspath(workdir), "instances")


@dataclass
class _Instance:
    spec: SinkSpec
    runner: Any
    reader: Any
    dead_letters: Any
    local: bool  #: the run directory is visible here
    last_used: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    captured: dict[Any, int] = field(default_factory=dict)

    @property
    def registration(self) -> str:
        return os.path.join(instances_dir(self.spec.workdir), str(os.getpid()))

    def finished(self) -> bool:
        """The run is over as far as this host can see (its directory or stop file, or the worker's
        lease ended: the task may run elsewhere)."""
        workdir = self.spec.workdir
        return self.local and (not os.path.isdir(workdir) or os.path.exists(os.path.join(workdir, "stop"))
                               or lease_expired(self.spec.lease_file or None))

    def pausing(self) -> bool:
        """The task is being paused, as far as this host can see (the run's pause file)."""
        return self.local and os.path.exists(os.path.join(self.spec.workdir, "pause"))

    def stop(self) -> None:
        try:
            self.runner.close()
        finally:
            try:
                self.reader.close()
                self.reader.consumer.close()
                if self.dead_letters is not None:
                    self.dead_letters.close()
            finally:
                if self.local:
                    try:
                        os.unlink(self.registration)
                    except FileNotFoundError:
                        pass


_instances: dict[tuple[str, int], _Instance] = {}
#: Reentrant: SIGTERM's handler (:func:`_stop_all_and_exit`) takes it on the main thread, which
#: may be holding it when the signal comes.
_instances_lock = threading.RLock()
_reaper: threading.Thread | None = None


_Result = tuple[str, int, int | None, int | None, int | None, bool, int | None, str | None]


def run(spec_json: str, ranges: list[tuple[str, int, int, int]], paused: list[str] | None = None,
        lag: dict[str, int] | None = None, idle: dict[str, int] | None = None, linger_ms: int = 0
        ) -> Iterator[_Result]:
    """Put one micro-batch's *ranges* (``topic, partition, start, end``) with the task's instance here.

    :param paused: the partitions the task had paused after its last batch (``encode_tp``),
        as the driver knows them: an instance new here starts with them paused.
    :param lag: records past each range's end when the batch was planned (``encode_tp`` keys).
    :param idle: where the task's partitions without a range stand (``encode_tp`` keys): a
        lingering batch reads what arrives there too.
    :param linger_ms: how long after it began the batch goes on putting what arrives
        (``sink.batch.linger.ms`` as the worker gave it to this task; 0: it does not).
    :returns: ``(topic, partition, end, committed, seek, paused, records, stats)`` per range: its
        end, the offset ``pre_commit`` allows to commit (``None`` if it named none), where the
        partition's next batch starts if the task moved it or the batch read past the range
        while it lingered (``None`` if neither), whether it is paused now, and the records read
        (the range's length, or more after lingering; ``end`` is then where it got to); then the
        same for each partition without a range that the batch read while it lingered, and for
        each the task moved or has paused (``end`` and ``records`` ``None``). The first row's *stats* is
        JSON for the task's metrics (:data:`RESULT_SCHEMA`), the others' ``None``.
    """
    if not ranges:
        return
    began = time.monotonic()
    spec = SinkSpec.from_json(spec_json)
    configure_spark_process()
    instance = _locked_instance(spec)
    try:
        instance.captured = {}
        instance.runner.paused = [TopicPartition(*decode_tp(key)) for key in paused or ()]
        instance.runner.process_ranges(ranges, instance.reader, spec.put_records)
        positions = {**{decode_tp(key): offset for key, offset in (idle or {}).items()},
                     **{(topic, partition): end for topic, partition, _, end in ranges}}
        reached = _linger(instance, ranges, positions, began + linger_ms / 1000) if linger_ms > 0 else {}
        instance.last_used = time.monotonic()
    except BaseException:
        with _instances_lock:
            if _instances.get((spec.connector, spec.task_id)) is instance:
                del _instances[(spec.connector, spec.task_id)]
        instance.stop()  # the task fails: Kafka Connect stops it too
        raise
    finally:
        instance.lock.release()
    committed = {(tp.topic, tp.partition): offset for tp, offset in instance.captured.items()}
    seeks = {(tp.topic, tp.partition): offset for tp, offset in instance.runner.seeks.items()}
    now_paused = {(tp.topic, tp.partition) for tp in instance.runner.paused}
    lag = dict(lag or {})
    for tp, end in reached.items():  # records read while lingering are no longer behind
        key = encode_tp(*tp)
        if key in lag:
            lag[key] = max(lag[key] - (end - positions[tp]), 0)
    stats: str | None = json.dumps({**instance.runner.take_counts(), "lag": lag})
    planned = {(topic, partition) for topic, partition, _, _ in ranges}
    for topic, partition, begin, end in ranges:  # empty ranges (a tick) included
        tp = (topic, partition)
        seek = seeks.pop(tp, None)
        if tp in reached:  # read past the planned end: the next batch starts where this one got to
            end = reached[tp]
            seek = end if seek is None else seek
        yield (topic, partition, end, committed.get(tp), seek, tp in now_paused, max(end - begin, 0), stats)
        now_paused.discard(tp)
        stats = None
    for (topic, partition), end in reached.items():  # partitions the batch had no range of, read while it lingered
        tp = (topic, partition)
        if tp not in planned:
            seek = seeks.pop(tp, None)
            yield (topic, partition, end, committed.get(tp), end if seek is None else seek, tp in now_paused,
                   end - positions[tp], None)
            now_paused.discard(tp)
    for (topic, partition), offset in seeks.items():
        yield (topic, partition, None, committed.get((topic, partition)), offset, (topic, partition) in now_paused,
               None, None)
        now_paused.discard((topic, partition))
    for topic, partition in sorted(now_paused):
        yield topic, partition, None, committed.get((topic, partition)), None, True, None, None


def _linger(instance: _Instance, ranges: list[tuple[str, int, int, int]], positions: dict[tuple[str, int], int],
            deadline: float) -> dict[tuple[str, int], int]:
    """After a batch's planned *ranges*: put the records that arrive until *deadline*, as they come.

    Each arrival is put and pre-committed as a batch of its own would be, in
    this same Spark task. A batch without records does not linger, nor one
    whose task moved or paused a partition (``seeks``); lingering ends early
    once the task stops or is paused (where this host sees its run
    directory) or the batch has read ``max_records`` (records known to be
    there are read in ranges, as a batch's are, shared fairly among the
    partitions).

    :param positions: where each of the task's partitions stands after *ranges*.
    :returns: ``{(topic, partition): end}``, where each partition read past *positions* now stands.
    """
    spec, runner, reader = instance.spec, instance.runner, instance.reader
    if not any(end > begin for _, _, begin, end in ranges):
        return {}
    positions = dict(positions)
    read = sum(max(end - begin, 0) for _, _, begin, end in ranges)
    reached: dict[tuple[str, int], int] = {}
    while not runner.seeks and read < spec.max_records and not instance.finished() and not instance.pausing():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        paused = {(tp.topic, tp.partition) for tp in runner.paused}
        wanted = {tp: offset for tp, offset in positions.items() if tp not in paused}
        if not wanted:
            break
        # A short wait at a time, so that a stop is seen soon.
        known = reader.wait_past(wanted, min(left, _LINGER_WAIT_S), spec.put_records)
        if time.monotonic() >= deadline or instance.finished() or instance.pausing():
            break  # what arrived while this process was held up (frozen, say) is the next batch's
        if known:
            start = {encode_tp(*tp): wanted[tp] for tp in known}
            ends = batch_ends(start, {encode_tp(*tp): end for tp, end in known.items()}, spec.max_records - read)
            more = [(*decode_tp(key), start[key], end) for key, end in ends.items() if end > start[key]]
            runner.process_ranges(more, reader, spec.put_records)
            for topic, partition, begin, end in more:
                positions[(topic, partition)] = reached[(topic, partition)] = end
                read += end - begin
    return reached


class SinkTaskReader(KafkaStreamReader):
    """The task's partitions as offset ranges (``connectd-kafka``'s reader, ``rows=ranges``).

    Reading a batch is handling it: :meth:`read`, in an executor, puts the
    batch's ranges with the task's instance there and yields what
    :func:`run` returns, so the batch's records and the plugin never leave
    that Python worker, and the driver gets the offsets to commit by
    collecting the batch.
    """

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__({**options, "rows": "ranges"})
        self.spec_json = options[SPEC_OPTION]

    def read(self, partition: Any) -> Iterator[_Result]:
        yield from run(self.spec_json, [(str(t), int(p), int(b), int(e)) for t, p, b, e in partition.ranges],
                       partition.paused, partition.lag, partition.idle, partition.linger_ms)


class SinkTaskDataSource(DataSource):
    """``spark.readStream.format("connectd-sink-task").option(SPEC_OPTION, …)``: batches put, offsets out."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RESULT_SCHEMA

    def streamReader(self, schema: Any) -> SinkTaskReader:
        return SinkTaskReader(self.options)


def _instance_for(spec: SinkSpec) -> _Instance:
    key = (spec.connector, spec.task_id)
    with _instances_lock:
        instance = _instances.get(key)
        if instance is not None and instance.spec.run == spec.run:
            return instance
        if instance is not None:  # an older run's: it never processes again
            del _instances[key]
    if instance is not None:
        with instance.lock:
            instance.stop()
    instance = _open(spec)
    with _instances_lock:
        _instances[key] = instance
    _start_reaper()
    return instance


def _locked_instance(spec: SinkSpec) -> _Instance:
    """The task's instance for *spec*'s run, its lock held: the reaper cannot stop it meanwhile."""
    while True:
        instance = _instance_for(spec)
        instance.lock.acquire()
        with _instances_lock:
            if _instances.get((spec.connector, spec.task_id)) is instance:
                return instance
        instance.lock.release()  # the reaper stopped it just now: make another


def _open(spec: SinkSpec) -> _Instance:
    """A new instance of the task: its plugin started and its partitions opened."""
    # lazy: only an executor's Python worker opening a task needs these; the sink query's planner
    # process and a source task's planner (instances_dir) import this module without them (~35 ms)
    from confluent_kafka import Consumer

    from connectd.config.worker import WorkerConfig
    from connectd.plugins import get_registry
    from connectd.runtime.converter_choice import configure_converters
    from connectd.runtime.dead_letters import DeadLetterQueue
    from connectd.runtime.error_handling import ErrorHandler, ErrorPolicy
    from connectd.runtime.kafka.clients import client_settings
    from connectd.runtime.kafka.consumers import (
        RangeReader,
        consumer_settings,
    )
    from connectd.runtime.sink.task import SinkTaskRunner  # lazy: as above

    worker = WorkerConfig(spec.worker_config, "standalone", source="worker")
    resolve = worker.providers.resolve
    connector_config = {k: resolve(v) for k, v in spec.connector_config.items()}
    task_config = {k: resolve(v) for k, v in spec.task_config.items()}
    registry = get_registry()
    policy = ErrorPolicy.from_config(connector_config)
    dead_letters = DeadLetterQueue(client_settings(spec.producer), policy.dlq_topic) if policy.dlq_topic else None
    module, _, name = spec.task_class.rpartition(".")
    task = getattr(importlib.import_module(module), name)()
    holder: dict[str, _Instance] = {}

    def capture(offsets: Any) -> None:  # the driver commits them once the whole batch succeeded
        holder["instance"].captured.update(offsets)

    settings = consumer_settings(client_settings(spec.consumer))
    reader = RangeReader(Consumer(settings), settings=settings)
    try:
        runner = SinkTaskRunner(
            task, task_config, [TopicPartition(t, p) for t, p in spec.partitions],
            configure_converters(spec.worker_config, spec.connector_config,
                                 lambda n: registry.find_class("converter", n), resolve),
            TransformationChain(connector_config, registry.find_class), capture,
            ErrorHandler(policy, spec.connector, spec.task_id, dead_letters.send if dead_letters else None,
                         sleep=lambda seconds: runner.wait_to_retry(seconds)),  # gives up once the run is over
            dead_letters,
        )
    except BaseException:
        reader.consumer.close()
        if dead_letters is not None:
            dead_letters.close()
        raise
    local = os.path.isdir(spec.workdir)
    instance = holder["instance"] = _Instance(spec, runner, reader, dead_letters, local)
    runner.stopping = instance.finished  # a put() being retried gives up once the task stops
    if local:
        os.makedirs(instances_dir(spec.workdir), exist_ok=True)
        with open(instance.registration, "w", encoding="utf-8") as handle:
            handle.write(f"{spec.connector}-{spec.task_id} {spec.run}\n")
    return instance


def _reap_once(now: float | None = None) -> None:
    """Stop the instances whose run is over or that have been idle too long (not those busy)."""
    now = time.monotonic() if now is None else now
    with _instances_lock:
        candidates = list(_instances.items())
    for key, instance in candidates:
        if not (instance.finished() or now - instance.last_used > IDLE_STOP_S):
            continue
        if not instance.lock.acquire(blocking=False):
            continue  # a batch is running: it renews the lease
        try:
            with _instances_lock:
                if _instances.get(key) is not instance:
                    continue
                del _instances[key]
            try:
                instance.stop()
            except Exception as error:  # noqa: BLE001 - one failing stop must not keep the others running
                log.warning("sink_instance_stop_failed", connector=key[0], task=key[1], error=repr(error))
        finally:
            instance.lock.release()


def _reap_forever() -> None:
    while True:
        time.sleep(_REAP_EVERY_S)
        _reap_once()


def _start_reaper() -> None:
    global _reaper
    with _instances_lock:
        if _reaper is not None:
            return
        _reaper = threading.Thread(target=_reap_forever, name="connectd-sink-instances", daemon=True)
        _reaper.start()
    try:  # only the main thread may set handlers; Spark runs Python functions there
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _stop_all_and_exit)
    except ValueError:
        pass


def _stop_all_and_exit(signum: int, frame: Any) -> None:
    """The Python worker is told to go: stop the instances not in a batch, then go as told."""
    with _instances_lock:
        instances = list(_instances.values())
        _instances.clear()
    for instance in instances:
        if instance.lock.acquire(blocking=False):
            try:
                instance.stop()
            except Exception as error:  # noqa: BLE001 - the others are stopped all the same
                log.warning("sink_instance_stop_failed", connector=instance.spec.connector,
                            task=instance.spec.task_id, error=repr(error))
            finally:
                instance.lock.release()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
