"""Connector, task and topic statuses, kept in the status topic.

The records are Kafka Connect's own (``KafkaStatusBackingStore``), JSON
without a schema envelope::

    status-connector-<c>               {"state": "RUNNING", "trace": null, "worker_id": "host:8083", "generation": 3}
    status-task-<c>-<n>                (the same fields)
    status-topic-<topic>:connector-<c> {"topic": {"name": "t", "connector": "c", "task": 0, "discoverTimestamp": <ms>}}

A null value deletes (a connector's, which forgets its tasks too, a task's,
or a topic's). Records are written with the status's ``timestamp_ms`` as
their timestamp, so a status read back equals the one written.

:class:`KafkaStatusStore` is both a :class:`~connectd.status.StatusStore` and
an :class:`~connectd.status.ActiveTopicsStore`, with their synchronous,
any-thread methods: a write updates the local cache at once and is queued for
the topic (:meth:`~connectd.cluster.kafka_log.KafkaLog.send_nowait`); reads
answer from the cache, which the topic's records keep up to date.

Which record wins:

- A key with writes of this store not yet read back keeps its local value:
  records read meanwhile are older than the last write (the local value
  goes back to what the topic says once that write is read back).
- As in Kafka Connect, a task's ``UNASSIGNED`` read while the cache has it
  ``RUNNING`` at a later generation, or at the same one by another worker,
  is stale and ignored (a worker that had not yet seen the other's RUNNING);
  a worker's own UNASSIGNED after its own RUNNING (it stopped the task, at
  shutdown say) stands. No other record is
  ignored for its generation, since generations start again when a group is
  re-created.
- :meth:`KafkaStatusStore.put_task_safe` / ``put_connector_safe`` (Kafka's
  ``putSafe``) write only if the cached status is this worker's or of a
  generation no later than the new one.
- A failed write is retried (a few times) only while it is still the latest
  write of its key and its generation is still the store's latest, as Kafka
  Connect retries.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connectd.cluster.config_store import parse_task_key
from connectd.cluster.kafka_log import KafkaLog, LogBackedStore
from connectd.errors import ConnectdError
from connectd.logging import get_logger
from connectd.loops import Loops
from connectd.status import RUNNING, UNASSIGNED, ActiveTopicsStore, Status, StatusStore

if TYPE_CHECKING:
    from aiokafka.structs import ConsumerRecord, RecordMetadata

    from connectd.config.worker import WorkerConfig

__all__ = ["KafkaStatusStore", "TopicStatus"]

log = get_logger(__name__)

CONNECTOR_PREFIX = "status-connector-"
TASK_PREFIX = "status-task-"
TOPIC_PREFIX = "status-topic-"
TOPIC_SEPARATOR = ":connector-"
#: connectd's capacity records (connectd.cluster.capacity): ``connectd-capacity-load-<worker>``, each
#: worker's load, and ``connectd-capacity-decision``, the leader's last decision. Kafka Connect's
#: workers skip them (with a warning) as keys they do not know.
CAPACITY_PREFIX = "connectd-capacity-"
_TIMEOUT_S = 30.0

_CONNECTORS, _TASKS, _TOPICS = "connector", "task", "topic"


@dataclass(frozen=True)
class TopicStatus:
    """A topic a connector's task used (KIP-558), and when it was first seen."""

    topic: str
    connector: str
    task: int
    discover_timestamp_ms: int


class _Entry:
    """One key's cached value, and this store's writes to it not yet read back."""

    __slots__ = ("sequence", "unread", "value")

    def __init__(self) -> None:
        self.value: Any = None
        self.sequence = 0
        self.unread = 0


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def status_value(status: Status) -> dict[str, Any]:
    """The JSON of a status record (field order of Kafka's ``STATUS_SCHEMA_V0``)."""
    return {"state": status.state, "trace": status.trace, "worker_id": status.worker_id, "generation": status.generation}


def topic_value(status: TopicStatus) -> dict[str, Any]:
    return {"topic": {"name": status.topic, "connector": status.connector, "task": status.task,
                      "discoverTimestamp": status.discover_timestamp_ms}}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_key(key: str) -> tuple[str, Any] | None:
    """A status-topic key → (kind, id): ``connector`` name, ``task`` (connector, n) or ``topic`` (connector, topic)."""
    if key.startswith(CONNECTOR_PREFIX):
        connector = key[len(CONNECTOR_PREFIX):]
        return (_CONNECTORS, connector) if connector else None
    if key.startswith(TASK_PREFIX):
        task = parse_task_key(key, TASK_PREFIX)  # the config topic's rule: Kafka parses both alike
        return None if task is None else (_TASKS, (task.connector, task.task))
    if key.startswith(TOPIC_PREFIX):
        # As Kafka: the topic ends at the first ':' (topic names cannot hold one).
        topic, separator, connector = key[len(TOPIC_PREFIX):].partition(TOPIC_SEPARATOR)
        if not separator or not topic or not connector or ":" in topic:
            return None
        return _TOPICS, (connector, topic)
    return None


