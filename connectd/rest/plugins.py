"""``/connector-plugins``: the installed plugins, their settings, and validating a config."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from connectd.config.connector import SINK_DEF, SOURCE_DEF
from connectd.config.definitions import (
    And,
    ConfigDef,
    ConfigKey,
    ConfigProblem,
    OneOf,
    Type,
    Validator,
    ValidList,
    display_value,
)
from connectd.connector import SinkConnector
from connectd.data.converter_base import Converter, HeaderConverter
from connectd.errors import PluginError
from connectd.herder import validate_connector
from connectd.plugins import PluginInfo
from connectd.rest._keys import HERDER, REGISTRY
from connectd.rest.connectors import query_flag, read_json, string_map
from connectd.rest.error_responses import RestError

__all__ = ["add_routes", "config_infos", "config_key_info", "recommended_values"]

# The registry groups /connector-plugins lists.
_LISTED_GROUPS = ("connector", "converter", "transform", "predicate", "config_provider")
_KAFKA_TYPES = {"config_provider": "config_provider"}
# Kafka's plugin types in the order Kafka lists them; config providers (connectd's) last.
_TYPE_ORDER = {kind: rank for rank, kind in enumerate(
    ("sink", "source", "transformation", "predicate", "converter", "header_converter", "config_provider"))}


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/connector-plugins", _list)
    router.add_get("/connector-plugins/{plugin}/config", _config)
    router.add_put("/connector-plugins/{plugin}/config/validate", _validate)


def _find(registry: Any, name: str, groups: tuple[str, ...] = _LISTED_GROUPS) -> PluginInfo:
    """The plugin named *name* by dotted path, alias, Java class name or short class name."""
    for group in groups:
        try:
            return registry.find(group, name)
        except PluginError:
            pass
    for info in registry:
        if info.group in groups and info.name == name:
            return info
    raise RestError(404, f"Unknown plugin {name}.")


def config_key_info(key: ConfigKey, order: int) -> dict[str, Any]:
    """Kafka's ConfigKeyInfo for one declared key, its fields in the order Kafka writes them: Jackson
    writes ``order`` last, since it is not one of the entity's creator properties."""
    return {
        "name": key.name,
        "type": key.type.value,
        "required": key.required,
        "default_value": None if key.required or key.default is None else key.default_text(),
        "importance": key.importance.value,
        "documentation": key.documentation,
        "group": key.group,
        "width": "NONE",
        "display_name": key.name,
        "dependents": [],
        "order": order,
    }


def recommended_values(key: ConfigKey | None) -> list[str]:
    """The values a key takes when they are a fixed set (one-of validators, booleans); else none."""
    if key is None:
        return []
    if key.type is Type.BOOLEAN:
        return ["true", "false"]
    return _allowed(key.validator)


def _allowed(validator: Validator | None) -> list[str]:
    if isinstance(validator, (OneOf, ValidList)):
        return list(validator.allowed)
    if isinstance(validator, And):
        for part in validator.validators:
            if allowed := _allowed(part):
                return allowed
    return []


def _key_infos(definition: ConfigDef) -> list[dict[str, Any]]:
    # Kafka's order is the position within the key's group; -1 without a group.
    seen: dict[str, int] = {}
    infos = []
    for key in definition:
        if key.group is None:
            order = -1
        else:
            order = seen[key.group] = seen.get(key.group, 0) + 1
        infos.append(config_key_info(key, order))
    return infos


def config_infos(name: str, definition: ConfigDef, config: Mapping[str, str],
                 problems: list[ConfigProblem]) -> dict[str, Any]:
    """Kafka's ConfigInfos: every declared key with its value and errors.

    Errors of undeclared keys (a transform's settings, ``transforms.x.type``)
    get an entry of their own; errors about no key in particular (the
    connector's own ``validate``) are reported on ``connector.class``.
    """
    errors: dict[str, list[str]] = {}
    for problem in problems:
        if not problem.is_error:
            continue
        key = problem.key or "connector.class"
        errors.setdefault(key, []).append(str(ConfigProblem(None, problem.key, problem.message, problem.value)))
    keys = _key_infos(definition)
    declared = {info["name"] for info in keys}
    for extra in sorted(errors.keys() - declared):
        keys.append({**config_key_info(ConfigKey(extra, Type.STRING, "Not a declared key of this connector."), -1),
                     "required": False, "default_value": None})
    groups: list[str] = []
    configs = []
    for info in keys:
        key_name = info["name"]
        if info["group"] is not None and info["group"] not in groups:
            groups.append(info["group"])
        declared_key = definition.get(key_name)
        if key_name in config:
            value = display_value(declared_key or key_name, config[key_name])
        else:
            value = info["default_value"]
        configs.append({
            "definition": info,
            "value": {"name": key_name, "value": value, "recommended_values": recommended_values(declared_key),
                      "errors": errors.get(key_name, []), "visible": True},
        })
    return {
        "name": name,
        "error_count": sum(len(e) for e in errors.values()),
        "groups": groups,
        "configs": configs,
    }


