"""``GET /connectors/{c}/topics`` and ``PUT /connectors/{c}/topics/reset`` (KIP-558)."""

from __future__ import annotations

import asyncio
import glob

import pytest


async def _topics(http, name):
    async with http.get(f"/connectors/{name}/topics") as r:
        return r.status, await r.json()


async def _reset(http, name):
    async with http.put(f"/connectors/{name}/topics/reset") as r:
        return r.status, await r.read()


def _append(path, text):
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


@pytest.mark.integration
def test_source_topics_are_recorded_reset_and_recorded_again(rest, spark, broker, topic_name, tmp_path,
                                                             wait_until_async):
    source = tmp_path / "in.txt"
    source.write_text("a\nb\n")
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": topic_name}

    async def scenario(http, herder):
        async with http.post("/connectors", json={"name": "src", "config": config}) as r:
            assert r.status == 201, await r.text()
        recorded = (200, {"src": {"topics": [topic_name]}})
        assert await wait_until_async(lambda: _topics(http, "src"), "src's topics recorded",
                                      until=lambda answer: answer == recorded) == recorded

        assert await _reset(http, "src") == (202, b"")
        assert await _topics(http, "src") == (200, {"src": {"topics": []}})  # until the task writes again
        await asyncio.to_thread(_append, source, "c\n")
        assert await wait_until_async(lambda: _topics(http, "src"), "src's topics recorded",
                                      until=lambda answer: answer == recorded) == recorded

        (query,) = herder.task_queries("src")
        async with http.put("/connectors/src/stop") as r:
            assert r.status == 204
        assert await _topics(http, "src") == (200, {"src": {"topics": [topic_name]}})  # kept past the task's run
        assert not glob.glob(f"{query.workdir}*")  # its run directory and the files beside it are gone
        assert await _reset(http, "src") == (202, b"")
        assert await _topics(http, "src") == (200, {"src": {"topics": []}})

        async with http.delete("/connectors/src") as r:
            assert r.status == 204
        assert await _topics(http, "src") == (404, {"error_code": 404, "message": "Connector src not found"})

    rest(scenario, spark=spark, broker=broker)


@pytest.fixture
def spark_sink_connector():
    from connectd import SinkConnector, SparkSinkTask
    from connectd.plugins import PluginInfo, get_registry, reset_plugins

    class CountingTask(SparkSinkTask):
        def write_batch(self, batch, batch_id):
            batch.count()

    class CountingSink(SinkConnector):
        def start(self, config):
            self.config = dict(config)

        def task_class(self):
            return CountingTask

        def task_configs(self, max_tasks):
            return [dict(self.config)]

    get_registry().add(PluginInfo(CountingSink, "connector", ("CountingSinkForTest",), "tests", "0"))
    yield CountingSink
    reset_plugins()


@pytest.mark.integration
def test_spark_level_sink_records_the_topics_it_consumed(rest, spark, broker, topic_name, spark_sink_connector,
                                                         wait_until_async):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # kept until its future resolves
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic_name, value=b"x")
    producer.flush(30)

    async def scenario(http, herder):
        config = {"connector.class": "CountingSinkForTest", "topics": topic_name}
        async with http.post("/connectors", json={"name": "bulk", "config": config}) as r:
            assert r.status == 201, await r.text()
        recorded = (200, {"bulk": {"topics": [topic_name]}})
        assert await wait_until_async(lambda: _topics(http, "bulk"), "bulk's topics recorded",
                                      until=lambda answer: answer == recorded) == recorded

    rest(scenario, spark=spark, broker=broker)


@pytest.mark.integration
def test_record_level_sink_records_the_topics_it_consumed(rest, spark, broker, topic_name, tmp_path, wait_until_async):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # kept until its futures resolve
    quiet = f"{topic_name}-quiet"
    for name in (topic_name, quiet):
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic_name, value=b"x")
    producer.flush(30)

    async def scenario(http, herder):
        config = {"connector.class": "FileStreamSink", "topics": f"{topic_name},{quiet}",
                  "file": str(tmp_path / "out.txt")}
        async with http.post("/connectors", json={"name": "lines", "config": config}) as r:
            assert r.status == 201, await r.text()
        # only the topic a record was consumed from is active
        recorded = (200, {"lines": {"topics": [topic_name]}})
        assert await wait_until_async(lambda: _topics(http, "lines"), "lines's topics recorded",
                                      until=lambda answer: answer == recorded) == recorded

    rest(scenario, spark=spark, broker=broker)


def test_sink_tasks_report_topics_through_the_herder(rest):
    # Sink tasks run in the worker process and call herder.record_active_topics once per batch.
    config = {"connector.class": "FileStreamSink", "file": "/dev/null", "topics": "t1,t2"}

    async def scenario(http, herder):
        async with http.post("/connectors", json={"name": "snk", "config": config, "initial_state": "STOPPED"}) as r:
            assert r.status == 201, await r.text()
        assert await _topics(http, "snk") == (200, {"snk": {"topics": []}})
        herder.record_active_topics("snk", {"t2", "t1"})
        herder.record_active_topics("snk", ["t1"])
        herder.record_active_topics("ghost", ["t9"])  # a connector deleted meanwhile: ignored
        assert await _topics(http, "snk") == (200, {"snk": {"topics": ["t1", "t2"]}})
        assert await _reset(http, "snk") == (202, b"")
        assert await _topics(http, "snk") == (200, {"snk": {"topics": []}})
        herder.record_active_topics("snk", ["t2"])
        assert await _topics(http, "snk") == (200, {"snk": {"topics": ["t2"]}})

        for answer in (await _topics(http, "ghost"), await _reset(http, "ghost")):
            assert answer[0] == 404
        async with http.get("/connectors/ghost/topics") as r:
            assert await r.json() == {"error_code": 404, "message": "Connector ghost not found"}

    rest(scenario)


def test_topic_tracking_disabled_is_403(rest):
    config = {"connector.class": "FileStreamSink", "file": "/dev/null", "topics": "t1"}

    async def scenario(http, herder):
        async with http.post("/connectors", json={"name": "snk", "config": config, "initial_state": "STOPPED"}) as r:
            assert r.status == 201
        herder.record_active_topics("snk", ["t1"])  # not recorded
        assert herder.active_topics.topics("snk") == set()
        async with http.get("/connectors/snk/topics") as r:
            assert (r.status, await r.json()) == (403, {"error_code": 403, "message": "Topic tracking is disabled."})
        async with http.put("/connectors/snk/topics/reset") as r:
            assert (r.status, await r.json()) == (403, {"error_code": 403, "message": "Topic tracking is disabled."})

    rest(scenario, worker={"topic.tracking.enable": "false"})


def test_reset_disallowed_is_403_but_reading_works(rest):
    config = {"connector.class": "FileStreamSink", "file": "/dev/null", "topics": "t1"}

    async def scenario(http, herder):
        async with http.post("/connectors", json={"name": "snk", "config": config, "initial_state": "STOPPED"}) as r:
            assert r.status == 201
        herder.record_active_topics("snk", ["t1"])
        assert await _topics(http, "snk") == (200, {"snk": {"topics": ["t1"]}})
        async with http.put("/connectors/snk/topics/reset") as r:
            assert r.status == 403
            assert await r.json() == {"error_code": 403, "message": "Topic tracking reset is disabled."}
        assert await _topics(http, "snk") == (200, {"snk": {"topics": ["t1"]}})

    rest(scenario, worker={"topic.tracking.allow.reset": "false"})
