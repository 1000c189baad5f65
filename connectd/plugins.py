"""Loading plugins and finding their classes.

Plugins are found once per process through the ``connectd`` entry-point
group. Two environment variables narrow what is loaded, by entry-point name
or distribution name, comma-separated:

- ``CONNECTD_LOAD_PLUGINS``: load only these (set but empty: load none);
- ``CONNECTD_DISABLE_PLUGINS``: load everything but these.

Built-in classes register through the same hooks, always, whatever the
variables say. After loading, ``check_pending()`` makes a misspelled hook
name fail at start-up instead of being silently ignored.

Every registered class lands in a :class:`Registry`, one namespace per
group (connectors, converters, transforms, predicates, config providers,
client config override policies),
where it is found by dotted path, short alias, or Kafka Connect's Java class
name. A name registered twice in a group is a :class:`PluginError` naming
both packages.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata

import pluggy

from connectd import __version__, builtins, hookspecs
from connectd.connector import SinkConnector, SourceConnector
from connectd.errors import PluginError

__all__ = ["GROUPS", "PluginInfo", "Registry", "get_plugin_manager", "get_registry", "load_plugins"]

ENTRY_POINT_GROUP = "connectd"
BUILTIN_PACKAGE = "connectd"

#: group → the hook that fills it.
GROUPS: dict[str, str] = {
    "connector": "register_connectors",
    "converter": "register_converters",
    "transform": "register_transforms",
    "predicate": "register_predicates",
    "config_provider": "register_config_providers",
    "override_policy": "register_override_policies",
    "capacity_provider": "register_capacity_providers",
}


@dataclass(frozen=True)
class PluginInfo:
    """One registered class."""

    cls: type
    group: str
    aliases: tuple[str, ...]
    package: str
    version: str

    @property
    def class_name(self) -> str:
        """The Python dotted path, always a valid way to name the class."""
        return f"{self.cls.__module__}.{self.cls.__qualname__}"

    @property
    def name(self) -> str:
        """The short name shown in listings."""
        return self.cls.__name__

    @property
    def kind(self) -> str:
        """Kafka Connect's plugin type: ``source``, ``sink``, ``converter``, …"""
        if self.group == "connector":
            if issubclass(self.cls, SourceConnector):
                return "source"
            if issubclass(self.cls, SinkConnector):
                return "sink"
            return "connector"
        if self.group == "converter" and not hasattr(self.cls, "to_connect_data"):
            return "header_converter"
        return {"transform": "transformation"}.get(self.group, self.group)

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "class": self.class_name,
            "kind": self.kind,
            "version": self.version,
            "package": self.package,
            "aliases": list(self.aliases),
        }


