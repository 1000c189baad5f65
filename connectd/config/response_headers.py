"""``response.http.headers.config``: its syntax, parsed.

The syntax is Jetty's ``HeaderFilter``, which Kafka Connect uses:
comma-separated entries ``[action] [header name]:[header value]``, an entry
in double quotes when its value holds a comma. The actions:

- ``set``: the header has this value, replacing any other;
- ``add``: this value is added to the header's others;
- ``setDate`` / ``addDate``: the value is a number of milliseconds from now,
  sent as an HTTP date (``Expires``-style).

The worker config's validator and the REST server's middleware
(:mod:`connectd.rest.headers`) both parse it with :func:`parse_header_config`,
which is why it lives here rather than in ``connectd.rest``: config must not
import the REST layer.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from dataclasses import dataclass
from email.utils import formatdate

__all__ = ["KEY", "HeaderAction", "parse_header_config"]

KEY = "response.http.headers.config"

_ACTIONS = {"set": "set", "add": "add", "setdate": "setDate", "adddate": "addDate"}
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110's token: what a header name may hold
_MILLIS = re.compile(r"[+-]?\d+")
_EXPECTED = ("expected comma-separated [action] [header name]:[header value] entries, "
             "the action one of set, add, setDate, addDate")


@dataclass(frozen=True)
class HeaderAction:
    """One entry of ``response.http.headers.config``.

    :param action: ``set``, ``add``, ``setDate`` or ``addDate``.
    :param name: the header's name.
    :param value: the header's value; for the date actions, milliseconds from now.
    """

    action: str
    name: str
    value: str

    def apply(self, headers: MutableMapping[str, str], now: float) -> None:
        """Set or add the header on *headers* (a multidict), dates counted from *now* (seconds)."""
        value = self.value
        if self.action.endswith("Date"):
            value = formatdate(now + int(value) / 1000, usegmt=True)
        if self.action.startswith("add"):
            headers.add(self.name, value)  # type: ignore[attr-defined]
        else:
            headers[self.name] = value


def parse_header_config(text: str) -> list[HeaderAction]:
    """The entries of a ``response.http.headers.config`` value; empty entries are skipped.

    :raises ValueError: naming the first malformed entry.
    """
    actions = []
    for entry in _split_entries(text):
        if not entry:
            continue
        parts = entry.split(None, 1)
        action = _ACTIONS.get(parts[0].lower())
        if action is None or len(parts) < 2:
            reason = f"unknown action {parts[0]!r}" if action is None else "no header after the action"
            raise ValueError(f"{_EXPECTED}: {entry!r} has {reason}")
        name, colon, value = parts[1].partition(":")
        name, value = name.strip(), value.strip()
        if not colon:
            raise ValueError(f"{_EXPECTED}: {entry!r} has no ':' between the header name and its value")
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"{_EXPECTED}: {entry!r} has an invalid header name {name!r}")
        if action.endswith("Date") and not _MILLIS.fullmatch(value):
            raise ValueError(f"{_EXPECTED}: {entry!r}: {action} takes a number of milliseconds from now, "
                             f"not {value!r}")
        if "\r" in value or "\n" in value:
            raise ValueError(f"{_EXPECTED}: {entry!r} has a line break in its value")
        actions.append(HeaderAction(action, name, value))
    return actions


def _split_entries(text: str) -> list[str]:
    # Jetty's StringUtil.csvSplit: commas separate entries, except inside
    # double quotes, where a backslash escapes the next character.
    entries: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            entries.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if quoted:
        raise ValueError(f"{_EXPECTED}: a double quote is not closed")
    entries.append("".join(current).strip())
    return entries
