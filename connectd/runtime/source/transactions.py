"""Exactly-once delivery of a source task's records (KIP-618), in the task's own process.

The task's process (:mod:`connectd.runtime.source.host`, on an executor's host) owns a
transactional producer, ``transactional.id`` as the spec's ``exactly_once`` says (Kafka Connect's
``<group.id>-<connector>-<task>``), and writes each transaction's records and the task's offsets
for them (records of the offsets topic, in its own format: :mod:`connectd.runtime.offsets.store`)
in that one transaction. The offsets are stored when it commits and not at all when it aborts, so
the offsets read at a task's start (``read_committed``) are those of the records Kafka holds: the
worker stores no offsets for such a task.

``transaction.boundary=poll``: each ``poll()``'s records are a transaction of their own (the poller
keeps them apart: :meth:`connectd.runtime.source.poller.Poller.take_polls`), as Kafka Connect
says. ``interval``: a transaction holds the records of every poll until
``transaction.boundary.interval.ms`` has passed since it began, or until the micro-batch ends,
whichever is first. ``connector``: the task's ``TransactionContext`` ends each (the poller's chunks
say where: :class:`connectd.runtime.source.poller.EndedChunk`); the micro-batch goes on until it
does (:mod:`connectd.runtime.source.host`). Every way a Spark micro-batch holds one or more whole
transactions, committed before the batch replies: none spans two micro-batches.

States of the task's transactions::

    (start) ──init_transactions: older producers of the id fenced, their open transaction ended──►
    IDLE ──a poll's records taken──► OPEN (begin) ──its records produced──►
    OPEN ──poll boundary; interval boundary: the interval passed; or the micro-batch ends──►
         its offsets produced, commit ──committed──► IDLE
    OPEN ──(interval, connector) the next poll's records taken──► OPEN, they join it
    OPEN ──(connector) the task asked to abort──► abort; its offsets committed in a transaction of
         their own (Kafka Connect's way: the task goes on after the discarded records) ──► IDLE
    OPEN ──(connector) the task stops, or its lease ended──► abort (its successor polls them again)
    OPEN ──a record or offset not written, the commit failing, or the batch failing──► abort ──►
         the batch fails with the error, the task with it
    any ──a newer producer initialised the same id (the task's successor elsewhere)──► FENCED: the
         next begin or commit raises; the batch fails; this process ends its task (a zombie)

A task started again in the same process (its previous batch ran on another host) initialises
a new producer first: it fences the other host's.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

from connectd.logging import get_logger
from connectd.runtime.kafka.producing import transactional_producer
from connectd.runtime.offsets.store import TopicOffsetStore, open_offset_store
from connectd.runtime.source.wire import EXACTLY_ONCE

__all__ = ["TaskTransactions"]

log = get_logger(__name__)


class TaskTransactions:
    """A source task's transactions (states in the module's docstring).

    :param spec: the task's spec, with its ``exactly_once`` settings and an offsets topic (``offsets``).
    :param every_delivery: the producer reports every record's delivery (``commit_record``).
    :param timeout: seconds for the producer's initialisation, a commit, an abort.
    """

    def __init__(self, spec: dict[str, Any], every_delivery: bool, timeout: float) -> None:
        settings = spec[EXACTLY_ONCE]
        self.transactional_id = str(settings["transactional_id"])
        self.connector = str(spec["connector"])
        self.timeout = timeout
        store = open_offset_store(spec["offsets"])
        if not isinstance(store, TopicOffsetStore):
            raise ValueError("exactly-once delivery stores offsets in an offsets topic, not a file")
        self.store = store
        self.producer = transactional_producer(spec["producer"], self.transactional_id, timeout, every_delivery)
        #: where transactions end: "poll" (each poll()'s records), "interval" (every interval_s, or at
        #: the micro-batch's end: :meth:`end_of_batch`) or "connector" (where the task's
        #: TransactionContext says: the chunk's ``end``)
        self.boundary = str(settings.get("boundary", "poll"))
        self.interval_s = float(settings.get("interval_ms", 0)) / 1000
        self._sizes: list[int] = []  # records of each transaction committed since the last take_stats()
        self._commit_seconds = 0.0
        self._began: float | None = None  # when the open transaction began; None: none is open
        self._records = 0  # records in the open transaction
        self._offsets: dict[str, str] = {}  # the open transaction's last offset of each source partition
        self._aborts = 0  # transactions aborted since the last take_stats()
        log.info("source_task_transactions_initialised", transactional_id=self.transactional_id)

    def run(self, produce: Callable[[Any], int], chunk: tuple[list[Any], dict[str, str], set[str], list[Any]]) -> None:
        """*chunk*'s records (one ``poll()``'s: ``produce(chunk)`` with :attr:`producer`, returning how
        many it produced) into the open transaction, begun here if none is; committed after them with
        ``poll`` boundaries, or once ``interval`` boundaries' interval has passed since it began.

        :raises: what failed (after the abort).
        """
        end = getattr(chunk, "end", None)  # connector boundaries: what the task's TransactionContext asked
        if self._began is None and not (chunk[0] or chunk[1]):
            return  # nothing to open a transaction for, and none open to end
        if self._began is None:
            self.producer.begin_transaction()
            self._began = time.monotonic()
        try:
            self._records += produce(chunk)
        except BaseException:
            self.abort()
            raise
        self._offsets.update(chunk[1])
        if self.boundary == "connector":
            if end == "abort":
                self.abort_records()
            elif end == "commit":
                self.commit()
        elif self.boundary == "poll" or time.monotonic() - self._began >= self.interval_s:
            self.commit()

    @property
    def open(self) -> bool:
        """Whether a transaction is open (begun, not yet committed or aborted)."""
        return self._began is not None

    def end_of_batch(self, stopping: bool) -> None:
        """A micro-batch ends: poll and interval boundaries commit what is open. A connector-defined
        transaction is never cut by a batch (the host's batch waits for its end); open here only as
        the task stops or its lease ended: aborted, its offsets not stored (its records are polled
        again by its successor), as Kafka leaves such a transaction to the broker."""
        if self.boundary != "connector":
            self.commit()
        elif stopping and self.open:
            self.abort()
            self._aborts += 1

    def abort_records(self) -> None:
        """The task asked to abort (``abort_transaction``): as Kafka Connect, the transaction's records
        are discarded and its offsets committed in a transaction of their own, so the task goes on
        after them and its successor does not poll them again.

        :raises: what failed (after the abort).
        """
        offsets = self._offsets
        # Every record delivered first (then aborted by the marker): an abort with records still
        # queued purges them, and their deliveries would report failures the batch does not have.
        self.producer.flush(self.timeout)
        self.abort()
        self._aborts += 1
        if offsets:
            self.producer.begin_transaction()
            self._began, self._offsets = time.monotonic(), offsets
            self.commit()
            self._sizes.pop()  # not a transaction of records: counted as the abort it follows

    def commit(self) -> None:
        """The open transaction's offsets (the last of each source partition), then its commit;
        nothing without one (a micro-batch's end commits what it opened).

        :raises: what failed (after the abort).
        """
        if self._began is None:
            return
        offsets = {partition: json.loads(offset) for partition, offset in self._offsets.items()}
        try:
            self.store.put_in_transaction(self.producer, self.connector, offsets)
            began = time.monotonic()
            self.producer.commit_transaction(self.timeout)
        except BaseException:
            self.abort()
            raise
        self._commit_seconds += time.monotonic() - began
        self._sizes.append(self._records)
        self._reset()
        self.store.copy_to_fallback(self.connector, offsets)

    def abort(self) -> None:
        """End the open transaction unseen: none of its records is read committed, no offset moves."""
        if self._began is None:
            return
        self._reset()
        # A fenced producer cannot abort (its transaction is the broker's to end): the failure that
        # brought us here is what the batch reports.
        with contextlib.suppress(Exception):
            self.producer.abort_transaction(self.timeout)

    def _reset(self) -> None:
        self._began, self._records, self._offsets = None, 0, {}

    def take_stats(self) -> dict[str, Any]:
        """For the task's metrics (:meth:`connectd.metrics.TaskMetrics.task_counts`), since the last call:
        the records of each committed transaction (``transactions``), the seconds the commits took
        (``transaction_commit_seconds``, the flush of the records not yet sent included) and the
        transactions aborted (``transaction_aborts``: a connector's own, or open as the task stopped)."""
        sizes, self._sizes = self._sizes, []
        seconds, self._commit_seconds = self._commit_seconds, 0.0
        aborts, self._aborts = self._aborts, 0
        stats: dict[str, Any] = {"transactions": sizes, "transaction_commit_seconds": seconds} if sizes else {}
        if aborts:
            stats["transaction_aborts"] = aborts
        return stats

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.producer.flush(0)
