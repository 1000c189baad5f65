"""Connect's data model and converters: schemas, structs, records, headers, converters.

Pure logic, no I/O. Everything here is wire-compatible with Apache Kafka
Connect: records written by connectd read back in Kafka Connect and the
other way round.

Converters: ``converter_base`` holds the interfaces (Kafka's ``Converter`` and
``HeaderConverter``), ``converters`` the simple built-ins (its path is part of their plugin
names, ``connectd.data.converters.StringConverter``, which configs may use: it stays),
``json_converter`` the ``JsonConverter``. Which of them a task uses is the runtime's choice
(:mod:`connectd.runtime.converter_choice`).
"""

from connectd.data.converter_base import Converter, HeaderConverter, converter_config_def
from connectd.data.converters import (
    BUILTIN_CONVERTERS,
    BooleanConverter,
    ByteArrayConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
    SimpleHeaderConverter,
    StringConverter,
)
from connectd.data.headers import Header, Headers
from connectd.data.json_converter import JsonConverter
from connectd.data.logical import Date, Decimal, Time, Timestamp
from connectd.data.records import ConnectRecord, SinkRecord, SourceRecord, SourceRecordBatch, TimestampType
from connectd.data.schema import Field, Schema, SchemaAndValue, SchemaType
from connectd.data.schema_builder import SchemaBuilder
from connectd.data.schema_projector import SchemaProjector
from connectd.data.struct import Struct
from connectd.data.values import (
    convert_to_boolean,
    convert_to_byte,
    convert_to_date,
    convert_to_decimal,
    convert_to_double,
    convert_to_float,
    convert_to_integer,
    convert_to_list,
    convert_to_long,
    convert_to_map,
    convert_to_short,
    convert_to_string,
    convert_to_struct,
    convert_to_time,
    convert_to_timestamp,
    infer_schema,
    parse_string,
)
from connectd.errors import DataError, SchemaProjectorException

__all__ = [
    "BUILTIN_CONVERTERS",
    "BooleanConverter",
    "ByteArrayConverter",
    "ConnectRecord",
    "Converter",
    "DataError",
    "Date",
    "Decimal",
    "DoubleConverter",
    "Field",
    "FloatConverter",
    "Header",
    "HeaderConverter",
    "Headers",
    "IntegerConverter",
    "JsonConverter",
    "LongConverter",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "SchemaProjector",
    "SchemaProjectorException",
    "SchemaType",
    "ShortConverter",
    "SimpleHeaderConverter",
    "SinkRecord",
    "SourceRecord",
    "SourceRecordBatch",
    "StringConverter",
    "Struct",
    "Time",
    "Timestamp",
    "TimestampType",
    "convert_to_boolean",
    "convert_to_byte",
    "convert_to_date",
    "convert_to_decimal",
    "convert_to_double",
    "convert_to_float",
    "convert_to_integer",
    "convert_to_list",
    "convert_to_long",
    "convert_to_map",
    "convert_to_short",
    "convert_to_string",
    "convert_to_struct",
    "convert_to_time",
    "convert_to_timestamp",
    "converter_config_def",
    "infer_schema",
    "parse_string",
]
