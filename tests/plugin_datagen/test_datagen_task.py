"""Datagen task: quickstart schemas and keys, iterations across polls and restarts, seeds, pacing, batches, config."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from connectd_datagen.connector import DatagenConnector
from connectd_datagen.task import DatagenTask

from connectd import ConfigError, OffsetStorageReader, Schema, SourceTaskContext, Struct

TIME_FIELDS = {"users": "registertime", "pageviews": "viewtime", "orders": "ordertime"}


def datagen_task(stored: dict | None = None, **config: str) -> DatagenTask:
    settings = {"kafka.topic": "demo", "max.interval": "0", "task.id": "0", **config}
    if not any(settings.get(k) for k in ("quickstart", "schema.string", "schema.filename")):
        settings["quickstart"] = "users"

    def lookup(partitions):
        return {json.dumps(p, sort_keys=True, separators=(",", ":")): stored for p in partitions if stored is not None}

    task = DatagenTask()
    task.context = SourceTaskContext(settings, OffsetStorageReader(lookup))
    task.start(settings)
    return task


def poll_until(task: DatagenTask, count: int, deadline_s: float = 3.0) -> list:
    records: list = []
    deadline = time.monotonic() + deadline_s
    while len(records) < count and time.monotonic() < deadline:
        records += task.poll() or []
    return records


def plain(value):
    """A struct as nested dicts, for comparing values across tasks."""
    if isinstance(value, Struct):
        return {field.name: plain(value.get(field)) for field in value.schema.fields}
    return value


@pytest.mark.parametrize(
    ("quickstart", "schema_name", "fields", "key_schema"),
    [
        ("users", "ksql.users", ["registertime", "userid", "regionid", "gender"], Schema.STRING),
        ("pageviews", "ksql.pageviews", ["viewtime", "userid", "pageid"], Schema.INT64),
        ("orders", "ksql.orders", ["ordertime", "orderid", "itemid", "orderunits", "address"], Schema.INT32),
    ],
)
def test_quickstart_schemas_values_keys_offsets_and_headers(quickstart, schema_name, fields, key_schema):
    records = datagen_task(quickstart=quickstart.upper(), iterations="50").poll()
    assert len(records) == 50
    for i, record in enumerate(records):
        assert record.topic == "demo"
        assert record.value_schema.name == schema_name
        assert [f.name for f in record.value_schema.fields] == fields
        assert record.value.schema is record.value_schema
        record.value.validate()
        # The key is the key field with its own schema, as Confluent's AvroData makes it.
        assert record.key_schema == key_schema and record.key == record.value[fields[1 if quickstart != "pageviews" else 0]]
        assert record.timestamp is None  # the producer's time, as Confluent's
        assert record.source_partition == {"task.id": 0}
        assert {h.key: h.value for h in record.headers} == {"task.generation": 0, "task.id": 0, "current.iteration": i}
        offset = record.source_offset
        assert (offset["task.generation"], offset["current.iteration"]) == (1, i + 1)
        assert isinstance(offset["random.seed"], int) and -(2**63) <= offset["random.seed"] < 2**63
        if quickstart != "pageviews":
            assert 1487715775521 <= record.value[fields[0]] < 1519273364600  # Confluent's 2017-2018 range


def test_users_fields_and_key():
    records = datagen_task(quickstart="users", iterations="200").poll()
    for record in records:
        value = record.value
        assert re.fullmatch(r"User_[1-9]", value["userid"])
        assert re.fullmatch(r"Region_[1-9]", value["regionid"])
        assert value["gender"] in {"MALE", "FEMALE", "OTHER"}
        assert record.key == value["userid"]
    assert {r.value["gender"] for r in records} == {"MALE", "FEMALE", "OTHER"}


def test_pageviews_fields_and_key():
    records = datagen_task(quickstart="pageviews", iterations="200").poll()
    assert [r.value["viewtime"] for r in records] == list(range(1, 2000, 10))  # iteration start 1, step 10
    for record in records:
        assert re.fullmatch(r"User_[1-9]", record.value["userid"])
        assert re.fullmatch(r"Page_[1-9][0-9]", record.value["pageid"])
        assert record.key == record.value["viewtime"]


def test_orders_fields_key_and_increasing_orderid():
    records = datagen_task(quickstart="orders", iterations="200").poll()
    assert [r.value["orderid"] for r in records] == list(range(200))
    assert [r.key for r in records] == list(range(200))
    for record in records:
        value = record.value
        assert re.fullmatch(r"Item_[1-9][0-9]{0,2}", value["itemid"])
        assert 0.1 <= value["orderunits"] <= 10.0
        address = value["address"]
        assert address.schema.name == "ksql.address"
        assert re.fullmatch(r"City_[1-9]{0,2}", address["city"])
        assert re.fullmatch(r"State_[1-9]{0,2}", address["state"])
        assert 10000 <= address["zipcode"] <= 99999


def test_iterations_total_across_polls_then_idle():
    task = datagen_task(iterations="25", **{"batch.size": "10"})
    assert [len(task.poll()) for _ in range(3)] == [10, 10, 5]
    started = time.monotonic()
    assert task.poll() is None
    assert task.poll() is None
    assert time.monotonic() - started < 0.5  # a short idle wait, not a hang
    task.stop()


def test_restart_continues_from_the_stored_offset():
    # The generator is re-seeded per batch, so the values depend on the batch size too: keep it.
    settings = {"quickstart": "orders", "iterations": "10", "random.seed": "7", "batch.size": "4"}
    whole = [plain(r.value) for r in poll_until(datagen_task(**settings), 10)]
    first = datagen_task(**settings)
    sent = first.poll()
    first.stop()
    resumed = datagen_task(stored=sent[-1].source_offset, **settings)
    records = poll_until(resumed, 6)
    assert [r.value["orderid"] for r in records] == [4, 5, 6, 7, 8, 9]
    # The last record of a batch stores the next batch's seed: the records a run that never stopped sends.
    assert [plain(r.value) for r in records] == whole[4:]
    assert records[0].headers and {h.key: h.value for h in records[0].headers}["task.generation"] == 1
    assert records[-1].source_offset["current.iteration"] == 10
    assert records[-1].source_offset["task.generation"] == 2
    assert resumed.poll() is None


def test_restart_from_within_a_batch_keeps_the_count():
    settings = {"quickstart": "orders", "iterations": "10", "random.seed": "7", "batch.size": "4"}
    sent = datagen_task(**settings).poll()
    # Records within a batch store the batch's seed: its random values come again, the count does not.
    assert sent[0].source_offset["random.seed"] == sent[2].source_offset["random.seed"]
    assert sent[3].source_offset["random.seed"] != sent[2].source_offset["random.seed"]
    resumed = datagen_task(stored=sent[1].source_offset, **settings)
    records = poll_until(resumed, 8)
    assert [r.value["orderid"] for r in records] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert [h.value for r in records for h in r.headers if h.key == "current.iteration"] == list(range(2, 10))
    assert plain(records[0].value)["itemid"] == plain(sent[0].value)["itemid"]
    assert records[-1].source_offset["current.iteration"] == 10
    assert resumed.poll() is None


def test_resumes_from_an_offset_confluents_task_wrote():
    # As kafka-connect-datagen stores it: partition {"task.id": 0}.
    stored = {"task.generation": 3, "current.iteration": 41, "random.seed": -6074573837375711834}
    first = datagen_task(stored=stored, quickstart="orders").poll()[:5]
    again = datagen_task(stored=stored, quickstart="orders").poll()[:5]
    assert [r.value["orderid"] for r in first] == [41, 42, 43, 44, 45]
    assert [plain(r.value) for r in first] == [plain(r.value) for r in again]  # the stored seed decides the values
    assert first[0].source_offset["task.generation"] == 4
    assert {h.key: h.value for h in first[0].headers}["current.iteration"] == 41


def test_restart_after_all_iterations_generates_nothing():
    task = datagen_task(stored={"task.generation": 1, "current.iteration": 7, "random.seed": 1}, iterations="7")
    assert task.poll() is None


def test_task_reads_the_offset_of_its_own_task_id():
    # The lookup answers only for the partition asked; a different task id must ask for its own.
    seen = []

    def lookup(partitions):
        seen.extend(partitions)
        return {}

    settings = {"kafka.topic": "demo", "max.interval": "0", "task.id": "2", "quickstart": "pageviews"}
    task = DatagenTask()
    task.context = SourceTaskContext(settings, OffsetStorageReader(lookup))
    task.start(settings)
    assert seen == [{"task.id": 2}]
    assert task.poll()[0].source_offset["current.iteration"] == 1


@pytest.mark.parametrize("quickstart", ["users", "pageviews", "orders"])
def test_a_seed_repeats_the_values(quickstart):
    def values(task_id: str, seed: str = "42") -> list:
        records = datagen_task(quickstart=quickstart, iterations="30", **{"random.seed": seed, "task.id": task_id}).poll()
        return [(r.key, plain(r.value)) for r in records]

    assert values("0") == values("0")
    assert values("0") != values("1")
    assert values("0") != values("0", seed="43")


def test_unseeded_tasks_differ():
    first = [plain(r.value)["userid"] for r in datagen_task(iterations="50").poll()]
    second = [plain(r.value)["userid"] for r in datagen_task(iterations="50").poll()]
    assert first != second


def test_pacing_spreads_records_over_max_interval():
    # 20 records, each 0..20 ms after the previous: about 200 ms in all, at most 400 ms.
    task = datagen_task(iterations="20", **{"max.interval": "20"})
    started = time.monotonic()
    records = poll_until(task, 20)
    elapsed = time.monotonic() - started
    assert len(records) == 20
    assert 0.05 < elapsed < 1.5


def test_poll_waits_at_most_about_a_second():
    task = datagen_task(**{"max.interval": "600000", "random.seed": "1"})  # with this seed the first record is ~9 min away
    started = time.monotonic()
    assert not task.poll()
    assert time.monotonic() - started < 1.5


def test_stop_wakes_a_waiting_poll():
    task = datagen_task(**{"max.interval": "600000", "random.seed": "1"})
    threading.Timer(0.05, task.stop).start()
    started = time.monotonic()
    assert not task.poll()
    assert time.monotonic() - started < 0.5


def test_batch_size_bounds_each_poll():
    task = datagen_task(**{"batch.size": "7"})
    assert [len(task.poll()) for _ in range(3)] == [7, 7, 7]
    assert len(datagen_task().poll()) == 1000  # the default batch.size


def test_iterations_are_per_task_as_in_confluents():
    connector = DatagenConnector()
    connector.start({"kafka.topic": "t", "quickstart": "users", "iterations": "10", "max.interval": "0"})
    assert connector.task_class() is DatagenTask
    configs = connector.task_configs(3)
    assert [(c["iterations"], c["task.id"]) for c in configs] == [("10", "0"), ("10", "1"), ("10", "2")]
    for config in configs:
        task = datagen_task(**config)
        assert len(poll_until(task, 10)) == 10
        assert task.poll() is None


@pytest.mark.parametrize("iterations", ["0", "-5"])
def test_iterations_below_one_never_end(iterations):
    task = datagen_task(iterations=iterations, **{"batch.size": "10"})
    assert [len(task.poll()) for _ in range(3)] == [10, 10, 10]


def test_negative_max_interval_never_waits():
    assert len(datagen_task(**{"max.interval": "-1", "batch.size": "5"}).poll()) == 5


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("quickstart", "clicks"),
        ("max.interval", "soon"),
        ("iterations", "many"),
        ("schema.string", "{not json"),
        ("schema.filename", "/no/such/schema.avro"),
        ("batch.size", "0"),
        ("random.seed", "abc"),
        ("kafka.topic", " "),
    ],
)
def test_bad_settings_are_problems_naming_the_key(key, value):
    config = {"kafka.topic": "t", "quickstart": "users", key: value}
    problems = [p for p in DatagenConnector.config_def.validate(config) if p.is_error]
    assert [p.key for p in problems] == [key]
    assert key in str(problems[0])
    with pytest.raises(ConfigError, match=re.escape(key)):
        datagen_task(**{key: value})


def test_missing_topic_is_a_problem():
    problems = [p for p in DatagenConnector.config_def.validate({}) if p.is_error]
    assert [p.key for p in problems] == ["kafka.topic"]


def test_batch_size_is_documented_as_an_extension():
    key = DatagenConnector.config_def["batch.size"]
    assert key.extension and "connectd extension" in key.documentation
    assert (key.type.name, key.default) == ("INT", 1000)


ANNOTATED = {
    "type": "record", "name": "thing", "namespace": "demo",
    "fields": [
        {"name": "id", "type": {"type": "long", "arg.properties": {"iteration": {"start": 5, "step": 5, "restart": 20}}}},
        {"name": "score", "type": {"type": "int", "arg.properties": {"range": {"min": 3, "max": 6}}}},
        {"name": "code", "type": {"type": "string", "arg.properties": {"regex": "[A-C]{2}-[0-9]+"}}},
        {"name": "color", "type": {"type": "string", "arg.properties": {"options": ["red", "blue"]}}},
        {"name": "word", "type": {"type": "string", "arg.properties": {"length": {"min": 2, "max": 4}}}},
        {"name": "tags", "type": {"type": "array", "items": {"type": "string", "arg.properties": {"regex": "t[0-9]"}},
                                  "arg.properties": {"length": 3}}},
        {"name": "flag", "type": {"type": "boolean", "arg.properties": {"odds": 1.0}}},
        {"name": "note", "type": ["null", {"type": "string", "arg.properties": {"options": ["n"]}}]},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
    ],
}


def test_schema_string_follows_arg_properties():
    records = datagen_task(**{"schema.string": json.dumps(ANNOTATED), "iterations": "40"}).poll()
    values = [r.value for r in records]
    assert values[0].schema.name == "demo.thing"
    assert [v["id"] for v in values[:5]] == [5, 10, 15, 5, 10]  # wraps at restart back to start
    assert {v["score"] for v in values} == {3, 4, 5}  # max is exclusive
    assert all(re.fullmatch(r"[A-C]{2}-[0-9]+", v["code"]) for v in values)
    assert {v["color"] for v in values} == {"red", "blue"}
    assert all(2 <= len(v["word"]) < 4 for v in values)
    assert all(len(v["tags"]) == 3 and all(re.fullmatch(r"t[0-9]", t) for t in v["tags"]) for v in values)
    assert all(v["flag"] is True for v in values)
    assert {v["note"] for v in values} == {None, "n"}
    assert values[0].schema.field("note").schema.optional
    assert {v["kind"] for v in values} <= {"A", "B"}
    # No key field: a null key with an optional string schema.
    assert all(r.key is None and r.key_schema == Schema.OPTIONAL_STRING for r in records)


def test_schema_filename_and_keyfield(tmp_path):
    path = tmp_path / "thing.avro"
    path.write_text(json.dumps(ANNOTATED))
    records = datagen_task(**{"schema.filename": str(path), "schema.keyfield": "id", "iterations": "3"}).poll()
    assert [(r.key, r.key_schema) for r in records] == [(5, Schema.INT64), (10, Schema.INT64), (15, Schema.INT64)]
    # A keyfield overrides a quickstart's own key field.
    (user,) = datagen_task(quickstart="users", iterations="1", **{"schema.keyfield": "regionid"}).poll()
    assert user.key == user.value["regionid"]


def test_iteration_resumes_with_the_stored_count():
    stored = {"task.generation": 1, "current.iteration": 2, "random.seed": 1}
    records = datagen_task(stored=stored, **{"schema.string": json.dumps(ANNOTATED), "iterations": "5"}).poll()
    assert [r.value["id"] for r in records] == [15, 5, 10]


@pytest.mark.parametrize(
    "config",
    [{}, {"quickstart": "users", "schema.string": json.dumps(ANNOTATED)}],
)
def test_validate_wants_exactly_one_schema_source(config):
    problems = DatagenConnector().validate({"kafka.topic": "t", **config})
    assert problems and all(p.message == "Must set exactly one of schema.string, schema.filename, quickstart"
                            for p in problems)
    assert {p.key for p in problems} == ({"schema.string", "schema.filename", "quickstart"} if not config
                                         else {"quickstart", "schema.string"})


def test_validate_checks_the_keyfield_against_the_schema():
    (problem,) = DatagenConnector().validate({"kafka.topic": "t", "quickstart": "users", "schema.keyfield": "nope"})
    assert (problem.key, problem.message) == (
        "schema.keyfield", "The schema does not contain the field provided in 'schema.keyfield'")
    assert DatagenConnector().validate({"kafka.topic": "t", "quickstart": "users", "schema.keyfield": "gender"}) == []


def test_confluent_quickstarts_not_shipped_get_a_precise_answer():
    (problem,) = [p for p in DatagenConnector.config_def.validate({"kafka.topic": "t", "quickstart": "stock_trades"})
                  if p.is_error]
    assert "schema.filename" in str(problem)


def test_output_with_the_json_and_string_converters():
    from connectd.data.converters import StringConverter
    from connectd.data.json_converter import JsonConverter

    (record,) = datagen_task(quickstart="orders", iterations="1").poll()
    key_json, value_json = JsonConverter(), JsonConverter()
    key_json.configure({"schemas.enable": "false"}, is_key=True)
    value_json.configure({"schemas.enable": "false"}, is_key=False)
    assert json.loads(key_json.from_connect_data("t", record.key_schema, record.key)) == 0  # an int, not "0"
    value = json.loads(value_json.from_connect_data("t", record.value_schema, record.value))
    assert list(value) == ["ordertime", "orderid", "itemid", "orderunits", "address"]
    assert list(value["address"]) == ["city", "state", "zipcode"]
    strings = StringConverter()
    strings.configure({}, is_key=True)
    assert strings.from_connect_data("t", record.key_schema, record.key) == b"0"
