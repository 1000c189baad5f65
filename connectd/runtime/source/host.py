"""A record-level source task's process on an executor's host: polled, transformed, converted and
produced there, in one process.

Spark gives a query's micro-batches to whichever of its Python workers is free, a different one
from batch to batch as soon as two queries run, so a task kept in a Python worker (as a sink
task's instance is) would start again at almost every batch. A source task keeps state between
polls (a file position, a replication stream), so it lives in a process of its own on the
executor's host, one per task and run, which the batches' ``read()`` reaches through a Unix
socket, whichever Python worker runs them::

    planner (Spark's, on the driver's host)   executor Python worker       the task's host process
    ───────────────────────────────────────   ──────────────────────       ───────────────────────
    latestOffset: a batch when the host       read(): connect (start       poll thread: poll() ─►
      flags records waiting (its ready file),   the host at the first       transforms ─► converters,
      or always without a shared file system    batch) ── request ──►       buffered (max.records)
    partitions: {seq, mode, stored seqs}                                    produce what is buffered
                                                                            and what comes, until the
                                                                            batch ends; flush
                                              ◄── offsets, counts ──
                                              yield them (no record)
    worker, foreachBatch: store the offsets, write <stored dir>/<batch>.json; the planner passes
    the stored seqs with the next request: commit_record and commit() follow on the host

With executors on the driver's host (a local master) the worker starts the host as it starts
the query (:func:`connectd.runtime.source.wire.prepare`), so its imports and the task's
``start()`` overlap Spark's start of the query; elsewhere the first batch's ``read()`` starts it.
A lock beside the socket, held by a starting host until it listens, keeps it to one host per task
and run. A host ending removes both under that lock; a host starting removes those of hosts that
died without doing so (nothing listens, no lock held: :func:`connectd.runtime.source.wire.sweep`).

A batch ends when it produced ``max.records``, after ``BATCH_S``, once the
buffer stayed empty ``DRAINED_S`` after records, or when the task is being
stopped or paused — but, with exactly-once delivery and connector-defined
transactions, never while the task's transaction is open: then only once the
task ends it, or as the task stops or its lease ends (the transaction is then
aborted); paused, such a batch waits, polling nothing. While a batch
produces, it polls on its own thread, the poll thread held (two threads
running Python take the GIL from each other); while it waits for Kafka's
acknowledgements and between batches, the poll thread polls ahead, up to
``max.records`` (or :data:`~connectd.runtime.source.poller.AHEAD_BYTES`) buffered, so Spark's planning
costs no poll time.

Requests (``mode``)::

    run     settle the stored seqs; start the task if need be; produce; reply offsets + counts
    stop    settle; the poll() under way returns (5 s at most); produce what was polled
            before the stop (not while paused); no poll() after it
    final   settle (the stop batch's commit_record and commit()); task.stop(); the host exits
    settle  settle, or commit() when offset.flush.interval.ms passed: nothing is polled

Host states::

    LISTENING ──at once (not paused)──► RUNNING (task started; poll thread) ──final──► ended
              (a start() that fails is the first request's reply)
    RUNNING ──a request whose previous seq is not the last one here (the batch before ran on
              another host)──► task stopped, started again from the stored offsets
    RUNNING ──a batch fails (poll(), produce, flush)──► the error is the reply; task stopped; ended
    any ──the run over as this host sees it: with the driver's file system, its run directory
          gone, or the stop file there (or the lease ended) and no request for RUN_OVER_S
          (an idle source has no batch then, so idleness alone ends nothing); without it, no
          request for IDLE_STOP_S──► task stopped; ended
    any ──SIGTERM, or the process it watches ended (the executor's Python daemon, the parent of
          the worker that started the host; or the worker that started it ahead)──► task
          stopped; ended

Between batches, after records went through and with nothing buffered (an idle source), the host
gives the C heap's free pages back to the system (``malloc_trim``): 100,000 records a batch leave
≈50 MiB that glibc would keep for the process.

Without the driver's file system (a cluster master), the host polls ahead of its batches for
``PREFETCH_S`` at most: a host whose batches went to another host soon stops polling, and is
stopped ``IDLE_STOP_S`` later. While its task runs, a host on the driver's host registers in
the run's instances directory, so stopping the query waits for ``task.stop()``.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import socket
import sys
import threading
import time
import traceback
from typing import Any

from connectd.connector import SourceTask
from connectd.logging import configure_spark_process, get_logger
from connectd.runtime.fencing import LEASE_OPTION, lease_expired
from connectd.runtime.kafka.producing import executor_producer, flush_produced, produce_batches
from connectd.runtime.source.runner import SourceTaskRunner, _ProduceFailures, acknowledges, task_class
from connectd.runtime.source.wire import EXACTLY_ONCE, SPEC_OPTION, recv, remove_locked, send, sweep

__all__ = ["BATCH_S", "IDLE_STOP_S", "TaskHost", "main", "serve"]

log = get_logger(__name__)

#: The longest a batch goes on producing.
BATCH_S = 1.0
#: A batch that had records ends once nothing more came for this long.
DRAINED_S = 0.05
#: Without the driver's file system, a host that has had no request for this long stops its task and ends.
IDLE_STOP_S = 30.0
#: With the stop file there, a host that has had no request for this long ends.
RUN_OVER_S = 3.0
#: Without the driver's file system, how long after a batch the host goes on polling.
PREFETCH_S = 2.0
#: How often the host looks whether its run is over while no request comes.
_ACCEPT_WAIT_S = 0.25


class _HostedTask(SourceTaskRunner):
    """The task's machinery (start, poll thread, conversion, commit_record), in the host."""

    def __init__(self, options: dict[str, str], host: TaskHost) -> None:
        super().__init__(options)
        self._host = host
        self._on_buffered = host.buffered
        self._columns_only = True

    def _held(self) -> bool:
        return self._host.held()

    def _settle(self) -> bool:
        return False  # stored batches come with the requests (TaskHost._settle), not from stored.dir

    def _registration(self) -> str | None:
        if not self._host.local:
            return None  # the run directory is on another host
        path = super()._registration()
        return None if path is None else os.path.join(os.path.dirname(path), f"source-{os.getpid()}")


