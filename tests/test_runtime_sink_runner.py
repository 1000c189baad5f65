"""SinkTaskRunner's batch conversion (pure logic: rows in, records to a recording task)."""

from __future__ import annotations

import json

import pytest

from connectd.connector import SinkTask, TopicPartition
from connectd.data.converters import StringConverter
from connectd.data.errors import DataError
from connectd.data.headers import Headers
from connectd.data.json_converter import JsonConverter
from connectd.data.records import SinkRecord, TimestampType, sink_records
from connectd.data.schema import Schema, SchemaAndValue
from connectd.runtime.error_handling import ErrorHandler, ErrorPolicy
from connectd.runtime.queries import planned_ranges
from connectd.runtime.sink_task import SinkTaskRunner
from connectd.transforms.chain import TransformationChain


class Recording(SinkTask):
    def start(self, config):
        self.put_calls: list[list[SinkRecord]] = []

    def put(self, records):
        self.put_calls.append(list(records))

    def stop(self):
        pass


def runner(value_converter, *, tolerate=False):
    converters = {"key": StringConverter(), "value": value_converter, "header": StringConverter()}
    for name, converter in converters.items():
        converter.configure({"schemas.enable": "false"} if isinstance(converter, JsonConverter) else {},
                            is_key=name == "key")
    committed = []
    errors = ErrorHandler(ErrorPolicy(tolerate_all=tolerate), "c", 0)
    partitions = [TopicPartition("a", 0), TopicPartition("b", 1)]
    run = SinkTaskRunner(Recording(), {}, partitions, converters, TransformationChain({}, None), committed.append, errors)
    return run, committed


ROWS = [
    ("a", 0, 5, 1_700_000_000_000, 1, b"k5", bytearray(b'{"n": 5}'), None),
    ("b", 1, 9, None, 0, None, b'{"n": 9}', [("h1", bytearray(b"x")), ("h2", None)]),
    ("a", 0, 6, 1_700_000_000_001, 2, b"k6", b"null", []),
]


def test_batch_path_makes_the_records_the_step_by_step_path_makes():
    fast, committed = runner(JsonConverter())
    fast.process(ROWS)
    slow, _ = runner(JsonConverter())
    _, expected = slow._convert_each(ROWS)
    (put,) = fast.task.put_calls
    key = lambda r: (r.topic, r.kafka_offset)
    assert sorted(put, key=key) == sorted(expected, key=key)
    assert [r.kafka_offset for r in put if r.topic == "a"] == [5, 6]  # order per partition kept
    record = next(r for r in put if r.topic == "b")
    assert [(h.key, h.value) for h in record.headers] == [("h1", "x"), ("h2", None)]
    assert record.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE and record.original_kafka_offset == 9
    assert committed == [{TopicPartition("a", 0): 7, TopicPartition("b", 1): 10}]


def test_a_bad_record_sends_the_batch_step_by_step_and_is_skipped_when_tolerated():
    run, committed = runner(JsonConverter(), tolerate=True)
    run.process([*ROWS[:1], ("a", 0, 6, None, 0, None, b"{bad", None), ("a", 0, 7, None, 0, None, b"1", None)])
    (put,) = run.task.put_calls
    assert [(r.kafka_offset, r.value) for r in put] == [(5, {"n": 5}), (7, 1)]
    assert committed == [{TopicPartition("a", 0): 8}]  # the skipped record's offset is committed too


def test_chunks_put_separately_and_commit_once():
    run, committed = runner(StringConverter())
    run.put_rows([("a", 0, i, None, 0, None, b"v", None) for i in range(3)])
    run.put_rows([("a", 0, i, None, 0, None, b"v", None) for i in range(3, 5)])
    assert committed == []
    assert run.commit_batch() == {TopicPartition("a", 0): 5}
    assert [len(c) for c in run.task.put_calls] == [3, 2] and committed == [{TopicPartition("a", 0): 5}]


def test_sink_records_match_the_constructor_and_check_timestamps():
    headers = [Headers(), Headers([("h", Schema.STRING, "v")])]
    rows = [("t", 0, 1, 10, 1, None, None, None), ("t", 2, 3, None, 0, None, None, None)]
    keys = [SchemaAndValue(None, "k"), SchemaAndValue.NULL]
    values = [SchemaAndValue(Schema.OPTIONAL_STRING, "v"), SchemaAndValue(None, {"x": 1})]
    made = sink_records("t", rows, keys, values, headers)
    assert made == [
        SinkRecord(topic="t", kafka_partition=0, kafka_offset=1, timestamp=10, timestamp_type=TimestampType.CREATE_TIME,
                   key_schema=None, key="k", value_schema=Schema.OPTIONAL_STRING, value="v", headers=headers[0]),
        SinkRecord(topic="t", kafka_partition=2, kafka_offset=3, timestamp=None,
                   timestamp_type=TimestampType.NO_TIMESTAMP_TYPE, value={"x": 1}, headers=headers[1]),
    ]
    assert made[1].new_record(value=2).original_kafka_offset == 3
    without_headers = sink_records("t", rows[:1], keys[:1], values[:1])
    assert list(without_headers[0].headers) == [] and without_headers[0].headers is not made[0].headers
    with pytest.raises(DataError, match="Invalid record timestamp -5"):
        sink_records("t", [("t", 0, 1, -5, 1, None, None, None)], keys[:1], values[:1])


def write_offset_log(checkpoint, batch: int, offsets: dict[str, int] | str) -> None:
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    body = offsets if isinstance(offsets, str) else json.dumps(offsets)
    (checkpoint / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{body}', encoding="utf-8")


def test_planned_ranges_come_from_sparks_offset_log(tmp_path):
    start = {"t:0": 5, "t:1": 0}
    write_offset_log(tmp_path, 0, {"t:0": 9, "t:1": 0})
    write_offset_log(tmp_path, 1, {"t:0": 12, "t:1": 4, "u:0": 3})
    assert planned_ranges(tmp_path, 0, start) == [("t", 0, 5, 9)]
    assert planned_ranges(tmp_path, 1, start) == [("t", 0, 9, 12), ("t", 1, 0, 4), ("u", 0, 0, 3)]


@pytest.mark.parametrize("body", ["not json", "[1, 2]", '{"t:0": "x"}'])
def test_planned_ranges_are_none_when_the_log_is_not_as_expected(tmp_path, body):
    write_offset_log(tmp_path, 0, body)
    assert planned_ranges(tmp_path, 0, {"t:0": 0}) is None
    assert planned_ranges(tmp_path, 3, {"t:0": 0}) is None  # no such batch
    (tmp_path / "offsets" / "0").write_text('v2\n{}\n{"t:0": 1}', encoding="utf-8")
    assert planned_ranges(tmp_path, 0, {"t:0": 0}) is None
