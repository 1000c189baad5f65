"""FileStreamSource and FileStreamSink tasks.

Offsets use Kafka Connect's own keys — source partition ``{"filename": …}``,
offset ``{"position": <byte offset>}`` — so offsets stored by Kafka Connect's
FileStreamSource are picked up unchanged, and the other way round. (Kafka's
task counts the characters it decoded where it means bytes, so for a file
with non-ASCII text its positions run short of the bytes; connectd counts
bytes, which is what both seek to on restart.)
"""

from __future__ import annotations

import logging
import os
import select
import sys
import time
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any

from connectd import (
    ConnectException,
    Schema,
    SinkRecord,
    SinkTask,
    SourceRecord,
    SourceRecordBatch,
    SourceTask,
    TopicPartition,
    java_string,
)

log = logging.getLogger(__name__)

# How long poll() waits for a file to grow before returning nothing, so a
# stopping task is never held up for long.
_IDLE_WAIT_S = 0.1
_READ_SIZE = 1 << 20


def _lines(data: bytes, start: int, limit: int) -> list[tuple[int, int]]:
    """Up to *limit* lines of *data* from *start*, by Kafka's rule: a line ends at ``\\n``, ``\\r\\n``
    or a lone ``\\r``.

    :returns: (end of the line, start of the next) for each complete line — a line is not complete
        while the data ends in ``\\r``, which may be the first half of ``\\r\\n``.
    """
    found: list[tuple[int, int]] = []
    carriage = data.find(b"\r", start)  # the next \r, looked for again only once passed: no rescans
    size = len(data)
    while len(found) < limit:
        newline = data.find(b"\n", start)
        if carriage < 0 or 0 <= newline < carriage:
            if newline < 0:
                break
            found.append((newline, newline + 1))
            start = newline + 1
            continue
        if carriage + 1 >= size:
            break
        start = carriage + (2 if data[carriage + 1] == 0x0A else 1)
        found.append((carriage, start))
        carriage = data.find(b"\r", start)
    return found


class _Positions(Sequence[dict[str, int]]):
    """The offsets of a poll's lines (bytes, or ASCII text: a byte a character),
    ``{"position": <byte after the line>}`` each, made when read: the worker reads the last one
    only, unless it makes the records (transforms, ``commit_record``)."""

    def __init__(self, start: int, lines: list[bytes] | list[str]) -> None:
        self._start, self._lines = start, lines
        self._ends: list[int] | None = None

    def __len__(self) -> int:
        return len(self._lines)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if self._ends is None:
            if index == -1 or index == len(self._lines) - 1:  # the batch's offset: every line and its end
                return {"position": self._start + sum(map(len, self._lines)) + len(self._lines)}
            self._ends = [self._start + total + count for count, total in
                          enumerate(accumulate(map(len, self._lines)), start=1)]
        return {"position": self._ends[index]}


