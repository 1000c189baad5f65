"""Record headers: an ordered, multi-valued list of ``Header(key, schema, value)``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from connectd.data.schema import Schema, StructBase, validate_value
from connectd.errors import DataError

__all__ = ["Header", "Headers"]


class Header(NamedTuple):
    """One header; unpacks as ``key, schema, value``."""

    key: str
    schema: Schema | None
    value: Any

    def with_value(self, schema: Schema | None, value: Any) -> Header:
        """The same key with another schema and value (Kafka's ``Header.with``)."""
        return Header(self.key, schema, value)

    def rename(self, key: str) -> Header:
        return Header(key, self.schema, self.value)


class Headers:
    """A record's headers, in order; a key may appear more than once (Kafka's ``ConnectHeaders``).

    ::

        headers = Headers().add("trace", "abc", Schema.STRING).add("retries", 3, Schema.INT32)
        headers.last_with_name("trace").value      # "abc"
        for key, schema, value in headers: ...

    :param headers: initial headers, as :class:`Header` or ``(key, schema, value)`` tuples.
    """

    __slots__ = ("_items",)

    # _items is the shared empty tuple until a header is added: most records have no
    # headers, and a list per record (and per copy a transform makes) is garbage-collector work.

    def __init__(self, headers: Iterable[Header | tuple[str, Schema | None, Any]] | None = None) -> None:
        self._items: list[Header] | tuple[()] = ()
        if headers:
            for header in headers:
                key, schema, value = header
                self.add(key, value, schema)

    def add(self, key: str, value: Any, schema: Schema | None = None) -> Headers:
        """Append a header; returns ``self``.

        As in Kafka, a struct added without a schema gets its own schema, and ``None``
        needs an optional schema (a default does not stand in for it).

        :raises DataError: if *key* is not a string or *value* does not fit *schema*.
        """
        # The check is inline: a source adds headers to every record it makes (datagen three).
        if not isinstance(key, str):
            raise DataError(f"header key must be a string, got {key!r}")
        if schema is not None:
            if value is None and not schema.optional:
                raise DataError(f"{key}: a null value requires an optional schema but was {schema!r}")
            try:
                validate_value(schema, value)
            except DataError as exc:
                raise exc.at(key) from None
        elif isinstance(value, StructBase):
            schema = value.schema
        items = self._items
        if items.__class__ is not list:
            items = self._items = list(items)
        items.append(Header(key, schema, value))
        return self

    def add_header(self, header: Header) -> Headers:
        return self.add(header.key, header.value, header.schema)

    def last_with_name(self, key: str) -> Header | None:
        """The last header called *key*, or ``None``."""
        for header in reversed(self._items):
            if header.key == key:
                return header
        return None

    def all_with_name(self, key: str) -> list[Header]:
        """Every header called *key*, in order."""
        return [header for header in self._items if header.key == key]

    def remove(self, key: str) -> Headers:
        """Drop every header called *key*; returns ``self``."""
        self._items = [header for header in self._items if header.key != key]
        return self

    def retain_latest(self, key: str | None = None) -> Headers:
        """Keep only the last header of *key* (of every key when ``None``); returns ``self``."""
        if key is not None:
            last = self.last_with_name(key)
            self._items = [h for h in self._items if h.key != key or h is last]
            return self
        seen: set[str] = set()
        kept: list[Header] = []
        for header in reversed(self._items):
            if header.key not in seen:
                seen.add(header.key)
                kept.append(header)
        kept.reverse()
        self._items = kept
        return self

    def apply(self, transform: Callable[[Header], Header | None], key: str | None = None) -> Headers:
        """Replace each header (each called *key*, when given) by ``transform(header)``; returns ``self``.

        Kafka's ``apply(HeaderTransform)`` and ``apply(String key, HeaderTransform)``. The transform
        returns a :class:`Header` (``header.with_value(...)``, ``header.rename(...)``) to put in the
        header's place, or ``None`` to remove it; order is kept. Each result is checked as
        :meth:`add` checks a header, and the headers change only if every call succeeds::

            headers.apply(lambda h: h.rename(h.key.lower()))
            headers.apply(lambda h: None if h.value is None else h, key="trace")

        :raises DataError: if *key* is not a string, or a result is not a header that fits its schema.
        """
        if isinstance(transform, str):
            raise TypeError("Headers.apply takes the transform first: apply(transform, key) (Kafka's order is reversed)")
        if key is not None and not isinstance(key, str):
            raise DataError(f"header key must be a string, got {key!r}")
        if not self._items:
            return self
        updated: list[Header] = []
        for header in self._items:
            if key is not None and header.key != key:
                updated.append(header)
                continue
            result = transform(header)
            if result is None:
                continue
            if result is not header:
                if not isinstance(result, tuple) or len(result) != 3:
                    raise DataError(f"a header transform must return a Header or None, got {result!r}")
                result = Headers().add(result[0], result[2], result[1])._items[0]  # checked as add checks
            updated.append(result)
        self._items = updated
        return self

    def clear(self) -> Headers:
        self._items = ()
        return self

    def copy(self) -> Headers:
        """An independent copy (headers themselves are immutable)."""
        duplicate = Headers.__new__(Headers)
        duplicate._items = list(self._items) if self._items else ()
        return duplicate

    duplicate = copy  # Kafka's name

    def __iter__(self) -> Iterator[Header]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Headers):
            return NotImplemented
        mine, theirs = self._items, other._items
        if mine.__class__ is not theirs.__class__:
            return list(mine) == list(theirs)
        return mine == theirs

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return "Headers(" + ", ".join(f"{h.key}={h.value!r}" for h in self._items) + ")"
