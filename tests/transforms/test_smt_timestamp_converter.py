"""TimestampConverter between string, unix, Date, Time and Timestamp, both ways, with and without schemas."""

from __future__ import annotations

import datetime

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, SourceRecord, Struct
from connectd.data.logical import Date, Time, Timestamp
from connectd.errors import ConfigError
from connectd.transforms import TimestampConverterKey, TimestampConverterValue

UTC = datetime.timezone.utc
FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"
MOMENT = datetime.datetime(2024, 5, 7, 13, 5, 9, 42000, tzinfo=UTC)
MIDNIGHT = MOMENT.replace(hour=0, minute=0, second=0, microsecond=0)
TIME_ONLY = datetime.datetime(1970, 1, 1, 13, 5, 9, 42000, tzinfo=UTC)


def millis(moment):
    return int(moment.timestamp() * 1000)


def representations(moment):
    """The moment in each target type, as the converter produces it."""
    return {
        "string": moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z",
        "unix": millis(moment),
        "Date": moment.date(),
        "Time": moment.time(),
        "Timestamp": moment,
    }


SCHEMAS = {
    "string": Schema.STRING,
    "unix": Schema.INT64,
    "Date": Date.SCHEMA,
    "Time": Time.SCHEMA,
    "Timestamp": Timestamp.SCHEMA,
}
# What each source type can carry of MOMENT: Date keeps the day, Time the time of day.
SOURCES = {
    "string": (representations(MOMENT)["string"], MOMENT),
    "unix": (millis(MOMENT), MOMENT),
    "Timestamp": (MOMENT, MOMENT),
    "Date": (MOMENT.date(), MIDNIGHT),
    "Time": (MOMENT.time(), TIME_ONLY),
}
TYPES = list(SCHEMAS)


def converter(cls=TimestampConverterValue, **config):
    config.setdefault("format", FORMAT)
    transform = cls()
    transform.configure(config)
    return transform


@pytest.mark.parametrize("source", TYPES)
@pytest.mark.parametrize("target", TYPES)
def test_whole_value_with_schema(source, target):
    value, meaning = SOURCES[source]
    out = converter(**{"target.type": target}).apply(SourceRecord(topic="t", value_schema=SCHEMAS[source], value=value))
    assert out.value_schema == SCHEMAS[target]
    assert out.value == representations(meaning)[target]
    out.value_schema.validate_value(out.value)


@pytest.mark.parametrize("source", TYPES)
@pytest.mark.parametrize("target", TYPES)
def test_whole_value_without_schema(source, target):
    value, meaning = SOURCES[source]
    out = converter(**{"target.type": target}).apply(SourceRecord(topic="t", value=value))
    assert out.value_schema is None
    assert out.value == representations(meaning)[target]


@pytest.mark.parametrize("target", TYPES)
def test_field_with_schema_keeps_the_other_fields(target):
    schema = (SchemaBuilder.struct().name("Event").field("id", Schema.INT32)
              .field("at", SchemaBuilder.int64().optional().build()).build())
    record = SourceRecord(topic="t", value_schema=schema, value=Struct(schema, {"id": 1, "at": millis(MOMENT)}))
    out = converter(field="at", **{"target.type": target}).apply(record)
    assert out.value_schema.name == "Event"
    assert out.value_schema.field("id").schema == Schema.INT32
    at_schema = out.value_schema.field("at").schema
    assert at_schema.optional and at_schema.type is SCHEMAS[target].type and at_schema.name == SCHEMAS[target].name
    assert out.value.get("at") == representations(MOMENT)[target]
    assert out.value.get("id") == 1
    out.value.validate()


def test_field_without_schema_and_key_side():
    record = SourceRecord(topic="t", key={"at": "2024-05-07T13:05:09.042Z", "id": 1}, value="v")
    out = converter(TimestampConverterKey, field="at", **{"target.type": "unix"}).apply(record)
    assert out.key == {"at": millis(MOMENT), "id": 1}
    assert out.value == "v"


