"""The JDBC sink connector: Confluent's ``JdbcSinkConnector``, configured the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectd import ConfigError, ConfigProblem, SinkConnector

from connectd_jdbc.config import CONFIG_DEF, problems

__all__ = ["JdbcSinkConnector"]


class JdbcSinkConnector(SinkConnector):
    """Writes records to tables of PostgreSQL or MariaDB/MySQL: inserts, upserts, updates and deletes."""

    config_def = CONFIG_DEF

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type:
        from connectd_jdbc.task import JdbcSinkTask

        return JdbcSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Every task writes whichever partitions it is given: the work splits by partition.
        return [dict(self._config) for _ in range(max_tasks)]

    def validate(self, config: Mapping[str, Any]) -> list[ConfigProblem]:
        try:
            return problems(config)
        except (ConfigError, ValueError):
            return []  # a value that does not parse (or a placeholder not resolved here) is reported per key
