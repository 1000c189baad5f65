"""Which converters a connector's tasks use, configured as Kafka Connect does.

A connector that names ``key.converter`` (or ``value.converter``,
``header.converter``) gets that class configured with *its own*
``key.converter.*`` settings; one that does not gets the worker's class with
the worker's settings. The two are never mixed: a connector's
``value.converter.schemas.enable`` without a ``value.converter`` is ignored,
exactly as in Kafka Connect (``config check`` of a connector warns about it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connectd.config.definitions import ConfigProblem
from connectd.config.providers import has_placeholder
from connectd.errors import ConfigError, PluginError

__all__ = ["ConverterChoice", "choose_converter", "configure_converters"]

ROLES = ("key", "value", "header")


@dataclass(frozen=True)
class ConverterChoice:
    """The class name and settings (as written) of one converter, and who chose it."""

    role: str
    class_name: str
    settings: dict[str, str]
    chosen_by: str  # "connector" or "worker"


def choose_converter(role: str, worker: Mapping[str, str], connector: Mapping[str, str], default: str | None = None) -> ConverterChoice:
    """The converter for *role* (``key``, ``value``, ``header``) of a connector.

    :param worker: the worker's values as written.
    :param connector: the connector's values as written.
    :param default: the class when neither names one (the header converter's default).
    :raises ConfigError: if neither names a class and there is no default.
    """
    if role not in ROLES:
        raise ValueError(f"unknown converter role {role!r}; expected one of {ROLES}")
    key = f"{role}.converter"
    prefix = f"{key}."
    for source, values in (("connector", connector), ("worker", worker)):
        class_name = str(values.get(key) or "").strip()
        if class_name:
            settings = {k[len(prefix):]: v for k, v in values.items() if k.startswith(prefix)}
            return ConverterChoice(role, class_name, settings, source)
    if default is None:
        raise ConfigError([f"{key} is required: neither the connector nor the worker names one"])
    return ConverterChoice(role, default, {}, "default")


def configure_converters(
    worker: Mapping[str, str],
    connector: Mapping[str, str],
    find_class: Callable[[str], type],
    resolve: Callable[[str], str] = lambda value: value,
    header_default: str = "org.apache.kafka.connect.storage.SimpleHeaderConverter",
) -> dict[str, Any]:
    """Instances of the key, value and header converters, configured.

    :param find_class: looks a converter class up by name (raises :class:`PluginError`).
    :param resolve: resolves ``${provider:…}`` placeholders in settings.
    :raises ConfigError: listing every problem of the three converters at once.
    """
    problems: list[ConfigProblem | str] = []
    converters: dict[str, Any] = {}
    for role in ROLES:
        choice = choose_converter(role, worker, connector, header_default if role == "header" else None)
        key = f"{role}.converter"
        try:
            cls = find_class(choice.class_name)
        except PluginError as exc:
            problems.append(f"{key}={choice.class_name!r} ({choice.chosen_by}): {exc}")
            continue
        settings = {k: resolve(v) if has_placeholder(v) else v for k, v in choice.settings.items()}
        converter = cls()
        try:
            if role == "header":
                converter.configure(settings, False)
            else:
                converter.configure(settings, role == "key")
        except ConfigError as exc:
            problems.extend(f"{key}.{p}" if isinstance(p, ConfigProblem) else f"{key}: {p}" for p in exc.problems)
            continue
        converters[role] = converter
    if problems:
        raise ConfigError(problems)
    return converters
