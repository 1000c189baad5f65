"""``TimestampRouter``: route each record to a topic named from its topic and timestamp."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connectd.config.definitions import ConfigDef, ConfigKey, Importance, Type, Validator
from connectd.data import DataError
from connectd.data.logical import Timestamp
from connectd.transforms._dateformat import JavaDateFormat
from connectd.transforms.base import Transformation

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["SimpleDateFormatPattern", "TimestampRouter"]


class SimpleDateFormatPattern(Validator):
    """A ``java.text.SimpleDateFormat`` pattern."""

    def __call__(self, value: Any) -> None:
        if value is not None:
            JavaDateFormat(value)

    def describe(self) -> str:
        return "java.text.SimpleDateFormat pattern"


class TimestampRouter(Transformation):
    """Set the topic from the original topic and the record's timestamp (Kafka's ``org.apache.kafka.connect.transforms.TimestampRouter``).

    Mostly useful for sink connectors, which often name the table or index
    they write to after the topic: ``orders`` at 2024-05-01 becomes
    ``orders-20240501`` with the defaults. Timestamps are formatted in UTC.
    """

    config_def = ConfigDef([
        ConfigKey("topic.format", Type.STRING,
                  "The new topic name, where ${topic} stands for the original topic and ${timestamp} for the "
                  "record's formatted timestamp.",
                  default="${topic}-${timestamp}", importance=Importance.HIGH),
        ConfigKey("timestamp.format", Type.STRING,
                  "How the timestamp is written, as a java.text.SimpleDateFormat pattern (in UTC).",
                  default="yyyyMMdd", importance=Importance.HIGH, validator=SimpleDateFormatPattern()),
    ])

    def setup(self, config: dict[str, Any]) -> None:
        self.topic_format: str = config["topic.format"]
        self.timestamp_format = JavaDateFormat(config["timestamp.format"])

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.timestamp is None:
            raise DataError(f"Timestamp missing on record: {record!r}")
        stamp = self.timestamp_format.format(Timestamp.to_logical(Timestamp.SCHEMA, record.timestamp))
        topic = self.topic_format.replace("${topic}", record.topic).replace("${timestamp}", stamp)
        return record.new_record(topic=topic)
