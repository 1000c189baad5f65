"""Field paths (KIP-821): ``field.syntax.version`` V1 names a top-level field, V2 a nested one.

With V2, ``a.b.c`` walks into struct (or map) ``a``, then ``b``, to ``c``. A
field whose name holds dots is wrapped in backticks: ```a.b`.c`` is field
``c`` of field ``a.b``; a backtick inside backticks that is followed by a dot
is escaped with a backslash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectd.config.definitions import CaseInsensitiveValidString, ConfigKey, Importance, Type
from connectd.data import DataError, Field, Schema, Struct
from connectd.transforms.base import require_map_or_null, require_struct_or_null

__all__ = ["FieldPath", "syntax_version_key"]

V1, V2 = "V1", "V2"
_NESTED = "nested field access"


def syntax_version_key() -> ConfigKey:
    """The ``field.syntax.version`` setting of transforms that accept nested field paths."""
    return ConfigKey(
        "field.syntax.version",
        Type.STRING,
        "How field paths are read. With V1 a path names a field at the top level of the struct or map. "
        "With V2 a dotted path reaches nested fields (a.b is field b of field a), and backticks wrap a "
        "name that holds dots (`a.b`.c is field c of field a.b).",
        default=V1,
        importance=Importance.HIGH,
        validator=CaseInsensitiveValidString(V1, V2),
    )


class FieldPath:
    """A parsed field path.

    :param text: the path as configured.
    :param version: ``V1`` or ``V2`` (any case).
    :raises ValueError: ``expected …`` for a V2 path with an unclosed backtick.
    """

    __slots__ = ("text", "steps")

    def __init__(self, text: str, version: str = V1) -> None:
        self.text = text
        self.steps: tuple[str, ...] = (text,) if version.upper() == V1 else tuple(_parse_v2(text))

    def field_from(self, schema: Schema | None) -> Field | None:
        """The field the path names in struct *schema*, or ``None``.

        :raises DataError: when the path goes through a schema that is not a struct, as Kafka's does.
        """
        if schema is None or not self.steps:
            return None
        current = schema
        for step in self.steps[:-1]:
            field = current.field(step)
            if field is None:
                return None
            current = field.schema
        return current.field(self.steps[-1])

    def value_from(self, value: Struct | Mapping[str, Any] | None, replace_null_with_default: bool = True) -> Any:
        """The value at the path in a struct or map, or ``None`` when something on the way is missing or null.

        A struct is walked through structs only and a map through maps only.

        :raises DataError: when a value on the way is neither null nor of that kind, as Kafka's does.
        """
        if value is None:
            return None
        if not self.steps:  # Kafka fails here too: an empty V2 path names nothing
            raise DataError(f"Unknown field: {self.text}")
        if isinstance(value, Struct):
            current: Any = value
            for step in self.steps[:-1]:
                if current.schema.field(step) is None:
                    return None
                current = require_struct_or_null(current.get(step), _NESTED)
                if current is None:
                    return None
            last = self.steps[-1]
            if current.schema.field(last) is None:
                return None
            return current.get(last) if replace_null_with_default else current.get_without_default(last)
        current = value
        for step in self.steps[:-1]:
            current = require_map_or_null(current.get(step), _NESTED)
            if current is None:
                return None
        return current.get(self.steps[-1])

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"FieldPath({self.text!r}, steps={list(self.steps)!r})"


def _parse_v2(path: str) -> list[str]:
    if not path:
        return []
    steps: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path[i] != "`":
            dot = path.find(".", i)
            if dot < 0:
                steps.append(path[i:])
                break
            steps.append(path[i:dot])
            i = dot + 1
            continue
        opened = i
        i += 1
        start = i
        name: list[str] = []
        while True:
            i = path.find("`", i)
            if i < 0:
                raise ValueError(_unclosed(path, opened))
            escaped = path[i - 1] == "\\"
            if i >= n - 1:  # the closing backtick ends the path
                if escaped:
                    raise ValueError(_unclosed(path, opened))
                name.append(path[start:i])
                steps.append("".join(name))
                i += 1
                break
            if path[i + 1] != ".":  # part of the name; keep looking
                i += 1
                continue
            if escaped:
                name.append(path[start : i - 1] + "`")
                i += 1
                start = i
                continue
            name.append(path[start:i])
            steps.append("".join(name))
            i += 2
            break
    if path.endswith("."):
        steps.append("")
    return steps


def _unclosed(path: str, position: int) -> str:
    return (
        f"expected backticks in pairs, but the one at position {position} of {path!r} is not closed "
        "(put a backslash before it to make it part of the name)"
    )
