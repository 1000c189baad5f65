"""FileStreamSource and FileStreamSink connectors; their tasks are in :mod:`connectd_file.tasks`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from connectd import (
    ConfigDef,
    ConfigKey,
    ConfigProblem,
    ConnectException,
    ExactlyOnceSupport,
    Importance,
    NonEmptyString,
    Range,
    SinkConnector,
    SourceConnector,
    TopicPartition,
    Type,
)


class FileStreamSourceConnector(SourceConnector):
    """Reads lines of a file (or standard input) into a topic, one record per line (value: the line)."""

    config_def = ConfigDef(
        [
            ConfigKey("file", Type.STRING, "Source filename. If not specified, the standard input will be used.",
                      default=None, importance=Importance.HIGH),
            ConfigKey("topic", Type.STRING, "The topic to publish data to.", importance=Importance.HIGH,
                      validator=NonEmptyString()),
            ConfigKey("batch.size", Type.INT,
                      "The maximum number of records the source task can read from the file each time it is polled.",
                      default=2000, importance=Importance.LOW, validator=Range.at_least(1)),
        ]
    )

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type:
        from connectd_file.tasks import FileStreamSourceTask

        return FileStreamSourceTask

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """As Kafka's: a file (only appended to) has a position for every line; standard input has none."""
        return ExactlyOnceSupport.SUPPORTED if (config.get("file") or "").strip() else ExactlyOnceSupport.UNSUPPORTED

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # One file has one reader: more tasks would read every line twice.
        return [dict(self._config)]

    def validate(self, config: Mapping[str, Any]) -> list[ConfigProblem]:
        if config.get("file"):
            return []
        return [ConfigProblem(None, "file", "unset: the task reads standard input, as Kafka's does, but in connectd "
                              "that is the input of Spark's Python process that polls the task, not the worker's "
                              "terminal; to feed lines from a shell, set file to a named pipe (mkfifo)",
                              severity="warning")]

    def alter_offsets(self, config: Mapping[str, str], offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
        """Kafka's checks (KIP-875): a ``position`` that is a non-negative integer under a ``filename`` partition."""
        if not config.get("file"):
            raise ConnectException("Offsets cannot be modified if the 'file' configuration is unspecified. "
                                   "This is because stdin is used for input and offsets are not tracked.")
        # Partitions of earlier configurations (other files) may be altered too, as in Kafka.
        for partition_text, offset in offsets.items():
            if offset is None:
                continue  # a tombstone clears anything, garbage included
            if "position" not in offset:
                raise ConnectException("Offset objects should either be null or contain the key 'position'")
            position = offset["position"]
            if not isinstance(position, int) or isinstance(position, bool):
                raise ConnectException("The value for the 'position' key in the offset is expected to be a Long value")
            if position < 0:
                raise ConnectException("The value for the 'position' key in the offset should be a non-negative value")
            partition = json.loads(partition_text) if isinstance(partition_text, str) else partition_text
            if partition is None:
                raise ConnectException("Partition objects cannot be null")
            if not isinstance(partition, dict) or "filename" not in partition:
                raise ConnectException("Partition objects should contain the key 'filename'")
        # The task checks on start whether the position fits the file.
        return True


class FileStreamSinkConnector(SinkConnector):
    """Appends each record's value to a file (or standard output) as a line."""

    config_def = ConfigDef(
        [
            ConfigKey("file", Type.STRING, "Destination filename. If not specified, the standard output will be used.",
                      default=None, importance=Importance.HIGH),
        ]
    )

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type:
        from connectd_file.tasks import FileStreamSinkTask

        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks)]

    def alter_offsets(self, config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]) -> bool:
        # Nothing is kept outside Kafka and no offset needs checking, as in Kafka's connector.
        return True
