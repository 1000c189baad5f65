"""What the ``connectd-kafka`` reader and writer share: the format's name, the schemas of
the rows they read and write, the client option that carries confluent-kafka settings
through Spark's options (no resolved secret in them), and how a partition is named in a
micro-batch's offsets (:func:`encode_tp`).

The reader is :mod:`connectd.runtime.kafka.reading`, the writer
:mod:`connectd.runtime.kafka.producing`, the data source both belong to
:mod:`connectd.runtime.kafka.io`.
"""

from __future__ import annotations

import json
from typing import Any

from connectd.config.worker import WorkerConfig

__all__ = [
    "FORMAT",
    "RANGE_SCHEMA",
    "ROW_SCHEMA",
    "WRITE_SCHEMA",
    "decode_tp",
    "encode_tp",
]

FORMAT = "connectd-kafka"

ROW_SCHEMA = (
    "topic string, partition int, offset long, timestamp long, timestamp_type int, "
    "key binary, value binary, headers array<struct<key: string, value: binary>>"
)

#: A micro-batch's rows with ``rows=ranges``: the offsets ``[start, end)`` of each partition, and how
#: many records the partition held past ``end`` when the batch was planned (null if not known).
RANGE_SCHEMA = "topic string, partition int, start long, end long, lag long"

#: What the writer accepts: a record to produce, and where it came from.
WRITE_SCHEMA = (
    "topic string, partition int, key binary, value binary, timestamp long, "
    "headers array<struct<key: string, value: binary>>, source_partition string, source_offset string"
)


# Spark redacts option values whose key matches spark.redaction.regex
# ("secret|password|token|..."). The value is either client settings, or -
# what the runtime passes - the worker config as written plus which client,
# resolved in the process that uses it, so no resolved secret is in options.
CLIENT_OPTION = "kafka.client.secret"


def client_option(worker_config: dict[str, str], client: str, overrides: dict[str, str] | None = None) -> str:
    """The :data:`CLIENT_OPTION` value for a *client* built from a worker config as written."""
    return json.dumps({"worker_config": worker_config, "client": client, "overrides": overrides or {}})


def client_settings(option: str) -> dict[str, Any]:
    """confluent-kafka settings from a :data:`CLIENT_OPTION` value, placeholders resolved here."""
    spec = json.loads(option or "{}")
    if "worker_config" not in spec:
        return spec
    worker = WorkerConfig(spec["worker_config"], "standalone", source="worker")
    return worker.client_config(spec["client"], "confluent", overrides=spec.get("overrides"))


def encode_tp(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def decode_tp(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)
