"""What the members of a Connect group say to each other.

Kafka Connect's group protocol (protocol type ``connect``): each member's
metadata names its REST URL, the config-topic offset it has read up to and
what it runs now; the leader answers each member with an assignment. The
sub-protocols are ``sessioned`` (version 2, KIP-507) and ``compatible``
(version 1, KIP-415); ``connect.protocol=eager`` is not supported.

Work is named as in Kafka Connect: a connector (its ``Connector`` instance
runs on one worker) or a :class:`ConnectorTaskId`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "COMPATIBLE",
    "CONFIG_MISMATCH",
    "NO_ERROR",
    "SESSIONED",
    "ConnectAssignment",
    "ConnectorTaskId",
    "WorkerLoad",
    "WorkerMetadata",
]

PROTOCOL_TYPE = "connect"
COMPATIBLE = "compatible"  # version 1: incremental cooperative rebalancing (KIP-415)
SESSIONED = "sessioned"  # version 2: and signed internal requests (KIP-507)
VERSIONS = {COMPATIBLE: 1, SESSIONED: 2}

NO_ERROR = 0
CONFIG_MISMATCH = 1  # the leader could not read the config topic as far as a member had


class ConnectorTaskId(NamedTuple):
    """One task of a connector; orders by connector, then task number."""

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass(frozen=True)
class WorkerLoad:
    """What one worker runs: connectors and tasks (sorted tuples, so equal loads compare equal)."""

    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()

    @classmethod
    def of(cls, connectors=(), tasks=()) -> WorkerLoad:
        return cls(tuple(sorted(set(connectors))), tuple(sorted(set(tasks))))

    def __len__(self) -> int:
        return len(self.connectors) + len(self.tasks)


@dataclass(frozen=True)
class WorkerMetadata:
    """A member's JoinGroup metadata: where its REST API is, how far it has read
    the config topic, and what it ran in the last generation (``None`` if nothing yet)."""

    url: str
    config_offset: int
    assignment: WorkerLoad | None = None


@dataclass(frozen=True)
class ConnectAssignment:
    """The leader's answer to one member in SyncGroup.

    ``connectors``/``tasks`` are what it is *newly* given to start in this
    round, ``revoked`` what it must stop before rejoining; ``delay_ms`` > 0
    asks it to rejoin after that long (lost work is held for its worker to
    come back). ``error`` is :data:`CONFIG_MISMATCH` when the member must
    read the config topic up to ``config_offset`` and rejoin.
    """

    error: int
    leader: str
    leader_url: str
    config_offset: int
    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()
    revoked: WorkerLoad = field(default_factory=WorkerLoad)
    delay_ms: int = 0

    @property
    def failed(self) -> bool:
        return self.error != NO_ERROR
