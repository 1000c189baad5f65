"""The machine's PostgreSQL (127.0.0.1:5432, trust) and MariaDB (127.0.0.1:3306, root) as JDBC sink targets."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class Database:
    """One of the machine's database servers, and a way to look at its tables."""

    kind: str
    url: str
    user: str

    def connect(self) -> Any:
        if self.kind == "postgresql":
            import psycopg

            return psycopg.connect(host="127.0.0.1", port=5432, dbname="test", user=self.user, autocommit=True)
        import pymysql

        return pymysql.connect(host="127.0.0.1", port=3306, user=self.user, database="test", autocommit=True)

    def quote(self, name: str) -> str:
        return f'"{name}"' if self.kind == "postgresql" else f"`{name}`"

    def query(self, sql: str, *arguments: Any) -> list[tuple[Any, ...]]:
        connection = self.connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute(sql, arguments or None)
                return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
        finally:
            connection.close()

    def rows(self, table: str, order_by: str = "1") -> list[tuple[Any, ...]]:
        return self.query(f"SELECT * FROM {self.quote(table)} ORDER BY {order_by}")

    def columns(self, table: str) -> list[str]:
        return [row[0] for row in self.query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
            table)]


DATABASES = {
    "postgresql": Database("postgresql", "jdbc:postgresql://127.0.0.1:5432/test", "postgres"),
    "mariadb": Database("mariadb", "jdbc:mariadb://127.0.0.1:3306/test", "root"),
}


@pytest.fixture(params=sorted(DATABASES))
def database(request: pytest.FixtureRequest) -> Database:
    """Each database server in turn."""
    return DATABASES[request.param]


@pytest.fixture
def postgresql() -> Database:
    return DATABASES["postgresql"]


@pytest.fixture
def mariadb() -> Database:
    return DATABASES["mariadb"]


@pytest.fixture
def table(database: Database) -> Iterator[str]:
    """A table name of this test's own (it is the topic too); dropped afterwards."""
    name = f"jdbc_{uuid.uuid4().hex[:10]}"
    yield name
    database.query(f"DROP TABLE IF EXISTS {database.quote(name)}")
