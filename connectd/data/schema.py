"""Kafka Connect's schemas: immutable :class:`Schema` and :class:`Field` (built with
:class:`~connectd.data.schema_builder.SchemaBuilder`).

The type system is Connect's: ``int8`` … ``int64``, ``float32``, ``float64``,
``boolean``, ``string``, ``bytes``, ``array``, ``map`` and ``struct``, each
optional or required, with an optional default, name, version, doc and
string parameters. Logical types (Decimal, Date, Time, Timestamp) are named
schemas over those; see :mod:`connectd.data.logical`.

Python values for each type:

=========== ==========================================================
int8…int64  ``int`` (not ``bool``), within the type's range
float32/64  ``float``
boolean     ``bool``
string      ``str``
bytes       ``bytes`` or ``bytearray``
array       ``list`` or ``tuple``
map         ``dict`` (any mapping); keys must be hashable
struct      :class:`~connectd.data.struct.Struct` with an equal schema
Decimal     ``decimal.Decimal`` (finite)
Date        ``datetime.date``
Time        ``datetime.time``
Timestamp   ``datetime.datetime`` (naive means UTC)
=========== ==========================================================
"""

from __future__ import annotations

import datetime
import decimal
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

from connectd.errors import DataError

__all__ = [
    "Field",
    "Schema",
    "SchemaAndValue",
    "SchemaType",
]

DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"
DATE_NAME = "org.apache.kafka.connect.data.Date"
TIME_NAME = "org.apache.kafka.connect.data.Time"
TIMESTAMP_NAME = "org.apache.kafka.connect.data.Timestamp"


