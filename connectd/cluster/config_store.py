"""Connector and task configurations, kept in the config topic.

The records are Kafka Connect's own (``KafkaConfigBackingStore``): string
keys, JSON values without a schema envelope, so a Kafka Connect cluster's
config topic reads here and the other way round::

    connector-<c>            {"properties": {...}}            null: the connector is deleted
    task-<c>-<n>             {"properties": {...}}            waits for the commit
    commit-<c>               {"tasks": N}                     applies the waiting task-<c>-* at once
    target-state-<c>         {"state": "PAUSED", "state.v2": "STOPPED"}   ("state" for older readers)
    restart-connector-<c>    {"include-tasks": true, "only-failed": false}
    session-key              {"key": "<base64>", "algorithm": "HmacSHA256", "creation-timestamp": <ms>}
    tasks-fencing-<c>        {"task-count": N}                exactly-once sources: the generation of N tasks
                                                              whose transactional ids the next fencing fences
    connectd-capacity-policy {"autoScaling": {...}}           connectd's: the cluster's capacity policy, MSK
                                                              Connect's JSON (PUT /capacity); null: none, the
                                                              worker keys capacity.* apply (Kafka Connect's
                                                              workers skip it as a key they do not know)

Task configurations are applied atomically: ``task-`` records wait until
the ``commit-`` record of their connector arrives; a commit that finds tasks
0..N-1 incomplete (compaction removed some) marks the connector
*inconsistent*, and its tasks stay unknown until a later complete commit.
``logger-cluster-*`` records set cluster log levels; any other key, and
any malformed value, is logged and skipped.

Zombie fencing of exactly-once source tasks (KIP-618, as Kafka's store keeps
it): a ``commit-<c>`` record puts connector ``c`` *pending fencing*; a
``tasks-fencing-<c>`` record read after it ends that, and its count is the
number of tasks of the generation that may still be running somewhere (the
next round of fencing fences their transactional ids). The records of a
deleted connector are kept, as Kafka keeps them: a connector created again
under the same name fences its predecessor's zombies.

:meth:`KafkaConfigStore.snapshot` gives a frozen :class:`ConfigSnapshot`.
Its ``offset`` is Kafka Connect's: the offset *after* the last record read
(``-1`` before any), the number members compare in their JoinGroup metadata.
Listeners (:class:`ConfigListener`) are told of changes once the store has
started, as records are read, on the event loop; the snapshot after
:meth:`~KafkaConfigStore.start` is the starting point.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from connectd.cluster.kafka_log import KafkaLog, LogBackedStore
from connectd.cluster.leader_writer import LeaderWriter, transactional_id
from connectd.cluster.protocol import ConnectorTaskId
from connectd.cluster.signing import SessionKey
from connectd.errors import ConfigError, ConnectorError
from connectd.logging import get_logger
from connectd.loops import Loops
from connectd.runtime.kafka.clients import client_option

if TYPE_CHECKING:
    from aiokafka.structs import ConsumerRecord

    from connectd.config.worker import WorkerConfig

__all__ = [
    "TARGET_STATES",
    "ConfigListener",
    "ConfigSnapshot",
    "KafkaConfigStore",
    "RestartRequest",
    "SessionKey",
]

log = get_logger(__name__)

STARTED, PAUSED, STOPPED = "STARTED", "PAUSED", "STOPPED"
TARGET_STATES = (STARTED, PAUSED, STOPPED)

CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
TARGET_STATE_PREFIX = "target-state-"
RESTART_PREFIX = "restart-connector-"
SESSION_KEY_KEY = "session-key"
LOGGER_PREFIX = "logger-cluster-"
TASK_COUNT_PREFIX = "tasks-fencing-"
CAPACITY_POLICY_KEY = "connectd-capacity-policy"
_TASK_NUMBER = re.compile(r"[+-]?[0-9]+")
_INT32 = range(-(2**31), 2**31)  # Java's Integer.parseInt refuses the rest
_WRITE_TIMEOUT_S = 30.0  # Kafka Connect's READ_WRITE_TOTAL_TIMEOUT_MS


@dataclass(frozen=True)
class RestartRequest:
    """``POST /connectors/{c}/restart?includeTasks=…&onlyFailed=…`` as written to the config topic."""

    connector: str
    include_tasks: bool = False
    only_failed: bool = False


def _frozen(mapping: Mapping[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class ConfigSnapshot:
    """The config topic as read up to :attr:`offset`; read-only.

    :attr task_configs: the committed configuration of each task below its
        connector's task count.
    :attr inconsistent: connectors whose last commit found task configs
        missing; they have no tasks until their tasks are written again.
    :attr applied_connector_configs: each connector's config as it was when
        its task configs were last committed (Kafka's applied connector
        config, KAFKA-9228): a connector config changed since then needs its
        task configs written again even where they are the same, for its
        tasks to restart with the new converters, transforms, ….
    :attr task_generations: how many task-config commits of each connector were applied (Kafka's
        task config generation): a task started with one generation is stale once it grows.
    :attr task_count_records: the last ``tasks-fencing-`` count of each connector.
    :attr pending_fencing: connectors whose task configs were committed after their last
        ``tasks-fencing-`` record: their exactly-once tasks wait for a round of fencing.
    :attr capacity_policy: the capacity policy ``PUT /capacity`` stored (MSK Connect's JSON, checked
        when it was written), ``None`` if none is.
    """

    offset: int = -1
    connector_configs: Mapping[str, Mapping[str, str | None]] = field(default_factory=lambda: _frozen({}))
    task_configs: Mapping[ConnectorTaskId, Mapping[str, str | None]] = field(default_factory=lambda: _frozen({}))
    task_counts: Mapping[str, int] = field(default_factory=lambda: _frozen({}))
    target_states: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    inconsistent: frozenset[str] = frozenset()
    session_key: SessionKey | None = None
    applied_connector_configs: Mapping[str, Mapping[str, str | None]] = field(default_factory=lambda: _frozen({}))
    task_generations: Mapping[str, int] = field(default_factory=lambda: _frozen({}))
    task_count_records: Mapping[str, int] = field(default_factory=lambda: _frozen({}))
    pending_fencing: frozenset[str] = frozenset()
    capacity_policy: Mapping[str, Any] | None = None

    def contains(self, connector: str) -> bool:
        return connector in self.connector_configs

    def connectors(self) -> list[str]:
        return sorted(self.connector_configs)

    def tasks(self, connector: str) -> list[ConnectorTaskId]:
        """The tasks of *connector* (none while it is inconsistent), as in Kafka's ``ClusterConfigState.tasks``."""
        if connector in self.inconsistent:
            return []
        return [ConnectorTaskId(connector, n) for n in range(self.task_counts.get(connector, 0))]

    def target_state(self, connector: str) -> str | None:
        return self.target_states.get(connector)


