"""``RegexRouter``: rename the topic with a regular expression and a replacement."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Importance, Type
from connectd.transforms._regex import JavaRegex, JavaReplacement, compile_java
from connectd.transforms.base import Transformation

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["RegexRouter"]


class RegexRouter(Transformation):
    """Rename a record's topic when the whole topic matches ``regex`` (Kafka's ``org.apache.kafka.connect.transforms.RegexRouter``).

    The first match is replaced with ``replacement``, where ``$1`` (or
    ``${name}``) is a group of the match, as in ``java.util.regex.Matcher``::

        regex=(.*)-raw  replacement=$1-clean     orders-raw → orders-clean

    A topic that does not match is left alone.
    """

    config_def = ConfigDef([
        ConfigKey("regex", Type.STRING,
                  "Regular expression (Java syntax) the whole topic name must match for the record to be routed.",
                  importance=Importance.HIGH, validator=JavaRegex()),
        ConfigKey("replacement", Type.STRING,
                  "The new topic name: the replacement for the first match of regex, where $1, $2, … and ${name} "
                  "stand for groups of the match and \\ makes the next character literal.",
                  importance=Importance.HIGH),
    ])

    def validate(self, config: dict[str, Any]) -> list[ConfigProblem]:
        regex, replacement = config.get("regex"), config.get("replacement")
        if regex is None or replacement is None:
            return []
        try:
            JavaReplacement(replacement, compile_java(regex))
        except ValueError as exc:
            return [ConfigProblem(None, "replacement", str(exc), replacement)]
        return []

    def setup(self, config: dict[str, Any]) -> None:
        self.regex = compile_java(config["regex"])
        self.replacement = JavaReplacement(config["replacement"], self.regex)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        topic = record.topic
        if self.regex.fullmatch(topic) is None:
            return record
        return record.new_record(topic=self.regex.sub(self.replacement, topic, count=1))
