"""Declarations of the keys every connector config has (Kafka's ConnectorConfig).

``COMMON_DEF`` holds what source and sink connectors share; ``SOURCE_DEF`` and
``SINK_DEF`` add their own. A connector's full definition is one of these
merged with the plugin's own ``config_def``. :func:`connector_problems` adds
the rules that span keys (topics vs topics.regex, the dead-letter topic,
transform and predicate aliases).

:class:`ConnectorConfig` is a checked config's declared keys parsed once, typed, with their
defaults: what the herders, the supervisor and task assembly read instead of the strings
(:class:`ErrorPolicy`: its ``errors.*`` keys, which Spark's processes parse the same way).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connectd.config.clients import CONNECTION_KEYS, client_settings
from connectd.config.definitions import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigKey,
    ConfigProblem,
    Importance,
    NonEmptyStringWithoutControlChars,
    OneOf,
    Range,
    RegexValid,
    TopicName,
    Type,
)
from connectd.config.properties import Origin
from connectd.override_policy import ConnectorClientConfigOverridePolicy, ConnectorClientConfigRequest

__all__ = ["COMMON_DEF", "SINK_DEF", "SOURCE_DEF", "ConnectorConfig", "ErrorPolicy", "RestartPolicy",
           "OVERRIDES_HANDLED", "client_overrides", "connector_problems", "override_support_problems",
           "sink_group_id"]

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW

_COMMON_KEYS = [
    ConfigKey("name", Type.STRING, "Globally unique name of the connector.", importance=H,
              validator=NonEmptyStringWithoutControlChars(), group="Common"),
    ConfigKey("connector.class", Type.CLASS,
              "The connector's class: Python dotted path, short alias, or Kafka Connect's Java class name "
              "(e.g. org.apache.kafka.connect.file.FileStreamSourceConnector).",
              importance=H, plugin_kind="connector", group="Common"),
    ConfigKey("tasks.max", Type.INT, "Most tasks the connector may run.", default=1, importance=H,
              validator=Range.at_least(1), group="Common"),
    ConfigKey("tasks.max.enforce", Type.BOOLEAN,
              "Fail a connector that returns more task configs than tasks.max.", default=True, importance=L,
              group="Common"),
    ConfigKey("key.converter", Type.CLASS, "Key converter for this connector; overrides the worker's.",
              default=None, importance=L, plugin_kind="converter", group="Converters"),
    ConfigKey("value.converter", Type.CLASS, "Value converter for this connector; overrides the worker's.",
              default=None, importance=L, plugin_kind="converter", group="Converters"),
    ConfigKey("header.converter", Type.CLASS, "Header converter for this connector; overrides the worker's.",
              default=None, importance=L, plugin_kind="converter", group="Converters"),
    ConfigKey("config.action.reload", Type.STRING,
              "Accepted for compatibility and ignored: in Kafka Connect, what to do when a config provider "
              "reports that a value will change (restart or none); connectd's config providers never do, so a "
              "connector sees a changed secret when it is restarted.",
              default="restart", importance=L, validator=OneOf("none", "restart"),
              group="Common", ignored="connectd's config providers never report a changed value"),
    ConfigKey("transforms", Type.LIST,
              "Aliases of the transforms applied to each record, in order; each is set up by "
              "transforms.<alias>.type and transforms.<alias>.*.", default="", importance=L, group="Transforms"),
    ConfigKey("predicates", Type.LIST,
              "Aliases of predicates; each is set up by predicates.<alias>.type and predicates.<alias>.*.",
              default="", importance=L, group="Predicates"),
    ConfigKey("errors.retry.timeout", Type.LONG,
              "How long a failed operation is retried, in ms; 0 never retries, -1 retries forever.",
              default=0, importance=M, validator=Range.at_least(-1), group="Error handling"),
    ConfigKey("errors.retry.delay.max.ms", Type.LONG, "Longest wait between retries; 0 retries at once.",
              default=60000, importance=M, validator=Range.at_least(0), group="Error handling"),
    ConfigKey("errors.tolerance", Type.STRING,
              "none fails the task at the first bad record; all skips bad records (to the dead-letter "
              "topic if one is set).", default="none", importance=M,
              validator=OneOf("none", "all"), group="Error handling"),
    ConfigKey("errors.log.enable", Type.BOOLEAN, "Log each failed operation and bad record.", default=False,
              importance=M, group="Error handling"),
    ConfigKey("errors.log.include.messages", Type.BOOLEAN,
              "Include the record's topic, partition, offset and content in those log lines.", default=False,
              importance=M, group="Error handling"),
    ConfigKey("errors.deadletterqueue.topic.name", Type.STRING,
              "Topic that bad records go to when errors.tolerance=all; empty means none. For source "
              "connectors this is a connectd extension (Kafka Connect has it for sinks only).", default="",
              importance=M, group="Error handling"),
    ConfigKey("errors.deadletterqueue.topic.replication.factor", Type.SHORT,
              "Replication factor of the dead-letter topic when it is created.", default=3, importance=M,
              validator=Range.at_least(-1), group="Error handling"),
    ConfigKey("errors.deadletterqueue.context.headers.enable", Type.BOOLEAN,
              "Add __connect.errors.* headers saying where and why a record failed.", default=False,
              importance=M, group="Error handling"),
    ConfigKey("errors.restart.enable", Type.BOOLEAN,
              "connectd extension: restart a FAILED task automatically, with growing backoff.",
              default=False, importance=M, group="Error handling", extension=True),
    ConfigKey("errors.restart.max.attempts", Type.INT,
              "connectd extension: automatic restarts of a task before it stays FAILED; -1 without limit.",
              default=10, importance=L, validator=Range.at_least(-1), group="Error handling", extension=True),
    ConfigKey("errors.restart.backoff.max.ms", Type.LONG,
              "connectd extension: longest wait between automatic restarts (waits double from 1 s).",
              default=300000, importance=L, validator=Range.at_least(0), group="Error handling", extension=True),
]

_PREFIXES = {
    "transforms.": "Settings of each transform: transforms.<alias>.type and its own keys.",
    "predicates.": "Settings of each predicate: predicates.<alias>.type and its own keys.",
    "key.converter.": "Settings of the connector's key converter.",
    "value.converter.": "Settings of the connector's value converter.",
    "header.converter.": "Settings of the connector's header converter.",
    "producer.override.": "Producer settings for this connector (its records, its dead-letter records), as the "
                          "worker's override policy allows; one librdkafka has not is refused.",
    "consumer.override.": "Consumer settings for this sink connector, as the worker's override policy allows; "
                          "group.id names its consumer group (connect-<name> otherwise), one librdkafka has not "
                          "is refused.",
    "admin.override.": "Admin client settings for this connector (its dead-letter and created topics, a sink's "
                       "offsets), as the worker's override policy allows; one librdkafka has not is refused.",
}

_SOURCE_KEYS = [
    ConfigKey("topic.creation.groups", Type.LIST,
              "Groups of topic.creation.<group>.* settings for topics this connector creates; "
              "the default group always exists.", default="", importance=L, group="Topic creation"),
    ConfigKey("topic.creation.default.partitions", Type.INT,
              "Partitions of topics the connector creates; -1 uses the broker's default.",
              default=None, importance=L, validator=Range.at_least(-1), group="Topic creation"),
    ConfigKey("topic.creation.default.replication.factor", Type.SHORT,
              "Replication factor of topics the connector creates; -1 uses the broker's default.",
              default=None, importance=L, validator=Range.at_least(-1), group="Topic creation"),
    ConfigKey("exactly.once.support", Type.STRING,
              "requested or required: whether the connector must declare exactly-once support. required "
              "refuses the config unless the worker's exactly.once.source.support is enabled and the "
              "connector's exactly_once_support() answers SUPPORTED.",
              default="requested", importance=M, validator=CaseInsensitiveValidString("requested", "required"),
              group="Exactly once"),
    ConfigKey("transaction.boundary", Type.STRING,
              "Where a source task's transactions end under exactly-once delivery: poll (each poll()'s "
              "records a transaction), interval (every transaction.boundary.interval.ms, and at the end of "
              "each Spark micro-batch), connector (where the task's TransactionContext says; for a connector "
              "whose can_define_transaction_boundaries() answers SUPPORTED).", default="poll",
              importance=M, validator=CaseInsensitiveValidString("poll", "interval", "connector"),
              group="Exactly once"),
    ConfigKey("transaction.boundary.interval.ms", Type.LONG,
              "With transaction.boundary=interval, how often a transaction is committed (a micro-batch's end "
              "commits too); unset: the worker's offset.flush.interval.ms.", default=None,
              importance=L, validator=Range.at_least(0), group="Exactly once"),
    ConfigKey("offsets.storage.topic", Type.STRING,
              "This connector's own offsets topic instead of the worker's.", default=None, importance=L,
              validator=TopicName(), group="Offsets"),
]

_SINK_KEYS = [
    ConfigKey("topics", Type.LIST, "Topics to consume, comma-separated. Give this or topics.regex.",
              default="", importance=H, group="Common"),
    ConfigKey("topics.regex", Type.STRING,
              "Regular expression of topics to consume; topics created later that match are picked up. "
              "Give this or topics.", default="", importance=H, validator=RegexValid(), group="Common"),
]

COMMON_DEF = ConfigDef(_COMMON_KEYS, prefixes=_PREFIXES)
SOURCE_DEF = COMMON_DEF.merge(ConfigDef(_SOURCE_KEYS, prefixes={
    "topic.creation.": "Settings of topics the connector creates, per group: topic.creation.<group>.<key>."}))
SINK_DEF = COMMON_DEF.merge(ConfigDef(_SINK_KEYS))


def _declared(definition: ConfigDef, config: Mapping[str, Any], key: str) -> Any:
    """*key* of *config* parsed as *definition* declares it; its default when absent."""
    declared = definition[key]
    raw = config.get(key)
    return declared.parse(raw) if raw is not None else declared.default_value()


@dataclass(frozen=True)
class ErrorPolicy:
    """A connector's ``errors.*`` settings (Kafka Connect's error handling)."""

    tolerate_all: bool = False
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60000
    log_enable: bool = False
    log_include_messages: bool = False
    dlq_topic: str = ""
    dlq_replication_factor: int = 3
    dlq_context_headers: bool = False

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ErrorPolicy:
        """The ``errors.*`` keys of a checked config with resolved values."""

        def value(key: str) -> Any:
            return _declared(COMMON_DEF, config, key)

        return cls(
            tolerate_all=value("errors.tolerance").strip().lower() == "all",
            retry_timeout_ms=value("errors.retry.timeout"),
            retry_delay_max_ms=value("errors.retry.delay.max.ms"),
            log_enable=value("errors.log.enable"),
            log_include_messages=value("errors.log.include.messages"),
            dlq_topic=(value("errors.deadletterqueue.topic.name") or "").strip(),
            dlq_replication_factor=value("errors.deadletterqueue.topic.replication.factor"),
            dlq_context_headers=value("errors.deadletterqueue.context.headers.enable"),
        )


@dataclass(frozen=True)
class RestartPolicy:
    """connectd's automatic restarts of a FAILED task (``errors.restart.*``)."""

    enable: bool = False
    max_attempts: int = 10  # -1: without limit
    backoff_max_ms: int = 300000


