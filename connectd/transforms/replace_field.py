"""``ReplaceField``: keep, drop and rename fields of a struct or map."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Importance, Type, Validator
from connectd.data import Schema, SchemaBuilder, Struct
from connectd.transforms.base import (
    KeyOrValue,
    KeySide,
    SchemaUpdateCache,
    ValueSide,
    copy_schema_basics,
    replace_null_key,
    require_map,
    require_struct,
)

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["ReplaceField", "ReplaceFieldKey", "ReplaceFieldValue", "parse_renames"]

PURPOSE = "field replacement"

#: Kafka's pre-3.0 names, still accepted: old name → new name.
DEPRECATED = {"blacklist": "exclude", "whitelist": "include"}


def parse_renames(items: list[str]) -> dict[str, str]:
    """``["a:b", "c:d"]`` → ``{"a": "b", "c": "d"}``. :raises ValueError: ``expected …`` for a bad entry."""
    renames = {}
    for item in items:
        parts = item.split(":")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"expected old:new pairs, got {item!r}")
        renames[parts[0]] = parts[1]
    return renames


class _Renames(Validator):
    def __call__(self, value: Any) -> None:
        if value is not None:
            parse_renames(value)

    def describe(self) -> str:
        return "list of old:new pairs, e.g. foo:bar,abc:xyz"


class ReplaceField(KeyOrValue):
    """Filter or rename the fields of the key or value.

    A field is kept unless it is in ``exclude``, and, when ``include`` is set,
    only if it is listed there; kept fields are renamed by ``renames``. A null
    key or value is left alone. Use :class:`ReplaceFieldKey` or
    :class:`ReplaceFieldValue` (Kafka's ``ReplaceField$Key`` / ``ReplaceField$Value``).
    """

    Key: ClassVar[type[ReplaceField]]
    Value: ClassVar[type[ReplaceField]]

    config_def = ConfigDef([
        ConfigKey("exclude", Type.LIST, "Fields to drop. This takes precedence over include.", default="",
                  importance=Importance.MEDIUM),
        ConfigKey("include", Type.LIST, "Fields to keep. When set, every other field is dropped.", default="",
                  importance=Importance.MEDIUM),
        ConfigKey("renames", Type.LIST, "Field renames, as old:new pairs.", default="",
                  importance=Importance.MEDIUM, validator=_Renames()),
        replace_null_key(),
        ConfigKey("blacklist", Type.LIST, "Deprecated name of exclude, used when exclude is not set.",
                  default=None, importance=Importance.LOW),
        ConfigKey("whitelist", Type.LIST, "Deprecated name of include, used when include is not set.",
                  default=None, importance=Importance.LOW),
    ])

    def configure(self, configs) -> None:
        super().configure(configs)
        for old, new in DEPRECATED.items():
            if old in configs and new in configs:
                self.config_warnings.append(ConfigProblem(
                    None, old, f"is deprecated and ignored because {new} is also set", severity="warning"))
            elif old in configs:
                self.config_warnings.append(ConfigProblem(
                    None, old, f"is deprecated; use {new} instead", severity="warning"))

    def setup(self, config: dict[str, Any]) -> None:
        exclude = config["exclude"] if config["exclude"] or config["blacklist"] is None else config["blacklist"]
        include = config["include"] if config["include"] or config["whitelist"] is None else config["whitelist"]
        self.exclude = frozenset(exclude)
        self.include = frozenset(include)
        self.renames = parse_renames(config["renames"])
        self.reverse_renames = {new: old for old, new in self.renames.items()}
        self.replace_null_with_default: bool = config["replace.null.with.default"]
        # Input schema → (updated schema, the input field index of each updated field), or None
        # when a field cannot be found (the step-by-step path then raises as Kafka does).
        self._plans: SchemaUpdateCache = SchemaUpdateCache()

    def close(self) -> None:
        super().close()
        self._plans.clear()

    def keeps(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def renamed(self, name: str) -> str:
        return self.renames.get(name, name)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)
        if value is None:
            return record
        if value.__class__ is Struct and self.operating_schema(record) is not None:
            # What _apply_step_by_step builds, from one list of values checked at once.
            try:
                plan = self._plans.get(value.schema, self._plan)
                if plan is None:  # a field to read is missing: the step-by-step path raises
                    raise LookupError
                updated_schema, pick = plan
                values = pick(value.field_values(defaults=self.replace_null_with_default))
                updated = Struct.from_field_values(updated_schema, values)
            except Exception:  # let the step-by-step path raise its own error
                pass
            else:
                return self.new_record(record, updated_schema, updated)
        return self._apply_step_by_step(record)

    def _plan(self, schema: Schema) -> tuple[Schema, Callable[[list[Any]], tuple[Any, ...]]] | None:
        updated_schema = self.schema_cache.get(schema, self._replaced)
        sources = []
        for field in updated_schema.fields:
            source = schema.field(self.reverse_renames.get(field.name, field.name))
            if source is None:
                return None
            sources.append(source.index)
        if len(sources) == 1:
            index = sources[0]
            return updated_schema, lambda values: (values[index],)
        return updated_schema, itemgetter(*sources) if sources else lambda values: ()

    def _apply_step_by_step(self, record: ConnectRecord) -> ConnectRecord | None:
        # apply() as it was before the fast path.
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            original = require_map(value, PURPOSE)
            updated = {self.renamed(name): item for name, item in original.items() if self.keeps(name)}
            return self.new_record(record, None, updated)
        struct = require_struct(value, PURPOSE)
        updated_schema = self.schema_cache.get(struct.schema, self._replaced)
        updated_struct = Struct(updated_schema)
        get = struct.get if self.replace_null_with_default else struct.get_without_default
        for field in updated_schema.fields:
            updated_struct.put(field.name, get(self.reverse_renames.get(field.name, field.name)))
        return self.new_record(record, updated_schema, updated_struct)

    def _replaced(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if self.keeps(field.name):
                builder.field(self.renamed(field.name), field.schema)
        return builder.build()


class ReplaceFieldKey(KeySide, ReplaceField):
    """``ReplaceField`` on the record key (Kafka's ``org.apache.kafka.connect.transforms.ReplaceField$Key``)."""


class ReplaceFieldValue(ValueSide, ReplaceField):
    """``ReplaceField`` on the record value (Kafka's ``org.apache.kafka.connect.transforms.ReplaceField$Value``)."""


ReplaceField.Key = ReplaceFieldKey
ReplaceField.Value = ReplaceFieldValue
