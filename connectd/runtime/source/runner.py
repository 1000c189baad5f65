"""A source task's machinery, apart from Spark: what the planner-side reader
(:class:`connectd.runtime.source.task.SourceTaskReader`) and a task's own process on an executor's host
(:mod:`connectd.runtime.source.host`) share — start, the poll thread, transforms and converters,
``commit_record`` / ``commit()`` as the worker stores batches, stop.

It imports no pyspark: the task's own process does not need Spark's Python side (~20 MiB a task).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import signal
import threading
import time
from functools import partial
from itertools import repeat
from typing import Any

from connectd.connector import OffsetStorageReader, RecordMetadata, SourceTask, SourceTaskContext, TransactionContext
from connectd.data.records import SourceRecordBatch
from connectd.errors import ConnectException, ConnectorError
from connectd.logging import configure_spark_process, get_logger
from connectd.runtime.error_handling import ErrorHandler, ErrorPolicy, Original, TaskCounts, apply_stages
from connectd.runtime.fencing import LEASE_OPTION
from connectd.runtime.kafka.clients import client_settings
from connectd.runtime.kafka.producing import ColumnBatch, write_arrow_batch
from connectd.runtime.source.active_topics import active_topics_file, record_topics
from connectd.runtime.source.poller import EndedChunk, Poller
from connectd.runtime.source.wire import EXACTLY_ONCE, SPEC_OPTION, take_stored
from connectd.transforms.chain import TransformationChain

__all__ = ["SourceTaskRunner", "acknowledges", "task_class"]

log = get_logger(__name__)

#: How long stopping waits for a ``poll()`` in progress before ``task.stop()`` is called anyway.
_STOP_WAIT_S = 5.0
#: How long the planner process may take to stop its task once Spark told it to end.
_EXIT_BOUND_S = 60.0


class _ProduceFailures:
    """Source records Kafka did not take, in an executor, under ``errors.tolerance=all`` (KIP-779):
    each one counted, logged and dead-lettered as the connector's ``errors.*`` say (stage
    ``KAFKA_PRODUCE``), and passed over. The executor does not know a record's source partition
    and offset, so the log and the context headers name its topic and partition only."""

    def __init__(self, spec: dict[str, Any], policy: Any) -> None:
        self._spec = spec
        self._dlq: Any = None  # made at the first failure: most batches have none
        send = self._dead_letter if policy.dlq_topic and spec.get("producer") else None
        self._errors = ErrorHandler(policy, spec["connector"], int(spec["task_id"]), send)

    def _dead_letter(self, *args: Any) -> None:
        if self._dlq is None:
            self._dlq = _dead_letter_queue(self._spec, self._errors.policy.dlq_topic)
        self._dlq.send(*args)

    def report(self, error: Exception, topic: str, partition: int, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes | None]]) -> None:
        original = Original(topic, partition if partition is not None and partition >= 0 else None, key=key,
                            value=value, headers=list(headers))
        self._errors.execute_failed("KAFKA_PRODUCE", SourceTaskRunner, error, original)

    def flush(self) -> None:
        if self._dlq is not None:
            self._dlq.flush()

    def counts(self) -> dict[str, float]:
        """What was counted, for the task's metrics (as :meth:`SourceTaskRunner.take_counts`)."""
        return TaskCounts().take({}, (self._errors,), self._dlq)

    def close(self) -> None:
        if self._dlq is not None:
            self._dlq.close()


def _dead_letter_queue(spec: dict[str, Any], topic: str) -> Any:
    """The task's dead-letter queue, with the data producer's client settings."""
    # lazy: only a task with a dead-letter queue needs it (and confluent_kafka, which it imports)
    from connectd.runtime.dead_letters import DeadLetterQueue

    return DeadLetterQueue(client_settings(spec["producer"]), topic)


