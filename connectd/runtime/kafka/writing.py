"""Kafka inside Spark, writing (source tasks): the ``connectd-kafka`` streaming writer.

Each executor task produces its rows — Spark's Arrow batches, taken column by
column (:class:`DataSourceStreamArrowWriter`, :func:`~connectd.runtime.kafka.producing.produce_batches`)
— with an idempotent producer (``acks=all``) and flushes before returning, so a batch counts as written
only when every record is acknowledged; a delivery error fails the batch
(which Spark then retries or the task reports). Rows may carry the source
partition and offset (JSON text) of the record; the commit message of each
executor task holds the last offset per source partition, and the writer's
``commit`` — in the long-lived process, after every write succeeded —
passes them to the callback named by the ``commit.hook`` option
(``module:function``) with the ``commit.hook.arg`` option (or
``commit.hook.secret.arg``, which Spark redacts), which stores them. A row whose topic is null only
moves an offset (its record was dropped by a transform) and is not
produced. Offsets are thus stored
only after the data is durable.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from connectd.runtime.kafka.clients import CLIENT_OPTION
from connectd.runtime.kafka.producing import COMMIT_HOOK_SECRET_ARG, executor_producer, produce_batches

__all__ = ["KafkaStreamWriter"]


@dataclass
class _Committed(WriterCommitMessage):
    """What an executor task wrote: its records and the last source offset of each source partition."""

    records: int = 0
    source_offsets: dict[str, str] = field(default_factory=dict)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Produces each micro-batch to Kafka; stores source offsets only after every write is durable.

    It takes Spark's Arrow batches as they come (:func:`produce_batches`).
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.client_json = options.get(CLIENT_OPTION, "{}")
        self.commit_hook = options.get("commit.hook")
        # The redacted spelling, for an argument that holds client settings.
        self.commit_hook_arg = options.get(COMMIT_HOOK_SECRET_ARG, options.get("commit.hook.arg", ""))
        self.flush_timeout = float(options.get("flush.timeout.s", "60"))

    def write(self, batches: Iterator[Any]) -> _Committed:
        written = produce_batches(executor_producer(self.client_json), batches, self.flush_timeout)
        return _Committed(written.records, written.source_offsets)

    def commit(self, messages: list[_Committed | None], batch_id: int) -> None:
        offsets: dict[str, str] = {}
        for message in messages:
            if message is not None:
                offsets.update(message.source_offsets)
        if self.commit_hook:
            module, _, name = self.commit_hook.partition(":")
            hook = getattr(importlib.import_module(module), name)
            hook(self.commit_hook_arg, batch_id, offsets, sum(m.records for m in messages if m is not None))

    def abort(self, messages: list[_Committed | None], batch_id: int) -> None:
        # Nothing to undo: records already produced are at-least-once duplicates
        # of the batch's replay, and no offset was stored.
        return None
