"""A connector's offsets, as KIP-875's ``/connectors/{c}/offsets`` reads and changes them.

In the offsets API a source partition and offset are JSON objects of primitive values; a sink
connector's are Kafka Connect's ``{"kafka_topic", "kafka_partition"}`` and ``{"kafka_offset"}``.
:func:`parse_source_offsets` and :func:`parse_sink_offsets` check a request's entries with
Kafka Connect's messages, after the connector was found STOPPED, as Kafka checks them.

A source connector's are its stored source offsets (the offsets file in standalone mode, the
offsets topic in a cluster: the herder says which); a sink connector's are the committed
offsets of its consumer group (``connect-<name>``, or ``consumer.override.group.id``). Reading
works in any state; changing them is the herder's to allow (only while the connector is
STOPPED, under its lock, so it cannot be resumed meanwhile), and first asks the connector's
own ``alter_offsets`` on a new instance, as Kafka Connect does. The next start of the connector
reads them as usual.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from connectd.config.worker import WorkerConfig
from connectd.connector import TopicPartition
from connectd.errors import BadRequestError, ConnectException, ConnectorError, KafkaUnavailableError
from connectd.herder.runs import ConnectorRun
from connectd.logging import get_logger
from connectd.runtime.offsets.groups import alter_group_offsets, delete_group, group_offsets
from connectd.runtime.offsets.store import canonical, ordered

__all__ = ["KAFKA_OFFSET", "KAFKA_PARTITION", "KAFKA_TOPIC", "OffsetsAdmin", "parse_sink_offsets",
           "parse_source_offsets"]

log = get_logger(__name__)

_ADMIN_TIMEOUT_S = 30.0

#: A sink connector's partition and offset in the offsets API, as Kafka Connect names them.
KAFKA_TOPIC = "kafka_topic"
KAFKA_PARTITION = "kafka_partition"
KAFKA_OFFSET = "kafka_offset"


class OffsetsAdmin:
    """Reads and changes the offsets of a herder's connectors.

    :param worker: the worker's configuration.
    :param admin: ``admin(connector_config)``: the herder's admin client (confluent-kafka), made on first
        use, with the connector's ``admin.override.*``.
    :param source_store: where a source connector's offsets are kept (an offset store).
    :param consumer_client: a sink connector's consumer settings (its overrides applied).
    """

    def __init__(self, worker: WorkerConfig, admin: Callable[..., Any], source_store: Callable[[ConnectorRun], Any],
                 consumer_client: Callable[[Mapping[str, str]], dict[str, Any]]) -> None:
        self._worker = worker
        self._admin = admin
        self._source_store = source_store
        self._consumer_client = consumer_client

    async def read(self, run: ConnectorRun) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """The connector's offsets as ``(partition, offset)`` pairs, whatever its state.

        A source connector's are its stored source offsets; a sink connector's
        the committed offsets of its consumer group, as
        ``({"kafka_topic", "kafka_partition"}, {"kafka_offset"})``.

        :raises ConnectorError: when they cannot be read (:class:`KafkaUnavailableError`: no answer).
        """
        name = run.name
        if run.kind == "source":
            pairs = await asyncio.to_thread(self._source_store(run).connector_offsets, name)
            return sorted(((dict(p), dict(o)) for p, o in pairs), key=lambda pair: canonical(pair[0]))

        # Held here until the future has resolved; made in a thread: a connector's first admin
        # client may read key stores (a JKS one runs keytool).
        admin = await asyncio.to_thread(self._admin, run.config)
        try:
            group = run.settings(self._worker.providers.resolve).group_id
            offsets = await asyncio.to_thread(group_offsets, admin, group, _ADMIN_TIMEOUT_S)
        except Exception as exc:
            if not str(exc) or _unreachable(exc):  # the future, or the request, timed out
                reason = (f"no answer from the Kafka cluster at {','.join(self._worker.get('bootstrap.servers'))} "
                          f"within {_ADMIN_TIMEOUT_S:g} s")
                log.error("sink_offsets_unreadable", connector=name, error=reason)
                raise KafkaUnavailableError(f"Failed to retrieve consumer group offsets for sink connector {name}: "
                                            f"{reason}") from exc
            log.error("sink_offsets_unreadable", connector=name, error=str(exc))
            raise ConnectorError(f"Failed to retrieve consumer group offsets for sink connector {name}: {exc}") from exc
        return [({KAFKA_TOPIC: tp.topic, KAFKA_PARTITION: tp.partition}, {KAFKA_OFFSET: offset})
                for tp, offset in sorted(offsets.items())]

    def modify(self, run: ConnectorRun, entries: list[tuple[Any, Any]] | None) -> bool:
        """Write *entries* (``(partition, offset)`` pairs in the offsets API's form, an offset of
        ``None`` removing the partition's), or with ``None`` remove every offset. Blocking.

        :returns: whether the connector's ``alter_offsets`` said it changed offsets it keeps itself.
        :raises BadRequestError: an entry is malformed, or the connector refuses them.
        :raises ConnectorError: when they cannot be written.
        """
        return (self._modify_sink if run.kind == "sink" else self._modify_source)(run, entries)

    def _modify_source(self, run: ConnectorRun, entries: list[tuple[Any, Any]] | None) -> bool:
        store = self._source_store(run)
        if entries is None:
            offsets: dict[str, Any] = {canonical(p): None for p, _ in store.connector_offsets(run.name)}
        else:
            offsets = parse_source_offsets(entries)
        confirmed = self._connector_confirms(run, offsets)
        try:
            store.put(run.name, offsets)
        except OSError as exc:
            raise ConnectorError(f"Failed to modify offsets for source connector {run.name}: {exc}") from exc
        return confirmed

    def _modify_sink(self, run: ConnectorRun, entries: list[tuple[Any, Any]] | None) -> bool:
        admin, group = self._admin(run.config), run.settings(self._worker.providers.resolve).group_id
        if entries is None:
            try:
                offsets: dict[Any, int | None] = dict.fromkeys(group_offsets(admin, group, _ADMIN_TIMEOUT_S))
            except Exception as exc:
                raise ConnectorError(f"Failed to list offsets prior to resetting offsets for sink connector "
                                     f"{run.name}: {exc}") from exc
        else:
            offsets = parse_sink_offsets(entries)
        confirmed = self._connector_confirms(run, offsets)
        if entries is None:
            delete_group(admin, group, run.name, _ADMIN_TIMEOUT_S)
        else:
            alter_group_offsets(admin, self._consumer_client(run.config), group, run.name, offsets, _ADMIN_TIMEOUT_S)
        return confirmed

    def _connector_confirms(self, run: ConnectorRun, offsets: Mapping[Any, Any]) -> bool:
        """The connector's own ``alter_offsets``, on a new instance as in Kafka Connect."""
        resolved = {k: self._worker.providers.resolve(v) for k, v in run.config.items()}
        try:
            return bool(run.cls().alter_offsets(resolved, offsets))
        except BadRequestError:
            raise
        except NotImplementedError as exc:
            raise ConnectorError(f"Failed to modify offsets for connector {run.name} because it doesn't support "
                                 "external modification of offsets") from exc
        except ConnectException as exc:
            # Kafka's contract: alterOffsets throws ConnectException for offsets it refuses (failed
            # validation). Kafka Connect answers that with a 500; it is the request that is wrong: 400.
            raise BadRequestError(f"Failed to modify offsets for {run.kind} connector {run.name}: {exc}") from exc
        except Exception as exc:
            raise ConnectorError(f"Failed to modify offsets for {run.kind} connector {run.name}: "
                                 f"{type(exc).__name__}: {exc}") from exc


def _unreachable(exc: BaseException) -> bool:
    """Whether a confluent-kafka error says the cluster did not answer (rather than refused)."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return isinstance(error, KafkaError) and error.code() in (
        KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError.REQUEST_TIMED_OUT)


# --- the offsets API's entries (KIP-875), checked with Kafka Connect's messages ---

_PRIMITIVES = (str, int, float, bool)


def _json_kind(value: Any) -> str:
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def _check_primitive_map(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise BadRequestError(f"{where} must be a JSON object, not {_json_kind(value) if value is not None else 'null'}")
    for key, item in value.items():
        if item is not None and not isinstance(item, _PRIMITIVES):
            raise BadRequestError(f"Offsets may only contain primitive types as values, but field {key} "
                                  f"contains {_json_kind(item)} ({where})")


def parse_source_offsets(entries: Iterable[tuple[Any, Any]]) -> dict[str, Mapping[str, Any] | None]:
    """A request's ``(partition, offset)`` entries as source offsets: partition's JSON in the request's
    key order (a new offsets key is written so, as Kafka does) → offset.

    :raises BadRequestError: naming the entry that is not a source partition or offset.
    """
    offsets: dict[str, Mapping[str, Any] | None] = {}
    texts: dict[str, str] = {}  # canonical → the first text of the partition
    for index, (partition, offset) in enumerate(entries):
        if partition is not None:  # a null partition is a partition, as for Kafka Connect (OffsetUtils.validateFormat)
            _check_primitive_map(partition, f"offsets[{index}].partition")
        if offset is not None:
            _check_primitive_map(offset, f"offsets[{index}].offset")
        # a later entry for one partition wins, as in Kafka
        offsets[texts.setdefault(canonical(partition), ordered(partition))] = offset
    return offsets


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _parse_int(value: Any) -> int | None:
    """10 and "10" alike, as Kafka Connect takes them; ``None`` for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
        return int(value)
    return None


def parse_sink_offsets(entries: Iterable[tuple[Any, Any]]) -> dict[Any, int | None]:
    """A request's ``(partition, offset)`` entries as sink offsets: TopicPartition → next offset (None: remove).

    :raises BadRequestError: with Kafka Connect's message for the first malformed entry.
    """
    offsets: dict[Any, int | None] = {}
    for partition, offset in entries:
        if partition is None:
            raise BadRequestError("The partition for a sink connector offset cannot be null or missing")
        if not isinstance(partition, dict) or KAFKA_TOPIC not in partition or KAFKA_PARTITION not in partition:
            raise BadRequestError(f"The partition for a sink connector offset must contain the keys "
                                  f"'{KAFKA_TOPIC}' and '{KAFKA_PARTITION}'")
        topic = partition[KAFKA_TOPIC]
        if not isinstance(topic, str) or not topic:
            raise BadRequestError("Kafka topic names must be valid strings and may not be null")
        if partition[KAFKA_PARTITION] is None:
            raise BadRequestError("Kafka partitions must be valid numbers and may not be null")
        number = _parse_int(partition[KAFKA_PARTITION])
        if number is None:
            raise BadRequestError(f"Failed to parse the following Kafka partition value in the provided offsets: "
                                  f"'{_shown(partition[KAFKA_PARTITION])}'. Partition values for sink connectors need "
                                  "to be integers.")
        if number < 0:
            raise BadRequestError(f"Kafka partitions may not be negative: {number}")
        tp = TopicPartition(topic, number)
        if offset is None:
            offsets[tp] = None
            continue
        if not isinstance(offset, dict) or KAFKA_OFFSET not in offset:
            raise BadRequestError(f"The offset for a sink connector should either be null or contain "
                                  f"the key '{KAFKA_OFFSET}'")
        value = _parse_int(offset[KAFKA_OFFSET])
        if value is None:
            raise BadRequestError(f"Failed to parse the following Kafka offset value in the provided offsets: "
                                  f"'{_shown(offset[KAFKA_OFFSET])}'. Offset values for sink connectors need "
                                  "to be integers.")
        if value < 0:
            raise BadRequestError(f"Kafka offsets may not be negative: {value} for {topic}[{number}]")
        offsets[tp] = value
    return offsets
