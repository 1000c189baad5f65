"""The connector API plugin authors implement.

A **connector** is the job a user configures; it splits its work into task
configurations. A **task** moves the data. This is Kafka Connect's API in
snake_case, record by record:

- :class:`SourceTask`: ``start(config)``, ``poll() -> list[SourceRecord]``,
  ``commit()``, ``stop()``; its :attr:`~SourceTask.context` reads the
  offsets stored for its source partitions, so it resumes where it was.
- :class:`SinkTask`: ``start(config)``, ``open(partitions)``,
  ``put(records)``, ``flush(offsets)``, ``close(partitions)``, ``stop()``.

connectd runs each task inside a Spark streaming query: converters and
transforms are applied around it, offsets are stored only after the data is
durable. ``docs/plugin-authors.md`` has worked examples.
"""

from __future__ import annotations

import abc
import enum
import json
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigProblem
from connectd.errors import ConnectException, ConnectorError

if TYPE_CHECKING:
    from concurrent.futures import Future

    from connectd.data.records import SinkRecord, SourceRecord

__all__ = [
    "Connector",
    "ConnectorContext",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "OffsetStorageReader",
    "SinkConnector",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceTask",
    "SourceTaskContext",
    "SparkSinkTask",
    "SparkSourceTask",
    "Task",
    "TopicPartition",
]


def _version_of(cls: type) -> str:
    top = cls.__module__.split(".")[0]
    for dist in metadata.packages_distributions().get(top, []):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:  # pragma: no cover - broken install
            continue
    return "unknown"


class ConnectorContext:
    """What a running connector may ask of the runtime.

    :param on_reconfigure: called when the connector asks for new task configs.
    :param on_error: called when the connector reports it cannot go on.
    """

    def __init__(
        self,
        on_reconfigure: Callable[[], None] = lambda: None,
        on_error: Callable[[BaseException], None] = lambda exc: None,
    ) -> None:
        self._on_reconfigure = on_reconfigure
        self._on_error = on_error

    def request_task_reconfiguration(self) -> None:
        """Ask for :meth:`Connector.task_configs` to be called again (e.g. a new table was found)."""
        self._on_reconfigure()

    def raise_error(self, exc: BaseException) -> None:
        """Fail the connector with *exc*; its status becomes FAILED with the trace."""
        self._on_error(exc)


