"""The JDBC sink's settings: Confluent's ``JdbcSinkConnector`` keys, parsed and checked together.

Only keys this connector acts on are declared; a Confluent key it does not
know (``table.types``, say) is an unknown key, warned about by every check.
"""

from __future__ import annotations

import urllib.parse
import zoneinfo
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
    Type,
    Validator,
)

__all__ = ["CONFIG_DEF", "Settings", "problems", "settings"]

POSTGRESQL, MYSQL = "PostgreSqlDatabaseDialect", "MySqlDatabaseDialect"
_SCHEMES = {"postgresql": POSTGRESQL, "postgres": POSTGRESQL, "mysql": MYSQL, "mariadb": MYSQL}
_DEFAULT_PORTS = {POSTGRESQL: 5432, MYSQL: 3306}
KAFKA_PK_FIELDS = ("__connect_topic", "__connect_partition", "__connect_offset")
#: The names of UTC (a MariaDB without time zone tables knows it as +00:00 only).
UTC_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu",
                       "Etc/GMT", "GMT", "Etc/GMT0", "GMT0", "Etc/Greenwich", "Greenwich"})


class TimeZone(Validator):
    """An IANA time zone name (``UTC``, ``Europe/Paris``)."""

    def __call__(self, value: Any) -> None:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError("expected an IANA time zone name such as UTC or Europe/Paris") from None

    def describe(self) -> str:
        return "an IANA time zone name"


_CONNECTION, _WRITES, _DDL, _RETRIES = "Connection", "Writes", "Data mapping", "Retries"

