"""connectd: a Kafka Connect worker in Python.

This module is the public API for plugin authors; everything not listed in
``__all__`` is internal and may change.
"""

from __future__ import annotations

from importlib import metadata as _metadata

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
from connectd.override_policy import (
    ConnectorClientConfigOverridePolicy,
    ConnectorClientConfigRequest,
)
from connectd.secrets import Secret
from connectd.transforms.base import Predicate, Transformation

try:
    __version__ = _metadata.version("connectd")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    __version__ = "0.0.0+unknown"

__all__ = [
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
    "Converter",
    "DataError",
    "Date",
    "Decimal",
    "ErrantRecordReporter",
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
    "Transformation",
    "Type",
    "ValidList",
    "Validator",
    "__version__",
    "converter_config_def",
    "hookimpl",
    "java_string",
]
