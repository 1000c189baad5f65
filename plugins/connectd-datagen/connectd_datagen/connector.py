"""The datagen connector; its task is in :mod:`connectd_datagen.task`, its schemas in :mod:`connectd_datagen.avro`
and :mod:`connectd_datagen.quickstarts`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connectd import (
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigProblem,
    ExactlyOnceSupport,
    Importance,
    NonEmptyString,
    Range,
    SourceConnector,
    Type,
    Validator,
)

from connectd_datagen import quickstarts
from connectd_datagen.avro import AvroSchema, parse_schema

SCHEMA_SOURCES = ("schema.string", "schema.filename", "quickstart")


class _Quickstart(Validator):
    def __call__(self, value: Any) -> None:
        name = str(value).lower()
        if not name or name in quickstarts.QUICKSTARTS:
            return
        if name in quickstarts.NOT_SHIPPED:
            raise ValueError(f"is a kafka-connect-datagen quickstart connectd does not ship (it has "
                             f"{', '.join(quickstarts.QUICKSTARTS)}): set schema.filename to its .avro file instead")
        raise ValueError(f"quickstart must be one out of {','.join(quickstarts.QUICKSTARTS)}")

    def describe(self) -> str:
        return ", ".join(quickstarts.QUICKSTARTS)


class _SchemaString(Validator):
    def __call__(self, value: Any) -> None:
        if value:
            _parsed(str(value))

    def describe(self) -> str:
        return "Avro schema JSON"


class _SchemaFile(Validator):
    def __call__(self, value: Any) -> None:
        if value:
            _read_schema_file(str(value))

    def describe(self) -> str:
        return "file holding an Avro schema"


def _parsed(text: str) -> AvroSchema:
    try:
        return parse_schema(text)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def _read_schema_file(path: str) -> AvroSchema:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        raise ValueError(f"Unable to find the schema file {path}") from None
    return _parsed(text)


def schema_of(settings: Mapping[str, Any]) -> tuple[AvroSchema, str]:
    """The Avro schema and key field that parsed *settings* ask for, with Confluent's precedence:
    ``quickstart``, then ``schema.string``, then ``schema.filename``.

    :raises ConfigError: when none is set or the schema is unusable.
    """
    key_field = settings.get("schema.keyfield") or ""
    try:
        if settings.get("quickstart"):
            quickstart = quickstarts.QUICKSTARTS[settings["quickstart"].lower()]
            return parse_schema(quickstart.schema), key_field or quickstart.key_field
        if settings.get("schema.string"):
            return _parsed(settings["schema.string"]), key_field
        if settings.get("schema.filename"):
            return _read_schema_file(settings["schema.filename"]), key_field
    except (ValueError, KeyError) as exc:
        raise ConfigError(str(exc)) from exc
    raise ConfigError(f"Must set exactly one of {', '.join(SCHEMA_SOURCES)}")


class DatagenConnector(SourceConnector):
    """Generates records of an Avro schema annotated for random data: a built-in quickstart or your own."""

    config_def = ConfigDef(
        [
            ConfigKey("kafka.topic", Type.STRING, "Topic to write to.", importance=Importance.HIGH,
                      validator=NonEmptyString()),
            ConfigKey("max.interval", Type.LONG,
                      "Max interval between messages (ms): each record waits a random 0…max.interval ms; "
                      "0 or less never waits.", default=500, importance=Importance.HIGH),
            ConfigKey("iterations", Type.INT, "Number of messages to send from each task, or less than 1 for unlimited.",
                      default=-1, importance=Importance.HIGH),
            ConfigKey("schema.string", Type.STRING, "The literal JSON-encoded Avro schema to use.", default="",
                      importance=Importance.HIGH, validator=_SchemaString()),
            ConfigKey("schema.filename", Type.STRING, "Filename of schema to use.", default="",
                      importance=Importance.HIGH, validator=_SchemaFile()),
            ConfigKey("schema.keyfield", Type.STRING,
                      "Name of field to use as the message key (a quickstart's own key field when unset).",
                      default="", importance=Importance.HIGH),
            ConfigKey("quickstart", Type.STRING, "Name of quickstart to use: users, pageviews or orders.", default="",
                      importance=Importance.HIGH, validator=_Quickstart()),
            ConfigKey("random.seed", Type.LONG,
                      "Numeric seed for generating random data. Two connectors started with the same seed will "
                      "deterministically produce the same data. Each task will generate different data than the "
                      "other tasks in the same connector.", default=None, importance=Importance.LOW),
            ConfigKey("batch.size", Type.INT,
                      "connectd extension: most records one poll returns (records already due, or a full batch "
                      "when max.interval is 0).",
                      default=1000, importance=Importance.LOW, validator=Range.at_least(1), extension=True),
        ]
    )

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type:
        from connectd_datagen.task import DatagenTask

        return DatagenTask

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """Each record's offset is its task's iteration count: a task started again goes on after the
        last one committed."""
        return ExactlyOnceSupport.SUPPORTED

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Every task generates, each ``iterations`` records of its own (as Confluent's), with its ``task.id``."""
        return [dict(self._config, **{"task.id": str(task)}) for task in range(max_tasks)]

    def validate(self, config: Mapping[str, Any]) -> list[ConfigProblem]:
        """Exactly one schema source, and a ``schema.keyfield`` that is a field of its schema."""
        chosen = [key for key in SCHEMA_SOURCES if str(config.get(key) or "")]
        message = f"Must set exactly one of {', '.join(SCHEMA_SOURCES)}"
        if len(chosen) != 1:
            return [ConfigProblem(None, key, message) for key in (chosen or SCHEMA_SOURCES)]
        try:
            settings = self.config_def.parse(config)
            schema, key_field = schema_of(settings)
        except (ConfigError, ValueError):
            return []  # the declared keys' own problems say what is wrong
        if key_field and schema.field(key_field) is None:
            return [ConfigProblem(None, "schema.keyfield",
                                  "The schema does not contain the field provided in 'schema.keyfield'", key_field)]
        return []
