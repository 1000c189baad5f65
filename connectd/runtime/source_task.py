"""A record-level source task as a Spark streaming source (format ``connectd-source-task``).

The plugin's :class:`~connectd.SourceTask` lives in Spark's long-lived
Python process for the query (where ``latestOffset`` runs), so it keeps its
state between batches as it would in Kafka Connect::

    latestOffset ── task.poll() ─► transforms ─► converters ─► rows kept as batch N
    partitions   ── batch N's rows, one input partition (order kept)
    read         ── yields them in an executor
    (writer)     ── connectd-kafka produces, flushes, then stores the batch's offsets

Spark's own offsets are a batch counter (``{"seq": N}``); the connector's
source offsets travel in the rows (``source_partition``/``source_offset``,
canonical JSON text) and are stored by the Kafka writer's commit hook only
after the batch is flushed. Every run starts with a fresh checkpoint, so
Spark never asks for a batch the reader no longer holds; the task reads its
stored offsets through its context instead.

Configs cross into Spark as written (``${provider:…}`` placeholders
unresolved) and are resolved in the reader's process: no resolved secret
ends up in Spark's options, plans or logs.

Active topics (KIP-558) go back to the herder through a file, since the
task runs in Spark's process, not the worker's. The reader keeps the topics
it has written to in a set and appends a line to
:func:`active_topics_file` only when the set grows — the batch's topics are
known anyway, so the cost is one set difference and one ``stat`` per batch.
The file lies *beside* the query's run directory (``<run dir>.topics``), not
in it: the run directory is removed when the query stops, and the herder
reads the file once more after that, so the topics of the last batch are not
lost; the herder reads it whenever it is asked and removes it. A reset
(``PUT /connectors/{c}/topics/reset``) is the herder creating
``<run dir>.topics.reset``: while it exists the herder ignores the file; the
reader, at its next batch, replaces the file with that batch's topics,
forgets the rest and removes the marker, so a topic written to again after a
reset is reported again, as in Kafka Connect. With
``topic.tracking.enable=false`` no file is written.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from connectd.runtime.kafka_io import WRITE_SCHEMA, write_arrow_batch

__all__ = [
    "FORMAT",
    "SPEC_OPTION",
    "SourceTaskDataSource",
    "active_topics_file",
    "read_active_topics",
    "remove_active_topics",
    "reset_active_topics",
]

FORMAT = "connectd-source-task"
# Spark redacts option values whose key matches spark.redaction.regex.
SPEC_OPTION = "task.secret.spec"

_POLL_BUDGET_S = 0.5


def active_topics_file(run_dir: str | os.PathLike[str]) -> str:
    """Where the query running in *run_dir* lists the topics it has written to, one per line."""
    return f"{os.fspath(run_dir)}.topics"


def _reset_marker(topics_file: str) -> str:
    return f"{topics_file}.reset"


def read_active_topics(run_dir: str | os.PathLike[str]) -> set[str]:
    """The topics listed for the query of *run_dir*: none while a reset is waiting for its next batch."""
    path = active_topics_file(run_dir)
    if os.path.exists(_reset_marker(path)):
        return set()
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return set()
    # A line still being appended has no newline yet: it is read next time.
    return {line for line in text.split("\n")[:-1] if line}


def reset_active_topics(run_dir: str | os.PathLike[str]) -> None:
    """Ask the query of *run_dir* to start its list again (the marker the reader removes)."""
    path = active_topics_file(run_dir)
    with open(_reset_marker(path), "a", encoding="utf-8"):
        pass


def remove_active_topics(run_dir: str | os.PathLike[str]) -> None:
    """Remove the files of a query that has stopped."""
    path = active_topics_file(run_dir)
    for name in (path, _reset_marker(path)):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


class _Batch(InputPartition):
    def __init__(self, rows: list[tuple]) -> None:
        self.rows = rows


class SourceTaskReader(DataSourceStreamReader):
    """Polls the task for each micro-batch.

    Spec (JSON): ``connector``, ``task_id``, ``task_class`` (dotted path),
    ``task_config``, ``connector_config``, ``worker_config`` (values as
    written), ``offsets`` (``{"kind": "file", "path": …}``).
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.spec = json.loads(options[SPEC_OPTION])
        self.stop_file = options.get("stop.file")
        self.pause_file = options.get("pause.file")
        self.max_records = int(options.get("max.records", "10000"))
        tracking = str(self.spec["worker_config"].get("topic.tracking.enable", "true")).strip().lower() != "false"
        self.topics_file = active_topics_file(os.path.dirname(self.stop_file)) if tracking and self.stop_file else None
        self._topics_written: set[str] = set()
        self._task: Any = None
        self._chain: Any = None
        self._converters: dict[str, Any] = {}
        self._errors: Any = None
        self._dlq: Any = None
        self._topic_rules: Any = None
        self._admin: Any = None
        self._known_topics: set[str] = set()
        self._seq = 0
        self._kept: dict[int, list[tuple]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_task=None, _chain=None, _converters={}, _kept={}, _errors=None, _dlq=None, _admin=None)
        return state

    def initialOffset(self) -> dict[str, int]:
        return {"seq": 0}

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        if any(path and os.path.exists(path) for path in (self.stop_file, self.pause_file)):
            return {"seq": self._seq}  # stopping or paused: the task is not polled
        self._ensure_started()
        records: list[Any] = []
        deadline = time.monotonic() + _POLL_BUDGET_S
        while len(records) < self.max_records and time.monotonic() < deadline:
            polled = self._task.poll()
            if polled:
                records.extend(polled)
            elif records:
                break
        if not records:
            return {"seq": self._seq}
        rows = self._rows(records)
        topics = {row[0] for row in rows if row[0] is not None}
        if self._admin is not None:
            from connectd.runtime.topic_creation import ensure_topics

            ensure_topics(self._admin, topics, self._topic_rules, self._known_topics)
        if self.topics_file is not None:
            self._record_topics(topics)
        self._seq += 1
        self._kept[self._seq] = rows
        return {"seq": self._seq}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[_Batch]:
        rows: list[tuple] = []
        for seq in range(int(start["seq"]) + 1, int(end["seq"]) + 1):
            if seq not in self._kept:
                raise RuntimeError(f"batch {seq} of {self._name()} is no longer held; the query must start afresh")
            rows.extend(self._kept[seq])
        return [_Batch(rows)] if rows else []

    def read(self, partition: _Batch) -> Iterator[Any]:
        # One Arrow batch: Spark takes it as it is, instead of checking and converting each tuple.
        yield write_arrow_batch(partition.rows)

    def commit(self, end: dict[str, int]) -> None:
        for seq in [s for s in self._kept if s <= int(end["seq"])]:
            del self._kept[seq]
        if self._task is not None:
            self._task.commit()

    def stop(self) -> None:
        if self._task is not None:
            task, self._task = self._task, None
            task.stop()
        if self._chain is not None:
            self._chain.close()

    def _record_topics(self, topics: set[str]) -> None:
        """Tell the herder about topics not written to before (see the module's docstring).

        Best effort: a file that cannot be written loses no data, so the
        batch goes on and the topics are offered again with the next one.
        """
        path = self.topics_file
        assert path is not None
        marker = _reset_marker(path)
        try:
            if os.path.exists(marker):
                tmp = f"{path}.tmp"
                with open(tmp, "w", encoding="utf-8") as handle:
                    handle.write("".join(f"{topic}\n" for topic in sorted(topics)))
                os.replace(tmp, path)
                self._topics_written = set(topics)
                os.unlink(marker)  # only once the file holds no topic from before the reset
                return
            new = topics - self._topics_written
            if new:
                # Whole lines in one appending write; a line the herder catches half-written
                # has no newline yet and is left for its next read.
                with open(path, "a", encoding="utf-8") as handle:
                    handle.write("".join(f"{topic}\n" for topic in sorted(new)))
                self._topics_written |= new
        except OSError:
            pass

    # --- set-up, in the long-lived process ---

    def _name(self) -> str:
        return f"{self.spec['connector']}-{self.spec['task_id']}"

    def _ensure_started(self) -> None:
        if self._task is not None:
            return
        from connectd.config.worker import WorkerConfig
        from connectd.connector import OffsetStorageReader, SourceTaskContext
        from connectd.plugins import get_registry
        from connectd.runtime.converters import configure_converters
        from connectd.runtime.offsets import open_offset_store
        from connectd.transforms.chain import TransformationChain

        spec = self.spec
        worker = WorkerConfig(spec["worker_config"], "standalone", source="worker")
        resolve = worker.providers.resolve
        connector_config = {k: resolve(v) for k, v in spec["connector_config"].items()}
        task_config = {k: resolve(v) for k, v in spec["task_config"].items()}
        registry = get_registry()
        self._converters = configure_converters(
            spec["worker_config"], spec["connector_config"], lambda n: registry.find_class("converter", n), resolve
        )
        self._chain = TransformationChain(connector_config, registry.find_class)
        self._errors = self._error_handler(connector_config)
        from connectd.runtime.topic_creation import TopicCreationRules

        worker_allows = str(spec["worker_config"].get("topic.creation.enable", "true")).strip().lower() == "true"
        self._topic_rules = TopicCreationRules.from_config(connector_config, worker_allows)
        if self._topic_rules.enabled:
            from confluent_kafka.admin import AdminClient

            from connectd.runtime.kafka_io import client_settings

            self._admin = AdminClient(client_settings(self.spec.get("producer", "{}")))
        store = open_offset_store(spec["offsets"])
        connector = spec["connector"]
        module, _, name = spec["task_class"].rpartition(".")
        task = getattr(importlib.import_module(module), name)()
        task.context = SourceTaskContext(task_config, OffsetStorageReader(lambda parts: store.get(connector, parts)))
        task.start(task_config)
        self._task = task

    def _error_handler(self, connector_config: dict[str, str]) -> Any:
        from connectd.runtime.dead_letters import DeadLetterQueue
        from connectd.runtime.error_handling import ErrorHandler, ErrorPolicy

        policy = ErrorPolicy.from_config(connector_config)
        send = None
        if policy.dlq_topic and self.spec.get("producer"):
            from connectd.runtime.kafka_io import client_settings

            self._dlq = DeadLetterQueue(client_settings(self.spec["producer"]), policy.dlq_topic)
            send = self._dlq.send
        return ErrorHandler(policy, self.spec["connector"], int(self.spec["task_id"]), send)

    def _rows(self, records: list[Any]) -> list[tuple]:
        from connectd.runtime.offsets import canonical

        # The last record of each source partition carries the batch's offset for it.
        # Tasks usually reuse one partition dict, so canonical text is made once per dict.
        texts: dict[int, str] = {}
        last: dict[str, Any] = {}
        for record in records:
            partition = record.source_partition
            if partition is not None:
                text = texts.get(id(partition))
                if text is None:
                    text = texts[id(partition)] = canonical(partition)
                last[text] = record
        last_offsets = {text: canonical(record.source_offset) for text, record in last.items()}
        rows: list[tuple] = []
        for record in self._transform(records):
            row = self._convert(record)
            if row is not None:
                rows.append(row)
        if self._dlq is not None:
            self._dlq.flush()
        # Offsets last: the writer records them, and its commit stores them
        # only after every row above was acknowledged.
        rows.extend((None, None, None, None, None, None, p, o) for p, o in last_offsets.items())
        return rows

    def _transform(self, records: list[Any]) -> list[Any]:
        try:
            return self._chain.apply_batch(records)
        except Exception:
            pass  # find the failing record(s): transforms are pure, running them again is safe
        kept = []
        for record in records:
            ok, result = self._errors.run("TRANSFORMATION", "TransformationChain",
                                          lambda r=record: self._chain.apply(r), lambda r=record: _original(r))
            if ok and result is not None:
                kept.append(result)
        return kept

    def _convert(self, record: Any) -> tuple | None:
        converters, run, topic = self._converters, self._errors.run, record.topic

        def original() -> Any:  # built only when the record fails
            return _original(record)

        headers = None
        if record.headers:
            ok, headers = run("HEADER_CONVERTER", type(converters["header"]).__name__, lambda: [
                (h.key, converters["header"].from_connect_header(topic, h.key, h.schema, h.value)) for h in record.headers
            ], original)
            if not ok:
                return None
        ok, key = run("KEY_CONVERTER", type(converters["key"]).__name__,
                      lambda: converters["key"].from_connect_data(topic, record.key_schema, record.key, record.headers),
                      original)
        if not ok:
            return None
        ok, value = run("VALUE_CONVERTER", type(converters["value"]).__name__,
                        lambda: converters["value"].from_connect_data(topic, record.value_schema, record.value,
                                                                      record.headers), original)
        if not ok:
            return None
        return (topic, record.kafka_partition, key, value, record.timestamp, headers, None, None)


def _original(record: Any) -> Any:
    """A source record as a dead-letter record can carry it: its value as text, where it came from."""
    from connectd.runtime.error_handling import Original
    from connectd.runtime.offsets import canonical

    value = record.value
    return Original(
        topic=record.topic,
        partition=record.kafka_partition,
        value=None if value is None else value if isinstance(value, bytes) else str(value).encode(),
        source_partition=None if record.source_partition is None else canonical(record.source_partition),
        source_offset=None if record.source_offset is None else canonical(record.source_offset),
    )


class SourceTaskDataSource(DataSource):
    """``spark.readStream.format("connectd-source-task").option(SPEC_OPTION, …)``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return WRITE_SCHEMA

    def streamReader(self, schema: Any) -> SourceTaskReader:
        return SourceTaskReader(self.options)