class Connector(abc.ABC):
    """Base of every connector.

    :attr config_def: the connector's own settings; connectd adds the common,
        source or sink keys (``name``, ``tasks.max``, ``topics``, …).
    :attr context: set by the runtime before :meth:`start`.
    """

    config_def: ClassVar[ConfigDef] = ConfigDef()
    context: ConnectorContext

    def version(self) -> str:
        """The plugin's version; by default that of the package that holds the class."""
        return _version_of(type(self))

    def initialize(self, context: ConnectorContext) -> None:
        """Given the connector's context before :meth:`start`, as Kafka Connect's ``initialize``.
        The runtime sets :attr:`context` first, so an override that does not call
        ``super().initialize(context)`` still has it."""
        self.context = context

    def start(self, config: Mapping[str, str]) -> None:
        """Begin with the connector's resolved configuration."""

    @abc.abstractmethod
    def task_class(self) -> type[Task]:
        """The class each of this connector's tasks runs."""

    @abc.abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Split the work into at most *max_tasks* task configurations."""

    def stop(self) -> None:
        """Release what :meth:`start` acquired."""

    def validate(self, config: Mapping[str, Any]) -> list[ConfigProblem]:
        """Problems with *config* beyond the declared keys; none by default."""
        return []


class ExactlyOnceSupport(enum.Enum):
    """What a source connector says of exactly-once delivery with a config (Kafka's ``ExactlyOnceSupport``)."""

    #: Its tasks' offsets say exactly which records were written: records polled again after a
    #: crash are the ones after the offsets stored with the last committed transaction.
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(enum.Enum):
    """Whether a source connector, with a config, can define its own transactions (Kafka's
    ``ConnectorTransactionBoundaries``): ``transaction.boundary=connector`` needs SUPPORTED."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class SourceConnector(Connector, abc.ABC):
    """A connector that reads from an outside system and writes to Kafka."""

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        """Whether this connector's tasks, with *config*, end their own transactions through
        :meth:`SourceTaskContext.transaction_context` (Kafka's ``canDefineTransactionBoundaries``).

        Asked when a config with ``transaction.boundary=connector`` is validated on a worker with
        ``exactly.once.source.support=enabled``: anything but SUPPORTED refuses it. Called on a new,
        unstarted instance, on the worker's event loop's thread pool. UNSUPPORTED by default.
        """
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Whether this connector, with *config*, can deliver exactly once (Kafka's ``exactlyOnceSupport``).

        Asked by the worker when it validates a config with ``exactly.once.support=required`` and
        ``exactly.once.source.support=enabled``: anything but :attr:`ExactlyOnceSupport.SUPPORTED`
        refuses the config. Called on a new, unstarted instance, on the worker's event loop's
        thread pool; keep it quick. ``None`` (the default): the connector does not say.
        """
        return None

    def alter_offsets(self, config: Mapping[str, str], offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
        """Offsets are about to be altered or reset through the REST API (Kafka's ``alterOffsets``).

        Called on a new, unstarted instance while the connector is STOPPED,
        before connectd stores the offsets. Raise to refuse them: nothing is
        stored and the request fails with the error's message; raise
        :class:`NotImplementedError` if the connector's offsets must never be
        changed from outside.

        :param config: the connector's configuration, placeholders resolved.
        :param offsets: source partition, as canonical JSON text (the keys of
            :meth:`OffsetStorageReader.offsets`) → its new offset; ``None``
            removes the offset. A reset passes every stored partition with ``None``.
        :returns: ``True`` if the connector also changed offsets it keeps
            outside connectd; ``False`` (the default) says nothing about such
            offsets, and the REST answer reminds the user to change them where they are kept.
        """
        return False


class SinkConnector(Connector, abc.ABC):
    """A connector that reads from Kafka and writes to an outside system."""

    def alter_offsets(self, config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]) -> bool:
        """Offsets are about to be altered or reset through the REST API (Kafka's ``alterOffsets``).

        Called on a new, unstarted instance while the connector is STOPPED,
        before connectd changes the offsets of the connector's consumer group.
        Raise to refuse them; raise :class:`NotImplementedError` if the offsets
        must never be changed from outside.

        :param config: the connector's configuration, placeholders resolved.
        :param offsets: partition → the next offset to read; ``None`` removes the
            committed offset (the task then starts as ``auto.offset.reset`` says).
            A reset passes every partition with a committed offset with ``None``.
        :returns: ``True`` if the connector also changed offsets it keeps
            outside Kafka; ``False`` (the default) says nothing about such offsets.
        """
        return False


# --- tasks ----------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class TopicPartition:
    """A Kafka topic partition, as a sink task sees its assignment."""

    topic: str
    partition: int


class Task(abc.ABC):
    """Base of source and sink tasks."""

    def version(self) -> str:
        return _version_of(type(self))

    def initialize(self, context: Any) -> None:
        """Given the task's context (:class:`SourceTaskContext` or :class:`SinkTaskContext`) before
        :meth:`start`, as Kafka Connect's ``initialize``. The runtime sets :attr:`context` first,
        so an override that does not call ``super().initialize(context)`` still has it."""
        self.context = context

    @abc.abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Begin with the task's configuration (one of :meth:`Connector.task_configs`)."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop; called once, after the last :meth:`SourceTask.poll` / :meth:`SinkTask.put`."""


class OffsetStorageReader:
    """Reads the offsets stored for a connector's source partitions.

    :param lookup: ``lookup(partitions) -> {partition as JSON text: offset}``.
    """

    def __init__(self, lookup: Callable[[list[Mapping[str, Any]]], dict[str, Mapping[str, Any]]]) -> None:
        self._lookup = lookup

    def offset(self, partition: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The stored offset of one source partition, or ``None``."""
        return self.offsets([partition]).get(_partition_text(partition))

    def offsets(self, partitions: Collection[Mapping[str, Any]]) -> dict[str, Mapping[str, Any] | None]:
        """Stored offsets of *partitions*, keyed by the partition as canonical JSON text; ``None`` for a
        partition with no stored offset (as Kafka Connect maps it to ``null``)."""
        partitions = list(partitions)
        try:
            found = self._lookup(partitions)
        except Exception as error:
            # As Kafka Connect's OffsetStorageReaderImpl: the task fails, with the reason, at once; a
            # source whose position is unknown must not poll on, nor retry unseen while it says RUNNING.
            raise ConnectorError(f"failed to fetch offsets: {error}") from error
        return {text: found.get(text) for text in map(_partition_text, partitions)}


def _partition_text(partition: Mapping[str, Any]) -> str:
    return json.dumps(partition, sort_keys=True, separators=(",", ":"))


class SourceTaskContext:
    """What a source task gets from the runtime: its config, the offset reader and, with
    connector-defined transactions, its :class:`TransactionContext`."""

    def __init__(self, config: Mapping[str, str], offset_storage_reader: OffsetStorageReader,
                 transaction_context: TransactionContext | None = None) -> None:
        self.config = dict(config)
        self.offset_storage_reader = offset_storage_reader
        self._transaction_context = transaction_context

    def configs(self) -> dict[str, str]:
        """The task's configuration (Kafka Connect's ``configs()``); also :attr:`config`."""
        return dict(self.config)

    def transaction_context(self) -> TransactionContext | None:
        """Kafka Connect's ``transactionContext()``: the task's :class:`TransactionContext` when it
        delivers exactly once with ``transaction.boundary=connector``; ``None`` otherwise."""
        return self._transaction_context


class TransactionContext:
    """How a source task ends its own transactions (Kafka's ``TransactionContext``), with exactly-once
    delivery and ``transaction.boundary=connector``. Every method may be called from any thread;
    a request applies to records ``poll()`` returns (docs/plugin-authors.md, "Exactly-once delivery").

    - :meth:`commit_transaction` ``()``: commit after the records of the next ``poll()`` that
      returns any (when called inside ``poll()``, those it returns); ``(record)``: commit with
      *record* the last record of the transaction (a record ``poll()`` returned, or returns next).
    - :meth:`abort_transaction`: the same, aborting: every record since the last commit, up to the
      end of that poll's records or to *record*, is discarded (never seen by a ``read_committed``
      consumer, its offsets not stored). The task goes on with the records after them.

    A commit and an abort asked for the same poll's records, or the same record, is an error
    (``ValueError``), as in Kafka.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batch: str | None = None
        self._records: dict[int, tuple[Any, str]] = {}  # id(record) -> (record, "commit" or "abort")

    def commit_transaction(self, record: Any = None) -> None:
        self._request("commit", record)

    def abort_transaction(self, record: Any = None) -> None:
        self._request("abort", record)

    def _request(self, action: str, record: Any) -> None:
        with self._lock:
            if record is None:
                if self._batch not in (None, action):
                    raise ValueError("Both an abort and a commit were requested for the same batch of records")
                self._batch = action
                return
            asked = self._records.get(id(record))
            if asked is not None and asked[1] != action:
                raise ValueError("Both an abort and a commit were requested for the same record")
            self._records[id(record)] = (record, action)

    def split(self, records: list[Any]) -> list[tuple[list[Any], str | None]]:
        """*records* (one poll's) cut after each record a request names, each part with what ends it
        (``"commit"``, ``"abort"`` or ``None``: the transaction goes on); the last part also takes a
        request for the whole batch. Used by the runtime, on the polling thread."""
        with self._lock:
            parts: list[tuple[list[Any], str | None]] = []
            current: list[Any] = []
            for record in records:
                current.append(record)
                asked = self._records.pop(id(record), None)  # held there: its id is not reused meanwhile
                if asked is not None:
                    parts.append((current, asked[1]))
                    current = []
            batch, self._batch = (self._batch, None) if records else (None, self._batch)
            if current or batch is not None:
                parts.append((current, batch))
            return parts


@dataclass(frozen=True)
class RecordMetadata:
    """Where Kafka put a record a source task returned: Kafka Connect's ``RecordMetadata``."""

    topic: str
    partition: int
    offset: int
    #: The record's timestamp as Kafka stored it (ms since the epoch), or ``None`` if unknown.
    timestamp: int | None = None


class SourceTask(Task):
    """Reads records from an outside system.

    :attr context: set by the runtime before :meth:`start`.
    """

    context: SourceTaskContext

    #: ``False`` (the default): the task runs on an executor's host, in a process of its own for
    #: its run, which polls it, transforms and converts its records and produces them; Spark's
    #: batches carry back only offsets and counts. If a batch goes to another host, the task is
    #: started there again from the stored offsets (as after a restart). ``True``: the task must
    #: be polled on the driver's host (it reads something only that host has); it then runs in
    #: Spark's planner process there and its records travel to an executor in each batch. See
    #: docs/plugin-authors.md.
    poll_on_driver: ClassVar[bool] = False

    @abc.abstractmethod
    def poll(self) -> list[SourceRecord] | None:
        """New records, or ``None``/``[]`` when there are none right now.

        May block briefly waiting for data; return within about a second so
        the task can be stopped promptly.
        """

    def commit(self) -> None:
        """The offsets of a batch of records returned by :meth:`poll` have been stored (a hint,
        as Kafka Connect's ``commit``): after each batch's offsets are stored, and once more at
        stop if a batch was stored since. Called on another thread than :meth:`poll`."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """*record* was written to Kafka and its batch's offsets stored, as Kafka Connect's ``commitRecord``.

        Called for every record :meth:`poll` returned, in the order returned, on another
        thread than :meth:`poll`: *metadata* says where Kafka put it, or is ``None`` when a
        transform dropped it or the connector's error handling skipped it. *record* is as
        ``poll()`` returned it (before transforms). The runtime tracks records for this only
        when a task overrides it; an exception is logged and ignored.
        """


class ErrantRecordReporter:
    """Reports records a sink task could not write (Kafka Connect's KIP-610).

    :meth:`report` logs the record and sends it to the connector's dead-letter
    topic, with the ``__connect.errors.*`` context headers when they are
    enabled, as a record that failed conversion would be; the task goes on
    when ``errors.tolerance=all``, and fails (after the record is reported)
    otherwise. Offsets are not committed past a reported record before it
    is acknowledged.
    """

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Report *record*, which failed with *error*; the future completes once it is delivered."""
        raise NotImplementedError


class SinkTaskContext:
    """What a sink task gets from the runtime: its assignment and offset rewinds."""

    def __init__(self, config: Mapping[str, str], assignment: Collection[TopicPartition] = ()) -> None:
        self.config = dict(config)
        self._assignment = set(assignment)
        self.rewinds: dict[TopicPartition, int] = {}
        self.retry_timeout_ms: int | None = None
        self.reporter: ErrantRecordReporter | None = None
        self._paused: set[TopicPartition] = set()

    def configs(self) -> dict[str, str]:
        """The task's configuration (Kafka Connect's ``configs()``); also :attr:`config`."""
        return dict(self.config)

    def assignment(self) -> set[TopicPartition]:
        """The partitions this task consumes now."""
        return set(self._assignment)

    def offset(self, partition: TopicPartition | Mapping[TopicPartition, int], offset: int | None = None) -> None:
        """Consume *partition* from *offset* next, or each partition of a mapping from its offset.

        As Kafka Connect's ``SinkTaskContext.offset``: from :meth:`SinkTask.open`, to
        resume from offsets the task keeps itself; from :meth:`SinkTask.put`, to have
        records again (a rewind) or skip some. The offset committed for the partition
        is then where it was moved to, until the records from there are put again.
        """
        if isinstance(partition, Mapping):
            self.rewinds.update(partition)
        elif offset is None:
            raise TypeError("offset(partition, offset) needs the offset")
        else:
            self.rewinds[partition] = offset

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop consuming *partitions* until :meth:`resume`: as Kafka Connect's ``pause``.

        Records of a paused partition already read in the batch under way are
        not put; the partition goes on from the first of them once resumed, and
        its committed offset does not pass them. A pause lasts across batches
        and instances of the task until the partition is resumed; a task that
        restarts or is given new partitions starts with none paused.

        :raises ConnectException: a partition is not assigned to the task.
        """
        self._check_assigned(partitions, "pause")
        self._paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        """Consume *partitions* again from where they were paused (at the next batch).

        :raises ConnectException: a partition is not assigned to the task.
        """
        self._check_assigned(partitions, "resume")
        self._paused.difference_update(partitions)

    def _check_assigned(self, partitions: Collection[TopicPartition], verb: str) -> None:
        unknown = set(partitions) - self._assignment
        if unknown:
            names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(unknown))
            raise ConnectException(f"sink tasks may not {verb} partitions that are not assigned to them: {names}")

    def timeout(self, timeout_ms: int) -> None:
        """Wait *timeout_ms* before ``put()`` is retried after it raised a retriable error
        (:class:`~connectd.RetriableException`); once, as Kafka Connect's ``timeout`` is."""
        self.retry_timeout_ms = int(timeout_ms)

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """The reporter of records the task cannot write, or ``None`` when the connector
        neither logs errors (``errors.log.enable``) nor has a dead-letter topic — as in
        Kafka Connect, so a task can tell whether reporting is available."""
        return self.reporter

    def request_commit(self) -> None:
        """Ask for offsets to be flushed and committed soon: Kafka Connect's ``requestCommit``.

        Always granted without asking: every micro-batch ends with ``pre_commit``
        and a commit, so the batch in progress is followed by one.
        """


class SinkTask(Task):
    """Writes records read from Kafka to an outside system.

    :attr context: set by the runtime before :meth:`start`.
    """

    context: SinkTaskContext

    #: ``False`` (the default): the task runs inside Spark executors. An instance is made on
    #: first use in a Python worker and a later batch may go to another instance (never two
    #: at once), so what :meth:`put` took must be durable when :meth:`pre_commit` returns.
    #: ``True``: the task needs one instance for its whole life (it keeps records past
    #: ``pre_commit``, or state that must not be split); it then runs in the worker process.
    #: See docs/plugin-authors.md.
    pinned: ClassVar[bool] = False

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """*partitions* were assigned to this task."""

    @abc.abstractmethod
    def put(self, records: list[SinkRecord]) -> None:
        """Write *records* (or buffer them until :meth:`flush`)."""

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Make everything :meth:`put` so far durable; *offsets* (next to read) are committed after."""

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """The offsets that are safe to commit; by default :meth:`flush`, then *offsets*.

        As Kafka Connect's ``preCommit``: *offsets* are where each partition stands (the next
        offset to read). What is returned is committed, with what Kafka Connect ignores left
        out: an offset past the one offered, or of a partition not offered. Return an empty
        mapping to commit nothing this time. An exception is logged, nothing is committed, and
        the partitions are read again from their last committed offsets; the task goes on.
        """
        self.flush(offsets)
        return offsets

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """*partitions* are no longer assigned to this task."""


# --- Spark level ------------------------------------------------------------------


class SparkSourceTask(Task):
    """A source task that hands connectd a streaming DataFrame instead of records.

    :meth:`stream` returns a streaming DataFrame with a ``value`` column and
    optionally ``key``, ``topic`` (else the connector's ``topic`` setting),
    ``partition``, ``timestamp`` (ms) and ``headers``; string columns are
    written as UTF-8. connectd writes it to Kafka with an idempotent producer.
    The source's progress is Spark's own: it lives in a checkpoint directory
    that connectd keeps for the task between runs (standalone mode: beside
    the offsets file).
    """

    context: SourceTaskContext

    @abc.abstractmethod
    def stream(self, spark: Any) -> Any:
        """The records to write, as a streaming DataFrame of *spark*."""

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def stop(self) -> None:
        """Called when the task's query has stopped."""


class SparkSinkTask(Task):
    """A sink task that writes each micro-batch as a DataFrame, in bulk.

    :meth:`write_batch` receives the batch read from the task's partitions
    with columns ``topic``, ``partition``, ``offset``, ``timestamp``,
    ``timestamp_type``, ``key`` and ``value`` (binary, as in Kafka) and
    ``headers``; parse them with Spark (``from_json``, ``cast("string")``).
    Offsets are committed to the connector's group after it returns, so
    what it wrote must be durable by then. No converters or transforms run
    at this level.
    """

    context: SinkTaskContext

    @abc.abstractmethod
    def write_batch(self, batch: Any, batch_id: int) -> None:
        """Write one micro-batch DataFrame durably."""

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def stop(self) -> None:
        """Called once, after the last batch."""
