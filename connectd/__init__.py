"""connectd: a Kafka Connect worker in Python.

This module is the public API for plugin authors; everything not listed in
``__all__`` is internal and may change.

Its names load on first use (PEP 562): a process that needs only part of connectd (Spark's
Python workers planning or reading a source task's batches, a source task's own process)
does not import the whole plugin API and its dependencies at ``import connectd``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectd.capacity.providers import CapacityProvider, ProviderUnusable
    from connectd.config.definitions import (
        CaseInsensitiveValidString,
        ConfigDef,
        ConfigKey,
        ConfigProblem,
        Importance,
        NonEmptyString,
        OneOf,
        Range,
        RegexValid,
        TopicName,
        Type,
        Validator,
        ValidList,
    )
    from connectd.config.providers import ConfigProvider
    from connectd.connector import (
        Connector,
        ConnectorContext,
        ErrantRecordReporter,
        OffsetStorageReader,
        RecordMetadata,
        SinkConnector,
        SinkTask,
        SinkTaskContext,
        SourceConnector,
        SourceTask,
        SourceTaskContext,
        SparkSinkTask,
        SparkSourceTask,
        Task,
        TopicPartition,
    )
    from connectd.data import (
        ConnectRecord,
        Converter,
        DataError,
        Date,
        Decimal,
        Field,
        Header,
        HeaderConverter,
        Headers,
        Schema,
        SchemaAndValue,
        SchemaBuilder,
        SchemaType,
        SinkRecord,
        SourceRecord,
        SourceRecordBatch,
        Struct,
        Time,
        Timestamp,
        TimestampType,
        converter_config_def,
    )
    from connectd.data._text import java_string
    from connectd.errors import (
        ConfigError,
        ConnectdError,
        ConnectException,
        ConnectorError,
        PluginError,
        RetriableException,
    )
    from connectd.hookspecs import hookimpl
    from connectd.override_policy import ConnectorClientConfigOverridePolicy, ConnectorClientConfigRequest
    from connectd.secrets import Secret
    from connectd.transforms.base import Predicate, Transformation

#: Each public name and the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("CapacityProvider", "ProviderUnusable"), "connectd.capacity.providers"),
    **dict.fromkeys((
        "CaseInsensitiveValidString", "ConfigDef", "ConfigKey", "ConfigProblem", "Importance", "NonEmptyString",
        "OneOf", "Range", "RegexValid", "TopicName", "Type", "Validator", "ValidList"
    ), "connectd.config.definitions"),
    **dict.fromkeys(("ConfigProvider",), "connectd.config.providers"),
    **dict.fromkeys((
        "Connector", "ConnectorContext", "ConnectorTransactionBoundaries", "ErrantRecordReporter",
        "ExactlyOnceSupport", "OffsetStorageReader", "RecordMetadata",
        "SinkConnector", "SinkTask", "SinkTaskContext", "SourceConnector", "SourceTask", "SourceTaskContext",
        "SparkSinkTask", "SparkSourceTask", "Task", "TopicPartition", "TransactionContext"
    ), "connectd.connector"),
    **dict.fromkeys((
        "ConnectRecord", "Converter", "DataError", "Date", "Decimal", "Field", "Header", "HeaderConverter", "Headers",
        "Schema", "SchemaAndValue", "SchemaBuilder", "SchemaType", "SinkRecord", "SourceRecord", "SourceRecordBatch",
        "Struct", "Time", "Timestamp", "TimestampType", "converter_config_def"
    ), "connectd.data"),
    **dict.fromkeys(("java_string",), "connectd.data._text"),
    **dict.fromkeys((
        "ConfigError", "ConnectdError", "ConnectException", "ConnectorError", "PluginError", "RetriableException"
    ), "connectd.errors"),
    **dict.fromkeys(("hookimpl",), "connectd.hookspecs"),
    **dict.fromkeys((
        "ConnectorClientConfigOverridePolicy", "ConnectorClientConfigRequest"
    ), "connectd.override_policy"),
    **dict.fromkeys(("Secret",), "connectd.secrets"),
    **dict.fromkeys(("Predicate", "Transformation"), "connectd.transforms.base"),
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib import metadata

        try:
            value: Any = metadata.version("connectd")
        except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
            value = "0.0.0+unknown"
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        try:  # a submodule, as `import connectd; connectd.errors` found it when this module imported it
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "CapacityProvider",
    "CaseInsensitiveValidString",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigProblem",
    "ConfigProvider",
    "ConnectException",
    "ConnectRecord",
    "ConnectdError",
    "Connector",
    "ConnectorClientConfigOverridePolicy",
    "ConnectorClientConfigRequest",
    "ConnectorContext",
    "ConnectorError",
    "ConnectorTransactionBoundaries",
    "Converter",
    "DataError",
    "Date",
    "Decimal",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "Field",
    "Header",
    "HeaderConverter",
    "Headers",
    "Importance",
    "NonEmptyString",
    "OffsetStorageReader",
    "OneOf",
    "PluginError",
    "Predicate",
    "ProviderUnusable",
    "Range",
    "RegexValid",
    "RetriableException",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "SchemaType",
    "Secret",
    "RecordMetadata",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceRecord",
    "SourceRecordBatch",
    "SourceTask",
    "SourceTaskContext",
    "SparkSinkTask",
    "SparkSourceTask",
    "Struct",
    "Task",
    "Time",
    "Timestamp",
    "TimestampType",
    "TopicName",
    "TopicPartition",
    "TransactionContext",
    "Transformation",
    "Type",
    "ValidList",
    "Validator",
    "__version__",
    "converter_config_def",
    "hookimpl",
    "java_string",
]
