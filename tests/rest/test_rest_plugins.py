"""``/connector-plugins``: listings, a plugin's settings, validating a config."""

from __future__ import annotations

from connectd.errors import ConfigError


def test_list_connectors_only_by_default(rest):
    async def scenario(http, herder):
        async with http.get("/connector-plugins") as r:
            assert r.status == 200
            plugins = await r.json()
        async with http.get("/connector-plugins?connectorsOnly=false") as r:
            everything = await r.json()
        async with http.get("/connector-plugins?connectorsOnly=maybe") as r:
            assert r.status == 400
        async with http.get("/connector-plugins?connectorsOnly=") as r:  # empty: the default, as in Kafka
            assert r.status == 200 and await r.json() == plugins
        async with http.get("/connector-plugins?connectorsOnly=FALSE") as r:
            assert await r.json() == everything
        return plugins, everything

    plugins, everything = rest(scenario)
    assert all(set(p) == {"class", "type", "version"} for p in plugins)
    assert {p["type"] for p in plugins} == {"source", "sink"}
    assert any(p["class"].endswith("FileStreamSourceConnector") and p["type"] == "source" for p in plugins)
    types = {p["type"] for p in everything}
    assert {"source", "sink", "converter", "header_converter", "transformation", "predicate"} <= types
    assert len(everything) > len(plugins)


def test_list_orders_and_types_plugins_as_kafka(rest):
    # Kafka lists sinks, sources, transformations, predicates, converters, header converters, each by
    # class name, and a class under every plugin interface it implements (StringConverter twice).
    async def scenario(http, herder):
        async with http.get("/connector-plugins") as r:
            connectors = await r.json()
        async with http.get("/connector-plugins?connectorsOnly=false") as r:
            return connectors, await r.json()

    connectors, everything = rest(scenario)
    assert [p["type"] for p in connectors] == sorted((p["type"] for p in connectors), key=["sink", "source"].index)
    order = ["sink", "source", "transformation", "predicate", "converter", "header_converter", "config_provider"]
    assert [(order.index(p["type"]), p["class"]) for p in everything] == sorted(
        (order.index(p["type"]), p["class"]) for p in everything)
    kinds = {}
    for p in everything:
        kinds.setdefault(p["class"].rpartition(".")[2], []).append(p["type"])
    assert kinds["StringConverter"] == ["converter", "header_converter"]
    assert kinds["SimpleHeaderConverter"] == ["header_converter"]


def test_plugin_config_lists_its_keys_then_the_frameworks(rest):
    async def scenario(http, herder):
        async with http.get("/connector-plugins/FileStreamSource/config") as r:
            assert r.status == 200
            keys = await r.json()
        async with http.get("/connector-plugins/NoSuchConnector/config") as r:
            assert r.status == 404
            assert (await r.json())["error_code"] == 404
        return keys

    listed = rest(scenario)
    keys = {k["name"]: k for k in listed}
    # The plugin's own keys, then the framework's source keys, as Kafka Connect lists them since 3.5.
    assert [k["name"] for k in listed[:3]] == ["file", "topic", "batch.size"]
    assert {"name", "connector.class", "tasks.max", "key.converter", "transforms", "errors.tolerance",
            "topic.creation.groups"} <= set(keys)
    assert "topics" not in keys and len(keys) == len(listed)  # a sink's keys are not a source's; none twice
    assert keys["connector.class"]["group"] == "Common" and keys["connector.class"]["required"] is True
    # Jackson writes `order` last: it is not one of ConfigKeyInfo's creator properties.
    assert list(keys["file"]) == ["name", "type", "required", "default_value", "importance", "documentation",
                                  "group", "width", "display_name", "dependents", "order"]
    assert keys["file"]["required"] is False and keys["file"]["default_value"] is None  # unset: stdin, as Kafka
    assert keys["batch.size"] == {**keys["batch.size"], "type": "INT", "required": False, "default_value": "2000",
                                  "importance": "LOW", "width": "NONE", "display_name": "batch.size",
                                  "dependents": []}
    assert keys["topic"]["documentation"] == "The topic to publish data to."  # Kafka's text


