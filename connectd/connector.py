"""The connector API plugin authors implement (connector level).

A connector is the job a user configures; it splits its work into task
configurations. Tasks (``SourceTask.poll()``, ``SinkTask.put()``) and the
Spark-level API arrive with the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigProblem

__all__ = ["Connector", "SinkConnector", "SourceConnector"]


class Connector:
    """Base of every connector.

    :attr config_def: the connector's own settings; connectd adds the common,
        source or sink keys (``name``, ``tasks.max``, ``topics``, …).
    """

    config_def: ClassVar[ConfigDef] = ConfigDef()

    def version(self) -> str:
        """The plugin's version; by default that of the package that holds the class."""
        top = type(self).__module__.split(".")[0]
        for dist in metadata.packages_distributions().get(top, []):
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:  # pragma: no cover - broken install
                continue
        return "unknown"

    def start(self, config: Mapping[str, str]) -> None:
        """Begin with the connector's resolved configuration."""

    def task_class(self) -> type:
        """The class each of this connector's tasks runs."""
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Split the work into at most *max_tasks* task configurations."""
        raise NotImplementedError

    def stop(self) -> None:
        """Release what :meth:`start` acquired."""

    def validate(self, config: Mapping[str, Any]) -> list[ConfigProblem]:
        """Problems with *config* beyond the declared keys; none by default."""
        return []


class SourceConnector(Connector):
    """A connector that reads from an outside system and writes to Kafka."""


class SinkConnector(Connector):
    """A connector that reads from Kafka and writes to an outside system."""