class ConfigListener(Protocol):
    """What a config store tells the herder as it reads; every method is called on the event loop.

    Subclass it to inherit no-op methods, or give any object with these methods.
    """

    def on_connector_config(self, connector: str) -> None:
        """*connector*'s config was written, or removed (then the snapshot no longer contains it)."""

    def on_task_configs(self, tasks: Sequence[ConnectorTaskId]) -> None:
        """A commit applied new configs to *tasks* (empty if the commit found them incomplete)."""

    def on_target_state(self, connector: str) -> None:
        """An existing connector's target state changed."""

    def on_restart_request(self, request: RestartRequest) -> None:
        """A restart was asked for (only requests read after the store started are told)."""

    def on_session_key(self, key: SessionKey) -> None:
        """The leader distributed a new session key."""

    def on_logger_level(self, namespace: str, level: str) -> None:
        """A cluster-wide log level was set (``PUT /admin/loggers/{name}?scope=cluster``)."""

    def on_capacity_policy(self) -> None:
        """The cluster's capacity policy was stored or removed (``PUT`` / ``DELETE /capacity``)."""


def _dumps(value: Any) -> bytes:
    # As Kafka's JsonConverter with schemas.enable=false: compact, fields in schema order.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def target_state_value(state: str) -> dict[str, str]:
    """The JSON of a ``target-state-`` record; older readers know no STOPPED and see PAUSED."""
    if state not in TARGET_STATES:
        raise ValueError(f"unknown target state {state!r}; expected one of {TARGET_STATES}")
    return {"state": PAUSED if state == STOPPED else state, "state.v2": state}


