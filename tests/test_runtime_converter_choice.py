"""Per-connector converters: the connector's class and settings, or the worker's — never mixed."""

from __future__ import annotations

import pytest

from connectd.data import JsonConverter, Schema, SimpleHeaderConverter, StringConverter
from connectd.errors import ConfigError
from connectd.plugins import get_registry
from connectd.runtime.converter_choice import choose_converter, configure_converters


def find(name: str) -> type:
    return get_registry().find_class("converter", name)


WORKER = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}


def test_worker_converters_apply_when_the_connector_names_none():
    converters = configure_converters(WORKER, {"name": "c"}, find)
    assert isinstance(converters["key"], StringConverter)
    assert isinstance(converters["value"], JsonConverter)
    assert isinstance(converters["header"], SimpleHeaderConverter)
    # schemas.enable=false from the worker: plain JSON, no envelope
    assert converters["value"].from_connect_data("t", None, {"a": 1}) == b'{"a":1}'


def test_connector_class_comes_with_its_own_settings_only():
    connector = {"value.converter": "JsonConverter"}  # schemas.enable defaults to true again
    choice = choose_converter("value", WORKER, connector)
    assert (choice.chosen_by, choice.settings) == ("connector", {})
    converters = configure_converters(WORKER, connector, find)
    assert converters["value"].from_connect_data("t", Schema.INT32, 7) == b'{"schema":{"type":"int32","optional":false},"payload":7}'


def test_connector_settings_without_a_class_are_not_mixed_into_the_workers():
    converters = configure_converters(WORKER, {"value.converter.schemas.enable": "true"}, find)
    assert converters["value"].from_connect_data("t", Schema.INT32, 7) == b"7"


def test_key_converter_knows_it_is_for_keys():
    converters = configure_converters(WORKER, {}, find)
    assert converters["key"].is_key is True and converters["value"].is_key is False


def test_settings_resolve_placeholders():
    worker = {**WORKER, "key.converter.converter.encoding": "${env:ENC}"}
    converters = configure_converters(worker, {}, find, resolve=lambda v: "ISO-8859-1" if v == "${env:ENC}" else v)
    assert converters["key"].from_connect_data("t", None, "é") == b"\xe9"


def test_every_problem_of_every_converter_at_once():
    connector = {
        "key.converter": "NoSuchConverter",
        "value.converter": "JsonConverter",
        "value.converter.decimal.format": "FOO",
    }
    with pytest.raises(ConfigError) as info:
        configure_converters(WORKER, connector, find)
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("key.converter='NoSuchConverter' (connector): no converter named 'NoSuchConverter'")
    assert lines[1] == "value.converter.decimal.format='FOO': expected one of [BASE64, NUMERIC] (any case)"


def test_a_required_converter_named_nowhere():
    with pytest.raises(ConfigError, match="key.converter is required"):
        choose_converter("key", {}, {})
