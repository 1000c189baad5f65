"""Config providers: ``${provider:[path:]key}`` placeholders resolved at use.

A worker file names its providers the way Kafka's does::

    config.providers=file,env
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.file.param.allowed.paths=/etc/connectd/secrets
    config.providers.env.class=env

and any value may then hold ``${file:/etc/connectd/secrets/db.properties:password}``
or ``${env:DB_PASSWORD}``. Values are stored as written — in files, in the
config topic, in REST answers — and resolved only when used. Every resolved
value is registered with :mod:`connectd.secrets`, so it is hidden from log
lines even when a library puts it into a message; errors name the
placeholder, never what it resolved to.

Providers from plugins register through the ``register_config_providers``
hook; built-ins are ``file``, ``directory`` and ``env``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from connectd import secrets
from connectd.config.definitions import ConfigDef, ConfigKey, Importance, RegexValid, Type
from connectd.config.properties import Origin, load_properties
from connectd.errors import ConfigError, PluginError

__all__ = [
    "ConfigProvider",
    "ConfigProviders",
    "DirectoryConfigProvider",
    "EnvVarConfigProvider",
    "FileConfigProvider",
    "PLACEHOLDER",
    "has_placeholder",
]

#: ``${provider:path:key}`` or ``${provider:key}``, the syntax of Kafka's ConfigTransformer.
PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")


def has_placeholder(value: object) -> bool:
    """Whether *value* is a string holding at least one placeholder."""
    return isinstance(value, str) and PLACEHOLDER.search(value) is not None


class ConfigProvider:
    """Kafka's ``ConfigProvider``: values looked up by path and key.

    Subclasses declare their parameters in :attr:`config_def`; they arrive
    from ``config.providers.<name>.param.<key>``.
    """

    config_def: ConfigDef = ConfigDef()

    def configure(self, params: Mapping[str, str]) -> None:
        """Receive the provider's parameters (already validated)."""

    def get(self, path: str, keys: Iterable[str]) -> dict[str, str]:
        """Values of *keys* under *path*; a key that has no value is left out.

        :raises ConfigError: if *path* cannot be read or is not allowed.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release what :meth:`configure` acquired."""


_ALLOWED_PATHS = ConfigKey(
    "allowed.paths",
    Type.LIST,
    "Directories (absolute paths, comma-separated) that placeholders may read from; "
    "empty allows any path.",
    default="",
    importance=Importance.MEDIUM,
)


class _PathProvider(ConfigProvider):
    config_def = ConfigDef([_ALLOWED_PATHS])

    def __init__(self) -> None:
        self._allowed: list[Path] = []

    def configure(self, params: Mapping[str, str]) -> None:
        allowed = _ALLOWED_PATHS.parse(params.get("allowed.paths", ""))
        relative = [p for p in allowed if not Path(p).is_absolute()]
        if relative:
            raise ConfigError([f"allowed.paths: expected absolute paths, got {', '.join(relative)}"])
        self._allowed = [Path(os.path.normpath(p)) for p in allowed]

    def _check_allowed(self, path: str) -> Path:
        if not path:
            raise ConfigError(["expected a path before the key"])
        resolved = Path(os.path.normpath(path))
        if self._allowed and not any(resolved == a or a in resolved.parents for a in self._allowed):
            raise ConfigError([f"path {path} is outside allowed.paths"])
        return resolved


class FileConfigProvider(_PathProvider):
    """Keys of a properties file: ``${file:/path/to/file.properties:key}``."""

    def get(self, path: str, keys: Iterable[str]) -> dict[str, str]:
        file = self._check_allowed(path)
        properties = load_properties(file)
        return {key: properties[key] for key in keys if key in properties}


class DirectoryConfigProvider(_PathProvider):
    """One file per key, as Kubernetes mounts secrets: ``${directory:/run/secrets:db-password}``.

    The file's whole content is the value, as Kafka reads it (a trailing
    newline is kept: write secrets without one).
    """

    def get(self, path: str, keys: Iterable[str]) -> dict[str, str]:
        directory = self._check_allowed(path)
        if not directory.is_dir():
            raise ConfigError([f"{path} is not a directory"])
        found: dict[str, str] = {}
        for key in keys:
            file = directory / key
            # A key naming anything but a plain file directly inside the
            # directory (../x, a/b, a sub-directory) is not a value.
            if "/" in key or key in ("", ".", "..") or not file.is_file():
                continue
            try:
                found[key] = file.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError([f"cannot read {file}: {exc.strerror or exc}"]) from exc
        return found


class EnvVarConfigProvider(ConfigProvider):
    """Environment variables: ``${env:DB_PASSWORD}`` (no path)."""

    config_def = ConfigDef(
        [
            ConfigKey(
                "allowlist.pattern",
                Type.STRING,
                "Regular expression that a variable's name must match to be readable; default all.",
                default=".*",
                validator=RegexValid(),
            )
        ]
    )

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ if environ is not None else os.environ
        self._allow = re.compile(".*")

    def configure(self, params: Mapping[str, str]) -> None:
        self._allow = re.compile(params.get("allowlist.pattern", ".*"))

    def get(self, path: str, keys: Iterable[str]) -> dict[str, str]:
        if path:
            raise ConfigError(["the env provider takes no path: write ${env:NAME}"])
        return {key: self._environ[key] for key in keys if key in self._environ and self._allow.fullmatch(key)}


