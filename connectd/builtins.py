"""connectd's own classes, registered through the same hooks as any plugin."""

from __future__ import annotations

from connectd.capacity.processes import ProcessesProvider
from connectd.capacity.spark import SparkProvider
from connectd.capacity.systemd import SystemdProvider
from connectd.config.providers import BUILTIN_PROVIDERS
from connectd.data.converters import BUILTIN_CONVERTERS
from connectd.hookspecs import Register, hookimpl
from connectd.override_policy import BUILTIN_POLICIES
from connectd.transforms import BUILTIN_PREDICATES, BUILTIN_TRANSFORMS


@hookimpl
def register_config_providers(register: Register) -> None:
    for cls, aliases in BUILTIN_PROVIDERS:
        register(cls, aliases=aliases)


@hookimpl
def register_override_policies(register: Register) -> None:
    for cls, aliases in BUILTIN_POLICIES:
        register(cls, aliases=aliases)


@hookimpl
def register_converters(register: Register) -> None:
    for cls, aliases in BUILTIN_CONVERTERS:
        register(cls, aliases=aliases)


@hookimpl
def register_transforms(register: Register) -> None:
    for cls, aliases in BUILTIN_TRANSFORMS:
        register(cls, aliases=aliases)


@hookimpl
def register_predicates(register: Register) -> None:
    for cls, aliases in BUILTIN_PREDICATES:
        register(cls, aliases=aliases)


@hookimpl
def register_capacity_providers(register: Register) -> None:
    for cls in (ProcessesProvider, SparkProvider, SystemdProvider):
        register(cls, aliases=(cls.name,))
