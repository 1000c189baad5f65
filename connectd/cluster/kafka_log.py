"""One Kafka topic, read from its beginning and kept up to date, and written to.

Distributed mode keeps its state in compacted topics (configs, statuses,
source offsets), each read by every worker: a :class:`KafkaLog` is Kafka
Connect's ``KafkaBasedLog`` for asyncio. Its consumer is assigned every
partition of the topic (no group, no committed offsets) and hands each record
to ``on_record``, in order within a partition; its producer writes with
``acks=all`` through one queue, so writes made through one log keep their
order.

Lifecycle::

    NEW ──start()──► RUNNING ──stop()──► STOPPED
         (reads to the end       (pending writes get a
          before it returns)      moment to finish)

Reading to the end. tansu answers ListOffsets LATEST wrongly, and Kafka's
``end_offsets`` would be one more request anyway; the end of a partition is
instead taken from the high watermark of a Fetch response. A response counts
only if its *request* was sent after :meth:`KafkaLog.read_to_end` began:
aiokafka keeps one fetch in flight per broker, so the second response that
arrives after the call began comes from a request sent after it. Every write
acknowledged before the call is below that high watermark, on Kafka and on
tansu alike. The consumer's ``fetch_max_wait_ms`` defaults to 100 ms here so
that an idle topic answers in two short round trips.

:func:`ensure_topic` creates an internal topic the way Kafka Connect's
``TopicAdmin`` does, and refuses an existing one that cannot hold the data
safely.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError
from aiokafka.structs import ConsumerRecord, RecordMetadata, TopicPartition

from connectd.config.worker import WorkerConfig
from connectd.errors import ConfigError, ConnectdError
from connectd.logging import get_logger
from connectd.loops import Loops

__all__ = ["INTERNAL_TOPICS", "KafkaLog", "ensure_internal_topics", "ensure_topic"]

log = get_logger(__name__)

_NEW, _RUNNING, _STOPPED = "NEW", "RUNNING", "STOPPED"
_POLL_S = 0.01  # how often read_to_end looks at the fetcher's progress
_READ_BACKOFF_S = 1.0
_SEND_RETRIES = 5
_SEND_BACKOFF_S = 0.2
_STOP_DRAIN_S = 5.0
_TOPIC_EXISTS = 36
_INVALID_REPLICATION_FACTOR = 38


def _now_ms() -> int:
    # The clock aiokafka stamps fetch responses with (last_poll_timestamp).
    return int(time.time() * 1000)


def _servers(settings: Mapping[str, Any]) -> str:
    servers = settings.get("bootstrap_servers", "localhost")
    return servers if isinstance(servers, str) else ",".join(servers)


@dataclass
class _Write:
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None = None
    result: asyncio.Future[RecordMetadata] | None = None  # None: fire and forget (send_nowait)
    retry_if: Callable[[], bool] | None = None
    on_result: Callable[[RecordMetadata | None], None] | None = None
    attempts: int = 0

    def finish(self, metadata: RecordMetadata | None) -> None:
        if self.on_result is not None:
            try:
                self.on_result(metadata)
            except Exception:
                log.exception("kafka_log_write_callback_failed", key=_shown(self.key))


class KafkaLog:
    """Reads every record of *topic* into ``on_record`` and writes records to it.

    :param topic: an existing topic (see :func:`ensure_topic`).
    :param consumer_settings: aiokafka consumer keyword arguments, as
        ``WorkerConfig.client_config("consumer", "aiokafka")`` gives them;
        group settings are overridden (the log uses no group).
    :param producer_settings: aiokafka producer keyword arguments; ``acks``
        becomes ``all`` and idempotence is off, as in Kafka Connect.
    :param on_record: called on the event loop for every record, in order
        within a partition; an exception it raises is logged, not propagated.
    :param send_retries: how many times a failed :meth:`send_nowait` is tried again.
    :param loops: where its reading and writing loops run (the herder's, so ``/health`` sees
        them); its own by default.
    """

    def __init__(
        self,
        topic: str,
        consumer_settings: Mapping[str, Any],
        producer_settings: Mapping[str, Any],
        on_record: Callable[[ConsumerRecord], None],
        *,
        send_retries: int = _SEND_RETRIES,
        loops: Loops | None = None,
    ) -> None:
        self.topic = topic
        self._loops = loops if loops is not None else Loops()
        self._on_record = on_record
        self._send_retries = send_retries
        self._consumer_settings = dict(consumer_settings)
        self._consumer_settings.setdefault("client_id", f"connectd-{topic}")
        self._consumer_settings.setdefault("fetch_max_wait_ms", 100)
        self._consumer_settings.update(group_id=None, enable_auto_commit=False, auto_offset_reset="earliest")
        for key in ("group_instance_id", "partition_assignment_strategy"):
            self._consumer_settings.pop(key, None)
        self._producer_settings = dict(producer_settings)
        self._producer_settings.setdefault("client_id", f"connectd-{topic}")
        # aiokafka's idempotent producer fails on tansu; ordering instead comes
        # from aiokafka sending one request per broker at a time.
        self._producer_settings.update(acks="all", enable_idempotence=False)
        self._producer_settings.pop("transactional_id", None)
        self._state = _NEW
        self._loop: asyncio.AbstractEventLoop | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._partitions: list[TopicPartition] = []
        self._reader: asyncio.Task[None] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[_Write] | None = None
        self._unacked = 0
        self._drained: asyncio.Event | None = None

    def __repr__(self) -> str:
        return f"KafkaLog({self.topic!r}, {self._state})"

    @property
    def bootstrap_servers(self) -> str:
        return _servers(self._consumer_settings)

    @property
    def partitions(self) -> int:
        """How many partitions the topic had when the log started."""
        return len(self._partitions)

    @property
    def running(self) -> bool:
        return self._state == _RUNNING

    # --- lifecycle ---

    async def start(self, timeout_s: float = 30.0) -> None:
        """Assign every partition from its beginning and read to the end.

        :raises ConnectdError: if the cluster cannot be reached, the topic does
            not exist, or the end is not reached within *timeout_s*.
        """
        if self._state != _NEW:
            if self._state == _STOPPED:
                raise ConnectdError(f"the log of topic {self.topic} was stopped; make a new one")
            return
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._drained = asyncio.Event()
        self._drained.set()
        self._state = _RUNNING
        try:
            try:
                self._consumer = AIOKafkaConsumer(**self._consumer_settings)
                await self._consumer.start()
                # Metadata of every topic: asking for this one by name would
                # create it on a broker that auto-creates topics.
                topics = await self._consumer.topics()
            except KafkaError as exc:
                raise ConnectdError(f"cannot read topic {self.topic} from the Kafka cluster at {self.bootstrap_servers}: {exc}") from exc
            if self.topic not in topics:
                raise ConnectdError(f"topic {self.topic} does not exist on the Kafka cluster at {self.bootstrap_servers}")
            numbers = sorted(self._consumer.partitions_for_topic(self.topic) or ())
            self._partitions = [TopicPartition(self.topic, p) for p in numbers]
            self._consumer.assign(self._partitions)
            await self._consumer.seek_to_beginning(*self._partitions)
            try:
                self._producer = AIOKafkaProducer(**self._producer_settings)
                await self._producer.start()
            except KafkaError as exc:
                raise ConnectdError(f"cannot write to topic {self.topic} on the Kafka cluster at {self.bootstrap_servers}: {exc}") from exc
            self._reader = self._loops.run(f"kafka-log-read-{self.topic}", self._read_step)
            self._writer = self._loops.run(f"kafka-log-write-{self.topic}", self._write_step)
            await self.read_to_end(timeout_s)
        except BaseException:
            await self._close(drain_s=0)
            raise
        log.info("kafka_log_started", topic=self.topic, partitions=len(self._partitions))

    async def stop(self, drain_s: float = _STOP_DRAIN_S) -> None:
        """Stop reading; writes already queued get up to *drain_s* seconds to be acknowledged."""
        if self._state == _STOPPED:
            return
        was_running = self._state == _RUNNING
        await self._close(drain_s=drain_s if was_running else 0)
        if was_running:
            log.info("kafka_log_stopped", topic=self.topic)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def _close(self, *, drain_s: float) -> None:
        self._state = _STOPPED
        if drain_s > 0 and self._drained is not None and self._writer is not None and not self._writer.done():
            try:
                await asyncio.wait_for(self._drained.wait(), drain_s)
            except TimeoutError:
                log.warning("kafka_log_writes_abandoned", topic=self.topic, pending=self._unacked)
        for name in (f"kafka-log-write-{self.topic}", f"kafka-log-read-{self.topic}"):
            await self._loops.stop(name)
        if self._queue is not None:
            while not self._queue.empty():
                self._abandon(self._queue.get_nowait())
        for client in (self._producer, self._consumer):
            if client is not None:
                try:
                    await client.stop()
                except Exception as exc:  # a client that failed to start may fail to stop too
                    log.debug("kafka_log_client_stop_failed", topic=self.topic, error=str(exc))
        self._producer = self._consumer = None

    # --- reading ---

    async def _read_step(self) -> None:
        """One fetch, its records handed over; the cluster away is a warning and a pause, not a failure."""
        assert self._consumer is not None
        try:
            batches = await self._consumer.getmany(timeout_ms=1000)
        except KafkaError as exc:
            log.warning("kafka_log_read_failed", topic=self.topic, error=str(exc))
            await asyncio.sleep(_READ_BACKOFF_S)
            return
        # No await from here to the next getmany: a reader of the consumer's
        # position never sees a record fetched but not yet handed over.
        for records in batches.values():
            for record in records:
                try:
                    self._on_record(record)
                except Exception:
                    log.exception("kafka_log_record_failed", topic=self.topic, partition=record.partition, offset=record.offset)

    async def read_to_end(self, timeout_s: float = 30.0) -> None:
        """Return once every record written before this call has been passed to ``on_record``.

        :raises ConnectdError: naming the topic and the cluster if that takes longer than *timeout_s*.
        """
        self._check_running()
        assert self._consumer is not None and self._loop is not None
        began = _now_ms()
        deadline = self._loop.time() + timeout_s
        first_response: dict[TopicPartition, int] = {}
        ends: dict[TopicPartition, int] = {}
        pending = set(self._partitions)
        while True:
            self._check_running()  # stop() while waiting
            for tp in list(pending):
                if tp not in ends:
                    stamp = self._consumer.last_poll_timestamp(tp)
                    if stamp is None:
                        continue
                    if tp not in first_response:
                        if stamp > began:
                            first_response[tp] = stamp
                        continue
                    if stamp <= first_response[tp]:
                        continue
                    ends[tp] = self._end(tp)
                if await self._consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
            if not pending:
                return
            if self._reader is not None and self._reader.done():
                raise ConnectdError(f"stopped reading topic {self.topic} from the Kafka cluster at {self.bootstrap_servers}")
            if self._loop.time() >= deadline:
                behind = {tp.partition: ends.get(tp) for tp in sorted(pending)}
                raise ConnectdError(
                    f"timed out after {timeout_s:g} s reading topic {self.topic} to its end from the Kafka "
                    f"cluster at {self.bootstrap_servers} (partitions not caught up, with their ends if known: {behind})"
                )
            await asyncio.sleep(_POLL_S)

    def _end(self, tp: TopicPartition) -> int:
        """Where *tp* ends for this consumer, as its last fetch said: the high watermark, or, reading
        only committed records, the last stable offset (an open transaction's records wait beyond
        it until they commit or abort; Kafka's ``endOffsets`` answers the same)."""
        assert self._consumer is not None
        if self._consumer_settings.get("isolation_level") == "read_committed":
            stable = self._consumer.last_stable_offset(tp)
            if stable is not None and stable >= 0:
                return stable
        return self._consumer.highwater(tp)

    async def read_past(self, partition: int, offset: int, timeout_s: float = 30.0) -> None:
        """Return once the record at *offset* of *partition* has been passed to ``on_record``
        (a write's own offset: cheaper than :meth:`read_to_end` after one's own write).

        :raises ConnectdError: on timeout.
        """
        self._check_running()
        assert self._consumer is not None and self._loop is not None
        tp = TopicPartition(self.topic, partition)
        deadline = self._loop.time() + timeout_s
        while True:
            self._check_running()
            if await self._consumer.position(tp) > offset:
                return
            if self._reader is not None and self._reader.done():
                raise ConnectdError(f"stopped reading topic {self.topic} from the Kafka cluster at {self.bootstrap_servers}")
            if self._loop.time() >= deadline:
                raise ConnectdError(
                    f"timed out after {timeout_s:g} s reading back offset {offset} of topic {self.topic} "
                    f"partition {partition} from the Kafka cluster at {self.bootstrap_servers}"
                )
            await asyncio.sleep(_POLL_S)

    # --- writing ---

    async def send(self, key: bytes | None, value: bytes | None, *, timestamp_ms: int | None = None) -> int:
        """Write one record and return its offset once the brokers acknowledged it.

        :raises ConnectdError: if the write failed.
        """
        return (await self.send_with_partition(key, value, timestamp_ms=timestamp_ms))[1]

    async def send_with_partition(self, key: bytes | None, value: bytes | None, *, timestamp_ms: int | None = None) -> tuple[int, int]:
        """Like :meth:`send`, returning ``(partition, offset)``."""
        self._check_running()
        assert self._loop is not None and self._queue is not None
        result: asyncio.Future[RecordMetadata] = self._loop.create_future()
        self._enqueue(_Write(key, value, timestamp_ms, result=result))
        metadata = await result
        return metadata.partition, metadata.offset

    async def send_and_read(self, key: bytes | None, value: bytes | None, timeout_s: float = 30.0) -> int:
        """Write one record and return its offset once it has been read back (passed to ``on_record``)."""
        partition, offset = await self.send_with_partition(key, value)
        await self.read_past(partition, offset, timeout_s)
        return offset

    def send_nowait(
        self,
        key: bytes | None,
        value: bytes | None,
        *,
        timestamp_ms: int | None = None,
        retry_if: Callable[[], bool] | None = None,
        on_result: Callable[[RecordMetadata | None], None] | None = None,
    ) -> None:
        """Queue one record for writing; callable from any thread.

        A failed write is logged and tried again up to ``send_retries`` times
        while *retry_if* (if given) answers true. Writes queued from one
        thread keep their order unless one of them has to be retried.
        *on_result* is called once at the end with the record's metadata, or
        ``None`` if the write was given up or dropped (on the event loop,
        except for a write dropped at once because the log is not running).
        """
        loop = self._loop
        write = _Write(key, value, timestamp_ms, retry_if=retry_if, on_result=on_result)
        if loop is None or self._state != _RUNNING:
            log.warning("kafka_log_write_dropped", topic=self.topic, key=_shown(key), reason=f"log is {self._state}")
            write.finish(None)
            return
        if _on_loop(loop):
            self._enqueue(write)
            return
        try:
            loop.call_soon_threadsafe(self._enqueue, write)
        except RuntimeError:  # the loop is closed
            log.warning("kafka_log_write_dropped", topic=self.topic, key=_shown(key), reason="event loop closed")
            write.finish(None)

    def _enqueue(self, write: _Write) -> None:
        if self._state != _RUNNING or self._queue is None:
            self._abandon(write)
            return
        self._unacked += 1
        assert self._drained is not None
        self._drained.clear()
        self._queue.put_nowait(write)

    async def _write_step(self) -> None:
        """The next queued write handed to the producer; its outcome comes to :meth:`_delivered`."""
        assert self._queue is not None and self._producer is not None
        write = await self._queue.get()
        try:
            delivery = await self._producer.send(self.topic, write.value, key=write.key, timestamp_ms=write.timestamp_ms)
        except asyncio.CancelledError:
            self._abandon(write)
            raise
        except Exception as exc:
            self._done(write, None, exc)
            return
        delivery.add_done_callback(lambda fut, write=write: self._delivered(write, fut))

    def _delivered(self, write: _Write, fut: asyncio.Future[RecordMetadata]) -> None:
        if fut.cancelled():
            self._done(write, None, ConnectdError("the write was cancelled"))
        elif fut.exception() is not None:
            self._done(write, None, fut.exception())
        else:
            self._done(write, fut.result(), None)

    def _done(self, write: _Write, metadata: RecordMetadata | None, error: BaseException | None) -> None:
        self._unacked -= 1
        if error is None:
            if write.result is not None and not write.result.done():
                write.result.set_result(metadata)  # type: ignore[arg-type]
            write.finish(metadata)
        elif write.result is not None:
            if not write.result.done():
                write.result.set_exception(ConnectdError(
                    f"cannot write to topic {self.topic} on the Kafka cluster at {self.bootstrap_servers}: {error}"))
        elif self._state == _RUNNING and write.attempts < self._send_retries and (write.retry_if is None or write.retry_if()):
            write.attempts += 1
            log.warning("kafka_log_write_retried", topic=self.topic, key=_shown(write.key), attempt=write.attempts, error=str(error))
            self._unacked += 1  # counted again when it is re-queued
            assert self._loop is not None
            self._loop.call_later(_SEND_BACKOFF_S * write.attempts, self._requeue, write)
        else:
            log.error("kafka_log_write_failed", topic=self.topic, key=_shown(write.key), attempts=write.attempts + 1, error=str(error))
            write.finish(None)
        if self._unacked == 0 and self._drained is not None:
            self._drained.set()

    def _requeue(self, write: _Write) -> None:
        self._unacked -= 1
        self._enqueue(write)
        if self._unacked == 0 and self._drained is not None:
            self._drained.set()

    def _abandon(self, write: _Write) -> None:
        if write.result is not None and not write.result.done():
            write.result.set_exception(ConnectdError(f"the log of topic {self.topic} stopped before the write was made"))
        else:
            log.warning("kafka_log_write_dropped", topic=self.topic, key=_shown(write.key), reason="log stopped")
            write.finish(None)

    def _check_running(self) -> None:
        if self._state != _RUNNING:
            raise ConnectdError(f"the log of topic {self.topic} is {self._state}, not RUNNING")


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _shown(key: bytes | None) -> str | None:
    return None if key is None else key.decode("utf-8", "replace")


class LogBackedStore:
    """What the stores on an internal topic share: their :class:`KafkaLog` (``_log``), its
    lifecycle and :meth:`refresh`. A subclass sets ``_log`` and ``timeout_s`` and defines ``start``."""

    _log: KafkaLog
    timeout_s: float

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        """Stop; writes already queued get a moment to be acknowledged."""
        await self._log.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def refresh(self, timeout_s: float | None = None) -> None:
        """Read every record written before this call (by any worker).

        :raises ConnectdError: on timeout.
        """
        await self._log.read_to_end(self.timeout_s if timeout_s is None else timeout_s)


async def ensure_topic(
    admin_settings: Mapping[str, Any],
    name: str,
    *,
    partitions: int,
    replication_factor: int,
    configs: Mapping[str, str] | None = None,
    compact: bool = True,
    single_partition: bool = False,
    topic_key: str | None = None,
) -> bool:
    """Create internal topic *name* if it is missing; check it if it exists. Returns whether it was created.

    As Kafka Connect's ``TopicAdmin``: *configs* first, then
    ``cleanup.policy=compact`` over them when *compact*; a topic another
    worker created meanwhile is fine. An existing topic must be compacted
    only (when *compact*) and, with *single_partition*, have one partition.

    :param partitions: -1 for the broker's default (forced to 1 with *single_partition*).
    :param replication_factor: -1 for the broker's default; more than the
        cluster has brokers is refused before asking (tansu would accept it).
    :param topic_key: the worker setting that names the topic
        (``config.storage.topic``, ...), to name it and its
        ``*.replication.factor`` in errors.
    :raises ConfigError: if the topic cannot hold the data safely or the replication factor is impossible.
    :raises ConnectdError: if the cluster cannot be reached or refuses.
    """
    topic_key = topic_key or ("config.storage.topic" if single_partition else "topic")
    factor_key = topic_key.removesuffix(".topic") + ".replication.factor" if topic_key.endswith(".storage.topic") else "replication.factor"
    servers = _servers(admin_settings)
    if single_partition:
        partitions = 1
    admin = AIOKafkaAdminClient(**admin_settings)
    try:
        try:
            await admin.start()
            # Listing every topic rather than describing this one: a
            # Metadata request naming a missing topic may create it.
            exists = name in await admin.list_topics()
            created = False
            if not exists:
                brokers = len((await admin.describe_cluster()).get("brokers", []))
                if brokers and replication_factor > brokers:
                    raise ConfigError([
                        (f"{factor_key} is {replication_factor}, but the Kafka cluster at {servers} has "
                        f"{brokers} broker{'s' if brokers != 1 else ''}; topic {name} cannot be created "
                        f"(set {factor_key} to at most {brokers}, or -1 for the broker's default)")
                    ])
                topic_configs = dict(configs or {})
                if compact:
                    topic_configs["cleanup.policy"] = "compact"
                defaults = partitions == -1 or replication_factor == -1
                # aiokafka only lets -1 through when replica assignments are given (empty here).
                new = NewTopic(name, partitions, replication_factor, replica_assignments={} if defaults else None,
                               topic_configs=topic_configs)
                response = await admin.create_topics([new])
                _, code, message = response.topic_errors[0][:3]
                if code == 0:
                    created = True
                    log.info("internal_topic_created", topic=name, partitions=partitions,
                             replication_factor=replication_factor, configs=topic_configs)
                elif code == _INVALID_REPLICATION_FACTOR:
                    raise ConfigError([(f"{factor_key} is {replication_factor}: the Kafka cluster at {servers} "
                                       f"refused to create topic {name}: {message}")])
                elif code != _TOPIC_EXISTS:  # another worker created it meanwhile: fine
                    raise ConnectdError(f"cannot create topic {name} on the Kafka cluster at {servers}: "
                                        f"error {code} {message or ''}".rstrip())
            if not created:
                await _check_existing(admin, name, servers, compact=compact, single_partition=single_partition, topic_key=topic_key)
            return created
        except KafkaError as exc:
            raise ConnectdError(f"cannot create or check topic {name} on the Kafka cluster at {servers}: {exc}") from exc
    finally:
        with contextlib.suppress(Exception):
            await admin.close()


async def _check_existing(admin: Any, name: str, servers: str, *, compact: bool, single_partition: bool, topic_key: str) -> None:
    if single_partition:
        described = await admin.describe_topics([name])
        count = len(described[0].get("partitions", [])) if described else 0
        if count > 1:
            raise ConfigError([f"{topic_key} {name} has {count} partitions; it must have exactly 1 (Kafka Connect refuses it too)"])
    if not compact:
        return
    try:
        responses = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
        entries = responses[0].resources[0][4]
    except Exception as exc:  # not every broker answers; Kafka Connect goes on too
        log.warning("internal_topic_policy_unknown", topic=name, error=str(exc))
        return
    policy = next((entry[1] for entry in entries if entry[0] == "cleanup.policy"), None)
    if policy is None:
        return
    policies = {p.strip().lower() for p in policy.split(",") if p.strip()}
    if policies != {"compact"}:
        raise ConfigError([
            (f"{topic_key} {name} has cleanup.policy={policy}; it must be compact only, or records would be "
            f"lost as they age (Kafka Connect refuses it too)")
        ])



# Worker setting prefix of each internal topic, in the order Kafka Connect creates them.
INTERNAL_TOPICS = ("offset.storage", "status.storage", "config.storage")
_NOT_TOPIC_SETTINGS = ("topic", "replication.factor", "partitions")


def internal_topic_settings(config: WorkerConfig, prefix: str) -> dict[str, str]:
    """The topic configs a worker file gives an internal topic (``config.storage.min.insync.replicas=2``
    → ``min.insync.replicas``), as Kafka's ``DistributedConfig.topicSettings``: compaction is not
    negotiable and the config topic has one partition, whatever is written."""
    settings = config.with_prefix(prefix + ".")
    for ignored in ("cleanup.policy",) + (("partitions",) if prefix == "config.storage" else ()):
        if ignored in settings:
            log.warning("internal_topic_setting_ignored", key=f"{prefix}.{ignored}", value=settings[ignored],
                        reason="compaction is always used" if ignored == "cleanup.policy" else "the config topic has 1 partition")
    settings.pop("cleanup.policy", None)
    for name in _NOT_TOPIC_SETTINGS:
        settings.pop(name, None)
    return settings


async def ensure_internal_topics(config: WorkerConfig) -> None:
    """Create or check the offset, status and config topics of a distributed worker.

    :raises ConfigError: as :func:`ensure_topic`.
    """
    admin = config.client_config("admin", "aiokafka")
    for prefix in INTERNAL_TOPICS:
        single = prefix == "config.storage"
        await ensure_topic(
            admin,
            config.get(f"{prefix}.topic"),
            partitions=1 if single else config.get(f"{prefix}.partitions"),
            replication_factor=config.get(f"{prefix}.replication.factor"),
            configs=internal_topic_settings(config, prefix),
            single_partition=single,
            topic_key=f"{prefix}.topic",
        )