class FileStreamSourceTask(SourceTask):
    """Reads complete lines from a file, starting after the stored byte position.

    A line still being written (no line end yet) is left for a later poll.
    With ``file`` unset it reads standard input, without offsets, as Kafka's
    does. Kafka's task goes on reading the file it opened whatever happens to
    the path; this one also notices a file that shrank below the position
    (truncated) or whose inode changed (replaced) and reads it again from the
    start, saying so in the log.
    """

    def start(self, config: Mapping[str, str]) -> None:
        self.path = config.get("file") or None
        self.topic = config["topic"]
        self.batch_size = int(config.get("batch.size", "2000"))
        self.partition = {"filename": self.path}
        self.position: int | None = None
        self._file = None
        self._inode: int | None = None
        self._buffer = b""
        self._pending: list[str] = []
        self._said_missing = False
        if self.path is None:
            # Kafka tracks no offsets for stdin: its records carry {"position": null}.
            self._stdin = sys.stdin.buffer.fileno()
            log.info("file_source_stdin: %s reads lines from standard input", self.topic)

    def _stored_position(self) -> int:
        stored = self.context.offset_storage_reader.offset(self.partition)
        position = stored.get("position") if stored else None
        if position is not None and (not isinstance(position, int) or isinstance(position, bool)):
            raise ConnectException("Offset position is the incorrect type")
        return position or 0

    def _open(self) -> bool:
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - kept open across polls
        except FileNotFoundError:
            if not self._said_missing:
                log.warning("file_missing: couldn't find %s; waiting for it to be created", self.path)
                self._said_missing = True
            return False
        except OSError as exc:
            raise ConnectException(f"Error while trying to open file {self.path}: {exc}") from exc
        self._said_missing = False
        self.position = self._stored_position() if self.position is None else self.position
        stat = os.fstat(handle.fileno())
        if stat.st_size < self.position:
            log.warning("file_truncated: %s is %d bytes, shorter than the stored position %d; reading from the start",
                        self.path, stat.st_size, self.position)
            self.position = 0
        handle.seek(self.position)
        self._file, self._inode, self._buffer, self._pending = handle, stat.st_ino, b"", []
        log.debug("file_opened: %s at byte %d", self.path, self.position)
        return True

    def _replaced_or_truncated(self) -> bool:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return False
        if stat.st_ino != self._inode:
            log.warning("file_replaced: %s is a new file; reading it from the start", self.path)
            return True
        held = len(self._buffer) + sum(map(len, self._pending)) + len(self._pending)
        if stat.st_size < self.position + held:
            log.warning("file_truncated: %s shrank to %d bytes; reading from the start", self.path, stat.st_size)
            return True
        return False

    def _read(self) -> bytes:
        if self.path is not None:
            return self._file.read(_READ_SIZE)
        ready, _, _ = select.select([self._stdin], [], [], _IDLE_WAIT_S)
        return os.read(self._stdin, _READ_SIZE) if ready else b""

    def poll(self) -> Sequence[SourceRecord] | None:
        if self.path is not None and self._file is None and not self._open():
            time.sleep(_IDLE_WAIT_S)
            return None
        # Read and not yet returned, from self.position on: self._pending's lines (ASCII, each ended
        # by \n), then the bytes of self._buffer.
        pending = self._pending
        if len(pending) < self.batch_size and (
                pending or self._buffer.count(b"\n") + self._buffer.count(b"\r") < self.batch_size):
            self._buffer += self._read()
            self._take_ascii_lines()
        now_ms = time.time_ns() // 1_000_000
        if pending:
            lines = pending[:self.batch_size]
            del pending[:self.batch_size]
            batch = self._batch(lines, lines, now_ms)
            if self.path is not None:
                self.position += sum(map(len, lines)) + len(lines)
            return batch
        data, begin = self._buffer, 0
        records: Sequence[SourceRecord] = []
        if b"\r" not in data:  # \n alone, not all ASCII: the lines as one batch, no record made for each
            *lines, rest = data.split(b"\n", self.batch_size)
            begin = len(data) - len(rest)
            if lines:
                # "\n" is no part of any other UTF-8 character: decoding the lines at once is decoding each
                values = data[:begin - 1].decode("utf-8", errors="replace").split("\n")
                records = self._batch(lines, values, now_ms)
        else:
            records = []
            for end, after in _lines(data, 0, self.batch_size):
                position = None if self.path is None else self.position + after
                records.append(self._record(data[begin:end], position, now_ms))
                begin = after
        if records:
            if self.path is not None:
                self.position += begin
            self._buffer = data[begin:]
            return records
        if self.path is not None:
            if self._replaced_or_truncated():
                self._file.close()
                self._file, self.position = None, 0
            else:
                time.sleep(_IDLE_WAIT_S)
        return None

    def _batch(self, lines: list[bytes] | list[str], values: list[str], timestamp: int) -> SourceRecordBatch:
        """*values*, the text of *lines* read from ``self.position`` on, as one batch; positions only
        for a file (stdin's records carry ``{"position": null}``, as Kafka's)."""
        offsets = (_Positions(self.position or 0, lines) if self.path is not None
                   else [{"position": None} for _ in lines])
        return SourceRecordBatch(self.topic, values, offsets, source_partition=self.partition,
                                 value_schema=Schema.STRING, timestamp=timestamp)

    def _take_ascii_lines(self) -> None:
        """The complete lines of the buffer into ``self._pending``, if it is ASCII with no ``\\r`` (the
        common file): one decode and one split for all of them, a character a byte, so a line's length
        is its bytes' too. Other text stays in the buffer, for poll()'s byte-by-byte ways."""
        data = self._buffer
        if not data or b"\r" in data or not data.isascii():
            return
        *lines, rest = data.decode("ascii").split("\n")
        if lines:
            self._pending += lines
            self._buffer = rest.encode("ascii")

    def _record(self, line: bytes, position: int | None, timestamp: int) -> SourceRecord:
        return SourceRecord(
            topic=self.topic,
            kafka_partition=None,
            key_schema=None,
            key=None,
            value_schema=Schema.STRING,
            value=line.decode("utf-8", errors="replace"),
            timestamp=timestamp,
            source_partition=self.partition,
            source_offset={"position": position},
        )

    def stop(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _printed(value: object) -> str:
    """What Kafka's task writes for a value: ``PrintStream.println``, Java's ``String.valueOf``
    (``null``, ``true``, ``1.0E7``, ``[a, b]``, ``{k=v}``, ``Struct{a=1}``); bytes as UTF-8 text
    (Java would print the array's identity, ``[B@1b6d3586``)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return java_string(value)


class FileStreamSinkTask(SinkTask):
    """Appends each record's value to a file as a line, or to standard output with ``file`` unset.

    Values are written as Kafka's task prints them (``null``, ``true``,
    ``[a, b]``, ``{k=v}``, ``Struct{a=1}``); :meth:`flush` also fsyncs the file.
    """

    def start(self, config: Mapping[str, str]) -> None:
        self.path = config.get("file") or None
        if self.path is None:
            self._file = sys.stdout
            return
        try:
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open until stop()
        except OSError as exc:
            raise ConnectException(f"Couldn't find or create file '{self.path}' for FileStreamSinkTask") from exc

    def put(self, records: list[SinkRecord]) -> None:
        self._file.writelines(f"{value if (value := record.value).__class__ is str else _printed(value)}\n"
                              for record in records)

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._file.flush()
        if self.path is not None:
            os.fsync(self._file.fileno())

    def stop(self) -> None:
        if self._file is not None and self.path is not None:
            self._file.close()
        self._file = None
