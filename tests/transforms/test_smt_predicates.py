"""HasHeaderKey, RecordIsTombstone and TopicNameMatches."""

from __future__ import annotations

import pytest

from connectd.data import Headers, SourceRecord
from connectd.errors import ConfigError
from connectd.transforms import HasHeaderKey, RecordIsTombstone, TopicNameMatches

from ._support import configured


def test_has_header_key():
    predicate = configured(HasHeaderKey, name="trace")
    assert predicate.test(SourceRecord(topic="t", headers=Headers().add("a", 1).add("trace", None)))
    assert not predicate.test(SourceRecord(topic="t", headers=Headers().add("a", 1)))


def test_has_header_key_needs_a_name():
    with pytest.raises(ConfigError, match=r"name is required \(the header name\)"):
        configured(HasHeaderKey)
    with pytest.raises(ConfigError, match=r"name='': expected a non-empty string"):
        configured(HasHeaderKey, name="")


def test_record_is_tombstone():
    predicate = configured(RecordIsTombstone)
    assert predicate.test(SourceRecord(topic="t", key="k", value=None))
    assert not predicate.test(SourceRecord(topic="t", value=0))


@pytest.mark.parametrize(
    "pattern, topic, expected",
    [
        ("orders-.*", "orders-eu", True),
        ("orders", "orders-eu", False),  # the whole name must match
        ("(?<region>eu|us)-.*", "us-orders", True),
        ("(?i)ORDERS", "orders", True),
    ],
)
def test_topic_name_matches(pattern, topic, expected):
    assert configured(TopicNameMatches, pattern=pattern).test(SourceRecord(topic=topic)) is expected


def test_topic_name_matches_config_problems():
    with pytest.raises(ConfigError, match=r"pattern='\[': expected a valid regular expression"):
        configured(TopicNameMatches, pattern="[")
    with pytest.raises(ConfigError, match=r"pattern='': expected a non-empty string"):
        configured(TopicNameMatches, pattern="")
