"""``GET``/``PATCH``/``DELETE /connectors/{c}/offsets`` (KIP-875) over a real herder.

Source offsets live in the worker's offsets file, sink offsets in the
connector's consumer group on the real broker; changing them needs the
connector STOPPED, and a resumed connector starts from what was written.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from connectd import SinkConnector, SourceConnector, TopicPartition

ALTERED = ("The Connect framework-managed offsets for this connector have been altered successfully. However, if "
           "this connector manages offsets externally, they will need to be manually altered in the system that "
           "the connector uses.")
RESET = ALTERED.replace("altered", "reset")
# The FileStream connectors' alter_offsets say they took the offsets (True), as Kafka's do.
FILE_ALTERED = "The offsets for this connector have been altered successfully"
FILE_RESET = FILE_ALTERED.replace("altered", "reset")
NOT_STOPPED = ("Connectors must be in the STOPPED state before their offsets can be modified. This can be done for "
               "the specified connector by issuing a 'PUT' request to the '/connectors/{}/stop' endpoint")


async def _call(http, method, path, body=None):
    async with http.request(method, path, json=body) as r:
        return r.status, await r.json()


async def _offsets(http, name):
    return await _call(http, "GET", f"/connectors/{name}/offsets")


def _entry(partition, offset):
    return {"partition": partition, "offset": offset}


def _sink_entry(topic, partition, offset):
    return _entry({"kafka_topic": topic, "kafka_partition": partition},
                  None if offset is None else {"kafka_offset": offset})


@pytest.fixture
def offsets_connectors():
    """A source and a sink connector whose ``alter_offsets`` record their calls and answer as told."""
    from connectd.plugins import PluginInfo, get_registry, reset_plugins

    class Recording:
        calls: ClassVar[list] = []
        answer: ClassVar[object] = True  # a value to return, or an exception to raise

        def alter_offsets(self, config, offsets):
            type(self).calls.append((dict(config), dict(offsets)))
            if isinstance(type(self).answer, BaseException):
                raise type(self).answer
            return type(self).answer

        def task_class(self):
            raise AssertionError("never started in these tests")

        def task_configs(self, max_tasks):
            return []

    class OffsetsSource(Recording, SourceConnector):
        calls: ClassVar[list] = []

    class OffsetsSink(Recording, SinkConnector):
        calls: ClassVar[list] = []

    registry = get_registry()
    registry.add(PluginInfo(OffsetsSource, "connector", ("OffsetsSourceForTest",), "tests", "0"))
    registry.add(PluginInfo(OffsetsSink, "connector", ("OffsetsSinkForTest",), "tests", "0"))
    yield OffsetsSource, OffsetsSink
    reset_plugins()


@pytest.mark.parametrize(("body", "words"), [
    ("[]", "must be a JSON object"),
    ("{}", "Partitions / offsets need to be provided for an alter offsets request"),
    ('{"offsets": []}', "Partitions / offsets need to be provided for an alter offsets request"),
    ('{"offsets": {}}', "offsets must be a JSON array"),
    ('{"key": []}', "Unrecognized field 'key'"),
    ('{"offsets": [123]}', "offsets[0] must be a JSON object"),
    ('{"offsets": [{"key": "val"}]}', "offsets[0]: unrecognized field 'key'"),
    ('{"offsets": [{"partition": [], "offset": null}]}', "offsets[0].partition must be a JSON object, not an array"),
    ('{"offsets": [{"partition": {"f": "a"}, "offset": 5}]}', "offsets[0].offset must be a JSON object"),
    ('{"offsets": [{"partition": {"f": "a"}, "offset": {"p": [1]}}]}',
     "Offsets may only contain primitive types as values, but field p contains an array (offsets[0].offset)"),
    ('{"offsets": [{"partition": {"f": {"g": 1}}, "offset": null}]}', "field f contains an object"),
])
def test_malformed_source_offsets_are_400_naming_the_field(rest, offsets_connectors, body, words):
    async def scenario(http, herder):
        config = {"connector.class": "OffsetsSourceForTest"}
        assert (await _call(http, "POST", "/connectors",
                            {"name": "src", "config": config, "initial_state": "STOPPED"}))[0] == 201
        async with http.patch("/connectors/src/offsets", data=body, headers={"Content-Type": "application/json"}) as r:
            return r.status, await r.json()

    status, answer = rest(scenario)
    assert status == 400 and answer["error_code"] == 400
    assert words in answer["message"]
    assert offsets_connectors[0].calls == []  # refused before the connector is asked


def test_source_offsets_alter_remove_reset_and_the_connectors_say(rest, offsets_connectors):
    source, _ = offsets_connectors
    a, b = {"table": "a"}, {"table": "b"}

    async def scenario(http, herder):
        config = {"connector.class": "OffsetsSourceForTest", "topic": f"${{file:{rest.secrets}:topic}}"}
        assert (await _call(http, "POST", "/connectors",
                            {"name": "src", "config": config, "initial_state": "STOPPED"}))[0] == 201
        assert await _offsets(http, "src") == (200, {"offsets": []})

        source.answer = True
        assert await _call(http, "PATCH", "/connectors/src/offsets",
                           {"offsets": [_entry(b, {"row": 1}), _entry(a, {"row": 7, "ts": 1.5, "done": False})]}) \
            == (200, {"message": "The offsets for this connector have been altered successfully"})
        assert await _offsets(http, "src") == (200, {"offsets": [_entry(a, {"row": 7, "ts": 1.5, "done": False}),
                                                                  _entry(b, {"row": 1})]})
        config_seen, offsets_seen = source.calls[-1]
        assert config_seen["topic"] == "rest-secret-topic"  # the connector gets its config resolved
        assert offsets_seen == {'{"table":"b"}': {"row": 1}, '{"table":"a"}': {"row": 7, "ts": 1.5, "done": False}}

        source.answer = False  # a null offset removes the partition's
        assert await _call(http, "PATCH", "/connectors/src/offsets", {"offsets": [_entry(b, None)]}) \
            == (200, {"message": ALTERED})
        assert source.calls[-1][1] == {'{"table":"b"}': None}
        assert await _offsets(http, "src") == (200, {"offsets": [_entry(a, {"row": 7, "ts": 1.5, "done": False})]})

        source.answer = NotImplementedError()
        assert await _call(http, "PATCH", "/connectors/src/offsets", {"offsets": [_entry(a, {"row": 0})]}) \
            == (500, {"error_code": 500, "message": "Failed to modify offsets for connector src because it doesn't "
                                                    "support external modification of offsets"})
        source.answer = ValueError("row 0 was never read")
        assert await _call(http, "DELETE", "/connectors/src/offsets") \
            == (500, {"error_code": 500, "message": "Failed to modify offsets for source connector src: "
                                                    "ValueError: row 0 was never read"})
        # refused: nothing changed
        assert await _offsets(http, "src") == (200, {"offsets": [_entry(a, {"row": 7, "ts": 1.5, "done": False})]})

        source.answer = False
        assert await _call(http, "DELETE", "/connectors/src/offsets") == (200, {"message": RESET})
        assert source.calls[-1][1] == {'{"table":"a"}': None}  # a reset offers every partition as null
        assert await _offsets(http, "src") == (200, {"offsets": []})
        source.answer = True
        assert await _call(http, "DELETE", "/connectors/src/offsets") \
            == (200, {"message": "The offsets for this connector have been reset successfully"})

        for method, body in (("GET", None), ("PATCH", {"offsets": [_entry(a, None)]}), ("DELETE", None)):
            assert await _call(http, method, "/connectors/ghost/offsets", body) \
                == (404, {"error_code": 404, "message": "Connector ghost not found"})

    rest(scenario)


def test_a_source_offset_of_a_null_partition_is_altered_and_reset_but_never_listed(rest, offsets_connectors):
    """As Kafka Connect: PATCH takes a null partition (stored under ["<name>",null], which the task
    reads with offset(None)); the listing, and so a reset, leave it out."""
    source, _ = offsets_connectors
    a = {"table": "a"}

    async def scenario(http, herder):
        config = {"connector.class": "OffsetsSourceForTest"}
        assert (await _call(http, "POST", "/connectors",
                            {"name": "src", "config": config, "initial_state": "STOPPED"}))[0] == 201
        source.answer = True
        assert (await _call(http, "PATCH", "/connectors/src/offsets",
                            {"offsets": [_entry(None, {"row": 3}), _entry(a, {"row": 1})]}))[0] == 200
        assert source.calls[-1][1] == {"null": {"row": 3}, '{"table":"a"}': {"row": 1}}
        assert await _offsets(http, "src") == (200, {"offsets": [_entry(a, {"row": 1})]})
        assert (await _call(http, "DELETE", "/connectors/src/offsets"))[0] == 200
        assert source.calls[-1][1] == {'{"table":"a"}': None}

    rest(scenario)


@pytest.mark.integration
def test_sink_offsets_in_the_consumer_group_with_kafkas_messages(rest, broker, topic_name, offsets_connectors):
    from confluent_kafka.admin import AdminClient, NewTopic

    _, sink = offsets_connectors
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    bad = [
        ({"offsets": [{}]}, "The partition for a sink connector offset cannot be null or missing"),
        ({"offsets": [{"partition": None, "offset": None}]},
         "The partition for a sink connector offset cannot be null or missing"),
        ({"offsets": [{"partition": {}, "offset": None}]},
         "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'"),
        ({"offsets": [_sink_entry(None, 0, 1)]}, "Kafka topic names must be valid strings and may not be null"),
        ({"offsets": [_sink_entry("t", None, 1)]}, "Kafka partitions must be valid numbers and may not be null"),
        ({"offsets": [_sink_entry("t", "not a number", None)]},
         ("Failed to parse the following Kafka partition value in the provided offsets: 'not a number'. "
          "Partition values for sink connectors need to be integers.")),
        ({"offsets": [_sink_entry("t", True, None)]},
         "partition value in the provided offsets: 'true'. Partition values for sink connectors need to be integers"),
        ({"offsets": [_entry({"kafka_topic": "t", "kafka_partition": 1}, {})]},
         "The offset for a sink connector should either be null or contain the key 'kafka_offset'"),
        ({"offsets": [_sink_entry("t", 1, "not a number")]},
         ("Failed to parse the following Kafka offset value in the provided offsets: 'not a number'. "
          "Offset values for sink connectors need to be integers.")),
        ({"offsets": [_sink_entry("t", 1, 2.5)]}, "Offset values for sink connectors need to be integers"),
        ({"offsets": [_sink_entry("t", 1, -3)]}, "Kafka offsets may not be negative"),
        ({"offsets": [_sink_entry("t", -1, 3)]}, "Kafka partitions may not be negative"),
    ]

    async def scenario(http, herder):
        config = {"connector.class": "OffsetsSinkForTest", "topics": topic_name}
        assert (await _call(http, "POST", "/connectors",
                            {"name": "snk", "config": config, "initial_state": "STOPPED"}))[0] == 201
        assert await _offsets(http, "snk") == (200, {"offsets": []})
        for body, words in bad:
            status, answer = await _call(http, "PATCH", "/connectors/snk/offsets", body)
            assert (status, answer["error_code"]) == (400, 400) and words in answer["message"], (body, answer)
        assert sink.calls == []

        sink.answer = False
        # partitions and offsets as numbers or as strings, as Kafka takes them
        patch = {"offsets": [_sink_entry(topic_name, "0", "4"), _sink_entry(topic_name, 1, 2)]}
        assert await _call(http, "PATCH", "/connectors/snk/offsets", patch) == (200, {"message": ALTERED})
        assert sink.calls[-1][1] == {TopicPartition(topic_name, 0): 4, TopicPartition(topic_name, 1): 2}
        assert await _offsets(http, "snk") == (200, {"offsets": [_sink_entry(topic_name, 0, 4),
                                                                  _sink_entry(topic_name, 1, 2)]})
        sink.answer = True  # a null offset removes that partition's committed offset, the others stay
        assert await _call(http, "PATCH", "/connectors/snk/offsets", {"offsets": [_sink_entry(topic_name, 0, None)]}) \
            == (200, {"message": "The offsets for this connector have been altered successfully"})
        assert sink.calls[-1][1] == {TopicPartition(topic_name, 0): None}
        assert await _offsets(http, "snk") == (200, {"offsets": [_sink_entry(topic_name, 1, 2)]})

        sink.answer = False
        assert await _call(http, "DELETE", "/connectors/snk/offsets") == (200, {"message": RESET})
        assert sink.calls[-1][1] == {TopicPartition(topic_name, 1): None}
        assert await _offsets(http, "snk") == (200, {"offsets": []})
        assert await _call(http, "DELETE", "/connectors/snk/offsets") == (200, {"message": RESET})  # idempotent

    rest(scenario, broker=broker)


def _values(consume_records, topic):
    """Every value in partition 0 of *topic*, in order."""
    return [m.value().decode() for m in consume_records(topic, partitions=1)]


@pytest.mark.integration
def test_source_resumes_from_altered_offsets(rest, spark, broker, topic_name, tmp_path, wait_until_async,
                                             consume_records):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # kept until its future resolves
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=30)
    lines = tmp_path / "in.txt"
    lines.write_text("l1\nl2\nl3\nl4\nl5\n")  # 3 bytes a line
    partition = {"filename": str(lines)}
    config = {"connector.class": "FileStreamSource", "file": str(lines), "topic": topic_name}

    async def produced(count):
        return len(await asyncio.to_thread(_values, consume_records, topic_name)) >= count

    async def scenario(http, herder):
        assert (await _call(http, "POST", "/connectors", {"name": "src", "config": config}))[0] == 201

        async def all_read():
            return await _offsets(http, "src") == (200, {"offsets": [_entry(partition, {"position": 15})]})

        await wait_until_async(all_read, "the offset after the last line", timeout=90)
        running = NOT_STOPPED.format("src")
        assert await _call(http, "PATCH", "/connectors/src/offsets", {"offsets": [_entry(partition, None)]}) \
            == (400, {"error_code": 400, "message": running})
        assert await _call(http, "DELETE", "/connectors/src/offsets") == (400, {"error_code": 400, "message": running})
        async with http.put("/connectors/src/pause") as r:
            assert r.status == 202
        assert (await _call(http, "DELETE", "/connectors/src/offsets"))[0] == 400  # PAUSED is not STOPPED

        async with http.put("/connectors/src/stop") as r:
            assert r.status == 204
        assert await _call(http, "PATCH", "/connectors/src/offsets",
                           {"offsets": [_entry(partition, {"position": 9})]}) == (200, {"message": FILE_ALTERED})
        assert await _offsets(http, "src") == (200, {"offsets": [_entry(partition, {"position": 9})]})
        async with http.put("/connectors/src/resume") as r:
            assert r.status == 202
        await wait_until_async(lambda: produced(7), "the lines after the altered offset", timeout=90)
        await wait_until_async(all_read, "the offset after the last line, again", timeout=90)

        async with http.put("/connectors/src/stop") as r:
            assert r.status == 204
        assert await _call(http, "DELETE", "/connectors/src/offsets") == (200, {"message": FILE_RESET})
        assert await _offsets(http, "src") == (200, {"offsets": []})

    rest(scenario, spark=spark, broker=broker)
    assert _values(consume_records, topic_name) == ["l1", "l2", "l3", "l4", "l5", "l4", "l5"]


@pytest.mark.integration
def test_sink_rereads_from_the_start_after_a_reset(rest, spark, broker, topic_name, tmp_path, wait_until_async):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # kept until its future resolves
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for partition, values in ((0, ["a0", "a1", "a2"]), (1, ["b0", "b1"])):
        for value in values:
            producer.produce(topic_name, value=value.encode(), partition=partition)
    producer.flush(30)
    out = tmp_path / "out.txt"
    config = {"connector.class": "FileStreamSink", "file": str(out), "topics": topic_name}
    committed = {"offsets": [_sink_entry(topic_name, 0, 3), _sink_entry(topic_name, 1, 2)]}

    async def written(count):
        return out.exists() and len(out.read_text().splitlines()) >= count

    async def scenario(http, herder):
        assert (await _call(http, "POST", "/connectors", {"name": "snk", "config": config}))[0] == 201

        async def all_committed():
            return await _offsets(http, "snk") == (200, committed)

        await wait_until_async(all_committed, "the group's offsets after every record", timeout=90)
        assert await _call(http, "DELETE", "/connectors/snk/offsets") \
            == (400, {"error_code": 400, "message": NOT_STOPPED.format("snk")})

        async with http.put("/connectors/snk/stop") as r:
            assert r.status == 204
        assert await _call(http, "DELETE", "/connectors/snk/offsets") == (200, {"message": FILE_RESET})
        assert await _offsets(http, "snk") == (200, {"offsets": []})
        async with http.put("/connectors/snk/resume") as r:
            assert r.status == 202
        await wait_until_async(lambda: written(10), "every record a second time", timeout=90)
        await wait_until_async(all_committed, "the group's offsets after every record, again", timeout=90)

    rest(scenario, spark=spark, broker=broker)
    assert sorted(out.read_text().splitlines()) == sorted(["a0", "a1", "a2", "b0", "b1"] * 2)
