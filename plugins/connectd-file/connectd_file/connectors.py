"""FileStreamSource and FileStreamSink connectors; their tasks are in :mod:`connectd_file.tasks`."""

from __future__ import annotations

from collections.abc import Mapping

from connectd import ConfigDef, ConfigKey, Importance, NonEmptyString, Range, SinkConnector, SourceConnector, Type


class FileStreamSourceConnector(SourceConnector):
    """Reads lines of a file into a topic, one record per line (value: the line)."""

    config_def = ConfigDef(
        [
            ConfigKey("file", Type.STRING, "The file to read lines from.", importance=Importance.HIGH,
                      validator=NonEmptyString()),
            ConfigKey("topic", Type.STRING, "The topic to write the lines to.", importance=Importance.HIGH,
                      validator=NonEmptyString()),
            ConfigKey("batch.size", Type.INT, "Most lines read in one poll.", default=2000,
                      importance=Importance.LOW, validator=Range.at_least(1)),
        ]
    )

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type:
        from connectd_file.tasks import FileStreamSourceTask

        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # One file has one reader: more tasks would read every line twice.
        return [dict(self._config)]


class FileStreamSinkConnector(SinkConnector):
    """Appends each record's value to a file as a line."""

    config_def = ConfigDef(
        [
            ConfigKey("file", Type.STRING, "The file to append lines to.", importance=Importance.HIGH,
                      validator=NonEmptyString()),
        ]
    )

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type:
        from connectd_file.tasks import FileStreamSinkTask

        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks)]
