"""A source task's poller: ``poll()`` on a thread of its own, into a bounded buffer, so the next
batch is polled while the last one is produced (the states are in
:mod:`connectd.runtime.source.task`'s docstring)."""

from __future__ import annotations

import threading
import time
from typing import Any

from connectd.errors import ConnectorError
from connectd.logging import get_logger

__all__ = ["AHEAD_BYTES", "EndedChunk", "Poller", "batch_bytes"]

log = get_logger(__name__)

_EMPTY_POLL_PAUSE_S = 0.005
_IDLE_CHECK_S = 0.1
#: The most the poll thread buffers ahead of the batches, in converted records' bytes (beside
#: ``source.batch.max.records``). Ahead of a batch it needs only what Spark's round between two
#: batches lets it poll (0.1-0.3 s); a batch polls on as it produces. 100,000 records buffered
#: ahead held ≈45 MiB of one task's process (BENCHMARKS.md, "Four source tasks' memory").
AHEAD_BYTES = 8 << 20


def batch_bytes(batch: Any) -> int:
    """About how much memory a converted batch holds: its ``nbytes`` (an Arrow batch's buffers, or a
    :class:`~connectd.runtime.kafka.producing.ColumnBatch`'s estimate); 0 for none."""
    return 0 if batch is None else batch.nbytes


class EndedChunk(tuple):
    """A chunk (as the poller buffers a poll's records) after whose records the task's transaction
    ends (``transaction.boundary=connector``): :attr:`end` is ``"commit"`` or ``"abort"``, or
    ``None`` when the transaction goes on."""

    end: str | None

    def __new__(cls, chunk: tuple[Any, ...], end: str | None) -> EndedChunk:
        made = super().__new__(cls, chunk)
        made.end = end
        return made


