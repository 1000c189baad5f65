"""A source task's polled records on their way from the planner process to an executor.

The planner writes each polled batch as one Arrow IPC stream: bytes carried in the batch's plan,
or, with executors on the planner's host (``handoff.dir``), a file there the executor maps. A
:class:`Batch` is Spark's input partition for them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import InputPartition

__all__ = ["Batch", "ipc", "ipc_file", "write_ipc"]


def write_ipc(sink: Any, batches: list[Any]) -> None:
    """Arrow record batches to *sink* as one IPC stream, in one call: that releases the GIL for all of
    it, where a call per batch waits for the GIL at each, which the poller thread holds for up to the
    switch interval (5 ms) each time."""
    # lazy: pyarrow (~40 ms) only where batches are handed off, never at the worker's start-up,
    # which imports this module (assembly → source.task)
    import pyarrow as pa

    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        writer.write_table(pa.Table.from_batches(batches))


def ipc(batches: list[Any]) -> bytes:
    """Arrow record batches as one IPC stream."""
    import pyarrow as pa  # lazy: not at the worker's start-up (see write_ipc)

    sink = pa.BufferOutputStream()
    write_ipc(sink, batches)
    return sink.getvalue().to_pybytes()


def ipc_file(batches: list[Any], path: str) -> str:
    """Arrow record batches as one IPC stream in the file *path* (its directory made if need be)."""
    import pyarrow as pa  # lazy: not at the worker's start-up (see write_ipc)

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with pa.OSFile(path, "wb") as sink:
        write_ipc(sink, batches)
    return path


class Batch(InputPartition):
    """One or more polled batches, in order: Arrow IPC streams of :data:`WRITE_SCHEMA` rows,
    carried in the plan (*streams*) or, for executors on the planner's host, in files there
    (*files*, see ``handoff.dir``); *seqs* are their sequence numbers, and *acks* says whether
    the task wants each record's metadata (``commit_record``)."""

    def __init__(self, streams: list[bytes], files: list[str] | None = None, seqs: list[int] | None = None,
                 acks: bool = False, stats: dict[str, float] | None = None, tolerate: Any = None) -> None:
        self.streams = streams
        self.files = files or []
        self.seqs = seqs or []
        self.acks = acks
        #: what the task did while these batches were polled, for its metrics (see take_counts)
        self.stats = stats or {}
        #: the connector's ErrorPolicy when it tolerates errors: records Kafka does not take are then
        #: reported and passed over (KIP-779), else they fail the batch
        self.tolerate = tolerate

    def record_batches(self) -> Iterator[Any]:
        import pyarrow as pa  # lazy: not at the worker's start-up (see write_ipc)

        for stream in self.streams:
            yield from pa.ipc.open_stream(stream)
        for path in self.files:
            yield from pa.ipc.open_stream(pa.memory_map(path))
