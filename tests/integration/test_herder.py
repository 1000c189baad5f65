"""The standalone herder with real Spark: config changes touch only their own connector."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

import pytest

from connectd.errors import ConfigError
from connectd.herder import StandaloneHerder
from connectd.status import FAILED, PAUSED, RESTARTING, RUNNING, STOPPED

pytestmark = pytest.mark.integration


GRACEFUL = {"task.shutdown.graceful.timeout.ms": "20000"}


def source(name: str, path, topic: str, **extra: str) -> dict[str, str]:
    return {"name": name, "connector.class": "FileStreamSource", "file": str(path), "topic": topic, **extra}


def test_changing_one_connector_restarts_only_its_tasks(spark, broker, topic_name, tmp_path, worker_config):
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        try:
            assert await herder.put(source("a", tmp_path / "a.txt", topic_name)) is True
            assert await herder.put(source("b", tmp_path / "b.txt", topic_name)) is True
            (a_before,) = herder.task_queries("a")
            (b_before,) = herder.task_queries("b")
            assert await herder.put(source("a", tmp_path / "a.txt", topic_name)) is False  # unchanged: nothing
            assert herder.task_queries("a") == [a_before]
            assert await herder.put(source("a", tmp_path / "a.txt", topic_name, **{"batch.size": "10"})) is True
            (a_after,) = herder.task_queries("a")
            assert a_after is not a_before and not a_before.is_active() and a_after.is_active()
            assert herder.task_queries("b") == [b_before] and b_before.is_active()  # b never stopped
            assert herder.status.task("a", 0).state == RUNNING
            assert herder.status.connector("b").state == RUNNING
            assert herder.config("a")["batch.size"] == "10"
        finally:
            await herder.stop()
        assert not a_after.is_active() and not b_before.is_active()

    asyncio.run(scenario())


def test_a_bad_config_reports_every_problem_and_changes_nothing(spark, broker, tmp_path, worker_config):
    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        bad = {"name": "bad", "connector.class": "FileStreamSink", "tasks.max": "zero",
               "topics": "x", "topics.regex": "y.*", "transforms": "t"}
        with pytest.raises(ConfigError) as info:
            await herder.put(bad)
        message = str(info.value)
        assert "tasks.max='zero': expected a 32-bit integer" in message
        assert "topics.regex='y.*': expected only one of topics and topics.regex" in message
        assert "transforms.t.type is required" in message
        assert herder.connectors() == []
        await herder.stop()

    asyncio.run(scenario())


def test_a_failing_task_is_failed_with_its_trace(spark, broker, topic_name, tmp_path, wait_until_async, worker_config):
    (tmp_path / "in.txt").write_text("x\n")

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        try:
            # a transform that fails at run time on every record: ExtractField on a string value
            await herder.put(source("broken", tmp_path / "in.txt", topic_name, **{
                "transforms": "x",
                "transforms.x.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
                "transforms.x.field": "f",
            }))
            status = await wait_until_async(lambda: herder.status.task("broken", 0), "the task to fail",
                                            until=lambda status: status.state == FAILED, timeout=120)
            assert status.state == FAILED
            assert "ExtractField" in status.trace or "field extraction" in status.trace
            assert herder.status.connector("broken").state == RUNNING  # the connector itself is fine
        finally:
            await herder.stop()

    asyncio.run(scenario())


def test_failed_task_restarts_with_backoff_until_attempts_run_out(spark, broker, topic_name, tmp_path,
                                                                  wait_until_async, worker_config):
    (tmp_path / "in.txt").write_text("x\n")
    name = f"flaky-{uuid.uuid4().hex[:8]}"

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        seen = []
        try:
            await herder.put(source(name, tmp_path / "in.txt", topic_name, **{
                "transforms": "x",
                "transforms.x.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
                "transforms.x.field": "f",
                "errors.restart.enable": "true",
                "errors.restart.max.attempts": "2",
                "errors.restart.backoff.max.ms": "1500",
            }))
            run = herder._connectors[name]

            def observe() -> tuple[str, int, float | None]:
                state = herder.status.task(name, 0).state
                if not seen or seen[-1] != state:
                    seen.append(state)
                return state, run.tasks[0].restarts, run.tasks[0].restart_at

            await wait_until_async(observe, "two restarts, then FAILED with no restart planned", timeout=240,
                                   until=lambda now: now[0] == FAILED and now[1] == 2 and now[2] is None)
        finally:
            await herder.stop()
        return seen, run.tasks[0].restarts

    seen, restarts = asyncio.run(scenario())
    assert restarts == 2
    assert seen[-1] == FAILED
    assert seen.count(RESTARTING) == 2  # FAILED -> RESTARTING -> RUNNING -> FAILED, twice, then it stays FAILED
    # Each failed run's scratch directory went with it.
    assert not list(Path(tempfile.gettempdir()).glob(f"connectd-{name}-*"))


def test_sink_picks_up_a_new_topic_matching_its_regex(spark, broker, topic_name, tmp_path, wait_until_async,
                                                      worker_config):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    first, later = f"{topic_name}-a", f"{topic_name}-b"
    admin.create_topics([NewTopic(first, 1, 1)])[first].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(first, value=b"from a")
    assert producer.flush(30) == 0
    out = tmp_path / "out.txt"

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        try:
            await herder.put({"name": "regex-sink", "connector.class": "FileStreamSink", "file": str(out),
                              "topics.regex": f"{topic_name}-.*"})
            await wait_until_async(lambda: out.exists() and "from a" in out.read_text(),
                                   "the first topic's record", timeout=90)
            admin.create_topics([NewTopic(later, 1, 1)])[later].result(timeout=30)
            producer.produce(later, value=b"from b")
            assert producer.flush(30) == 0
            await wait_until_async(lambda: "from b" in out.read_text(), "the new topic's record", timeout=90)
            assert herder.status.task("regex-sink", 0).state == RUNNING
        finally:
            await herder.stop()

    asyncio.run(scenario())
    assert sorted(out.read_text().splitlines()) == ["from a", "from b"]  # nothing twice after the task restart


def test_a_sink_made_before_its_topic_picks_it_up_with_every_task(spark, broker, topic_name, tmp_path,
                                                                  wait_until_async, worker_config):
    """Issue 11: a sink's tasks, started with no partition, all restart at once on their shares when
    the topic appears; their parallel stops once raced on each other's run directories (linger)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    out = tmp_path / "out.txt"

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        try:
            await herder.put({"name": "early-sink", "connector.class": "FileStreamSink", "file": str(out),
                              "topics": topic_name, "tasks.max": "3"})
            assert [herder.status.task("early-sink", i).state for i in range(3)] == [RUNNING] * 3
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.create_topics([NewTopic(topic_name, 6, 1)])[topic_name].result(timeout=30)
            producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
            for i in range(600):
                producer.produce(topic_name, value=f"r{i:03d}".encode(), partition=i % 6)
            assert producer.flush(30) == 0
            await wait_until_async(lambda: out.exists() and len(set(out.read_text().splitlines())) == 600,
                                   "every record of the late topic", timeout=120)
            shares = [handle.task_partitions for handle in (t.handle for t in herder._connectors["early-sink"].tasks)]
            states = [herder.status.task("early-sink", i).state for i in range(3)]
            assert herder.loops.problems() == []
            return shares, states
        finally:
            await herder.stop()

    shares, states = asyncio.run(scenario())
    assert sorted(shares) == [2, 2, 2] and states == [RUNNING] * 3


