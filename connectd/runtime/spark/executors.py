"""What Spark's executors must be able to import, checked before any task runs there.

With a local master the executors are this process's own JVM and its Python
workers use this interpreter, so whatever the worker imports they import. On
a cluster (``spark.master=spark://…``, YARN, Kubernetes) each executor runs
Python on its own host: connectd and every plugin package whose code runs in
Spark (tasks, converters, transforms) must be installed there too. A missing
one would otherwise surface as a task failure deep in a Python trace, the
first time a batch lands on that executor.

:func:`check_executors` runs one small Spark job with a task per executor
core, each importing the modules and reporting its host, process and what
failed, and raises naming the package and the executor. The job has a
deadline (the worker's ``executor.check.timeout.ms``): a cluster that grants no executor (no
free cores, or not enough memory for ``spark.executor.memory``) would
otherwise keep the worker starting for ever.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from connectd.errors import ConnectdError

__all__ = ["check_executors", "executor_modules"]


def executor_modules(registry: Any) -> list[str]:
    """connectd and the top-level package of every plugin class in *registry*, sorted."""
    modules = {"connectd"}
    for info in registry:
        modules.add(info.cls.__module__.split(".")[0])
    return sorted(modules)


def check_executors(spark: Any, modules: list[str], timeout: float) -> None:
    """Import *modules* on the executors; raise :class:`ConnectdError` naming what failed where.

    :param timeout: seconds for the whole check, executors' start included.

    One task per executor core, so each executor most likely runs one (Spark
    does not promise to spread them, so this is a check, not a guarantee).
    """
    def probe(_: Any) -> list[tuple[str, str, str]]:
        # Defined here, importing nothing of connectd: Spark pickles it by value, so an
        # executor without connectd can still run it and say so.
        import importlib
        import os
        import socket

        where = (socket.gethostname(), f"pid {os.getpid()}")
        problems = []
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as error:  # noqa: BLE001 - any failure to import is the answer
                problems.append((*where, f"{module}: {type(error).__name__}: {error}"))
        return problems

    context = spark.sparkContext
    slots = max(context.defaultParallelism, 1)
    group = f"connectd-executor-check-{uuid.uuid4().hex[:8]}"
    outcome: dict[str, Any] = {}

    def run() -> None:
        # Job groups are per thread (PySpark pins Python threads to JVM threads).
        context.setJobGroup(group, "connectd: check that executors can import connectd and its plugins", True)
        try:
            outcome["found"] = context.parallelize(range(slots), slots).mapPartitions(probe).collect()
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=run, name="connectd-executor-check", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        context.cancelJobGroup(group)
        master = context.master
        raise ConnectdError(
            f"no Spark executor ran connectd's start-up check within {timeout:.0f} s on {master}: does the "
            "cluster have free cores and memory for this application (spark.cores.max, spark.executor.cores, "
            "spark.executor.memory)? Spark's log says why it grants none")
    if "error" in outcome:
        raise outcome["error"]
    found = outcome["found"]
    if found:
        lines = sorted(set(found))
        raise ConnectdError(
            "Spark executors cannot import what connectd's tasks need; install connectd and its plugin packages "
            "in the Python that spark.pyspark.python names on every executor host:\n"
            + "\n".join(f"  executor on {host} ({pid}): {problem}" for host, pid, problem in lines))
