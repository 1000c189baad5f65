"""``InsertHeader``: add a header with a literal value to every record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Importance, Type
from connectd.data import parse_string
from connectd.transforms.base import Transformation

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["InsertHeader"]


class InsertHeader(Transformation):
    """Add a header whose value is a literal (Kafka's ``org.apache.kafka.connect.transforms.InsertHeader``).

    The literal is read as Kafka Connect's ``Values`` text, so ``42`` is an
    int8 header, ``true`` a boolean, ``[1,2]`` an array and ``hello`` a string.
    The header is added even if the record already has one with that name.
    """

    config_def = ConfigDef([
        ConfigKey("header", Type.STRING, "The name of the header to add.", importance=Importance.HIGH),
        ConfigKey("value.literal", Type.STRING,
                  "The value of the header, set on every record. It is parsed as Kafka Connect's Values text, "
                  "so its schema is inferred (42 is an int8, true a boolean, anything else not a number, "
                  "date, array or map a string).",
                  importance=Importance.HIGH),
    ])

    def validate(self, config: dict[str, Any]) -> list[ConfigProblem]:
        # Kafka's NonNullValidator: an empty name or literal is fine, a null one is not.
        return [ConfigProblem(None, key, "expected a string, got null")
                for key in ("header", "value.literal") if key in config and config[key] is None]

    def setup(self, config: dict[str, Any]) -> None:
        self.header: str = config["header"]
        self.schema, self.value = parse_string(config["value.literal"])

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        headers = record.headers.copy().add(self.header, self.value, self.schema)
        return record.new_record(headers=headers)
