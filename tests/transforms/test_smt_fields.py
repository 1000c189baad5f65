"""ExtractField, HoistField, InsertField, ReplaceField, MaskField, ValueToKey, SetSchemaMetadata."""

from __future__ import annotations

import datetime
import decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectd.data import DataError, Schema, SchemaBuilder, SinkRecord, SourceRecord, Struct
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.errors import ConfigError
from connectd.transforms import (
    ExtractFieldKey,
    ExtractFieldValue,
    HoistFieldKey,
    HoistFieldValue,
    InsertFieldKey,
    InsertFieldValue,
    MaskFieldKey,
    MaskFieldValue,
    ReplaceFieldKey,
    ReplaceFieldValue,
    SetSchemaMetadataKey,
    SetSchemaMetadataValue,
    ValueToKey,
)

from ._support import configured

UTC = datetime.timezone.utc

ADDRESS = SchemaBuilder.struct().name("Address").field("city", Schema.STRING).field("zip", Schema.OPTIONAL_STRING).build()
PERSON = (
    SchemaBuilder.struct().name("Person").version(2).doc("a person")
    .field("id", Schema.INT64)
    .field("name", Schema.STRING)
    .field("age", SchemaBuilder.int32().optional().default_value(18).build())
    .field("address", SchemaBuilder.struct().name("Address").field("city", Schema.STRING)
           .field("zip", Schema.OPTIONAL_STRING).optional().build())
    .build()
)


def person(**overrides):
    values = {"id": 1, "name": "Ada", "age": 36,
              "address": Struct(PERSON.field("address").schema, {"city": "London", "zip": "N1"})}
    values.update(overrides)
    return Struct(PERSON, values)


def on_value(schema, value, **extra):
    return SinkRecord(topic="people", kafka_partition=3, kafka_offset=99, timestamp=1_700_000_000_123,
                      value_schema=schema, value=value, **extra)


def on_key(schema, key):
    return SinkRecord(topic="people", kafka_partition=3, kafka_offset=99, key_schema=schema, key=key,
                      value_schema=Schema.STRING, value="v")


# --- ExtractField ------------------------------------------------------------------------


def test_extract_field_with_schema():
    out = configured(ExtractFieldValue, field="name").apply(on_value(PERSON, person()))
    assert out.value == "Ada" and out.value_schema == Schema.STRING


def test_extract_field_key_without_schema():
    out = configured(ExtractFieldKey, field="id").apply(on_key(None, {"id": 7, "x": 1}))
    assert out.key == 7 and out.key_schema is None and out.value == "v"


def test_extract_field_passes_nulls_through():
    out = configured(ExtractFieldValue, field="name").apply(on_value(PERSON, None))
    assert out.value is None and out.value_schema == Schema.STRING
    assert configured(ExtractFieldValue, field="name").apply(on_value(None, None)).value is None


def test_extract_missing_field():
    assert configured(ExtractFieldValue, field="nope").apply(on_value(None, {"a": 1})).value is None
    with pytest.raises(DataError, match="Unknown field: nope"):
        configured(ExtractFieldValue, field="nope").apply(on_value(PERSON, person()))


def test_extract_field_requires_struct_or_map():
    with pytest.raises(DataError, match=r"Only Struct objects supported for \[field extraction\], found: str"):
        configured(ExtractFieldValue, field="a").apply(on_value(PERSON, "x"))
    with pytest.raises(DataError, match=r"Only Map objects supported in absence of schema for \[field extraction\], found: int"):
        configured(ExtractFieldValue, field="a").apply(on_value(None, 5))


def test_extract_field_default_and_replace_null_with_default():
    record = on_value(PERSON, person(age=None))
    assert configured(ExtractFieldValue, field="age").apply(record).value == 18
    kept = configured(ExtractFieldValue, field="age", **{"replace.null.with.default": "false"}).apply(record)
    assert kept.value is None


