"""connectd plugin: an exactly-once Delta Lake sink (docs/connectors/delta-sink.md)."""

from __future__ import annotations

from connectd import hookimpl

from connectd_delta.connector import DeltaSinkConnector

__all__ = ["DeltaSinkConnector"]


@hookimpl
def register_connectors(register):
    register(DeltaSinkConnector, aliases=("DeltaSink", "DeltaSinkConnector"))