@dataclass(frozen=True)
class ConnectorConfig:
    """A checked connector config's declared keys, parsed once (resolved values, defaults filled).

    The config as written (placeholders unresolved) stays the one that is stored and handed to
    Spark; this is what the worker process decides with.
    """

    name: str
    kind: str  # "source" or "sink"
    connector_class: str
    tasks_max: int
    tasks_max_enforce: bool
    errors: ErrorPolicy
    restart: RestartPolicy
    #: A sink's topics and topics.regex (empty for a source).
    topics: tuple[str, ...] = ()
    topics_regex: str = ""
    #: A source's own offsets topic (``None``: the worker's).
    offsets_storage_topic: str | None = None
    #: A sink's consumer group (:func:`sink_group_id`; empty for a source).
    group_id: str = ""
    #: A source's ``transaction.boundary`` (lower case) and ``transaction.boundary.interval.ms``
    #: (``None``: the worker's ``offset.flush.interval.ms``, as Kafka Connect).
    transaction_boundary: str = "poll"
    transaction_interval_ms: int | None = None

    @classmethod
    def parse(cls, config: Mapping[str, Any], kind: str) -> ConnectorConfig:
        """*config* (checked, placeholders resolved) of a *kind* connector, parsed.

        :raises ValueError: for a value its declaration refuses (a config that was never checked).
        """
        definition = SINK_DEF if kind == "sink" else SOURCE_DEF

        def value(key: str) -> Any:
            return _declared(definition, config, key)

        own_topic = (value("offsets.storage.topic") or "").strip() if kind == "source" else ""
        return cls(
            name=str(value("name")).strip(),
            kind=kind,
            connector_class=str(config.get("connector.class", "")).strip(),
            tasks_max=value("tasks.max"),
            tasks_max_enforce=value("tasks.max.enforce"),
            errors=ErrorPolicy.from_config(config),
            restart=RestartPolicy(value("errors.restart.enable"), value("errors.restart.max.attempts"),
                                  value("errors.restart.backoff.max.ms")),
            topics=tuple(t.strip() for t in value("topics") if t.strip()) if kind == "sink" else (),
            topics_regex=(value("topics.regex") or "").strip() if kind == "sink" else "",
            offsets_storage_topic=own_topic or None,
            group_id=sink_group_id(str(value("name")).strip(), config) if kind == "sink" else "",
            transaction_boundary=str(value("transaction.boundary")).strip().lower() if kind == "source" else "poll",
            transaction_interval_ms=value("transaction.boundary.interval.ms") if kind == "source" else None,
        )


