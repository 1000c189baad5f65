"""connectd plugin: Kafka Connect's file connectors.

Registered under Kafka Connect's Java class names too, so a config written
for ``org.apache.kafka.connect.file.FileStreamSourceConnector`` works as it
is.
"""

from __future__ import annotations

from connectd import hookimpl

from connectd_file.connectors import FileStreamSinkConnector, FileStreamSourceConnector

__all__ = ["FileStreamSinkConnector", "FileStreamSourceConnector"]


@hookimpl
def register_connectors(register):
    register(
        FileStreamSourceConnector,
        aliases=("FileStreamSource", "FileStreamSourceConnector", "org.apache.kafka.connect.file.FileStreamSourceConnector"),
    )
    register(
        FileStreamSinkConnector,
        aliases=("FileStreamSink", "FileStreamSinkConnector", "org.apache.kafka.connect.file.FileStreamSinkConnector"),
    )