def test_extract_nested_field_with_syntax_v2():
    transform = configured(ExtractFieldValue, field="address.city", **{"field.syntax.version": "v2"})
    out = transform.apply(on_value(PERSON, person()))
    assert out.value == "London" and out.value_schema == Schema.STRING
    assert transform.apply(on_value(None, {"address": {"city": "Paris"}})).value == "Paris"
    # V1 takes the dotted name literally.
    literal = configured(ExtractFieldValue, field="address.city")
    assert literal.apply(on_value(None, {"address.city": "Rome"})).value == "Rome"


def test_backticks_wrap_names_with_dots():
    transform = configured(ExtractFieldValue, field="`a.b`.c", **{"field.syntax.version": "V2"})
    assert transform.path.steps == ("a.b", "c")
    assert transform.apply(on_value(None, {"a.b": {"c": 3}})).value == 3


def test_unclosed_backtick_is_a_config_problem():
    with pytest.raises(ConfigError, match=r"field='`a.b': expected backticks in pairs"):
        configured(ExtractFieldValue, field="`a.b", **{"field.syntax.version": "V2"})


def test_bad_syntax_version():
    with pytest.raises(ConfigError, match=r"field.syntax.version='V3': expected one of \[V1, V2\]"):
        configured(ExtractFieldValue, field="a", **{"field.syntax.version": "V3"})


# --- HoistField --------------------------------------------------------------------------


def test_hoist_with_schema():
    out = configured(HoistFieldValue, field="wrapped").apply(on_value(PERSON, person()))
    assert out.value_schema.field("wrapped").schema == PERSON
    assert out.value.get("wrapped") == person()


def test_hoist_key_without_schema():
    out = configured(HoistFieldKey, field="k").apply(on_key(None, 42))
    assert out.key == {"k": 42} and out.key_schema is None


def test_hoist_null_needs_an_optional_schema():
    out = configured(HoistFieldKey, field="k").apply(on_key(Schema.OPTIONAL_INT32, None))
    assert out.key.get("k") is None
    with pytest.raises(DataError, match="null used for required field"):
        configured(HoistFieldKey, field="k").apply(on_key(Schema.INT32, None))


def test_hoist_field_is_required():
    with pytest.raises(ConfigError, match=r"field is required \(name of the single field"):
        configured(HoistFieldValue)


# --- InsertField ------------------------------------------------------------------------

INSERT_ALL = {
    "topic.field": "topic!",
    "partition.field": "partition",
    "offset.field": "offset?",
    "timestamp.field": "ts",
    "static.field": "source",
    "static.value": "crm",
}


def test_insert_fields_with_schema():
    out = configured(InsertFieldValue, **INSERT_ALL).apply(on_value(PERSON, person()))
    schema = out.value_schema
    assert schema.name == "Person" and schema.version == 2 and schema.doc == "a person"
    assert schema.field("topic").schema == Schema.STRING
    assert schema.field("partition").schema == Schema.OPTIONAL_INT32
    assert schema.field("offset").schema == Schema.OPTIONAL_INT64
    assert schema.field("ts").schema == Timestamp.builder().optional().build()
    assert schema.field("source").schema == Schema.OPTIONAL_STRING
    value = out.value
    assert (value.get("topic"), value.get("partition"), value.get("offset"), value.get("source")) == ("people", 3, 99, "crm")
    assert value.get("ts") == datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert value.get("name") == "Ada"
    value.validate()


def test_insert_fields_key_without_schema():
    out = configured(InsertFieldKey, **INSERT_ALL).apply(on_key(None, {"id": 1}))
    assert out.key == {"id": 1, "topic": "people", "partition": 3, "offset": 99, "source": "crm"}


def test_insert_timestamp_without_schema_is_epoch_millis():
    out = configured(InsertFieldValue, **{"timestamp.field": "ts"}).apply(on_value(None, {}))
    assert out.value == {"ts": 1_700_000_000_123}