def parse_task_key(key: str, prefix: str = TASK_PREFIX) -> ConnectorTaskId | None:
    """``task-<connector>-<n>`` → its task id (the last dash separates the number, as in Kafka).

    As Kafka's ``key.split("-")``, trailing dashes are ignored, and the number is an int32.
    """
    connector, dash, number = key[len(prefix):].rstrip("-").rpartition("-")
    if not dash or not _TASK_NUMBER.fullmatch(number) or int(number) not in _INT32:
        return None
    return ConnectorTaskId(connector, int(number))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class KafkaConfigStore(LogBackedStore):
    """Connector configurations, task configurations and target states in the config topic.

    :param topic: the config topic (one partition; see :func:`~connectd.cluster.kafka_log.ensure_topic`).
    :param consumer_settings: aiokafka consumer settings.
    :param producer_settings: aiokafka producer settings.
    :param listener: told of changes read after :meth:`start`.
    :param loops: where the topic's reading and writing loops run.
    :param writer: every write goes through this transactional producer (the leader's, with
        exactly-once sources preparing or enabled; :mod:`connectd.cluster.leader_writer`), once claimed.
    """

    def __init__(
        self,
        topic: str,
        consumer_settings: Mapping[str, Any],
        producer_settings: Mapping[str, Any],
        *,
        listener: ConfigListener | None = None,
        timeout_s: float = _WRITE_TIMEOUT_S,
        loops: Loops | None = None,
        writer: LeaderWriter | None = None,
    ) -> None:
        self.topic = topic
        self.writer = writer
        #: called on the event loop when a write failed and took the writer's privileges with it
        self.on_privileges_lost: Callable[[], None] = lambda: None
        self._writing = asyncio.Lock()  # the writer's transactions one at a time
        self.listener = listener
        self.timeout_s = timeout_s
        self._log = KafkaLog(topic, consumer_settings, producer_settings, self._read, loops=loops)
        self._started = False
        self._offset = -1
        self._connector_configs: dict[str, dict[str, str | None]] = {}
        self._task_configs: dict[ConnectorTaskId, dict[str, str | None]] = {}
        self._task_counts: dict[str, int] = {}
        self._target_states: dict[str, str] = {}
        self._inconsistent: set[str] = set()
        self._applied: dict[str, dict[str, str | None]] = {}
        self._deferred: dict[str, dict[ConnectorTaskId, dict[str, str | None]]] = {}
        self._session_key: SessionKey | None = None
        self._generations: dict[str, int] = {}
        self._task_count_records: dict[str, int] = {}
        self._pending_fencing: set[str] = set()
        self._capacity_policy: dict[str, Any] | None = None
        self._snapshot: ConfigSnapshot | None = None

    @classmethod
    def from_worker_config(cls, config: WorkerConfig, client_id: str = "connectd", *,
                           listener: ConfigListener | None = None, loops: Loops | None = None) -> KafkaConfigStore:
        """A store on ``config.storage.topic`` with the worker's consumer and producer settings; with
        ``exactly.once.source.support`` preparing or enabled, written through the leader's
        transactional producer, and with enabled, read ``read_committed`` (as Kafka Connect's)."""
        consumer = config.client_config("consumer", "aiokafka")
        producer = config.client_config("producer", "aiokafka")
        consumer.setdefault("client_id", f"{client_id}-configs")
        producer.setdefault("client_id", f"{client_id}-configs")
        topic = config.get("config.storage.topic")
        writer = None
        if config.transactional_leader:
            option = client_option(config.originals(), "producer", {"client.id": f"{client_id}-configs-leader"})
            writer = LeaderWriter(topic, option, transactional_id(str(config.get("group.id"))), _WRITE_TIMEOUT_S)
        if config.exactly_once_source:
            consumer["isolation_level"] = "read_committed"
        return cls(topic, consumer, producer, listener=listener, loops=loops, writer=writer)

    # --- lifecycle ---

    async def start(self) -> None:
        """Read the whole topic; listeners hear of what is read after this returns.

        :raises ConfigError: if the topic has more than one partition.
        """
        if self._started:
            return
        await self._log.start(self.timeout_s)
        if self._log.partitions > 1:
            count = self._log.partitions
            await self._log.stop()
            raise ConfigError([(f"config.storage.topic {self.topic} has {count} partitions; "
                               "it must have exactly 1 (Kafka Connect refuses it too)")])
        self._started = True
        log.info("config_store_started", topic=self.topic, offset=self._offset, connectors=len(self._connector_configs))

    async def stop(self) -> None:
        await self.relinquish_write_privileges()
        await super().stop()

    # --- reading ---

    def snapshot(self) -> ConfigSnapshot:
        """The configs as read so far; the same object until the next record is read."""
        if self._snapshot is None or self._snapshot.offset != self._offset:
            self._snapshot = self._build_snapshot()
        return self._snapshot

    def _build_snapshot(self) -> ConfigSnapshot:
        return ConfigSnapshot(
            offset=self._offset,
            connector_configs=_frozen({c: _frozen(p) for c, p in self._connector_configs.items()}),
            task_configs=_frozen({t: _frozen(p) for t, p in self._task_configs.items()}),
            task_counts=_frozen(self._task_counts),
            target_states=_frozen(self._target_states),
            inconsistent=frozenset(self._inconsistent),
            session_key=self._session_key,
            applied_connector_configs=_frozen({c: _frozen(p) for c, p in self._applied.items()}),
            task_generations=_frozen(self._generations),
            task_count_records=_frozen(self._task_count_records),
            pending_fencing=frozenset(self._pending_fencing),
            capacity_policy=None if self._capacity_policy is None else _frozen(self._capacity_policy),
        )

    def contains(self, connector: str) -> bool:
        return connector in self._connector_configs

    @property
    def offset(self) -> int:
        return self._offset

    def _read(self, record: ConsumerRecord) -> None:
        if record.key is None:
            log.error("config_record_skipped", topic=self.topic, offset=record.offset, reason="no key")
            return
        # Kafka's StringDeserializer replaces bytes that are not UTF-8; the record still counts.
        key = record.key.decode("utf-8", "replace")
        try:
            value = json.loads(record.value) if record.value else None
        except ValueError as exc:
            log.error("config_record_skipped", topic=self.topic, offset=record.offset, reason=f"not JSON: {exc}")
            return
        self._offset = record.offset + 1
        if key.startswith(TARGET_STATE_PREFIX):
            self._read_target_state(key[len(TARGET_STATE_PREFIX):], value)
        elif key.startswith(CONNECTOR_PREFIX):
            self._read_connector(key[len(CONNECTOR_PREFIX):], value)
        elif key.startswith(TASK_PREFIX):
            task = parse_task_key(key)
            if task is None:
                log.error("config_record_skipped", key=key, reason="not a task key")
            else:
                self._read_task(task, value)
        elif key.startswith(COMMIT_PREFIX):
            self._read_commit(key[len(COMMIT_PREFIX):], value)
        elif key.startswith(RESTART_PREFIX):
            self._read_restart(key[len(RESTART_PREFIX):], value)
        elif key == SESSION_KEY_KEY:
            self._read_session_key(value)
        elif key.startswith(LOGGER_PREFIX):
            level = value.get("level") if isinstance(value, dict) else None
            if isinstance(level, str):
                self._tell("on_logger_level", key[len(LOGGER_PREFIX):], level)
            else:
                log.error("config_record_skipped", key=key, reason="no level")
        elif key.startswith(TASK_COUNT_PREFIX):
            self._read_task_count(key[len(TASK_COUNT_PREFIX):], value)
        elif key == CAPACITY_POLICY_KEY:
            if value is not None and not isinstance(value, dict):
                log.error("config_record_skipped", key=key, reason="not a JSON object")
                return
            self._capacity_policy = value
            self._tell("on_capacity_policy")
        else:
            log.error("config_record_skipped", key=key, reason="unknown key")

    def _tell(self, method: str, *args: Any) -> None:
        if not self._started or self.listener is None:
            return
        try:
            getattr(self.listener, method)(*args)
        except Exception:
            log.exception("config_listener_failed", method=method)

    def _read_connector(self, connector: str, value: Any) -> None:
        if value is None:
            self._remove_connector(connector)
            log.info("connector_config_removed", connector=connector)
        else:
            properties = value.get("properties") if isinstance(value, dict) else None
            if not isinstance(properties, dict):
                log.error("config_record_skipped", key=CONNECTOR_PREFIX + connector, reason="no 'properties' object")
                return
            self._connector_configs[connector] = properties
            # A connector without a target-state record (created by Kafka 0.9) starts.
            self._target_states.setdefault(connector, STARTED)
        self._tell("on_connector_config", connector)

    def _remove_connector(self, connector: str) -> None:
        self._connector_configs.pop(connector, None)
        self._task_counts.pop(connector, None)
        self._applied.pop(connector, None)
        for task in [t for t in self._task_configs if t.connector == connector]:
            del self._task_configs[task]
        self._deferred.pop(connector, None)

    def _read_target_state(self, connector: str, value: Any) -> None:
        if value is None:
            # Written with a connector's deletion; its connector-… tombstone tells the listener.
            self._target_states.pop(connector, None)
            if connector in self._connector_configs:
                self._target_states[connector] = STARTED
            return
        if not isinstance(value, dict):
            log.error("config_record_skipped", key=TARGET_STATE_PREFIX + connector, reason="not an object")
            return
        state = value.get("state.v2")
        if not isinstance(state, str):  # written by an older worker
            state = value.get("state")
        if state not in TARGET_STATES:
            log.error("config_record_skipped", key=TARGET_STATE_PREFIX + connector, reason=f"unknown target state {state!r}")
            return
        previous = self._target_states.get(connector)
        self._target_states[connector] = state
        # Not told for a connector that does not exist yet: a creation with an
        # initial state writes target-state-… before connector-….
        if state != previous and connector in self._connector_configs:
            self._tell("on_target_state", connector)

    def _read_task(self, task: ConnectorTaskId, value: Any) -> None:
        properties = value.get("properties") if isinstance(value, dict) else None
        if not isinstance(properties, dict):
            log.error("config_record_skipped", key=f"{TASK_PREFIX}{task}", reason="no 'properties' object")
            return
        self._deferred.setdefault(task.connector, {})[task] = properties

    def _read_commit(self, connector: str, value: Any) -> None:
        if connector not in self._connector_configs:
            # Deleted, and compaction removed its config and tombstone: these tasks are leftovers.
            self._remove_connector(connector)
            log.debug("config_commit_ignored", connector=connector, reason="no such connector")
            return
        count = value.get("tasks") if isinstance(value, dict) else None
        if not _is_int(count) or count < 0:
            log.error("config_record_skipped", key=COMMIT_PREFIX + connector, reason="no 'tasks' count")
            return
        deferred = self._deferred.pop(connector, {})
        numbers = {task.task for task in deferred}
        updated: list[ConnectorTaskId] = []
        if not all(n in numbers for n in range(count)):
            # Compaction removed task records of this commit; a later complete one repairs it.
            log.warning("connector_tasks_inconsistent", connector=connector, tasks=count, found=sorted(numbers))
            self._inconsistent.add(connector)
        else:
            self._task_configs.update(deferred)
            for task in [t for t in self._task_configs if t.connector == connector and t.task >= count]:
                del self._task_configs[task]
            updated = sorted(deferred)
            self._inconsistent.discard(connector)
            self._applied[connector] = dict(self._connector_configs[connector])
            if deferred:
                self._generations[connector] = self._generations.get(connector, -1) + 1
        self._task_counts[connector] = count
        # Task configs after the last task count record: a round of fencing before their tasks start.
        self._pending_fencing.add(connector)
        self._tell("on_task_configs", updated)

    def _read_task_count(self, connector: str, value: Any) -> None:
        count = value.get("task-count") if isinstance(value, dict) else None
        if not _is_int(count) or count < 0:
            log.error("config_record_skipped", key=TASK_COUNT_PREFIX + connector, reason="no 'task-count'")
            return
        self._task_count_records[connector] = count
        self._pending_fencing.discard(connector)

    def _read_restart(self, connector: str, value: Any) -> None:
        if not isinstance(value, dict):
            log.error("config_record_skipped", key=RESTART_PREFIX + connector, reason="not an object")
            return
        flags = {}
        for name in ("include-tasks", "only-failed"):
            flags[name] = value.get(name)
            if not isinstance(flags[name], bool):
                log.warning("restart_request_field_defaulted", connector=connector, field=name, value=flags[name])
                flags[name] = False
        self._tell("on_restart_request", RestartRequest(connector, flags["include-tasks"], flags["only-failed"]))

    def _read_session_key(self, value: Any) -> None:
        if not isinstance(value, dict):
            log.error("config_record_skipped", key=SESSION_KEY_KEY, reason="not an object")
            return
        encoded, algorithm, created = value.get("key"), value.get("algorithm"), value.get("creation-timestamp")
        if not isinstance(encoded, str) or not isinstance(algorithm, str) or not _is_int(created):
            log.error("config_record_skipped", key=SESSION_KEY_KEY, reason="expected key, algorithm and creation-timestamp")
            return
        if "=" not in encoded:
            encoded += "=" * (-len(encoded) % 4)  # Java's Base64 decoder does not need the padding
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            log.error("config_record_skipped", key=SESSION_KEY_KEY, reason="key is not base64")
            return
        self._session_key = SessionKey(key, algorithm, created)
        self._tell("on_session_key", self._session_key)

    # --- writing: each returns once the store has read its own records back,
    # and raises ConnectdError if the write or the read-back fails ---

    async def _write(self, records: Sequence[tuple[str, Any]]) -> None:
        encoded = [(key.encode("utf-8"), None if value is None else _dumps(value)) for key, value in records]
        if self.writer is not None:
            async with self._writing:
                try:
                    await asyncio.to_thread(self.writer.write, encoded)
                except ConnectorError:
                    if not self.writer.claimed:
                        self.on_privileges_lost()
                    raise
            await self._log.read_to_end(self.timeout_s)  # committed: at or below the last stable offset
            return
        for key, value in encoded:
            partition, offset = await self._log.send_with_partition(key, value)
        await self._log.read_past(partition, offset, self.timeout_s)

    async def claim_write_privileges(self) -> None:
        """The leader's writer claims its transactional id (fencing any earlier leader's); nothing
        without a writer, or with one that holds it already (as Kafka's ``claimWritePrivileges``).

        :raises ConnectorError: not claimed in time.
        """
        if self.writer is not None and not self.writer.claimed:
            async with self._writing:
                await asyncio.to_thread(self.writer.claim)

    async def relinquish_write_privileges(self) -> None:
        """The writer drops its producer (a follower's, or at stop); in a thread, as its client's
        destruction may wait on the cluster."""
        if self.writer is not None and self.writer.claimed:
            async with self._writing:
                await asyncio.to_thread(self.writer.relinquish)

    async def put_connector_config(self, connector: str, properties: Mapping[str, str | None],
                                   target_state: str | None = None) -> None:
        """Write *connector*'s configuration, after its initial *target_state* if given (as Kafka Connect)."""
        records: list[tuple[str, Any]] = []
        if target_state is not None:
            records.append((TARGET_STATE_PREFIX + connector, target_state_value(target_state)))
        records.append((CONNECTOR_PREFIX + connector, {"properties": dict(properties)}))
        await self._write(records)

    async def remove_connector_config(self, connector: str) -> None:
        """Delete *connector*: tombstones for its config and target state, as Kafka Connect writes.

        Reading the config tombstone forgets its tasks too.
        """
        await self._write([(CONNECTOR_PREFIX + connector, None), (TARGET_STATE_PREFIX + connector, None)])

    async def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str | None]]) -> None:
        """Write the configs of tasks 0..N-1, then the commit that applies them all at once."""
        records: list[tuple[str, Any]] = [
            (f"{TASK_PREFIX}{connector}-{n}", {"properties": dict(config)}) for n, config in enumerate(configs)
        ]
        # Each send awaits its acknowledgement, so every task record is in the
        # topic before the commit is sent.
        records.append((COMMIT_PREFIX + connector, {"tasks": len(configs)}))
        await self._write(records)

    async def put_target_state(self, connector: str, state: str) -> None:
        await self._write([(TARGET_STATE_PREFIX + connector, target_state_value(state))])

    async def put_restart_request(self, connector: str, include_tasks: bool = False, only_failed: bool = False) -> None:
        await self._write([(RESTART_PREFIX + connector, {"include-tasks": include_tasks, "only-failed": only_failed})])

    async def put_logger_level(self, namespace: str, level: str) -> None:
        """KIP-976's cluster-wide log level: every worker running when it is read applies it."""
        await self._write([(f"{LOGGER_PREFIX}{namespace}", {"level": level})])

    async def put_capacity_policy(self, policy: Mapping[str, Any] | None) -> None:
        """Store the cluster's capacity policy (MSK Connect's JSON), or remove it (``None``)."""
        await self._write([(CAPACITY_POLICY_KEY, None if policy is None else dict(policy))])

    async def put_task_count_record(self, connector: str, count: int) -> None:
        """KIP-618's ``tasks-fencing-`` record: *connector*'s zombies are fenced, *count* tasks now run."""
        await self._write([(TASK_COUNT_PREFIX + connector, {"task-count": count})])

    async def put_session_key(self, key: SessionKey) -> None:
        value = {
            "key": base64.b64encode(key.key).decode("ascii"),
            "algorithm": key.algorithm,
            "creation-timestamp": key.creation_timestamp_ms,
        }
        await self._write([(SESSION_KEY_KEY, value)])

