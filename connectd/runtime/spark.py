"""The worker's one SparkSession, shared by every task.

Built from the worker's ``spark.*`` keys (see
:meth:`connectd.config.worker.WorkerConfig.spark_conf`). Two things must be
in the environment before the JVM starts, not only in the Spark conf:

- ``PYSPARK_PYTHON``: the Python processes Spark starts for Python data
  sources (the streaming source runner among them) use it, and must be this
  interpreter so they find connectd, its plugins and pyarrow; the system
  ``python3`` would not. PySpark hands the same value to executors for their
  Python workers. A ``spark.pyspark.python`` in the worker properties sets it;
  otherwise an inherited ``PYSPARK_PYTHON`` is kept, else this interpreter.
- ``SPARK_LOCAL_IP``: with a local master, 127.0.0.1, so nothing binds to
  the host's public address.

Starting a session takes seconds (a JVM); call :func:`start_session` from a
thread, never on the event loop.

Spark warnings about what connectd does by design are silenced
(:data:`QUIET_LOGGERS`), as they would be printed for every batch or every
task start and bury the worker's own logs: a micro-batch took longer than
the trigger interval (tasks run their micro-batches back to back, a 100 ms
trigger); a job ran in a scheduler pool not in an allocation file (every
task has its own FAIR pool, made on first use); adaptive query execution
is off in streaming queries (they are all streaming queries).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connectd.config.worker import WorkerConfig

__all__ = ["QUIET_LOGGERS", "start_session"]

#: Spark loggers set to ERROR when the session starts.
QUIET_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor",
    "org.apache.spark.scheduler.FairSchedulableBuilder",
    "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",
)


def start_session(config: WorkerConfig) -> SparkSession:
    """Start (or return the running) SparkSession for *config*; blocking."""
    from pyspark.sql import SparkSession

    conf = config.spark_conf()
    if "spark.pyspark.python" in config.originals():
        # Set in the worker properties: it wins over an inherited PYSPARK_PYTHON, as
        # spark-submit has it (PySpark itself reads only the environment).
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    else:
        os.environ.setdefault("PYSPARK_PYTHON", conf.get("spark.pyspark.python", sys.executable))
    if conf["spark.master"].startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", conf.get("spark.driver.bindAddress", "127.0.0.1"))
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    _quiet(session)
    return session


def _quiet(session: SparkSession) -> None:
    log4j = session._jvm.org.apache.logging.log4j
    for name in QUIET_LOGGERS:
        log4j.core.config.Configurator.setLevel(name, log4j.Level.ERROR)