CONFIG_DEF = ConfigDef([
    ConfigKey("connection.url", Type.STRING,
              "The database, as a JDBC URL: jdbc:postgresql://host[:port]/database, jdbc:mysql://… or "
              "jdbc:mariadb://…. user and password may be URL parameters; for PostgreSQL, other parameters are "
              "libpq's connection parameters (sslmode, connect_timeout, …) or pgJDBC's common ones (ssl, "
              "ApplicationName, connectTimeout, currentSchema, …); for MariaDB/MySQL, Connector/J's that ask for "
              "what PyMySQL does (useSSL=false, connectTimeout, serverTimezone, …). Others are refused.",
              importance=Importance.HIGH, validator=NonEmptyString(), group=_CONNECTION),
    ConfigKey("connection.user", Type.STRING, "The database user (else the URL's user parameter).", default=None,
              importance=Importance.HIGH, group=_CONNECTION),
    ConfigKey("connection.password", Type.PASSWORD, "The user's password (else the URL's password parameter).",
              default=None, importance=Importance.HIGH, group=_CONNECTION),
    ConfigKey("connection.attempts", Type.INT, "How many times to try to connect before the attempt counts as a "
              "failed write (retried per max.retries).", default=3, importance=Importance.LOW,
              validator=Range.at_least(1), group=_CONNECTION),
    ConfigKey("connection.backoff.ms", Type.LONG, "Milliseconds between two connection attempts.", default=10000,
              importance=Importance.LOW, validator=Range.at_least(0), group=_CONNECTION),
    ConfigKey("dialect.name", Type.STRING, "The database's SQL dialect; empty: from connection.url's scheme.",
              default="", importance=Importance.LOW, validator=OneOf("", POSTGRESQL, MYSQL), group=_CONNECTION),
    ConfigKey("insert.mode", Type.STRING,
              "insert: plain inserts (PostgreSQL: COPY); upsert: insert or replace by the primary key "
              "(ON CONFLICT … DO UPDATE, ON DUPLICATE KEY UPDATE); update: update rows by the primary key, never "
              "insert.", default="insert", importance=Importance.HIGH,
              validator=CaseInsensitiveValidString("insert", "upsert", "update"), group=_WRITES),
    ConfigKey("batch.size", Type.INT, "Most rows in one statement (a COPY, a multi-row INSERT or one round of "
              "executemany); all rows of one put() go in one transaction whatever this is.", default=3000,
              importance=Importance.MEDIUM, validator=Range.at_least(1), group=_WRITES),
    ConfigKey("delete.enabled", Type.BOOLEAN, "Delete the row of a record with a null value (a tombstone), by "
              "the record key; needs pk.mode=record_key.", default=False, importance=Importance.MEDIUM,
              group=_WRITES),
    ConfigKey("table.name.format", Type.STRING, "The table each record goes to; ${topic} is the record's topic. "
              "schema.table names a schema (PostgreSQL) or database (MariaDB).", default="${topic}",
              importance=Importance.MEDIUM, validator=NonEmptyString(), group=_WRITES),
    ConfigKey("pk.mode", Type.STRING,
              "Where the primary key comes from. none: no key; kafka: the record's topic, partition and offset; "
              "record_key: the record key (a primitive or a struct); record_value: fields of the record value.",
              default="none", importance=Importance.HIGH,
              validator=CaseInsensitiveValidString("none", "kafka", "record_key", "record_value"), group=_DDL),
    ConfigKey("pk.fields", Type.LIST,
              "The primary key's column names. kafka: three names for topic, partition and offset (default "
              "__connect_topic,__connect_partition,__connect_offset); record_key: the key struct's fields to use "
              "(default all), or the column name of a primitive key (required then); record_value: the value's "
              "fields (default all). Not allowed with pk.mode=none.", default="", importance=Importance.MEDIUM,
              group=_DDL),
    ConfigKey("fields.whitelist", Type.LIST, "The value fields written as columns besides the key; empty: all.",
              default="", importance=Importance.MEDIUM, group=_DDL),
    ConfigKey("auto.create", Type.BOOLEAN, "Create a missing table (CREATE TABLE) from the record's schema, with "
              "the primary key of pk.mode.", default=False, importance=Importance.MEDIUM, group=_DDL),
    ConfigKey("auto.evolve", Type.BOOLEAN, "Add a column (ALTER TABLE … ADD) for a record field the table lacks; "
              "the field must be optional or have a default. Columns are never dropped or changed.",
              default=False, importance=Importance.MEDIUM, group=_DDL),
    ConfigKey("quote.sql.identifiers", Type.STRING, "always: quote table and column names in SQL (their case is "
              "kept); never: write them bare (PostgreSQL folds them to lower case).", default="always",
              importance=Importance.LOW, validator=CaseInsensitiveValidString("always", "never"), group=_DDL),
    ConfigKey("db.timezone", Type.STRING, "The time zone of the connector's database sessions: columns without a "
              "zone (TIMESTAMP, DATETIME) get Timestamp fields as wall-clock times there; zoned columns get the "
              "instants.", default="UTC", importance=Importance.MEDIUM,
              validator=TimeZone(), group=_DDL),
    ConfigKey("max.retries", Type.INT, "How many times a put() that failed for a connection, deadlock or lock "
              "timeout is tried again before the task fails; other database errors are not retried.", default=10,
              importance=Importance.MEDIUM, validator=Range.at_least(0), group=_RETRIES),
    ConfigKey("retry.backoff.ms", Type.INT, "Milliseconds before such a put() is tried again.", default=3000,
              importance=Importance.MEDIUM, validator=Range.at_least(0), group=_RETRIES),
])


@dataclass(frozen=True)
class Connection:
    """Where the database is: the dialect and the driver's connection arguments (password kept a Secret)."""

    dialect: str
    host: str
    port: int
    database: str
    user: str | None
    password: Secret | None
    options: dict[str, str]


@dataclass(frozen=True)
class Settings:
    """The parsed settings of one connector."""

    connection: Connection
    connection_attempts: int
    connection_backoff_s: float
    insert_mode: str
    batch_size: int
    delete_enabled: bool
    table_name_format: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    fields_whitelist: frozenset[str]
    auto_create: bool
    auto_evolve: bool
    quote_identifiers: bool
    db_timezone: zoneinfo.ZoneInfo
    max_retries: int
    retry_backoff_ms: int