def test_pause_resume_stop_and_restart(spark, broker, topic_name, tmp_path, wait_until_async, consume_records,
                                       worker_config):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=30)
    path = tmp_path / "in.txt"
    path.write_text("1\n2\n")

    def count_records(topic: str) -> int:
        return len(consume_records(topic, partitions=1))

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        try:
            await herder.put(source("s", path, topic_name))
            await wait_until_async(lambda: count_records(topic_name) == 2, "the first lines")

            await herder.pause("s")
            assert herder.status.connector("s").state == PAUSED
            assert herder.status.task("s", 0).state == PAUSED
            (query,) = herder.task_queries("s")
            assert query.is_active()  # paused, not stopped
            await wait_until_async(lambda: not query.query.status["isTriggerActive"], "the batch in flight to finish")
            with open(path, "a") as f:
                f.write("3\n")
            await asyncio.sleep(3)  # while paused nothing moves (a bounded look)
            assert count_records(topic_name) == 2

            await herder.resume("s")
            assert herder.status.task("s", 0).state == RUNNING
            await wait_until_async(lambda: count_records(topic_name) == 3, "the line written while paused")

            await herder.stop_connector("s")
            assert herder.status.connector("s").state == STOPPED
            assert herder.status.tasks("s") == {}
            assert not query.is_active()
            assert herder.config("s")["file"] == str(path)  # config kept

            await herder.resume("s")
            assert herder.status.connector("s").state == RUNNING
            (restarted,) = herder.task_queries("s")
            assert restarted.is_active() and herder.status.task("s", 0).state == RUNNING

            await herder.restart("s", include_tasks=True, only_failed=True)  # nothing failed: tasks untouched
            assert herder.task_queries("s") == [restarted]
            await herder.restart_task("s", 0)
            (again,) = herder.task_queries("s")
            assert again is not restarted and again.is_active()
            assert herder.status.task("s", 0).state == RUNNING
        finally:
            await herder.stop()
        assert count_records(topic_name) == 3  # resumed from stored offsets: no line twice

    asyncio.run(scenario())


