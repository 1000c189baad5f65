"""Records and headers."""

from __future__ import annotations

import dataclasses
import itertools
import pickle

import pytest

from connectd.data import (
    ConnectRecord,
    DataError,
    Header,
    Headers,
    Schema,
    SinkRecord,
    SourceRecord,
    TimestampType,
)


class TestHeaders:
    def test_ordered_and_multi_valued(self):
        headers = Headers().add("a", 1, Schema.INT32).add("b", "x", Schema.STRING).add("a", 2, Schema.INT32)
        assert [h.key for h in headers] == ["a", "b", "a"]
        assert headers.last_with_name("a") == Header("a", Schema.INT32, 2)
        assert headers.last_with_name("missing") is None
        assert [h.value for h in headers.all_with_name("a")] == [1, 2]
        assert len(headers) == 3

    def test_iteration_unpacks(self):
        headers = Headers([("k", Schema.STRING, "v")])
        assert [(key, schema, value) for key, schema, value in headers] == [("k", Schema.STRING, "v")]

    def test_remove_and_retain_latest(self):
        headers = Headers().add("a", 1).add("b", 2).add("a", 3).add("b", 4).add("c", 5)
        assert [h.value for h in headers.copy().remove("a")] == [2, 4, 5]
        assert [h.value for h in headers.copy().retain_latest("a")] == [2, 3, 4, 5]
        assert [h.value for h in headers.copy().retain_latest()] == [3, 4, 5]
        assert len(headers.copy().clear()) == 0

    def test_copy_is_independent(self):
        headers = Headers().add("a", 1)
        copy = headers.copy()
        copy.add("b", 2)
        assert len(headers) == 1 and len(copy) == 2
        assert headers == Headers().add("a", 1)

    def test_values_are_checked_against_their_schema(self):
        with pytest.raises(DataError, match="^retries: expected int for schema type int32"):
            Headers().add("retries", "3", Schema.INT32)
        with pytest.raises(DataError, match="header key must be a string"):
            Headers().add(1, "x")  # type: ignore[arg-type]
        Headers().add("anything", object())  # no schema, no check

    def test_header_helpers(self):
        header = Header("a", Schema.INT8, 1)
        assert header.rename("b") == Header("b", Schema.INT8, 1)
        assert header.with_value(Schema.STRING, "x") == Header("a", Schema.STRING, "x")


class TestRecords:
    def test_source_record(self):
        record = SourceRecord(
            source_partition={"file": "a.txt"},
            source_offset={"position": 10},
            topic="t",
            value_schema=Schema.STRING,
            value="line",
        )
        assert (record.kafka_partition, record.key, record.timestamp) == (None, None, None)
        assert isinstance(record.headers, Headers) and len(record.headers) == 0
        copy = record.new_record(topic="u", value="LINE")
        assert (copy.topic, copy.value, copy.source_partition, copy.source_offset) == ("u", "LINE", {"file": "a.txt"}, {"position": 10})
        assert isinstance(copy, SourceRecord)

    def test_sink_record_keeps_originals_through_transforms(self):
        record = SinkRecord(topic="orders", kafka_partition=3, kafka_offset=42, timestamp=1000, timestamp_type=TimestampType.CREATE_TIME)
        renamed = record.new_record(topic="orders-copy", kafka_partition=0)
        assert (renamed.topic, renamed.kafka_partition, renamed.kafka_offset) == ("orders-copy", 0, 42)
        assert (renamed.original_topic, renamed.original_kafka_partition, renamed.original_kafka_offset) == ("orders", 3, 42)
        assert renamed.timestamp_type is TimestampType.CREATE_TIME

    def test_new_record_copies_headers_unless_given(self):
        record = SinkRecord(topic="t", kafka_partition=0, kafka_offset=0, headers=[("a", None, 1)])
        copy = record.new_record(value=1)
        copy.headers.add("b", 2)
        assert len(record.headers) == 1 and len(copy.headers) == 2
        assert len(record.new_record(headers=Headers()).headers) == 0

    def test_new_record_only_changes_record_fields(self):
        record = SinkRecord(topic="t", kafka_partition=0, kafka_offset=0)
        with pytest.raises(TypeError, match="cannot change kafka_offset"):
            record.new_record(kafka_offset=5)

    def test_keyword_only_and_validated(self):
        with pytest.raises(TypeError):
            ConnectRecord("t")  # type: ignore[misc]
        with pytest.raises(DataError, match="Invalid record timestamp -2"):
            ConnectRecord(topic="t", timestamp=-2)

    def test_timestamp_minus_one_is_none(self):
        """Kafka's NO_TIMESTAMP: Kafka Connect produces such a record without a timestamp
        (ConnectUtils.checkAndConvertTimestamp), and a task ported from Java may give it."""
        assert SourceRecord(topic="t", timestamp=-1).timestamp is None
        assert SinkRecord(topic="t", kafka_offset=0).new_record(timestamp=-1).timestamp is None

    def test_equality_and_pickling(self):
        a = SinkRecord(topic="t", kafka_partition=0, kafka_offset=1, value="v", headers=Headers().add("h", 1))
        b = SinkRecord(topic="t", kafka_partition=0, kafka_offset=1, value="v", headers=Headers().add("h", 1))
        assert a == b and a != a.new_record(value="w")
        assert pickle.loads(pickle.dumps(a)) == a

    def test_slots_keep_records_small(self):
        record = SourceRecord(topic="t")
        with pytest.raises(AttributeError):
            record.extra = 1  # type: ignore[attr-defined]

    def test_timestamp_types(self):
        assert TimestampType.CREATE_TIME.display_name == "CreateTime"
        assert TimestampType.from_librdkafka(0) is TimestampType.NO_TIMESTAMP_TYPE
        assert TimestampType.from_librdkafka(2) is TimestampType.LOG_APPEND_TIME


