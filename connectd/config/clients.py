"""Kafka client settings from a worker config, for confluent-kafka and aiokafka.

Kafka Connect users write Java client settings: top-level ones shared by all
clients (``bootstrap.servers``, ``security.protocol``, ``sasl.*``, ``ssl.*``)
and per-client ones under ``producer.``, ``consumer.`` and ``admin.``. The
data plane uses confluent-kafka (librdkafka names) and the control plane
aiokafka (keyword arguments); this module maps one to the others.

A Java setting neither library has is reported, never silently dropped:
:func:`client_settings` returns it as a warning problem.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectd.config.definitions import ConfigProblem
from connectd.config.kafka_sasl import SASL_KEYS, parse_jaas, sasl_settings
from connectd.config.tls import client_tls
from connectd.errors import ConfigError

__all__ = ["CONNECTION_KEYS", "ClientSettings", "client_settings", "parse_jaas"]

CLIENTS = ("producer", "consumer", "admin")
DEFAULT_BOOTSTRAP_SERVERS = "localhost:9092"

# Settings shared by every client when written at the top level of a worker file.
SHARED_KEYS = (
    "bootstrap.servers",
    "client.id",
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.oauthbearer.token.endpoint.url",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.key.password",
    "ssl.truststore.certificates",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.endpoint.identification.algorithm",
    "metadata.max.age.ms",
    "request.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "socket.connection.setup.timeout.ms",
    "client.dns.lookup",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "connections.max.idle.ms",
    "receive.buffer.bytes",
    "send.buffer.bytes",
)


def _same(name: str) -> tuple[str, Callable[[str], Any]]:
    return (name, str)


def _int(name: str) -> tuple[str, Callable[[str], Any]]:
    return (name, int)


def _kbytes(name: str) -> tuple[str, Callable[[str], Any]]:
    return (name, lambda v: max(1, int(v) // 1024))


_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
    "org.apache.kafka.clients.consumer.StickyAssignor": "cooperative-sticky",
    "range": "range",
    "roundrobin": "roundrobin",
    "cooperative-sticky": "cooperative-sticky",
}


def _assignors(value: str) -> str:
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in _ASSIGNORS]
    if unknown:
        raise ValueError(f"expected assignors among {', '.join(sorted(set(_ASSIGNORS.values())))}")
    return ",".join(dict.fromkeys(_ASSIGNORS[n] for n in names))


#: Java's partitioners librdkafka has: keyed records to murmur2's partition (as Java's), the others
#: spread; keys ignored.
_PARTITIONERS = {
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner": "murmur2_random",
    "org.apache.kafka.clients.producer.UniformStickyPartitioner": "random",
}


def _partitioner(value: str) -> str:
    name = value.strip()
    if name not in _PARTITIONERS:
        raise ValueError(f"expected one of {', '.join(_PARTITIONERS)}: librdkafka has no other Java partitioner")
    return _PARTITIONERS[name]


# Java key → (librdkafka key, conversion). Missing = librdkafka has no such setting.
_CONFLUENT_COMMON: dict[str, tuple[str, Callable[[str], Any]]] = {
    "bootstrap.servers": _same("bootstrap.servers"),
    "client.id": _same("client.id"),
    "security.protocol": ("security.protocol", lambda v: v.upper()),
    "sasl.mechanism": _same("sasl.mechanism"),
    "ssl.endpoint.identification.algorithm": ("ssl.endpoint.identification.algorithm", lambda v: v or "none"),
    "metadata.max.age.ms": _int("metadata.max.age.ms"),
    "request.timeout.ms": _int("socket.timeout.ms"),
    "retry.backoff.ms": _int("retry.backoff.ms"),
    "retry.backoff.max.ms": _int("retry.backoff.max.ms"),
    "reconnect.backoff.ms": _int("reconnect.backoff.ms"),
    "reconnect.backoff.max.ms": _int("reconnect.backoff.max.ms"),
    "connections.max.idle.ms": _int("connections.max.idle.ms"),
    "receive.buffer.bytes": _int("socket.receive.buffer.bytes"),
    "send.buffer.bytes": _int("socket.send.buffer.bytes"),
    "socket.connection.setup.timeout.ms": _int("socket.connection.setup.timeout.ms"),
    "client.dns.lookup": _same("client.dns.lookup"),
}
_CONFLUENT: dict[str, dict[str, tuple[str, Callable[[str], Any]]]] = {
    "producer": {
        "acks": ("acks", lambda v: "all" if v == "-1" else v),
        "batch.size": _int("batch.size"),
        "linger.ms": _int("linger.ms"),
        "compression.type": _same("compression.type"),
        "enable.idempotence": ("enable.idempotence", lambda v: v.lower() == "true"),
        "max.request.size": _int("message.max.bytes"),
        "buffer.memory": _kbytes("queue.buffering.max.kbytes"),
        "request.timeout.ms": _int("request.timeout.ms"),
        "delivery.timeout.ms": _int("delivery.timeout.ms"),
        "max.in.flight.requests.per.connection": _int("max.in.flight.requests.per.connection"),
        "retries": _int("retries"),
        "transactional.id": _same("transactional.id"),
        "transaction.timeout.ms": _int("transaction.timeout.ms"),
        "partitioner.class": ("partitioner", lambda v: _partitioner(v)),
    },
    "consumer": {
        "fetch.max.bytes": _int("fetch.max.bytes"),
        "fetch.min.bytes": _int("fetch.min.bytes"),
        "fetch.max.wait.ms": _int("fetch.wait.max.ms"),
        "max.partition.fetch.bytes": _int("max.partition.fetch.bytes"),
        "auto.offset.reset": _same("auto.offset.reset"),
        "session.timeout.ms": _int("session.timeout.ms"),
        "heartbeat.interval.ms": _int("heartbeat.interval.ms"),
        "max.poll.interval.ms": _int("max.poll.interval.ms"),
        "isolation.level": _same("isolation.level"),
        "check.crcs": ("check.crcs", lambda v: v.lower() == "true"),
        "enable.auto.commit": ("enable.auto.commit", lambda v: v.lower() == "true"),
        "auto.commit.interval.ms": _int("auto.commit.interval.ms"),
        "group.instance.id": _same("group.instance.id"),
        "partition.assignment.strategy": ("partition.assignment.strategy", _assignors),
        "allow.auto.create.topics": ("allow.auto.create.topics", lambda v: v.lower() == "true"),
    },
    "admin": {},
}

# Java key → (aiokafka keyword, conversion).
_AIOKAFKA_COMMON: dict[str, tuple[str, Callable[[str], Any]]] = {
    "bootstrap.servers": ("bootstrap_servers", lambda v: [s.strip() for s in v.split(",") if s.strip()]),
    "client.id": _same("client_id"),
    "security.protocol": ("security_protocol", lambda v: v.upper()),
    "sasl.mechanism": _same("sasl_mechanism"),
    "metadata.max.age.ms": _int("metadata_max_age_ms"),
    "request.timeout.ms": _int("request_timeout_ms"),
    "retry.backoff.ms": _int("retry_backoff_ms"),
    "connections.max.idle.ms": _int("connections_max_idle_ms"),
}
_AIOKAFKA: dict[str, dict[str, tuple[str, Callable[[str], Any]]]] = {
    "producer": {
        "acks": ("acks", lambda v: "all" if v in ("all", "-1") else int(v)),
        "batch.size": _int("max_batch_size"),
        "linger.ms": _int("linger_ms"),
        "compression.type": ("compression_type", lambda v: None if v == "none" else v),
        "enable.idempotence": ("enable_idempotence", lambda v: v.lower() == "true"),
        "max.request.size": _int("max_request_size"),
        "transactional.id": _same("transactional_id"),
        "transaction.timeout.ms": _int("transaction_timeout_ms"),
    },
    "consumer": {
        "fetch.max.bytes": _int("fetch_max_bytes"),
        "fetch.min.bytes": _int("fetch_min_bytes"),
        "fetch.max.wait.ms": _int("fetch_max_wait_ms"),
        "max.partition.fetch.bytes": _int("max_partition_fetch_bytes"),
        "max.poll.records": _int("max_poll_records"),
        "auto.offset.reset": _same("auto_offset_reset"),
        "session.timeout.ms": _int("session_timeout_ms"),
        "heartbeat.interval.ms": _int("heartbeat_interval_ms"),
        "max.poll.interval.ms": _int("max_poll_interval_ms"),
        "isolation.level": _same("isolation_level"),
        "check.crcs": ("check_crcs", lambda v: v.lower() == "true"),
        "enable.auto.commit": ("enable_auto_commit", lambda v: v.lower() == "true"),
        "auto.commit.interval.ms": _int("auto_commit_interval_ms"),
    },
    "admin": {},
}

# Java settings that do not apply to a Python client, and why.
_NOT_APPLICABLE = {
    "key.serializer": "records are serialized by the connector's converters",
    "value.serializer": "records are serialized by the connector's converters",
    "key.deserializer": "records are deserialized by the connector's converters",
    "value.deserializer": "records are deserialized by the connector's converters",
    "max.poll.records": "bounds the records of one put(); connectd reads it itself",
}

#: How a client reaches and authenticates to the cluster: each read with the others (a SASL
#: mechanism with its JAAS line, a store with its password), so checked only all together.
CONNECTION_KEYS = frozenset({"security.protocol", "sasl.mechanism", *SASL_KEYS, "ssl.truststore.location",
                             "ssl.truststore.password", "ssl.truststore.type", "ssl.truststore.certificates",
                             "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
                             "ssl.keystore.certificate.chain", "ssl.keystore.key"})

#: A client's trust and key stores: read by :func:`connectd.config.tls.client_tls`, for both libraries.
_TLS_STORE_KEYS = frozenset({
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type", "ssl.truststore.certificates",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key",
})

@dataclass
class ClientSettings:
    """Settings for one client of one library, and what could not be carried over."""

    settings: dict[str, Any] = field(default_factory=dict)
    problems: list[ConfigProblem] = field(default_factory=list)

    def __repr__(self) -> str:
        shown = {k: ("[hidden]" if _is_secret_key(k) else v) for k, v in self.settings.items()}
        return f"ClientSettings({shown!r}, problems={len(self.problems)})"


def _is_secret_key(key: str) -> bool:
    return "password" in key or "jaas" in key or key.endswith("secret")


def client_settings(
    values: Mapping[str, str],
    client: str,
    library: str,
    *,
    resolve: Callable[[str], str] = lambda v: v,
    overrides: Mapping[str, str] | None = None,
) -> ClientSettings:
    """Settings for a *client* (producer/consumer/admin) of *library* (confluent/aiokafka).

    :param values: the worker's values as written.
    :param resolve: resolves ``${provider:…}`` placeholders; called only on values used.
    :param overrides: a connector's ``producer.override.*`` (already stripped), applied last.
    """
    if client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; expected one of {CLIENTS}")
    if library not in ("confluent", "aiokafka"):
        raise ValueError(f"unknown client library {library!r}")
    # java key → (value, the key as the user wrote it), later sources winning.
    merged: dict[str, tuple[str, str]] = {k: (values[k], k) for k in SHARED_KEYS if k in values}
    # Kafka Connect's default when a worker file has no bootstrap.servers.
    merged.setdefault("bootstrap.servers", (DEFAULT_BOOTSTRAP_SERVERS, "bootstrap.servers"))
    prefix = f"{client}."
    merged.update({k[len(prefix):]: (v, k) for k, v in values.items() if k.startswith(prefix)})
    merged.update({k: (v, f"{client}.override.{k}") for k, v in (overrides or {}).items()})

    common = _CONFLUENT_COMMON if library == "confluent" else _AIOKAFKA_COMMON
    specific = (_CONFLUENT if library == "confluent" else _AIOKAFKA)[client]
    result = ClientSettings()
    for java_key, (raw, written) in merged.items():
        if java_key in SASL_KEYS or java_key in _TLS_STORE_KEYS:
            continue  # handled below
        if java_key == "ssl.endpoint.identification.algorithm" and library == "aiokafka":
            continue  # in the SSL context made below
        target = specific.get(java_key) or common.get(java_key)
        if target is None:
            reason = _NOT_APPLICABLE.get(java_key)
            if reason is None:
                reason = (f"{'librdkafka' if library == 'confluent' else 'aiokafka'} has no such setting for "
                          f"{'an' if client == 'admin' else 'a'} {client}")
            result.problems.append(ConfigProblem(None, written, f"ignored: {reason}", severity="warning"))
            continue
        name, convert = target
        try:
            result.settings[name] = convert(resolve(raw))
        except (ValueError, TypeError) as exc:
            message = str(exc) if str(exc).startswith("expected") else "expected a number"
            result.problems.append(ConfigProblem(None, written, message, raw))
    sasl, problems = sasl_settings(merged, resolve, library)
    result.settings.update(sasl)
    result.problems.extend(problems)
    try:
        tls = client_tls(merged, resolve)
    except ConfigError as exc:
        result.problems.extend(p for p in exc.problems if isinstance(p, ConfigProblem))
    else:
        if tls is not None:
            if library == "confluent":
                result.settings.update(tls.confluent)
            else:
                result.settings["ssl_context"] = tls.context
    return result
