"""Kafka inside Spark: a streaming reader and writer on confluent-kafka.

Spark ships no Kafka connector usable here, so tasks read and write Kafka
through PySpark's Python Data Source API. The format is ``connectd-kafka``.

Where the code runs
-------------------
Spark keeps one long-lived Python process per query for the reader's
``initialOffset``/``latestOffset``/``partitions`` and the writer's
``commit``; ``read`` and ``write`` run in executor Python workers, to which
the reader and writer are pickled. Live clients are never pickled: the
reader's consumer lives only in the long-lived process, producers are cached
per worker process.

The reader is :class:`~connectd.runtime.kafka.reading.KafkaStreamReader` (reading, for sink
tasks), the writer :class:`~connectd.runtime.kafka.writing.KafkaStreamWriter` (writing, for
source tasks); what both share (options, schemas) is in :mod:`connectd.runtime.kafka.clients`.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource

from connectd.runtime.kafka.clients import FORMAT, RANGE_SCHEMA, ROW_SCHEMA
from connectd.runtime.kafka.reading import KafkaStreamReader
from connectd.runtime.kafka.writing import KafkaStreamWriter

__all__ = [
    "KafkaDataSource",
]


class KafkaDataSource(DataSource):
    """``spark.readStream.format("connectd-kafka")`` / ``writeStream.format("connectd-kafka")``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RANGE_SCHEMA if self.options.get("rows", "records") == "ranges" else ROW_SCHEMA

    def streamReader(self, schema: Any) -> KafkaStreamReader:
        return KafkaStreamReader(self.options)

    def streamWriter(self, schema: Any, overwrite: bool) -> KafkaStreamWriter:
        return KafkaStreamWriter(self.options)
