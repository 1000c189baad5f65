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
    ("quickstart", "schema_name", "fields"),
    [
        ("users", "ksql.users", ["registertime", "userid", "regionid", "gender"]),
        ("pageviews", "ksql.pageviews", ["viewtime", "userid", "pageid"]),
        ("orders", "ksql.orders", ["ordertime", "orderid", "itemid", "orderunits", "address"]),
    ],
)
def test_quickstart_schemas_values_and_keys(quickstart, schema_name, fields):
    before = time.time_ns() // 1_000_000
    records = datagen_task(quickstart=quickstart.upper(), iterations="50").poll()
    after = time.time_ns() // 1_000_000
    assert len(records) == 50
    for record in records:
        assert record.topic == "demo"
        assert record.value_schema.name == schema_name
        assert [f.name for f in record.value_schema.fields] == fields
        assert record.value.schema is record.value_schema
        record.value.validate()
        assert record.key_schema == Schema.STRING and isinstance(record.key, str)
        assert record.source_partition == {"task": 0, "quickstart": quickstart}
        timestamp = record.value.get(TIME_FIELDS[quickstart])
        assert record.timestamp == timestamp and before <= timestamp <= after
    assert [r.source_offset for r in records] == [{"iteration": i} for i in range(1, 51)]


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
    for record in datagen_task(quickstart="pageviews", iterations="200").poll():
        assert re.fullmatch(r"User_[1-9]", record.value["userid"])
        assert re.fullmatch(r"Page_[1-9][0-9]?", record.value["pageid"])
        assert record.key == str(record.value["viewtime"])


def test_orders_fields_key_and_increasing_orderid():
    records = datagen_task(quickstart="orders", iterations="200").poll()
    assert [r.value["orderid"] for r in records] == list(range(200))
    assert [r.key for r in records] == [str(i) for i in range(200)]
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
    first = datagen_task(quickstart="orders", iterations="10", **{"batch.size": "4"})
    sent = first.poll()
    first.stop()
    assert sent[-1].source_offset == {"iteration": 4}
    resumed = datagen_task(stored=sent[-1].source_offset, quickstart="orders", iterations="10")
    records = poll_until(resumed, 6)
    assert [r.value["orderid"] for r in records] == [4, 5, 6, 7, 8, 9]
    assert records[-1].source_offset == {"iteration": 10}
    assert resumed.poll() is None


def test_restart_after_all_iterations_generates_nothing():
    task = datagen_task(stored={"iteration": 7}, iterations="7")
    assert task.poll() is None


def test_stored_offset_of_another_partition_is_not_used():
    # The lookup answers only for the partition asked; a different task id must ask for its own.
    seen = []

    def lookup(partitions):
        seen.extend(partitions)
        return {}

    settings = {"kafka.topic": "demo", "max.interval": "0", "task.id": "2", "quickstart": "pageviews"}
    task = DatagenTask()
    task.context = SourceTaskContext(settings, OffsetStorageReader(lookup))
    task.start(settings)
    assert seen == [{"task": 2, "quickstart": "pageviews"}]
    assert task.poll()[0].source_offset == {"iteration": 1}


@pytest.mark.parametrize("quickstart", ["users", "pageviews", "orders"])
def test_a_seed_repeats_the_values(quickstart):
    def values(task_id: str, seed: str = "42") -> list:
        records = datagen_task(quickstart=quickstart, iterations="30", **{"random.seed": seed, "task.id": task_id}).poll()
        return [(r.key if quickstart == "users" else None, _without_time(plain(r.value), quickstart)) for r in records]

    assert values("0") == values("0")
    assert values("0") != values("1")
    assert values("0") != values("0", seed="43")


def _without_time(value: dict, quickstart: str) -> dict:
    return {k: v for k, v in value.items() if k != TIME_FIELDS[quickstart]}


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
    times = [r.timestamp for r in records]
    assert times == sorted(times)
    assert all(0 <= b - a <= 20 for a, b in zip(times, times[1:]))


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


def test_connector_names_its_task_and_shares_iterations():
    connector = DatagenConnector()
    connector.start({"kafka.topic": "t", "iterations": "10"})
    assert connector.task_class() is DatagenTask
    configs = connector.task_configs(3)
    assert [c["iterations"] for c in configs] == ["4", "3", "3"]
    assert [c["task.id"] for c in configs] == ["0", "1", "2"]
    connector.start({"kafka.topic": "t"})
    assert all("iterations" not in c for c in connector.task_configs(2))  # -1: every task runs forever


def test_shared_iterations_add_up_across_tasks():
    connector = DatagenConnector()
    connector.start({"kafka.topic": "t", "iterations": "10", "max.interval": "0"})
    total = 0
    for config in connector.task_configs(3):
        task = datagen_task(**config)
        total += len(poll_until(task, int(config["iterations"])))
        assert task.poll() is None
    assert total == 10


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("quickstart", "clicks"),
        ("max.interval", "-1"),
        ("max.interval", "soon"),
        ("iterations", "-2"),
        ("batch.size", "0"),
        ("random.seed", "abc"),
        ("kafka.topic", " "),
    ],
)
def test_bad_settings_are_problems_naming_the_key(key, value):
    config = {"kafka.topic": "t", key: value}
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
