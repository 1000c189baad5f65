"""``/connectors`` requests refused before any connector starts: bad bodies, invalid configs, unknown names."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("body", "words"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ('{"config": {"connector.class": "FileStreamSource"}}', "name"),
    ('{"name": "", "config": {}}', "name"),
    ('{"name": "a"}', "config"),
    ('{"name": "a", "config": "x"}', "config"),
    ('{"name": "a", "config": {"tasks.max": 1}}', "tasks.max"),
    ('{"name": "a", "config": {"name": "b"}}', "doesn't match"),
    ('{"name": "a", "config": {}, "initial_state": "ASLEEP"}', "initial_state"),
    ('{"name": "a\\nb", "config": {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/x"}}',
     "must not contain control characters (Kafka Connect refuses them), but has U+000A at position 1"),
    ('{"name": "%s", "config": {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/x"}}' % ("n" * 5000),
     "is 5000 characters long: at most 255 are accepted"),
    ("[" * 1000 + "]" * 1000, "nested too deeply"),
])
def test_bad_body_is_400_naming_the_field(rest, body, words):
    async def scenario(http, herder):
        async with http.post("/connectors", data=body, headers={"Content-Type": "application/json"}) as r:
            return r.status, await r.json()

    status, answer = rest(scenario)
    assert status == 400 and answer["error_code"] == 400
    assert words in answer["message"]


def test_invalid_config_is_400_listing_every_problem(rest):
    async def scenario(http, herder):
        config = {"connector.class": "FileStreamSink", "tasks.max": "zero", "topics": "x", "topics.regex": "y.*"}
        async with http.post("/connectors", json={"name": "bad", "config": config}) as r:
            assert r.status == 400
            message = (await r.json())["message"]
        async with http.put("/connectors/bad/config", json=config) as r:
            assert r.status == 400
        assert herder.connectors() == []
        return message

    message = rest(scenario)
    assert "tasks.max='zero': expected a 32-bit integer" in message
    assert "expected only one of topics and topics.regex" in message
    assert "file" in message


def test_unknown_connector_is_404_everywhere(rest):
    async def scenario(http, herder):
        calls = [("GET", "/connectors/ghost"), ("DELETE", "/connectors/ghost"), ("GET", "/connectors/ghost/config"),
                 ("PATCH", "/connectors/ghost/config"), ("GET", "/connectors/ghost/status"),
                 ("GET", "/connectors/ghost/tasks"), ("GET", "/connectors/ghost/tasks/0/status"),
                 ("POST", "/connectors/ghost/restart"), ("POST", "/connectors/ghost/tasks/0/restart"),
                 ("PUT", "/connectors/ghost/pause"), ("PUT", "/connectors/ghost/resume"),
                 ("PUT", "/connectors/ghost/stop")]
        answers = []
        for method, path in calls:
            body = {"k": "v"} if method == "PATCH" else None
            async with http.request(method, path, json=body) as r:
                answers.append((method, path, r.status, await r.json()))
        return answers

    for method, path, status, body in rest(scenario):
        assert status == 404, (method, path, body)
        assert body["error_code"] == 404 and "ghost" in body["message"], (method, path, body)
    assert body["message"] == "Connector ghost not found"