class TaskHost:
    """One task's run on this host: the requests of its batches, one at a time (states above)."""

    def __init__(self, options: dict[str, str], watched: int | None = None) -> None:
        self.options = options
        self._watched = _ProcessWatch(watched) if watched else None
        stop_file = options.get("stop.file")
        self.workdir = os.path.dirname(stop_file) if stop_file else None
        #: The driver's run directory is visible here (executors on the driver's host).
        self.local = self.workdir is not None and os.path.isdir(self.workdir)
        self.ready_file = os.path.join(self.workdir, "ready") if self.local and self.workdir else None
        self.lease_file = options.get(LEASE_OPTION)
        self.task = _HostedTask(options, self)
        self.stopping = False
        self.ended = False
        self.last_seq: int | None = None
        self.last_request = time.monotonic()
        self._in_batch = False
        self._polling_here = False  # a batch polls on its own thread
        self._batch_ended = time.monotonic()
        self._flag_lock = threading.Lock()
        self._flagged = False
        self._start_error: Exception | None = None
        #: seq -> (records polled, where Kafka put them), until the batch is stored (commit_record)
        self._kept: dict[int, tuple[list[Any], list[Any]]] = {}
        #: Records went through since the C heap's free pages were last given back (:meth:`give_back`).
        self._churned = False
        #: exactly-once delivery: the task's transactions, made as the task starts
        self._exactly_once = EXACTLY_ONCE in self.task.spec
        self._transactions: Any = None  # TaskTransactions

    # poller thread

    def held(self) -> bool:
        """The poll thread polls not: a batch is producing (it polls on its own thread; the poll thread
        goes on while the batch waits for Kafka's acknowledgements), stopping,
        paused, the lease over, or (no shared file system) no batch for too long."""
        if self._polling_here:
            return True
        return self.halted()

    def ending(self) -> bool:
        """The task's instance goes: it is stopping, or the worker's lease is over."""
        return self.stopping or lease_expired(self.lease_file)

    def halted(self) -> bool:
        """Not polled at all: stopping, paused, the lease over, or (no shared file system) idle
        too long."""
        if self.ending():
            return True
        if not self.local:
            return not self._in_batch and time.monotonic() - self._batch_ended > PREFETCH_S
        return SourceTaskRunner._held(self.task)

    def buffered(self) -> None:
        """The poller buffered records: flag them for the planner when no batch is producing."""
        if self.ready_file is None:
            return
        with self._flag_lock:
            if not self._in_batch and not self._flagged:
                self._touch_ready()

    def _touch_ready(self) -> None:
        with contextlib.suppress(OSError):  # the run directory may be gone: the run is over
            with open(self.ready_file, "a", encoding="utf-8"):  # type: ignore[arg-type]
                pass
            self._flagged = True

    # main thread

    def run_over(self) -> bool:
        """Nothing more will come (see the module's states)."""
        if self._watched is not None and self._watched.ended():
            log.warning("source_task_host_orphaned", watched=self._watched.pid)
            return True
        idle = time.monotonic() - self.last_request
        if not self.local or self.workdir is None:
            return idle > IDLE_STOP_S
        # Here an idle source has no batch at all (the planner waits for the ready flag): the run goes
        # on while its directory does, the stop file is not there and the executor's daemon lives.
        if not os.path.isdir(self.workdir):
            return True
        stopped = os.path.exists(os.path.join(self.workdir, "stop")) or lease_expired(self.lease_file)
        return stopped and idle > RUN_OVER_S

    def give_back(self) -> bool:
        """Between batches, with nothing buffered: give the C heap's free pages back to the system,
        once after records went through. A batch's records are freed when Kafka acknowledged them
        (librdkafka copies each, the converters make their bytes), but glibc keeps the freed pages
        for the process, ≈50 MiB at 100,000 records a batch: an idle source would hold them for good.
        A source that always has records reuses them instead, so it is not trimmed."""
        poller = self.task._poller
        if not self._churned or self._in_batch or poller is not None and poller.has_data():
            return False
        self._churned = False
        _malloc_trim()
        return True

    def start(self) -> None:
        """Start the task now, before the first request asks (unless paused or stopping): its first
        ``poll()`` then overlaps Spark's planning. Its producer first: connecting to the cluster (its
        bootstrap, metadata and producer id; 0.5-1 s on 2 cores) goes on, on librdkafka's threads,
        while the task starts. A failure is the first request's reply."""
        if self.halted():
            return
        try:
            if not self._exactly_once:  # a transactional producer is the task's transactions' own
                spec = self.task.spec
                executor_producer(spec.get("producer", "{}"), every_delivery=acknowledges(task_class(spec)))
            self._ensure_started()
        except Exception as error:  # noqa: BLE001 - the first batch fails with it, so does the task
            self._start_error = error

    def _ensure_started(self) -> None:
        """The task started; delivering exactly once, its transactional producer initialised first,
        so older producers of its id are fenced before it reads its offsets."""
        task = self.task
        if task._task is not None:
            return
        if self._exactly_once and self._transactions is None:
            from connectd.runtime.source.transactions import TaskTransactions  # lazy: exactly-once tasks only

            self._transactions = TaskTransactions(task.spec, task._acks, task.flush_timeout)
        task._ensure_started()

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        self.last_request = time.monotonic()
        with self._flag_lock:
            self._in_batch = True
        try:
            return self._handle(request)
        finally:
            self._batch_ended = self.last_request = time.monotonic()
            with self._flag_lock:
                self._in_batch = False
                if self.ready_file is not None:
                    poller = self.task._poller
                    if poller is not None and poller.has_data():
                        self._touch_ready()
                    else:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(self.ready_file)
                        self._flagged = False

    def _handle(self, request: dict[str, Any]) -> dict[str, Any]:
        seq, mode = int(request["seq"]), request["mode"]
        if self._start_error is not None:
            raise self._start_error
        task = self.task
        if task._task is not None and self.last_seq is not None and int(request["prev"]) != self.last_seq:
            # The batch before ran on another host: what this one polled since may overlap it.
            log.info("source_task_restarted_on_host", last_here=self.last_seq, seq=seq)
            self._restart()
            task = self.task
        self.last_seq = seq
        self._settle(request.get("stored") or [])
        if mode == "final":
            self.ended = True
            task.stop()
            return {"records": 0}
        if mode == "settle" or task._task is None and mode != "run":
            if task._task is not None and task._commit_due():
                task._commit_task()
            return {"records": 0}
        if mode == "stop":
            self.stopping = True
            if self._transactions is not None:
                return self._produce(seq, task._take_at_stop(polls=True) or [])
            taken = task._take_at_stop()
            return self._produce(seq, [taken] if taken is not None else [])
        self._ensure_started()
        if task._commit_due():
            task._commit_task()
        return self._produce(seq, None)

    def _restart(self) -> None:
        old, self._kept = self.task, {}
        try:
            old.stop()
        finally:
            self.task = _HostedTask(self.options, self)
            if self._transactions is not None:  # the other host fenced it: a new one fences that host's
                self._transactions.close()
                self._transactions = None

    def _settle(self, seqs: list[int]) -> None:
        """``commit_record`` for the records of the stored batches *seqs*, then ``commit()``."""
        task = self.task
        if not seqs or task._task is None:
            return
        for seq in seqs:
            kept = self._kept.pop(int(seq), None)
            if kept is not None:
                task._commit_records(*kept)
        task._commit_task()

    def _produce(self, seq: int, taken: list[Any] | None, window: float = BATCH_S) -> dict[str, Any]:
        """Produce *taken*, or (``None``) what the poller buffers for up to *window* seconds (see the
        module's docstring for when a batch ends); every record acknowledged before the reply."""
        task = self.task
        spec = task.spec
        poller = task._poller
        transactions = self._transactions
        producer = (transactions.producer if transactions is not None
                    else executor_producer(spec.get("producer", "{}"), every_delivery=task._acks))
        policy = task._errors.policy if task._errors is not None else None
        refused = _ProduceFailures(spec, policy) if policy is not None and policy.tolerate_all else None
        report = refused.report if refused is not None else None
        acks: list[Any] | None = [] if task._acks else None
        offsets: dict[str, str] = {}
        topics: set[str] = set()
        polled: list[Any] = []
        written = None
        began = time.monotonic()
        last_data = began

        def produce(chunk: Any) -> int:
            """*chunk*'s records produced (not yet acknowledged); how many."""
            nonlocal written
            before = written.records if written is not None else 0
            batches, chunk_offsets, chunk_topics, chunk_polled = chunk
            if task._admin is not None:
                from connectd.runtime.source.topic_creation import ensure_topics  # lazy: only tasks creating topics

                ensure_topics(task._admin, chunk_topics, task._topic_rules, task._known_topics)
            # No poll() between records (see produce_batches): the poll thread would hold each up.
            written = produce_batches(producer, batches, task.flush_timeout, acks, report, written, flush=False,
                                      poll_every=0)
            offsets.update(chunk_offsets)
            topics.update(chunk_topics)
            if chunk_polled:
                polled.extend(chunk_polled)
            return written.records - before

        def take() -> list[Any]:
            assert poller is not None
            if transactions is not None:
                return poller.take_polls()
            chunk = poller.take()
            return [] if chunk is None else [chunk]

        def produce_all(chunks: list[Any]) -> None:
            for chunk in chunks:
                if transactions is not None:
                    transactions.run(produce, chunk)  # into the open transaction; committed at its boundary
                else:
                    produce(chunk)

        try:
            if taken is not None:
                produce_all(taken)
            else:
                assert poller is not None
                self._polling_here = True
                # A transaction the task defines itself (transaction.boundary=connector) is never cut
                # by the batch's end: the batch goes on until the task ends it, or the task's instance
                # goes (stopping, the lease over); a paused task's batch waits, polling nothing.
                holding = transactions is not None and transactions.boundary == "connector"
                while True:
                    chunks = take()
                    if not chunks and not (holding and self.halted()):
                        # Polled on this thread while the batch lasts: the poll thread, held meanwhile,
                        # would take the GIL from the producing one at every switch (≈15 % of the rate).
                        poller.poll_here(DRAINED_S)
                        chunks = take()
                    now = time.monotonic()
                    if chunks:
                        produce_all(chunks)
                        last_data = now
                        # a source that always has records ends its batch on time too
                        if ((written is not None and written.records >= task.max_records or now - began >= window)
                                and not (holding and transactions.open)):
                            break
                        continue
                    open_held = holding and transactions.open
                    if (now - began >= window or written is not None and now - last_data >= DRAINED_S) \
                            and not open_held:
                        break
                    if self.halted():
                        if not open_held or self.ending():
                            break
                        time.sleep(DRAINED_S)
            self._polling_here = False  # the poll thread polls ahead while Kafka acknowledges
            # Records polled and not yet written (Kafka Connect's source-record-active-count), as the
            # batch waits for its acknowledgements: its own and those polled ahead.
            active = (written.records if written is not None else 0) + (poller.backlog if poller is not None else 0)
            if transactions is not None:  # no transaction spans two micro-batches
                transactions.end_of_batch(stopping=self.ending())
            if written is not None:
                flush_produced(producer, written, task.flush_timeout)
            if refused is not None:
                refused.flush()  # dead-lettered before the batch's offsets move past them
        except BaseException:
            if transactions is not None:
                transactions.abort()  # what the batch opened and did not commit is never seen
            raise
        finally:
            self._polling_here = False
            if refused is not None:
                refused.close()
        stats = {**task.take_counts(), "active": active}
        if transactions is not None:
            stats.update(transactions.take_stats())
        if refused is not None:
            for key, value in refused.counts().items():
                stats[key] = stats.get(key, 0) + value
        records = written.records if written is not None else 0
        had_batch = bool(offsets or polled or records)
        self._churned = self._churned or had_batch
        if task._acks and had_batch:
            self._kept[seq] = (polled, acks or [])
        # Whether stored batches must be told back (commit_record, commit()): the planner asks for a
        # batch to do only that when nothing else is polled.
        hooks = task._acks or type(task._task).commit is not SourceTask.commit
        return {"offsets": offsets, "records": records, "topics": sorted(topics),
                "stored": {"seqs": [seq] if had_batch else [], "acks": None, "stats": stats, "hooks": hooks}}

    def close(self) -> None:
        try:
            if self.task._task is not None:
                self.task.stop()
        finally:
            if self._transactions is not None:
                self._transactions.close()


