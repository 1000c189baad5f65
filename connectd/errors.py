"""The one tree of errors connectd raises.

Only :mod:`connectd.cli` turns these into exit codes: :class:`ConfigError`
becomes 78 (``EX_CONFIG``, so systemd's ``RestartPreventExitStatus=78`` stops
a restart loop on a bad file), anything else 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connectd.config.definitions import ConfigProblem

__all__ = [
    "BadRequestError",
    "ConfigError",
    "ConnectException",
    "ConnectdError",
    "ConnectorError",
    "KafkaUnavailableError",
    "NotFoundError",
    "NotLeaderError",
    "NotYetAvailableError",
    "PluginError",
    "RebalanceInProgressError",
    "RetriableException",
]


class ConnectdError(Exception):
    """Base of every error connectd raises on purpose."""


class ConfigError(ConnectdError):
    """A configuration is wrong; carries every problem found, not only the first.

    :param problems: the problems, each printed on a line of its own.
    """

    def __init__(self, problems: Iterable[ConfigProblem | str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class PluginError(ConnectdError):
    """A plugin could not be loaded, registered or found."""


class ConnectorError(ConnectdError):
    """A connector or task failed.

    :param retriable: whether trying the same operation again may succeed.
    """

    def __init__(self, message: str, *, retriable: bool = False) -> None:
        super().__init__(message)
        self.retriable = retriable


class ConnectException(ConnectorError):
    """Kafka Connect's name for a connector's or task's failure, for plugins ported from Java."""


class RetriableException(ConnectException):
    """Kafka Connect's name for a failure that trying again may cure: a sink task's ``put()``
    raising it has the same records put again (after ``context.timeout()``, else a backoff),
    for as long as it takes, as in Kafka Connect."""

    def __init__(self, message: str = "", *, retriable: bool = True) -> None:
        super().__init__(message, retriable=retriable)


class NotFoundError(ConnectorError):
    """No connector or task by that name (REST answers 404)."""


class BadRequestError(ConnectorError):
    """A request the herder refuses as asked: malformed arguments, or the connector's
    state forbids it, as altering offsets of a connector that is not STOPPED (REST answers 400)."""


class NotLeaderError(ConnectdError):
    """A write only the cluster's leader may make was asked of a follower; the REST API forwards it.

    :param leader_url: the leader's REST URL, ``None`` while no leader is known.
    """

    def __init__(self, message: str, leader_url: str | None) -> None:
        super().__init__(message)
        self.leader_url = leader_url


class RebalanceInProgressError(ConnectorError):
    """The cluster is rebalancing and did not settle within the bound a write waits (REST answers 409)."""


class KafkaUnavailableError(ConnectdError):
    """The Kafka cluster did not answer a request within its bound (REST answers 500 with the reason)."""


class NotYetAvailableError(ConnectdError):
    """A command exists in the CLI but the capability behind it has not landed."""
