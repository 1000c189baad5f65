"""The datagen connector; its task is in :mod:`connectd_datagen.task`, its schemas in :mod:`connectd_datagen.quickstarts`."""

from __future__ import annotations

from collections.abc import Mapping

from connectd import CaseInsensitiveValidString, ConfigDef, ConfigKey, Importance, NonEmptyString, Range, SourceConnector, Type

from connectd_datagen import quickstarts

QUICKSTARTS = tuple(quickstarts.QUICKSTARTS)


class DatagenConnector(SourceConnector):
    """Generates records of a built-in schema (users, orders, pageviews)."""

    config_def = ConfigDef(
        [
            ConfigKey("kafka.topic", Type.STRING, "The topic to write the records to.", importance=Importance.HIGH,
                      validator=NonEmptyString()),
            ConfigKey("quickstart", Type.STRING, "The built-in schema: users, orders or pageviews.",
                      default="users", importance=Importance.HIGH, validator=CaseInsensitiveValidString(*QUICKSTARTS)),
            ConfigKey("max.interval", Type.LONG, "Longest wait between two records of a task, in ms; 0 never waits.",
                      default=500, importance=Importance.MEDIUM, validator=Range.at_least(0)),
            ConfigKey("iterations", Type.LONG, "Records to generate in all; -1 without end.", default=-1,
                      importance=Importance.MEDIUM, validator=Range.at_least(-1)),
            ConfigKey("random.seed", Type.LONG, "Seed of the generator, for repeatable data; unset is random.",
                      default=None, importance=Importance.LOW),
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

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Every task generates; ``iterations`` is shared out so the total stays as asked."""
        total = int(self._config.get("iterations", -1))
        configs = []
        for task in range(max_tasks):
            config = dict(self._config, **{"task.id": str(task)})
            if total >= 0:
                config["iterations"] = str(total // max_tasks + (1 if task < total % max_tasks else 0))
            configs.append(config)
        return configs
