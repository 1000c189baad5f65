"""Kafka's ``SchemaBuilder``: a :class:`~connectd.data.schema.Schema` built fluently."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectd.data.schema import Field, Schema, SchemaType, validate_value
from connectd.errors import DataError

__all__ = ["SchemaBuilder"]

_STRUCT = SchemaType.STRUCT


class SchemaBuilder:
    """Builds a :class:`Schema` fluently, as Kafka's ``SchemaBuilder``::

        schema = (SchemaBuilder.struct().name("com.example.Person")
                  .field("name", Schema.STRING)
                  .field("age", SchemaBuilder.int32().optional().build())
                  .build())

    Setting the same attribute twice to different values is an error, as in
    Kafka (except on builders made by :meth:`from_schema`, whose copied
    attributes may be overridden).
    """

    __slots__ = (
        "_type",
        "_optional",
        "_default",
        "_name",
        "_version",
        "_doc",
        "_parameters",
        "_fields",
        "_key_schema",
        "_value_schema",
        "_set",
    )

    def __init__(self, type: SchemaType) -> None:
        if not isinstance(type, SchemaType):
            raise DataError(f"schema type must be a SchemaType, got {type!r}")
        self._type = type
        self._optional: bool | None = None
        self._default: Any = None
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] | None = None
        self._fields: dict[str, Field] | None = {} if type is _STRUCT else None
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None
        self._set: set[str] = set()

    # -- constructors --------------------------------------------------------------

    @classmethod
    def of_type(cls, type: SchemaType) -> SchemaBuilder:
        return cls(type)

    @classmethod
    def int8(cls) -> SchemaBuilder:
        return cls(SchemaType.INT8)

    @classmethod
    def int16(cls) -> SchemaBuilder:
        return cls(SchemaType.INT16)

    @classmethod
    def int32(cls) -> SchemaBuilder:
        return cls(SchemaType.INT32)

    @classmethod
    def int64(cls) -> SchemaBuilder:
        return cls(SchemaType.INT64)

    @classmethod
    def float32(cls) -> SchemaBuilder:
        return cls(SchemaType.FLOAT32)

    @classmethod
    def float64(cls) -> SchemaBuilder:
        return cls(SchemaType.FLOAT64)

    @classmethod
    def boolean(cls) -> SchemaBuilder:
        return cls(SchemaType.BOOLEAN)

    @classmethod
    def string(cls) -> SchemaBuilder:
        return cls(SchemaType.STRING)

    @classmethod
    def bytes(cls) -> SchemaBuilder:
        return cls(SchemaType.BYTES)

    @classmethod
    def struct(cls) -> SchemaBuilder:
        return cls(SchemaType.STRUCT)

    @classmethod
    def array(cls, value_schema: Schema | SchemaBuilder) -> SchemaBuilder:
        builder = cls(SchemaType.ARRAY)
        builder._value_schema = _as_schema(value_schema, "value schema")
        return builder

    @classmethod
    def map(cls, key_schema: Schema | SchemaBuilder, value_schema: Schema | SchemaBuilder) -> SchemaBuilder:
        builder = cls(SchemaType.MAP)
        builder._key_schema = _as_schema(key_schema, "key schema")
        builder._value_schema = _as_schema(value_schema, "value schema")
        return builder

    @classmethod
    def from_schema(cls, schema: Schema) -> SchemaBuilder:
        """A builder holding a copy of *schema*; any attribute may then be changed."""
        builder = cls(schema.type)
        builder._optional = schema.optional
        builder._default = schema.default_value
        builder._name = schema.name
        builder._version = schema.version
        builder._doc = schema.doc
        builder._parameters = dict(schema.parameters) if schema.parameters is not None else None
        if schema.type is _STRUCT:
            builder._fields = {f.name: f for f in schema._fields}
        builder._key_schema = schema._key_schema
        builder._value_schema = schema._value_schema
        return builder

    # -- attributes ----------------------------------------------------------------

    def _check_can_set(self, attribute: str, current: Any, new: Any) -> None:
        if attribute in self._set and current != new:
            raise DataError(f"Invalid SchemaBuilder call: {attribute} has already been set.")
        self._set.add(attribute)

    def optional(self) -> SchemaBuilder:
        self._check_can_set("optional", self._optional, True)
        self._optional = True
        return self

    def required(self) -> SchemaBuilder:
        self._check_can_set("optional", self._optional, False)
        self._optional = False
        return self

    def default_value(self, value: Any) -> SchemaBuilder:
        """The value used when a value is ``None``.

        Checked against the schema built so far straight away, as in Kafka (a struct's
        default when :meth:`build` runs, once all its fields are there).

        :raises DataError: if *value* does not fit.
        """
        self._check_can_set("default", self._default, value)
        if value is not None and self._type is not _STRUCT:
            try:
                validate_value(self._built(default=None), value)
            except DataError as exc:
                raise DataError(f"Invalid default value: {exc}") from None
        self._default = value
        return self

    def name(self, name: str) -> SchemaBuilder:
        if not isinstance(name, str):
            raise DataError(f"schema name must be a string, got {name!r}")
        self._check_can_set("name", self._name, name)
        self._name = name
        return self

    def version(self, version: int) -> SchemaBuilder:
        if version.__class__ is bool or not isinstance(version, int):
            raise DataError(f"schema version must be an integer, got {version!r}")
        self._check_can_set("version", self._version, version)
        self._version = version
        return self

    def doc(self, doc: str) -> SchemaBuilder:
        if not isinstance(doc, str):
            raise DataError(f"schema doc must be a string, got {doc!r}")
        self._check_can_set("doc", self._doc, doc)
        self._doc = doc
        return self

    def parameter(self, name: str, value: str) -> SchemaBuilder:
        if not isinstance(name, str) or not isinstance(value, str):
            raise DataError(f"schema parameters are strings, got {name!r}={value!r}")
        if self._parameters is None:
            self._parameters = {}
        self._parameters[name] = value
        return self

    def parameters(self, parameters: Mapping[str, str]) -> SchemaBuilder:
        if self._parameters is None:
            self._parameters = {}
        for name, value in parameters.items():
            self.parameter(name, value)
        return self

    def field(self, name: str, schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """Add a struct field. :raises DataError: on non-struct builders or duplicate names."""
        if self._fields is None:
            raise DataError("Cannot create fields on type " + self._type.value)
        if not isinstance(name, str) or not name:
            raise DataError("fieldName cannot be null or empty.")
        if name in self._fields:
            raise DataError(f"Cannot create field because of field name duplication {name}")
        self._fields[name] = Field(name, len(self._fields), _as_schema(schema, f"schema of field {name!r}"))
        return self

    # -- result ----------------------------------------------------------------------

    @property
    def type(self) -> SchemaType:
        return self._type

    def build(self) -> Schema:
        """The immutable schema. :raises DataError: if the default value does not fit."""
        return self._built(self._default)

    def _built(self, default: Any) -> Schema:
        return Schema(
            self._type,
            optional=bool(self._optional),
            default_value=default,
            name=self._name,
            version=self._version,
            doc=self._doc,
            parameters=self._parameters,
            fields=self._fields.values() if self._fields is not None else None,
            key_schema=self._key_schema,
            value_schema=self._value_schema,
        )

    schema = build  # Kafka's SchemaBuilder.schema()


def _as_schema(schema: Schema | SchemaBuilder, what: str) -> Schema:
    if isinstance(schema, SchemaBuilder):
        return schema.build()
    if not isinstance(schema, Schema):
        raise DataError(f"{what} must be a Schema, got {schema!r}")
    return schema