class TestEmptyHeaders:
    def test_copies_of_empty_headers_are_independent(self):
        empty = Headers()
        copy = empty.copy()
        copy.add("a", 1)
        assert len(empty) == 0 and len(copy) == 1
        assert [h.key for h in empty.copy().add("b", 2)] == ["b"] and len(empty) == 0

    def test_emptied_headers_equal_new_ones(self):
        assert Headers().add("a", 1).remove("a") == Headers() == Headers().add("a", 1).clear()
        assert Headers().add("a", 1).clear().add("b", 2) == Headers().add("b", 2)
        assert Headers() != Headers().add("a", 1)

    def test_empty_headers_pickle_and_iterate(self):
        assert pickle.loads(pickle.dumps(Headers())) == Headers()
        assert list(Headers()) == [] and Headers().last_with_name("a") is None
        assert Headers().retain_latest().all_with_name("a") == []


def _records():
    headers = Headers().add("h", 1)
    yield ConnectRecord(topic="t", kafka_partition=1, key="k", value="v", timestamp=5)
    yield ConnectRecord(topic="t", headers=headers.copy())
    yield SourceRecord(topic="t", source_partition={"f": "a"}, source_offset={"p": 1}, value=1)
    yield SinkRecord(topic="t", kafka_partition=2, kafka_offset=7, timestamp=3, timestamp_type=TimestampType.CREATE_TIME)
    yield SinkRecord(topic="t", kafka_partition=None, kafka_offset=7, headers=headers.copy(), value_schema=Schema.STRING, value="x")


CHANGES = {
    "topic": "u",
    "kafka_partition": 9,
    "key_schema": Schema.INT32,
    "key": 4,
    "value_schema": None,
    "value": None,
    "timestamp": 11,
    "headers": Headers().add("n", 2),
}


def _as_before(record, **changes):
    """What new_record made before it had a fast way."""
    if "headers" not in changes:
        changes["headers"] = record.headers.copy()
    return dataclasses.replace(record, **changes)


