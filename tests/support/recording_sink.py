"""Sink tasks that record every call made on them, with the process that made it.

Importable by Spark's Python workers: ``tests/conftest.py`` puts this folder
on ``PYTHONPATH`` before Spark starts. Each line of the ``events.file`` is
``<pid> <call> <detail>``; the record values go to ``file``, one per line,
as FileStreamSink writes them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Mapping

from connectd import RetriableException, SinkRecord, SinkTask, TopicPartition


class RecordingSinkTask(SinkTask):
    def _event(self, call: str, detail: str = "") -> None:
        with open(self.config["events.file"], "a", encoding="utf-8") as events:
            events.write(f"{os.getpid()} {call} {detail}\n")
        with open(f"{self.config['events.file']}.threads", "a", encoding="utf-8") as threads:
            threads.write(f"{os.getpid()} {threading.get_ident()} {call}\n")

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        self._event("start")

    def open(self, partitions: Collection[TopicPartition]) -> None:
        self._event("open", ",".join(f"{tp.topic}[{tp.partition}]" for tp in sorted(partitions)))

    def put(self, records: list[SinkRecord]) -> None:
        self._event("put", str(len(records)))
        with open(self.config["file"], "a", encoding="utf-8") as out:
            out.write("".join(f"{record.value}\n" for record in records))

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        self._event("pre_commit", ",".join(f"{tp.partition}:{o}" for tp, o in sorted(offsets.items())))
        return offsets

    def close(self, partitions: Collection[TopicPartition]) -> None:
        self._event("close")

    def stop(self) -> None:
        self._event("stop")


class PinnedRecordingSinkTask(RecordingSinkTask):
    pinned = True


class RewindingSinkTask(RecordingSinkTask):
    """Moves its partitions with ``context.offset()`` as its ``moves`` setting says, each move once
    (a marker file beside ``events.file``, so once across instances).

    ``moves`` is ``partition:when:to`` entries, comma-separated: *when* is ``open`` (in
    ``open()``, as a task resuming from offsets it keeps itself does) or the offset of a record
    whose ``put`` makes the task move the partition to *to*.
    """

    def _moves(self, when: str, partition_of: int | None = None) -> list[tuple[int, int]]:
        moves = []
        for entry in filter(None, self.config.get("moves", "").split(",")):
            partition, at, to = entry.split(":")
            if at == when and partition_of in (None, int(partition)) and self._first_time(entry):
                moves.append((int(partition), int(to)))
        return moves

    def _first_time(self, entry: str) -> bool:
        try:
            with open(f"{self.config['events.file']}.{entry.replace(':', '-')}", "x"):
                return True
        except FileExistsError:
            return False

    def open(self, partitions: Collection[TopicPartition]) -> None:
        super().open(partitions)
        topic = next(iter(partitions)).topic
        for partition, to in self._moves("open"):
            self._event("offset", f"{partition}:{to}")
            self.context.offset({TopicPartition(topic, partition): to})

    def put(self, records: list[SinkRecord]) -> None:
        super().put(records)
        for record in records:
            for partition, to in self._moves(str(record.kafka_offset), record.kafka_partition):
                self._event("offset", f"{partition}:{to}")
                self.context.offset(TopicPartition(record.topic, partition), to)


class PinnedRewindingSinkTask(RewindingSinkTask):
    pinned = True



class PausingSinkTask(RecordingSinkTask):
    """Pauses a partition when it is given the record ``pause.at`` (``partition:offset``), and
    resumes all its partitions when it is given the record ``resume.at``."""

    def put(self, records: list[SinkRecord]) -> None:
        super().put(records)
        for record in records:
            at = f"{record.kafka_partition}:{record.kafka_offset}"
            if at == self.config.get("pause.at"):
                partition = TopicPartition(record.topic, record.kafka_partition)
                self._event("pause", str(partition.partition))
                self.context.pause(partition)
            elif at == self.config.get("resume.at"):
                self._event("resume")
                self.context.resume(*self.context.assignment())


class PinnedPausingSinkTask(PausingSinkTask):
    pinned = True


class HoldingSinkTask(RecordingSinkTask):
    """Keeps the last ``hold`` records of each partition out of what ``pre_commit`` says is safe
    (as a sink that buffers them for its next flush would)."""

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        super().pre_commit(offsets)
        hold = int(self.config["hold"])
        return {tp: offset - hold for tp, offset in offsets.items() if offset - hold > 0}


class PinnedHoldingSinkTask(HoldingSinkTask):
    pinned = True


class FlakySinkTask(RecordingSinkTask):
    """Its first ``retriable.puts`` calls of ``put()`` (counted across instances) raise
    :class:`~connectd.RetriableException` before writing anything; the first asks for a
    ``context.timeout()`` of ``retry.timeout.ms`` first."""

    def put(self, records: list[SinkRecord]) -> None:
        counter = f"{self.config['events.file']}.failed-puts"
        try:
            with open(counter, encoding="utf-8") as handle:
                failed = int(handle.read() or 0)
        except FileNotFoundError:
            failed = 0
        if failed < int(self.config.get("retriable.puts", "0")):
            with open(counter, "w", encoding="utf-8") as handle:
                handle.write(str(failed + 1))
            self._event("put_failed", str(len(records)))
            if failed == 0:
                self.context.timeout(int(self.config.get("retry.timeout.ms", "0")))
            raise RetriableException(f"try again ({failed + 1})")
        super().put(records)


class PinnedFlakySinkTask(FlakySinkTask):
    pinned = True


class ErrantSinkTask(RecordingSinkTask):
    """Reports every record whose number (the value's second word) is a multiple of
    ``errant.every`` to the errant record reporter instead of writing it."""

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.reporter = self.context.errant_record_reporter()
        self._event("reporter", type(self.reporter).__name__)

    def put(self, records: list[SinkRecord]) -> None:
        every = int(self.config["errant.every"])
        bad = [r for r in records if int(str(r.value).split()[1]) % every == 0]
        futures = [self.reporter.report(r, ValueError(f"cannot write {r.value}")) for r in bad]
        super().put([r for r in records if r not in bad])
        self._event("reported", str(len(futures)))

def threads_by_process(path: str | os.PathLike[str]) -> dict[int, set[int]]:
    """Which threads made the recorded calls, per process."""
    found: dict[int, set[int]] = {}
    with open(f"{os.fspath(path)}.threads", encoding="utf-8") as handle:
        for line in handle.read().splitlines():
            pid, ident, _ = line.split(" ", 2)
            found.setdefault(int(pid), set()).add(int(ident))
    return found


def events(path: str | os.PathLike[str]) -> list[tuple[int, str, str]]:
    """The recorded calls: ``(pid, call, detail)``."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return []
    return [(int(pid), call, detail) for pid, call, detail in (line.split(" ", 2) for line in lines)]
