"""Kafka's RegexRouterTest, TimestampRouterTest, HasHeaderKeyTest and TopicNameMatchesTest, case by case."""

from __future__ import annotations

import pytest

from connectd.data import Headers, SinkRecord, SourceRecord
from connectd.errors import ConfigError
from connectd.transforms import HasHeaderKey, RegexRouter, TimestampRouter, TopicNameMatches

from ._support import configured


@pytest.mark.parametrize(("regex", "replacement", "topic", "expected"), [
    ("foo", "bar", "foo", "bar"),
    ("foo", "bar", "orig", "orig"),
    ("(.*)", "$1", "orig", "orig"),
    ("(.*)", "prefix-$1", "orig", "prefix-orig"),
    ("(.*)", "$1-suffix", "orig", "orig-suffix"),
    ("(.*)-(\\d\\d\\d\\d\\d\\d\\d\\d)", "$1", "index-20160117", "index"),
])
def test_regex_router(regex, replacement, topic, expected):
    router = configured(RegexRouter, {"regex": regex, "replacement": replacement})
    assert router.apply(SinkRecord(topic=topic, kafka_partition=0, kafka_offset=0)).topic == expected
    router.close()


def test_timestamp_router_defaults():
    router = configured(TimestampRouter, {})
    record = SourceRecord(topic="test", kafka_partition=0, timestamp=1483425001864)
    assert router.apply(record).topic == "test-20170103"


# --- HasHeaderKeyTest ------------------------------------------------------------------------


def test_has_header_key_name_is_required_and_not_empty():
    with pytest.raises(ConfigError, match="name is required"):
        configured(HasHeaderKey, {})
    with pytest.raises(ConfigError, match="name='': expected a non-empty string"):
        configured(HasHeaderKey, {"name": ""})
    assert [problem.key for problem in HasHeaderKey.config_def.validate({"name": ""}) if problem.is_error] == ["name"]
    assert not [problem for problem in HasHeaderKey.config_def.validate({"name": "foo"}) if problem.is_error]


def with_headers(*names):
    return SourceRecord(topic="t", headers=Headers([(name, None, None) for name in names]))


def test_has_header_key():
    predicate = configured(HasHeaderKey, {"name": "foo"})
    assert predicate.test(with_headers("foo"))
    assert predicate.test(with_headers("foo", "bar"))
    assert predicate.test(with_headers("bar", "foo", "bar", "foo"))
    assert not predicate.test(with_headers("bar"))
    assert not predicate.test(with_headers("bar", "bar"))
    assert not predicate.test(with_headers())


# --- TopicNameMatchesTest ----------------------------------------------------------------------


@pytest.mark.parametrize(("config", "message"), [
    ({}, "pattern is required"),
    ({"pattern": ""}, "expected a non-empty string"),
    ({"pattern": "["}, "pattern='\\['"),
    ({"pattern": "*"}, "pattern='\\*'"),
])
def test_topic_name_matches_config(config, message):
    with pytest.raises(ConfigError, match=message):
        configured(TopicNameMatches, config)


def test_topic_name_matches():
    predicate = configured(TopicNameMatches, {"pattern": "my-prefix-.*"})
    assert predicate.test(SourceRecord(topic="my-prefix-"))
    assert predicate.test(SourceRecord(topic="my-prefix-foo"))
    for topic in ("x-my-prefix-", "x-my-prefix-foo", "your-prefix-", "your-prefix-foo"):
        assert not predicate.test(SourceRecord(topic=topic))
    assert not predicate.test(SourceRecord(topic=None))
