"""``Flatten``: turn nested structs (with a schema) or maps (without) into one level.

Nested field names are joined with the delimiter: ``{"a": {"b": 1}}`` becomes
``{"a.b": 1}``. A flattened field is optional when any struct above it is,
and takes its default from its own schema or, failing that, from the default
of a struct above it. Arrays are kept whole; as in Kafka, a map inside a
struct with a schema cannot be flattened and fails the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, Importance, Type
from connectd.data import DataError, Schema, SchemaBuilder, SchemaType, Struct
from connectd.transforms.base import (
    KeyOrValue,
    KeySide,
    ValueSide,
    copy_schema_basics,
    require_map,
    require_struct,
)

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["Flatten", "FlattenKey", "FlattenValue"]

PURPOSE = "flattening"

# What Kafka's ConnectSchema.schemaType knows, less maps and structs; decimals and dates are not among them.
_SCALARS = (str, int, float, bytes, bytearray)


class Flatten(KeyOrValue):
    """Flatten nested structs or maps into one level, joining field names with a delimiter.

    Use :class:`FlattenKey` or :class:`FlattenValue` (Kafka's ``Flatten$Key`` / ``Flatten$Value``).
    """

    Key: ClassVar[type[Flatten]]
    Value: ClassVar[type[Flatten]]

    config_def = ConfigDef([
        ConfigKey("delimiter", Type.STRING,
                  "Text put between the names of the enclosing fields and the field's own name in the names of "
                  "the flattened fields.",
                  default=".", importance=Importance.MEDIUM),
    ])

    def setup(self, config: dict[str, Any]) -> None:
        self.delimiter: str = config["delimiter"]

    def _name(self, prefix: str, name: Any) -> Any:
        return f"{prefix}{self.delimiter}{name}" if prefix else name

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            flat: dict[Any, Any] = {}
            self._flatten_map(require_map(value, PURPOSE), "", flat)
            return self.new_record(record, None, flat)
        struct = require_struct(value, PURPOSE)
        flat_schema = self.schema_cache.get(schema, self._flat_schema)
        flat_struct = Struct(flat_schema)
        self._flatten_struct(struct, "", flat_struct)
        return self.new_record(record, flat_schema, flat_struct)

    # -- without a schema ----------------------------------------------------------

    def _flatten_map(self, original: Mapping[Any, Any], prefix: str, out: dict[Any, Any]) -> None:
        for key, item in original.items():
            name = self._name(prefix, key)
            if isinstance(item, Mapping):
                self._flatten_map(item, name, out)
            elif item is None or isinstance(item, (bool, list, tuple, *_SCALARS)):
                out[name] = item
            elif not isinstance(item, Struct):
                raise DataError(
                    f"Flatten transformation was passed a value of type {type(item).__name__} "
                    "which is not supported by Connect's data API"
                )
            else:
                raise DataError(
                    f"Flatten transformation does not support {type(item).__name__} for record without schemas "
                    f"(for field {name})."
                )

    # -- with a schema -------------------------------------------------------------

    def _flat_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        self._add_fields(schema, "", builder, schema.optional, schema.default_value)
        return builder.build()

    def _add_fields(self, schema: Schema, prefix: str, builder: SchemaBuilder, optional: bool, parent_default: Any) -> None:
        for field in schema.fields:
            name = self._name(prefix, field.name)
            field_optional = optional or field.schema.optional
            default = field.schema.default_value
            if default is None and parent_default is not None:
                default = parent_default.get(field.name)
            if field.schema.type is SchemaType.STRUCT:
                self._add_fields(field.schema, name, builder, field_optional, default)
                continue
            if field.schema.type is SchemaType.MAP:
                raise DataError(f"Flatten transformation does not support MAP for record with schemas (for field {name}).")
            field_builder = copy_schema_basics(field.schema)
            if field_optional:
                field_builder.optional()
            if default is not None:
                field_builder.default_value(default)
            builder.field(name, field_builder.build())

    def _flatten_struct(self, struct: Struct | None, prefix: str, out: Struct) -> None:
        if struct is None:
            return
        for field in struct.schema.fields:
            name = self._name(prefix, field.name)
            if field.schema.type is SchemaType.STRUCT:
                self._flatten_struct(struct.get(field), name, out)
            else:
                out.put(name, struct.get(field))


class FlattenKey(KeySide, Flatten):
    """``Flatten`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.Flatten$Key``)."""


class FlattenValue(ValueSide, Flatten):
    """``Flatten`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.Flatten$Value``)."""


Flatten.Key = FlattenKey
Flatten.Value = FlattenValue
