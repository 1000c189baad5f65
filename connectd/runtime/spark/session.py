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
thread, never on the event loop. The driver JVM maps a class-data archive of
Spark's classes when there is one; the first worker without one writes it as
it stops (:mod:`connectd.runtime.spark.class_archive`), in :func:`stop_session`,
which stops the session.

Spark's JVM writes its log lines to the worker's stdout in the worker's own
format (:func:`log4j_config`): one JSON object a line with the same keys —
``timestamp``, ``level`` (lower case), ``logger``, ``event`` (the message),
``worker`` and, for an error with one, ``exception`` — when the worker's
lines are JSON, else a console line shaped like structlog's. Only WARN and
above (ERROR when the worker logs only errors): Spark's INFO lines are its
own diary, thousands an hour. The JVM itself may still print a line of its
own before logging starts (``WARNING: Using incubator modules``).

Spark warnings about what connectd does by design are silenced
(:data:`QUIET_LOGGERS`), as they would be printed for every batch or every
task start and bury the worker's own logs: a micro-batch took longer than
the trigger interval (tasks run their micro-batches back to back, a 100 ms
trigger); adaptive query execution
is off in streaming queries (they are all streaming queries); stopping a
query between its micro-batches found no job of its group to cancel.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectd.logging import lines_are_json, spark_process_env
from connectd.runtime.spark import class_archive

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connectd.config.worker import WorkerConfig
    from connectd.runtime.spark.class_archive import ClassArchive

__all__ = ["QUIET_LOGGERS", "end_jvm", "is_hiccup", "log4j_file", "start_session", "stop_session"]

#: How long a stopping worker waits for the class archive to be written (once per key).
CLASS_ARCHIVE_WRITE_TIMEOUT_S = 90.0
#: How long a stopped session's JVM may take to exit once its input is closed.
_JVM_EXIT_S = 30.0

#: Spark loggers set to ERROR when the session starts.
QUIET_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor",
    "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",
)

#: Spark's own failures that say nothing about the task or its data: a Python process that Spark
#: started (a Python data source's planner, a worker) did not connect back to the JVM within
#: Spark's fixed 10 s, which a busy machine can miss. No Spark setting lengthens that wait.
_HICCUPS = (
    "Python worker failed to connect back",
    "Timed out while waiting for the Python worker to connect back",
)


def is_hiccup(error: BaseException | str) -> bool:
    """Whether *error* (an exception or a query's failure trace) is one of Spark's own
    failures that an immediate restart of the query cures (:data:`_HICCUPS`)."""
    text = error if isinstance(error, str) else "".join(traceback.format_exception(error))  # causes too
    return any(hiccup in text for hiccup in _HICCUPS)


def log4j_config(as_json: bool, level: str = "WARN", worker: str = "") -> str:
    """A log4j2 configuration (properties format) writing to stdout as connectd's own lines are written.

    :param as_json: one JSON object a line, else a console line.
    :param level: the root level, ``WARN`` or ``ERROR``.
    :param worker: the ``worker`` field of every JSON line.
    """
    timestamp = "%d{yyyy-MM-dd'T'HH:mm:ss.SSS'Z'}{UTC}"
    level_name = "%level{WARN=warning, FATAL=critical, lowerCase=true}"
    if as_json:
        worker_field = worker.replace("\\", "\\\\").replace('"', '\\"')
        pattern = (f'{{"timestamp": "{timestamp}", "level": "{level_name}", "logger": "%enc{{%logger}}{{JSON}}", '
                   f'"event": "%enc{{%msg}}{{JSON}}", "worker": "{worker_field}"'
                   '%notEmpty{, "exception": "%enc{%throwable}{JSON}"}}%n')
    else:
        pattern = f"{timestamp} [%-9{level_name[1:]}] %msg [%logger{{1}}]%n%throwable"
    lines = [
        "status = error",
        "appender.out.type = Console",
        "appender.out.name = out",
        "appender.out.target = SYSTEM_OUT",
        "appender.out.layout.type = PatternLayout",
        "appender.out.layout.alwaysWriteExceptions = false",
        f"appender.out.layout.pattern = {pattern}",
        # Stopping a task's query between its micro-batches cancels a job group with no job.
        "appender.out.filter.cancel.type = RegexFilter",
        "appender.out.filter.cancel.regex = Failed to cancel job group .*Cannot find active jobs for it.*",
        "appender.out.filter.cancel.onMatch = DENY",
        "appender.out.filter.cancel.onMismatch = NEUTRAL",
        f"rootLogger.level = {level}",
        "rootLogger.appenderRef.out.ref = out",
    ]
    for index, name in enumerate(_ALWAYS_QUIET):
        lines += [f"logger.q{index}.name = {name}", f"logger.q{index}.level = error"]
    return "\n".join(lines) + "\n"


#: JVM loggers whose warnings say nothing to a connectd user: Hadoop's native code is absent
#: from pip's pyspark (nothing needs it), ...
_ALWAYS_QUIET = ("org.apache.hadoop.util.NativeCodeLoader",)


