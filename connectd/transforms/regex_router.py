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

    # Until setup() fills them (a subclass may set regex and replacement itself), nothing is
    # remembered: _routes_for then never matches, so the shared empty dict is never written.
    _routes: dict[str, str | None] = {}
    _routes_for: tuple[Any, Any] = (None, None)

    def setup(self, config: dict[str, Any]) -> None:
        self.regex = compile_java(config["regex"])
        self.replacement = JavaReplacement(config["replacement"], self.regex)
        # topic → routed topic (None: no match); a task sees few topics, so matching once per topic is enough.
        self._routes = {}
        self._routes_for = (self.regex, self.replacement)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        topic = record.topic
        routes = self._routes
        if topic.__class__ is str and self._routes_for[0] is self.regex and self._routes_for[1] is self.replacement:
            try:
                routed = routes[topic]
            except KeyError:
                routed = self._route(topic)
                if len(routes) >= _MAX_ROUTES:
                    routes.clear()
                routes[topic] = routed
        else:  # not a str, or regex/replacement replaced since setup: no memo
            routed = self._route(topic)
        if routed is None:
            return record
        return record.new_record(topic=routed)

    def _route(self, topic: str) -> str | None:
        if self.regex.fullmatch(topic) is None:
            return None
        return self.regex.sub(self.replacement, topic, count=1)


_MAX_ROUTES = 1000
