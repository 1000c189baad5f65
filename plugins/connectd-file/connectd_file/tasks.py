"""FileStreamSource and FileStreamSink tasks.

Offsets use Kafka Connect's own keys — source partition ``{"filename": …}``,
offset ``{"position": <byte offset>}`` — so offsets stored by Kafka Connect's
FileStreamSource are picked up unchanged, and the other way round.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping

from connectd import Schema, SinkRecord, SinkTask, SourceRecord, SourceTask, TopicPartition

log = logging.getLogger(__name__)

# How long poll() waits for a file to grow before returning nothing, so a
# stopping task is never held up for long.
_IDLE_WAIT_S = 0.1


class FileStreamSourceTask(SourceTask):
    """Reads complete lines from a file, starting after the stored byte position.

    A line still being written (no newline yet) is left for a later poll. A
    file that shrank below the stored position was truncated, and one whose
    inode changed was replaced: both are read again from the start, and the
    task says so in the log.
    """

    def start(self, config: Mapping[str, str]) -> None:
        self.path = config["file"]
        self.topic = config["topic"]
        self.batch_size = int(config.get("batch.size", "2000"))
        self.partition = {"filename": self.path}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.position = int(stored.get("position", 0)) if stored else 0
        self._file = None
        self._inode: int | None = None
        self._buffer = b""

    def _open(self) -> bool:
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - kept open across polls
        except FileNotFoundError:
            return False
        stat = os.fstat(handle.fileno())
        if stat.st_size < self.position:
            log.warning("file_truncated: %s is %d bytes, shorter than the stored position %d; reading from the start",
                        self.path, stat.st_size, self.position)
            self.position = 0
        handle.seek(self.position)
        self._file, self._inode, self._buffer = handle, stat.st_ino, b""
        return True

    def _replaced_or_truncated(self) -> bool:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return False
        if stat.st_ino != self._inode:
            log.warning("file_replaced: %s is a new file; reading it from the start", self.path)
            return True
        if stat.st_size < self.position + len(self._buffer):
            log.warning("file_truncated: %s shrank to %d bytes; reading from the start", self.path, stat.st_size)
            return True
        return False

    def poll(self) -> list[SourceRecord] | None:
        if self._file is None and not self._open():
            time.sleep(_IDLE_WAIT_S)
            return None
        assert self._file is not None
        # self._buffer holds bytes read but not yet returned; it starts at self.position.
        if self._buffer.count(b"\n") < self.batch_size:
            self._buffer += self._file.read(1 << 20)
        if b"\n" not in self._buffer:
            if self._replaced_or_truncated():
                self._file.close()
                self._file, self.position = None, 0
            else:
                time.sleep(_IDLE_WAIT_S)
            return None
        records: list[SourceRecord] = []
        data, start = self._buffer, 0
        while len(records) < self.batch_size:
            end = data.find(b"\n", start)
            if end < 0:
                break
            line = data[start:end].removesuffix(b"\r")
            start = end + 1
            records.append(self._record(line, self.position + start))
        self.position += start
        self._buffer = data[start:]
        return records

    def _record(self, line: bytes, end_position: int) -> SourceRecord:
        return SourceRecord(
            topic=self.topic,
            kafka_partition=None,
            key_schema=None,
            key=None,
            value_schema=Schema.STRING,
            value=line.decode("utf-8", errors="replace"),
            timestamp=None,
            source_partition=self.partition,
            source_offset={"position": end_position},
        )

    def stop(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class FileStreamSinkTask(SinkTask):
    """Appends each record's value to a file as a line; :meth:`flush` fsyncs it."""

    def start(self, config: Mapping[str, str]) -> None:
        self.path = config["file"]
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open until stop()

    def put(self, records: list[SinkRecord]) -> None:
        self._file.writelines(f"{record.value}\n" for record in records)

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def stop(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