def _kafka_types(info: PluginInfo) -> list[str]:
    """The types Kafka lists a plugin under: one per interface it implements, so a converter that
    converts headers too (StringConverter, JsonConverter) is listed as ``converter`` and as
    ``header_converter``."""
    if info.group == "converter":
        types = [kind for base, kind in ((Converter, "converter"), (HeaderConverter, "header_converter"))
                 if issubclass(info.cls, base)]
        return types or [info.kind]
    return [_KAFKA_TYPES.get(info.group, info.kind)]


async def _list(request: web.Request) -> web.Response:
    registry = request.app[REGISTRY]
    groups = ("connector",) if query_flag(request, "connectorsOnly", default=True) else _LISTED_GROUPS
    plugins = [{"class": info.class_name, "type": kind, "version": info.version}
               for group in groups for info in registry.in_group(group) for kind in _kafka_types(info)]
    # As Kafka lists them: by type (sinks first), then by class name.
    plugins.sort(key=lambda p: (_TYPE_ORDER.get(p["type"], len(_TYPE_ORDER)), p["class"]))
    return web.json_response(plugins)


def _plugin_key_infos(info: PluginInfo) -> list[dict[str, Any]]:
    """A plugin's keys as ``GET /connector-plugins/{plugin}/config`` lists them: its own, and for a
    connector then the framework's source or sink keys it does not declare itself, as Kafka
    Connect lists them since 3.5 (KAFKA-14843)."""
    definition = getattr(info.cls, "config_def", None)
    keys = _key_infos(definition) if isinstance(definition, ConfigDef) else []
    if info.group != "connector":
        return keys
    own = {key["name"] for key in keys}
    base = SINK_DEF if issubclass(info.cls, SinkConnector) else SOURCE_DEF
    return keys + [key for key in _key_infos(base) if key["name"] not in own]


async def _config(request: web.Request) -> web.Response:
    return web.json_response(_plugin_key_infos(_find(request.app[REGISTRY], request.match_info["plugin"])))


_NULL_VALUE = "Null value can not be supplied as the configuration value."


def _without_nulls(body: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """The config without its ``null`` values, and their keys: Kafka validates such a config,
    reporting each null as an error of its key, where creating a connector with it is a 400."""
    return {k: v for k, v in body.items() if v is not None}, sorted(k for k, v in body.items() if v is None)


async def _validate(request: web.Request) -> web.Response:
    herder = request.app[HERDER]
    registry = request.app[REGISTRY]
    plugin = request.match_info["plugin"]
    info = _find(registry, plugin, ("connector",))
    config, nulls = _without_nulls(string_map(await read_json(request, numbers_as_text=True), "config", nulls=True))
    included = config.get("connector.class", "").strip()
    if included:
        try:
            same = registry.find("connector", included).cls is info.cls
        except PluginError:
            same = False
        if not same:
            raise RestError(400, f"Included connector type {included} does not match request type {plugin}")
    else:
        config["connector.class"] = plugin
    problems, cls = await asyncio.to_thread(validate_connector, config, registry, lambda key: None,
                                            herder.worker.providers.resolve,
                                            herder.worker.get("connector.client.config.override.policy"),
                                            herder.worker.get("topic.creation.enable"),
                                            herder.worker.exactly_once_source)
    problems += [ConfigProblem(None, key, _NULL_VALUE) for key in nulls]
    cls = cls or info.cls
    base = SINK_DEF if issubclass(cls, SinkConnector) else SOURCE_DEF
    definition = base.merge(cls.config_def)
    # Kafka names the result after connector.class as the request wrote it (the path's plugin when it has none).
    return web.json_response(config_infos(config["connector.class"], definition, config, problems))