def sink_group_id(name: str, config: Mapping[str, Any] | None = None) -> str:
    """A sink connector's consumer group: ``connect-<name>``, as Kafka Connect names it, unless its
    (resolved) *config* sets ``consumer.override.group.id``, which Kafka's Worker applies after the
    default. The group its offsets are committed to, read from at start and by the offsets API."""
    override = str((config or {}).get("consumer.override.group.id") or "").strip()
    return override or f"connect-{name}"


def connector_problems(
    values: Mapping[str, Any],
    kind: str,
    origin: Callable[[str], Origin | None] = lambda key: None,
) -> list[ConfigProblem]:
    """The rules that span keys; *kind* is ``source`` or ``sink``."""
    found: list[ConfigProblem] = []
    found.extend(_alias_problems(values, "transforms", origin))
    found.extend(_alias_problems(values, "predicates", origin))
    defined_predicates = set(_aliases(values.get("predicates", "")))
    for alias in dict.fromkeys(_aliases(values.get("transforms", ""))):
        key = f"transforms.{alias}.predicate"
        predicate = values.get(key)
        if predicate and predicate.strip() not in defined_predicates:
            found.append(ConfigProblem(origin(key), key, "expected the alias of a predicate listed in predicates", predicate))
    if kind == "sink":
        found.extend(_sink_topic_problems(values, origin))
    if kind == "source":
        groups = _aliases(values.get("topic.creation.groups", ""))
        for group in sorted({g for g in groups if groups.count(g) > 1}):
            found.append(ConfigProblem(origin("topic.creation.groups"), "topic.creation.groups",
                                       f"group {group!r} is listed twice", str(values.get("topic.creation.groups"))))
    return found


