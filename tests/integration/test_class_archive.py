"""The driver JVM's class archive (:mod:`connectd.runtime.spark.class_archive`): each state and transition.

The directory's states are plain files, tested without a JVM; writing and
using an archive run real workers (``connectd standalone``), whose JVMs log
where each class came from (``-Xlog:class+load``, in the worker's Java
options, the same for both so the archive's key is too).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from connectd.runtime.spark import class_archive
from connectd.runtime.spark.class_archive import (
    archive_key,
    default_dir,
    prepare,
)

CONF = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


# --- the directory's states, as files -------------------------------------------------------------


def test_absent_the_first_worker_takes_the_lock_and_is_the_writer_the_next_runs_without(tmp_path):
    directory = tmp_path / "archives"
    first = prepare(directory, "k1", {**CONF, "spark.master": "local[2]"})
    assert first is not None and first.mode == "write"
    assert first.lock.read_text() == str(os.getpid())
    assert first.conf == CONF  # only what the archive depends on goes to the writer
    assert first.java_options() == ""  # the writer's own JVM does not write (it would start slower)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    # another worker meanwhile: the lock's process is alive
    assert prepare(directory, "k1", CONF) is None


def test_a_lock_whose_process_is_gone_is_taken_over_and_its_writers_temporary_file_removed(tmp_path):
    gone = _dead_pid()
    (tmp_path / "spark-driver-k1.lock").write_text(str(gone))
    (tmp_path / f"spark-driver-k1.{gone}.tmp").write_bytes(b"partial")
    archive = prepare(tmp_path, "k1", CONF)
    assert archive is not None and archive.mode == "write"
    assert archive.lock.read_text() == str(os.getpid())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark-driver-k1.lock"]


def test_ready_a_private_archive_is_mapped(tmp_path):
    tmp_path.chmod(0o700)
    (tmp_path / "spark-driver-k1.jsa").write_bytes(b"archive")
    (tmp_path / "spark-driver-k1.jsa").chmod(0o444)
    archive = prepare(tmp_path, "k1", CONF)
    assert archive is not None and archive.mode == "use"
    assert archive.java_options().split()[0] == f"-XX:SharedArchiveFile={tmp_path / 'spark-driver-k1.jsa'}"
    assert archive.write(1) is False  # only a writer writes


def test_an_archive_others_could_write_is_not_used_nor_a_directory_others_can_write(tmp_path):
    tmp_path.chmod(0o700)
    (tmp_path / "spark-driver-k1.jsa").write_bytes(b"archive")
    (tmp_path / "spark-driver-k1.jsa").chmod(0o666)
    assert prepare(tmp_path, "k1", CONF) is None
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert prepare(shared, "k1", CONF) is None
    assert not (shared / "spark-driver-k1.lock").exists()


def test_failed_no_worker_tries_again_until_the_marker_is_removed(tmp_path):
    tmp_path.chmod(0o700)
    (tmp_path / "spark-driver-k1.failed").touch()
    assert prepare(tmp_path, "k1", CONF) is None
    (tmp_path / "spark-driver-k1.failed").unlink()
    assert prepare(tmp_path, "k1", CONF).mode == "write"


def test_a_directory_that_cannot_be_made_means_no_archive(tmp_path):
    (tmp_path / "file").write_text("")
    assert prepare(tmp_path / "file" / "archives", "k1", CONF) is None


def test_a_writer_that_fails_leaves_the_failed_marker_and_no_lock_or_temporary_file(tmp_path):
    archive = prepare(tmp_path, "k1", {"spark.driver.extraJavaOptions": "-Xss1k"})
    assert archive is not None and archive.mode == "write"
    assert archive.write(120) is False  # the writer's JVM does not start: too small a stack
    assert archive.failed.exists()
    assert not archive.lock.exists() and not archive.temporary.exists() and not archive.archive.exists()


def test_only_the_newest_archives_are_kept_and_temporary_files_of_gone_writers_removed(tmp_path):
    for index in range(class_archive.KEEP + 2):
        path = tmp_path / f"spark-driver-k{index}.jsa"
        path.write_bytes(b"archive")
        os.utime(path, (1_000_000 + index, 1_000_000 + index))
    gone = tmp_path / f"spark-driver-k9.{_dead_pid()}.tmp"
    gone.write_bytes(b"partial")
    writing = tmp_path / f"spark-driver-k8.{os.getpid()}.tmp"
    writing.write_bytes(b"partial")
    class_archive._prune(tmp_path, class_archive.KEEP)
    assert sorted(p.name for p in tmp_path.glob("*.jsa")) == [
        f"spark-driver-k{index}.jsa" for index in range(2, class_archive.KEEP + 2)]
    assert not gone.exists() and writing.exists()


# --- which archive, where ------------------------------------------------------------------------


def test_the_key_follows_the_java_and_the_drivers_class_path_and_options(tmp_path):
    key = archive_key(CONF)
    assert key is not None and key == archive_key(dict(CONF))
    assert archive_key({**CONF, "spark.executor.memory": "2g"}) == key  # not the driver's
    assert archive_key({"spark.driver.extraJavaOptions": "-XX:+UseSerialGC"}) != key
    assert archive_key({**CONF, "spark.driver.extraClassPath": "/opt/x.jar"}) != key
    assert archive_key({**CONF, "spark.driver.memory": "8g"}) != key
    other_java = tmp_path / "jdk" / "bin" / "java"
    other_java.parent.mkdir(parents=True)
    other_java.write_text("#!/bin/sh\n")
    assert archive_key(CONF, {"JAVA_HOME": str(tmp_path / "jdk")}) not in (None, key)
    assert archive_key(CONF, {"JAVA_HOME": str(tmp_path / "none")}) is None
    assert archive_key(CONF, {"PATH": str(tmp_path / "empty")}) is None


def test_the_default_directory_is_systemds_cache_then_xdgs_then_the_home_cache(tmp_path):
    assert default_dir({"CACHE_DIRECTORY": "/var/cache/connectd", "XDG_CACHE_HOME": "/x"}) == Path(
        "/var/cache/connectd")
    assert default_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/connectd")
    assert default_dir({}) == Path.home() / ".cache" / "connectd"


@pytest.mark.parametrize(("setting", "java_options", "expected"), [
    ("", "-XX:TieredStopAtLevel=1", None),  # off
    (None, "-Xshare:off", None),  # the user's options decide class sharing
    (None, "-XX:SharedArchiveFile=/opt/mine.jsa", None),
    (None, "-XX:TieredStopAtLevel=1", "write"),
])
def test_the_worker_key_and_the_users_java_options_decide(worker_config, tmp_path, setting, java_options,
                                                          expected):
    from connectd.runtime.spark.session import _class_archive

    config = worker_config(**{"class.archive.dir": setting if setting is not None else str(tmp_path / "a"),
                              "spark.driver.extraJavaOptions": java_options})
    archive = _class_archive(config, config.spark_conf())
    assert (archive.mode if archive is not None else None) == expected


# --- real workers ---------------------------------------------------------------------------------


@pytest.mark.integration
def test_a_worker_without_an_archive_writes_one_as_it_stops_and_the_next_maps_spark_from_it(
        broker, connectd_processes, worker_config, tmp_path, wait_until):
    archives = tmp_path / "archives"
    class_log = tmp_path / "classes.log"
    properties = worker_config.file(**{
        "class.archive.dir": str(archives),
        "spark.driver.extraJavaOptions": f"-XX:TieredStopAtLevel=1 -Xlog:class+load=info:file={class_log}"})

    def started(log: str) -> bool:
        return "herder_started" in connectd_processes.output(log)

    first = connectd_processes.start("standalone", properties, log="first.log")
    wait_until(lambda: started("first.log"), "the first worker to start", timeout=120)
    assert [p.name for p in archives.iterdir()] == [f"spark-driver-{archive_key_of(properties)}.lock"]
    assert connectd_processes.terminate(first, timeout=150) == 0
    first_events = connectd_processes.events("first.log")
    assert "spark_class_archive_missing" in [e["event"] for e in first_events]
    written = [e for e in first_events if e["event"] == "spark_class_archive_written"]
    assert written and written[0]["worker"], first_events[-5:]
    archive = Path(written[0]["path"])
    assert sorted(p.name for p in archives.iterdir()) == [archive.name]  # no lock, no temporary file
    assert archive.stat().st_uid == os.geteuid() and not archive.stat().st_mode & 0o022

    class_log.unlink()
    second = connectd_processes.start("standalone", properties, log="second.log")
    wait_until(lambda: started("second.log"), "the second worker to start", timeout=120)
    assert connectd_processes.terminate(second, timeout=60) == 0
    second_events = [e["event"] for e in connectd_processes.events("second.log")]
    assert "spark_class_archive_used" in second_events and "spark_class_archive_writing" not in second_events
    spark_classes = [line for line in class_log.read_text().splitlines() if " org.apache.spark." in line]
    from_archive = [line for line in spark_classes if "source: shared objects file (top)" in line]
    from_jars = [line for line in spark_classes if "source: file:" in line or "source: jar:" in line]
    # Spark's classes came from the archive, hardly any from its jars (the rest: lambdas, made at run time)
    assert len(from_archive) > 1000 and len(from_jars) < 0.01 * len(from_archive), from_jars[:10]


def archive_key_of(properties: Path) -> str:
    """The archive key a worker with *properties* computes."""
    from connectd.config.worker import WorkerConfig

    key = archive_key(WorkerConfig.from_file(properties, "standalone").spark_conf())
    assert key is not None
    return key
