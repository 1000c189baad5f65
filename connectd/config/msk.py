"""AWS MSK Connect's rules for custom worker configurations.

MSK Connect accepts a worker configuration only if (AWS docs, "Supported
worker configuration properties"):

- ``key.converter`` and ``value.converter`` are present;
- every ``producer.`` / ``consumer.`` key is on its allow-list;
- no other key starts with a forbidden prefix or is a forbidden key.

Two versions of that page are in circulation and their lists differ (one
lost some code-formatted words in conversion). To be safe both ways,
connectd allows a ``producer.``/``consumer.`` key that *either* version
allows and flags a key that *either* version forbids. Each problem names the
rule that matched, so a user can look it up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from connectd.config.definitions import ConfigProblem
from connectd.config.properties import Origin

__all__ = ["ALLOWED_CONSUMER", "ALLOWED_PRODUCER", "FORBIDDEN_KEYS", "FORBIDDEN_PREFIXES", "msk_problems"]

ALLOWED_PRODUCER = frozenset(
    {
        "producer.acks",
        "producer.batch.size",
        "producer.buffer.memory",
        "producer.compression.type",
        "producer.enable.idempotence",
        "producer.key.serializer",
        "producer.max.request.size",
        "producer.metadata.max.age.ms",
        "producer.metadata.max.idle.ms",
        "producer.partitioner.class",
        "producer.reconnect.backoff.max.ms",
        "producer.reconnect.backoff.ms",
        "producer.request.timeout.ms",
        "producer.retry.backoff.ms",
        "producer.value.serializer",
    }
)

ALLOWED_CONSUMER = frozenset(
    {
        "consumer.allow.auto.create.topics",
        "consumer.auto.offset.reset",
        "consumer.check.crcs",
        "consumer.fetch.max.bytes",
        "consumer.fetch.max.wait.ms",
        "consumer.fetch.min.bytes",
        "consumer.heartbeat.interval.ms",
        "consumer.key.deserializer",
        "consumer.max.partition.fetch.bytes",
        "consumer.max.poll.records",
        "consumer.metadata.max.age.ms",
        "consumer.partition.assignment.strategy",
        "consumer.reconnect.backoff.max.ms",
        "consumer.reconnect.backoff.ms",
        "consumer.request.timeout.ms",
        "consumer.retry.backoff.ms",
        "consumer.session.timeout.ms",
        "consumer.value.deserializer",
    }
)

FORBIDDEN_PREFIXES = (
    "access.control.",
    "admin.",
    "admin.listeners.https.",
    "client.",
    "connect.",
    "inter.worker.",
    "internal.",
    "listeners.https.",
    "metrics.",
    "metrics.context.",
    "rest.",
    "sasl.",
    "security.",
    "socket.",
    "ssl.",
    "topic.tracking.",
    "worker.",
)

FORBIDDEN_KEYS = frozenset(
    {
        "bootstrap.servers",
        "config.storage.topic",
        "connections.max.idle.ms",
        "connector.client.config.override.policy",
        "group.id",
        "listeners",
        "metric.reporters",
        "plugin.path",
        "receive.buffer.bytes",
        "response.http.headers.config",
        "scheduled.rebalance.max.delay.ms",
        "send.buffer.bytes",
        "status.storage.topic",
    }
)

_REQUIRED = ("key.converter", "value.converter")


def msk_problems(
    values: Mapping[str, str],
    origin: Callable[[str], Origin | None] = lambda key: None,
    source: str | None = None,
) -> list[ConfigProblem]:
    """Every key of *values* that MSK Connect would refuse, with the rule that matched."""
    found: list[ConfigProblem] = []
    for key in _REQUIRED:
        if key not in values:
            found.append(
                ConfigProblem(Origin(source) if source else None, key, "is required by MSK Connect", rule="msk:required")
            )
    for key in values:
        rule = _refusing_rule(key)
        if rule is not None:
            found.append(ConfigProblem(origin(key), key, f"MSK Connect refuses it ({rule[1]})", rule=rule[0]))
    return found


def _refusing_rule(key: str) -> tuple[str, str] | None:
    if key.startswith("producer."):
        if key not in ALLOWED_PRODUCER:
            return ("msk:producer-allow-list", "not on the allow-list of producer. properties")
        return None
    if key.startswith("consumer."):
        if key not in ALLOWED_CONSUMER:
            return ("msk:consumer-allow-list", "not on the allow-list of consumer. properties")
        return None
    if key in FORBIDDEN_KEYS:
        return (f"msk:forbidden-key:{key}", f"forbidden property {key}")
    # The longest matching prefix is the most specific rule to name.
    matching = [p for p in FORBIDDEN_PREFIXES if key.startswith(p)]
    if matching:
        prefix = max(matching, key=len)
        return (f"msk:forbidden-prefix:{prefix}", f"forbidden prefix {prefix}")
    return None
