"""Which client settings a connector may override: Kafka Connect's ``ConnectorClientConfigOverridePolicy``.

The worker's ``connector.client.config.override.policy`` names a policy
class (by alias, dotted path or Kafka Connect's Java class name). Before a
connector is created, changed or validated, its ``producer.override.*``,
``consumer.override.*`` and ``admin.override.*`` settings go to the policy,
one request per client; every setting it refuses is a problem of the
connector's config (``config check``, REST 400), named by its full key.

The built-in policies are Kafka Connect's three; a plugin registers its
own through the ``register_override_policies`` hook::

    class TenantPolicy(ConnectorClientConfigOverridePolicy):
        def validate(self, request):
            return {key: None if request.connector_name.startswith("tenant-") else "only for tenant- connectors"
                    for key in request.client_props}
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "BUILTIN_POLICIES",
    "AllConnectorClientConfigOverridePolicy",
    "ConnectorClientConfigOverridePolicy",
    "ConnectorClientConfigRequest",
    "NoneConnectorClientConfigOverridePolicy",
    "PrincipalConnectorClientConfigOverridePolicy",
]

#: What Kafka Connect's Principal policy lets a connector override (its SASL identity).
PRINCIPAL_OVERRIDES = ("sasl.jaas.config", "sasl.mechanism", "security.protocol")

_JAVA_PACKAGE = "org.apache.kafka.connect.connector.policy."


@dataclass(frozen=True)
class ConnectorClientConfigRequest:
    """One connector's overrides of one client's settings.

    :param connector_name: the connector's ``name``.
    :param connector_type: ``source`` or ``sink``.
    :param connector_class: its ``connector.class`` as written.
    :param client_type: ``producer``, ``consumer`` or ``admin``.
    :param client_props: the overridden settings, without their ``<client>.override.`` prefix.
    """

    connector_name: str
    connector_type: str
    connector_class: str
    client_type: str
    client_props: Mapping[str, str]


class ConnectorClientConfigOverridePolicy(abc.ABC):
    """Decides which client overrides a connector may give (made once per check, no arguments)."""

    #: The name the worker's setting is shown with in messages.
    name: str = ""

    @abc.abstractmethod
    def validate(self, request: ConnectorClientConfigRequest) -> Mapping[str, str | None]:
        """Per key of ``request.client_props``: ``None`` if it is allowed, else why not (a phrase
        that follows the full key, e.g. ``"is not allowed: …"``). A key left out is allowed."""

    def _refuse(self, request: ConnectorClientConfigRequest, allowed: str,
                keep: tuple[str, ...] = ()) -> dict[str, str | None]:
        prefix = f"{request.client_type}.override."
        allows = allowed if not keep else "only " + ", ".join(prefix + key for key in keep)
        reason = (f"is not allowed: the worker's connector.client.config.override.policy is {self.name}, "
                  f"which allows {allows}")
        return {key: None if key in keep else reason for key in request.client_props}


class AllConnectorClientConfigOverridePolicy(ConnectorClientConfigOverridePolicy):
    """Every client setting may be overridden (Kafka Connect's default)."""

    name = "All"

    def validate(self, request: ConnectorClientConfigRequest) -> Mapping[str, str | None]:
        return dict.fromkeys(request.client_props)


class NoneConnectorClientConfigOverridePolicy(ConnectorClientConfigOverridePolicy):
    """No client setting may be overridden."""

    name = "None"

    def validate(self, request: ConnectorClientConfigRequest) -> Mapping[str, str | None]:
        return self._refuse(request, "no client override")


class PrincipalConnectorClientConfigOverridePolicy(ConnectorClientConfigOverridePolicy):
    """Only the client's SASL identity (``sasl.jaas.config``, ``sasl.mechanism``,
    ``security.protocol``) may be overridden."""

    name = "Principal"

    def validate(self, request: ConnectorClientConfigRequest) -> Mapping[str, str | None]:
        return self._refuse(request, "", PRINCIPAL_OVERRIDES)


#: (class, aliases) of the built-in policies: the short name first, then Kafka Connect's Java name.
BUILTIN_POLICIES = [
    (cls, (cls.name, _JAVA_PACKAGE + cls.__name__))
    for cls in (AllConnectorClientConfigOverridePolicy, NoneConnectorClientConfigOverridePolicy,
                PrincipalConnectorClientConfigOverridePolicy)
]
