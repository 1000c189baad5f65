"""docs/converters.md documents every converter, alias and setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectd.data import BUILTIN_CONVERTERS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "converters.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("cls, aliases", BUILTIN_CONVERTERS, ids=[cls.__name__ for cls, _ in BUILTIN_CONVERTERS])
def test_every_converter_alias_and_setting_is_documented(cls, aliases):
    for alias in aliases:
        assert f"`{alias}`" in DOC, f"{alias} is not in docs/converters.md"
    for key in cls.config_def:
        row = next((line for line in DOC.splitlines() if line.startswith(f"| `{key.name}` |")), None)
        assert row is not None, f"{cls.__name__}: {key.name} has no row in docs/converters.md"
        assert f"| {key.type.value} | {key.default_text()} |" in row, f"{key.name}: type or default differs from the code"