class TestNewRecord:
    @pytest.mark.parametrize("names", [()] + [c for n in (1, 2, 3) for c in itertools.combinations(CHANGES, n)])
    def test_new_record_is_dataclasses_replace(self, names):
        for record in _records():
            changes = {name: CHANGES[name] for name in names}
            copy = record.new_record(**changes)
            expected = _as_before(record, **changes)
            assert type(copy) is type(expected) and copy == expected
            assert [getattr(copy, f.name) for f in dataclasses.fields(copy)] == [
                getattr(expected, f.name) for f in dataclasses.fields(expected)
            ]
            assert copy.headers is not record.headers
            if "headers" in changes:
                assert copy.headers is changes["headers"]

    def test_copied_headers_are_independent_even_when_empty(self):
        for record in _records():
            before = list(record.headers)
            record.new_record(value=1).headers.add("added", 1)
            assert list(record.headers) == before

    def test_a_copy_is_checked_like_a_new_record(self):
        record = SinkRecord(topic="t", kafka_partition=1, kafka_offset=2)
        record.timestamp = -3  # records are mutable; a copy is checked again
        with pytest.raises(DataError, match="Invalid record timestamp -3"):
            record.new_record(value=1)
        with pytest.raises(DataError, match="Invalid record timestamp -2"):
            SinkRecord(topic="t", kafka_offset=2).new_record(timestamp=-2)
        record = SinkRecord(topic="t", kafka_partition=1, kafka_offset=2)
        record.headers = [("a", None, 1)]  # type: ignore[assignment]
        assert record.new_record(value=1).headers == Headers().add("a", 1) == _as_before(record, value=1).headers
        assert isinstance(SinkRecord(topic="t", kafka_offset=0).new_record(headers=[("b", None, 2)]).headers, Headers)
        for unset in ("original_topic", "original_kafka_partition", "original_kafka_offset"):
            record = SinkRecord(topic="t", kafka_partition=1, kafka_offset=2)
            setattr(record, unset, None)
            copy = record.new_record(topic="u", kafka_partition=5)
            assert getattr(copy, unset) == {"original_topic": "u", "original_kafka_partition": 5}.get(unset, 2)
            assert copy == _as_before(record, topic="u", kafka_partition=5)

    def test_headers_of_a_headers_subclass_are_copied_by_its_copy(self):
        class Traced(Headers):
            __slots__ = ()

            def copy(self):
                duplicate = Traced()
                duplicate._items = list(self._items)
                return duplicate

        record = SinkRecord(topic="t", kafka_offset=0, headers=Traced().add("a", 1))
        copy = record.new_record(value=1)
        assert type(copy.headers) is Traced and copy.headers == record.headers and copy.headers is not record.headers

    def test_subclasses_get_dataclasses_replace(self):
        @dataclasses.dataclass(slots=True, kw_only=True)
        class Tracked(SinkRecord):
            hops: int = dataclasses.field(default=0, init=False)

        record = Tracked(topic="t", kafka_offset=1)
        record.hops = 3
        copy = record.new_record(value=2)
        assert type(copy) is Tracked and copy.hops == 0 and copy.value == 2  # replace() does not carry init=False fields
        with pytest.raises(TypeError, match="cannot change kafka_offset"):
            record.new_record(kafka_offset=5)

    def test_only_keywords_and_known_names(self):
        record = SourceRecord(topic="t")
        with pytest.raises(TypeError):
            record.new_record("u")  # type: ignore[misc]
        with pytest.raises(TypeError, match="new_record\\(\\) cannot change offset, source_offset"):
            record.new_record(value=1, source_offset={}, offset=1)
        assert "A copy with changes" in (SinkRecord.new_record.__doc__ or "")


def test_a_source_record_batch_is_the_sequence_of_its_records():
    from connectd.data.records import SourceRecordBatch

    batch = SourceRecordBatch("t", ["a", "b", "c"], [{"p": 1}, {"p": 2}, {"p": 3}], keys=[b"x", None, b"z"],
                              source_partition={"f": "x"}, value_schema=Schema.STRING, kafka_partition=2,
                              timestamp=-1)
    records = [SourceRecord(topic="t", kafka_partition=2, key=k, value_schema=Schema.STRING, value=v,
                            source_partition={"f": "x"}, source_offset={"p": p})
               for k, v, p in ((b"x", "a", 1), (None, "b", 2), (b"z", "c", 3))]
    assert len(batch) == 3 and list(batch) == records and batch == records
    assert batch[-1] == records[2] and batch[1:] == records[1:] and batch.timestamp is None  # -1: none
    assert batch[0] is not batch[0]  # made when read: changing one changes nothing in the batch
    assert "records=3" in repr(batch)


@pytest.mark.parametrize(("columns", "message"), [
    ({"values": ["a", "b"], "source_offsets": [{}]}, "2 values, 1 offsets"),
    ({"values": ["a"], "source_offsets": [{}], "keys": []}, "1 values, 1 offsets, 0 keys"),
    ({"values": ["a"], "source_offsets": [{}], "timestamp": -5}, "Invalid record timestamp -5"),
])
def test_a_source_record_batch_refuses_columns_of_other_lengths_and_a_negative_timestamp(columns, message):
    from connectd.data.records import SourceRecordBatch

    with pytest.raises(DataError, match=message):
        SourceRecordBatch("t", **columns)
