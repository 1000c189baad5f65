"""A class-data archive of Spark's driver JVM (HotSpot's AppCDS): its classes mapped, not loaded, at start.

A fresh driver JVM spends most of a worker's first seconds loading and
verifying Spark's classes, one core busy (measured on 2 cores: the session
3.3 s, the first streaming query's classes more). HotSpot can write the
classes a JVM loaded to an archive as it exits (``-XX:ArchiveClassesAtExit``)
and map that archive at the next start (``-XX:SharedArchiveFile``): a worker's
session is up ≈2 s sooner and its first record reaches Kafka ≈3 s sooner
(BENCHMARKS.md, "Start-up"). The worker key ``class.archive.dir`` says where
archives are kept; empty turns this off.

An archive holds only what the JVM it came from had: the same java, the same
jars in the same order, compatible options. Its file name is a digest of what
decides that (:func:`archive_key`: the java binary and libjvm as files, the
pyspark version, the driver's class path, jars, Java options and memory,
:data:`ARCHIVE_CONF`), so a JVM is never offered an archive of another;
HotSpot checks again and runs without one it cannot use. The directory is
made private (0700), and an archive is used only if this user owns it and no
one else can write it: the JVM trusts the classes in it.

A JVM that writes an archive as it exits starts ≈3 s slower, so the worker's
own JVM never does: the worker that finds no archive writes one as it stops,
with a JVM of its own (:func:`_write`, ``python -m
connectd.runtime.spark.class_archive``): a local session with the worker's
:data:`ARCHIVE_CONF` that runs the warm-up query
(:mod:`connectd.runtime.spark.warm_up`, a Python data source streamed through
``foreachBatch``), stops and exits. States of one key's archive, in the
directory::

    ABSENT ──a worker starts and creates <key>.lock (O_EXCL, its pid)──► WRITER (runs as usual)
    ABSENT, the lock held by a live process ──► the worker runs without an archive
    ABSENT, the lock's process gone (killed) ──► its lock and any writer's .tmp of a process
        gone removed ──► ABSENT (and on, above)
    WRITER ──the worker stops: its Spark and JVM ended, the writer JVM run, exit 0 within
        the timeout──► <key>.<pid>.tmp renamed to <key>.jsa, lock removed ──► READY
    WRITER ──the writer fails or times out (then killed)──► .tmp and lock removed,
        <key>.failed made ──► FAILED: no worker tries again (remove the file to retry)
    READY ──a worker starts──► its JVM runs with -XX:SharedArchiveFile=<key>.jsa

Writing costs that one stop ≈25 s on 2 cores (logged as it starts and ends). The
directory keeps the :data:`KEEP` newest archives. A JVM already running in
this process (a second session), Java options of the user's that name an
archive or ``-Xshare``, or a directory that cannot be made: no archive,
nothing else changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from connectd.logging import configure_spark_process, get_logger, lines_are_json, spark_process_worker

__all__ = ["ARCHIVE_CONF", "KEEP", "USER_SHARING", "ClassArchive", "archive_key", "default_dir", "prepare"]

log = get_logger(__name__)

#: Archives kept in the directory, newest first; older ones are removed when one is written.
KEEP = 3
#: The Spark settings an archive depends on: the driver JVM's class path and options.
ARCHIVE_CONF = ("spark.driver.extraJavaOptions", "spark.driver.extraClassPath", "spark.jars",
                "spark.jars.packages", "spark.driver.memory")
#: Java options of the user's that decide class sharing themselves: connectd then adds none.
USER_SHARING = ("-Xshare", "-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit", "-XX:SharedClassListFile")
#: HotSpot warns, one line per class, of every class it cannot archive (signed jars, old class files):
#: hundreds of lines on the worker's output. Off; the outcome is logged instead.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
#: The writer's warm-up query, at most.
_WARM_UP_S = 60.0


def default_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where archives go when ``class.archive.dir`` is not set: systemd's cache directory for the
    service (``$CACHE_DIRECTORY``, from ``CacheDirectory=``), else ``$XDG_CACHE_HOME/connectd``,
    else ``~/.cache/connectd``."""
    env = os.environ if environ is None else environ
    if env.get("CACHE_DIRECTORY"):
        return Path(env["CACHE_DIRECTORY"].split(":")[0])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "connectd"
    return Path.home() / ".cache" / "connectd"


