"""Struct payload writers and readers for :class:`~connectd.data.JsonConverter`, compiled per schema.

The converter's step-by-step functions call one closure per field (two with
the null handling). For a struct schema these compile, once, a single
function that handles the common field types inline: an ``int`` in range,
a ``float``, a ``bool``, a ``str`` (Jackson's escaping), and calls the
converter's own field functions for the rest (bytes, arrays, maps, nested
structs, logical types).

Each compiled function only takes the road where everything fits: on any
value it does not expect (a wrong type, a ``None`` for a required field, an
error from a field function) it hands the whole struct to the step-by-step
function, which gives the result or raises the error, exactly as before.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring
from typing import Any

from connectd.data._text import json_double, json_float, json_quote, to_float32
from connectd.data.schema import (
    DATE_NAME,
    DECIMAL_NAME,
    INT_RANGES,
    TIME_NAME,
    TIMESTAMP_NAME,
    Schema,
    SchemaType,
    StructBase,
)
from connectd.data.struct import Struct

__all__ = ["RETRY", "compile_payload_reader", "compile_struct_decoder", "compile_struct_encoder", "is_plain_struct"]

_LOGICAL = frozenset((DECIMAL_NAME, DATE_NAME, TIME_NAME, TIMESTAMP_NAME))
_S = SchemaType


def is_plain_struct(schema: Schema) -> bool:
    """A struct schema the converter treats as a struct (a logical type's name would make it that type)."""
    return schema.type is _S.STRUCT and schema.name not in _LOGICAL


def _kind(schema: Schema) -> str | None:
    """How a field of *schema* is handled inline, or ``None`` to call its field function."""
    if schema.name in _LOGICAL:
        return None
    schema_type = schema.type
    if schema_type in INT_RANGES:
        return "int"
    if schema_type is _S.FLOAT64:
        return "double"
    if schema_type is _S.FLOAT32:
        return "float"
    if schema_type is _S.BOOLEAN:
        return "boolean"
    if schema_type is _S.STRING:
        return "string"
    return None


def _literal(text: str) -> str:
    """*text* as a piece of an f-string literal."""
    return "f" + repr(text.replace("{", "{{").replace("}", "}}"))


def _compile(lines: list[str], namespace: dict[str, Any], name: str) -> Callable[[Any], Any]:
    exec("\n".join(lines), namespace)  # noqa: S102 - source built from the schema's field types; names are constants
    return namespace[name]


def compile_struct_encoder(
    schema: Schema,
    step_by_step: Callable[[Any], str],
    field_encoders: Sequence[Callable[[Any], str]],
    field_names: Sequence[str],
    replace_null_with_default: bool,
    envelope: tuple[str, str] | None = None,
) -> Callable[[Any], str]:
    """A function writing a struct of *schema* (or ``None``) as *step_by_step* does.

    :param step_by_step: the converter's encoder for *schema*, null handling included.
    :param field_encoders: the converter's encoder of each field, null handling included.
    :param field_names: each field's name as JSON text, quoted and escaped.
    :param envelope: text to write before and after the payload, if any.
    """
    namespace: dict[str, Any] = {
        "_step_by_step": step_by_step,
        "_schema": schema,
        "_StructBase": StructBase,
        "_quote": encode_basestring,
        "_json_quote": json_quote,
        "_repr": float.__repr__,
        "_json_double": json_double,
        "_json_float": json_float,
    }
    fields = schema._fields
    body: list[str] = []
    parts: list[str] = [_literal((envelope[0] if envelope else "") + "{")]
    for i, field in enumerate(fields):
        x = f"x{i}"
        field_schema = field.schema
        kind = _kind(field_schema)
        default = field_schema.default_value
        if kind is None:
            namespace[f"_encode{i}"] = field_encoders[i]
            body.append(f"    {x} = _encode{i}({x})")
        else:
            if default is not None and replace_null_with_default:
                namespace[f"_null{i}"] = field_encoders[i](default)
                body.append(f"    if {x} is None:")
                body.append(f"        {x} = _null{i}")
                test = "elif"
            elif field_schema.optional:
                body.append(f"    if {x} is None:")
                body.append(f'        {x} = "null"')
                test = "elif"
            else:
                test = "if"
            if kind == "int":
                low, high = INT_RANGES[field_schema.type]
                body.append(f"    {test} {x}.__class__ is not int or not {low} <= {x} <= {high}:")
                body.append("        return _step_by_step(value)")
            elif kind == "double":
                # Java prints plain decimals between 10^-3 and 10^7 as Python's repr does.
                body.append(f"    {test} {x}.__class__ is not float:")
                body.append("        return _step_by_step(value)")
                body.append(f"    elif 1e-3 <= {x} < 1e7 or -1e7 < {x} <= -1e-3:")
                body.append(f"        {x} = _repr({x})")
                body.append("    else:")
                body.append(f"        {x} = _json_double({x})")
            elif kind == "float":
                body.append(f"    {test} {x}.__class__ is not float:")
                body.append("        return _step_by_step(value)")
                body.append("    else:")
                body.append(f"        {x} = _json_float({x})")
            elif kind == "boolean":
                body.append(f"    {test} {x} is True:")
                body.append(f'        {x} = "true"')
                body.append(f"    elif {x} is False:")
                body.append(f'        {x} = "false"')
                body.append("    else:")
                body.append("        return _step_by_step(value)")
            else:  # string
                # The json module's C quoting is Jackson's, but for the \u00XX escapes of
                # control characters, which it writes in lower case: those go to json_quote.
                body.append(f"    {test} {x}.__class__ is not str:")
                body.append("        return _step_by_step(value)")
                body.append("    else:")
                body.append(f"        quoted = _quote({x})")
                body.append(f"        {x} = _json_quote({x}) if '\\\\u' in quoted else quoted")
        parts.append(_literal(("," if i else "") + field_names[i] + ":"))
        parts.append(f"f'{{{x}}}'")
    parts.append(_literal("}" + (envelope[1] if envelope else "")))
    lines = [
        "def encode(value):",
        "    if not isinstance(value, _StructBase):",
        "        return _step_by_step(value)",
        "    if value.schema is not _schema and value.schema != _schema:",
        "        return _step_by_step(value)",
        "    try:",
    ]
    if fields:
        lines.append("        " + "".join(f"x{i}, " for i in range(len(fields))) + "= value._values")
    else:
        lines.append("        if value._values: return _step_by_step(value)")
    lines += ["    " + line for line in body]
    lines += [
        "    except Exception:",
        "        return _step_by_step(value)",
        "    return " + " ".join(parts),
    ]
    return _compile(lines, namespace, "encode")


def compile_struct_decoder(
    schema: Schema,
    step_by_step: Callable[[Any], Any],
    field_decoders: Sequence[Callable[[Any], Any]],
    replace_null_with_default: bool,
) -> Callable[[Any], Any]:
    """A function reading a parsed JSON value (or ``None``) into a struct of *schema*, as *step_by_step* does.

    :param step_by_step: the converter's decoder for *schema*, null handling included.
    :param field_decoders: the converter's decoder of each field, null handling included.
    """
    namespace: dict[str, Any] = {
        "_step_by_step": step_by_step,
        "_schema": schema,
        "_new": object.__new__,
        "_Struct": Struct,
        "_Decimal": decimal.Decimal,
        "_to_float32": to_float32,
    }
    fields = schema._fields
    lines = [
        "def decode(value):",
        "    if value.__class__ is not dict:",
        "        return _step_by_step(value)",
        "    get = value.get",
        "    try:",
        "        pass",
    ]
    for i, field in enumerate(fields):
        x = f"x{i}"
        field_schema = field.schema
        kind = _kind(field_schema)
        lines.append(f"        {x} = get({field.name!r})")
        if kind is None:
            namespace[f"_decode{i}"] = field_decoders[i]
            lines.append(f"        {x} = _decode{i}({x})")
            continue
        default = field_schema.default_value
        indent = "        "
        if default is not None and replace_null_with_default:
            namespace[f"_default{i}"] = default
            lines.append(f"        if {x} is None:")
            lines.append(f"            {x} = _default{i}")
            lines.append("        else:")
            indent = "            "
        elif field_schema.optional:
            lines.append(f"        if {x} is not None:")
            indent = "            "
        if kind == "int":
            low, high = INT_RANGES[field_schema.type]
            lines.append(f"{indent}if {x}.__class__ is not int or not {low} <= {x} <= {high}:")
            lines.append(f"{indent}    return _step_by_step(value)")
        elif kind in ("double", "float"):
            narrow = "_to_float32(float({x}))" if kind == "float" else "float({x})"
            lines.append(f"{indent}if {x}.__class__ is _Decimal or {x}.__class__ is int:")
            lines.append(f"{indent}    {x} = {narrow.format(x=x)}")
            lines.append(f"{indent}else:")
            lines.append(f"{indent}    return _step_by_step(value)")
        elif kind == "boolean":
            lines.append(f"{indent}if {x} is not True and {x} is not False:")
            lines.append(f"{indent}    return _step_by_step(value)")
        else:  # string
            lines.append(f"{indent}if {x}.__class__ is not str:")
            lines.append(f"{indent}    return _step_by_step(value)")
    lines += [
        "    except Exception:",
        "        return _step_by_step(value)",
    ]
    lines += _new_struct(len(fields))
    return _compile(lines, namespace, "decode")


#: What a payload reader returns when it cannot decide: read the record the standard way.
RETRY: Any = object()


def compile_payload_reader(schema: Schema, replace_null_with_default: bool) -> Callable[[Any], Any] | None:
    """For a struct whose fields are all inline types: a function reading a payload that orjson parsed.

    orjson reads JSON numbers as ``float`` where the standard parser (with
    ``parse_float=Decimal``) gives a ``Decimal``. That is the same double for a
    ``double`` field (both round the text correctly), but not for an integer
    field given ``1.0`` or an integer too large for 64 bits, so the reader
    gives up (:data:`RETRY`) on those, and on anything else it does not
    expect: a missing or extra key (so nothing else in the payload, such as
    deep nesting, could matter), a wrong type, a ``None`` for a required
    field. It returns ``None`` when the schema has other field types.
    """
    fields = schema._fields
    kinds = [_kind(field.schema) for field in fields]
    if not is_plain_struct(schema) or None in kinds:
        return None
    namespace: dict[str, Any] = {
        "_schema": schema,
        "_new": object.__new__,
        "_Struct": Struct,
        "_RETRY": RETRY,
        "_to_float32": to_float32,
    }
    lines = [
        "def read(value):",
        f"    if value.__class__ is not dict or len(value) != {len(fields)}:",
        "        return _RETRY",
        "    try:",
        ("        " + "".join(f"x{i}, " for i in range(len(fields))) + "= " + "".join(f"value[{f.name!r}], " for f in fields))
        if fields
        else "        pass",
        "    except KeyError:",
        "        return _RETRY",
    ]
    for i, (field, kind) in enumerate(zip(fields, kinds)):
        x = f"x{i}"
        field_schema = field.schema
        default = field_schema.default_value
        indent = "    "
        if default is not None and replace_null_with_default:
            namespace[f"_default{i}"] = default
            lines.append(f"    if {x} is None:")
            lines.append(f"        {x} = _default{i}")
            lines.append("    else:")
            indent = "        "
        elif field_schema.optional:
            lines.append(f"    if {x} is not None:")
            indent = "        "
        if kind == "int":
            low, high = INT_RANGES[field_schema.type]
            lines.append(f"{indent}if {x}.__class__ is not int or not {low} <= {x} <= {high}:")
            lines.append(f"{indent}    return _RETRY")
        elif kind in ("double", "float"):
            lines.append(f"{indent}if {x}.__class__ is int:")
            lines.append(f"{indent}    {x} = float({x})")
            lines.append(f"{indent}elif {x}.__class__ is not float:")
            lines.append(f"{indent}    return _RETRY")
            if kind == "float":
                lines.append(f"{indent}{x} = _to_float32({x})")
        elif kind == "boolean":
            lines.append(f"{indent}if {x} is not True and {x} is not False:")
            lines.append(f"{indent}    return _RETRY")
        else:  # string
            lines.append(f"{indent}if {x}.__class__ is not str:")
            lines.append(f"{indent}    return _RETRY")
    lines += _new_struct(len(fields))
    return _compile(lines, namespace, "read")


def _new_struct(count: int) -> list[str]:
    # Struct._unchecked, inline.
    return [
        "    struct = _new(_Struct)",
        "    struct.schema = _schema",
        "    struct._values = (" + "".join(f"x{i}, " for i in range(count)) + ")",
        "    return struct",
    ]
