"""connectd plugin: a data generator for demos and benchmarks.

Takes the settings of Confluent's kafka-connect-datagen (``kafka.topic``,
``quickstart``, ``max.interval``, ``iterations``) and answers to its class
name, so its example configs work.
"""

from __future__ import annotations

from connectd import hookimpl

from connectd_datagen.connector import DatagenConnector

__all__ = ["DatagenConnector"]


@hookimpl
def register_connectors(register):
    register(DatagenConnector, aliases=("Datagen", "DatagenConnector", "io.confluent.kafka.connect.datagen.DatagenConnector"))