def log4j_file(as_json: bool, level: str, worker: str) -> str:
    """:func:`log4j_config` written to a file the JVM reads at start (removed when this process exits)."""
    with tempfile.NamedTemporaryFile("w", prefix="connectd-log4j2-", suffix=".properties", delete=False,
                                     encoding="utf-8") as handle:
        handle.write(log4j_config(as_json, level, worker))
    atexit.register(lambda: os.path.exists(handle.name) and os.unlink(handle.name))
    return handle.name


def start_session(config: WorkerConfig, worker_id: str = "") -> SparkSession:
    """Start (or return the running) SparkSession for *config*; blocking.

    :param worker_id: the ``worker`` field of the JVM's log lines.
    """
    # lazy: pyspark (~140 ms) only once a session starts or ends, not wherever this module is
    # imported (herder.supervision, for is_hiccup)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    conf = config.spark_conf()
    # Only a JVM that starts now takes Java options (a second session shares the running one).
    archive = _class_archive(config, conf) if SparkContext._gateway is None else None
    # Spark's Python processes write their lines as this worker does: those on this host inherit
    # the environment (the JVM starts them), executors elsewhere get it from the conf.
    for key, value in spark_process_env(worker_id).items():
        os.environ[key] = value
        conf.setdefault(f"spark.executorEnv.{key}", value)
    level = "ERROR" if logging.getLogger().getEffectiveLevel() >= logging.ERROR else "WARN"
    options = f"-Dlog4j2.configurationFile={log4j_file(lines_are_json(), level, worker_id)}"
    if archive is not None:
        options = f"{options} {archive.java_options()}"
    conf["spark.driver.extraJavaOptions"] = f"{options} {conf.get('spark.driver.extraJavaOptions', '')}".strip()
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
    session._connectd_class_archive = archive
    _quiet(session)
    return session


def stop_session(session: SparkSession) -> None:
    """Stop *session*; if this worker is the one to write the class archive, end its JVM, then
    write the archive (:data:`CLASS_ARCHIVE_WRITE_TIMEOUT_S` at most). Blocking."""
    archive = getattr(session, "_connectd_class_archive", None)
    session.stop()
    if archive is None or archive.mode != "write":
        return
    end_jvm(_JVM_EXIT_S)  # this worker's first: its memory is freed before the writer's JVM starts
    archive.write(CLASS_ARCHIVE_WRITE_TIMEOUT_S)


def end_jvm(timeout_s: float | None = None) -> int | None:
    """End this process's Spark JVM once its session is stopped; its exit code (``None`` if none ran).

    PySpark's gateway exits at the end of its input: that is closed, then the JVM is
    waited for *timeout_s* (``None``: as long as it takes), and killed past that. A later
    session in this process starts a new JVM.

    First the JVM objects Python let go of are released while the JVM still answers: py4j
    sends those releases from a thread of its own, which would otherwise send them to the
    ended JVM and log "Exception while sending command" on the root logger.
    """
    from pyspark import SparkContext  # lazy: as in start_session

    gateway = SparkContext._gateway
    jvm = getattr(gateway, "proc", None)
    if gateway is not None:
        _release_java_objects(gateway)
    SparkContext._gateway = None
    SparkContext._jvm = None
    if jvm is None:
        return None
    with contextlib.suppress(OSError):
        jvm.stdin.close()
    try:
        return jvm.wait(timeout_s)
    except subprocess.TimeoutExpired:
        jvm.kill()
        return jvm.wait()


def _release_java_objects(gateway: Any, timeout_s: float = 5.0) -> None:
    """Collect the Python objects holding JVM objects, wait (*timeout_s* at most) until py4j's
    finalizer thread has sent their releases, then stop that thread (the gateway's shutdown)."""
    gc.collect()
    pending = getattr(gateway._gateway_client, "finalizer_deque", None)  # py4j's ClientServer only
    deadline = time.monotonic() + timeout_s
    while pending and time.monotonic() < deadline:
        time.sleep(0.02)
    gateway.shutdown()  # its errors are logged by py4j's own logger, held at WARN


def _class_archive(config: WorkerConfig, conf: dict[str, str]) -> ClassArchive | None:
    """The driver JVM's :class:`~connectd.runtime.spark.class_archive.ClassArchive`, or ``None``: off
    (``class.archive.dir`` empty), the user's Java options handle class sharing, or no java found."""
    setting = config.get("class.archive.dir")
    if setting == "":
        return None
    java_options = conf.get("spark.driver.extraJavaOptions", "")
    if any(option.startswith(class_archive.USER_SHARING) for option in java_options.split()):
        return None
    key = class_archive.archive_key(conf)
    if key is None:
        return None
    return class_archive.prepare(Path(setting) if setting else class_archive.default_dir(), key, conf)


def _quiet(session: SparkSession) -> None:
    log4j = session._jvm.org.apache.logging.log4j
    for name in QUIET_LOGGERS:
        log4j.core.config.Configurator.setLevel(name, log4j.Level.ERROR)
