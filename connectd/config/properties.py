"""Reading ``.properties`` files, keeping where each key was written.

The syntax is java.util.Properties' (``=``, ``:`` or white space between key
and value, ``#``/``!`` comments, ``\\`` line continuations, ``\\uXXXX``
escapes), parsed by the ``javaproperties`` library. What it does not give us
is the line a key stood on, which every error message needs, so we count the
lines of each element's source text as we go.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import javaproperties

from connectd.errors import ConfigError

__all__ = ["Origin", "PropertiesFile", "load_properties", "parse_properties"]


@dataclass(frozen=True)
class Origin:
    """Where a value came from: a file and line, or something else (REST, a default).

    ``str(origin)`` is the prefix of an error line: ``worker.properties:17``.
    """

    source: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.source}:{self.line}" if self.line is not None else self.source


class PropertiesFile(Mapping[str, str]):
    """The keys and values of one properties file, in file order, with origins.

    When a key is written twice the last value wins (as in Java) and its
    origin is the last line; :attr:`duplicates` lists the earlier ones so a
    checker can warn about them.
    """

    def __init__(
        self,
        source: str,
        values: dict[str, str],
        origins: dict[str, Origin],
        duplicates: list[tuple[str, Origin]] | None = None,
    ) -> None:
        self.source = source
        self._values = values
        self._origins = origins
        self.duplicates = duplicates or []

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def origin(self, key: str) -> Origin:
        """The file and line *key* was written on (the file alone if unknown)."""
        return self._origins.get(key, Origin(self.source))

    def __repr__(self) -> str:
        # Values may hold secrets; a repr lists keys only.
        return f"PropertiesFile({self.source!r}, keys={list(self._values)!r})"


def parse_properties(text: str, source: str = "<string>") -> PropertiesFile:
    """Parse properties *text*; *source* names it in origins and errors.

    :raises ConfigError: on a malformed ``\\uXXXX`` escape, naming the line.
    """
    values: dict[str, str] = {}
    origins: dict[str, Origin] = {}
    duplicates: list[tuple[str, Origin]] = []
    line = 1
    try:
        for element in javaproperties.parse(text):
            if isinstance(element, javaproperties.KeyValue):
                origin = Origin(source, line)
                if element.key in values:
                    duplicates.append((element.key, origins[element.key]))
                values[element.key] = element.value
                origins[element.key] = origin
            line += _count_lines(element.source)
    except javaproperties.InvalidUEscapeError as exc:
        # The failing element has not been counted yet: it starts at `line`.
        raise ConfigError(
            [f"{Origin(source, line)}: invalid unicode escape {exc.escape!r}: expected \\u and four hex digits"]
        ) from exc
    return PropertiesFile(source, values, origins, duplicates)


def load_properties(path: str | Path) -> PropertiesFile:
    """Read the properties file at *path*.

    Java reads ``.properties`` as ISO-8859-1; nearly every file written today
    is UTF-8, which is also what Kafka's tools accept since Java 9, so UTF-8 is
    tried first and Latin-1 is the fallback for old files.

    :raises ConfigError: if the file cannot be read or parsed.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror or exc}"]) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return parse_properties(text, str(path))


def _count_lines(source: str) -> int:
    # Universal newlines, as Java's LineReader: \n, \r\n and a lone \r each end a line.
    return len(io.StringIO(source, newline=None).readlines()) if source else 0
