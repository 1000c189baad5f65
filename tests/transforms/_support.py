"""What the transform and predicate tests share: a configured transform, and records."""

from __future__ import annotations

from typing import Any

from connectd.data import Schema, SinkRecord


def configured(cls: type, config: dict[str, Any] | None = None, **settings: Any) -> Any:
    """A transform or predicate of *cls*, configured with *config* and *settings*."""
    instance = cls()
    instance.configure({**(config or {}), **settings})
    return instance


def key_record(schema: Schema | None, key: Any) -> SinkRecord:
    return SinkRecord(topic="test", kafka_partition=0, key_schema=schema, key=key, kafka_offset=0)


def value_record(schema: Schema | None, value: Any, topic: str = "test") -> SinkRecord:
    return SinkRecord(topic=topic, kafka_partition=0, value_schema=schema, value=value, kafka_offset=0)
