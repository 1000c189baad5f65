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
    ('{"name": "a", "config": {"tasks.max": [1]}}', "tasks.max"),
    ('{"name": "a", "config": {"file": {"path": "/tmp/x"}}}', "values must be strings, numbers or booleans"),
    # Kafka's Jackson refuses fields CreateConnectorRequest does not have; a misspelt one must not pass
    ('{"name": "a", "config": {}, "initial_sate": "STOPPED"}',
     "Unrecognized field 'initial_sate' in the request body; expected name, config, initial_state"),
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
    assert message.startswith("Connector configuration is invalid and contains the following 3 error(s):\n")
    # Kafka Connect's last line, pointing at where each key's errors are listed
    assert message.endswith("\nYou can also find the above list of errors at the endpoint "
                            "`/connector-plugins/{connectorType}/config/validate`")
    assert "tasks.max='zero': expected a 32-bit integer" in message
    assert "expected only one of topics and topics.regex" in message


def test_unknown_connector_is_404_everywhere(rest):
    async def scenario(http, herder):
        calls = [("GET", "/connectors/ghost"), ("DELETE", "/connectors/ghost"), ("GET", "/connectors/ghost/config"),
                 ("PATCH", "/connectors/ghost/config"), ("GET", "/connectors/ghost/status"),
                 ("GET", "/connectors/ghost/tasks"), ("GET", "/connectors/ghost/tasks-config"),
                 ("GET", "/connectors/ghost/tasks/0/status"), ("POST", "/connectors/ghost/restart"),
                 # empty flags are their defaults, as in Kafka: not a 400
                 ("POST", "/connectors/ghost/restart?includeTasks=&onlyFailed="),
                 ("POST", "/connectors/ghost/tasks/0/restart"),
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


_SOURCE = {"connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/in.txt"}


@pytest.mark.parametrize(("policy", "refused", "allowed"), [
    ("None", ["producer.override.linger.ms", "admin.override.request.timeout.ms",
              "producer.override.sasl.jaas.config"], []),
    ("Principal", ["producer.override.linger.ms", "admin.override.request.timeout.ms"],
     ["producer.override.sasl.jaas.config", "producer.override.security.protocol"]),
    ("org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy", [],
     ["producer.override.linger.ms", "admin.override.request.timeout.ms", "producer.override.sasl.mechanism"]),
])
def test_client_overrides_the_worker_policy_forbids_are_400_naming_each(rest, policy, refused, allowed):
    overrides = {key: "PLAIN" if "sasl.mechanism" in key else "SASL_PLAINTEXT" if "protocol" in key
                 else 'x required username="u" password="p";' if "jaas" in key else "5" for key in refused + allowed}

    async def scenario(http, herder):
        config = {**_SOURCE, **overrides}
        async with http.post("/connectors", json={"name": "over", "config": config}) as r:
            created = r.status, await r.json()
        async with http.put("/connector-plugins/FileStreamSource/config/validate", json=config) as r:
            validated = await r.json()
        return created, validated, herder.connectors()

    (status, answer), validated, connectors = rest(
        scenario, worker={"connector.client.config.override.policy": policy})
    errors = {c["value"]["name"]: c["value"]["errors"] for c in validated["configs"] if c["value"]["errors"]}
    if refused:
        assert status == 400 and connectors == []
        for key in refused:
            assert f"{key}: is not allowed: the worker's connector.client.config.override.policy is" in answer["message"]
            assert any("is not allowed" in e for e in errors[key])
    else:
        assert status == 201 and connectors == ["over"]
    for key in allowed:
        assert f"{key}: is not allowed" not in answer.get("message", "") and key not in errors


_SINK = {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/out.txt"}


@pytest.mark.parametrize(("key", "value", "words"), [
    ("consumer.override.enable.auto.commit", "true", "not supported: connectd commits a sink's offsets itself"),
    ("consumer.override.value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer",
     "not supported: records are deserialized by the connector's converters"),
    ("consumer.override.fetch.max.wait.ms", "soon", "expected a number"),
    ("consumer.override.no.such.setting", "1", "not supported: librdkafka has no such setting for a consumer"),
    ("admin.override.default.api.timeout.ms", "60000", "not supported: librdkafka has no such setting for an admin"),
    ("producer.override.transactional.id", "t-1", "not supported: a source task's transactional id is connectd's"),
    ("producer.override.partitioner.class", "org.apache.kafka.clients.producer.RoundRobinPartitioner",
     "expected one of org.apache.kafka.clients.producer.internals.DefaultPartitioner"),
])
def test_a_client_override_connectd_would_not_carry_out_is_400_naming_it(rest, key, value, words):
    """Every ``<client>.override.*`` is honoured or refused by name (issue 12's audit)."""
    async def scenario(http, herder):
        config = {**_SINK, key: value}
        async with http.post("/connectors", json={"name": "over", "config": config}) as r:
            return r.status, await r.json(), herder.connectors()

    status, answer, connectors = rest(scenario)
    assert status == 400 and connectors == [] and f"{key}={value!r}: {words}" in answer["message"], answer


def test_overrides_connectd_carries_out_or_whose_purpose_never_arises_are_accepted(rest):
    """The sink's group and put() size are connectd's to carry out; group-membership timeouts have
    nothing to act on (the consumers never join the group): accepted, the latter with a warning."""
    overrides = {"consumer.override.group.id": "legacy", "consumer.override.max.poll.records": "100",
                 "consumer.override.max.poll.interval.ms": "600000", "consumer.override.fetch.min.bytes": "1",
                 "producer.override.linger.ms": "5", "admin.override.request.timeout.ms": "5000"}

    async def scenario(http, herder):
        config = {"name": "over", **_SINK, **overrides}
        async with http.put("/connector-plugins/FileStreamSink/config/validate", json=config) as r:
            validated = await r.json()
        async with http.post("/connectors", json={"name": "over", "config": config}) as r:
            return r.status, validated, herder.connectors()

    status, validated, connectors = rest(scenario)
    errors = {c["value"]["name"]: c["value"]["errors"] for c in validated["configs"] if c["value"]["errors"]}
    assert status == 201 and connectors == ["over"] and validated["error_count"] == 0, errors


def test_exactly_once_required_on_a_worker_without_it_is_refused_with_400(rest):
    async def scenario(http, herder):
        config = {**_SOURCE, "exactly.once.support": "required"}
        async with http.post("/connectors", json={"name": "eos", "config": config}) as r:
            return r.status, (await r.json())["message"], herder.connectors()

    status, message, connectors = rest(scenario)
    assert status == 400 and connectors == []
    assert ("exactly.once.support='required': exactly-once delivery is required, and this worker's "
            "exactly.once.source.support is not enabled") in message


def test_exactly_once_requested_is_what_a_worker_without_it_gives(rest):
    async def scenario(http, herder):
        config = {**_SOURCE, "exactly.once.support": "requested"}
        async with http.post("/connectors", json={"name": "eos", "config": config}) as r:
            return r.status

    assert rest(scenario) == 201


def test_transaction_boundary_poll_without_exactly_once_is_accepted_as_kafka_connect_accepts_it(rest):
    async def scenario(http, herder):
        config = {**_SOURCE, "name": "eos", "transaction.boundary": "poll"}
        async with http.put(f"/connector-plugins/{_SOURCE['connector.class']}/config/validate", json=config) as r:
            validated = await r.json()
        async with http.post("/connectors", json={"name": "eos", "config": config}) as r:
            return validated, r.status

    validated, status = rest(scenario)
    assert status == 201 and validated["error_count"] == 0


def test_tasks_config_of_kafka_3_maps_task_ids_to_configs(rest):
    # GET /connectors/{c}/tasks-config: deprecated by Kafka 3.7 (KIP-970), still called by 3.x scripts.
    async def scenario(http, herder):
        config = {**_SOURCE, "name": "parked"}
        async with http.post("/connectors", json={"name": "parked", "config": config,
                                                  "initial_state": "STOPPED"}) as r:
            assert r.status == 201
        async with http.get("/connectors/parked/tasks-config") as r:
            stopped = r.status, await r.json()
        herder.task_configs = lambda name: [{"task.class": "A", "n": "0"}, {"task.class": "A", "n": "1"}]
        async with http.get("/connectors/parked/tasks-config") as r:
            running = r.status, await r.json()
        return stopped, running

    stopped, running = rest(scenario)
    assert stopped == (200, {})
    assert running == (200, {"parked-0": {"task.class": "A", "n": "0"}, "parked-1": {"task.class": "A", "n": "1"}})


def test_put_config_of_a_name_with_surrounding_whitespace_creates_nothing(rest):
    # The herder strips names: PUT /connectors/a%20/config would create "a" and then answer 404.
    async def scenario(http, herder):
        async with http.put("/connectors/a%20/config", json={**_SOURCE}) as r:
            return r.status, (await r.json())["message"], herder.connectors()

    status, message, connectors = rest(scenario)
    assert status == 400 and "'a '" in message and "whitespace" in message
    assert connectors == []


def test_numbers_and_booleans_in_a_config_are_taken_as_their_text(rest):
    # Kafka Connect's Jackson reads a JSON number or boolean into a String as its text, so
    # `"tasks.max": 1` works there: scripts written for it send such configs.
    body = ('{"connector.class": "FileStreamSource", "topic": "t", "file": 1.50, "tasks.max": 1, '
            '"errors.log.enable": true}')
    headers = {"Content-Type": "application/json"}

    async def scenario(http, herder):
        answers = []
        created = f'{{"name": "typed", "initial_state": "STOPPED", "config": {body}}}'
        async with http.post("/connectors", data=created, headers=headers) as r:
            answers.append((r.status, (await r.json())["config"]))
        async with http.put("/connectors/typed/config", data=body.replace("1.50", "2e3"), headers=headers) as r:
            answers.append((r.status, (await r.json())["config"]))
        async with http.patch("/connectors/typed/config", data='{"batch.size": 10}', headers=headers) as r:
            answers.append((r.status, (await r.json())["config"]))
        async with http.put("/connector-plugins/FileStreamSource/config/validate", data=body, headers=headers) as r:
            values = {c["value"]["name"]: c["value"] for c in (await r.json())["configs"]}
            answers.append((r.status, {key: values[key]["value"] for key in ("file", "tasks.max")}))
        return answers

    (posted, post), (put, put_config), (patched, patch), (validated, values) = rest(scenario)
    assert posted == 201 and put == 200 and patched == 200 and validated == 200
    assert {k: post[k] for k in ("file", "tasks.max", "errors.log.enable")} == {
        "file": "1.50", "tasks.max": "1", "errors.log.enable": "true"}  # as written, not 1.5
    assert put_config["file"] == "2e3" and patch["batch.size"] == "10"
    assert values == {"file": "1.50", "tasks.max": "1"}


def test_the_internal_endpoints_are_404_on_a_standalone_worker(rest):
    """Kafka Connect's internal requests between workers (task configs to the leader, a round of
    zombie fencing) mean nothing to a standalone worker: it answers 404 saying why."""
    async def scenario(http, herder):
        answers = []
        for method, path, body in (("POST", "/connectors/c/tasks", []), ("PUT", "/connectors/c/fence", None)):
            async with http.request(method, path, json=body) as r:
                answers.append((r.status, (await r.json())["message"]))
        return answers

    assert rest(scenario) == [
        (404, "Task configs are written by the leader of a Connect cluster; this worker is standalone"),
        (404, "Zombie fencing is the leader's of a Connect cluster; this worker is standalone"),
    ]