def _sink_topic_problems(values: Mapping[str, Any], origin: Callable[[str], Origin | None]) -> list[ConfigProblem]:
    # As Kafka's SinkConnectorConfig.validate: a problem with the pair is
    # reported on both keys, and a consumed dead-letter topic on the key that
    # consumes it, so REST validation shows each error at the field to change.
    topics = _aliases(values.get("topics", ""))
    regex = str(values.get("topics.regex", "") or "").strip()
    raw_topics = None if values.get("topics") is None else str(values["topics"])
    raw_regex = values.get("topics.regex")
    found = []
    if topics and regex:
        found += [ConfigProblem(origin("topics"), "topics", "expected only one of topics and topics.regex", raw_topics),
                  ConfigProblem(origin("topics.regex"), "topics.regex", "expected only one of topics and topics.regex", regex)]
    elif not topics and not regex:
        found += [ConfigProblem(origin("topics"), "topics", "one of topics and topics.regex is required"),
                  ConfigProblem(origin("topics.regex"), "topics.regex", "one of topics and topics.regex is required")]
    dlq = str(values.get("errors.deadletterqueue.topic.name", "") or "").strip()
    if not dlq:
        return found
    if dlq in topics:
        found.append(ConfigProblem(origin("topics"), "topics",
                                   f"expected topics without the dead-letter topic {dlq!r} "
                                   "(errors.deadletterqueue.topic.name): the connector would read its own failures",
                                   raw_topics))
    if regex:
        try:
            matched = re.fullmatch(regex, dlq) is not None
        except re.error:
            matched = False  # the regex's own check reports it
        if matched:
            found.append(ConfigProblem(origin("topics.regex"), "topics.regex",
                                       f"expected a regex that does not match the dead-letter topic {dlq!r} "
                                       "(errors.deadletterqueue.topic.name): the connector would read its own failures",
                                       str(raw_regex)))
    return found


