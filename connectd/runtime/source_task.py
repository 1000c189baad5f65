"""A record-level source task as a Spark streaming source (format ``connectd-source-task``).

The plugin's :class:`~connectd.SourceTask` lives in Spark's long-lived
Python process for the query (where ``latestOffset`` runs), so it keeps its
state between batches as it would in Kafka Connect. It is polled on a thread
of its own, so the next batch is polled while the last one is produced::

    planner process (Spark's, long-lived)            executor Python worker
    ─────────────────────────────────────            ──────────────────────
    poller thread: task.poll() ─► transforms
      ─► converters ─► Arrow record batches,
      buffered (max.records at most: it waits)
    latestOffset: everything buffered is batch N
      (Arrow IPC, a file or bytes; its offsets last)
    partitions: batch N, one input partition ──────► read: produce it (producer kept per
                                                     Python worker), flush, then yield the
                                                     batch's last offset per source partition
    worker process, foreachBatch: collect() those rows; once the batch succeeded, store them

Batches adapt to the rate by themselves: a batch is whatever was polled
while the last one was written, up to ``max.records``; the slower the
writes, the larger the batches. The records cross from the planner process
to the executor as Arrow IPC, and are produced there column by column
(:func:`~connectd.runtime.kafka_io.produce_batches`); nothing converts them
row by row in between. With executors on the planner's host (``spark.master``
``local[…]``) the IPC stream is a file in the run directory, which the
executor maps (the batch's plan holds only its path; the planner removes the
file once Spark committed the batch); otherwise its bytes travel in the plan. A delivery failure fails the batch, so no offset of
it is stored.

Poller states::

    POLLING ──buffer holds max.records──► FULL ──latestOffset takes it──► POLLING
    POLLING ──stop or pause file──► IDLE (not polled) ──pause file gone──► POLLING
    POLLING ──poll() raises──► FAILED: the next latestOffset raises it (the task fails)
    any ──reader.stop()──► STOPPED (the thread ends; then task.stop(), once)

An empty ``poll()`` is followed by a pause of a few milliseconds before the
next, so a task that returns at once without data does not spin a core.

Spark's own offsets are a batch counter (``{"seq": N}``); the connector's
source offsets travel in the batch (``source_partition``/``source_offset``,
canonical JSON text). Every run starts with a fresh checkpoint, so Spark
never asks for a batch the reader no longer holds; the task reads its
stored offsets through its context instead. Records polled but not yet in a
batch when the query stops are polled again by the next run, from the
stored offsets (at least once).

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

import contextlib
import importlib
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from connectd.runtime.kafka_io import executor_producer, produce_batches, write_arrow_batch

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

#: How long stopping waits for a ``poll()`` in progress before ``task.stop()`` is called anyway.
_STOP_WAIT_S = 5.0


def _ipc(batches: list[Any]) -> bytes:
    """Arrow record batches as one IPC stream."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _ipc_file(batches: list[Any], path: str) -> str:
    """Arrow record batches as one IPC stream in the file *path* (its directory made if need be)."""
    import pyarrow as pa

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return path


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
    """One or more polled batches, in order: Arrow IPC streams of :data:`WRITE_SCHEMA` rows,
    carried in the plan (*streams*) or, for executors on the planner's host, in files there
    (*files*, see ``handoff.dir``)."""

    def __init__(self, streams: list[bytes], files: list[str] | None = None) -> None:
        self.streams = streams
        self.files = files or []

    def record_batches(self) -> Iterator[Any]:
        import pyarrow as pa

        for stream in self.streams:
            yield from pa.ipc.open_stream(stream)
        for path in self.files:
            yield from pa.ipc.open_stream(pa.memory_map(path))


#: What reading a batch yields: each source partition's last offset, then the record count.
RESULT_SCHEMA = "source_partition string, source_offset string, records long"

_EMPTY_POLL_PAUSE_S = 0.005
_IDLE_CHECK_S = 0.1