BUILTIN_PROVIDERS: list[tuple[type[ConfigProvider], tuple[str, ...]]] = [
    (FileConfigProvider, ("file", "org.apache.kafka.common.config.provider.FileConfigProvider")),
    (DirectoryConfigProvider, ("directory", "org.apache.kafka.common.config.provider.DirectoryConfigProvider")),
    (EnvVarConfigProvider, ("env", "org.apache.kafka.common.config.provider.EnvVarConfigProvider")),
]


class ConfigProviders:
    """The configured providers of one worker, and placeholder resolution.

    :param providers: name → configured provider.
    """

    def __init__(self, providers: Mapping[str, ConfigProvider] | None = None) -> None:
        self._providers = dict(providers or {})

    @classmethod
    def from_config(
        cls,
        values: Mapping[str, str],
        find_class: Callable[[str], type],
        origin: Callable[[str], Origin | None] = lambda key: None,
    ) -> ConfigProviders:
        """Build the providers ``config.providers`` names in *values*.

        :param find_class: looks up a provider class by name or alias, raising
            :class:`PluginError` if there is none.
        :raises ConfigError: listing every provider that could not be set up.
        """
        names = [n.strip() for n in values.get("config.providers", "").split(",") if n.strip()]
        problems: list[str] = []
        providers: dict[str, ConfigProvider] = {}
        for name in names:
            class_key = f"config.providers.{name}.class"
            where = origin(class_key)
            if where is None or where.line is None:  # not written: point at the list naming it
                where = origin("config.providers") or where
            prefix = f"{where}: " if where else ""
            class_name = values.get(class_key, "").strip()
            if not class_name:
                problems.append(f"{prefix}{class_key} is required (config.providers names {name!r})")
                continue
            try:
                provider_class = find_class(class_name)
            except PluginError as exc:
                problems.append(f"{prefix}{class_key}={class_name!r}: {exc}")
                continue
            param_prefix = f"config.providers.{name}.param."
            params = {k[len(param_prefix):]: v for k, v in values.items() if k.startswith(param_prefix)}
            bad = [p for p in provider_class.config_def.validate(params) if p.is_error]
            for problem in bad:
                param_where = origin(param_prefix + (problem.key or "")) or where
                problems.append(f"{param_where}: {param_prefix}{problem}" if param_where else f"{param_prefix}{problem}")
            if bad:
                continue
            provider = provider_class()
            try:
                provider.configure(params)
            except ConfigError as exc:
                problems.extend(f"{prefix}config.providers.{name}: {p}" for p in exc.problems)
                continue
            providers[name] = provider
        if problems:
            raise ConfigError(problems)
        return cls(providers)

    @property
    def names(self) -> list[str]:
        return list(self._providers)

    has_placeholder = staticmethod(has_placeholder)

    def resolve(self, value: str) -> str:
        """*value* with every placeholder replaced by what its provider returns.

        :raises ConfigError: naming the placeholder (never a resolved value)
            when a provider is unknown, fails or has no such key.
        """
        if not isinstance(value, str) or "${" not in value:
            return value

        def replace(match: re.Match[str]) -> str:
            provider_name, path, key = match.group(1), match.group(2) or "", match.group(3)
            provider = self._providers.get(provider_name)
            if provider is None:
                known = ", ".join(self._providers) or "none"
                raise ConfigError(
                    [f"{match.group(0)}: no config provider named {provider_name!r} (config.providers: {known})"]
                )
            try:
                found = provider.get(path, [key])
            except ConfigError as exc:
                raise ConfigError([f"{match.group(0)}: {p}" for p in exc.problems]) from None
            except Exception as exc:  # a plugin's provider may raise anything
                raise ConfigError([f"{match.group(0)}: provider {provider_name!r} failed: {type(exc).__name__}"]) from None
            if key not in found:
                where = f" in {path}" if path else ""
                raise ConfigError([f"{match.group(0)}: provider {provider_name!r} has no value for {key!r}{where}"])
            secrets.register(found[key])
            return found[key]

        return PLACEHOLDER.sub(replace, value)

    def resolve_all(self, values: Mapping[str, str]) -> dict[str, str]:
        """Every value of *values* resolved; problems of all keys in one error."""
        resolved: dict[str, str] = {}
        problems: list[str] = []
        for key, value in values.items():
            try:
                resolved[key] = self.resolve(value)
            except ConfigError as exc:
                problems.extend(f"{key}: {p}" for p in exc.problems)
        if problems:
            raise ConfigError(problems)
        return resolved

    def close(self) -> None:
        for provider in self._providers.values():
            provider.close()
