"""Checking a connector config before it runs, and reading one from a file.

:func:`validate_connector` lists every problem (``PUT /connector-plugins/{p}/config/validate``
shows them all); :func:`check_connector` is the gate the herders put a config through before
it is stored or run. A config is checked against the keys every connector has, the source or
sink keys, the plugin's own, the rules that span keys, the worker's client override policy,
the transforms and predicates, a source's topic creation settings and the plugin's
``validate``. :func:`too_many_tasks` is KIP-1004's check of the task configs a connector
generates.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from connectd.config.connector import (
    SINK_DEF,
    SOURCE_DEF,
    ConnectorConfig,
    connector_problems,
    exactly_once_problems,
    override_problems,
    override_support_problems,
)
from connectd.config.definitions import ConfigProblem, ValidationContext
from connectd.config.properties import Origin, load_properties
from connectd.connector import SinkConnector
from connectd.errors import ConfigError, PluginError
from connectd.runtime.source.topic_creation import TopicCreationRules
from connectd.transforms.chain import TransformationChain

__all__ = ["MAX_NAME_LENGTH", "check_connector", "load_connector_file", "too_many_tasks", "validate_connector"]


def load_connector_file(path: str | Path) -> tuple[dict[str, str], Callable[[str], Origin | None]]:
    """A connector config from a ``.properties`` file or the JSON body of ``POST /connectors``.

    :returns: the config (with ``name``) and where each key was written.
    :raises ConfigError: naming the file when it cannot be read or parsed.
    """
    path = Path(path)
    if path.suffix.lower() == ".json":
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError([f"{path}: cannot read: {exc.strerror or exc}"]) from exc
        except ValueError as exc:
            raise ConfigError([f"{path}: not JSON: {exc}"]) from exc
        if not isinstance(document, dict):
            raise ConfigError([f"{path}: expected a JSON object with name and config"])
        config = document.get("config", document)
        if not isinstance(config, dict) or not all(isinstance(v, str) for v in config.values()):
            raise ConfigError([f"{path}: config: expected an object of string values"])
        config = dict(config)
        if "name" in document and "config" in document:
            config.setdefault("name", document["name"])
        return config, lambda key: Origin(str(path))
    properties = load_properties(path)
    return dict(properties), properties.origin


def check_connector(config: Mapping[str, str], registry: Any, origin: Callable[[str], Origin | None] = lambda key: None,
                    *checks: Any) -> type:
    """The class of a connector config fit to run: :func:`validate_connector` (*checks* are its
    ``resolve``, ``override_policy``, ``topic_creation`` and ``exactly_once``), and its name.

    :raises ConfigError: listing every error of the config.
    """
    problems, cls = validate_connector(config, registry, origin, *checks)
    name = (config.get("name") or "").strip()
    if not name:
        problems.insert(0, ConfigProblem(origin("name"), "name", "is required"))
    elif problem := _name_problem(name):
        problems.insert(0, ConfigProblem(origin("name"), "name", problem))
    errors = [p for p in problems if p.is_error]
    if errors:
        raise ConfigError(errors)
    assert cls is not None
    return cls


def validate_connector(
    config: Mapping[str, str],
    registry: Any,
    origin: Callable[[str], Origin | None] = lambda key: None,
    resolve: Callable[[str], str] | None = None,
    override_policy: str = "All",
    topic_creation: bool = True,
    exactly_once: bool = False,
) -> tuple[list[ConfigProblem], type | None]:
    """Every problem of a connector config, and its class when it was found.

    The common, source or sink keys, the plugin's own keys, the rules that
    span keys, the client overrides the worker's *override_policy*
    (``connector.client.config.override.policy``) forbids, the transforms and
    predicates, a source's ``topic.creation.*`` settings unless the worker's
    ``topic.creation.enable`` (*topic_creation*) is false (its tasks ignore
    them then, as Kafka's do), a source's exactly-once keys against the worker's
    ``exactly.once.source.support`` (*exactly_once*: enabled) and the plugin, and the plugin's ``validate``.
    """
    problems: list[ConfigProblem] = []
    class_name = (config.get("connector.class") or "").strip()
    cls = None
    if not class_name:
        problems.append(ConfigProblem(origin("connector.class"), "connector.class", "is required"))
    else:
        try:
            cls = registry.find_class("connector", class_name)
        except PluginError as exc:
            problems.append(ConfigProblem(origin("connector.class"), "connector.class", str(exc), class_name))
    kind = "sink" if cls is not None and issubclass(cls, SinkConnector) else "source"
    base = SINK_DEF if kind == "sink" else SOURCE_DEF
    definition = base.merge(cls.config_def) if cls is not None else base
    context = ValidationContext(resolve=resolve, has_class=registry.has)
    problems += [p for p in definition.validate(config, origin, context) if p.key != "connector.class"]
    problems += connector_problems(config, kind, origin)
    problems += _override_problems(config, registry, override_policy, kind, origin)
    problems += override_support_problems(config, resolve, origin)
    if kind == "source":
        support = (lambda: cls().exactly_once_support(config)) if cls is not None else None
        boundaries = (lambda: cls().can_define_transaction_boundaries(config)) if cls is not None else None
        problems += exactly_once_problems(config, origin, exactly_once, support, boundaries)
    if not any(p.key and (p.key.startswith("transforms") or p.key.startswith("predicates")) for p in problems if p.is_error):
        try:
            TransformationChain(config, registry.find_class, origin=origin).close()
        except ConfigError as exc:
            problems += [p if isinstance(p, ConfigProblem) else ConfigProblem(None, None, str(p)) for p in exc.problems]
    if kind == "source":
        try:
            TopicCreationRules.from_config(config, topic_creation)
        except ConfigError as exc:
            problems += [ConfigProblem(origin("topic.creation.default.partitions"), None, str(p)) for p in exc.problems]
    if cls is not None:
        try:
            problems += list(cls().validate(config))
        except Exception as exc:  # a plugin's own check failing is a problem to report, not a crash
            problems.append(ConfigProblem(None, None, f"{class_name}.validate failed: {type(exc).__name__}: {exc}"))
    return problems, cls


def _override_problems(config: dict[str, str], registry: Any, policy_name: str, kind: str,
                       origin: Callable[[str], Origin | None]) -> list[ConfigProblem]:
    """What the worker's override policy (a registered class, by any of its names) refuses."""
    try:
        policy = registry.find_class("override_policy", policy_name)()
    except PluginError as exc:  # the worker's config check refuses this before any connector
        return [ConfigProblem(None, "connector.client.config.override.policy", str(exc), policy_name)]
    return override_problems(config, policy, kind, origin)


def too_many_tasks(connector: str, count: int, settings: ConnectorConfig) -> str | None:
    """Why *count* tasks are too many for *connector* (KIP-1004), in Kafka's words, or ``None``.

    More tasks than ``tasks.max`` fail the connector (or a task started from an older, larger
    task set) unless ``tasks.max.enforce`` is false.
    """
    max_tasks = settings.tasks_max
    if count <= max_tasks or not settings.tasks_max_enforce:
        return None
    return (f"The connector {connector} has generated {count} tasks, which is greater than {max_tasks}, "
            "the maximum number of tasks it is configured to create. This behaviour should be considered "
            "a bug and is disallowed. If necessary, it can be permitted by reconfiguring the connector "
            "with 'tasks.max.enforce' set to false; however, this option will be removed in a future "
            "release of Kafka Connect.")


#: The longest connector name accepted: it names files, consumer groups and status records.
MAX_NAME_LENGTH = 255


def _name_problem(name: str) -> str | None:
    """What is wrong with a connector's *name* (already stripped), as Kafka Connect refuses it."""
    control = next((i for i, char in enumerate(name) if unicodedata.category(char) == "Cc"), None)
    if control is not None:
        return (f"must not contain control characters (Kafka Connect refuses them), but has "
                f"U+{ord(name[control]):04X} at position {control}")
    if len(name) > MAX_NAME_LENGTH:
        return f"is {len(name)} characters long: at most {MAX_NAME_LENGTH} are accepted"
    return None
