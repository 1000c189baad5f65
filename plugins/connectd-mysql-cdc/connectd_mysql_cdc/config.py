"""The CDC source's settings: Debezium's MySQL connector keys that this connector acts on.

Debezium keys not declared here (``schema.history.internal.*``,
``include.schema.changes``, …) are unknown keys: every check warns about them
and they do nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectd import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigProblem,
    Importance,
    NonEmptyString,
    OneOf,
    Range,
    Secret,
    TopicName,
    Type,
    Validator,
)

__all__ = ["CONFIG_DEF", "Settings", "problems", "settings"]

SNAPSHOT_MODES = ("initial", "never", "when_needed", "no_data", "schema_only")


class Patterns(Validator):
    """A comma-separated list of regular expressions."""

    def __call__(self, value: Any) -> None:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"expected regular expressions; {pattern!r}: {error}") from None

    def describe(self) -> str:
        return "regular expressions"


_CONNECTION, _FILTERS, _EVENTS = "Connection", "Filters", "Events"

CONFIG_DEF = ConfigDef([
    ConfigKey("database.hostname", Type.STRING, "The MariaDB or MySQL server's host.", importance=Importance.HIGH,
              validator=NonEmptyString(), group=_CONNECTION),
    ConfigKey("database.port", Type.INT, "The server's port.", default=3306, importance=Importance.HIGH,
              validator=Range.between(1, 65535), group=_CONNECTION),
    ConfigKey("database.user", Type.STRING, "The user: it needs SELECT, REPLICATION SLAVE and REPLICATION CLIENT "
              "(and RELOAD on MySQL, for the snapshot's lock).", importance=Importance.HIGH,
              validator=NonEmptyString(), group=_CONNECTION),
    ConfigKey("database.password", Type.PASSWORD, "The user's password.", default=None, importance=Importance.HIGH,
              group=_CONNECTION),
    ConfigKey("database.server.id", Type.LONG, "The replica id this connector uses to read the binlog: unique "
              "among the server's replicas.", importance=Importance.HIGH, validator=Range.between(1, 2**32 - 1),
              group=_CONNECTION),
    ConfigKey("topic.prefix", Type.STRING, "Names the server: topics are <topic.prefix>.<database>.<table>, and the "
              "offsets' source partition is {\"server\": <topic.prefix>}.", importance=Importance.HIGH,
              validator=TopicName(), group=_CONNECTION),
    ConfigKey("database.include.list", Type.LIST, "Regular expressions of the databases to capture (each matching "
              "a whole name); empty: every database but the system ones.", default="",
              importance=Importance.MEDIUM, validator=Patterns(), group=_FILTERS),
    ConfigKey("table.include.list", Type.LIST, "Regular expressions of the tables to capture, as database.table "
              "(each matching a whole name); empty: every table of the captured databases.", default="",
              importance=Importance.MEDIUM, validator=Patterns(), group=_FILTERS),
    ConfigKey("database.exclude.list", Type.LIST, "Regular expressions of databases not to capture; not with "
              "database.include.list.", default="", importance=Importance.MEDIUM, validator=Patterns(),
              group=_FILTERS),
    ConfigKey("table.exclude.list", Type.LIST, "Regular expressions of tables (database.table) not to capture; "
              "not with table.include.list.", default="", importance=Importance.MEDIUM, validator=Patterns(),
              group=_FILTERS),
    ConfigKey("column.include.list", Type.LIST, "Regular expressions of the columns to capture, as "
              "database.table.column; empty: all. Primary key columns are always captured.", default="",
              importance=Importance.MEDIUM, validator=Patterns(), group=_FILTERS),
    ConfigKey("column.exclude.list", Type.LIST, "Regular expressions of columns (database.table.column) left out "
              "of the events, in the snapshot and the binlog alike; not with column.include.list. Primary key "
              "columns are always captured.", default="", importance=Importance.MEDIUM, validator=Patterns(),
              group=_FILTERS),
    ConfigKey("snapshot.mode", Type.STRING,
              "initial: without stored offsets, read the tables (op r) and then the binlog from the snapshot's "
              "position; never: no snapshot, the binlog from its first file; when_needed: a snapshot also when "
              "the stored position is no longer in the server's binlogs; no_data (or schema_only): no snapshot, "
              "the binlog from the current position.", default="initial", importance=Importance.MEDIUM,
              validator=CaseInsensitiveValidString(*SNAPSHOT_MODES), group=_EVENTS),
    ConfigKey("snapshot.fetch.size", Type.INT, "Rows read at a time from a table during the snapshot.",
              default=10000, importance=Importance.LOW, validator=Range.at_least(1), group=_EVENTS),
    ConfigKey("tombstones.on.delete", Type.BOOLEAN, "Follow each delete event with a tombstone (the key, a null "
              "value), so compacted topics forget the row.", default=True, importance=Importance.MEDIUM,
              group=_EVENTS),
    ConfigKey("decimal.handling.mode", Type.STRING, "DECIMAL columns as precise: Connect Decimal; double: "
              "float64; string: their text.", default="precise", importance=Importance.MEDIUM,
              validator=CaseInsensitiveValidString("precise", "double", "string"), group=_EVENTS),
    ConfigKey("bigint.unsigned.handling.mode", Type.STRING, "BIGINT UNSIGNED columns as long: int64, values "
              "above 2^63-1 wrapped to negative ones (value - 2^64), as Debezium does; precise: Connect Decimal "
              "of scale 0, every value exact.", default="long", importance=Importance.MEDIUM,
              validator=CaseInsensitiveValidString("long", "precise"), group=_EVENTS),
    ConfigKey("time.precision.mode", Type.STRING, "connect: DATE, TIME, DATETIME and TIMESTAMP as Connect's Date, "
              "Time and Timestamp logical types (millisecond precision). Debezium's other modes (its default is "
              "adaptive_time_microseconds) are not supported yet.", default="connect",
              importance=Importance.MEDIUM, validator=OneOf("connect"), group=_EVENTS),
    ConfigKey("max.batch.size", Type.INT, "Most change events one poll returns.", default=2048,
              importance=Importance.LOW, validator=Range.at_least(1), group=_EVENTS),
    ConfigKey("poll.interval.ms", Type.LONG, "How long a poll waits for new binlog events before it returns none "
              "(the server's heartbeat period).", default=500, importance=Importance.LOW,
              validator=Range.between(10, 60000), group=_EVENTS),
])


@dataclass(frozen=True)
class Settings:
    host: str
    port: int
    user: str
    password: Secret | None
    server_id: int
    prefix: str
    databases: tuple[re.Pattern[str], ...]
    tables: tuple[re.Pattern[str], ...]
    databases_out: tuple[re.Pattern[str], ...]
    tables_out: tuple[re.Pattern[str], ...]
    columns_in: tuple[re.Pattern[str], ...]
    columns_out: tuple[re.Pattern[str], ...]
    snapshot_mode: str
    fetch_size: int
    tombstones: bool
    decimal_mode: str
    bigint_unsigned_mode: str
    max_batch: int
    poll_interval_s: float

    def connection(self) -> dict[str, Any]:
        """PyMySQL's connection arguments."""
        return {"host": self.host, "port": self.port, "user": self.user,
                "password": self.password.value() if self.password is not None else ""}

    def captures(self, database: str, table: str | None = None) -> bool:
        """Whether *database* (and *table* of it) is captured."""
        if database.lower() in ("mysql", "information_schema", "performance_schema", "sys"):
            return False
        if self.databases and not any(p.fullmatch(database) for p in self.databases):
            return False
        if any(p.fullmatch(database) for p in self.databases_out):
            return False
        if table is None:
            return True
        name = f"{database}.{table}"
        if self.tables and not any(p.fullmatch(name) for p in self.tables):
            return False
        return not any(p.fullmatch(name) for p in self.tables_out)

    def keeps_column(self, database: str, table: str, column: str) -> bool:
        """Whether *column* is in the events (a primary key column always is: the caller sees to that)."""
        name = f"{database}.{table}.{column}"
        if self.columns_in and not any(p.fullmatch(name) for p in self.columns_in):
            return False
        return not any(p.fullmatch(name) for p in self.columns_out)


