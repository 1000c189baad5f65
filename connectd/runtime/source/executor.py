"""A record-level source task whose records never leave its executor host (format
``connectd-source-executor``): the planner only numbers batches and says what each is for; the
task lives in a process of its own on the executor's host (:mod:`connectd.runtime.source.host`),
which a batch's ``read()`` asks to produce; the batch carries back offsets and counts alone.

Planner (``latestOffset``), one request per micro-batch::

    STARTING ──first look (not paused)──► RUNNING: a "run" batch (it starts the task)
    RUNNING ──the host flags records waiting (its ready file; always without a shared
              file system)──► a "run" batch
    RUNNING ──batches stored that the task wants told of (commit_record, commit()), or
              offset.flush.interval.ms passed, and no records waiting──► a "settle" batch
    RUNNING, paused ──► no batch but "settle" ones (as above)
    RUNNING ──stop file──► a "stop" batch (what was polled before it; not while paused),
              then a "final" one (its commit_record and commit(); task.stop()) ──► DONE
    DONE, or the lease over ──► no batch

Each request names the seq of the batch before it (``prev``): a host that did not run that one
starts its task again from the stored offsets. The stored seqs come from the worker's
``foreachBatch``, which writes a file per stored batch in ``stored.dir``, as for the planner-side
reader (:mod:`connectd.runtime.source.task`, "Acknowledgements").
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from connectd.runtime.fencing import LEASE_OPTION, lease_expired
from connectd.runtime.source.wire import RESULT_SCHEMA, SPEC_OPTION, exchange, take_stored

__all__ = ["FORMAT", "SourceExecutorDataSource", "SourceExecutorReader", "run_key"]

FORMAT = "connectd-source-executor"


def run_key(spec: dict[str, Any]) -> str:
    """What names a task's run across hosts: the run's id, the connector and the task id."""
    return f"{spec['run']}|{spec['connector']}-{spec['task_id']}"


class Request(InputPartition):
    """One batch's request to the task's host (see :mod:`connectd.runtime.source.host`)."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request


class SourceExecutorReader(DataSourceStreamReader):
    """Numbers the task's batches (states in the module's docstring); :meth:`read` has the task's
    host produce each."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options_json = json.dumps(dict(options))
        spec = json.loads(options[SPEC_OPTION])
        self.key = run_key(spec)
        self.stop_file = options.get("stop.file") or None
        self.pause_file = options.get("pause.file") or None
        self.lease_file = options.get(LEASE_OPTION)
        self.stored_dir = options.get("stored.dir") or None
        #: The executors see the run directory (a local master): the host flags records waiting there.
        self.ready_file = (os.path.join(os.path.dirname(self.stop_file), "ready")
                           if self.stop_file and options.get("host.local") == "true" else None)
        try:
            self.commit_interval = int(spec["worker_config"].get("offset.flush.interval.ms", 60000)) / 1000
        except ValueError:
            self.commit_interval = 60.0
        self._seq = 0
        self._modes: dict[int, str] = {}
        self._stored: list[int] = []
        self._hooks = True  # until a stored batch says the task has none
        self._started = False
        self._stop_sent = False
        self._done = False
        self._last_request = time.monotonic()

    def initialOffset(self) -> dict[str, int]:
        return {"seq": 0}

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        self._collect_stored()
        mode = self._next_mode()
        if mode is not None:
            self._seq += 1
            self._modes[self._seq] = mode
            self._last_request = time.monotonic()
        return {"seq": self._seq}

    def _exists(self, path: str | None) -> bool:
        return path is not None and os.path.exists(path)

    def _next_mode(self) -> str | None:
        if self._done or lease_expired(self.lease_file):
            return None
        paused = self._exists(self.pause_file)
        if self._exists(self.stop_file):
            if not self._started:
                self._done = True
                return None
            if not self._stop_sent and not paused:
                self._stop_sent = True
                return "stop"
            self._done = True
            return "final"
        if not self._started:
            if paused:
                return None
            self._started = True
            return "run"
        if not paused and (self.ready_file is None or os.path.exists(self.ready_file)):
            return "run"
        owed = self._stored or time.monotonic() - self._last_request >= self.commit_interval
        return "settle" if self._hooks and owed else None

    def _collect_stored(self) -> None:
        """The seqs of the batches the worker stored since the last look (their files removed)."""
        for stored in take_stored(self.stored_dir):
            self._stored.extend(stored.get("seqs") or ())
            self._hooks = bool(stored.get("hooks", True))

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[Request]:
        first, last = int(start["seq"]), int(end["seq"])
        if last <= first:
            return []
        mode = self._modes.pop(last)
        for seq in range(first + 1, last):
            self._modes.pop(seq, None)
        stored, self._stored = self._stored, []
        return [Request({"seq": last, "prev": first, "mode": mode, "stored": stored})]

    def read(self, partition: Request) -> Iterator[tuple[str | None, str | None, int | None, str | None]]:
        reply = exchange(self.key, self.options_json, partition.request)
        for source_partition, source_offset in (reply.get("offsets") or {}).items():
            yield source_partition, source_offset, None, None
        stored = reply.get("stored")
        if stored is not None:
            yield None, None, int(reply.get("records") or 0), json.dumps({**stored, "topics": reply.get("topics", [])})

    def commit(self, end: dict[str, int]) -> None:
        return None

    def stop(self) -> None:
        return None  # the task's host stops it: a "final" batch, else when it sees the run over


class SourceExecutorDataSource(DataSource):
    """``spark.readStream.format("connectd-source-executor").option(SPEC_OPTION, …)``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RESULT_SCHEMA

    def streamReader(self, schema: Any) -> SourceExecutorReader:
        return SourceExecutorReader(self.options)
