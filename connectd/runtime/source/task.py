"""A record-level source task polled in Spark's planner process (format ``connectd-source-task``):
the path of a task that declares ``SourceTask.poll_on_driver``. Every other task runs in a process
of its own on an executor's host (:mod:`connectd.runtime.source.executor`,
:mod:`connectd.runtime.source.host`), which reuses this reader's task machinery (start, poll
thread, transforms, converters, ``commit_record``) there.

The plugin's :class:`~connectd.SourceTask` lives in Spark's long-lived
Python process for the query (where ``latestOffset`` runs), so it keeps its
state between batches as it would in Kafka Connect. It is polled on a thread
of its own, so the next batch is polled while the last one is produced::

    planner process (Spark's, long-lived)            executor Python worker
    ─────────────────────────────────────            ──────────────────────
    poller thread: task.poll() ─► transforms
      ─► converters ─► Arrow record batches,
      buffered (max.records or AHEAD_BYTES at most: it waits)
    latestOffset: everything buffered is batch N
      (Arrow IPC, a file or bytes; its offsets last)
    partitions: batch N, one input partition ──────► read: produce it (producer kept per
                                                     Python worker), flush, then yield the
                                                     batch's last offset per source partition
    worker process, foreachBatch: collect() those rows; once the batch succeeded, store them

The query's first ``latestOffset`` starts the task and waits for its first
``poll()`` to return (1 s at most), so that the first batch carries those
records: on a fresh Spark that batch costs seconds, and an empty one would
make them wait for the next.

Batches adapt to the rate by themselves: a batch is whatever was polled
while the last one was written, up to ``max.records`` (or
:data:`~connectd.runtime.source.poller.AHEAD_BYTES` of converted records); the slower the
writes, the larger the batches. The records cross from the planner process
to the executor as Arrow IPC, and are produced there column by column
(:func:`~connectd.runtime.kafka.producing.produce_batches`); nothing converts them
row by row in between. With executors on the planner's host (``spark.master``
``local[…]``) the IPC stream is a file in the run directory, which the
executor maps (the batch's plan holds only its path; the planner removes the
file once Spark committed the batch); otherwise its bytes travel in the plan. A record Kafka does not take fails the batch, so no offset
of it is stored; under ``errors.tolerance=all`` it is reported and passed over instead
(KIP-779, :class:`_ProduceFailures`).

Poller states::

    POLLING ──buffer holds max.records or AHEAD_BYTES──► FULL ──latestOffset takes it──► POLLING
    POLLING ──stop or pause file──► IDLE (not polled) ──pause file gone──► POLLING
    IDLE (stop file) ──latestOffset: the poll() under way returned (5 s at most)──► what is
      buffered is one last batch (not while paused)
    POLLING ──poll() raises a retriable error──► POLLING (logged; poll() again, as Kafka Connect does)
    POLLING ──poll() raises anything else──► FAILED: the next latestOffset raises it (the task fails)
    any ──reader.stop(), or the process's exit──► STOPPED (the thread ends; then task.stop(), once)

``reader.stop()`` is how PySpark ends the planner process's loop, also when
the query failed; but Spark ends that process with SIGTERM, whose default
would kill it before. So the reader, once it started the task, turns SIGTERM
into an exit that unwinds through PySpark's loop, which calls
``reader.stop()``: the task is stopped exactly once, whether the query was
stopped or died. A SIGTERM handled once that stop is under way does not cut
it short, and one that ends the process before it began (Spark closes the
socket right after the signal, so the loop may be on its way to the stop)
leaves the stop to the process's exit. While its task runs, the process
registers itself among the run's instances
(:func:`connectd.runtime.sink.executor.instances_dir`), so stopping the
query waits for ``task.stop()`` to return.

An empty ``poll()`` is followed by a pause of a few milliseconds before the
next, so a task that returns at once without data does not spin a core.

Spark's own offsets are a batch counter (``{"seq": N}``); the connector's
source offsets travel in the batch (``source_partition``/``source_offset``,
JSON text in their maps' own order, one text per partition: the offsets key
is written in that order, as Kafka Connect writes it). Every run starts with a fresh checkpoint, so Spark
never asks for a batch the reader no longer holds; the task reads its
stored offsets through its context instead. Records polled before the stop
file appeared (the ``poll()`` under way at that moment included, waited for
up to 5 s) make one last batch, written while the query drains, as Kafka
Connect sends what ``poll()`` returned before it stops a task; what is left
when the query is stopped before that batch is stored (the graceful timeout,
a failure) is polled again by the next run, from the stored offsets (at
least once).

A record that names no topic or a negative partition once transformed fails
the task, whatever ``errors.tolerance`` says, as Kafka Connect's
``ProducerRecord`` refuses it (:func:`_check_destinations`).

Acknowledgements (``commit_record``, ``commit``)
-----------------------------------------------
The executor that produced a batch yields, last, what the worker's
``foreachBatch`` needs to tell the planner that it stored the batch's
offsets: the batch's sequence numbers and, for a task that overrides
``commit_record``, where Kafka put each record (``[partition, offset,
timestamp]`` in row order). The worker writes that to a file in the
``stored.dir`` after storing the offsets; the planner takes the files at its
next ``latestOffset`` (every trigger, idle or not) and at ``stop``::

    batch stored ─► <stored.dir>/<batch id>-0.json ─► latestOffset / stop:
        commit_record(record, metadata or None) for each record polled, in poll order
        commit()                                  once per look that found a batch
        the file removed

So ``commit_record`` and ``commit`` come after the offsets are stored, never
for a batch that failed, and the last batch's at stop. ``commit()`` also comes
when ``offset.flush.interval.ms`` passed without one (idle, paused), as Kafka
Connect calls it at each periodic offset commit, records or not. Only for a task that
overrides ``commit_record`` does the planner keep the polled records (and
transform and convert them one at a time, to know which a transform
dropped) until their batch is stored.

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
import json
import os
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader

from connectd.runtime.fencing import lease_expired
from connectd.runtime.kafka.producing import executor_producer, produce_batches, write_arrow_batch
from connectd.runtime.source.handoff import Batch, ipc, ipc_file
from connectd.runtime.source.runner import SourceTaskRunner, _ProduceFailures
from connectd.runtime.source.wire import RESULT_SCHEMA, SPEC_OPTION

__all__ = ["FORMAT", "SPEC_OPTION", "SourceTaskDataSource", "SourceTaskReader"]

FORMAT = "connectd-source-task"

#: How long the query's first ``latestOffset`` waits for the task's first ``poll()`` to return.
_FIRST_POLL_WAIT_S = 1.0


class SourceTaskReader(SourceTaskRunner, DataSourceStreamReader):
    """Polls the task (:class:`~connectd.runtime.source.runner.SourceTaskRunner`, in the planner's
    process) for each micro-batch; :meth:`read` produces the batch in an executor."""

    def initialOffset(self) -> dict[str, int]:
        return {"seq": 0}

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        if self._task is not None and (self._settle() or self._commit_due()):
            self._commit_task()
        if lease_expired(self.lease_file):  # the task may run elsewhere now: no batch from here
            return {"seq": self._seq}
        if self._held():
            if self._task is None or not (self.stop_file and os.path.exists(self.stop_file)):
                return {"seq": self._seq}
            taken = self._take_at_stop()
        else:
            starting = self._task is None
            self._ensure_started()
            assert self._poller is not None
            if starting:
                # The query's first batch carries what the first poll() returned: a fresh Spark pays
                # seconds for its first batch, and an empty one would make the records wait for a second.
                self._poller.first_poll(_FIRST_POLL_WAIT_S)
            taken = self._poller.take()
        if taken is None:
            return {"seq": self._seq}
        batches, offsets, topics, polled = taken
        if self._admin is not None:
            # lazy: the planner process only, and only a task that creates topics
            from connectd.runtime.source.topic_creation import ensure_topics

            ensure_topics(self._admin, topics, self._topic_rules, self._known_topics)
        if self.topics_file is not None:
            self._record_topics(topics)
        # Offsets last: read() yields them only after every record above was acknowledged.
        batches.append(write_arrow_batch([(None, None, None, None, None, None, p, o) for p, o in offsets.items()]))
        self._seq += 1
        if self._acks:
            self._polled[self._seq] = polled
        self._unwritten[self._seq] = sum(batch.num_rows for batch in batches) - len(offsets)
        # Records polled and not yet written (Kafka Connect's source-record-active-count) as the batch
        # is taken: those of the batches not yet committed, this one's included.
        self._stats[self._seq] = {**self.take_counts(), "active": sum(self._unwritten.values())}
        if self.handoff_dir is None:
            self._kept[self._seq] = ipc(batches)
        else:
            self._kept[self._seq] = ipc_file(batches, os.path.join(self.handoff_dir, f"{self._seq}.arrow"))
        return {"seq": self._seq}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[Batch]:
        kept: list[bytes | str] = []
        seqs = list(range(int(start["seq"]) + 1, int(end["seq"]) + 1))
        for seq in seqs:
            if seq not in self._kept:
                raise RuntimeError(f"batch {seq} of {self._name()} is no longer held; the query must start afresh")
            kept.append(self._kept[seq])
        if not kept:
            return []
        stats: dict[str, float] = {}
        for seq in seqs:
            for key, value in self._stats.pop(seq, {}).items():
                stats[key] = value if key == "active" else stats.get(key, 0) + value  # a level, not a count
        policy = self._errors.policy if self._errors is not None else None
        return [Batch([k for k in kept if isinstance(k, bytes)], [k for k in kept if isinstance(k, str)], seqs,
                       self._acks, stats, policy if policy is not None and policy.tolerate_all else None)]

    def read(self, partition: Batch) -> Iterator[tuple[str | None, str | None, int | None, str | None]]:
        producer = executor_producer(self.spec.get("producer", "{}"), every_delivery=partition.acks)
        acks: list[Any] | None = [] if partition.acks else None
        stats = dict(getattr(partition, "stats", {}))
        refused = _ProduceFailures(self.spec, partition.tolerate) if partition.tolerate is not None else None
        try:
            written = produce_batches(producer, partition.record_batches(), self.flush_timeout, acks,
                                      refused.report if refused is not None else None)
            if refused is not None:
                refused.flush()  # dead-lettered before the batch's offsets move past them
        finally:
            if refused is not None:
                refused.close()
        if refused is not None:
            for key, value in refused.counts().items():
                stats[key] = stats.get(key, 0) + value
        for source_partition, source_offset in written.source_offsets.items():
            yield source_partition, source_offset, None, None
        yield None, None, written.records, json.dumps({"seqs": partition.seqs, "acks": acks, "stats": stats})

    def commit(self, end: dict[str, int]) -> None:
        for seq in [s for s in self._kept if s <= int(end["seq"])]:
            self._unwritten.pop(seq, None)
            kept = self._kept.pop(seq)
            if isinstance(kept, str):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(kept)


class SourceTaskDataSource(DataSource):
    """``spark.readStream.format("connectd-source-task").option(SPEC_OPTION, …)``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RESULT_SCHEMA

    def streamReader(self, schema: Any) -> SourceTaskReader:
        return SourceTaskReader(self.options)