class SourceTaskRunner:
    """A source task's machinery: started from its spec, polled on a :class:`Poller` thread, its records
    transformed and converted, ``commit_record`` and ``commit()`` told as batches are stored, stopped.

    Spec (JSON): ``connector``, ``task_id``, ``task_class`` (dotted path),
    ``task_config``, ``connector_config``, ``worker_config`` (values as
    written), ``offsets`` (``{"kind": "file", "path": …}``), ``producer``
    (the data producer's client option).
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.spec = json.loads(options[SPEC_OPTION])
        self.stop_file = options.get("stop.file")
        self.pause_file = options.get("pause.file")
        #: The worker's lease (a cluster's): once it ended, nothing new is taken (connectd.runtime.fencing).
        self.lease_file = options.get(LEASE_OPTION)
        self.max_records = int(options.get("max.records", "10000"))
        self.flush_timeout = float(options.get("flush.timeout.s", "60"))
        # Set when the executors run on this host (spark.master local): a batch goes to them as
        # a file here rather than inside the plan, which would copy it twice more through the JVM.
        self.handoff_dir = options.get("handoff.dir") or None
        #: Where the worker says which batches it stored (see "Acknowledgements" above).
        self.stored_dir = options.get("stored.dir") or None
        tracking = str(self.spec["worker_config"].get("topic.tracking.enable", "true")).strip().lower() != "false"
        self.topics_file = active_topics_file(os.path.dirname(self.stop_file)) if tracking and self.stop_file else None
        self._topics_written: set[str] = set()
        self._task: Any = None
        self._poller: Poller | None = None
        self._chain: Any = None
        self._converters: dict[str, Any] = {}
        self._errors: Any = None
        self._dlq: Any = None
        self._topic_rules: Any = None
        self._admin: Any = None
        self._known_topics: set[str] = set()
        self._seq = 0
        #: Seconds between the task's commit() calls when no batch is stored (offset.flush.interval.ms).
        self.commit_interval = 60.0
        self._last_commit = 0.0
        self._stop_waited = False  # the poll() under way at stop was waited for (see _take_at_stop)
        self._stopping = False  # stop() is under way: a SIGTERM now does not cut it short
        self._poll_stuck = False  # …and had not returned: stop() wakes it at once, not after another wait
        self._kept: dict[int, bytes | str] = {}  # a batch's IPC bytes, or its handoff file
        self._acks = False  # the task overrides commit_record
        #: the task's TransactionContext: exactly once, transaction.boundary=connector
        self._transaction_context: TransactionContext | None = None
        self._polled: dict[int, list[Any]] = {}  # seq -> (record, topic or None) for commit_record
        #: Running totals for the task's metrics (:meth:`take_counts`): poll() calls that returned
        #: records, the seconds every poll() took, the records they returned.
        self.polls = 0
        self.poll_seconds = 0.0
        self.polled_records = 0
        self._counts = TaskCounts()
        self._stats: dict[int, dict[str, float]] = {}  # seq -> take_counts() when the batch was taken
        self._unwritten: dict[int, int] = {}  # seq -> records of a batch taken, until Spark commits it
        #: A source partition's identity (canonical text) -> the ordered text it first came as: one
        #: partition travels as one text, in its map's order (the offsets key Kafka would write).
        self._partition_texts: dict[str, str] = {}
        #: () -> None after each poll() that buffered records (the task's host flags them: host.py)
        self._on_buffered: Any = None
        #: Polled records stay Python lists (:class:`ColumnBatch`), not Arrow: where they are produced
        #: in the process that polled them (host.py), nothing needs Arrow.
        self._columns_only = False

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_task=None, _poller=None, _chain=None, _converters={}, _kept={}, _errors=None, _dlq=None,
                     _admin=None, _polled={}, _stats={}, _counts=TaskCounts(), _unwritten={},
                     _partition_texts={})
        return state

    def _held(self) -> bool:
        """Stopping or paused: the task is not polled."""
        return any(path and os.path.exists(path) for path in (self.stop_file, self.pause_file))

    def _take_at_stop(self, polls: bool = False) -> Any:
        """What the task polled before it was told to stop, once the ``poll()`` under way returned
        (*polls*: as a list of chunks, one per ``poll()``).

        As Kafka Connect, which sends the records of the last ``poll()`` and commits their
        offsets before it stops the task: a record polled is written, not lost or polled again
        (the query's stop waits while this batch runs). Nothing while paused, as Kafka Connect
        sends nothing then; an error is logged only, the records after the last stored offset
        being polled again by the next run.
        """
        poller = self._poller
        if poller is None or (self.pause_file and os.path.exists(self.pause_file)):
            return None
        if not self._stop_waited:
            self._stop_waited = True
            if not poller.finish_poll(_STOP_WAIT_S):
                self._poll_stuck = True
                log.warning("source_task_poll_not_returning_at_stop", waited_s=_STOP_WAIT_S)
        try:
            return poller.take_polls() if polls else poller.take()
        except Exception as error:  # noqa: BLE001 - the task is stopping; the next run polls again
            log.warning("source_task_poll_failed_while_stopping", error=repr(error))
            return None

    def _commit_due(self) -> bool:
        """``commit()`` is owed without a stored batch: ``offset.flush.interval.ms`` passed since the
        last, as Kafka Connect calls it at each periodic offset commit, idle or paused too."""
        return time.monotonic() - self._last_commit >= self.commit_interval

    def stop(self) -> None:
        self._stopping = True
        if self._poller is not None:
            poller, self._poller = self._poller, None
            poller.stop(0 if self._poll_stuck else _STOP_WAIT_S)  # a poll() waited for once is not again
        if self._task is not None:
            try:
                if self._settle():  # the last batches stored: their commit_record and commit() are owed
                    self._commit_task()
            finally:
                task, self._task = self._task, None
                try:
                    task.stop()
                finally:
                    self._unregister()
        if self._chain is not None:
            self._chain.close()

    def _registration(self) -> str | None:
        if not self.stop_file:
            return None
        # lazy: the planner process only; executors' Python workers reading batches skip the sink side
        from connectd.runtime.sink.executor import instances_dir

        return os.path.join(instances_dir(os.path.dirname(self.stop_file)), f"planner-{os.getpid()}")

    def _register(self) -> None:
        """Be stopped as the query stops (SIGTERM), and have the query's stop wait for that."""
        with contextlib.suppress(ValueError):  # not the main thread: PySpark's loop runs there
            signal.signal(signal.SIGTERM, lambda signum, frame: _exit_on_sigterm(signum, frame, self))
        atexit.register(self._stop_at_exit)
        path = self._registration()
        if path is not None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(f"{self._name()}\n")

    def _stop_at_exit(self) -> None:
        """The process ends and its task was not stopped: SIGTERM came as PySpark's loop had already
        ended and was about to call :meth:`stop` (the socket closed first), and ended it before."""
        if self._task is not None:
            self.stop()

    def _unregister(self) -> None:
        path = self._registration()
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def _settle(self) -> bool:
        """``commit_record`` for the records of every batch the worker has stored since the last look.

        :returns: whether any batch was (``commit()`` is then owed).
        """
        settled = False
        for stored in take_stored(self.stored_dir):
            settled = True
            polled = [entry for seq in stored["seqs"] for entry in self._polled.pop(seq, ())]
            if stored["acks"] is not None:
                self._commit_records(polled, stored["acks"])
        return settled

    def _commit_records(self, polled: list[Any], acks: list[Any]) -> None:
        commit_record, position = self._task.commit_record, 0
        for record, topic in polled:
            metadata = None
            if topic is not None:
                partition, offset, timestamp = acks[position]
                position += 1
                metadata = RecordMetadata(topic, partition, offset, timestamp)
            try:
                commit_record(record, metadata)
            except Exception as error:  # noqa: BLE001 - a hint: Kafka Connect logs it and goes on too
                log.error("source_task_commit_record_failed", error=repr(error))

    def _commit_task(self) -> None:
        self._last_commit = time.monotonic()
        try:
            self._task.commit()
        except Exception as error:  # noqa: BLE001 - a hint: Kafka Connect logs it and goes on too
            log.error("source_task_commit_failed", error=repr(error))

    def _record_topics(self, topics: set[str]) -> None:
        """Tell the herder about topics not written to before (see the module's docstring)."""
        assert self.topics_file is not None
        record_topics(self.topics_file, topics, self._topics_written)

    # --- set-up, in the long-lived process ---

    def _name(self) -> str:
        return f"{self.spec['connector']}-{self.spec['task_id']}"

    def _ensure_started(self) -> None:
        if self._task is not None:
            return
        # lazy: only the planner process starts the task; executors' Python workers, which import
        # this module to read batches, would pay ~25 ms for these and topic_creation/offsets.store below
        from connectd.config.worker import WorkerConfig
        from connectd.plugins import get_registry
        from connectd.runtime.converter_choice import configure_converters
        from connectd.runtime.offsets.store import open_offset_store

        spec = self.spec
        # This process serves this one task's query while it runs: its lines name the task.
        configure_spark_process(connector=spec["connector"], task=int(spec["task_id"]))
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
        from connectd.runtime.source.topic_creation import TopicCreationRules  # lazy: planner only, as above

        worker_allows = str(spec["worker_config"].get("topic.creation.enable", "true")).strip().lower() == "true"
        self._topic_rules = TopicCreationRules.from_config(connector_config, worker_allows)
        if self._topic_rules.enabled:
            from confluent_kafka.admin import AdminClient  # lazy: only a task that creates topics (~12 ms)

            self._admin = AdminClient(client_settings(self.spec.get("admin") or self.spec.get("producer", "{}")))
        store = open_offset_store(spec["offsets"])
        connector = spec["connector"]
        task = task_class(spec)()
        exactly_once = spec.get(EXACTLY_ONCE) or {}
        if exactly_once.get("boundary") == "connector":
            self._transaction_context = TransactionContext()
        context = SourceTaskContext(task_config, OffsetStorageReader(lambda parts: store.get(connector, parts)),
                                    self._transaction_context)
        # As Kafka Connect: initialize(context), then start(config). The context is set first so a
        # task whose initialize() override does not call super() has it all the same.
        task.context = context
        task.initialize(context)
        task.start(task_config)
        self._task = task
        self.commit_interval = worker.get("offset.flush.interval.ms") / 1000
        self._last_commit = time.monotonic()
        self._register()
        self._acks = acknowledges(type(task))
        self._poller = Poller(self._poll_once, self.max_records, self._held, self._name(), self._on_buffered)

    def take_counts(self) -> dict[str, float]:
        """What the task did since the last call, for its metrics (only what changed): ``polls``
        that returned records, ``poll_seconds`` of every poll(), records ``polled``; record
        ``failures``, records ``skipped``, ``retries``, errors ``logged``, dead-letter records sent
        (``dlq_requests``) and not delivered (``dlq_failures``)."""
        return self._counts.take({"polls": self.polls, "poll_seconds": self.poll_seconds,
                                  "polled": self.polled_records}, (self._errors,), self._dlq)

    def _error_handler(self, connector_config: dict[str, str]) -> Any:
        policy = ErrorPolicy.from_config(connector_config)
        send = None
        if policy.dlq_topic and self.spec.get("producer"):
            self._dlq = _dead_letter_queue(self.spec, policy.dlq_topic)
            send = self._dlq.send
        return ErrorHandler(policy, self.spec["connector"], int(self.spec["task_id"]), send, sleep=self._wait_to_retry)

    def _wait_to_retry(self, seconds: float) -> None:
        """The error handler's wait before a record is tried again: given up (raises) once the task
        is being stopped, so ``errors.retry.timeout=-1`` cannot hold a stopping task."""
        poller = self._poller
        if poller is None:  # stop() has taken it
            raise ConnectorError("the task is stopping: a failed record is not retried again")
        poller.wait(seconds)

    def _poll_once(self) -> Any:
        """One ``poll()``, its records transformed and converted (on the poller thread).

        :returns: the records as an Arrow batch (``None`` if every one was dropped), the
            last offset of each source partition (:meth:`_partition_text` → offset's ordered JSON
            text), their topics, and the records for ``commit_record`` (or ``None``); for a task that
            ends its own transactions, a list of those, each an :class:`EndedChunk` saying whether
            its transaction ends after it.
        """
        began = time.monotonic()
        records = self._task.poll()
        self.poll_seconds += time.monotonic() - began
        if not records:
            return None
        self.polls += 1
        self.polled_records += len(records)
        if isinstance(records, SourceRecordBatch):
            if not self._acks and not self._chain.stages and self._transaction_context is None:
                columns = self._poll_columns(records)
                if columns is not None:
                    return columns
            records = list(records)  # what a transform, commit_record or the error handling sees
        if self._transaction_context is not None:  # the task ends its own transactions: cut where it says
            return [EndedChunk(self._records_chunk(part), end)
                    for part, end in self._transaction_context.split(list(records))]
        return self._records_chunk(records)

    def _records_chunk(self, records: list[Any]) -> tuple[Any, dict[str, str], set[str], list[Any] | None]:
        """*records* (a poll's, or a part of one) transformed and converted, as :meth:`_poll_once` returns them."""
        from connectd.runtime.offsets.store import ordered  # lazy: planner only (see _ensure_started)

        if not records:  # a part that only ends a transaction
            return None, {}, set(), None
        if self._acks:
            return self._poll_tracked(records)
        # The last record of each source partition carries the batch's offset for it (a null
        # partition is one too, "null", as Kafka Connect stores it). Tasks usually reuse one
        # partition dict, so its text is made once per dict.
        texts: dict[int, str] = {}
        last: dict[str, Any] = {}
        for record in records:
            partition = record.source_partition
            text = texts.get(id(partition))
            if text is None:
                text = texts[id(partition)] = self._partition_text(partition)
            last[text] = record
        offsets = {text: ordered(record.source_offset) for text, record in last.items()}
        transformed = self._transform(records)
        _check_destinations(transformed)
        try:
            batch, topics = self._convert_batch(transformed)
        except Exception:  # noqa: BLE001 - find the failing record(s) under the connector's error handling
            rows = [row for row in map(self._convert, transformed) if row is not None]
            batch, topics = (self._rows_batch(rows) if rows else None), {row[0] for row in rows}
        if self._dlq is not None:
            self._dlq.flush()
        return batch, offsets, topics, None

    def _poll_columns(self, batch: SourceRecordBatch) -> tuple[Any, dict[str, str], set[str], None] | None:
        """A :class:`SourceRecordBatch` polled, with no transform to run and no ``commit_record`` to
        tell: its columns converted with the converters' batch methods, no record made.

        :returns: as :meth:`_poll_once`; ``None`` when a converter failed (the records then go the
            way of a list, converted one by one under the connector's error handling).
        """
        from connectd.runtime.offsets.store import ordered  # lazy: planner only (see _ensure_started)

        _check_destinations((batch[-1],))  # one topic and partition for all
        topic, n = batch.topic, len(batch)
        offsets = {self._partition_text(batch.source_partition): ordered(batch.source_offsets[-1])}
        converters = self._converters
        keys = [None] * n if batch.keys is None else batch.keys
        try:
            columns = {
                "topic": [topic] * n, "partition": [batch.kafka_partition] * n, "timestamp": [batch.timestamp] * n,
                "key": converters["key"].from_connect_batch(topic, list(zip(repeat(batch.key_schema, n), keys))),
                "value": converters["value"].from_connect_batch(topic, list(zip(repeat(batch.value_schema, n),
                                                                                batch.values))),
                "headers": [None] * n,
            }
        except Exception:  # noqa: BLE001 - found record by record under the connector's error handling
            return None
        return self._batch_of(columns, n), offsets, {topic}, None

    def _partition_text(self, partition: Any) -> str:
        """*partition* as it travels to the offset store: its map's order, one text per partition
        (the first order it came in), so a later batch's offset replaces an earlier one's."""
        from connectd.runtime.offsets.store import canonical, ordered  # lazy: planner only

        identity = canonical(partition)
        text = self._partition_texts.get(identity)
        if text is None:
            text = self._partition_texts[identity] = ordered(partition)
        return text

    def _poll_tracked(self, records: list[Any]) -> tuple[Any, dict[str, str], set[str], list[Any]]:
        """As :meth:`_poll_once`, one record at a time, knowing which record each row is
        (and which a transform dropped or the error handling skipped), for ``commit_record``."""
        from connectd.runtime.offsets.store import ordered  # lazy: planner only (see _ensure_started)

        offsets: dict[str, str] = {}
        rows, polled = [], []
        chain = self._chain
        for record in records:
            offsets[self._partition_text(record.source_partition)] = ordered(record.source_offset)
            try:
                transformed = chain.apply(record)
            except Exception:  # noqa: BLE001 - again stage by stage under the error handling: transforms are pure
                transformed = apply_stages(self._errors, chain.stages, record, partial(_original, record))
            if transformed is not None:
                _check_destinations((transformed,))
            row = None if transformed is None else self._convert(transformed)
            if row is not None:
                rows.append(row)
            polled.append((record, None if row is None else row[0]))
        if self._dlq is not None:
            self._dlq.flush()
        return (self._rows_batch(rows) if rows else None), offsets, {row[0] for row in rows}, polled

    def _convert_batch(self, records: list[Any]) -> tuple[Any, set[str]]:
        """Every record converted, per topic with the converters' batch methods, as one Arrow batch.

        Raises on any failure, which :meth:`_convert` then finds record by record.
        """
        if not records:
            return None, set()
        converters = self._converters
        header_converter = converters["header"].from_connect_headers_batch
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
            columns["headers"] += (header_converter(topic, headers) if batch_headers is not None
                                   else [None] * len(group))
            columns["topic"] += [topic] * len(group)
            columns["partition"] += [record.kafka_partition for record in group]
            columns["timestamp"] += [record.timestamp for record in group]
        return self._batch_of(columns, len(columns["topic"])), topics

    def _batch_of(self, columns: dict[str, list[Any]], n: int) -> Any:
        """Converted *columns* (topic, partition, key, value, timestamp, headers) as one batch: a
        :class:`ColumnBatch` where they are produced in this process, else Arrow."""
        if self._columns_only:
            return ColumnBatch(columns, n)
        # lazy: pyarrow (~40 ms) is not at the worker's start-up, which imports this module (assembly)
        import pyarrow as pa

        from connectd.runtime.kafka.producing import arrow_write_schema

        schema = arrow_write_schema()
        arrays = [pa.array(columns[f.name], type=f.type) if f.name in columns else pa.nulls(n, type=f.type)
                  for f in schema]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _rows_batch(self, rows: list[tuple]) -> Any:
        """Converted *rows* (:data:`~connectd.runtime.kafka.clients.WRITE_SCHEMA` order) as one batch."""
        return ColumnBatch.from_rows(rows) if self._columns_only else write_arrow_batch(rows)

    def _transform(self, records: list[Any]) -> list[Any]:
        try:
            return self._chain.apply_batch(records)
        except Exception:
            pass  # find the failing record(s): transforms are pure, running them again is safe
        kept = []
        errors, stages = self._errors, self._chain.stages
        for record in records:
            result = apply_stages(errors, stages, record, partial(_original, record))
            if result is not None:
                kept.append(result)
        return kept

    def _convert(self, record: Any) -> tuple | None:
        converters, run, topic = self._converters, self._errors.run, record.topic

        def original() -> Any:  # built only when the record fails
            return _original(record)

        headers = None
        if record.headers:
            header_converter = converters["header"]
            ok, headers = run("HEADER_CONVERTER", type(header_converter), lambda: [
                (h.key, header_converter.from_connect_header(topic, h.key, h.schema, h.value)) for h in record.headers
            ], original)
            if not ok:
                return None
        ok, key = run("KEY_CONVERTER", type(converters["key"]),
                      lambda: converters["key"].from_connect_data(topic, record.key_schema, record.key, record.headers),
                      original)
        if not ok:
            return None
        ok, value = run("VALUE_CONVERTER", type(converters["value"]),
                        lambda: converters["value"].from_connect_data(topic, record.value_schema, record.value,
                                                                      record.headers), original)
        if not ok:
            return None
        return (topic, record.kafka_partition, key, value, record.timestamp, headers, None, None)


def task_class(spec: dict[str, Any]) -> type:
    """The plugin's :class:`~connectd.SourceTask` class the task *spec* names."""
    module, _, name = spec["task_class"].rpartition(".")
    return getattr(importlib.import_module(module), name)


def acknowledges(cls: type) -> bool:
    """Whether a task of *cls* is told of each record Kafka acknowledged (it overrides ``commit_record``)."""
    return cls.commit_record is not SourceTask.commit_record


def _exit_on_sigterm(signum: int, frame: Any, reader: SourceTaskRunner) -> None:
    """Spark ends the planner process: unwind PySpark's loop, which then calls ``reader.stop()``.

    Spark sends SIGTERM, then closes the process's socket; when the signal is handled after the
    loop saw the socket closed, the reader's stop is under way (or about to be): the signal then
    only bounds it. Nothing here cuts ``stop()`` short, and a process ended before it ran stops
    its task on the way out (:meth:`SourceTaskRunner._stop_at_exit`). Spark may say so more than
    once: only the first counts. A ``stop()`` that hangs is cut after ``_EXIT_BOUND_S`` all the same.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    watchdog = threading.Timer(_EXIT_BOUND_S, os._exit, (128 + signum,))
    watchdog.daemon = True
    watchdog.start()
    if not reader._stopping:
        raise SystemExit(128 + signum)


def _check_destinations(records: Any) -> None:
    """Fail the task for a record (as transformed) that names no topic or a negative partition.

    Kafka Connect makes a ``ProducerRecord`` of each, which refuses both
    outside the error handling, so the task fails whatever ``errors.tolerance``
    says. Here a row without a topic would only move its offset (it is how a
    dropped record is carried), and librdkafka takes partition -1 as "let the
    partitioner choose": either would pass a bad record over without a word.

    :raises ConnectException: naming the record's topic, partition and source offset.
    """
    for record in records:
        topic, partition = record.topic, record.kafka_partition
        try:
            if isinstance(topic, str) and (partition is None or partition >= 0):
                continue
        except TypeError:  # not a number: named below
            pass
        where = (f"source partition {getattr(record, 'source_partition', None)}, "
                 f"offset {getattr(record, 'source_offset', None)}")
        if not isinstance(topic, str):
            raise ConnectException(f"a source record ({where}) has topic={topic!r} once transformed; expected the "
                                   "name of the topic to write it to")
        raise ConnectException(f"a source record for topic {topic!r} ({where}) has kafka_partition={partition!r}; "
                               "expected None (the producer chooses) or a partition number of 0 or more")


def _original(record: Any) -> Any:
    """A source record as a dead-letter record can carry it: its value as text, where it came from."""
    from connectd.runtime.offsets.store import canonical  # lazy: planner only (see _ensure_started)

    value = record.value
    return Original(
        topic=record.topic,
        partition=record.kafka_partition,
        value=None if value is None else value if isinstance(value, bytes) else str(value).encode(),
        source_partition=None if record.source_partition is None else canonical(record.source_partition),
        source_offset=None if record.source_offset is None else canonical(record.source_offset),
    )
