"""Connector and task states, and where they are kept.

States are Kafka Connect's::

    UNASSIGNED ──start──► RUNNING ◄──resume── PAUSED
        ▲                   │  └──pause──────►┘
        │                   ├──stop──► STOPPED        (connector only: tasks shut down, config kept)
        │                   ├──error─► FAILED (trace) ──restart──► RESTARTING ──► RUNNING
        └──── rebalance / delete ─────┘

A :class:`StatusStore` holds the latest :class:`Status` of every connector
and task. Standalone mode keeps them in memory (:class:`MemoryStatusStore`);
distributed mode backs the same interface with the status topic, whose
records carry the same fields (``state``, ``trace``, ``worker_id``,
``generation``).

An :class:`ActiveTopicsStore` holds the topics each connector has used
(KIP-558, ``GET /connectors/{c}/topics``): in memory in standalone mode
(:class:`MemoryActiveTopicsStore`), the status topic's
``status-topic-<topic>:connector-<c>`` records in distributed mode.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["STATES", "ActiveTopicsStore", "MemoryActiveTopicsStore", "MemoryStatusStore", "Status", "StatusStore"]

UNASSIGNED = "UNASSIGNED"
RUNNING = "RUNNING"
PAUSED = "PAUSED"
STOPPED = "STOPPED"
FAILED = "FAILED"
RESTARTING = "RESTARTING"
STATES = (UNASSIGNED, RUNNING, PAUSED, STOPPED, FAILED, RESTARTING)


@dataclass(frozen=True)
class Status:
    """One connector's or task's state as last reported."""

    state: str
    worker_id: str
    trace: str | None = None
    generation: int = 0
    timestamp_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"unknown state {self.state!r}; expected one of {STATES}")

    def as_rest(self) -> dict[str, str]:
        """The shape of Kafka Connect's status endpoints."""
        shown = {"state": self.state, "worker_id": self.worker_id}
        if self.trace:
            shown["trace"] = self.trace
        return shown


class StatusStore:
    """Latest status per connector and per task."""

    def put_connector(self, connector: str, status: Status) -> None:
        raise NotImplementedError

    def put_task(self, connector: str, task: int, status: Status) -> None:
        raise NotImplementedError

    def connector(self, connector: str) -> Status | None:
        raise NotImplementedError

    def task(self, connector: str, task: int) -> Status | None:
        raise NotImplementedError

    def tasks(self, connector: str) -> dict[int, Status]:
        raise NotImplementedError

    def forget(self, connector: str) -> None:
        raise NotImplementedError

    def forget_task(self, connector: str, task: int) -> None:
        raise NotImplementedError


class MemoryStatusStore(StatusStore):
    """Statuses of a standalone worker, kept in memory (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connectors: dict[str, Status] = {}
        self._tasks: dict[tuple[str, int], Status] = {}

    def put_connector(self, connector: str, status: Status) -> None:
        with self._lock:
            self._connectors[connector] = status

    def put_task(self, connector: str, task: int, status: Status) -> None:
        with self._lock:
            self._tasks[(connector, task)] = status

    def connector(self, connector: str) -> Status | None:
        with self._lock:
            return self._connectors.get(connector)

    def task(self, connector: str, task: int) -> Status | None:
        with self._lock:
            return self._tasks.get((connector, task))

    def tasks(self, connector: str) -> dict[int, Status]:
        with self._lock:
            return {t: s for (c, t), s in self._tasks.items() if c == connector}

    def forget_task(self, connector: str, task: int) -> None:
        with self._lock:
            self._tasks.pop((connector, task), None)

    def forget(self, connector: str) -> None:
        with self._lock:
            self._connectors.pop(connector, None)
            for key in [k for k in self._tasks if k[0] == connector]:
                del self._tasks[key]


class ActiveTopicsStore:
    """The topics each connector's tasks have produced to or consumed from, until reset."""

    def add(self, connector: str, topics: Iterable[str]) -> None:
        """Record *topics* as used by *connector*; called often, so cheap when none is new."""
        raise NotImplementedError

    def topics(self, connector: str) -> set[str]:
        raise NotImplementedError

    def reset(self, connector: str) -> None:
        """Forget every topic of *connector* (``PUT /connectors/{c}/topics/reset``, or deletion)."""
        raise NotImplementedError


class MemoryActiveTopicsStore(ActiveTopicsStore):
    """Active topics of a standalone worker, kept in memory (thread-safe: sink tasks report from Spark's threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._topics: dict[str, set[str]] = {}

    def add(self, connector: str, topics: Iterable[str]) -> None:
        with self._lock:
            known = self._topics.setdefault(connector, set())
            known.update(topics)

    def topics(self, connector: str) -> set[str]:
        with self._lock:
            return set(self._topics.get(connector, ()))

    def reset(self, connector: str) -> None:
        with self._lock:
            self._topics.pop(connector, None)
