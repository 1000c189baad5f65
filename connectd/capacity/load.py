"""A worker's load as the capacity policy sees it: its whole process tree's CPU.

A worker is more than its Python process: Spark's driver JVM is its child,
and Spark's Python workers (a local master's executors) are the JVM's. MSK
Connect's CPU utilisation is a worker's; here it is the sum of the CPU time
of every process in that tree, over wall time and the cores the worker's
Spark runs on (:attr:`connectd.config.worker.WorkerConfig.spark_cores`), in
percent. It can pass 100 % when the tree uses more cores than its Spark's
share. Processes that ended keep what they used: the total only grows.
"""

from __future__ import annotations

import os
import threading
import time

import psutil

__all__ = ["ProcessTreeCpu"]


class ProcessTreeCpu:
    """CPU seconds of a process and all its descendants, and their rate between two samples.

    :param cores: what 100 % is.
    :param pid: the tree's root; this process by default.
    """

    def __init__(self, cores: int, pid: int | None = None) -> None:
        self.cores = max(cores, 1)
        self._root = psutil.Process(pid if pid is not None else os.getpid())
        self._seen: dict[tuple[int, float], float] = {}  # (pid, create time) → its CPU seconds when last read
        self._ended = 0.0  # what processes no longer in the tree used, when last read
        self._last: tuple[float, float] | None = None  # (monotonic time, total CPU seconds)
        self._lock = threading.Lock()  # a scrape (event loop) and the capacity step (a thread) read it at once

    def cpu_seconds(self) -> float:
        """User and system CPU seconds of the tree so far, ended processes included."""
        with self._lock:
            return self._read()

    def _read(self) -> float:
        processes = [self._root]
        try:
            processes += self._root.children(recursive=True)
        except psutil.Error:
            pass
        seen: dict[tuple[int, float], float] = {}
        for process in processes:
            try:
                with process.oneshot():
                    times = process.cpu_times()
                    seen[(process.pid, process.create_time())] = times.user + times.system
            except psutil.Error:  # ended meanwhile: counted below with what it used when last read
                continue
        self._ended += sum(used for key, used in self._seen.items() if key not in seen)
        self._seen = seen
        return self._ended + sum(seen.values())

    def percent(self) -> float | None:
        """The tree's CPU since the last call, in percent of :attr:`cores`; ``None`` the first time."""
        with self._lock:
            now, total = time.monotonic(), self._read()
            last, self._last = self._last, (now, total)
        if last is None or now <= last[0]:
            return None
        return max(total - last[1], 0.0) / (now - last[0]) / self.cores * 100
