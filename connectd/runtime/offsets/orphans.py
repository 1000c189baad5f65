"""Offsets topics no connector of a cluster uses any more (``connectd topics orphans``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from connectd.runtime.kafka.topic_reader import read_topic
from connectd.runtime.offsets.store import parse_key

__all__ = ["offset_topics_in_use", "orphan_offset_topics"]


def offset_topics_in_use(config_records: Mapping[bytes, bytes | None], worker_topic: str) -> set[str]:
    """The offsets topics of a cluster: the worker's, and every live connector's ``offsets.storage.topic``.

    :param config_records: the config topic as :func:`~connectd.runtime.kafka.topic_reader.read_topic` reads it
        (``connector-<name>`` → ``{"properties": {...}}``, ``None`` for a deleted connector).
    """
    used = {worker_topic}
    for key, value in config_records.items():
        if value is None or not key.startswith(b"connector-"):
            continue
        try:
            properties = json.loads(value).get("properties") or {}
        except (ValueError, AttributeError):
            continue
        topic = properties.get("offsets.storage.topic") if isinstance(properties, dict) else None
        if isinstance(topic, str) and topic.strip():
            used.add(topic.strip())
    return used


def orphan_offset_topics(settings: Mapping[str, Any], topics: Iterable[str], worker_topic: str, config_topic: str,
                         timeout: float = 60.0) -> dict[str, list[str]]:
    """Offsets topics no connector of the cluster uses: topic → the connectors that have offsets in it.

    A candidate is a topic whose name ends in ``offsets`` (not an internal ``__`` one, not the
    worker's); it is an offsets topic when it holds records and every keyed record's key is an
    offset key (``["<connector>",{...}]``), and an orphan when no connector in the config topic
    names it as its ``offsets.storage.topic``. An empty topic proves nothing and is not listed.

    :param settings: confluent-kafka consumer settings of the cluster.
    :param topics: the cluster's topic names.
    """
    used = offset_topics_in_use(read_topic(settings, config_topic, timeout), worker_topic) | {config_topic}
    orphans: dict[str, list[str]] = {}
    for topic in sorted(topics):
        if topic in used or topic.startswith("__") or not topic.endswith("offsets"):
            continue
        records = read_topic(settings, topic, timeout)
        keys = [parse_key(key) for key in records]
        if keys and all(k is not None for k in keys):
            orphans[topic] = sorted({k[0] for k in keys if k is not None})
    return orphans
