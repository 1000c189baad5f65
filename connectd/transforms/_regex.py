"""Java regular expressions and ``Matcher`` replacement strings, in Python's :mod:`re`.

Kafka Connect's settings hold ``java.util.regex`` patterns. Python's syntax is
nearly the same; the differences users actually write are translated:
named groups ``(?<name>…)`` and back-references ``\\k<name>``, quoting
``\\Q…\\E``, and the end anchors ``\\z`` / ``\\Z``. Replacement strings use
Java's ``$1`` / ``${name}`` group references and ``\\`` escapes, not Python's
``\\1``.
"""

from __future__ import annotations

import re
from typing import Any

from connectd.config.definitions import Validator

__all__ = ["JavaRegex", "JavaReplacement", "compile_java", "translate"]

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def translate(pattern: str) -> str:
    """*pattern* (Java syntax) in Python's syntax."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        char = pattern[i]
        if char == "\\" and i + 1 < n:
            escaped = pattern[i + 1]
            if escaped == "Q":
                end = pattern.find("\\E", i + 2)
                literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            if not in_class and escaped == "k" and pattern.startswith("<", i + 2):
                close = pattern.find(">", i + 3)
                if close > 0:
                    out.append(f"(?P={pattern[i + 3 : close]})")
                    i = close + 1
                    continue
            if not in_class and escaped == "z":
                out.append(r"\Z")
            elif not in_class and escaped == "Z":
                out.append(r"(?=\n?\Z)")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
            out.append(char)
            i += 1
            continue
        if char == "[":
            in_class = True
            out.append(char)
            # A ']' right after '[' or '[^' is a literal, not the end of the class.
            if pattern.startswith("^", i + 1):
                out.append("^")
                i += 1
            if pattern.startswith("]", i + 1):
                out.append(r"\]")
                i += 1
            i += 1
            continue
        if pattern.startswith("(?<", i) and i + 3 < n and pattern[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        out.append(char)
        i += 1
    return "".join(out)


def compile_java(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """Compile a Java regular expression.

    :raises ValueError: ``expected a valid regular expression (…)`` when it is not one.
    """
    try:
        return re.compile(translate(pattern), flags)
    except re.error as exc:
        raise ValueError(f"expected a valid regular expression ({exc})") from None


class JavaReplacement:
    """A replacement string as ``java.util.regex.Matcher`` reads it: ``$1``, ``${name}``, ``\\$``.

    Call it with a match to get the replacement text (so it can be given to
    :meth:`re.Pattern.sub`). A group that took no part in the match adds nothing.

    :param template: the replacement string.
    :param pattern: the compiled pattern the references must exist in.
    :raises ValueError: ``expected …`` when a reference is malformed or names a group the pattern lacks.
    """

    __slots__ = ("_parts", "template")

    def __init__(self, template: str, pattern: re.Pattern[str]) -> None:
        self.template = template
        parts: list[str | int] = []
        literal: list[str] = []
        i, n = 0, len(template)
        groups = pattern.groups
        while i < n:
            char = template[i]
            if char == "\\":
                if i + 1 >= n:
                    raise ValueError("expected a character after the final '\\' (write '\\\\' for a backslash)")
                literal.append(template[i + 1])
                i += 2
                continue
            if char != "$":
                literal.append(char)
                i += 1
                continue
            if i + 1 >= n:
                raise ValueError("expected a group number or ${name} after the final '$' (write '\\$' for a dollar sign)")
            if template[i + 1] == "{":
                close = template.find("}", i + 2)
                name = template[i + 2 : close] if close > 0 else ""
                if close < 0 or not _NAME.fullmatch(name):
                    raise ValueError(f"expected a group name like ${{name}} at position {i}")
                if name not in pattern.groupindex:
                    raise ValueError(f"expected a group the regex defines, but it has no group named {name!r}")
                reference: int = pattern.groupindex[name]
                i = close + 1
            else:
                if not template[i + 1].isdigit() or not template[i + 1].isascii():
                    raise ValueError(f"expected a group number or ${{name}} after '$' at position {i} (write '\\$' for a dollar sign)")
                reference = int(template[i + 1])
                i += 2
                # Java reads further digits only while the number stays a valid group.
                while i < n and template[i].isascii() and template[i].isdigit():
                    longer = reference * 10 + int(template[i])
                    if longer > groups:
                        break
                    reference = longer
                    i += 1
                if reference > groups:
                    raise ValueError(f"expected a group the regex defines, but it has no group {reference} (it has {groups})")
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(reference)
        if literal:
            parts.append("".join(literal))
        self._parts = tuple(parts)

    def __call__(self, match: re.Match[str]) -> str:
        out = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
            else:
                text = match.group(part)
                if text is not None:
                    out.append(text)
        return "".join(out)

    def __repr__(self) -> str:
        return f"JavaReplacement({self.template!r})"


class JavaRegex(Validator):
    """A valid Java regular expression (as Python's :mod:`re` reads it after :func:`translate`)."""

    def __call__(self, value: Any) -> None:
        if value is not None:
            compile_java(value)

    def describe(self) -> str:
        return "valid regex"