class _Poller:
    """Polls the task on its own thread into a bounded buffer (states in the module docstring)."""

    def __init__(self, poll: Any, max_records: int, idle: Any, name: str) -> None:
        self._poll = poll  # () -> (Arrow batch or None, {partition: offset}, topics) or None
        self._idle = idle
        self.max_records = max_records
        self._cond = threading.Condition()
        self._batches: list[Any] = []
        self._offsets: dict[str, str] = {}
        self._topics: set[str] = set()
        self._buffered = 0
        self._error: BaseException | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"connectd-poll-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and self._buffered >= self.max_records:
                    self._cond.wait()
                if self._stopping:
                    return
            if self._idle():
                time.sleep(_IDLE_CHECK_S)
                continue
            try:
                polled = self._poll()
            except BaseException as error:  # noqa: BLE001 - the task fails with it at the next batch
                with self._cond:
                    self._error = error
                return
            if polled is None:
                time.sleep(_EMPTY_POLL_PAUSE_S)
                continue
            batch, offsets, topics = polled
            with self._cond:
                if batch is not None and batch.num_rows:
                    self._batches.append(batch)
                    self._buffered += batch.num_rows
                self._offsets.update(offsets)
                self._topics |= topics

    def take(self) -> tuple[list[Any], dict[str, str], set[str]] | None:
        """Everything buffered (Arrow batches, last offsets, topics), or ``None`` if nothing is.

        :raises: what ``poll()`` (or converting its records) raised.
        """
        with self._cond:
            if self._error is not None:
                raise self._error
            if not self._batches and not self._offsets:
                return None
            taken = (self._batches, self._offsets, self._topics)
            self._batches, self._offsets, self._topics, self._buffered = [], {}, set(), 0
            self._cond.notify_all()
            return taken

    def stop(self, timeout: float) -> None:
        """End the thread, waiting up to *timeout* seconds for a ``poll()`` in progress."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout)


class SourceTaskReader(DataSourceStreamReader):
    """Polls the task for each micro-batch; :meth:`read` produces the batch in an executor.

    Spec (JSON): ``connector``, ``task_id``, ``task_class`` (dotted path),
    ``task_config``, ``connector_config``, ``worker_config`` (values as
    written), ``offsets`` (``{"kind": "file", "path": …}``), ``producer``
    (the data producer's client option).
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.spec = json.loads(options[SPEC_OPTION])
        self.stop_file = options.get("stop.file")
        self.pause_file = options.get("pause.file")
        self.max_records = int(options.get("max.records", "10000"))
        self.flush_timeout = float(options.get("flush.timeout.s", "60"))
        # Set when the executors run on this host (spark.master local): a batch goes to them as
        # a file here rather than inside the plan, which would copy it twice more through the JVM.
        self.handoff_dir = options.get("handoff.dir") or None
        tracking = str(self.spec["worker_config"].get("topic.tracking.enable", "true")).strip().lower() != "false"
        self.topics_file = active_topics_file(os.path.dirname(self.stop_file)) if tracking and self.stop_file else None
        self._topics_written: set[str] = set()
        self._task: Any = None
        self._poller: _Poller | None = None
        self._chain: Any = None
        self._converters: dict[str, Any] = {}
        self._errors: Any = None
        self._dlq: Any = None
        self._topic_rules: Any = None
        self._admin: Any = None
        self._known_topics: set[str] = set()
        self._seq = 0
        self._kept: dict[int, bytes | str] = {}  # a batch's IPC bytes, or its handoff file

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_task=None, _poller=None, _chain=None, _converters={}, _kept={}, _errors=None, _dlq=None,
                     _admin=None)
        return state

    def initialOffset(self) -> dict[str, int]:
        return {"seq": 0}

    def _held(self) -> bool:
        """Stopping or paused: the task is not polled and no batch is offered."""
        return any(path and os.path.exists(path) for path in (self.stop_file, self.pause_file))

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        if self._held():
            return {"seq": self._seq}
        self._ensure_started()
        assert self._poller is not None
        taken = self._poller.take()
        if taken is None:
            return {"seq": self._seq}
        batches, offsets, topics = taken
        if self._admin is not None:
            from connectd.runtime.topic_creation import ensure_topics

            ensure_topics(self._admin, topics, self._topic_rules, self._known_topics)
        if self.topics_file is not None:
            self._record_topics(topics)
        # Offsets last: read() yields them only after every record above was acknowledged.
        batches.append(write_arrow_batch([(None, None, None, None, None, None, p, o) for p, o in offsets.items()]))
        self._seq += 1
        if self.handoff_dir is None:
            self._kept[self._seq] = _ipc(batches)
        else:
            self._kept[self._seq] = _ipc_file(batches, os.path.join(self.handoff_dir, f"{self._seq}.arrow"))
        return {"seq": self._seq}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[_Batch]:
        kept: list[bytes | str] = []
        for seq in range(int(start["seq"]) + 1, int(end["seq"]) + 1):
            if seq not in self._kept:
                raise RuntimeError(f"batch {seq} of {self._name()} is no longer held; the query must start afresh")
            kept.append(self._kept[seq])
        if not kept:
            return []
        return [_Batch([k for k in kept if isinstance(k, bytes)], [k for k in kept if isinstance(k, str)])]

    def read(self, partition: _Batch) -> Iterator[tuple[str | None, str | None, int | None]]:
        producer = executor_producer(self.spec.get("producer", "{}"))
        written = produce_batches(producer, partition.record_batches(), self.flush_timeout)
        for source_partition, source_offset in written.source_offsets.items():
            yield source_partition, source_offset, None
        yield None, None, written.records

    def commit(self, end: dict[str, int]) -> None:
        for seq in [s for s in self._kept if s <= int(end["seq"])]:
            kept = self._kept.pop(seq)
            if isinstance(kept, str):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(kept)
        if self._task is not None:
            self._task.commit()

    def stop(self) -> None:
        if self._poller is not None:
            poller, self._poller = self._poller, None
            poller.stop(_STOP_WAIT_S)
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
        self._poller = _Poller(self._poll_once, self.max_records, self._held, self._name())

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

    def _poll_once(self) -> tuple[Any, dict[str, str], set[str]] | None:
        """One ``poll()``, its records transformed and converted (on the poller thread).

        :returns: the records as an Arrow batch (``None`` if every one was dropped), the
            last offset of each source partition (canonical JSON text), and their topics.
        """
        from connectd.runtime.offsets import canonical

        records = self._task.poll()
        if not records:
            return None
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
        offsets = {text: canonical(record.source_offset) for text, record in last.items()}
        transformed = self._transform(records)
        try:
            batch, topics = self._convert_batch(transformed)
        except Exception:  # noqa: BLE001 - find the failing record(s) under the connector's error handling
            rows = [row for row in map(self._convert, transformed) if row is not None]
            batch, topics = (write_arrow_batch(rows) if rows else None), {row[0] for row in rows}
        if self._dlq is not None:
            self._dlq.flush()
        return batch, offsets, topics

    def _convert_batch(self, records: list[Any]) -> tuple[Any, set[str]]:
        """Every record converted, per topic with the converters' batch methods, as one Arrow batch.

        Raises on any failure, which :meth:`_convert` then finds record by record.
        """
        import pyarrow as pa

        from connectd.runtime.kafka_io import arrow_write_schema

        if not records:
            return None, set()
        converters = self._converters
        header_converter = converters["header"].from_connect_header
        topics = {record.topic for record in records}
        groups = [records] if len(topics) == 1 else [[r for r in records if r.topic == t] for t in topics]
        columns: dict[str, list[Any]] = {name: [] for name in ("topic", "partition", "key", "value", "timestamp",
                                                               "headers")}
        for group in groups:
            topic = group[0].topic
            headers = [record.headers or None for record in group]
            batch_headers = headers if any(headers) else None
            columns["key"] += converters["key"].from_connect_batch(
                topic, [(record.key_schema, record.key) for record in group], batch_headers)
            columns["value"] += converters["value"].from_connect_batch(
                topic, [(record.value_schema, record.value) for record in group], batch_headers)
            columns["headers"] += [None if h is None else [(item.key, header_converter(topic, item.key, item.schema,
                                                                                       item.value)) for item in h]
                                   for h in headers]
            columns["topic"] += [topic] * len(group)
            columns["partition"] += [record.kafka_partition for record in group]
            columns["timestamp"] += [record.timestamp for record in group]
        schema = arrow_write_schema()
        n = len(columns["topic"])
        arrays = [pa.array(columns[f.name], type=f.type) if f.name in columns else pa.nulls(n, type=f.type)
                  for f in schema]
        return pa.RecordBatch.from_arrays(arrays, schema=schema), topics

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
        return RESULT_SCHEMA

    def streamReader(self, schema: Any) -> SourceTaskReader:
        return SourceTaskReader(self.options)