#: The clients whose settings a connector may override (``<client>.override.*``), as the worker's
#: override policy allows.
OVERRIDE_CLIENTS = ("producer", "consumer", "admin")


def client_overrides(client: str, config: Mapping[str, str]) -> dict[str, str]:
    """A connector's ``<client>.override.*`` keys, the prefix stripped."""
    prefix = f"{client}.override."
    return {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}


def override_problems(
    values: Mapping[str, Any],
    policy: ConnectorClientConfigOverridePolicy,
    connector_type: str,
    origin: Callable[[str], Origin | None] = lambda key: None,
) -> list[ConfigProblem]:
    """The client overrides the worker's ``connector.client.config.override.policy`` forbids.

    One request per client with overrides goes to *policy*
    (:mod:`connectd.override_policy`); each key it refuses is a problem named
    by its full key, with the policy's reason.
    """
    found = []
    for client in OVERRIDE_CLIENTS:
        prefix = f"{client}.override."
        props = {key[len(prefix):]: str(value) for key, value in values.items() if key.startswith(prefix)}
        if not props:
            continue
        request = ConnectorClientConfigRequest(
            connector_name=str(values.get("name") or "").strip(), connector_type=connector_type,
            connector_class=str(values.get("connector.class") or "").strip(), client_type=client,
            client_props=props)
        reasons = policy.validate(request)
        for key in sorted(props):
            reason = reasons.get(key)
            if reason:
                found.append(ConfigProblem(origin(prefix + key), prefix + key, reason))
    return found


#: Override keys connectd carries out itself rather than hand to a client.
OVERRIDES_HANDLED = {
    "consumer.override.group.id": "a sink's consumer group: where it starts, commits, and the offsets API reads",
    "consumer.override.max.poll.records": "the most records one put() of a sink task gets",
}
#: Override keys refused: why.
_OVERRIDES_REFUSED = {
    "consumer.override.enable.auto.commit": "connectd commits a sink's offsets itself, once a batch is put "
                                            "(as Kafka Connect does); the consumer never commits on its own",
    "consumer.override.key.deserializer": "records are deserialized by the connector's converters",
    "consumer.override.value.deserializer": "records are deserialized by the connector's converters",
    "producer.override.key.serializer": "records are serialized by the connector's converters",
    "producer.override.value.serializer": "records are serialized by the connector's converters",
    "producer.override.transactional.id": "a source task's transactional id is connectd's to give "
                                          "(<group.id>-<connector>-<task>, with exactly.once.source.support=enabled)",
}
#: Override keys accepted with a warning: what they are for never arises.
_GROUP_MEMBERSHIP = ("has no effect: connectd assigns a sink's partitions to its consumers itself, which never "
                     "join the group, so neither a slow put() nor a session makes the group rebalance")
_OVERRIDES_MOOT = {f"consumer.override.{key}": _GROUP_MEMBERSHIP for key in (
    "group.instance.id", "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
    "partition.assignment.strategy", "auto.commit.interval.ms")}


def override_support_problems(
    values: Mapping[str, Any],
    resolve: Callable[[str], str] | None = None,
    origin: Callable[[str], Origin | None] = lambda key: None,
) -> list[ConfigProblem]:
    """Each ``<client>.override.*`` key connectd would not carry out, by name: an error where it
    would change nothing or change meaning (no such librdkafka setting, a value it cannot take,
    what connectd does itself); a warning where its purpose never arises. Keys connectd carries
    out itself (:data:`OVERRIDES_HANDLED`) and client settings it maps are fine.
    """
    found = []
    for client in OVERRIDE_CLIENTS:
        prefix = f"{client}.override."
        for key, value in client_overrides(client, values).items():
            full = prefix + key
            if full in OVERRIDES_HANDLED:
                continue
            if full in _OVERRIDES_REFUSED:
                found.append(ConfigProblem(origin(full), full, f"not supported: {_OVERRIDES_REFUSED[full]}",
                                           str(value)))
                continue
            if key in CONNECTION_KEYS:
                continue  # checked with the worker's settings beside them, when the client is made
            if full in _OVERRIDES_MOOT:
                found.append(ConfigProblem(origin(full), full, _OVERRIDES_MOOT[full], str(value), severity="warning"))
                continue
            try:
                mapped = client_settings({}, client, "confluent", resolve=resolve or (lambda v: v),
                                         overrides={key: str(value)})
            except Exception:  # noqa: BLE001 - a placeholder that cannot be resolved: reported by the key check
                continue
            for problem in mapped.problems:
                message = problem.message
                if not problem.is_error:  # "ignored: …": nothing would carry it out
                    message = f"not supported: {message.removeprefix('ignored: ')}; connectd would ignore it"
                found.append(ConfigProblem(origin(full), full, message, str(value)))
    return found


