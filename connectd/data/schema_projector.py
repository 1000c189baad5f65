"""Kafka Connect's ``SchemaProjector``: a value written with one schema, read with another.

:func:`project` turns *record*, valid for *source*, into the value for a
compatible *target* schema, as Kafka's ``SchemaProjector.project`` does::

    old = SchemaBuilder.struct().field("id", Schema.INT32).build()
    new = (SchemaBuilder.struct().field("id", Schema.INT64)
           .field("tag", SchemaBuilder.string().default_value("none").build()).build())
    project(old, Struct(old).put("id", 7), new)      # Struct(new): id=7, tag="none"

Compatible means: the same type, or a number type that widens (int8 → int16 →
int32 → int64 → float32 → float64); the same name (so logical types match
only themselves) and the same parameters (a Decimal's scale). As in Kafka the
version and doc are not compared. Struct fields are matched by name: fields
the target lacks are dropped, fields the source lacks take the target field's
default, or stay ``None`` when optional. ``None`` for an optional source and a
required target becomes the target's default.

Errors are :class:`~connectd.errors.SchemaProjectorException` (a
:class:`~connectd.errors.DataError`), naming the place as ``DataError``
does: ``address.lines[2]: Schema type mismatch. ...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectd.data._text import to_float32
from connectd.data.schema import INT_RANGES, Schema, SchemaType, StructBase
from connectd.data.struct import Struct
from connectd.errors import DataError, SchemaProjectorException

__all__ = ["SchemaProjector", "SchemaProjectorException", "project"]

_WIDENING = (
    SchemaType.INT8,
    SchemaType.INT16,
    SchemaType.INT32,
    SchemaType.INT64,
    SchemaType.FLOAT32,
    SchemaType.FLOAT64,
)
_RANK = {schema_type: rank for rank, schema_type in enumerate(_WIDENING)}


def _promotable(source: SchemaType, target: SchemaType) -> bool:
    source_rank, target_rank = _RANK.get(source), _RANK.get(target)
    return source_rank is not None and target_rank is not None and source_rank <= target_rank


def _check_compatible(source: Schema, target: Schema) -> None:
    if source.type is not target.type and not _promotable(source.type, target.type):
        raise SchemaProjectorException(
            f"Schema type mismatch. source type: {source.type.value} and target type: {target.type.value}"
        )
    if source.name != target.name:
        raise SchemaProjectorException(f"Schema name mismatch. source name: {source.name} and target name: {target.name}")
    if source.parameters != target.parameters:
        raise SchemaProjectorException(
            "Schema parameters not equal. source parameters: "
            f"{_shown_parameters(source)} and target parameters: {_shown_parameters(target)}"
        )


def _shown_parameters(schema: Schema) -> Any:
    return dict(schema.parameters) if schema.parameters is not None else None


def project(source: Schema, record: Any, target: Schema) -> Any:
    """*record*, a value for *source*, as a value for *target*.

    Numbers are widened to the target's type (an int becomes a float for float32/float64, rounded
    to single precision for float32); structs, arrays and maps are projected element by element;
    other values are returned as they are.

    :param source: the schema *record* was written with.
    :param record: the value; may be ``None``.
    :param target: the schema to project to.
    :raises SchemaProjectorException: if the schemas are not compatible, a required target struct
        field is missing from the source and has no default, or *source* is optional while *target*
        is required without a default (whether or not *record* is ``None``, as in Kafka).
    """
    _check_compatible(source, target)
    if source.optional and not target.optional:
        if target.default_value is None:
            raise SchemaProjectorException(
                "Writer schema is optional, however, target schema does not provide a default value."
            )
        if record is None:
            return target.default_value
    elif record is None:
        return None
    target_type = target.type
    if target_type is SchemaType.STRUCT:
        return _project_struct(source, record, target)
    if target_type is SchemaType.ARRAY:
        return _project_array(source, record, target)
    if target_type is SchemaType.MAP:
        return _project_map(source, record, target)
    return _project_primitive(source, record, target)


def _project_primitive(source: Schema, record: Any, target: Schema) -> Any:
    # As in Kafka, only numbers change; anything else (a date under a Date schema, say) is returned as it is.
    target_type = target.type
    if target_type not in _RANK or record.__class__ is bool or not isinstance(record, (int, float)):
        return record
    if target_type is SchemaType.FLOAT64:
        return float(record)
    if target_type is SchemaType.FLOAT32:
        return to_float32(float(record))
    number = int(record)  # a float under an integer schema is not valid for it; Kafka truncates too
    low, high = INT_RANGES[target_type]
    if not low <= number <= high:
        raise SchemaProjectorException(f"{number} is out of range for {target_type.value} ({low} to {high})")
    return number


def _project_struct(source: Schema, record: Any, target: Schema) -> Struct:
    if not isinstance(record, StructBase):
        raise SchemaProjectorException(f"expected a Struct for a struct schema, got {type(record).__name__}")
    projected = Struct(target)
    for field in target.fields:
        name = field.name
        source_field = source.field(name)
        if source_field is not None:
            try:
                value = project(source_field.schema, record.get(name), field.schema)  # type: ignore[attr-defined]
            except DataError as exc:
                raise exc.at(name) from None
            projected.put(field, value)  # names the field itself when the value does not fit
        elif field.schema.optional:
            continue
        elif field.schema.default_value is not None:
            projected.put(field, field.schema.default_value)
        else:
            raise SchemaProjectorException(f"Required field `{name}` is missing from source schema: {source!r}")
    return projected


def _project_array(source: Schema, record: Any, target: Schema) -> list[Any]:
    if not isinstance(record, (list, tuple)):
        raise SchemaProjectorException(f"expected a list for an array schema, got {type(record).__name__}")
    source_items, target_items = source.value_schema, target.value_schema
    projected = []
    for index, item in enumerate(record):
        try:
            projected.append(project(source_items, item, target_items))
        except DataError as exc:
            raise exc.at(index) from None
    return projected


def _project_map(source: Schema, record: Any, target: Schema) -> dict[Any, Any]:
    if not isinstance(record, Mapping):
        raise SchemaProjectorException(f"expected a dict for a map schema, got {type(record).__name__}")
    source_keys, source_values = source.key_schema, source.value_schema
    target_keys, target_values = target.key_schema, target.value_schema
    projected = {}
    for key, value in record.items():
        try:
            projected[project(source_keys, key, target_keys)] = project(source_values, value, target_values)
        except DataError as exc:
            raise exc.at(f"[{key!r}]") from None
    return projected


class SchemaProjector:
    """Kafka's class name, for ported code: ``SchemaProjector.project(source, record, target)``."""

    def __init__(self) -> None:  # pragma: no cover - a namespace
        raise TypeError("SchemaProjector is a namespace; call SchemaProjector.project(...) or project(...)")

    project = staticmethod(project)