def _connection(url: str, dialect_name: str, user: str | None, password: Secret | None, zone: str) -> Connection:
    """*url* (``jdbc:…``) read; ``ValueError("expected …")`` naming what is wrong."""
    if not url.startswith("jdbc:"):
        raise ValueError("expected a JDBC URL starting with jdbc: (jdbc:postgresql://host:5432/database)")
    parts = urllib.parse.urlsplit(url[len("jdbc:"):])
    dialect = dialect_name or _SCHEMES.get(parts.scheme, "")
    if not dialect:
        raise ValueError(f"expected jdbc:postgresql:, jdbc:mysql: or jdbc:mariadb:, not jdbc:{parts.scheme}: "
                         "(or set dialect.name)")
    database = parts.path.lstrip("/")
    if not parts.hostname or not database or "/" in database:
        raise ValueError("expected a host and a database: jdbc:<scheme>://host[:port]/database")
    try:
        port = parts.port or _DEFAULT_PORTS[dialect]
    except ValueError as error:
        raise ValueError(f"expected a port number: {error}") from None
    options = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    url_user = options.pop("user", None)
    user = user or url_user or parts.username
    from_url = options.pop("password", None) or parts.password
    password = password or (Secret(from_url) if from_url else None)
    options = _postgresql_options(options) if dialect == POSTGRESQL else _mysql_options(options, zone)
    return Connection(dialect, parts.hostname, port, database, user, password, options)


# pgJDBC's URL parameters that Confluent's users write, as libpq keywords (values the same).
_PGJDBC_KEYWORDS = {"ApplicationName": "application_name", "connectTimeout": "connect_timeout",
                    "loginTimeout": "connect_timeout"}
# pgJDBC's batching hint, and strings sent untyped (cast by the server): what psycopg does anyway.
_PGJDBC_WHAT_PSYCOPG_DOES = {"reWriteBatchedInserts": {"true", "false"}, "stringtype": {"unspecified"}}


def _postgresql_options(options: dict[str, str]) -> dict[str, str]:
    """The URL's parameters as libpq keywords: pgJDBC's common ones translated, the rest libpq's own."""
    import psycopg.conninfo

    libpq: dict[str, str] = {}
    schema = None
    for name, value in options.items():
        if name in _PGJDBC_WHAT_PSYCOPG_DOES:
            if value not in _PGJDBC_WHAT_PSYCOPG_DOES[name]:
                raise ValueError(f"expected {name}={' or '.join(sorted(_PGJDBC_WHAT_PSYCOPG_DOES[name]))}, "
                                 f"not {value!r}")
        elif name == "ssl":  # pgJDBC: ssl=true verifies the server fully unless sslmode says otherwise
            if value.lower() not in ("true", "false"):
                raise ValueError(f"expected ssl=true or ssl=false, not {value!r}")
            libpq.setdefault("sslmode", "verify-full" if value.lower() == "true" else "disable")
        elif name == "currentSchema":
            schema = value
        else:
            keyword = _PGJDBC_KEYWORDS.get(name, name)
            if keyword == "connect_timeout" and name != keyword and "connect_timeout" in libpq:
                continue  # connectTimeout wins over loginTimeout, as in pgJDBC
            libpq[keyword] = value
    if "sslmode" in options:
        libpq["sslmode"] = options["sslmode"]
    if schema is not None:
        libpq["options"] = f"{libpq.get('options', '')} -c search_path={schema}".strip()
    try:
        psycopg.conninfo.make_conninfo("", **libpq)
    except psycopg.ProgrammingError as error:
        raise ValueError(f"{error}: expected libpq's connection parameters (sslmode, sslrootcert, "
                         "connect_timeout, application_name, options, …) or pgJDBC's ssl, ApplicationName, "
                         "connectTimeout, loginTimeout, currentSchema, reWriteBatchedInserts, "
                         "stringtype=unspecified") from None
    return libpq


# Connector/J and MariaDB Connector/J parameters that ask for what PyMySQL does here: no TLS, utf8mb4,
# multi-row inserts, the server's RSA key fetched for caching_sha2_password.
_MYSQL_WHAT_PYMYSQL_DOES = {"useSSL": {"false"}, "sslMode": {"DISABLED", "disable"}, "useUnicode": {"true"},
                            "characterEncoding": {"utf8", "UTF-8", "utf-8", "UTF8", "utf8mb4"},
                            "rewriteBatchedStatements": {"true", "false"}, "allowPublicKeyRetrieval": {"true"}}


