"""``InsertField``: add fields holding the record's topic, partition, offset, timestamp or a fixed value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Importance, Type
from connectd.data import Schema, SchemaBuilder, Struct
from connectd.data.logical import Timestamp
from connectd.transforms.base import (
    KeyOrValue,
    KeySide,
    ValueSide,
    copy_schema_basics,
    replace_null_key,
    require_map,
    require_sink_record,
    require_struct,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from connectd.data import ConnectRecord

__all__ = ["InsertField", "InsertFieldKey", "InsertFieldValue"]

PURPOSE = "field insertion"
_OPTIONALITY = "Suffix it with ! to make the field required, or ? to keep it optional (the default)."
_OPTIONAL_TIMESTAMP = Timestamp.builder().optional().build()
_FIELD_KEYS = ("topic.field", "partition.field", "offset.field", "timestamp.field", "static.field")


class _Spec(NamedTuple):
    name: str
    optional: bool

    @classmethod
    def parse(cls, text: str | None) -> _Spec | None:
        if text is None:
            return None
        if text.endswith("!"):
            return cls(text[:-1], False)
        if text.endswith("?"):
            return cls(text[:-1], True)
        return cls(text, True)

    def schema(self, required: Schema, optional: Schema) -> Schema:
        return optional if self.optional else required


class InsertField(KeyOrValue):
    """Insert fields from the record's metadata (topic, partition, offset, timestamp) or a static value.

    Works on structs (the schema gains the fields) and on maps. A null key or
    value is left alone. Use :class:`InsertFieldKey` or :class:`InsertFieldValue`
    (Kafka's ``InsertField$Key`` / ``InsertField$Value``).
    """

    Key: ClassVar[type[InsertField]]
    Value: ClassVar[type[InsertField]]

    config_def = ConfigDef([
        ConfigKey("topic.field", Type.STRING, f"Name of the field that gets the record's topic. {_OPTIONALITY}",
                  default=None, importance=Importance.MEDIUM),
        ConfigKey("partition.field", Type.STRING,
                  f"Name of the field that gets the record's Kafka partition. {_OPTIONALITY}",
                  default=None, importance=Importance.MEDIUM),
        ConfigKey("offset.field", Type.STRING,
                  f"Name of the field that gets the record's Kafka offset; sink connectors only. {_OPTIONALITY}",
                  default=None, importance=Importance.MEDIUM),
        ConfigKey("timestamp.field", Type.STRING,
                  f"Name of the field that gets the record's timestamp. {_OPTIONALITY}",
                  default=None, importance=Importance.MEDIUM),
        ConfigKey("static.field", Type.STRING, f"Name of the field that gets static.value. {_OPTIONALITY}",
                  default=None, importance=Importance.MEDIUM),
        ConfigKey("static.value", Type.STRING, "The value of static.field, a string.", default=None,
                  importance=Importance.MEDIUM),
        replace_null_key(),
    ])

    def validate(self, config: dict[str, Any]) -> list[ConfigProblem]:
        problems = []
        if all(config.get(key) is None for key in _FIELD_KEYS):
            problems.append(ConfigProblem(None, None, "expected at least one of " + ", ".join(_FIELD_KEYS)
                                          + " (no field insertion is configured)"))
        if config.get("static.field") is not None and config.get("static.value") is None and "static.value" in config:
            problems.append(ConfigProblem(None, "static.value", "is required when static.field is set"))
        return problems

    def setup(self, config: dict[str, Any]) -> None:
        self.topic_field = _Spec.parse(config["topic.field"])
        self.partition_field = _Spec.parse(config["partition.field"])
        self.offset_field = _Spec.parse(config["offset.field"])
        self.timestamp_field = _Spec.parse(config["timestamp.field"])
        self.static_field = _Spec.parse(config["static.field"])
        self.static_value: str | None = config["static.value"]
        self.replace_null_with_default: bool = config["replace.null.with.default"]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)
        if value is None:
            return record
        if value.__class__ is Struct and self.operating_schema(record) is not None:
            # What _apply_step_by_step builds, from one list of values checked at once.
            try:
                updated_schema = self.schema_cache.get(value.schema, self._with_fields)
                values = value.field_values(defaults=self.replace_null_with_default)
                # Inserted fields follow in _with_fields' order; a missing value stays None, as when not put.
                if self.topic_field is not None:
                    values.append(record.topic)
                if self.partition_field is not None:
                    values.append(record.kafka_partition)
                if self.offset_field is not None:
                    values.append(require_sink_record(record, PURPOSE).kafka_offset)
                if self.timestamp_field is not None:
                    stamp = record.timestamp
                    values.append(None if stamp is None else Timestamp.to_logical(Timestamp.SCHEMA, stamp))
                if self.static_field is not None:
                    values.append(self.static_value)
                updated = Struct.from_field_values(updated_schema, values)
            except Exception:  # let the step-by-step path raise its own error
                pass
            else:
                return self.new_record(record, updated_schema, updated)
        return self._apply_step_by_step(record)

    def _apply_step_by_step(self, record: ConnectRecord) -> ConnectRecord | None:
        # apply() as it was before the fast path.
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            updated = dict(require_map(value, PURPOSE))
            for name, inserted in self._insertions(record, as_datetime=False):
                updated[name] = inserted
            return self.new_record(record, None, updated)
        struct = require_struct(value, PURPOSE)
        updated_schema = self.schema_cache.get(struct.schema, self._with_fields)
        updated = Struct(updated_schema)
        get = struct.get if self.replace_null_with_default else struct.get_without_default
        for field in struct.schema.fields:
            updated.put(field.name, get(field))
        for name, inserted in self._insertions(record, as_datetime=True):
            updated.put(name, inserted)
        return self.new_record(record, updated_schema, updated)

    def _insertions(self, record: ConnectRecord, as_datetime: bool) -> Iterator[tuple[str, Any]]:
        if self.topic_field is not None:
            yield self.topic_field.name, record.topic
        if self.partition_field is not None and record.kafka_partition is not None:
            yield self.partition_field.name, record.kafka_partition
        if self.offset_field is not None:
            yield self.offset_field.name, require_sink_record(record, PURPOSE).kafka_offset
        if self.timestamp_field is not None and record.timestamp is not None:
            stamp = record.timestamp
            yield self.timestamp_field.name, Timestamp.to_logical(Timestamp.SCHEMA, stamp) if as_datetime else stamp
        if self.static_field is not None and self.static_value is not None:
            yield self.static_field.name, self.static_value

    def _with_fields(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            builder.field(field.name, field.schema)
        if self.topic_field is not None:
            builder.field(self.topic_field.name, self.topic_field.schema(Schema.STRING, Schema.OPTIONAL_STRING))
        if self.partition_field is not None:
            builder.field(self.partition_field.name, self.partition_field.schema(Schema.INT32, Schema.OPTIONAL_INT32))
        if self.offset_field is not None:
            builder.field(self.offset_field.name, self.offset_field.schema(Schema.INT64, Schema.OPTIONAL_INT64))
        if self.timestamp_field is not None:
            builder.field(self.timestamp_field.name, self.timestamp_field.schema(Timestamp.SCHEMA, _OPTIONAL_TIMESTAMP))
        if self.static_field is not None:
            builder.field(self.static_field.name, self.static_field.schema(Schema.STRING, Schema.OPTIONAL_STRING))
        return builder.build()


class InsertFieldKey(KeySide, InsertField):
    """``InsertField`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.InsertField$Key``)."""


class InsertFieldValue(ValueSide, InsertField):
    """``InsertField`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.InsertField$Value``)."""


InsertField.Key = InsertFieldKey
InsertField.Value = InsertFieldValue
