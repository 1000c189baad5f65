"""``HeaderFrom``: move or copy fields of the key or value into headers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Importance, OneOf, Type
from connectd.data import DataError, Schema, SchemaBuilder, Struct
from connectd.transforms.base import (
    KeyOrValue,
    KeySide,
    NonEmptyList,
    ValueSide,
    copy_schema_basics,
    replace_null_key,
    require_map,
    require_struct,
)

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["HeaderFrom", "HeaderFromKey", "HeaderFromValue"]

MOVE, COPY = "move", "copy"


class HeaderFrom(KeyOrValue):
    """Move or copy fields of the key or value into headers; the n-th field goes to the n-th header.

    Use :class:`HeaderFromKey` or :class:`HeaderFromValue` (Kafka's ``HeaderFrom$Key`` / ``HeaderFrom$Value``).
    With a schema, each header gets the field's schema.
    """

    Key: ClassVar[type[HeaderFrom]]
    Value: ClassVar[type[HeaderFrom]]

    config_def = ConfigDef([
        ConfigKey("fields", Type.LIST, "Names of the fields whose values become headers.",
                  importance=Importance.HIGH, validator=NonEmptyList()),
        ConfigKey("headers", Type.LIST,
                  "Names of the headers, in the same order as the fields they take their values from.",
                  importance=Importance.HIGH, validator=NonEmptyList()),
        ConfigKey("operation", Type.STRING,
                  "What happens to the fields: move takes them out of the key or value, copy leaves them there.",
                  importance=Importance.HIGH, validator=OneOf(MOVE, COPY)),
        replace_null_key(),
    ])

    def validate(self, config: dict[str, Any]) -> list[ConfigProblem]:
        fields, headers = config.get("fields"), config.get("headers")
        if fields is not None and headers is not None and len(fields) != len(headers):
            return [ConfigProblem(None, "headers",
                                  f"expected one header name per field ({len(fields)} fields, {len(headers)} headers)",
                                  ",".join(headers))]
        return []

    def setup(self, config: dict[str, Any]) -> None:
        self.fields: list[str] = config["fields"]
        self.headers: list[str] = config["headers"]
        self.operation: str = config["operation"]
        self.replace_null_with_default: bool = config["replace.null.with.default"]
        self._purpose = f"header {self.operation}"
        self._moved = frozenset(self.fields)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        headers = record.headers.copy()
        if schema is None:
            original = require_map(value, self._purpose)
            updated = dict(original)
            for field, header in zip(self.fields, self.headers):
                if self.operation == MOVE:
                    updated.pop(field, None)
                headers.add(header, original.get(field))
            return self.new_record(record, None, updated, headers)

        struct = require_struct(value, self._purpose)
        get = struct.get if self.replace_null_with_default else struct.get_without_default
        for field, header in zip(self.fields, self.headers):
            found = schema.field(field)
            if found is None:
                raise DataError(f"Field does not exist: {field}")
            headers.add(header, get(found), found.schema)
        if self.operation == COPY:
            return self.new_record(record, schema, struct, headers)
        moved_schema = self.schema_cache.get(schema, self._without_fields)
        moved = Struct(moved_schema)
        for field in moved_schema.fields:
            moved.put(field.name, get(field.name))
        return self.new_record(record, moved_schema, moved, headers)

    def _without_fields(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if field.name not in self._moved:
                builder.field(field.name, field.schema)
        return builder.build()


class HeaderFromKey(KeySide, HeaderFrom):
    """``HeaderFrom`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.HeaderFrom$Key``)."""


class HeaderFromValue(ValueSide, HeaderFrom):
    """``HeaderFrom`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.HeaderFrom$Value``)."""


HeaderFrom.Key = HeaderFromKey
HeaderFrom.Value = HeaderFromValue