@pytest.fixture
def tables_connector():
    from connectd import SourceConnector
    from connectd.plugins import PluginInfo, get_registry, reset_plugins

    class TablesConnector(SourceConnector):
        tables: list[str] = []
        beyond_max = False  # a buggy connector: a task per table whatever tasks.max says

        def start(self, config):
            self.config = dict(config)

        def task_class(self):
            from connectd_file.tasks import FileStreamSourceTask

            return FileStreamSourceTask

        def task_configs(self, max_tasks):
            return [{**self.config, "file": table} for table in self.tables[:None if self.beyond_max else max_tasks]]

    get_registry().add(PluginInfo(TablesConnector, "connector", ("TablesForTest",), "tests", "0"))
    yield TablesConnector
    reset_plugins()


def test_connector_asks_for_new_task_configs(spark, broker, topic_name, tmp_path, tables_connector,
                                             wait_until_async, worker_config):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("a\n")
    second.write_text("b\n")
    tables_connector.tables = [str(first)]

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        try:
            await herder.put({"name": "tables", "connector.class": "TablesForTest", "topic": topic_name,
                              "tasks.max": "3"})
            (only,) = herder.task_queries("tables")
            connector = herder._connectors["tables"].instance
            await herder._reconfigure(herder._connectors["tables"])  # nothing changed: tasks kept
            assert herder.task_queries("tables") == [only]

            tables_connector.tables.append(str(second))  # a new table appears
            connector.context.request_task_reconfiguration()
            await wait_until_async(lambda: herder.status.tasks("tables"), "the second task to run", timeout=90,
                                   until=lambda tasks: len(tasks) >= 2 and all(
                                       s.state == RUNNING for s in tasks.values()))
            assert [t.config["file"] for t in herder._connectors["tables"].tasks] == [str(first), str(second)]

            # more task configs than tasks.max fail the connector (KIP-1004), as at its start
            tables_connector.beyond_max = True
            tables_connector.tables += [str(first), str(second)]
            connector.context.request_task_reconfiguration()
            failed = await wait_until_async(lambda: herder.status.connector("tables"), "the connector to fail",
                                            timeout=30, until=lambda s: s is not None and s.state == "FAILED")
            assert "The connector tables has generated 4 tasks, which is greater than 3" in failed.trace
        finally:
            await herder.stop()

    asyncio.run(scenario())


@pytest.fixture
def counting_connector():
    """Connector class ``CountingForTest``: one ``recording_source.CountingSourceTask`` with its config."""
    from connectd import SourceConnector
    from connectd.plugins import PluginInfo, get_registry, reset_plugins

    class CountingConnector(SourceConnector):
        def start(self, config):
            self.config = dict(config)

        def task_class(self):
            from recording_source import CountingSourceTask

            return CountingSourceTask

        def task_configs(self, max_tasks):
            return [self.config]

    get_registry().add(PluginInfo(CountingConnector, "connector", ("CountingForTest",), "tests", "0"))
    yield CountingConnector
    reset_plugins()


def test_a_spark_hiccup_restarts_the_query_at_once_and_only_repeated_ones_fail_the_task(
        spark, broker, topic_name, tmp_path, counting_connector, wait_until_async, worker_config):
    events = tmp_path / "events.txt"
    name = f"hiccups-{uuid.uuid4().hex[:8]}"

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        seen = []
        try:
            # Every run's query ends as Spark's does when its Python process is late to connect back.
            await herder.put({"name": name, "connector.class": "CountingForTest", "topic": topic_name,
                              "count": "10", "fail.at": "0", "events.file": str(events),
                              "fail.message": "org.apache.spark.SparkException: Python worker failed to connect back."})

            def observe() -> str:
                state = herder.status.task(name, 0).state
                if not seen or seen[-1] != state:
                    seen.append(state)
                return state

            await wait_until_async(observe, "the task FAILED after its allowed hiccups", timeout=240,
                                   until=lambda state: state == FAILED)
            assert herder.metrics.registry.get_sample_value("connectd_spark_hiccups_total",
                                                            {"worker": "test-worker"}) == 3
            return seen, herder.status.task(name, 0)
        finally:
            await herder.stop()

    seen, status = asyncio.run(scenario())
    assert seen == [RUNNING, FAILED]  # restarted at once, never RESTARTING, no status record per hiccup
    assert "Python worker failed to connect back" in status.trace
    starts = [line for line in events.read_text().splitlines() if line.split()[1] == "start"]
    assert len(starts) == 4  # the first run and three restarts


