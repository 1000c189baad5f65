"""What the processes around a running source task import: Spark starts several Python processes per
task (its planner, the workers reading batches) and the task has its own, so each stays as small as
its job allows (issue 15's memory target: four source tasks' whole process tree).

Each check runs in a fresh interpreter: this one has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def modules_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running *statement*."""
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def loaded(modules: set[str], *packages: str) -> list[str]:
    return sorted(p for p in packages if any(m == p or m.startswith(f"{p}.") for m in modules))


def test_import_connectd_loads_none_of_its_modules_and_every_public_name_resolves() -> None:
    assert loaded(modules_after("import connectd"), "connectd.connector", "connectd.data", "connectd.config",
                  "connectd.transforms", "structlog") == []
    import connectd

    for name in connectd.__all__:
        value = getattr(connectd, name)
        if name != "__version__":
            assert value is getattr(sys.modules[connectd._EXPORTS[name]], name), name
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        connectd.NoSuchThing  # noqa: B018 - the attribute access is the test
    assert connectd.errors is sys.modules["connectd.errors"]  # a submodule, as before names loaded lazily


def test_what_spark_imports_to_plan_and_read_a_source_tasks_batches_holds_no_client_logging_or_plugin_api() -> None:
    modules = modules_after("import connectd.runtime.source.executor")
    assert loaded(modules, "structlog", "confluent_kafka", "aiokafka", "pyarrow", "connectd.connector",
                  "connectd.data", "connectd.logging", "connectd.runtime.source.runner") == []


def test_a_source_tasks_own_process_imports_no_spark_and_no_control_plane_client() -> None:
    modules = modules_after("import connectd.runtime.source.host")
    assert loaded(modules, "pyspark", "aiokafka", "pyarrow") == []
    assert "connectd.runtime.source.runner" in modules  # the task's machinery is there