def test_insert_skips_missing_partition_and_timestamp():
    record = SourceRecord(topic="t", value={"a": 1})
    out = configured(InsertFieldValue, **{"partition.field": "p", "timestamp.field": "ts", "topic.field": "t"}).apply(record)
    assert out.value == {"a": 1, "t": "t"}


def test_insert_offset_needs_a_sink_record():
    with pytest.raises(DataError, match=r"Only SinkRecord supported for \[field insertion\], found: SourceRecord"):
        configured(InsertFieldValue, **{"offset.field": "o"}).apply(SourceRecord(topic="t", value={}))


def test_insert_leaves_tombstones_alone():
    record = on_value(PERSON, None)
    assert configured(InsertFieldValue, **{"topic.field": "t"}).apply(record) is record


def test_insert_keeps_nulls_or_defaults():
    record = on_value(PERSON, person(age=None))
    assert configured(InsertFieldValue, **{"topic.field": "t"}).apply(record).value.get_without_default("age") == 18
    kept = configured(InsertFieldValue, **{"topic.field": "t", "replace.null.with.default": False}).apply(record)
    assert kept.value.get_without_default("age") is None


def test_insert_config_problems_all_at_once():
    with pytest.raises(ConfigError) as caught:
        configured(InsertFieldValue, **{"replace.null.with.default": "x"})
    lines = str(caught.value).splitlines()
    assert lines == [
        "replace.null.with.default='x': expected true or false",
        "expected at least one of topic.field, partition.field, offset.field, timestamp.field, static.field "
        "(no field insertion is configured)",
    ]


def test_insert_static_field_needs_a_value():
    with pytest.raises(ConfigError, match="static.value is required when static.field is set"):
        configured(InsertFieldValue, **{"static.field": "s"})


def test_insert_requires_struct_or_map():
    with pytest.raises(DataError, match=r"Only Map objects supported in absence of schema for \[field insertion\]"):
        configured(InsertFieldValue, **{"topic.field": "t"}).apply(on_value(None, "text"))


# --- ReplaceField -----------------------------------------------------------------------


def test_replace_with_schema_excludes_includes_and_renames():
    transform = configured(ReplaceFieldValue, include="id,name,age", exclude="age", renames="name:full_name,id:key")
    out = transform.apply(on_value(PERSON, person()))
    assert [f.name for f in out.value_schema.fields] == ["key", "full_name"]
    assert out.value_schema.name == "Person"
    assert out.value.get("key") == 1 and out.value.get("full_name") == "Ada"


def test_replace_key_without_schema():
    out = configured(ReplaceFieldKey, exclude="b", renames="a:x").apply(on_key(None, {"a": 1, "b": 2, "c": 3}))
    assert out.key == {"x": 1, "c": 3}


def test_deprecated_blacklist_and_whitelist():
    transform = configured(ReplaceFieldValue, blacklist="b", whitelist="a,b")
    assert transform.apply(on_value(None, {"a": 1, "b": 2, "c": 3})).value == {"a": 1}
    assert [w.key for w in transform.config_warnings] == ["blacklist", "whitelist"]
    assert "use exclude instead" in str(transform.config_warnings[0])
    both = configured(ReplaceFieldValue, blacklist="a", exclude="b")
    assert both.apply(on_value(None, {"a": 1, "b": 2})).value == {"a": 1}
    assert "ignored because exclude is also set" in str(both.config_warnings[0])


def test_replace_renames_must_be_pairs():
    with pytest.raises(ConfigError, match=r"renames='a:b,c': expected old:new pairs, got 'c'"):
        configured(ReplaceFieldValue, renames="a:b,c")


def test_replace_keeps_nulls_with_replace_null_with_default_false():
    record = on_value(PERSON, person(age=None))
    assert configured(ReplaceFieldValue, include="age").apply(record).value.get_without_default("age") == 18
    kept = configured(ReplaceFieldValue, include="age", **{"replace.null.with.default": "false"}).apply(record)
    assert kept.value.get_without_default("age") is None


