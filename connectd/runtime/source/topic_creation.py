"""Topics a source connector creates before writing to them (Kafka's KIP-158).

With the worker's ``topic.creation.enable=true`` (the default) and the
connector's ``topic.creation.default.partitions`` and
``topic.creation.default.replication.factor`` set, a topic a record names
that does not exist yet is created before the record is written. Groups
refine the settings per topic::

    topic.creation.groups=compacted
    topic.creation.compacted.include=status-.*, config-.*
    topic.creation.compacted.exclude=config-tmp-.*
    topic.creation.compacted.partitions=1
    topic.creation.compacted.cleanup.policy=compact

The first group (in ``topic.creation.groups`` order) whose ``include``
matches and ``exclude`` does not decides; the ``default`` group matches
every other topic (as in Kafka Connect, its own ``include`` and ``exclude``
are ignored, and ``default`` listed in ``topic.creation.groups`` is the
default group). A group's missing ``partitions`` / ``replication.factor``
come from the default group; any other ``topic.creation.<group>.<key>`` is
a topic config (``cleanup.policy``, ``retention.ms``, …).

As in Kafka Connect, any ``topic.creation.`` key in a connector's config
asks for topic creation, and then both default counts are required: a
config with groups but no defaults is refused, not quietly left creating
nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectd.errors import ConfigError

__all__ = ["TopicCreationRules", "TopicSettings", "ensure_topics"]

_PREFIX = "topic.creation."
_RESERVED = {"include", "exclude", "partitions", "replication.factor"}


@dataclass(frozen=True)
class TopicSettings:
    """How one topic is created."""

    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Group:
    name: str
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    settings: TopicSettings

    def matches(self, topic: str) -> bool:
        return any(p.fullmatch(topic) for p in self.include) and not any(p.fullmatch(topic) for p in self.exclude)


class TopicCreationRules:
    """The ``topic.creation.*`` settings of one source connector."""

    def __init__(self, groups: list[_Group]) -> None:
        self._groups = groups

    @property
    def enabled(self) -> bool:
        return bool(self._groups)

    @classmethod
    def from_config(cls, config: Mapping[str, str], worker_enabled: bool = True) -> TopicCreationRules:
        """Rules from a connector config; disabled when the worker or the connector does not ask for them.

        :raises ConfigError: listing every problem (a default without both counts, a bad regex, …).
        """
        default_partitions = config.get(f"{_PREFIX}default.partitions")
        default_factor = config.get(f"{_PREFIX}default.replication.factor")
        if not worker_enabled or not any(key.startswith(_PREFIX) for key in config):
            return cls([])
        problems: list[str] = []
        if default_partitions is None or default_factor is None:
            problems.append(f"{_PREFIX}default.partitions and {_PREFIX}default.replication.factor "
                            f"are both required to create topics (the connector has {_PREFIX}* settings)")
        names = [g.strip() for g in str(config.get(f"{_PREFIX}groups", "")).split(",")
                 if g.strip() and g.strip() != "default"]
        defaults = {
            "partitions": _count(default_partitions, f"{_PREFIX}default.partitions", problems),
            "replication.factor": _count(default_factor, f"{_PREFIX}default.replication.factor", problems),
        }
        groups = []
        for name in [*names, "default"]:
            prefix = f"{_PREFIX}{name}."
            values = {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}
            counts = {
                key: _count(values[key], prefix + key, problems) if key in values and name != "default" else defaults[key]
                for key in ("partitions", "replication.factor")
            }
            default = name == "default"
            include = _patterns(".*" if default else values.get("include", ""), f"{prefix}include", problems)
            exclude = _patterns("" if default else values.get("exclude", ""), f"{prefix}exclude", problems)
            if None in counts.values() or include is None or exclude is None:
                continue
            configs = {k: v for k, v in values.items() if k not in _RESERVED}
            groups.append(_Group(name, include, exclude,
                                 TopicSettings(counts["partitions"], counts["replication.factor"], configs)))
        if problems:
            raise ConfigError(problems)
        return cls(groups)

    def settings_for(self, topic: str) -> TopicSettings | None:
        """How *topic* would be created, or ``None`` when topic creation is off."""
        for group in self._groups:
            if group.matches(topic):
                return group.settings
        return None


def _count(raw: Any, key: str, problems: list[str]) -> int | None:
    """The count in *raw*, or ``None`` (with a problem noted) when it is missing or wrong."""
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        problems.append(f"{key}={raw!r}: expected an integer")
        return None
    if value == 0 or value < -1:
        problems.append(f"{key}={raw!r}: expected at least 1, or -1 for the broker's default")
        return None
    return value


def _patterns(raw: str, key: str, problems: list[str]) -> tuple[re.Pattern[str], ...] | None:
    patterns = []
    for text in (p.strip() for p in str(raw).split(",")):
        if not text:
            continue
        try:
            patterns.append(re.compile(text))
        except re.error as exc:
            problems.append(f"{key}={text!r}: expected a regular expression ({exc})")
            return None
    return tuple(patterns)


def ensure_topics(admin: Any, topics: Iterable[str], rules: TopicCreationRules, known: set[str]) -> list[str]:
    """Create the topics of *topics* that do not exist, as *rules* say; returns those created.

    :param admin: a confluent-kafka AdminClient.
    :param known: topics known to exist; updated in place, so each topic is looked up once.
    """
    # lazy: a source task's planner imports this module for TopicCreationRules; confluent_kafka's
    # admin (~12 ms) only once it creates topics
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import NewTopic

    wanted = {t for t in topics if t and t not in known}
    if not wanted or not rules.enabled:
        known |= wanted
        return []
    existing = set(admin.list_topics(timeout=30).topics)
    known |= wanted & existing
    to_create = []
    for topic in sorted(wanted - existing):
        settings = rules.settings_for(topic)
        if settings is None:
            continue
        to_create.append(NewTopic(topic, settings.partitions, settings.replication_factor, config=settings.configs))
    created = []
    if to_create:
        for topic, future in admin.create_topics(to_create).items():
            try:
                future.result(timeout=30)
                created.append(topic)
            except Exception as exc:
                error = exc.args[0] if exc.args else None
                if not (isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS):
                    raise
            known.add(topic)
    return created
