"""``SetSchemaMetadata``: set the name and/or version of the key or value schema."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Importance, Type
from connectd.data import Schema, SchemaBuilder, SchemaType, Struct
from connectd.transforms.base import KeyOrValue, KeySide, ValueSide, replace_null_key, require_schema

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["SetSchemaMetadata", "SetSchemaMetadataKey", "SetSchemaMetadataValue"]


class SetSchemaMetadata(KeyOrValue):
    """Set the schema name, version or both on the key or value schema.

    A struct is copied onto the renamed schema. A null key or value without a
    schema is left alone; any other key or value needs a schema. Use
    :class:`SetSchemaMetadataKey` or :class:`SetSchemaMetadataValue` (Kafka's
    ``SetSchemaMetadata$Key`` / ``SetSchemaMetadata$Value``).
    """

    Key: ClassVar[type[SetSchemaMetadata]]
    Value: ClassVar[type[SetSchemaMetadata]]

    config_def = ConfigDef([
        ConfigKey("schema.name", Type.STRING, "Schema name to set.", default=None, importance=Importance.HIGH),
        ConfigKey("schema.version", Type.INT, "Schema version to set.", default=None, importance=Importance.HIGH),
        replace_null_key(),
    ])

    def validate(self, config: dict[str, Any]) -> list[ConfigProblem]:
        if "schema.name" in config and "schema.version" in config and (
            config["schema.name"] is None and config["schema.version"] is None
        ):
            return [ConfigProblem(None, None, "expected schema.name, schema.version or both (neither is set)")]
        return []

    def setup(self, config: dict[str, Any]) -> None:
        self.schema_name: str | None = config["schema.name"]
        self.schema_version: int | None = config["schema.version"]
        self.replace_null_with_default: bool = config["replace.null.with.default"]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)
        schema = self.operating_schema(record)
        if value is None and schema is None:
            return record
        require_schema(schema, "updating schema metadata")
        updated = self.schema_cache.get(schema, self._renamed)
        return self.new_record(record, updated, self._moved(value, updated))

    def _renamed(self, schema: Schema) -> Schema:
        builder = SchemaBuilder.from_schema(schema)
        if self.schema_name is not None:
            builder.name(self.schema_name)
        if self.schema_version is not None:
            builder.version(self.schema_version)
        default = schema.default_value
        if not isinstance(default, Struct):
            return builder.build()
        builder.default_value(None)
        plain = builder.build()
        return SchemaBuilder.from_schema(plain).default_value(self._moved(default, plain)).build()

    def _moved(self, value: Any, schema: Schema) -> Any:
        # A struct refers to its schema, so it must be copied onto the renamed one.
        if not isinstance(value, Struct) or schema.type is not SchemaType.STRUCT:
            return value
        moved = Struct(schema)
        get = value.get if self.replace_null_with_default else value.get_without_default
        for field in schema.fields:
            moved.put(field.name, get(field.name))
        return moved


class SetSchemaMetadataKey(KeySide, SetSchemaMetadata):
    """``SetSchemaMetadata`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.SetSchemaMetadata$Key``)."""


class SetSchemaMetadataValue(ValueSide, SetSchemaMetadata):
    """``SetSchemaMetadata`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.SetSchemaMetadata$Value``)."""


SetSchemaMetadata.Key = SetSchemaMetadataKey
SetSchemaMetadata.Value = SetSchemaMetadataValue
