"""``DropHeaders``: remove every header with one of the configured names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connectd.config.definitions import ConfigDef, ConfigKey, Importance, Type
from connectd.data import Headers
from connectd.transforms.base import NonEmptyList, Transformation

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["DropHeaders"]


class DropHeaders(Transformation):
    """Drop all headers whose names are listed (Kafka's ``org.apache.kafka.connect.transforms.DropHeaders``)."""

    config_def = ConfigDef([
        ConfigKey("headers", Type.LIST, "The names of the headers to remove, comma-separated.",
                  importance=Importance.HIGH, validator=NonEmptyList()),
    ])

    def setup(self, config: dict[str, Any]) -> None:
        self.names = frozenset(config["headers"])

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        names = self.names
        kept = Headers(header for header in record.headers if header.key not in names)
        return record.new_record(headers=kept)