def exactly_once_problems(
    values: Mapping[str, Any],
    origin: Callable[[str], Origin | None] = lambda key: None,
    enabled: bool = False,
    support: Callable[[], Any] | None = None,
    boundaries: Callable[[], Any] | None = None,
) -> list[ConfigProblem]:
    """A source connector's exactly-once keys against what the worker and the connector do.

    ``exactly.once.support=requested`` (the default) asks for nothing, as in Kafka Connect;
    ``required`` needs the worker's ``exactly.once.source.support=enabled`` (*enabled*) and the
    connector's ``exactly_once_support(config)`` (*support*, called only then) to answer
    ``SUPPORTED``. ``transaction.boundary=connector`` on an enabled worker needs the connector's
    ``can_define_transaction_boundaries(config)`` (*boundaries*) to answer ``SUPPORTED``; a boundary
    without exactly-once has no effect and says so, as does ``transaction.boundary.interval.ms``
    with another boundary than interval.
    """
    found = []
    required = str(values.get("exactly.once.support") or "").strip().lower() == "required"
    boundary = str(values.get("transaction.boundary") or "").strip()
    if required and not enabled:
        found.append(ConfigProblem(origin("exactly.once.support"), "exactly.once.support",
                                   "exactly-once delivery is required, and this worker's exactly.once.source.support "
                                   "is not enabled: its source tasks deliver at least once", "required"))
    elif required and support is not None:
        said = _plugin_answer(support)
        if said != "SUPPORTED":
            found.append(ConfigProblem(origin("exactly.once.support"), "exactly.once.support",
                                       "exactly-once delivery is required, and the connector does not declare it "
                                       f"with this config (exactly_once_support() answered {said})", "required"))
    if boundary.lower() == "connector" and enabled and boundaries is not None:
        said = _plugin_answer(boundaries)
        if said != "SUPPORTED":
            found.append(ConfigProblem(origin("transaction.boundary"), "transaction.boundary",
                                       "the connector does not define its own transaction boundaries with this config "
                                       f"(can_define_transaction_boundaries() answered {said}); expected poll or "
                                       "interval", boundary))
    elif boundary and not enabled:
        found.append(ConfigProblem(origin("transaction.boundary"), "transaction.boundary",
                                   "has no effect: this worker's exactly.once.source.support is not enabled",
                                   boundary, severity="warning"))
    interval = values.get("transaction.boundary.interval.ms")
    if interval not in (None, "") and boundary.lower() != "interval":
        found.append(ConfigProblem(origin("transaction.boundary.interval.ms"), "transaction.boundary.interval.ms",
                                   "has no effect: transaction.boundary is not interval", str(interval),
                                   severity="warning"))
    return found


def _plugin_answer(ask: Callable[[], Any]) -> str:
    """The name of the enum member a plugin's method answered, or what else it gave (an error too)."""
    try:
        answer = ask()
    except Exception as error:  # noqa: BLE001 - the plugin's: reported against the key
        return f"an error ({error!r})"
    return str(getattr(answer, "name", answer))


def _aliases(raw: Any) -> list[str]:
    if isinstance(raw, (list, tuple)):
        return [str(a).strip() for a in raw if str(a).strip()]
    return [a.strip() for a in str(raw or "").split(",") if a.strip()]


def _alias_problems(values: Mapping[str, Any], key: str, origin: Callable[[str], Origin | None]) -> list[ConfigProblem]:
    aliases = _aliases(values.get(key, ""))
    seen: set[str] = set()
    found = []
    for alias in aliases:
        if alias in seen:
            found.append(ConfigProblem(origin(key), key, f"alias {alias!r} is listed twice", str(values.get(key))))
            continue
        seen.add(alias)
        type_key = f"{key}.{alias}.type"
        if not str(values.get(type_key, "") or "").strip():
            found.append(ConfigProblem(origin(key), type_key, f"is required (the class of {key[:-1]} {alias!r})"))
    return found