def _java(environ: Mapping[str, str]) -> str | None:
    """The java binary Spark's launcher runs: ``$JAVA_HOME/bin/java``, else ``java`` on the PATH."""
    if environ.get("JAVA_HOME"):
        return os.path.join(environ["JAVA_HOME"], "bin", "java")
    return shutil.which("java", path=environ.get("PATH"))


def archive_key(conf: Mapping[str, str], environ: Mapping[str, str] | None = None) -> str | None:
    """A digest of what an archive must match, or ``None`` when no java is found.

    :param conf: the Spark conf the driver starts with (:data:`ARCHIVE_CONF` counts).
    """
    import pyspark  # lazy: connectd.runtime.spark.session imports this module and keeps pyspark lazy

    java = _java(os.environ if environ is None else environ)
    if java is None or not os.path.exists(java):
        return None
    real = os.path.realpath(java)
    parts: dict[str, object] = {"pyspark": pyspark.__version__}
    for path in (real, os.path.join(os.path.dirname(os.path.dirname(real)), "lib", "server", "libjvm.so")):
        with contextlib.suppress(OSError):
            info = os.stat(path)
            parts[path] = [info.st_size, info.st_mtime_ns]
    for name in ARCHIVE_CONF:
        parts[name] = conf.get(name, "")
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


@dataclass
class ClassArchive:
    """A driver JVM's part in its key's archive: the Java options it starts with and, for the
    worker that writes the archive, :meth:`write` once its own JVM has ended."""

    directory: Path
    key: str
    #: ``use``: the JVM maps the archive; ``write``: the worker writes it as it stops.
    mode: str
    #: The worker's :data:`ARCHIVE_CONF` settings, for the writer's JVM.
    conf: dict[str, str] = field(default_factory=dict)

    def _file(self, suffix: str) -> Path:
        return self.directory / f"spark-driver-{self.key}.{suffix}"

    @property
    def archive(self) -> Path:
        return self._file("jsa")

    @property
    def lock(self) -> Path:
        return self._file("lock")

    @property
    def failed(self) -> Path:
        return self._file("failed")

    @property
    def temporary(self) -> Path:
        return self._file(f"{os.getpid()}.tmp")

    def java_options(self) -> str:
        """Options for the worker's driver JVM (none for the writing worker's own)."""
        return f"-XX:SharedArchiveFile={self.archive} {_QUIET}" if self.mode == "use" else ""

    def write(self, timeout_s: float) -> bool:
        """Run the writer (a JVM of its own, this worker's having ended) and put its archive in
        place; whether one was written. Blocking, *timeout_s* at most."""
        if self.mode != "write":
            return False
        written = False
        log.info("spark_class_archive_writing", path=str(self.archive), timeout_s=timeout_s)
        began = time.monotonic()
        try:
            request = json.dumps({"conf": self.conf, "archive": str(self.temporary)})
            # In this process's group: whoever kills the worker's group kills the writer too.
            writer = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE)
            try:
                writer.communicate(request.encode(), timeout=timeout_s)
            except subprocess.TimeoutExpired:
                writer.kill()
                writer.wait()
                log.warning("spark_class_archive_timed_out", timeout_s=timeout_s, failed=str(self.failed))
                return False
            if writer.returncode != 0 or not self.temporary.exists():
                log.warning("spark_class_archive_not_written", exit=writer.returncode, failed=str(self.failed))
                return False
            os.replace(self.temporary, self.archive)
            written = True
            log.info("spark_class_archive_written", path=str(self.archive), seconds=round(time.monotonic() - began, 1),
                     mib=round(self.archive.stat().st_size / 2**20))
            _prune(self.directory, KEEP)
            return True
        finally:
            if not written:
                with contextlib.suppress(OSError):
                    self.failed.touch()
            with contextlib.suppress(FileNotFoundError):
                self.temporary.unlink()
            with contextlib.suppress(FileNotFoundError):
                self.lock.unlink()


