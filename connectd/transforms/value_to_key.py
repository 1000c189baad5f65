"""``ValueToKey``: make the record key from fields of the value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connectd.config.definitions import ConfigDef, ConfigKey, Importance, Type
from connectd.data import DataError, Schema, SchemaBuilder, Struct
from connectd.transforms.base import (
    NonEmptyList,
    Transformation,
    replace_null_key,
    require_map,
    require_struct,
)

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["ValueToKey"]

PURPOSE = "copying fields from value to key"


class ValueToKey(Transformation):
    """Replace the key with a struct (or map) of fields copied from the value (Kafka's ``org.apache.kafka.connect.transforms.ValueToKey``)."""

    config_def = ConfigDef([
        ConfigKey("fields", Type.LIST, "Names of the fields of the value that make up the new key.",
                  importance=Importance.HIGH, validator=NonEmptyList(unique=True)),
        replace_null_key(),
    ])

    def setup(self, config: dict[str, Any]) -> None:
        self.fields: list[str] = config["fields"]
        self.replace_null_with_default: bool = config["replace.null.with.default"]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.value_schema is None:
            value = require_map(record.value, PURPOSE)
            return record.new_record(key_schema=None, key={field: value.get(field) for field in self.fields})
        struct = require_struct(record.value, PURPOSE)
        key_schema = self.schema_cache.get(struct.schema, self._key_schema)
        key = Struct(key_schema)
        get = struct.get if self.replace_null_with_default else struct.get_without_default
        for field in self.fields:
            key.put(field, get(field))
        return record.new_record(key_schema=key_schema, key=key)

    def _key_schema(self, value_schema: Schema) -> Schema:
        builder = SchemaBuilder.struct()
        for name in self.fields:
            field = value_schema.field(name)
            if field is None:
                raise DataError(f"Field does not exist: {name}")
            builder.field(name, field.schema)
        return builder.build()
