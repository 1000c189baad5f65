"""Kafka Connect's ``Struct``: a record-like value checked against a struct :class:`Schema`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from connectd.data._text import java_string
from connectd.data.schema import Field, Schema, SchemaType, StructBase, _values_checker, validate_value
from connectd.errors import DataError

__all__ = ["Struct"]

_STRUCT = SchemaType.STRUCT
_new = object.__new__


class Struct(StructBase):
    """A value for a struct schema; fields are set with :meth:`put` and read with :meth:`get`.

    ::

        person = Struct(schema).put("name", "Ada").put("age", 36)
        person = Struct(schema, {"name": "Ada", "age": 36})   # the same
        person["name"]                                       # "Ada"

    Every :meth:`put` checks the value against the field's schema, as Kafka
    does; :meth:`validate` checks that every required field is set.
    Two structs are equal when their schemas and values are.

    :param schema: a struct schema.
    :param values: optional field name → value to :meth:`put` straight away.
    :raises DataError: if *schema* is not a struct schema or a value does not fit.
    """

    __slots__ = ("schema", "_values")

    # _values is a list, or a tuple in structs made whole from checked values
    # (from_field_values, JsonConverter): the garbage collector stops tracking a tuple
    # of plain values, and records are made by the thousand. put() turns it into a list.

    def __init__(self, schema: Schema, values: Mapping[str, Any] | None = None) -> None:
        if not isinstance(schema, Schema) or schema.type is not _STRUCT:
            raise DataError(f"Not a struct schema: {schema!r}")
        self.schema = schema
        self._values: list[Any] | tuple[Any, ...] = [None] * len(schema._fields)
        if values:
            for name, value in values.items():
                self.put(name, value)

    @classmethod
    def from_field_values(cls, schema: Schema, values: Sequence[Any]) -> Struct:
        """A struct holding *values*, one per field in field order, each checked as :meth:`put` checks it.

        The same as putting the values one by one, only faster: transforms
        that copy fields from one struct into another use it.

        :param schema: a struct schema.
        :param values: the field values (copied).
        :raises DataError: if *schema* is not a struct schema, the count is wrong, or a
            value does not fit (named as :meth:`put` names it).
        """
        if isinstance(schema, Schema) and schema.type is _STRUCT:
            check = schema._values_check or _values_checker(schema)
            if check(values):
                struct = _new(cls)
                struct.schema = schema
                struct._values = tuple(values)
                return struct
        struct = cls(schema)
        if len(values) != len(schema._fields):
            raise DataError(f"expected {len(schema._fields)} field values, got {len(values)}")
        for field, value in zip(schema._fields, values):
            struct.put(field, value)
        return struct

    def field_values(self, *, defaults: bool = True) -> list[Any]:
        """Every field's value in field order (a new list), as :meth:`get` gives them.

        :param defaults: put the field schema's default in place of ``None``, as
            :meth:`get` does; with ``False``, values are as set (:meth:`get_without_default`).
        """
        values = list(self._values)
        if defaults:
            for index, default in self.schema._field_defaults:
                if values[index] is None:
                    values[index] = default
        return values

    @classmethod
    def _unchecked(cls, schema: Schema, values: list[Any] | tuple[Any, ...]) -> Struct:
        # For converters that produced the values from a schema already. A tuple of values is trusted
        # from then on (validate() and a parent's check pass it): give one only when every value was checked.
        struct = cls.__new__(cls)
        struct.schema = schema
        struct._values = values
        return struct

    def _lookup(self, field: str | Field) -> Field:
        if isinstance(field, Field):
            fields = self.schema._fields
            if field.index < len(fields) and (fields[field.index] is field or fields[field.index] == field):
                return field
            raise DataError(f"{field.name} is not a field of this struct's schema")
        found = self.schema._fields_by_name.get(field)
        if found is None:
            raise DataError(f"{field} is not a valid field name")
        return found

    def put(self, field: str | Field, value: Any) -> Struct:
        """Set a field (by name or :class:`Field`); returns ``self`` so calls chain.

        :raises DataError: for an unknown field or a value that does not fit, including
            ``None`` for a required field without a default (Kafka rejects ``None`` even
            when there is a default; connectd accepts it, as :meth:`validate` does).
        """
        found = self._lookup(field)
        try:
            validate_value(found.schema, value)
        except DataError as exc:
            raise exc.at(found.name) from None
        values = self._values
        if values.__class__ is not list:
            values = self._values = list(values)
        values[found.index] = value
        return self

    def get(self, field: str | Field) -> Any:
        """A field's value, or the field schema's default when the value is ``None``."""
        found = self._lookup(field)
        value = self._values[found.index]
        return found.schema.default_value if value is None else value

    def get_without_default(self, field: str | Field) -> Any:
        """A field's value as set, ``None`` if unset even when there is a default."""
        return self._values[self._lookup(field).index]

    __getitem__ = get
    __setitem__ = put

    def validate(self) -> None:
        """Check every field: required fields must be set (or have a default).

        :raises DataError: naming the first bad field, e.g. ``address.zip: null used for required field``.
        """
        values = self._values
        check = self.schema._values_check or _values_checker(self.schema)
        # Made whole from checked values (from_field_values, _unchecked), with no list or dict inside to change since.
        if values.__class__ is tuple and getattr(check, "trusts_whole", False):
            return
        if check(values):
            return
        for field, value in zip(self.schema._fields, self._values):
            try:
                validate_value(field.schema, value)
            except DataError as exc:
                raise exc.at(field.name) from None

    def to_dict(self) -> dict[str, Any]:
        """Field name → value (defaults applied); nested structs stay structs."""
        return {field.name: self.get(field) for field in self.schema._fields}

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Struct):
            return NotImplemented
        mine, theirs = self._values, other._values
        if mine.__class__ is not theirs.__class__:
            mine, theirs = list(mine), list(theirs)
        return self.schema == other.schema and mine == theirs

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return java_string(self)