def test_a_task_that_cannot_start_is_failed_and_leaves_no_metrics_series(spark, broker, topic_name, tmp_path,
                                                                           worker_config):
    from confluent_kafka.admin import AdminClient, NewTopic

    from connectd import ConnectException, SinkConnector, SinkTask
    from connectd.plugins import PluginInfo, get_registry, reset_plugins

    class Unstartable(SinkTask):
        pinned = True  # started in the worker process, as the task's query starts

        def start(self, config):
            raise ConnectException("cannot reach the target store")

        def put(self, records):
            pass

        def stop(self):
            pass

    class UnstartableSink(SinkConnector):
        def start(self, config):
            self.config = dict(config)

        def task_class(self):
            return Unstartable

        def task_configs(self, max_tasks):
            return [self.config]

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=30)
    get_registry().add(PluginInfo(UnstartableSink, "connector", ("UnstartableForTest",), "tests", "0"))

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        try:
            await herder.put({"name": "unstartable", "connector.class": "UnstartableForTest", "topics": topic_name})
            status = herder.status.task("unstartable", 0)
            series = [sample for family in herder.metrics.registry.collect() for sample in family.samples
                      if sample.labels.get("connector") == "unstartable" and sample.labels.get("task") == "0"
                      and not sample.name.startswith("connectd_task_status")]
            return status, series
        finally:
            await herder.stop()

    try:
        status, series = asyncio.run(scenario())
    finally:
        reset_plugins()
    assert status.state == FAILED and "cannot reach the target store" in status.trace
    assert series == []  # no zero-valued batch, commit or record series for a task that never ran


def test_a_sink_with_a_group_override_resumes_where_that_group_is(spark, broker, topic_name, tmp_path,
                                                                   wait_until_async, worker_config):
    """``consumer.override.group.id``, as a sink moved from Kafka Connect has it: the group's offsets,
    committed by a plain consumer, are where it starts, where it commits, and what the offsets API
    reads, alters and resets; ``connect-<name>`` is never used."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    servers = {"bootstrap.servers": broker.bootstrap_servers}
    admin = AdminClient(servers)
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=30)
    producer = Producer(servers)
    for i in range(10):
        producer.produce(topic_name, value=f"r{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    legacy = Consumer({**servers, "group.id": "legacy-sink", "enable.auto.commit": False})
    legacy.commit(offsets=[KafkaTopicPartition(topic_name, 0, 6)], asynchronous=False)
    legacy.close()
    out = tmp_path / "out.txt"

    def committed(group: str) -> int | None:
        consumer = Consumer({**servers, "group.id": group})
        try:
            (tp,) = consumer.committed([KafkaTopicPartition(topic_name, 0)], timeout=30)
        finally:
            consumer.close()
        return tp.offset if tp.offset >= 0 else None

    async def scenario():
        herder = StandaloneHerder(worker_config(**GRACEFUL), "test-worker", spark)
        await herder.start()
        try:
            await herder.put({"name": "moved", "connector.class": "FileStreamSink", "topics": topic_name,
                              "file": str(out), "consumer.override.group.id": "legacy-sink"})
            await wait_until_async(lambda: out.exists() and len(out.read_text().splitlines()) >= 4,
                                   "the records after the group's offset")
            await wait_until_async(lambda: committed("legacy-sink") == 10, "the sink's commits in the group")
            assert out.read_text().splitlines() == ["r6", "r7", "r8", "r9"]
            expected = [({"kafka_topic": topic_name, "kafka_partition": 0}, {"kafka_offset": 10})]
            assert await herder.connector_offsets("moved") == expected
            await herder.stop_connector("moved")
            await herder.alter_offsets("moved", [({"kafka_topic": topic_name, "kafka_partition": 0},
                                                  {"kafka_offset": 8})])
            assert committed("legacy-sink") == 8
            await herder.reset_offsets("moved")
            assert committed("legacy-sink") is None
            assert committed("connect-moved") is None
        finally:
            await herder.stop()

    asyncio.run(scenario())
