"""What a herder holds for each connector and task it runs on this worker.

A :class:`ConnectorRun` is one connector's config, class, instance (when its
``Connector`` runs here) and target state; its :class:`TaskRun` objects are
the tasks that run here, each in the state :mod:`connectd.herder.supervision`
keeps for it.
"""

from __future__ import annotations

import asyncio
import importlib
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectd.config.connector import ConnectorConfig
from connectd.connector import SinkConnector, TopicPartition
from connectd.runtime.assembly import TaskHandle
from connectd.status import RESTARTING, Status

__all__ = ["ConnectorRun", "TaskRun", "restarting", "trace_of"]


@dataclass(eq=False)
class TaskRun:
    """One task on this worker. Only the supervisor changes :attr:`state` and :attr:`handle`."""

    id: int
    config: dict[str, str]
    handle: TaskHandle | None = None
    #: The supervisor's state of the task (:mod:`connectd.herder.supervision`).
    state: str = "assigned"
    #: Automatic restarts (``errors.restart.enable``) made since the task last started on request.
    restarts: int = 0
    #: When the next automatic restart is due (loop time), ``None``: none is.
    restart_at: float | None = None
    #: When Spark's own failures (hiccups, stalls) restarted its query (loop times, recent ones).
    hiccups: list[float] = field(default_factory=list)
    #: Wall-clock time (s) its current query started: the liveness check's baseline before any progress.
    started_wall: float | None = None
    #: Loop time of the liveness check's last look at its query's progress.
    progress_checked: float = 0.0
    #: Serialises the supervisor's operations on this task.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def query(self) -> Any:
        return None if self.handle is None else self.handle.query


@dataclass(eq=False)
class ConnectorRun:
    """One connector as this worker knows it: its config (as written), class, instance and tasks here."""

    name: str
    config: dict[str, str]
    cls: type
    instance: Any = None
    tasks: list[TaskRun] = field(default_factory=list)
    #: Every partition of a sink connector's topics when its tasks last started (for rediscovery).
    partitions: frozenset[TopicPartition] = frozenset()
    target: str = "STARTED"  # Kafka Connect's target state: STARTED, PAUSED or STOPPED
    #: :meth:`settings`' answer and the config it was parsed from.
    _settings: tuple[dict[str, str], ConnectorConfig] | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        return "sink" if issubclass(self.cls, SinkConnector) else "source"

    def settings(self, resolve: Callable[[str], str]) -> ConnectorConfig:
        """The config's declared keys, parsed once per config (placeholders resolved with *resolve*)."""
        if self._settings is None or self._settings[0] is not self.config:
            resolved = {key: resolve(value) for key, value in self.config.items()}
            self._settings = (self.config, ConnectorConfig.parse(resolved, self.kind))
        return self._settings[1]

    def task_class(self, task_config: Mapping[str, str]) -> type:
        """The class of a task: ``task.class`` of its config (as Kafka Connect writes it), else the
        connector's answer — from the running instance, or a new one where this worker runs only tasks."""
        name = task_config.get("task.class")
        if name:
            try:
                module, _, attribute = name.rpartition(".")
                return getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError, ValueError):
                pass  # a Java class name written by Kafka Connect: the connector knows its Python class
        return (self.instance or self.cls()).task_class()


def restarting(status: Status) -> Status:
    """*status* as a restart answers it: RESTARTING, the rest kept."""
    return Status(RESTARTING, status.worker_id, status.trace, status.generation)


def trace_of(exc: BaseException) -> str:
    """The trace of *exc* as a status carries it."""
    return "".join(traceback.format_exception(exc))
