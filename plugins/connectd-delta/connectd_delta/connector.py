"""The Delta Lake sink connector."""

from __future__ import annotations

from collections.abc import Mapping

from connectd import SinkConnector

from connectd_delta.config import CONFIG_DEF

__all__ = ["DeltaSinkConnector"]


class DeltaSinkConnector(SinkConnector):
    """Appends the records of its topics to Delta tables, each record exactly once."""

    config_def = CONFIG_DEF

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type:
        from connectd_delta.task import DeltaSinkTask

        return DeltaSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Each task commits the offsets of its own partitions: tasks never overwrite each other's.
        return [dict(self._config) for _ in range(max_tasks)]