def _mysql_options(options: dict[str, str], zone: str) -> dict[str, str]:
    """PyMySQL's connection arguments from the URL's parameters (connectTimeout); the rest must ask for
    what PyMySQL does anyway, or are refused."""
    arguments = {}
    for name, value in options.items():
        if name == "serverTimezone":  # the session's zone, which is db.timezone's
            if value != zone and {value, zone} - UTC_NAMES:
                raise ValueError(f"serverTimezone={value} differs from db.timezone={zone}: the sessions are set to "
                                 "db.timezone; set that instead")
        elif name == "connectTimeout":  # milliseconds
            try:
                milliseconds = int(value)
            except ValueError:
                raise ValueError(f"expected connectTimeout in milliseconds, not {value!r}") from None
            # PyMySQL counts whole seconds, at most a year; Connector/J's 0 is no limit
            arguments["connect_timeout"] = str(min(max(1, milliseconds // 1000), 31536000) if milliseconds > 0
                                               else 31536000)
        elif name in _MYSQL_WHAT_PYMYSQL_DOES:
            if value not in _MYSQL_WHAT_PYMYSQL_DOES[name]:
                hint = " (TLS to MariaDB/MySQL is not supported yet)" if name in ("useSSL", "sslMode") else ""
                raise ValueError(f"expected {name}={' or '.join(sorted(_MYSQL_WHAT_PYMYSQL_DOES[name]))}, not "
                                 f"{value!r}{hint}")
        else:
            raise ValueError(f"not supported: {name} (MariaDB/MySQL URLs may carry user, password, connectTimeout, "
                             f"serverTimezone, and {', '.join(sorted(_MYSQL_WHAT_PYMYSQL_DOES))} set as PyMySQL "
                             "works)")
    return arguments


def problems(config: Mapping[str, Any]) -> list[ConfigProblem]:
    """What is wrong across keys (each key alone is checked by :data:`CONFIG_DEF`)."""
    try:
        parsed = CONFIG_DEF.parse(config)
    except ConfigError:
        return []  # the per-key problems are reported already
    found = []

    def problem(key: str, message: str) -> None:
        found.append(ConfigProblem(None, key, message, str(config.get(key, ""))))

    try:
        _connection(parsed["connection.url"], parsed["dialect.name"], None, None, parsed["db.timezone"])
    except ValueError as error:
        found.append(ConfigProblem(None, "connection.url", str(error)))  # the URL may hold a password
    pk_mode, pk_fields = parsed["pk.mode"].lower(), parsed["pk.fields"]
    if parsed["delete.enabled"] and pk_mode != "record_key":
        problem("delete.enabled", "deletes find rows by the record key: expected pk.mode=record_key")
    if parsed["insert.mode"].lower() in ("upsert", "update") and pk_mode == "none":
        problem("insert.mode", f"{parsed['insert.mode']} finds rows by the primary key: expected a pk.mode "
                "other than none")
    if pk_mode == "none" and pk_fields:
        problem("pk.fields", "names primary key columns, and pk.mode=none has none: set pk.mode or remove it")
    if pk_mode == "kafka" and pk_fields and len(pk_fields) != 3:
        problem("pk.fields", "expected three names (topic, partition, offset) with pk.mode=kafka")
    return found


def settings(config: Mapping[str, Any]) -> Settings:
    """*config* parsed; :class:`ConfigError` naming every problem."""
    parsed = CONFIG_DEF.parse(config)
    found = problems(config)
    if found:
        raise ConfigError(found)
    pk_mode = parsed["pk.mode"].lower()
    pk_fields = tuple(parsed["pk.fields"]) or (KAFKA_PK_FIELDS if pk_mode == "kafka" else ())
    return Settings(
        connection=_connection(parsed["connection.url"], parsed["dialect.name"], parsed["connection.user"],
                               parsed["connection.password"], parsed["db.timezone"]),
        connection_attempts=parsed["connection.attempts"],
        connection_backoff_s=parsed["connection.backoff.ms"] / 1000,
        insert_mode=parsed["insert.mode"].lower(),
        batch_size=parsed["batch.size"],
        delete_enabled=parsed["delete.enabled"],
        table_name_format=parsed["table.name.format"],
        pk_mode=pk_mode,
        pk_fields=pk_fields,
        fields_whitelist=frozenset(parsed["fields.whitelist"]),
        auto_create=parsed["auto.create"],
        auto_evolve=parsed["auto.evolve"],
        quote_identifiers=parsed["quote.sql.identifiers"].lower() == "always",
        db_timezone=zoneinfo.ZoneInfo(parsed["db.timezone"]),
        max_retries=parsed["max.retries"],
        retry_backoff_ms=parsed["retry.backoff.ms"],
    )
