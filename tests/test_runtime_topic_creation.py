"""topic.creation.* rules (pure logic; the integration test creates a real topic)."""

from __future__ import annotations

import pytest

from connectd.errors import ConfigError
from connectd.runtime.source.topic_creation import TopicCreationRules, TopicSettings

BASE = {"topic.creation.default.partitions": "3", "topic.creation.default.replication.factor": "1"}


def test_off_unless_the_connector_asks_and_the_worker_allows():
    assert not TopicCreationRules.from_config({}).enabled
    assert not TopicCreationRules.from_config(BASE, worker_enabled=False).enabled
    assert TopicCreationRules.from_config({}).settings_for("t") is None


def test_default_group_matches_every_topic():
    rules = TopicCreationRules.from_config({**BASE, "topic.creation.default.cleanup.policy": "compact"})
    assert rules.settings_for("anything") == TopicSettings(3, 1, {"cleanup.policy": "compact"})


def test_first_matching_group_wins_and_inherits_missing_counts():
    rules = TopicCreationRules.from_config({
        **BASE,
        "topic.creation.groups": "compacted, big",
        "topic.creation.compacted.include": "status-.*, config-.*",
        "topic.creation.compacted.exclude": "config-tmp-.*",
        "topic.creation.compacted.partitions": "1",
        "topic.creation.compacted.cleanup.policy": "compact",
        "topic.creation.big.include": ".*-events",
        "topic.creation.big.partitions": "12",
        "topic.creation.big.replication.factor": "-1",
    })
    assert rules.settings_for("status-x") == TopicSettings(1, 1, {"cleanup.policy": "compact"})
    assert rules.settings_for("config-tmp-1") == TopicSettings(3, 1, {})  # excluded: default
    assert rules.settings_for("click-events") == TopicSettings(12, -1, {})
    assert rules.settings_for("other") == TopicSettings(3, 1, {})


def test_every_problem_at_once():
    with pytest.raises(ConfigError) as info:
        TopicCreationRules.from_config({
            "topic.creation.default.partitions": "0",
            "topic.creation.groups": "g",
            "topic.creation.g.include": "(",
        })
    problems = info.value.problems
    assert any("both required" in p for p in problems)
    assert any("topic.creation.default.partitions='0': expected at least 1" in p for p in problems)
    assert any("topic.creation.g.include='(': expected a regular expression" in p for p in problems)


def test_any_topic_creation_key_asks_for_creation_and_then_needs_both_defaults():
    # As Kafka's SourceConnectorConfig: groups without the default counts are refused, not ignored.
    with pytest.raises(ConfigError) as info:
        TopicCreationRules.from_config({"topic.creation.groups": "g", "topic.creation.g.include": "t.*",
                                        "topic.creation.g.partitions": "2"})
    assert any("both required" in p for p in info.value.problems)
    assert not TopicCreationRules.from_config({"topic.creation.groups": "g"}, worker_enabled=False).enabled


def test_the_default_group_takes_every_other_topic_whatever_its_include_and_exclude_say():
    rules = TopicCreationRules.from_config({**BASE, "topic.creation.groups": "default, g",
                                            "topic.creation.g.include": "g-.*", "topic.creation.g.partitions": "5",
                                            "topic.creation.default.include": "nothing",
                                            "topic.creation.default.exclude": "other"})
    assert rules.settings_for("g-1") == TopicSettings(5, 1, {})
    assert rules.settings_for("other") == TopicSettings(3, 1, {})
