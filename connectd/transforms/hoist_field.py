"""``HoistField``: wrap the key or value in a struct (or map) with a single field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, Importance, Type
from connectd.data import Schema, SchemaBuilder, Struct
from connectd.transforms.base import KeyOrValue, KeySide, ValueSide

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["HoistField", "HoistFieldKey", "HoistFieldValue"]


class HoistField(KeyOrValue):
    """Wrap the key or value in a struct with one field when it has a schema, or in a map without.

    Use :class:`HoistFieldKey` or :class:`HoistFieldValue` (Kafka's ``HoistField$Key`` / ``HoistField$Value``).
    """

    Key: ClassVar[type[HoistField]]
    Value: ClassVar[type[HoistField]]

    config_def = ConfigDef([
        ConfigKey("field", Type.STRING,
                  "Name of the single field of the struct or map that the key or value is wrapped in.",
                  importance=Importance.MEDIUM),
    ])

    def setup(self, config: dict[str, Any]) -> None:
        self.field: str = config["field"]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            return self.new_record(record, None, {self.field: value})
        hoisted = self.schema_cache.get(schema, self._wrapping)
        return self.new_record(record, hoisted, Struct(hoisted).put(self.field, value))

    def _wrapping(self, schema: Schema) -> Schema:
        return SchemaBuilder.struct().field(self.field, schema).build()


class HoistFieldKey(KeySide, HoistField):
    """``HoistField`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.HoistField$Key``)."""


class HoistFieldValue(ValueSide, HoistField):
    """``HoistField`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.HoistField$Value``)."""


HoistField.Key = HoistFieldKey
HoistField.Value = HoistFieldValue
