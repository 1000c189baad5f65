"""connectd plugin: change data capture from MariaDB and MySQL, as Debezium's MySQL connector.

Registered under Debezium's class names too, so a config written for
``io.debezium.connector.mysql.MySqlConnector`` (or the MariaDB one) works as
it is, for the keys this connector knows (docs/connectors/mysql-cdc.md).
"""

from __future__ import annotations

from connectd import hookimpl

from connectd_mysql_cdc.connector import MySqlConnector
from connectd_mysql_cdc.unwrap import ExtractNewRecordState

__all__ = ["ExtractNewRecordState", "MySqlConnector"]


@hookimpl
def register_connectors(register):
    register(MySqlConnector, aliases=("MySqlConnector", "io.debezium.connector.mysql.MySqlConnector",
                                      "MariaDbConnector", "io.debezium.connector.mariadb.MariaDbConnector"))


@hookimpl
def register_transforms(register):
    register(ExtractNewRecordState, aliases=("ExtractNewRecordState", "io.debezium.transforms.ExtractNewRecordState"))
