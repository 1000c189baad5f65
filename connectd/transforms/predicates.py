"""Predicates for conditional transforms: HasHeaderKey, RecordIsTombstone, TopicNameMatches.

A transform with ``transforms.<alias>.predicate=<predicate alias>`` applies
only to the records the predicate is true for (with
``transforms.<alias>.negate=true``, only to those it is false for).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connectd.config.definitions import And, ConfigDef, ConfigKey, Importance, NonEmptyString, Type
from connectd.transforms._regex import JavaRegex, compile_java
from connectd.transforms.base import Predicate

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]


class HasHeaderKey(Predicate):
    """True for records with at least one header of the given name (Kafka's ``org.apache.kafka.connect.transforms.predicates.HasHeaderKey``)."""

    config_def = ConfigDef([
        ConfigKey("name", Type.STRING, "The header name.", importance=Importance.MEDIUM,
                  validator=NonEmptyString()),
    ])

    def setup(self, config: dict[str, Any]) -> None:
        self.name: str = config["name"]

    def test(self, record: ConnectRecord) -> bool:
        return record.headers.last_with_name(self.name) is not None


class RecordIsTombstone(Predicate):
    """True for tombstones, records whose value is null (Kafka's ``org.apache.kafka.connect.transforms.predicates.RecordIsTombstone``)."""

    config_def = ConfigDef()

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None


class TopicNameMatches(Predicate):
    """True for records whose whole topic name matches a regular expression (Kafka's ``org.apache.kafka.connect.transforms.predicates.TopicNameMatches``)."""

    config_def = ConfigDef([
        ConfigKey("pattern", Type.STRING,
                  "A regular expression (Java syntax) that the whole name of a record's topic must match.",
                  importance=Importance.MEDIUM, validator=And(NonEmptyString(), JavaRegex())),
    ])

    def setup(self, config: dict[str, Any]) -> None:
        self.pattern = compile_java(config["pattern"])

    def test(self, record: ConnectRecord) -> bool:
        return record.topic is not None and self.pattern.fullmatch(record.topic) is not None
