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
    "DataError",
    "KafkaUnavailableError",
    "NotFoundError",
    "NotLeaderError",
    "NotYetAvailableError",
    "PluginError",
    "RebalanceInProgressError",
    "RetriableException",
    "SchemaProjectorException",
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
    """The cluster is rebalancing and did not settle within the bound a write waits, or the work asked
    for is not assigned yet (REST answers 409, as Kafka Connect does; any other ConnectorError is 500)."""


class KafkaUnavailableError(ConnectdError):
    """The Kafka cluster did not answer a request within its bound (REST answers 500 with the reason)."""


class NotYetAvailableError(ConnectdError):
    """A command exists in the CLI but the capability behind it has not landed."""


class DataError(ConnectdError):
    """Data is invalid for its schema, or bytes cannot be converted (Kafka's ``DataException``).

    As the error travels out of nested structs, arrays and maps, each level
    adds where it was (:meth:`at`), so the message names the exact place::

        address.lines[2]: expected str for schema type string, got int

    :param message: what is wrong.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self._path: list[str] = []

    def at(self, segment: str | int) -> DataError:
        """Prefix the location with a field name (``str``) or list index (``int``); returns ``self``."""
        self._path.insert(0, f"[{segment}]" if isinstance(segment, int) else segment)
        return self

    @property
    def path(self) -> str:
        """Where the bad value is, e.g. ``address.lines[2]``; empty at the top level."""
        out = ""
        for segment in self._path:
            out += segment if not out or segment.startswith("[") else "." + segment
        return out

    def __str__(self) -> str:
        path = self.path
        return f"{path}: {self.message}" if path else self.message

    def __reduce__(self):  # keep the class and path when pickled between Spark processes
        return (_rebuild, (self.message, list(self._path), type(self)))


class SchemaProjectorException(DataError):
    """A value cannot be projected from its schema to another (Kafka's ``SchemaProjectorException``).

    Raised by :func:`connectd.data.schema_projector.project` for incompatible schemas and for
    required target fields the source lacks; catch :class:`DataError` to catch it too.
    """


def _rebuild(message: str, path: list[str], cls: type[DataError] = DataError) -> DataError:
    error = cls(message)
    error._path = path
    return error