def _malloc_trim() -> None:
    """glibc's ``malloc_trim(0)``: the heap's free pages back to the system; nothing without glibc."""
    global _trim
    if _trim is None:
        import ctypes  # lazy: the host only, once

        _trim = getattr(ctypes.CDLL(None), "malloc_trim", False)
    if _trim:
        _trim(0)


_trim: Any = None


class _ProcessWatch:
    """Whether a process (not a child of this one) has ended: a pidfd where Linux has them."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd: int | None = None
        with contextlib.suppress(OSError, AttributeError):
            self._fd = os.pidfd_open(pid)

    def ended(self) -> bool:
        if self._fd is not None:
            import select  # lazy: the host only

            return bool(select.select([self._fd], [], [], 0)[0])
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


def serve(path: str, options: dict[str, str], watched: int | None = None, lock_fd: int | None = None) -> None:
    """Listen on *path* and handle the task's batches until its run is over (states above);
    also once the process *watched* ended (the executor's Python daemon, or the worker that
    started it ahead). *lock_fd*: the spawner's lock, released once listening."""
    spec = json.loads(options[SPEC_OPTION])
    configure_spark_process(connector=spec["connector"], task=int(spec["task_id"]))
    host = TaskHost(options, watched)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    server.settimeout(_ACCEPT_WAIT_S)
    if lock_fd is not None:
        os.close(lock_fd)
    try:
        swept = sweep(os.path.dirname(path))
        if swept:
            log.info("source_host_files_swept", sockets=len(swept), why="their hosts died without removing them")
        host.start()
        # This process holds up to max.records polled records and little else that cycles: what it
        # imported and started stays out of the collector's way, and the youngest generation is
        # collected after 50,000 allocations, not 700 (a tenth of the time per record, measured).
        gc.freeze()
        gc.set_threshold(50_000, 20, 100)
        while not host.ended:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                if host.run_over():
                    break
                host.give_back()
                continue
            with conn:
                conn.settimeout(None)
                request = recv(conn)
                if request is None:
                    continue
                try:
                    reply = host.handle(request)
                except Exception as error:  # noqa: BLE001 - the batch fails with it; so does the task
                    host.ended = True
                    reply = {"error": f"source task {spec['connector']}-{spec['task_id']} failed: {error!r}\n"
                                      + "".join(traceback.format_exception(error))}
                with contextlib.suppress(OSError):  # the batch was cancelled: its worker went
                    send(conn, reply)
    finally:
        remove_locked(path)
        server.close()
        host.close()


def main() -> None:
    """``python -m connectd.runtime.source.host SOCKET [WATCHED_PID [LOCK_FD]]``, the reader's options
    (JSON) on stdin."""
    path, *numbers = sys.argv[1:]
    watched, lock_fd = ([int(n) for n in numbers] + [None, None])[:2]
    serve(path, json.loads(sys.stdin.read()), watched, lock_fd)


if __name__ == "__main__":
    main()