class Poller:
    """Polls the task on its own thread into a bounded buffer (states in the module docstring)."""

    def __init__(self, poll: Any, max_records: int, idle: Any, name: str, buffered: Any = None,
                 max_bytes: int = AHEAD_BYTES) -> None:
        # () -> (Arrow batch or None, {partition: offset}, topics, polled records or None) or None
        self._poll = poll
        #: () -> None, called (on the poller's thread) after each poll() that buffered something
        self._on_buffered = buffered
        self._name = name
        self._idle = idle
        self.max_records = max_records
        self.max_bytes = max_bytes
        self._cond = threading.Condition()
        #: one entry per poll() that gave anything, in order: ([Arrow batch] or [], {partition: offset},
        #: topics, polled records: (record, its topic once transformed, or None), for commit_record)
        self._polls: list[tuple[list[Any], dict[str, str], set[str], list[Any]]] = []
        self._buffered = 0
        self._buffered_bytes = 0
        self._error: BaseException | None = None
        self._stopping = False
        self._polling = False  # a poll() (or the look whether to make one) is under way
        self._looks = 0  # how many of those have ended
        self._thread = threading.Thread(target=self._run, name=f"connectd-poll-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and (self._buffered >= self.max_records
                                              or self._buffered_bytes >= self.max_bytes):
                    self._cond.wait()
                if self._stopping:
                    return
                self._polling = True
            try:
                pause = self._poll_into_buffer()
            finally:
                with self._cond:
                    self._polling = False
                    self._looks += 1
                    self._cond.notify_all()
            if pause is None:
                return
            if pause:
                time.sleep(pause)

    def _poll_into_buffer(self, here: bool = False) -> float | None:
        """One ``poll()`` (unless idle; *here*: :meth:`poll_here`'s, which is called while the
        thread is idle), its records buffered.

        :returns: how long to pause before the next, or ``None`` when ``poll()`` failed the task.
        """
        if not here and self._idle():
            return _IDLE_CHECK_S
        try:
            polled = self._poll()
        except BaseException as error:  # noqa: BLE001 - the task fails with it at the next batch
            # RetriableException: poll() again, as Kafka Connect does. Not anything with a "retriable"
            # attribute: confluent-kafka's KafkaError has a retriable() method.
            if isinstance(error, ConnectorError) and error.retriable:
                log.warning("source_task_poll_retriable_error", error=str(error))
                return _EMPTY_POLL_PAUSE_S
            with self._cond:
                self._error = error
            if self._on_buffered is not None:
                self._on_buffered()  # a batch must come to fail the task: a host flags it as it flags records
            return None
        if polled is None:
            return _EMPTY_POLL_PAUSE_S
        with self._cond:
            for part in polled if isinstance(polled, list) else (polled,):  # a list: parts of one poll
                batch, offsets, topics, records = part
                rows = batch.num_rows if batch is not None else 0
                end = getattr(part, "end", None)
                if rows or offsets or records or end:
                    chunk = ([batch] if rows else [], offsets, topics, records or [])
                    self._polls.append(EndedChunk(chunk, end) if end else chunk)
                    self._buffered += rows
                    self._buffered_bytes += batch_bytes(batch) if rows else 0
            self._cond.notify_all()
        if self._on_buffered is not None:
            self._on_buffered()
        return 0.0

    @property
    def backlog(self) -> int:
        """Records buffered, not yet taken."""
        return self._buffered

    def has_data(self) -> bool:
        """Whether anything is buffered (or the poll() failed: :meth:`take` raises it)."""
        with self._cond:
            return bool(self._polls or self._error is not None)

    def take(self) -> tuple[list[Any], dict[str, str], set[str], list[Any]] | None:
        """Everything buffered as one chunk (Arrow batches, last offsets, topics, polled records for
        ``commit_record``), or ``None`` if nothing is.

        :raises: what ``poll()`` (or converting its records) raised.
        """
        polls = self.take_polls()
        if not polls:
            return None
        if len(polls) == 1:
            return polls[0]
        batches: list[Any] = []
        offsets: dict[str, str] = {}
        topics: set[str] = set()
        polled: list[Any] = []
        for poll_batches, poll_offsets, poll_topics, poll_records in polls:
            batches += poll_batches
            offsets.update(poll_offsets)
            topics |= poll_topics
            polled += poll_records
        return batches, offsets, topics, polled

    def take_polls(self) -> list[tuple[list[Any], dict[str, str], set[str], list[Any]]]:
        """Everything buffered, a chunk per ``poll()`` in order (as :meth:`take`'s), for a task whose
        polls are transactions of their own (exactly-once, ``transaction.boundary=poll``).

        :raises: what ``poll()`` (or converting its records) raised.
        """
        with self._cond:
            if self._error is not None:
                raise self._error
            taken, self._polls, self._buffered, self._buffered_bytes = self._polls, [], 0, 0
            self._cond.notify_all()
            return taken

    def poll_here(self, timeout: float) -> None:
        """One ``poll()`` on the calling thread, its records buffered, once the thread's own poll()
        under way (if any) returned, *timeout* seconds at most; for a caller that holds the thread
        idle meanwhile (a task's host while it produces a batch: one thread running Python then,
        not two taking the GIL from each other). Nothing once the task failed or is stopping."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._polling:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)
            if self._stopping or self._error is not None:
                return
            self._polling = True
        try:
            pause = self._poll_into_buffer(here=True)
        finally:
            with self._cond:
                self._polling = False
                self._looks += 1
                self._cond.notify_all()
        if pause:
            time.sleep(pause)

    def first_poll(self, timeout: float) -> None:
        """Wait up to *timeout* seconds for the first ``poll()`` (or look whether to make one) to end."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._looks == 0 and not self._stopping:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def finish_poll(self, timeout: float) -> bool:
        """Wait up to *timeout* seconds for a ``poll()`` under way to return and its records to be
        buffered (once the task is idle, no other starts).

        :returns: whether none is under way any more.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._polling:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def wait(self, seconds: float) -> None:
        """Sleep *seconds* (on the poller's thread), unless :meth:`stop` comes first.

        :raises ConnectorError: the poller is being stopped.
        """
        deadline = time.monotonic() + seconds
        with self._cond:
            while not self._stopping:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)
        raise ConnectorError("the task is stopping: a failed record is not retried again; it is polled again "
                             "when the task next runs")

    def stop(self, timeout: float) -> None:
        """End the thread, waiting up to *timeout* seconds for a ``poll()`` in progress."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout)
