"""connectd-spark-python: Spark's Python processes import pyspark's installed, compiled modules
(connectd/runtime/spark/python.py). Real processes; the launcher as pip installed it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark

from connectd.config.worker import SPARK_PYTHON, spark_python
from connectd.runtime.spark.python import without_installed_archive

INSTALLED = Path(pyspark.__file__).parent
ARCHIVE = INSTALLED / "python" / "lib" / "pyspark.zip"
PY4J = next((INSTALLED / "python" / "lib").glob("py4j-*.zip"))


def test_only_an_installed_packages_own_archive_leaves_the_path(tmp_path):
    site = tmp_path / "site"
    (site / "pyspark" / "python" / "lib").mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    own = site / "pyspark" / "python" / "lib" / "pyspark.zip"
    distribution = tmp_path / "spark-4.0.0" / "python" / "lib" / "pyspark.zip"  # a Spark distribution's
    other = tmp_path / "elsewhere"
    path = os.pathsep.join(map(str, (own, site / "pyspark" / "python" / "lib" / "py4j-0.10.9.9-src.zip", distribution,
                                     other)))
    kept = without_installed_archive(path, [str(site)]).split(os.pathsep)
    assert kept == [str(site / "pyspark" / "python" / "lib" / "py4j-0.10.9.9-src.zip"), str(distribution), str(other)]
    # no pyspark package in the site dir: its archive is not that package's, and stays
    bare = tmp_path / "bare"
    (bare / "pyspark" / "python" / "lib").mkdir(parents=True)
    archive = str(bare / "pyspark" / "python" / "lib" / "pyspark.zip")
    assert without_installed_archive(archive, [str(bare)]) == archive


def test_the_worker_runs_sparks_python_processes_through_it_where_installed():
    launcher = spark_python()
    assert Path(launcher).name == SPARK_PYTHON and Path(launcher).parent == Path(sys.executable).parent


def test_a_process_it_starts_is_this_interpreter_with_the_installed_pyspark_same_pid_and_streams():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ARCHIVE), str(PY4J)))}
    code = ("import json, os, sys, pyspark; print(json.dumps({'pyspark': pyspark.__file__, 'pid': os.getpid(), "
            "'path': os.environ['PYTHONPATH'], 'argv': sys.argv[1:], 'stdin': sys.stdin.read()}))")
    child = subprocess.Popen([spark_python(), "-c", code, "an", "argument"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    out, _ = child.communicate("from the parent", timeout=60)
    seen = json.loads(out)
    assert Path(seen["pyspark"]) == INSTALLED / "__init__.py"  # not pyspark.zip/pyspark/__init__.py
    assert seen["path"] == str(PY4J) and seen["argv"] == ["an", "argument"] and seen["stdin"] == "from the parent"
    assert seen["pid"] == child.pid  # exec'd: Spark waits on, signals and reads the process it started
