"""connectd plugin: a JDBC sink into PostgreSQL and MariaDB/MySQL.

Registered under Confluent's class name too, so a config written for
``io.confluent.connect.jdbc.JdbcSinkConnector`` works as it is (its
``connection.url`` names the database with a ``jdbc:`` URL, no JDBC driver
involved: psycopg and PyMySQL talk to the servers).
"""

from __future__ import annotations

from connectd import hookimpl

from connectd_jdbc.connector import JdbcSinkConnector

__all__ = ["JdbcSinkConnector"]


@hookimpl
def register_connectors(register):
    register(JdbcSinkConnector,
             aliases=("JdbcSink", "JdbcSinkConnector", "io.confluent.connect.jdbc.JdbcSinkConnector"))
