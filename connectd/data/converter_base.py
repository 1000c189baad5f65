"""The converter interfaces: Kafka's ``Converter`` and ``HeaderConverter`` in snake_case.

A converter turns Connect data (schema + value) into the bytes of a Kafka
record's key or value and back; a header converter does the same for one
header value. Both declare their settings as a :class:`ConfigDef` in the
class attribute ``config_def`` and are configured with :meth:`configure`,
which checks every setting and raises :class:`~connectd.errors.ConfigError`
listing each bad one.

Converters run inside Spark on every record, so each :class:`Converter` also
has a batch form (:meth:`Converter.from_connect_batch`,
:meth:`Converter.to_connect_batch`); the defaults loop, fast converters
override them.

Writing a converter::

    class UpperCaseConverter(Converter):
        config_def = converter_config_def(
            ConfigKey("upper.locale", Type.STRING, "Unused example setting.", default="en"),
        )

        def from_connect_data(self, topic, schema, value, headers=None):
            return None if value is None else value.upper().encode()

        def to_connect_data(self, topic, data, headers=None):
            return SchemaAndValue(Schema.OPTIONAL_STRING, None if data is None else data.decode())
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, Importance, OneOf, Type
from connectd.data.schema import Schema, SchemaAndValue
from connectd.errors import ConfigError

if TYPE_CHECKING:
    from connectd.data.headers import Headers

__all__ = [
    "CONVERTER_TYPE_CONFIG",
    "Converter",
    "HeaderConverter",
    "check_batch_headers",
    "converter_config_def",
]

CONVERTER_TYPE_CONFIG = "converter.type"

_TYPE_KEY = ConfigKey(
    CONVERTER_TYPE_CONFIG,
    Type.STRING,
    "How this converter is used: key, value or header. Set by the worker from where the converter is configured; you do not need to set it.",
    default=None,
    importance=Importance.LOW,
    validator=OneOf("key", "value", "header"),
)


def check_batch_headers(items: Sequence[Any], headers: Sequence[Any] | None) -> None:
    """For batch overrides: *headers*, when given, must have one entry per item."""
    if headers is not None and len(headers) != len(items):
        raise ValueError(f"{len(headers)} headers given for {len(items)} records")


def converter_config_def(*keys: ConfigKey) -> ConfigDef:
    """The settings every converter has (``converter.type``) plus *keys*."""
    return ConfigDef((_TYPE_KEY, *keys))


class _Configurable:
    config_def: ClassVar[ConfigDef] = converter_config_def()

    def __init__(self) -> None:
        self.is_key = False
        self.config: dict[str, Any] = self.config_def.defaults()

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Check and apply settings (with the ``key.converter.`` / ``value.converter.`` prefix removed).

        ``converter.type`` is filled in from *is_key* unless given (``header`` for header converters).

        :param configs: setting name → value (strings as in a properties file, or typed values).
        :param is_key: whether this converter handles record keys.
        :raises ConfigError: listing every bad setting and what was expected; unknown
            settings are ignored.
        """
        values = dict(configs)
        values.setdefault(CONVERTER_TYPE_CONFIG, "key" if is_key else "value")
        errors = [problem for problem in self.config_def.validate(values) if problem.is_error]
        if errors:
            raise ConfigError(errors)
        self.config = {
            key.name: key.parse(values[key.name]) if key.name in values else key.default_value()
            for key in self.config_def
        }
        self.is_key = is_key

    def close(self) -> None:
        """Release resources; the built-in converters hold none."""


class Converter(_Configurable, abc.ABC):
    """Turns a record key or value between Connect data and bytes (Kafka's ``Converter``)."""

    @abc.abstractmethod
    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> bytes | None:
        """Serialize *value* (described by *schema*) for *topic*; ``None`` means a null (tombstone).

        :param headers: the record's headers, for converters that write into them.
        :raises DataError: if the value cannot be converted.
        """

    @abc.abstractmethod
    def to_connect_data(self, topic: str, data: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        """Deserialize *data* read from *topic*.

        :raises DataError: if the bytes are not in this converter's format.
        """

    def from_connect_batch(
        self,
        topic: str,
        schemas_and_values: Sequence[SchemaAndValue | tuple[Schema | None, Any]],
        headers: Sequence[Headers | None] | None = None,
    ) -> list[bytes | None]:
        """:meth:`from_connect_data` for many records of one topic, in order.

        :param schemas_and_values: ``(schema, value)`` pairs.
        :param headers: one entry per record, or ``None``.
        """
        convert = self.from_connect_data
        if headers is None:
            return [convert(topic, schema, value) for schema, value in schemas_and_values]
        return [convert(topic, schema, value, h) for (schema, value), h in zip(schemas_and_values, headers, strict=True)]

    def to_connect_batch(
        self,
        topic: str,
        datas: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None = None,
    ) -> list[SchemaAndValue]:
        """:meth:`to_connect_data` for many records of one topic, in order."""
        convert = self.to_connect_data
        if headers is None:
            return [convert(topic, data) for data in datas]
        return [convert(topic, data, h) for data, h in zip(datas, headers, strict=True)]


class HeaderConverter(_Configurable, abc.ABC):
    """Turns one header value between Connect data and bytes (Kafka's ``HeaderConverter``)."""

    @abc.abstractmethod
    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        """Serialize a header value; ``None`` for a null value."""

    @abc.abstractmethod
    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        """Deserialize a header value."""

    def from_connect_headers_batch(
        self, topic: str, headers: Sequence[Headers | None]
    ) -> list[list[tuple[str, bytes | None]] | None]:
        """:meth:`from_connect_header` for every header of many records of one topic.

        :param headers: each record's headers, or ``None`` (or empty) for a record without any.
        :returns: per record, its headers as ``(key, bytes)`` pairs in order, or ``None`` where it had none.
        """
        convert = self.from_connect_header
        return [[(key, convert(topic, key, schema, value)) for key, schema, value in record] if record else None
                for record in headers]