def test_null_values():
    transform = converter(field="at", **{"target.type": "Timestamp"})
    assert transform.apply(SourceRecord(topic="t", value={"at": None})).value == {"at": None}
    assert transform.apply(SourceRecord(topic="t", value=None)).value is None
    schema = SchemaBuilder.struct().field("at", Schema.OPTIONAL_INT64).optional().build()
    out = transform.apply(SourceRecord(topic="t", value_schema=schema, value=None))
    assert out.value is None and out.value_schema.field("at").schema.name == Timestamp.LOGICAL_NAME
    whole = converter(**{"target.type": "Date"}).apply(SourceRecord(topic="t", value_schema=Schema.OPTIONAL_INT64, value=None))
    assert whole.value is None and whole.value_schema == Date.builder().optional().build()


@pytest.mark.parametrize(
    "precision, number",
    [("seconds", 1715087109), ("milliseconds", 1715087109042), ("microseconds", 1715087109042000),
     ("nanoseconds", 1715087109042000000)],
)
def test_unix_precision_both_ways(precision, number):
    to_unix = converter(**{"target.type": "unix", "unix.precision": precision})
    assert to_unix.apply(SourceRecord(topic="t", value=MOMENT)).value == number
    from_unix = converter(**{"target.type": "Timestamp", "unix.precision": precision})
    expected = MOMENT.replace(microsecond=0) if precision == "seconds" else MOMENT
    assert from_unix.apply(SourceRecord(topic="t", value=number)).value == expected


def test_sub_millisecond_precision_is_truncated_toward_zero():
    transform = converter(**{"target.type": "unix", "unix.precision": "seconds"})
    before_epoch = datetime.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC)
    assert transform.apply(SourceRecord(topic="t", value=before_epoch)).value == -1
    micros = converter(**{"target.type": "Timestamp", "unix.precision": "microseconds"})
    assert micros.apply(SourceRecord(topic="t", value=1999)).value == datetime.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC)


def test_struct_default_is_converted():
    plain = SchemaBuilder.struct().field("at", Schema.INT64).optional().build()
    schema = SchemaBuilder.struct().field("at", Schema.INT64).optional().default_value(Struct(plain, {"at": 0})).build()
    out = converter(field="at", **{"target.type": "Date"}).apply(
        SourceRecord(topic="t", value_schema=schema, value=Struct(schema, {"at": millis(MOMENT)})))
    assert out.value_schema.default_value.get("at") == datetime.date(1970, 1, 1)
    assert out.value.get("at") == MOMENT.date()


def test_data_errors():
    transform = converter(**{"target.type": "unix"})
    with pytest.raises(DataError, match=r"Could not parse timestamp: value \(May 7\) does not match pattern"):
        transform.apply(SourceRecord(topic="t", value="May 7"))
    with pytest.raises(DataError, match="TimestampConverter does not support float objects as timestamps"):
        transform.apply(SourceRecord(topic="t", value=1.5))
    with pytest.raises(DataError, match="does not correspond to a known timestamp type format"):
        transform.apply(SourceRecord(topic="t", value_schema=Schema.INT32, value=1))
    with pytest.raises(DataError, match=r"Only Map objects supported in absence of schema for \[converting timestamp formats\]"):
        converter(field="at", **{"target.type": "unix"}).apply(SourceRecord(topic="t", value=[1]))
    no_format = TimestampConverterValue()
    no_format.configure({"target.type": "unix"})
    with pytest.raises(DataError, match="needs the format setting"):
        no_format.apply(SourceRecord(topic="t", value="2024-05-07"))


def test_config_problems_all_at_once():
    transform = TimestampConverterValue()
    with pytest.raises(ConfigError) as caught:
        transform.configure({"target.type": "string", "unix.precision": "days"})
    assert str(caught.value).splitlines() == [
        "unix.precision='days': expected one of [nanoseconds, microseconds, milliseconds, seconds]",
        "format is required when target.type=string (a SimpleDateFormat pattern)",
    ]
    with pytest.raises(ConfigError) as caught:
        transform.configure({"target.type": "date", "format": "yyyy-qq"})
    assert str(caught.value).splitlines() == [
        "target.type='date': expected one of [string, unix, Date, Time, Timestamp]",
        "format='yyyy-qq': expected a SimpleDateFormat pattern, but 'q' is not a pattern letter (quote literal text with '...')",
    ]
