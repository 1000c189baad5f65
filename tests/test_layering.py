"""The import layering of pyproject.toml's ``[tool.importlinter]`` contracts holds.

Runs ``lint-imports`` (import-linter) from the repository root, with the
built-in plugins' source directories on the path so that their imports are
checked too. Imports inside functions and under ``TYPE_CHECKING`` count.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIRS = sorted((ROOT / "plugins").glob("connectd-*"))


def test_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    assert lint_imports.exists(), "import-linter is missing: pip install -e '.[test]'"
    # This checkout first: the editable install may point at another one.
    path = [str(ROOT), *map(str, PLUGIN_DIRS), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    result = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # Every contract was read and checked, not silently skipped.
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert contracts
    for contract in contracts:
        assert f"{contract['name']} KEPT" in output, output