class SchemaType(enum.Enum):
    """Connect's ``Schema.Type``; the value is Kafka's lower-case name."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        return self not in (SchemaType.ARRAY, SchemaType.MAP, SchemaType.STRUCT)

    def __repr__(self) -> str:
        return f"SchemaType.{self.name}"

    # Members are singletons compared by identity; Enum's own __hash__ (hash of the
    # name, in Python) made every dict keyed by a type several times slower.
    __hash__ = object.__hash__


_ARRAY, _MAP, _STRUCT = SchemaType.ARRAY, SchemaType.MAP, SchemaType.STRUCT

INT_RANGES = {
    SchemaType.INT8: (-(2**7), 2**7 - 1),
    SchemaType.INT16: (-(2**15), 2**15 - 1),
    SchemaType.INT32: (-(2**31), 2**31 - 1),
    SchemaType.INT64: (-(2**63), 2**63 - 1),
}


class StructBase:
    """Marker base of :class:`~connectd.data.struct.Struct`, so schemas can check values without a cycle."""

    __slots__ = ()
    schema: Schema
    _values: list[Any] | tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Field:
    """A struct field: its name, position and schema."""

    name: str
    index: int
    schema: Schema


class SchemaAndValue(NamedTuple):
    """A value with its schema (either may be ``None``); unpacks as ``schema, value``."""

    schema: Schema | None
    value: Any


#: ``SchemaAndValue(None, None)``, Kafka's ``SchemaAndValue.NULL``.
SchemaAndValue.NULL = SchemaAndValue(None, None)  # type: ignore[misc]


class Schema:
    """An immutable Connect schema. Build one with :class:`SchemaBuilder` or use the constants.

    Constants: ``Schema.INT8`` … ``Schema.BYTES`` and ``Schema.OPTIONAL_INT8`` …
    ``Schema.OPTIONAL_BYTES`` (Kafka's ``INT8_SCHEMA``, ``OPTIONAL_STRING_SCHEMA``, …).

    Equality is structural, as in Kafka; the hash is computed once.

    :param type: the :class:`SchemaType`.
    :param optional: whether ``None`` is a valid value.
    :param default_value: used when the value is ``None``; validated against the schema.
    :param name: e.g. ``com.example.Customer`` or a logical type's name.
    :param version: an integer version.
    :param doc: documentation.
    :param parameters: string → string metadata (Decimal's ``scale`` lives here).
    :param fields: the fields of a struct, in order.
    :param key_schema: a map's key schema.
    :param value_schema: an array's element schema or a map's value schema.
    :raises DataError: when the parts do not fit the type or the default is invalid.
    """

    __slots__ = (
        "type",
        "optional",
        "default_value",
        "name",
        "version",
        "doc",
        "parameters",
        "_fields",
        "_fields_by_name",
        "_key_schema",
        "_value_schema",
        "_hash",
        "_field_defaults",
        "_values_check",
    )

    Type: ClassVar[type[SchemaType]] = SchemaType

    INT8: ClassVar[Schema]
    INT16: ClassVar[Schema]
    INT32: ClassVar[Schema]
    INT64: ClassVar[Schema]
    FLOAT32: ClassVar[Schema]
    FLOAT64: ClassVar[Schema]
    BOOLEAN: ClassVar[Schema]
    STRING: ClassVar[Schema]
    BYTES: ClassVar[Schema]
    OPTIONAL_INT8: ClassVar[Schema]
    OPTIONAL_INT16: ClassVar[Schema]
    OPTIONAL_INT32: ClassVar[Schema]
    OPTIONAL_INT64: ClassVar[Schema]
    OPTIONAL_FLOAT32: ClassVar[Schema]
    OPTIONAL_FLOAT64: ClassVar[Schema]
    OPTIONAL_BOOLEAN: ClassVar[Schema]
    OPTIONAL_STRING: ClassVar[Schema]
    OPTIONAL_BYTES: ClassVar[Schema]

    type: SchemaType
    optional: bool
    default_value: Any
    name: str | None
    version: int | None
    doc: str | None
    parameters: Mapping[str, str] | None

    def __init__(
        self,
        type: SchemaType,
        *,
        optional: bool = False,
        default_value: Any = None,
        name: str | None = None,
        version: int | None = None,
        doc: str | None = None,
        parameters: Mapping[str, str] | None = None,
        fields: Iterable[Field] | None = None,
        key_schema: Schema | None = None,
        value_schema: Schema | None = None,
    ) -> None:
        if not isinstance(type, SchemaType):
            raise DataError(f"schema type must be a SchemaType, got {type!r}")
        init = object.__setattr__
        init(self, "type", type)
        init(self, "optional", bool(optional))
        init(self, "name", name)
        init(self, "version", version)
        init(self, "doc", doc)
        init(self, "parameters", MappingProxyType(dict(parameters)) if parameters is not None else None)
        field_tuple: tuple[Field, ...] = ()
        by_name: dict[str, Field] = {}
        if type is _STRUCT:
            field_tuple = tuple(fields or ())
            for position, field in enumerate(field_tuple):
                if not isinstance(field, Field) or field.index != position:
                    raise DataError(f"struct field {position} must be a Field with index {position}, got {field!r}")
                if field.name in by_name:
                    raise DataError(f"Cannot create field because of field name duplication {field.name}")
                by_name[field.name] = field
        elif fields:
            raise DataError(f"only struct schemas have fields, not {type.value}")
        if type is _MAP:
            if not isinstance(key_schema, Schema) or not isinstance(value_schema, Schema):
                raise DataError("a map schema needs a key schema and a value schema")
        elif key_schema is not None:
            raise DataError(f"only map schemas have a key schema, not {type.value}")
        if type is _ARRAY:
            if not isinstance(value_schema, Schema):
                raise DataError("an array schema needs a value schema")
        elif type is not _MAP and value_schema is not None:
            raise DataError(f"only array and map schemas have a value schema, not {type.value}")
        init(self, "_fields", field_tuple)
        init(self, "_fields_by_name", by_name)
        # (index, default) of the fields whose schema has a default: what Struct.get substitutes for None.
        init(
            self,
            "_field_defaults",
            tuple((f.index, f.schema.default_value) for f in field_tuple if f.schema.default_value is not None),
        )
        init(self, "_values_check", None)  # see _values_checker
        init(self, "_key_schema", key_schema)
        init(self, "_value_schema", value_schema)
        init(self, "default_value", None)
        init(
            self,
            "_hash",
            hash(
                (
                    type,
                    self.optional,
                    name,
                    version,
                    doc,
                    frozenset(self.parameters.items()) if self.parameters is not None else None,
                    tuple((f.name, f.schema._hash) for f in field_tuple),
                    key_schema._hash if key_schema is not None else None,
                    value_schema._hash if value_schema is not None else None,
                )
            ),
        )
        if default_value is not None:
            try:
                validate_value(self, default_value)
            except DataError as exc:
                raise DataError(f"Invalid default value: {exc}") from None
            init(self, "default_value", default_value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Schema is immutable; use SchemaBuilder.from_schema(...) to derive another")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Schema is immutable")

    def __reduce__(self):
        return (
            _rebuild_schema,
            (
                self.type,
                self.optional,
                self.default_value,
                self.name,
                self.version,
                self.doc,
                dict(self.parameters) if self.parameters is not None else None,
                self._fields,
                self._key_schema,
                self._value_schema,
            ),
        )

    # -- structure -----------------------------------------------------------

    @property
    def fields(self) -> tuple[Field, ...]:
        """A struct's fields in order. :raises DataError: for other types."""
        if self.type is not _STRUCT:
            raise DataError("Cannot list fields on non-struct type")
        return self._fields

    def field(self, name: str) -> Field | None:
        """The struct field called *name*, or ``None``. :raises DataError: for other types."""
        if self.type is not _STRUCT:
            raise DataError("Cannot look up fields on non-struct type")
        return self._fields_by_name.get(name)

    @property
    def key_schema(self) -> Schema:
        """A map's key schema. :raises DataError: for other types."""
        if self.type is not _MAP:
            raise DataError("Cannot look up key schema on non-map type")
        return self._key_schema  # type: ignore[return-value]

    @property
    def value_schema(self) -> Schema:
        """An array's element schema or a map's value schema. :raises DataError: for other types."""
        if self._value_schema is None:
            raise DataError("Cannot look up value schema on non-array and non-map type")
        return self._value_schema

    def validate_value(self, value: Any) -> None:
        """Check that *value* fits this schema. :raises DataError: naming where it does not."""
        validate_value(self, value)

    # -- comparison ------------------------------------------------------------

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Schema):
            return NotImplemented
        return (
            self._hash == other._hash
            and self.type is other.type
            and self.optional == other.optional
            and self.name == other.name
            and self.version == other.version
            and self.doc == other.doc
            and self.parameters == other.parameters
            and self._fields == other._fields
            and self._key_schema == other._key_schema
            and self._value_schema == other._value_schema
            and _same_default(self.default_value, other.default_value)
        )

    def __repr__(self) -> str:
        parts = [self.type.value]
        if self.optional:
            parts.append("optional")
        if self.name is not None:
            parts.append(f"name={self.name!r}")
        if self.version is not None:
            parts.append(f"version={self.version}")
        if self.parameters:
            parts.append(f"parameters={dict(self.parameters)!r}")
        if self.default_value is not None:
            parts.append(f"default={self.default_value!r}")
        if self.type is _STRUCT:
            parts.append("fields=[" + ", ".join(f"{f.name}: {f.schema!r}" for f in self._fields) + "]")
        elif self.type is _MAP:
            parts.append(f"keys={self._key_schema!r}, values={self._value_schema!r}")
        elif self.type is _ARRAY:
            parts.append(f"items={self._value_schema!r}")
        return "Schema(" + ", ".join(parts) + ")"


def _same_default(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if a is None or b is None or type(a) is not type(b):
        return False
    return bool(a == b)


def _rebuild_schema(type_, optional, default, name, version, doc, parameters, fields, key, value) -> Schema:
    return Schema(
        type_,
        optional=optional,
        default_value=default,
        name=name,
        version=version,
        doc=doc,
        parameters=parameters,
        fields=fields,
        key_schema=key,
        value_schema=value,
    )


for _type in SchemaType:
    if _type.is_primitive:
        setattr(Schema, _type.name, Schema(_type))
        setattr(Schema, "OPTIONAL_" + _type.name, Schema(_type, optional=True))
del _type


# --- validation ---------------------------------------------------------------


_TYPE_WORDS = {
    SchemaType.INT8: "int",
    SchemaType.INT16: "int",
    SchemaType.INT32: "int",
    SchemaType.INT64: "int",
    SchemaType.FLOAT32: "float",
    SchemaType.FLOAT64: "float",
    SchemaType.BOOLEAN: "bool",
    SchemaType.STRING: "str",
    SchemaType.BYTES: "bytes",
    SchemaType.ARRAY: "list",
    SchemaType.MAP: "dict",
    SchemaType.STRUCT: "Struct",
}


def _mismatch(schema: Schema, value: Any, expected: str | None = None) -> DataError:
    what = expected or _TYPE_WORDS[schema.type]
    kind = f'schema "{schema.name}" with type {schema.type.value}' if schema.name else f"schema type {schema.type.value}"
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return DataError(f"expected {what} for {kind}, got {type(value).__name__} {shown}")


def _check_int(schema: Schema, value: Any) -> None:
    if value.__class__ is bool or not isinstance(value, int):
        raise _mismatch(schema, value)
    low, high = INT_RANGES[schema.type]
    if not low <= value <= high:
        raise DataError(f"{value} is out of range for {schema.type.value} ({low} to {high})")


def _check_float(schema: Schema, value: Any) -> None:
    if not isinstance(value, float):
        raise _mismatch(schema, value)


def _check_bool(schema: Schema, value: Any) -> None:
    if value is not True and value is not False:
        raise _mismatch(schema, value)


def _check_str(schema: Schema, value: Any) -> None:
    if not isinstance(value, str):
        raise _mismatch(schema, value)


def _check_bytes(schema: Schema, value: Any) -> None:
    if not isinstance(value, (bytes, bytearray)):
        raise _mismatch(schema, value)


def _check_array(schema: Schema, value: Any) -> None:
    if not isinstance(value, (list, tuple)):
        raise _mismatch(schema, value)
    element = schema._value_schema
    for index, item in enumerate(value):
        try:
            validate_value(element, item)  # type: ignore[arg-type]
        except DataError as exc:
            raise exc.at(index) from None


def _check_map(schema: Schema, value: Any) -> None:
    if not isinstance(value, Mapping):
        raise _mismatch(schema, value)
    key_schema, value_schema = schema._key_schema, schema._value_schema
    for key, item in value.items():
        try:
            validate_value(key_schema, key)  # type: ignore[arg-type]
            validate_value(value_schema, item)  # type: ignore[arg-type]
        except DataError as exc:
            raise exc.at(f"[{key!r}]") from None


def _check_struct(schema: Schema, value: Any) -> None:
    if not isinstance(value, StructBase):
        raise _mismatch(schema, value)
    if value.schema is not schema and value.schema != schema:
        raise DataError("Struct schemas do not match.")
    value.validate()  # type: ignore[attr-defined]


def _check_decimal(schema: Schema, value: Any) -> None:
    if not isinstance(value, decimal.Decimal):
        raise _mismatch(schema, value, "decimal.Decimal")
    if not value.is_finite():
        raise DataError(f"{value} is not a finite decimal")


def _check_date(schema: Schema, value: Any) -> None:
    if not isinstance(value, datetime.date):
        raise _mismatch(schema, value, "datetime.date")


def _check_time(schema: Schema, value: Any) -> None:
    if not isinstance(value, datetime.time):
        raise _mismatch(schema, value, "datetime.time")


def _check_timestamp(schema: Schema, value: Any) -> None:
    if not isinstance(value, datetime.datetime):
        raise _mismatch(schema, value, "datetime.datetime")


_CHECKS = {
    SchemaType.INT8: _check_int,
    SchemaType.INT16: _check_int,
    SchemaType.INT32: _check_int,
    SchemaType.INT64: _check_int,
    SchemaType.FLOAT32: _check_float,
    SchemaType.FLOAT64: _check_float,
    SchemaType.BOOLEAN: _check_bool,
    SchemaType.STRING: _check_str,
    SchemaType.BYTES: _check_bytes,
    SchemaType.ARRAY: _check_array,
    SchemaType.MAP: _check_map,
    SchemaType.STRUCT: _check_struct,
}

# As in Kafka, a logical type's name decides which Python class is expected.
_LOGICAL_CHECKS = {
    DECIMAL_NAME: _check_decimal,
    DATE_NAME: _check_date,
    TIME_NAME: _check_time,
    TIMESTAMP_NAME: _check_timestamp,
}


def validate_value(schema: Schema, value: Any) -> None:
    """Check that *value* fits *schema* (recursively). :raises DataError: naming the place.

    ``None`` fits an optional schema, and one with a default (which stands in for it).
    """
    if value is None:
        if schema.optional or schema.default_value is not None:
            return
        raise DataError(f"null used for required field, schema type {schema.type.value}")
    check = _LOGICAL_CHECKS.get(schema.name) if schema.name is not None else None  # type: ignore[arg-type]
    (check or _CHECKS[schema.type])(schema, value)


def _fits(schema: Schema, value: Any) -> bool:
    try:
        validate_value(schema, value)
    except Exception:  # whatever put() would raise, the caller's slow path raises again
        return False
    return True


def _values_checker(schema: Schema) -> Callable[[list[Any]], bool]:
    """For a struct schema: a function telling whether a list (or tuple) holds one fitting value per field.

    It decides exactly as :func:`validate_value` on each field would, but
    tests the common cases (an ``int`` in range, a ``str``, a ``float``, …)
    inline, so callers that build structs from values that are almost
    always valid pay a few type checks rather than a call per field. It is
    compiled when the schema is used a second time (compiling costs about a
    hundred checks, and a schema may be built for one value) and kept on the
    schema; callers use ``schema._values_check or _values_checker(schema)``.
    """
    check = schema._values_check
    if check is None:  # first use: check field by field, compile next time
        object.__setattr__(schema, "_values_check", False)
        return lambda values: _fit_one_by_one(schema, values)
    if not check:
        check = _compile_values_check(schema)
        object.__setattr__(schema, "_values_check", check)
    return check


def _fit_one_by_one(schema: Schema, values: Any) -> bool:
    fields = schema._fields
    return len(values) == len(fields) and all(_fits(field.schema, value) for field, value in zip(fields, values))


_EXACT_CLASS = {
    SchemaType.FLOAT32: "float",
    SchemaType.FLOAT64: "float",
    SchemaType.STRING: "str",
    SchemaType.BYTES: "bytes",
}


def _compile_values_check(schema: Schema) -> Callable[[list[Any]], bool]:
    fields = schema._fields
    count = len(fields)
    namespace: dict[str, Any] = {"_fits": _fits}
    lines = ["def check(values):", f"    if len(values) != {count}:", "        return False"]
    if count:
        lines.append("    " + "".join(f"v{i}, " for i in range(count)) + "= values")
    for i, field in enumerate(fields):
        field_schema = field.schema
        namespace[f"s{i}"] = field_schema
        v, s = f"v{i}", f"s{i}"
        # None fits an optional schema or one with a default; _fits decides every other case.
        guard = f"{v} is not None and " if field_schema.optional or field_schema.default_value is not None else ""
        schema_type = field_schema.type
        if field_schema.name in _LOGICAL_CHECKS:
            lines.append(f"    if {guard}not _fits({s}, {v}):")
            lines.append("        return False")
        elif schema_type in INT_RANGES:
            low, high = INT_RANGES[schema_type]
            lines.append(f"    if {v}.__class__ is int:")
            lines.append(f"        if not {low} <= {v} <= {high}:")
            lines.append("            return False")
            lines.append(f"    elif {guard}not _fits({s}, {v}):")
            lines.append("        return False")
        elif schema_type in _EXACT_CLASS:
            lines.append(f"    if {guard}{v}.__class__ is not {_EXACT_CLASS[schema_type]} and not _fits({s}, {v}):")
            lines.append("        return False")
        elif schema_type is SchemaType.BOOLEAN:
            lines.append(f"    if {guard}{v} is not True and {v} is not False:")
            lines.append("        return False")
        else:
            lines.append(f"    if {guard}not _fits({s}, {v}):")
            lines.append("        return False")
    lines.append("    return True")
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from the schema's types only
    check = namespace["check"]
    check.trusts_whole = not _holds_containers(schema)  # Struct.validate passes a struct made whole
    return check


def _holds_containers(schema: Schema) -> bool:
    """Whether a value of *schema* may hold a list or a dict (an array or map at any depth): what may
    change after the value was checked."""
    if schema.type in (SchemaType.ARRAY, SchemaType.MAP):
        return True
    return schema.type is SchemaType.STRUCT and any(_holds_containers(field.schema) for field in schema._fields)
