"""``ExtractNewRecordState``: Debezium's change event reduced to the row it leaves, for sinks that want rows.

As Debezium's ``io.debezium.transforms.ExtractNewRecordState`` (Debezium 2.5 and
later, with the older keys understood): a create, update or snapshot read
becomes its ``after`` struct; what happens to deletes and tombstones is
``delete.tombstone.handling.mode``:

======================== ===================================== =====================
mode                     a delete event (op d)                 the tombstone after it
======================== ===================================== =====================
tombstone (default)      dropped                               kept
drop                     dropped                               dropped
rewrite                  its ``before``, with ``__deleted``    dropped
                         = ``"true"``
rewrite-with-tombstone   the same                              kept
delete-to-tombstone      a tombstone (the key, a null value)   dropped
======================== ===================================== =====================

With ``rewrite`` modes every row gets ``__deleted`` (``"false"`` but for
deletes). ``add.fields`` adds envelope fields to the row as
``<add.fields.prefix><name>`` (``op``, ``ts_ms``; other names are fields of
``source``, or ``source.<name>``). Records that are not change events pass
unchanged.
"""

from __future__ import annotations

from typing import Any

from connectd import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigKey,
    ConfigProblem,
    ConnectRecord,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Transformation,
    Type,
)

__all__ = ["ExtractNewRecordState"]

MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
_ENVELOPE = ("op", "ts_ms")


class ExtractNewRecordState(Transformation):
    """Debezium's change event → the row state; see the module docstring."""

    config_def = ConfigDef([
        ConfigKey("delete.tombstone.handling.mode", Type.STRING, "What becomes of delete events and of the "
                  "tombstones after them: drop, tombstone, rewrite, rewrite-with-tombstone or "
                  "delete-to-tombstone.", default=None, importance=Importance.MEDIUM,
                  validator=CaseInsensitiveValidString(*MODES)),
        ConfigKey("drop.tombstones", Type.BOOLEAN, "Debezium's older key: drop tombstones (true, its default). "
                  "Not with delete.tombstone.handling.mode.", default=None, importance=Importance.LOW),
        ConfigKey("delete.handling.mode", Type.STRING, "Debezium's older key: drop (its default), rewrite or none "
                  "(a delete becomes a tombstone). Not with delete.tombstone.handling.mode.", default=None,
                  importance=Importance.LOW, validator=CaseInsensitiveValidString("drop", "rewrite", "none")),
        ConfigKey("add.fields", Type.LIST, "Envelope fields to add to the row: op, ts_ms, or fields of source "
                  "(table, db, file, pos, ts_ms as source.ts_ms, …).", default="", importance=Importance.LOW),
        ConfigKey("add.fields.prefix", Type.STRING, "The prefix of the added fields' names.", default="__",
                  importance=Importance.LOW),
    ])

    def validate(self, config: dict[str, Any]) -> list[ConfigProblem]:
        if config.get("delete.tombstone.handling.mode") is not None and (
                config.get("drop.tombstones") is not None or config.get("delete.handling.mode") is not None):
            return [ConfigProblem(None, "delete.tombstone.handling.mode", "replaces drop.tombstones and "
                                  "delete.handling.mode: set it alone")]
        return []

    def setup(self, config: dict[str, Any]) -> None:
        mode = config["delete.tombstone.handling.mode"]
        if mode is None and (config["drop.tombstones"] is not None or config["delete.handling.mode"] is not None):
            deletes = (config["delete.handling.mode"] or "drop").lower()
            drop_tombstones = config["drop.tombstones"] is not False
            mode = {("drop", True): "drop", ("drop", False): "tombstone", ("rewrite", True): "rewrite",
                    ("rewrite", False): "rewrite-with-tombstone"}.get((deletes, drop_tombstones))
            if deletes == "none":
                mode = "delete-to-tombstone" if drop_tombstones else "delete-and-tombstone"
        self.mode = (mode or "tombstone").lower()
        self.rewrite = self.mode.startswith("rewrite")
        self.keep_tombstones = self.mode in ("tombstone", "rewrite-with-tombstone", "delete-and-tombstone")
        self.prefix = config["add.fields.prefix"]
        self.added = [name.strip() for name in config["add.fields"] if name.strip()]
        self._schemas: dict[tuple[Any, Any], Schema] = {}

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value, schema = record.value, record.value_schema
        if value is None:
            return record if self.keep_tombstones else None
        if not (isinstance(value, Struct) and schema is not None and schema.field("op") is not None
                and schema.field("after") is not None and schema.field("before") is not None):
            return record  # not a change event
        op = value.get("op")
        if op == "d":
            if self.mode in ("delete-to-tombstone", "delete-and-tombstone"):
                return record.new_record(value_schema=None, value=None)
            if not self.rewrite:
                return None
            row = value.get("before")
        else:
            row = value.get("after")
        if row is None:
            return None
        if not self.rewrite and not self.added:
            return record.new_record(value_schema=row.schema, value=row)
        extra = self._extra(value, op)
        out_schema = self._schema(row.schema, schema)
        out = Struct(out_schema, {**{f.name: row.get(f.name) for f in row.schema.fields},
                                  **{name: field_value for name, field_value in extra}})
        return record.new_record(value_schema=out_schema, value=out)

    def _extra(self, envelope: Struct, op: str) -> list[tuple[str, Any]]:
        extra = []
        source = envelope.get("source")
        for name in self.added:
            field_value = _lookup(envelope, source, name)
            extra.append((self.prefix + name.replace(".", "_"), field_value))
        if self.rewrite:
            extra.append((f"{self.prefix}deleted", "true" if op == "d" else "false"))
        return extra

    def _schema(self, row_schema: Schema, envelope_schema: Schema) -> Schema:
        key = (row_schema, envelope_schema)
        found = self._schemas.get(key)
        if found is not None:
            return found
        builder = SchemaBuilder.struct().name(row_schema.name or "row").optional()
        for field in row_schema.fields:
            builder.field(field.name, field.schema)
        source_schema = envelope_schema.field("source").schema if envelope_schema.field("source") else None
        for name in self.added:
            field_schema = _lookup_schema(envelope_schema, source_schema, name)
            builder.field(self.prefix + name.replace(".", "_"), _optional(field_schema))
        if self.rewrite:
            builder.field(f"{self.prefix}deleted", Schema.OPTIONAL_STRING)
        found = self._schemas[key] = builder.build()
        return found


def _lookup(envelope: Struct, source: Struct | None, name: str) -> Any:
    if name in _ENVELOPE:
        return envelope.get(name)
    bare = name.removeprefix("source.")
    if source is not None and source.schema.field(bare) is not None:
        return source.get(bare)
    return None


def _lookup_schema(envelope: Schema, source: Schema | None, name: str) -> Schema:
    if name in _ENVELOPE:
        return envelope.field(name).schema
    bare = name.removeprefix("source.")
    if source is not None and source.field(bare) is not None:
        return source.field(bare).schema
    return Schema.OPTIONAL_STRING  # a field the events do not have: always null


def _optional(schema: Schema) -> Schema:
    """*schema*, optional: an added field is null where the events do not have it."""
    if schema.optional:
        return schema
    return Schema(schema.type, optional=True, name=schema.name, version=schema.version,
                  parameters=schema.parameters)
