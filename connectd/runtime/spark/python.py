"""``connectd-spark-python``: the interpreter Spark starts its Python processes with
(``spark.pyspark.python``), importing pyspark from its installed package.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on every Python process's
``PYTHONPATH``. With pip's pyspark that archive sits inside the installed package, beside the
same modules compiled at install; but Python never caches bytecode for a zip archive, so each
new process compiled pyspark's modules again: 1.4-1.9 s against 0.5 s on 2 cores. A source
task's query starts a planner process of its own, so that was most of a new source task's
first record on a running worker (BENCHMARKS.md, "Sources beside the Python peer"); every
Python daemon Spark starts paid it too.

This launcher takes that archive off ``PYTHONPATH`` when it is the installed package's own
(``<site dir>/pyspark/python/lib/pyspark.zip``, the package there), then ``exec``\\s this
interpreter with the same arguments: the same process id, standard streams and environment
otherwise. An archive from anywhere else (a Spark distribution's) stays where Spark put it.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main", "without_installed_archive"]


def without_installed_archive(python_path: str, site_dirs: list[str]) -> str:
    """*python_path* without an entry that is the pyspark archive of a pyspark package installed in
    one of *site_dirs*."""
    installed = {os.path.realpath(os.path.join(site, "pyspark", "python", "lib", "pyspark.zip"))
                 for site in site_dirs if os.path.isfile(os.path.join(site, "pyspark", "__init__.py"))}
    return os.pathsep.join(entry for entry in python_path.split(os.pathsep)
                           if os.path.realpath(entry) not in installed)


def main() -> None:
    python_path = os.environ.get("PYTHONPATH")
    if python_path:
        # sys.path's entries from elsewhere than PYTHONPATH: the interpreter's own, its site dirs among them
        given = {os.path.realpath(entry) for entry in python_path.split(os.pathsep) if entry}
        site_dirs = [entry for entry in sys.path if entry and os.path.realpath(entry) not in given]
        os.environ["PYTHONPATH"] = without_installed_archive(python_path, site_dirs)
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])


if __name__ == "__main__":
    main()
