"""The CDC source connector: Debezium's MySQL connector, for MariaDB and MySQL."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectd import ConfigProblem, ExactlyOnceSupport, SourceConnector

from connectd_mysql_cdc.config import CONFIG_DEF, problems

__all__ = ["MySqlConnector"]


class MySqlConnector(SourceConnector):
    """Every change of the captured tables, in Debezium's change-event format, from a snapshot and the binlog."""

    config_def = CONFIG_DEF

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type:
        from connectd_mysql_cdc.task import MySqlSourceTask

        return MySqlSourceTask

    def validate(self, config: Mapping[str, Any]) -> list[ConfigProblem]:
        return problems(config)

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """Each event's offset is its place in the binlog (the row within its event too), or in the
        snapshot: a task started again reads on from the last one committed."""
        return ExactlyOnceSupport.SUPPORTED

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # One binlog, read in order by one reader, as Debezium's single task.
        return [dict(self._config)]