def test_validate_reports_errors_per_key(rest):
    async def scenario(http, herder):
        bad = {"connector.class": "FileStreamSource", "tasks.max": "zero", "topic": "t", "batch.size": "0"}
        async with http.put("/connector-plugins/FileStreamSource/config/validate", json=bad) as r:
            assert r.status == 200
            result = await r.json()
        good = {"connector.class": "FileStreamSource", "name": "n", "file": "/tmp/x", "topic": "t"}
        async with http.put("/connector-plugins/FileStreamSource/config/validate", json=good) as r:
            clean = await r.json()
        kept = {**good, "topic": f"${{file:{rest.secrets}:topic}}"}
        async with http.put("/connector-plugins/FileStreamSource/config/validate", json=kept) as r:
            placeholder = {c["value"]["name"]: c["value"] for c in (await r.json())["configs"]}["topic"]
        assert placeholder["value"] == kept["topic"] and placeholder["errors"] == []
        async with http.put("/connector-plugins/FileStreamSink/config/validate", json=good) as r:
            assert r.status == 400  # connector.class says another plugin
        async with http.put("/connector-plugins/Nope/config/validate", json=good) as r:
            assert r.status == 404
        return result, clean

    result, clean = rest(scenario)
    values = {c["value"]["name"]: c["value"] for c in result["configs"]}
    assert result["error_count"] == sum(len(v["errors"]) for v in values.values()) >= 3
    assert any("expected a 32-bit integer" in e for e in values["tasks.max"]["errors"])
    assert values["batch.size"]["errors"] and values["name"]["errors"]
    assert values["topic"] == {"name": "topic", "value": "t", "recommended_values": [], "errors": [], "visible": True}
    # a key with a fixed set of values recommends them
    assert values["errors.tolerance"]["recommended_values"] == ["none", "all"]
    assert values["errors.log.enable"]["recommended_values"] == ["true", "false"]
    assert values["tasks.max"]["recommended_values"] == []
    assert result["groups"] == list(dict.fromkeys(c["definition"]["group"] for c in result["configs"]
                                                  if c["definition"]["group"]))
    assert set(result["configs"][0]) == {"definition", "value"}
    assert clean["error_count"] == 0


def test_validate_names_the_result_after_connector_class_as_written(rest):
    # Kafka's ConfigInfos.name is the request's connector.class, not the plugin's full class name.
    async def scenario(http, herder):
        names = []
        for plugin, config in [("FileStreamSource", {"connector.class": "FileStreamSource", "topic": "t"}),
                               ("FileStreamSourceConnector",
                                {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector"}),
                               ("FileStreamSourceConnector", {"topic": "t"})]:
            async with http.put(f"/connector-plugins/{plugin}/config/validate", json=config) as r:
                assert r.status == 200, await r.text()
                names.append((await r.json())["name"])
        return names

    assert rest(scenario) == ["FileStreamSource", "org.apache.kafka.connect.file.FileStreamSourceConnector",
                              "FileStreamSourceConnector"]


def _topic_creation_errors(result: dict) -> list[str]:
    return [error for c in result["configs"] for error in c["value"]["errors"] if "topic.creation" in error]


def test_topic_creation_settings_are_checked_only_when_the_worker_creates_topics(rest):
    """A source's topic.creation.* keys without both default counts: refused where the worker's
    topic.creation.enable is true (the tasks would fail), accepted where it is false, since the
    tasks then ignore them, as Kafka's do (validation, and a create request, alike)."""
    config = {"connector.class": "FileStreamSource", "name": "created", "file": "/tmp/x", "topic": "t",
              "topic.creation.default.partitions": "3"}

    def scenario_for(enabled: bool):
        async def scenario(http, herder):
            async with http.put("/connector-plugins/FileStreamSource/config/validate", json=config) as r:
                assert r.status == 200, await r.text()
                result = await r.json()
            try:
                await herder._validated(config, lambda key: None, None)
                refused = None
            except ConfigError as exc:
                refused = str(exc)
            return _topic_creation_errors(result), refused
        return scenario

    errors, refused = rest(scenario_for(True), worker={"topic.creation.enable": "true"})
    assert len(errors) == 1 and "topic.creation.default.replication.factor are both required" in errors[0]
    assert refused is not None and "are both required" in refused
    assert rest(scenario_for(False), worker={"topic.creation.enable": "false"}) == ([], None)


def test_validate_reports_a_null_value_as_an_error_of_its_key(rest):
    # Kafka validates a config with a null value (200, one error on that key); only creating
    # a connector with it is refused.
    async def scenario(http, herder):
        config = {"connector.class": "FileStreamSource", "name": "n", "topic": "t", "file": None}
        async with http.put("/connector-plugins/FileStreamSource/config/validate", json=config) as r:
            return r.status, await r.json()

    status, result = rest(scenario)
    errors = {c["value"]["name"]: c["value"]["errors"] for c in result["configs"] if c["value"]["errors"]}
    assert status == 200
    assert errors == {"file": ["file: Null value can not be supplied as the configuration value."]}
    assert result["error_count"] == 1
