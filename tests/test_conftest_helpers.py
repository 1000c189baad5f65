"""The suite's shared helpers (tests/conftest.py) fail the way their callers rely on."""

from __future__ import annotations

import asyncio
import itertools

import pytest


def test_wait_until_returns_the_first_true_value(wait_until):
    counter = itertools.count()
    assert wait_until(lambda: next(counter) >= 3 and "done", "the counter to reach 3", interval=0) == "done"


def test_wait_until_with_until_returns_the_value_it_accepted(wait_until):
    counter = itertools.count()
    assert wait_until(lambda: next(counter), "the counter to reach 3", until=lambda n: n >= 3, interval=0) == 3


def test_wait_until_fails_naming_what_it_awaited_and_the_last_value(wait_until):
    with pytest.raises(AssertionError) as failure:
        wait_until(lambda: {"state": "PAUSED"}, "the task to run", until=lambda s: s["state"] == "RUNNING",
                   timeout=0.2, interval=0.05)
    assert str(failure.value) == "timed out after 0.2s waiting for the task to run; last value seen: {'state': 'PAUSED'}"


def test_a_long_last_value_is_cut_and_sized(wait_until):
    with pytest.raises(AssertionError, match=r"last value seen: \['line', .*… \(1000 items\)$"):
        wait_until(lambda: ["line"] * 1000, "1001 lines", until=lambda lines: len(lines) > 1000, timeout=0)


def test_wait_until_async_awaits_coroutine_conditions(wait_until_async):
    counter = itertools.count()

    async def probe() -> int:
        return next(counter)

    async def scenario() -> int:
        return await wait_until_async(probe, "the probe to answer 2", until=lambda n: n == 2, interval=0)

    assert asyncio.run(scenario()) == 2


def test_wait_until_async_fails_like_the_sync_form(wait_until_async):
    async def scenario() -> None:
        await wait_until_async(lambda: False, "nothing", timeout=0.1, interval=0.02)

    with pytest.raises(AssertionError, match=r"^timed out after 0.1s waiting for nothing; last value seen: False$"):
        asyncio.run(scenario())


@pytest.fixture
def two_partitions(broker, topic_name):
    """*topic_name* with two partitions: values 0..4 in partition 0, none in partition 1."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(5):
        producer.produce(topic_name, value=str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    return topic_name


@pytest.mark.integration
def test_consume_records_reads_count_records_from_the_beginning(consume_records, two_partitions):
    records = consume_records(two_partitions, 3, timeout=30)
    assert len(records) >= 3
    assert [m.value() for m in records] == [str(i).encode() for i in range(len(records))]


@pytest.mark.integration
def test_consume_records_without_a_count_reads_to_the_end_of_every_partition(consume_records, two_partitions):
    assert [m.value() for m in consume_records(two_partitions, timeout=30)] == [b"0", b"1", b"2", b"3", b"4"]
    assert [m.value() for m in consume_records(two_partitions, partitions=1, timeout=30)] == [
        b"0", b"1", b"2", b"3", b"4"]


@pytest.mark.integration
def test_consume_records_fails_naming_topic_arrived_and_expected(consume_records, two_partitions):
    with pytest.raises(AssertionError) as failure:
        consume_records(two_partitions, 6, timeout=1)
    assert str(failure.value) == f"topic {two_partitions}: 5 records arrived within 1s, expected 6"


@pytest.mark.integration
def test_consume_records_lingers_for_late_records(consume_records, two_partitions, broker):
    import threading

    from confluent_kafka import Producer

    def late() -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        producer.produce(two_partitions, value=b"late", partition=1)
        producer.flush(30)

    timer = threading.Timer(0.3, late)
    timer.start()
    try:
        records = consume_records(two_partitions, 5, timeout=30, linger=3)
    finally:
        timer.join()
    assert sorted(m.value() for m in records) == [b"0", b"1", b"2", b"3", b"4", b"late"]


@pytest.mark.parametrize("mode", ["standalone", "distributed"])
def test_worker_config_is_complete_for_its_mode(worker_config, mode):
    config = worker_config(mode)
    assert config.mode == mode
    assert [str(p) for p in config.problems()] == []
    assert config.raw("bootstrap.servers") == "127.0.0.1:9"  # this test has no broker
    assert config.raw("listeners").startswith("http://127.0.0.1:")


def test_worker_config_overrides_add_replace_and_drop(worker_config, tmp_path):
    settings = worker_config.settings(**{"value.converter": "JsonConverter", "errors.tolerance": "all",
                                         "spark.master": None})
    assert settings["value.converter"] == "JsonConverter"
    assert settings["offset.storage.file.filename"] == str(tmp_path / "offsets.json")
    assert "spark.master" not in settings
    assert list(settings).index("errors.tolerance") == 4  # right after what a standalone worker needs


def test_worker_config_file_puts_the_first_override_on_line_5(worker_config, tmp_path):
    from connectd.config.worker import WorkerConfig

    path = worker_config.file(**{"admin.listeners": "ftp://127.0.0.1:1"})
    assert path == tmp_path / "worker.properties"
    assert path.read_text().splitlines()[4] == "admin.listeners=ftp://127.0.0.1:1"
    config = WorkerConfig.from_file(path)
    assert config.mode == "standalone"
    [problem] = [str(p) for p in config.problems(check_classes=False) if p.is_error]
    assert problem.startswith(f"{path}:5: admin.listeners='ftp://127.0.0.1:1': expected")


@pytest.mark.integration
def test_worker_config_points_at_the_session_broker_when_the_test_uses_it(worker_config, broker):
    assert worker_config().raw("bootstrap.servers") == broker.bootstrap_servers
