"""The Delta sink's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import os

from connectd import CaseInsensitiveValidString, ConfigDef, ConfigKey, Importance, Type, Validator

__all__ = ["CONFIG_DEF", "Settings", "settings"]

STORAGE_PREFIX = "storage."


class TableUri(Validator):
    """An absolute directory or a URI: the worker and every executor must find the same table."""

    def __call__(self, value: str) -> None:
        if "://" not in value and not os.path.isabs(value):
            raise ValueError("expected an absolute path or a URI (file://, s3://, …): a relative path would "
                             "name another directory in each process that writes")

    def describe(self) -> str:
        return "an absolute path or a URI"

CONFIG_DEF = ConfigDef([
    ConfigKey("table.uri", Type.STRING, "The Delta table: an absolute directory or a URI (file://, s3://, gs://, az://, "
              "abfss://); ${topic} in it makes one table per topic.", importance=Importance.HIGH,
              validator=TableUri()),
    ConfigKey("value.format", Type.STRING, "How record values become columns. json: a JSON object per record, "
              "its fields the columns (with JsonConverter's schema envelope, {\"schema\": …, \"payload\": …}, the "
              "schema gives the types); string: one column value, the value as UTF-8 text; bytes: one column "
              "value, the bytes.", default="json", importance=Importance.HIGH,
              validator=CaseInsensitiveValidString("json", "string", "bytes")),
    ConfigKey("partition.by", Type.LIST, "Columns to partition the table by when the sink creates it. An existing "
              "table keeps its own partition columns; a value that differs from them fails the task.",
              default="", importance=Importance.MEDIUM),
    ConfigKey("kafka.columns", Type.BOOLEAN, "Add the columns _kafka_topic, _kafka_partition, _kafka_offset and "
              "_kafka_timestamp (ms) to every row.", default=True, importance=Importance.MEDIUM),
], prefixes={STORAGE_PREFIX: "passed to delta-rs as storage options, without the prefix "
             "(storage.AWS_REGION=eu-west-1, storage.AZURE_STORAGE_ACCOUNT_NAME=…)"})


@dataclass(frozen=True)
class Settings:
    connector: str
    table_uri: str
    value_format: str
    partition_by: tuple[str, ...]
    kafka_columns: bool
    storage_options: dict[str, str]

    def table_for(self, topic: str) -> str:
        return self.table_uri.replace("${topic}", topic)


def settings(config: Mapping[str, Any]) -> Settings:
    parsed = CONFIG_DEF.parse(config)
    return Settings(
        connector=str(config.get("name", "")), table_uri=parsed["table.uri"],
        value_format=parsed["value.format"].lower(), partition_by=tuple(parsed["partition.by"]),
        kafka_columns=parsed["kafka.columns"],
        storage_options={key[len(STORAGE_PREFIX):]: str(value) for key, value in config.items()
                         if key.startswith(STORAGE_PREFIX)})
