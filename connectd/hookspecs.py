"""The hooks a connectd plugin implements.

A plugin is a module (or object) with functions marked ``@hookimpl``, found
through the ``connectd`` entry-point group::

    # pyproject.toml of a plugin package
    [project.entry-points.connectd]
    file = "connectd_file"

Every hook hands the plugin a ``register`` callback instead of asking for a
return value, so that connectd can reject a duplicate name with an error
that says which two packages collide. ``register`` takes the class and,
optionally, ``aliases=(...)``: short names and, where Kafka Connect has
one, the Java class name, so existing connector configs work unchanged::

    @hookimpl
    def register_converters(register):
        register(MyConverter, aliases=("MyConverter", "com.example.MyConverter"))

A class is always also found by its Python dotted path
(``my_package.MyConverter``). Built-in classes register through these same
hooks.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

__all__ = ["hookimpl", "hookspec"]

hookspec = pluggy.HookspecMarker("connectd")
hookimpl = pluggy.HookimplMarker("connectd")

#: The shape of the ``register`` callback every hook receives.
Register = Callable[..., None]


@hookspec
def register_connectors(register: Register) -> None:
    """Register source and sink connector classes.

    :param register: ``register(cls, aliases=())`` — *cls* subclasses
        :class:`connectd.SourceConnector` or :class:`connectd.SinkConnector`.
    """


@hookspec
def register_converters(register: Register) -> None:
    """Register converter classes (key, value and header converters).

    :param register: ``register(cls, aliases=())`` — *cls* has
        ``configure``, ``from_connect_data`` and ``to_connect_data``
        (header converters: ``from_connect_header``/``to_connect_header``).
    """


@hookspec
def register_transforms(register: Register) -> None:
    """Register single message transforms (SMTs).

    :param register: ``register(cls, aliases=())`` — *cls* has
        ``configure(dict)`` and ``apply(record)``.
    """


@hookspec
def register_predicates(register: Register) -> None:
    """Register predicates for conditional transforms.

    :param register: ``register(cls, aliases=())`` — *cls* has
        ``configure(dict)`` and ``test(record) -> bool``.
    """


@hookspec
def register_override_policies(register: Register) -> None:
    """Register client config override policies, named by the worker's
    ``connector.client.config.override.policy``.

    :param register: ``register(cls, aliases=())`` — *cls* subclasses
        :class:`connectd.ConnectorClientConfigOverridePolicy`.
    """


@hookspec
def register_config_providers(register: Register) -> None:
    """Register config providers for ``${name:path:key}`` placeholders.

    :param register: ``register(cls, aliases=())`` — *cls* subclasses
        :class:`connectd.ConfigProvider`.
    """


@hookspec
def register_capacity_providers(register: Register) -> None:
    """Register capacity providers, named by the worker's ``capacity.provider``: what starts and
    stops workers (or Spark executors) as the leader's capacity decisions ask (docs/capacity.md).

    :param register: ``register(cls, aliases=())`` — *cls* subclasses
        :class:`connectd.CapacityProvider`; give its :attr:`~connectd.CapacityProvider.name` as an alias.
    """