def test_replace_leaves_tombstones_alone():
    record = on_value(None, None)
    assert configured(ReplaceFieldValue, exclude="a").apply(record) is record


# --- MaskField --------------------------------------------------------------------------

MASKABLE = (
    SchemaBuilder.struct()
    .field("i8", Schema.INT8).field("i64", Schema.INT64).field("f32", Schema.FLOAT32).field("f64", Schema.FLOAT64)
    .field("b", Schema.BOOLEAN).field("s", Schema.STRING).field("arr", SchemaBuilder.array(Schema.INT32).build())
    .field("map", SchemaBuilder.map(Schema.STRING, Schema.INT32).build())
    .field("dec", Decimal.schema(2)).field("date", Date.SCHEMA).field("time", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
    .field("none", Schema.OPTIONAL_STRING).field("kept", Schema.STRING)
    .build()
)
MASKED_NAMES = "i8,i64,f32,f64,b,s,arr,map,dec,date,time,ts,none"


def maskable():
    moment = datetime.datetime(2024, 5, 7, 1, 2, 3, tzinfo=UTC)
    return Struct(MASKABLE, {
        "i8": 5, "i64": 6, "f32": 1.5, "f64": 2.5, "b": True, "s": "secret", "arr": [1, 2], "map": {"a": 1},
        "dec": decimal.Decimal("9.99"), "date": moment.date(), "time": datetime.time(1, 2, 3), "ts": moment,
        "none": None, "kept": "visible",
    })


def test_mask_with_schema_uses_empty_values_of_each_type():
    out = configured(MaskFieldValue, fields=MASKED_NAMES).apply(on_value(MASKABLE, maskable()))
    value = out.value
    assert out.value_schema is MASKABLE
    assert [value.get(n) for n in ("i8", "i64", "f32", "f64", "b", "s", "arr", "map")] == [0, 0, 0.0, 0.0, False, "", [], {}]
    assert value.get("dec") == decimal.Decimal("0.00") and value.get("dec").as_tuple().exponent == -2
    assert value.get("date") == datetime.date(1970, 1, 1)
    assert value.get("time") == datetime.time(0)
    assert value.get("ts") == datetime.datetime(1970, 1, 1, tzinfo=UTC)
    assert value.get("none") is None and value.get("kept") == "visible"
    Decimal.from_logical(Decimal.schema(2), value.get("dec"))  # still serializable


def test_mask_with_replacement():
    transform = configured(MaskFieldValue, fields="i8,i64,f64,s,dec", replacement="12")
    value = transform.apply(on_value(MASKABLE, maskable())).value
    assert [value.get(n) for n in ("i8", "i64", "f64", "s")] == [12, 12, 12.0, "12"]
    assert value.get("dec") == decimal.Decimal("12.00")


def test_mask_replacement_errors():
    with pytest.raises(DataError, match="Cannot mask value of type boolean with custom replacement"):
        configured(MaskFieldValue, fields="b", replacement="1").apply(on_value(MASKABLE, maskable()))
    with pytest.raises(DataError, match=r"Unable to convert abc \(str\) to number"):
        configured(MaskFieldValue, fields="i8", replacement="abc").apply(on_value(MASKABLE, maskable()))
    # Out of range wraps, as Java's (byte) 1000 does in Kafka's Values.convertToByte.
    wrapped = configured(MaskFieldValue, fields="i8", replacement="1000").apply(on_value(MASKABLE, maskable()))
    assert wrapped.value.get("i8") == -24


def test_mask_key_without_schema():
    key = {"n": 5, "f": 1.5, "s": "x", "b": True, "l": [1], "m": {"a": 1}, "d": decimal.Decimal("1.5"), "other": 1}
    out = configured(MaskFieldKey, fields="n,f,s,b,l,m,d,absent").apply(on_key(None, key))
    assert out.key == {"n": 0, "f": 0.0, "s": "", "b": False, "l": [], "m": {}, "d": decimal.Decimal(0), "other": 1,
                       "absent": None}
    replaced = configured(MaskFieldKey, fields="n,s", replacement="7").apply(on_key(None, key))
    assert replaced.key["n"] == 7 and replaced.key["s"] == "7"


def test_mask_bytes_is_not_supported_as_in_kafka():
    schema = SchemaBuilder.struct().field("raw", Schema.BYTES).build()
    with pytest.raises(DataError, match="Cannot mask value of type: bytes"):
        configured(MaskFieldValue, fields="raw").apply(on_value(schema, Struct(schema, {"raw": b"x"})))


def test_mask_config_problems():
    with pytest.raises(ConfigError) as caught:
        configured(MaskFieldValue, fields="", replacement="")
    assert str(caught.value).splitlines() == [
        "fields='': expected a non-empty list",
        "replacement='': expected a non-empty string",
    ]


# --- ValueToKey -------------------------------------------------------------------------


def test_value_to_key_with_schema():
    out = configured(ValueToKey, fields="id,name").apply(on_value(PERSON, person()))
    assert out.key_schema == SchemaBuilder.struct().field("id", Schema.INT64).field("name", Schema.STRING).build()
    assert out.key.get("id") == 1 and out.key.get("name") == "Ada"
    assert out.value == person()


def test_value_to_key_without_schema():
    out = configured(ValueToKey, fields="a,missing").apply(on_value(None, {"a": 1, "b": 2}))
    assert out.key == {"a": 1, "missing": None} and out.key_schema is None


def test_value_to_key_missing_field_with_schema():
    with pytest.raises(DataError, match="Field does not exist: nope"):
        configured(ValueToKey, fields="nope").apply(on_value(PERSON, person()))


def test_value_to_key_fields_must_be_unique_and_present():
    with pytest.raises(ConfigError, match=r"fields='a,a': expected each name once, got a more than once"):
        configured(ValueToKey, fields="a,a")
    with pytest.raises(ConfigError, match=r"fields is required"):
        configured(ValueToKey)


def test_value_to_key_replace_null_with_default():
    record = on_value(PERSON, person(age=None))
    assert configured(ValueToKey, fields="age").apply(record).key.get("age") == 18
    kept = configured(ValueToKey, fields="age", **{"replace.null.with.default": "false"}).apply(record)
    assert kept.key.get_without_default("age") is None


# --- SetSchemaMetadata ------------------------------------------------------------------


def test_set_schema_metadata_on_a_struct_value():
    out = configured(SetSchemaMetadataValue, **{"schema.name": "com.example.Person", "schema.version": "7"}).apply(
        on_value(PERSON, person()))
    assert out.value_schema.name == "com.example.Person" and out.value_schema.version == 7
    assert out.value_schema.doc == "a person"
    assert out.value.schema is out.value_schema
    assert out.value.get("name") == "Ada"
    out.value.validate()


def test_set_schema_metadata_on_a_primitive_key():
    out = configured(SetSchemaMetadataKey, **{"schema.version": 3}).apply(on_key(Schema.STRING, "k"))
    assert out.key_schema.version == 3 and out.key_schema.name is None and out.key == "k"


def test_set_schema_metadata_keeps_a_struct_default():
    plain = SchemaBuilder.struct().field("a", Schema.INT32).optional().build()
    schema = SchemaBuilder.struct().field("a", Schema.INT32).optional().default_value(Struct(plain, {"a": 1})).build()
    out = configured(SetSchemaMetadataValue, **{"schema.name": "n"}).apply(on_value(schema, None))
    assert out.value_schema.name == "n" and out.value_schema.default_value.get("a") == 1


def test_set_schema_metadata_needs_a_schema():
    with pytest.raises(DataError, match=r"Schema required for \[updating schema metadata\]"):
        configured(SetSchemaMetadataValue, **{"schema.name": "n"}).apply(on_value(None, {"a": 1}))
    record = on_value(None, None)
    assert configured(SetSchemaMetadataValue, **{"schema.name": "n"}).apply(record) is record


def test_set_schema_metadata_config_problems():
    with pytest.raises(ConfigError, match=r"expected schema.name, schema.version or both"):
        configured(SetSchemaMetadataValue)
    with pytest.raises(ConfigError, match=r"schema.version='v2': expected a 32-bit integer"):
        configured(SetSchemaMetadataValue, **{"schema.version": "v2"})


# --- the fast paths of InsertField and ReplaceField --------------------------------------
# Each builds the new struct from one list of values checked at once; the reference is the
# step-by-step path (put per field), which is what apply did before.

FIELD_POOL = {
    "id": Schema.INT64,
    "name": Schema.STRING,
    "nick": Schema.OPTIONAL_STRING,
    "age": SchemaBuilder.int32().optional().default_value(18).build(),
    "score": Schema.FLOAT64,
    "ok": SchemaBuilder.boolean().optional().build(),
    "tags": SchemaBuilder.array(Schema.STRING).build(),
    "address": PERSON.field("address").schema,
    "seen": Timestamp.builder().optional().build(),
    "price": Decimal.schema(2),
    "level": SchemaBuilder.int8().default_value(1).build(),
}
GOOD = {
    "id": st.integers(-(2**63), 2**63 - 1),
    "name": st.text(max_size=5),
    "nick": st.none() | st.text(max_size=5),
    "age": st.none() | st.integers(-(2**31), 2**31 - 1),
    "score": st.floats(),
    "ok": st.none() | st.booleans(),
    "tags": st.lists(st.text(max_size=3), max_size=3),
    "address": st.none() | st.builds(lambda c: Struct(PERSON.field("address").schema, {"city": c}), st.text(max_size=3)),
    "seen": st.none() | st.datetimes(timezones=st.just(UTC)),
    "price": st.decimals(allow_nan=False, allow_infinity=False, places=2),
    "level": st.none() | st.integers(-128, 127),
}
JUNK = st.none() | st.booleans() | st.integers() | st.text(max_size=3) | st.lists(st.integers(), max_size=2) | st.just(
    Struct(ADDRESS, {"city": "x"})
)
NAMES = [*FIELD_POOL, "topic", "t", "missing"]


@st.composite
def struct_records(draw):
    names = draw(st.lists(st.sampled_from(list(FIELD_POOL)), max_size=6, unique=True))
    builder = SchemaBuilder.struct().name("Rec")
    for name in names:
        builder.field(name, FIELD_POOL[name])
    schema = builder.build()
    chosen = [draw(st.one_of(GOOD[name], GOOD[name], GOOD[name], JUNK)) for name in names]
    value = Struct._unchecked(schema, chosen if draw(st.booleans()) else tuple(chosen))
    if draw(st.integers(0, 9)) == 0:
        schema, value = (None, {"a": 1}) if draw(st.booleans()) else (schema, None)
    common = dict(
        topic=draw(st.sampled_from(["people", "t"])),
        kafka_partition=draw(st.none() | st.integers(0, 5)),
        timestamp=draw(st.none() | st.integers(0, 2**40)),
    )
    on_key_side = draw(st.booleans())
    placed = dict(key_schema=schema, key=value) if on_key_side else dict(value_schema=schema, value=value)
    if draw(st.booleans()):
        return on_key_side, SinkRecord(kafka_offset=draw(st.integers(0, 100)), **common, **placed)
    return on_key_side, SourceRecord(**common, **placed)


def _outcome(call):
    try:
        return "ok", call()
    except DataError as exc:
        return "error", f"{type(exc).__name__}: {exc}"


def _same_record(a, b) -> bool:
    if type(a) is not type(b) or a != b:
        return False
    for attr in ("key", "value"):
        x, y = getattr(a, attr), getattr(b, attr)
        if isinstance(x, Struct) and (
            [type(v) for v in x.field_values(defaults=False)] != [type(v) for v in y.field_values(defaults=False)]
        ):
            return False
    return True


def _assert_as_step_by_step(cls_pair, config, case):
    on_key_side, record = case
    cls = cls_pair[0] if on_key_side else cls_pair[1]
    fast, reference = configured(cls, **config), configured(cls, **config)
    for _ in range(2):  # the second time, from the cached plan
        got, expected = _outcome(lambda: fast.apply(record)), _outcome(lambda: reference._apply_step_by_step(record))
        assert got[0] == expected[0], (got, expected)
        assert _same_record(got[1], expected[1]) if got[0] == "ok" else got[1] == expected[1]


FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SPEC = st.sampled_from(["", "!", "?"])


@FAST
@given(
    struct_records(),
    st.fixed_dictionaries({}, optional={
        "topic.field": st.sampled_from(NAMES).flatmap(lambda n: SPEC.map(lambda s: n + s)),
        "partition.field": st.sampled_from(["p", "age", "t"]).flatmap(lambda n: SPEC.map(lambda s: n + s)),
        "offset.field": st.sampled_from(["o", "id"]).flatmap(lambda n: SPEC.map(lambda s: n + s)),
        "timestamp.field": st.sampled_from(["ts", "seen"]).flatmap(lambda n: SPEC.map(lambda s: n + s)),
        "static.field": st.sampled_from(["s", "nick", "o"]).flatmap(lambda n: SPEC.map(lambda s: n + s)),
        "static.value": st.sampled_from(["crm", "x"]),
        "replace.null.with.default": st.booleans(),
    }).filter(lambda c: any(k in c for k in ("topic.field", "partition.field", "offset.field", "timestamp.field", "static.field"))
              and ("static.field" not in c or "static.value" in c)),
)
def test_insert_field_gives_what_step_by_step_gives(case, config):
    _assert_as_step_by_step((InsertFieldKey, InsertFieldValue), config, case)


@FAST
@given(
    struct_records(),
    st.fixed_dictionaries({}, optional={
        "exclude": st.lists(st.sampled_from(NAMES), max_size=3).map(",".join),
        "include": st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map(",".join),
        "renames": st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)), max_size=3).map(
            lambda pairs: ",".join(f"{a}:{b}" for a, b in pairs)
        ),
        "replace.null.with.default": st.booleans(),
    }),
)
def test_replace_field_gives_what_step_by_step_gives(case, config):
    _assert_as_step_by_step((ReplaceFieldKey, ReplaceFieldValue), config, case)


def test_replace_renaming_onto_a_kept_field_reads_the_old_name_as_kafka_does():
    schema = SchemaBuilder.struct().field("b", Schema.STRING).build()
    transform = configured(ReplaceFieldValue, renames="a:b")
    with pytest.raises(DataError, match="a is not a valid field name"):
        transform.apply(on_value(schema, Struct(schema, {"b": "x"})))


def test_insert_into_an_invalid_struct_fails_as_before():
    broken = Struct(PERSON)  # required id and name unset
    with pytest.raises(DataError, match="^id: null used for required field"):
        configured(InsertFieldValue, **{"topic.field": "t"}).apply(on_value(PERSON, broken))
    with pytest.raises(DataError, match="^id: null used for required field"):
        configured(ReplaceFieldValue, exclude="age").apply(on_value(PERSON, broken))


def test_a_new_schema_after_close_is_derived_again():
    transform = configured(ReplaceFieldValue, exclude="age")
    first = transform.apply(on_value(PERSON, person()))
    transform.close()
    second = transform.apply(on_value(PERSON, person()))
    assert first == second and first.value_schema == second.value_schema
    assert len(transform.schema_cache) == 1