def problems(config: Mapping[str, Any]) -> list[ConfigProblem]:
    """Include and exclude lists of the same things set together (Debezium refuses them too)."""
    found = []
    for kind in ("database", "table", "column"):
        if config.get(f"{kind}.include.list") and config.get(f"{kind}.exclude.list"):
            found.append(ConfigProblem(None, f"{kind}.exclude.list",
                                       f"cannot be used with {kind}.include.list: set one of them"))
    return found


def settings(config: Mapping[str, Any]) -> Settings:
    parsed = CONFIG_DEF.parse(config)
    found = problems(config)
    if found:
        raise ConfigError(found)
    patterns = {key: tuple(re.compile(p) for p in parsed[key]) for key in (
        "database.include.list", "table.include.list", "database.exclude.list", "table.exclude.list",
        "column.include.list", "column.exclude.list")}
    mode = parsed["snapshot.mode"].lower()
    return Settings(
        host=parsed["database.hostname"], port=parsed["database.port"], user=parsed["database.user"],
        password=parsed["database.password"], server_id=parsed["database.server.id"], prefix=parsed["topic.prefix"],
        databases=patterns["database.include.list"], tables=patterns["table.include.list"],
        databases_out=patterns["database.exclude.list"], tables_out=patterns["table.exclude.list"],
        columns_in=patterns["column.include.list"], columns_out=patterns["column.exclude.list"],
        snapshot_mode="no_data" if mode == "schema_only" else mode, fetch_size=parsed["snapshot.fetch.size"],
        tombstones=parsed["tombstones.on.delete"], decimal_mode=parsed["decimal.handling.mode"].lower(),
        bigint_unsigned_mode=parsed["bigint.unsigned.handling.mode"].lower(),
        max_batch=parsed["max.batch.size"], poll_interval_s=parsed["poll.interval.ms"] / 1000,
    )