def prepare(directory: Path, key: str, conf: Mapping[str, str]) -> ClassArchive | None:
    """This worker's part in *key*'s archive in *directory*: use it, write it, or ``None`` (another
    process is writing it, writing it failed, or the directory cannot be used).

    :param conf: the worker's Spark conf (its :data:`ARCHIVE_CONF` settings go to the writer).
    """
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(directory):
            log.warning("spark_class_archive_dir_not_private", path=str(directory),
                        reason="owned by another user or writable by others; no class archive used")
            return None
        archive = ClassArchive(directory, key, "use")
        if archive.failed.exists():
            log.info("spark_class_archive_failed_before", marker=str(archive.failed),
                     note="not written again until this file is removed; the worker's log said why")
            return None
        if archive.archive.exists():
            if _private(archive.archive):
                log.info("spark_class_archive_used", path=str(archive.archive))
                return archive
            log.warning("spark_class_archive_not_private", path=str(archive.archive),
                        reason="owned by another user or writable by others; not used")
            return None
        if not _take_lock(archive.lock):
            log.info("spark_class_archive_being_written", lock=str(archive.lock),
                     note="another worker writes it; this one starts without")
            return None
        _remove_stale(directory)
        log.info("spark_class_archive_missing", path=str(archive.archive), note="this worker writes it as it stops")
        return ClassArchive(directory, key, "write", {name: conf[name] for name in ARCHIVE_CONF if name in conf})
    except OSError as error:
        log.warning("spark_class_archive_dir_unusable", path=str(directory), error=str(error))
        return None


def _private(path: Path) -> bool:
    info = path.stat()
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _take_lock(lock: Path) -> bool:
    """Create *lock* holding this pid; a lock whose process is gone is removed first."""
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            try:
                holder = int(lock.read_text().strip() or "0")
            except (OSError, ValueError):
                holder = 0
            if holder and _alive(holder):
                return False
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
            continue
        with os.fdopen(descriptor, "w") as handle:
            handle.write(str(os.getpid()))
        return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _prune(directory: Path, keep: int) -> None:
    archives = sorted(directory.glob("spark-driver-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[keep:]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()
    _remove_stale(directory)


def _remove_stale(directory: Path) -> None:
    """Remove the temporary files of writers whose process is gone (killed with their worker)."""
    for stale in directory.glob("spark-driver-*.tmp"):
        pid = stale.suffixes[-2].lstrip(".") if len(stale.suffixes) >= 2 else ""
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()


def _write(conf: Mapping[str, str], archive: str) -> int:
    """The writer: a local session with *conf* whose JVM writes *archive* as it exits; 0 if it did."""
    # lazy: pyspark, and warm_up with it, as in archive_key
    from pyspark.sql import SparkSession

    from connectd.runtime.spark.session import end_jvm, log4j_file  # here: session imports this module
    from connectd.runtime.spark.warm_up import warm_up  # lazy: it imports pyspark (see above)

    configure_spark_process()
    log4j = log4j_file(lines_are_json(), "WARN", spark_process_worker())
    options = " ".join(part for part in (f"-Dlog4j2.configurationFile={log4j}",
                                         conf.get("spark.driver.extraJavaOptions", ""),
                                         f"-XX:ArchiveClassesAtExit={archive} {_QUIET}") if part)
    settings = {**conf, "spark.driver.extraJavaOptions": options, "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false", "spark.scheduler.mode": "FIFO",
                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    builder = SparkSession.builder.master("local[1]").appName("connectd-class-archive")
    for name, value in settings.items():
        builder = builder.config(name, value)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")  # its warnings (the warm-up's trigger) are not the worker's
    ran = warm_up(spark, _WARM_UP_S)
    spark.stop()
    code = end_jvm()  # HotSpot writes the archive as the JVM exits (the worker's timeout bounds it)
    return 0 if ran and code == 0 and os.path.exists(archive) else 1


if __name__ == "__main__":
    request = json.loads(sys.stdin.read())
    sys.exit(_write(request["conf"], request["archive"]))
