"""Capacity providers: what acts on the leader's decisions.

The leader decides how many workers the cluster should have
(:mod:`connectd.capacity.decision`); a provider, named by the worker key
``capacity.provider`` and registered through the ``register_capacity_providers``
hook, makes it so. Where it acts is the provider's :attr:`~CapacityProvider.acts_in`:

- :data:`LEADER`: in the leader worker, on each decision (``systemd``: it starts
  and stops instances of ``connectd@.service``);
- :data:`SUPERVISOR`: in ``connectd cluster run``, which starts the workers of a
  host as its child processes and follows the decisions they report
  (``processes``, the only provider ``connectd cluster run`` runs);
- :data:`EACH_WORKER`: in every worker, for its own Spark (``spark``: its
  executors on a Spark standalone cluster).

Every worker checks its provider when it starts (:meth:`CapacityProvider.check`):
one the machine cannot use is refused then, with the reason, not at the first
decision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from connectd.capacity.decision import Decision
from connectd.errors import ConfigError, PluginError

__all__ = ["EACH_WORKER", "LEADER", "SUPERVISOR", "CapacityProvider", "ProviderUnusable", "open_provider"]

LEADER, SUPERVISOR, EACH_WORKER = "leader", "supervisor", "each_worker"


class ProviderUnusable(ConfigError):
    """This machine cannot use the capacity provider the worker names; the message says why."""

    def __init__(self, provider: str, reason: str) -> None:
        super().__init__([f"capacity.provider={provider}: {reason}"])


class CapacityProvider:
    """Base of a capacity provider. Subclasses set :attr:`name` and :attr:`acts_in` and override
    :meth:`check` and :meth:`apply`.

    :param worker: the worker's configuration (:class:`connectd.config.worker.WorkerConfig`).
    """

    #: the name ``capacity.provider`` gives (registered as an alias too)
    name: ClassVar[str] = ""
    #: :data:`LEADER`, :data:`SUPERVISOR` or :data:`EACH_WORKER`
    acts_in: ClassVar[str] = LEADER

    def __init__(self, worker: Any) -> None:
        self.worker = worker

    def check(self) -> None:
        """Raise :class:`ProviderUnusable` saying why when this machine cannot use the provider."""

    async def start(self, spark: Any, policy: Callable[[], Any]) -> None:
        """An :data:`EACH_WORKER` provider's start, once the worker's Spark is up: *spark* is its
        SparkSession, ``policy()`` the cluster's policy in force
        (:class:`~connectd.capacity.policy.CapacityPolicy`, ``None`` for none)."""

    async def apply(self, decision: Decision, workers: list[str], me: str) -> None:
        """Act on *decision*; *workers* are the group's members (worker ids) it was taken with, *me*
        the id of the worker calling. Called for every decision, changed or not: a provider
        converges, it does not count steps. What it raises is logged (``capacity_provider_failed``)
        and the next decision calls it again."""

    async def close(self) -> None:
        """The worker stops."""


def open_provider(worker: Any, registry: Any) -> CapacityProvider | None:
    """The provider ``capacity.provider`` names, checked; ``None`` when it names none.

    :raises ConfigError: no such provider, or this machine cannot use it.
    """
    name = str(worker.get("capacity.provider") or "").strip()
    if not name:
        return None
    try:
        cls = registry.find_class("capacity_provider", name)
    except PluginError as exc:
        raise ConfigError([f"capacity.provider={name}: {exc}"]) from None
    provider = cls(worker)
    provider.check()
    return provider
