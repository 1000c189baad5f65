"""ExtractNewRecordState on the change events the CDC task makes: rows, deletes, tombstones, added fields."""

from __future__ import annotations

import pytest
from connectd_mysql_cdc.config import settings
from connectd_mysql_cdc.schemas import ColumnSpec, TableSchema, source_struct
from connectd_mysql_cdc.task import _change
from connectd_mysql_cdc.unwrap import ExtractNewRecordState

from connectd import ConfigError, Schema, SinkRecord, Struct

CONFIG = settings({"database.hostname": "db", "database.user": "u", "database.server.id": "1", "topic.prefix": "cdc"})
TABLE = TableSchema(CONFIG, "shop", "items", [ColumnSpec("id", "int", primary=True), ColumnSpec("name", "varchar")])


def events(op: str) -> list:
    """The records of one change: the event, and its tombstone for a delete."""
    row = TABLE.value({"id": 1, "name": "pen"})
    source = source_struct(CONFIG, database="shop", table="items", ts_ms=1000, snapshot="false", server_id=1,
                           gtid=None, file="binlog.000001", pos=4, row=0)
    before, after = (row, None) if op == "d" else (None, row)
    return _change(CONFIG, TABLE, op, before, after, source, {"file": "binlog.000001", "pos": 4})


def transformed(config: dict, op: str) -> list:
    smt = ExtractNewRecordState()
    smt.configure(config)
    return [smt.apply(record) for record in events(op)]


def row_of(record) -> dict | None:
    if record is None or record.value is None:
        return None if record is None else "tombstone"
    return {field.name: record.value.get(field.name) for field in record.value_schema.fields}


def test_default_keeps_rows_and_tombstones_and_drops_delete_events():
    assert [row_of(r) for r in transformed({}, "c")] == [{"id": 1, "name": "pen"}]
    assert [row_of(r) for r in transformed({}, "d")] == [None, "tombstone"]
    (created,) = transformed({}, "u")
    assert created.key.get("id") == 1 and created.value_schema.name == "cdc.shop.items.Value"


@pytest.mark.parametrize(("config", "delete_event", "tombstone"), [
    ({"delete.tombstone.handling.mode": "drop"}, None, None),
    ({"delete.tombstone.handling.mode": "rewrite"}, {"id": 1, "name": "pen", "__deleted": "true"}, None),
    ({"delete.tombstone.handling.mode": "rewrite-with-tombstone"}, {"id": 1, "name": "pen", "__deleted": "true"},
     "tombstone"),
    ({"delete.tombstone.handling.mode": "delete-to-tombstone"}, "tombstone", None),
    ({"drop.tombstones": "true"}, None, None),  # Debezium's older keys, and their defaults
    ({"drop.tombstones": "false", "delete.handling.mode": "rewrite"}, {"id": 1, "name": "pen", "__deleted": "true"},
     "tombstone"),
    ({"delete.handling.mode": "none"}, "tombstone", None),
])
def test_delete_and_tombstone_modes(config, delete_event, tombstone):
    assert [row_of(r) for r in transformed(config, "d")] == [delete_event, tombstone]


def test_added_fields_and_the_deleted_flag():
    config = {"delete.tombstone.handling.mode": "rewrite", "add.fields": "op,table,source.ts_ms,gone"}
    (row,) = transformed(config, "c")
    assert row_of(row) == {"id": 1, "name": "pen", "__op": "c", "__table": "items", "__source_ts_ms": 1000,
                           "__gone": None, "__deleted": "false"}
    assert row.value_schema.field("__source_ts_ms").schema.optional


def test_other_records_pass_unchanged_and_settings_are_checked():
    plain = SinkRecord(topic="t", kafka_partition=0, key_schema=None, key=None, value_schema=Schema.STRING,
                       value="x", kafka_offset=0, timestamp=None)
    smt = ExtractNewRecordState()
    smt.configure({})
    assert smt.apply(plain) is plain
    struct_schema = TABLE.value_schema
    not_an_event = plain.new_record(value_schema=struct_schema, value=Struct(struct_schema, {"id": 2}))
    assert smt.apply(not_an_event) is not_an_event
    with pytest.raises(ConfigError, match="set it alone"):
        smt.configure({"delete.tombstone.handling.mode": "drop", "drop.tombstones": "false"})
