"""connectd on a real Spark standalone cluster (master + worker on loopback, from pip's pyspark)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def cluster_settings(spark_standalone) -> dict[str, str]:
    return {"spark.master": spark_standalone.master_url, "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1", "spark.executor.memory": "1g", "spark.cores.max": "2"}


@pytest.fixture
def idle_cluster(spark_standalone, wait_until):
    """The cluster once an earlier test's application has left it: its 2 cores are free again."""
    wait_until(spark_standalone.active_applications, "the cluster to run no application", until=lambda a: not a,
               timeout=60)
    return spark_standalone


def ancestors(pid: int) -> list[int]:
    found = []
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
        found.append(pid)
    return found


def holders(path: Path) -> set[int]:
    """The processes that have *path* open."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") == str(path):
                    found.add(int(entry))
                    break
            except OSError:
                continue
    return found


def test_file_to_kafka_to_file_runs_on_the_cluster_with_put_in_an_executor(idle_cluster, broker, topic_name, tmp_path,
                                                                         worker_config, wait_until, connectd_processes):
    spark_standalone = idle_cluster
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(f"line {i}\n" for i in range(2000)))
    worker = worker_config.file(**cluster_settings(spark_standalone))
    (tmp_path / "source.properties").write_text(
        f"name=lines-in\nconnector.class=FileStreamSource\nfile={source}\ntopic={topic_name}\n")
    (tmp_path / "sink.properties").write_text(
        f"name=lines-out\nconnector.class=FileStreamSink\ntopics={topic_name}\nfile={out}\n")
    process = connectd_processes.start("standalone", worker, tmp_path / "source.properties",
                                       tmp_path / "sink.properties")
    try:
        def lines() -> int:
            if process.poll() is not None:
                raise AssertionError(f"connectd exited with {process.returncode}:\n"
                                     + connectd_processes.output()[-4000:])
            return len(out.read_text().splitlines()) if out.exists() else 0

        wait_until(lines, "2000 lines through the cluster", until=lambda n: n >= 2000, timeout=240)
        # FileStreamSink keeps its file open while it runs: in an executor's Python worker,
        # a descendant of the standalone Spark worker, not in connectd's process.
        writers = wait_until(lambda: holders(out), "the sink's file to be open")
        assert process.pid not in writers
        assert all(spark_standalone.worker_pid in ancestors(pid) for pid in writers), writers
        assert sorted(out.read_text().splitlines()) == sorted(f"line {i}" for i in range(2000))
    finally:
        code = connectd_processes.terminate(process)
    assert code == 0, connectd_processes.output()[-4000:]


def test_executors_that_cannot_import_connectd_stop_the_worker_naming_the_package(idle_cluster, broker, worker_config,
                                                                                   connectd_processes):
    spark_standalone = idle_cluster
    # Python without connectd's environment (the venv's base interpreter): as on a host where it is not installed.
    if sys.prefix == sys.base_prefix:
        pytest.skip("this interpreter is not a virtual environment's: no Python without connectd at hand")
    bare = os.path.realpath(sys.executable)  # the venv's interpreter, run outside the venv
    worker = worker_config.file(**cluster_settings(spark_standalone),
                                **{"spark.executorEnv.PYSPARK_PYTHON": bare, "spark.pyspark.python": bare})
    # An inherited PYSPARK_PYTHON (connectd's own) must not win over the worker's spark.pyspark.python.
    code, log = connectd_processes.run("standalone", worker, env={"PYSPARK_PYTHON": sys.executable}, timeout=240)
    assert code not in (0, None)
    assert "Spark executors cannot import" in log
    assert "executor on" in log and "connectd: ModuleNotFoundError" in log


def test_a_cluster_that_grants_no_executor_stops_the_worker_saying_so(idle_cluster, broker, worker_config,
                                                                     connectd_processes):
    # The cluster's only worker has 2 GiB: an executor of 8 GiB is never granted.
    worker = worker_config.file(**{**cluster_settings(idle_cluster), "spark.executor.memory": "8g",
                                   "executor.check.timeout.ms": "5000"})
    code, log = connectd_processes.run("standalone", worker, timeout=120)
    assert code not in (0, None)
    assert "no Spark executor ran connectd's start-up check within 5 s" in log