@dataclass
class Registry:
    """The registered classes, one namespace per group."""

    _by_group: dict[str, dict[str, PluginInfo]] = field(default_factory=lambda: {g: {} for g in GROUPS})
    _infos: list[PluginInfo] = field(default_factory=list)

    def add(self, info: PluginInfo) -> None:
        """Add *info* under its dotted path and aliases.

        :raises PluginError: if any of its names is taken in its group.
        """
        names = self._by_group[info.group]
        wanted = [info.class_name, *info.aliases]
        for name in wanted:
            other = names.get(name)
            if other is not None:
                same = other.cls is info.cls
                raise PluginError(
                    f"{_GROUP_WORDS[info.group]} name {name!r} is registered twice: "
                    f"by {other.package} ({other.class_name}) and by {info.package} ({info.class_name})"
                    + (" — the same class registered twice" if same else "")
                )
        if len(set(wanted)) != len(wanted):
            raise PluginError(f"{info.package} registers {info.class_name} with a repeated alias: {wanted}")
        for name in wanted:
            names[name] = info
        self._infos.append(info)

    def find(self, group: str, name: str) -> PluginInfo:
        """The class registered as *name* in *group*.

        :raises PluginError: if there is none, suggesting close names.
        """
        names = self._by_group[group]
        info = names.get(name.strip())
        if info is None:
            close = difflib.get_close_matches(name, list(names), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise PluginError(
                f"no {_GROUP_WORDS[group]} named {name!r} is installed{hint} "
                f"(`connectd plugins` lists them)"
            )
        return info

    def find_class(self, group: str, name: str) -> type:
        return self.find(group, name).cls

    def has(self, group: str, name: str) -> bool:
        return name.strip() in self._by_group[group]

    def __iter__(self) -> Iterator[PluginInfo]:
        return iter(self._infos)

    def in_group(self, group: str) -> list[PluginInfo]:
        return [info for info in self._infos if info.group == group]


_GROUP_WORDS = {
    "connector": "connector",
    "converter": "converter",
    "transform": "transform",
    "predicate": "predicate",
    "config_provider": "config provider",
    "override_policy": "client config override policy",
    "capacity_provider": "capacity provider",
}


def _wanted(names: set[str], env: dict[str, str]) -> bool:
    """Whether a plugin known by any of *names* (entry point, package) is to be loaded."""
    allow = env.get("CONNECTD_LOAD_PLUGINS")
    deny = env.get("CONNECTD_DISABLE_PLUGINS")
    allowed = None if allow is None else {n.strip() for n in allow.split(",") if n.strip()}
    denied = {n.strip() for n in (deny or "").split(",") if n.strip()}
    return (allowed is None or bool(names & allowed)) and not names & denied


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def build_plugin_manager(env: dict[str, str] | None = None) -> tuple[pluggy.PluginManager, dict[str, tuple[str, str]]]:
    """A plugin manager with the built-ins and the allowed entry-point plugins.

    Returns the manager and, per plugin name, its (distribution, version).

    :raises PluginError: if a plugin fails to import or implements an unknown hook.
    """
    env = dict(os.environ if env is None else env)
    pm = pluggy.PluginManager("connectd")
    pm.add_hookspecs(hookspecs)
    packages: dict[str, tuple[str, str]] = {}
    pm.register(builtins, name="connectd.builtins")
    packages["connectd.builtins"] = (BUILTIN_PACKAGE, __version__)
    for ep in _entry_points():
        dist = ep.dist.name if ep.dist is not None else "?"
        if not _wanted({ep.name, dist}, env):
            continue
        if pm.has_plugin(ep.name):
            raise PluginError(f"two plugins are named {ep.name!r} in the entry-point group {ENTRY_POINT_GROUP!r}")
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginError(f"plugin {ep.name!r} ({ep.value}) from {dist} failed to load: {exc}") from exc
        pm.register(plugin, name=ep.name)
        packages[ep.name] = (dist, ep.dist.version if ep.dist is not None else "unknown")
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {exc.plugin!r} implements a hook connectd does not have: {exc}") from exc
    return pm, packages


def fill_registry(pm: pluggy.PluginManager, packages: dict[str, tuple[str, str]]) -> Registry:
    """Call every registration hook of every plugin and collect the classes."""
    registry = Registry()
    for group, hook_name in GROUPS.items():
        hook = getattr(pm.hook, hook_name)
        # One plugin at a time, so each class is credited to its own package.
        for impl in reversed(hook.get_hookimpls()):
            package, version = packages.get(impl.plugin_name, (impl.plugin_name, "unknown"))
            register = _register_callback(registry, group, package, version)
            kwargs = {"register": register} if "register" in impl.argnames else {}
            try:
                impl.function(**kwargs)
            except PluginError:
                raise
            except Exception as exc:
                raise PluginError(f"{package}: {hook_name} failed: {type(exc).__name__}: {exc}") from exc
    return registry


def _register_callback(registry: Registry, group: str, package: str, version: str) -> Callable[..., None]:
    def register(cls: type, aliases: tuple[str, ...] | list[str] = ()) -> None:
        if not isinstance(cls, type):
            raise PluginError(f"{package}: register() takes a class, got {cls!r}")
        if isinstance(aliases, str):
            aliases = (aliases,)
        registry.add(PluginInfo(cls, group, tuple(aliases), package, version))

    return register


_lock = threading.Lock()
_state: tuple[pluggy.PluginManager, Registry] | None = None


def load_plugins() -> tuple[pluggy.PluginManager, Registry]:
    """Load plugins once per process and return the manager and registry."""
    global _state
    with _lock:
        if _state is None:
            pm, packages = build_plugin_manager()
            _state = (pm, fill_registry(pm, packages))
        return _state


def get_plugin_manager() -> pluggy.PluginManager:
    return load_plugins()[0]


def get_registry() -> Registry:
    return load_plugins()[1]


def reset_plugins() -> None:
    """Forget the loaded plugins (tests use it after changing the environment)."""
    global _state
    with _lock:
        _state = None
