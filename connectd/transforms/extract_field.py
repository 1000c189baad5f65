"""``ExtractField``: replace the key or value with one of its fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Importance, Type
from connectd.data import DataError
from connectd.transforms._paths import FieldPath, syntax_version_key
from connectd.transforms.base import (
    KeyOrValue,
    KeySide,
    ValueSide,
    replace_null_key,
    require_map_or_null,
    require_struct_or_null,
)

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["ExtractField", "ExtractFieldKey", "ExtractFieldValue"]

PURPOSE = "field extraction"


class ExtractField(KeyOrValue):
    """Replace the key or value with one field of it: of a struct with a schema, of a map without.

    A null key or value stays null. Use :class:`ExtractFieldKey` or
    :class:`ExtractFieldValue` (Kafka's ``ExtractField$Key`` / ``ExtractField$Value``).
    """

    Key: ClassVar[type[ExtractField]]
    Value: ClassVar[type[ExtractField]]

    config_def = ConfigDef([
        ConfigKey("field", Type.STRING,
                  "Name of the field to extract; with field.syntax.version=V2 a dotted path to a nested field.",
                  importance=Importance.MEDIUM),
        syntax_version_key(),
        replace_null_key(),
    ])

    def validate(self, config: dict[str, Any]) -> list[ConfigProblem]:
        field, version = config.get("field"), config.get("field.syntax.version")
        if field is None or version is None:
            return []
        try:
            FieldPath(field, version)
        except ValueError as exc:
            return [ConfigProblem(None, "field", str(exc), field)]
        return []

    def setup(self, config: dict[str, Any]) -> None:
        self.path = FieldPath(config["field"], config["field.syntax.version"])
        self.replace_null_with_default: bool = config["replace.null.with.default"]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            original = require_map_or_null(value, PURPOSE)
            return self.new_record(record, None, None if original is None else self.path.value_from(original))
        struct = require_struct_or_null(value, PURPOSE)
        field = self.path.field_from(schema)
        if field is None:
            raise DataError(f"Unknown field: {self.path}")
        extracted = None if struct is None else self.path.value_from(struct, self.replace_null_with_default)
        return self.new_record(record, field.schema, extracted)


class ExtractFieldKey(KeySide, ExtractField):
    """``ExtractField`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.ExtractField$Key``)."""


class ExtractFieldValue(ValueSide, ExtractField):
    """``ExtractField`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.ExtractField$Value``)."""


ExtractField.Key = ExtractFieldKey
ExtractField.Value = ExtractFieldValue
