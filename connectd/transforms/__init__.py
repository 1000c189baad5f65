"""Single message transforms (SMTs) and predicates, compatible with Kafka Connect's.

Every built-in transform and predicate is listed in :data:`BUILTIN_TRANSFORMS`
and :data:`BUILTIN_PREDICATES` with its aliases: the short Kafka name
(``InsertField$Value``) and Kafka Connect's Java class name
(``org.apache.kafka.connect.transforms.InsertField$Value``), so connector
configs written for Kafka Connect work unchanged. They are registered
through the ``register_transforms`` / ``register_predicates`` hooks like any
plugin's.

Transforms with a key and a value variant are two classes (``InsertFieldKey``,
``InsertFieldValue``), also reachable as ``InsertField.Key`` and ``InsertField.Value``.
"""

from __future__ import annotations

from connectd.transforms.base import Predicate, SchemaUpdateCache, Transformation
from connectd.transforms.cast import Cast, CastKey, CastValue
from connectd.transforms.chain import TransformationChain, TransformationStage
from connectd.transforms.drop_headers import DropHeaders
from connectd.transforms.extract_field import ExtractField, ExtractFieldKey, ExtractFieldValue
from connectd.transforms.filter import Filter
from connectd.transforms.flatten import Flatten, FlattenKey, FlattenValue
from connectd.transforms.header_from import HeaderFrom, HeaderFromKey, HeaderFromValue
from connectd.transforms.hoist_field import HoistField, HoistFieldKey, HoistFieldValue
from connectd.transforms.insert_field import InsertField, InsertFieldKey, InsertFieldValue
from connectd.transforms.insert_header import InsertHeader
from connectd.transforms.mask_field import MaskField, MaskFieldKey, MaskFieldValue
from connectd.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from connectd.transforms.regex_router import RegexRouter
from connectd.transforms.replace_field import ReplaceField, ReplaceFieldKey, ReplaceFieldValue
from connectd.transforms.set_schema_metadata import SetSchemaMetadata, SetSchemaMetadataKey, SetSchemaMetadataValue
from connectd.transforms.timestamp_converter import (
    TimestampConverter,
    TimestampConverterKey,
    TimestampConverterValue,
)
from connectd.transforms.timestamp_router import TimestampRouter
from connectd.transforms.value_to_key import ValueToKey

__all__ = [
    "BUILTIN_PREDICATES",
    "BUILTIN_TRANSFORMS",
    "Cast",
    "CastKey",
    "CastValue",
    "DropHeaders",
    "ExtractField",
    "ExtractFieldKey",
    "ExtractFieldValue",
    "Filter",
    "Flatten",
    "FlattenKey",
    "FlattenValue",
    "HasHeaderKey",
    "HeaderFrom",
    "HeaderFromKey",
    "HeaderFromValue",
    "HoistField",
    "HoistFieldKey",
    "HoistFieldValue",
    "InsertField",
    "InsertFieldKey",
    "InsertFieldValue",
    "InsertHeader",
    "MaskField",
    "MaskFieldKey",
    "MaskFieldValue",
    "Predicate",
    "RecordIsTombstone",
    "RegexRouter",
    "ReplaceField",
    "ReplaceFieldKey",
    "ReplaceFieldValue",
    "SchemaUpdateCache",
    "SetSchemaMetadata",
    "SetSchemaMetadataKey",
    "SetSchemaMetadataValue",
    "TimestampConverter",
    "TimestampConverterKey",
    "TimestampConverterValue",
    "TimestampRouter",
    "TopicNameMatches",
    "Transformation",
    "TransformationChain",
    "TransformationStage",
    "ValueToKey",
]

_TRANSFORMS_PACKAGE = "org.apache.kafka.connect.transforms."
_PREDICATES_PACKAGE = "org.apache.kafka.connect.transforms.predicates."


def _kafka(cls: type, simple_name: str, package: str) -> tuple[type, tuple[str, ...]]:
    return cls, (simple_name, package + simple_name)


def _key_and_value(base: type, name: str) -> list[tuple[type, tuple[str, ...]]]:
    return [
        _kafka(base.Key, f"{name}$Key", _TRANSFORMS_PACKAGE),  # type: ignore[attr-defined]
        _kafka(base.Value, f"{name}$Value", _TRANSFORMS_PACKAGE),  # type: ignore[attr-defined]
    ]


#: Every built-in transform with its aliases: Kafka's short name and its Java class name.
BUILTIN_TRANSFORMS: list[tuple[type, tuple[str, ...]]] = [
    *_key_and_value(Cast, "Cast"),
    _kafka(DropHeaders, "DropHeaders", _TRANSFORMS_PACKAGE),
    *_key_and_value(ExtractField, "ExtractField"),
    _kafka(Filter, "Filter", _TRANSFORMS_PACKAGE),
    *_key_and_value(Flatten, "Flatten"),
    *_key_and_value(HeaderFrom, "HeaderFrom"),
    *_key_and_value(HoistField, "HoistField"),
    *_key_and_value(InsertField, "InsertField"),
    _kafka(InsertHeader, "InsertHeader", _TRANSFORMS_PACKAGE),
    *_key_and_value(MaskField, "MaskField"),
    _kafka(RegexRouter, "RegexRouter", _TRANSFORMS_PACKAGE),
    *_key_and_value(ReplaceField, "ReplaceField"),
    *_key_and_value(SetSchemaMetadata, "SetSchemaMetadata"),
    *_key_and_value(TimestampConverter, "TimestampConverter"),
    _kafka(TimestampRouter, "TimestampRouter", _TRANSFORMS_PACKAGE),
    _kafka(ValueToKey, "ValueToKey", _TRANSFORMS_PACKAGE),
]

#: Every built-in predicate with its aliases: Kafka's short name and its Java class name.
BUILTIN_PREDICATES: list[tuple[type, tuple[str, ...]]] = [
    _kafka(HasHeaderKey, "HasHeaderKey", _PREDICATES_PACKAGE),
    _kafka(RecordIsTombstone, "RecordIsTombstone", _PREDICATES_PACKAGE),
    _kafka(TopicNameMatches, "TopicNameMatches", _PREDICATES_PACKAGE),
]