class KafkaStatusStore(LogBackedStore, StatusStore, ActiveTopicsStore):
    """Statuses and active topics of a cluster's connectors and tasks, in the status topic.

    :param topic: the status topic (see :func:`~connectd.cluster.kafka_log.ensure_topic`).
    :param consumer_settings: aiokafka consumer settings.
    :param producer_settings: aiokafka producer settings.
    :param loops: where the topic's reading and writing loops run.
    """

    def __init__(
        self,
        topic: str,
        consumer_settings: Mapping[str, Any],
        producer_settings: Mapping[str, Any],
        *,
        timeout_s: float = _TIMEOUT_S,
        loops: Loops | None = None,
    ) -> None:
        self.topic = topic
        self.timeout_s = timeout_s
        self._log = KafkaLog(topic, consumer_settings, producer_settings, self._read, loops=loops)
        self._lock = threading.Lock()
        self._tables: dict[str, dict[Any, _Entry]] = {_CONNECTORS: {}, _TASKS: {}, _TOPICS: {}}
        self._generation = 0
        self._read_to: dict[int, int] = {}  # partition → offset after the last record read
        self._own: dict[tuple[int, int], _Entry] = {}  # (partition, offset) of own writes acknowledged, not yet read
        #: told of every capacity record read: (the key after CAPACITY_PREFIX, its JSON value or None)
        self.on_capacity: Callable[[str, Any], None] | None = None

    @classmethod
    def from_worker_config(cls, config: WorkerConfig, client_id: str = "connectd", *,
                           loops: Loops | None = None) -> KafkaStatusStore:
        """A store on ``status.storage.topic`` with the worker's consumer and producer settings."""
        consumer = config.client_config("consumer", "aiokafka")
        producer = config.client_config("producer", "aiokafka")
        consumer.setdefault("client_id", f"{client_id}-statuses")
        producer.setdefault("client_id", f"{client_id}-statuses")
        return cls(config.get("status.storage.topic"), consumer, producer, loops=loops)

    # --- lifecycle ---

    async def start(self) -> None:
        """Read the whole topic, so that the first answers are the cluster's latest."""
        await self._log.start(self.timeout_s)

    def pending_writes(self) -> int:
        """How many of this store's writes have not been read back yet (nor given up)."""
        with self._lock:
            return sum(e.unread for table in self._tables.values() for e in table.values())

    async def flush(self, timeout_s: float | None = None) -> None:
        """Return once every write made so far has been read back (or given up).

        :raises ConnectdError: on timeout.
        """
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = asyncio.get_running_loop().time() + timeout_s
        while self.pending_writes():
            if asyncio.get_running_loop().time() >= deadline:
                raise ConnectdError(f"timed out after {timeout_s:g} s writing statuses to topic {self.topic} "
                                    f"on the Kafka cluster at {self._log.bootstrap_servers}")
            await asyncio.sleep(0.01)

    # --- StatusStore ---

    def put_connector(self, connector: str, status: Status) -> None:
        self._put_status(_CONNECTORS, connector, CONNECTOR_PREFIX + connector, status, safe=False)

    def put_connector_safe(self, connector: str, status: Status) -> bool:
        """Write unless another worker reported *connector* at a later generation; returns whether written."""
        return self._put_status(_CONNECTORS, connector, CONNECTOR_PREFIX + connector, status, safe=True)

    def put_task(self, connector: str, task: int, status: Status) -> None:
        self._put_status(_TASKS, (connector, task), f"{TASK_PREFIX}{connector}-{task}", status, safe=False)

    def put_task_safe(self, connector: str, task: int, status: Status) -> bool:
        """Write unless another worker reported the task at a later generation; returns whether written."""
        return self._put_status(_TASKS, (connector, task), f"{TASK_PREFIX}{connector}-{task}", status, safe=True)

    def connector(self, connector: str) -> Status | None:
        with self._lock:
            entry = self._tables[_CONNECTORS].get(connector)
            return None if entry is None else entry.value

    def task(self, connector: str, task: int) -> Status | None:
        with self._lock:
            entry = self._tables[_TASKS].get((connector, task))
            return None if entry is None else entry.value

    def tasks(self, connector: str) -> dict[int, Status]:
        with self._lock:
            return {t: e.value for (c, t), e in self._tables[_TASKS].items() if c == connector and e.value is not None}

    def connectors(self) -> set[str]:
        with self._lock:
            return {c for c, e in self._tables[_CONNECTORS].items() if e.value is not None}

    def statused_connectors(self) -> set[str]:
        """Connectors with a status of their own or of one of their tasks."""
        with self._lock:
            return ({c for c, e in self._tables[_CONNECTORS].items() if e.value is not None}
                    | {c for (c, _), e in self._tables[_TASKS].items() if e.value is not None})

    def forget(self, connector: str) -> None:
        """Delete *connector*'s status and its tasks' (tombstones, as Kafka's DESTROYED)."""
        with self._lock:
            tasks = [t for (c, t), e in self._tables[_TASKS].items() if c == connector and e.value is not None]
        for task in tasks:
            self.forget_task(connector, task)
        self._write(_CONNECTORS, connector, CONNECTOR_PREFIX + connector, None, None)

    def forget_task(self, connector: str, task: int) -> None:
        self._write(_TASKS, (connector, task), f"{TASK_PREFIX}{connector}-{task}", None, None)

    # --- ActiveTopicsStore ---

    def add(self, connector: str, topics: Iterable[str], task: int = 0) -> None:
        """Record each of *topics* not yet known as used by *connector* (by *task*)."""
        with self._lock:
            table = self._tables[_TOPICS]
            new = [t for t in dict.fromkeys(topics) if (e := table.get((connector, t))) is None or e.value is None]
        for topic in new:
            status = TopicStatus(topic, connector, task, int(time.time() * 1000))
            self._write(_TOPICS, (connector, topic), f"{TOPIC_PREFIX}{topic}{TOPIC_SEPARATOR}{connector}",
                        status, topic_value(status), timestamp_ms=status.discover_timestamp_ms)

    def topics(self, connector: str) -> set[str]:
        with self._lock:
            return {t for (c, t), e in self._tables[_TOPICS].items() if c == connector and e.value is not None}

    def topic_status(self, connector: str, topic: str) -> TopicStatus | None:
        with self._lock:
            entry = self._tables[_TOPICS].get((connector, topic))
            return None if entry is None else entry.value

    def reset(self, connector: str) -> None:
        """Forget every topic of *connector* (tombstones for its ``status-topic-…`` records)."""
        for topic in self.topics(connector):
            self._write(_TOPICS, (connector, topic), f"{TOPIC_PREFIX}{topic}{TOPIC_SEPARATOR}{connector}", None, None)

    # --- writing ---

    def _put_status(self, kind: str, ident: Any, key: str, status: Status, *, safe: bool) -> bool:
        return self._write(kind, ident, key, status, status_value(status), timestamp_ms=status.timestamp_ms, safe=safe)

    def _write(self, kind: str, ident: Any, key: str, value: Any, record: dict[str, Any] | None, *,
               timestamp_ms: int | None = None, safe: bool = False) -> bool:
        with self._lock:
            entry = self._tables[kind].setdefault(ident, _Entry())
            if safe and not _can_write_safely(entry.value, value):
                log.debug("status_write_skipped", key=key, cached=repr(entry.value), status=repr(value))
                return False
            generation = value.generation if isinstance(value, Status) else None
            if generation is not None:
                self._generation = generation
            entry.sequence += 1
            entry.unread += 1
            entry.value = value
            sequence = entry.sequence

        def still_latest() -> bool:
            with self._lock:
                return entry.sequence == sequence and (generation is None or generation == self._generation)

        self._log.send_nowait(
            key.encode("utf-8"),
            None if record is None else _dumps(record),
            timestamp_ms=timestamp_ms,
            retry_if=still_latest,
            on_result=lambda metadata: self._written(kind, ident, entry, metadata),
        )
        return True

    def put_capacity(self, name: str, value: Mapping[str, Any]) -> None:
        """Write capacity record ``connectd-capacity-<name>``; read back through :attr:`on_capacity`, as
        any other worker's. Not cached nor retried: the next evaluation writes it again."""
        self._log.send_nowait((CAPACITY_PREFIX + name).encode("utf-8"), _dumps(dict(value)))

    def _written(self, kind: str, ident: Any, entry: _Entry, metadata: RecordMetadata | None) -> None:
        with self._lock:
            if metadata is not None and self._read_to.get(metadata.partition, 0) <= metadata.offset:
                self._own[(metadata.partition, metadata.offset)] = entry  # counted when read back
                return
            entry.unread -= 1  # already read back (before its acknowledgement came), or never written
            self._drop_if_empty(kind, ident, entry)

    def _drop_if_empty(self, kind: str, ident: Any, entry: _Entry) -> None:
        if entry.value is None and entry.unread == 0 and self._tables[kind].get(ident) is entry:
            del self._tables[kind][ident]

    # --- reading ---

    def _read(self, record: ConsumerRecord) -> None:
        with self._lock:
            self._read_to[record.partition] = record.offset + 1
            own = self._own.pop((record.partition, record.offset), None)
            if own is not None:
                own.unread -= 1
        key = record.key.decode("utf-8", "replace") if record.key is not None else ""
        if key.startswith(CAPACITY_PREFIX):
            self._read_capacity(key, record)
            return
        parsed = parse_key(key)
        if parsed is None:
            log.warning("status_record_skipped", key=key, reason="unknown key")
            return
        kind, ident = parsed
        value = None
        if record.value:
            value = self._parse(kind, ident, key, record)
            if value is None:
                return
        with self._lock:
            table = self._tables[kind]
            entry = table.get(ident)
            if entry is not None and entry.unread > 0:
                return  # this store wrote the key since; its value stands until that write is read back
            if value is None:
                self._remove(kind, ident)
                return
            if kind == _TASKS and entry is not None and _stale_unassigned(value, entry.value):
                log.debug("status_record_stale", key=key, status=repr(value), cached=repr(entry.value))
                return
            table.setdefault(ident, _Entry()).value = value

    def _read_capacity(self, key: str, record: ConsumerRecord) -> None:
        try:
            value = json.loads(record.value) if record.value else None
        except ValueError as exc:
            log.warning("status_record_skipped", key=key, offset=record.offset, reason=f"not JSON: {exc}")
            return
        if self.on_capacity is not None:
            try:
                self.on_capacity(key[len(CAPACITY_PREFIX):], value)
            except Exception:
                log.exception("capacity_record_unread", key=key, offset=record.offset)

    def _remove(self, kind: str, ident: Any) -> None:
        table = self._tables[kind]
        if kind == _CONNECTORS:
            # As Kafka: a connector's tombstone forgets its tasks too.
            for task_id, task_entry in list(self._tables[_TASKS].items()):
                if task_id[0] == ident and task_entry.unread == 0:
                    del self._tables[_TASKS][task_id]
        entry = table.get(ident)
        if entry is not None:
            entry.value = None
            self._drop_if_empty(kind, ident, entry)

    def _parse(self, kind: str, ident: Any, key: str, record: ConsumerRecord) -> Any:
        try:
            data = json.loads(record.value)
            if kind == _TOPICS:
                inner = data["topic"]
                name, connector, task, found = inner["name"], inner["connector"], inner["task"], inner["discoverTimestamp"]
                if not (isinstance(name, str) and isinstance(connector, str) and _is_int(task) and _is_int(found)):
                    raise ValueError("expected name, connector, task and discoverTimestamp")
                return TopicStatus(name, connector, task, found)
            state, trace, worker, generation = data["state"], data.get("trace"), data["worker_id"], data["generation"]
            if not (isinstance(worker, str) and _is_int(generation) and (trace is None or isinstance(trace, str))):
                raise ValueError("expected worker_id, generation and trace")
            return Status(state, worker, trace, generation, timestamp_ms=record.timestamp)
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("status_record_skipped", key=key, offset=record.offset, reason=f"malformed value: {exc!r}")
            return None


def _can_write_safely(cached: Status | None, status: Status) -> bool:
    return cached is None or cached.worker_id == status.worker_id or cached.generation <= status.generation


def _stale_unassigned(status: Status, cached: Status | None) -> bool:
    # Frequent rebalances: a worker that had not read another's RUNNING reports UNASSIGNED. A
    # worker's own UNASSIGNED after its own RUNNING (it stopped the task, e.g. at shutdown) stands.
    return (status.state == UNASSIGNED and cached is not None and cached.state == RUNNING
            and (cached.generation > status.generation
                 or (cached.generation == status.generation and cached.worker_id != status.worker_id)))
