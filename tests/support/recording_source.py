"""A source task that records every call the runtime makes on it, with the process that made it.

Importable by Spark's Python workers (``tests/support`` is on ``PYTHONPATH``). Each line of the
``events.file`` is ``<pid> <call> <detail>``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from connectd import (
    ConnectException,
    RecordMetadata,
    RetriableException,
    SourceRecord,
    SourceTask,
)

_PARTITION = {"source": "counter"}


class CountingSourceTask(SourceTask):
    """Returns the records ``n 0`` … ``n <count - 1>``, ``per.poll`` per ``poll()``, resuming after the
    stored offset; a record whose number is a multiple of ``header.every`` carries the header ``drop``.

    ``retriable.polls``: the first so many polls raise :class:`~connectd.RetriableException`;
    ``fail.at``: the poll that would return that record raises :class:`~connectd.ConnectException`
    (saying ``fail.message`` if given).
    """

    def _event(self, call: str, detail: str = "") -> None:
        with open(self.config["events.file"], "a", encoding="utf-8") as events:
            events.write(f"{os.getpid()} {call} {detail}\n")

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        stored = self.context.offset_storage_reader.offset(_PARTITION)
        self.next = 0 if stored is None else int(stored["i"]) + 1
        self.retriable = int(self.config.get("retriable.polls", "0"))
        self._event("start", str(self.next))

    def poll(self) -> list[SourceRecord] | None:
        if self.retriable > 0:
            self.retriable -= 1
            self._event("poll_failed")
            raise RetriableException("not now")
        count, per_poll = int(self.config["count"]), int(self.config.get("per.poll", "10"))
        if self.next >= count:
            time.sleep(0.02)
            return None
        numbers = range(self.next, min(self.next + per_poll, count))
        if str(self.config.get("fail.at", "")) in {str(i) for i in numbers}:
            self._event("poll_raised")
            raise ConnectException(self.config.get("fail.message", f"cannot read record {self.config['fail.at']}"))
        every = int(self.config.get("header.every", "0"))
        records = []
        for i in numbers:
            record = SourceRecord(topic=self.config["topic"], value=f"n {i}", source_partition=_PARTITION,
                                  source_offset={"i": i})
            if every and i % every == 0:
                record.headers.add("drop", "yes")
            records.append(record)
        self.next = numbers[-1] + 1
        return records

    def commit(self) -> None:
        self._event("commit")

    def stop(self) -> None:
        self._event("stop")


class RecordingSourceTask(CountingSourceTask):
    """Also records every ``commit_record`` call: ``<value> <topic>:<partition>:<offset>``, or
    ``<value> None``."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        where = "None" if metadata is None else f"{metadata.topic}:{metadata.partition}:{metadata.offset}"
        self._event("commit_record", f"{record.value} {where}")


class TransactionalCountingTask(CountingSourceTask):
    """A CountingSourceTask that ends its own transactions (``transaction.boundary=connector``):
    a commit after every record whose number + 1 is a multiple of ``commit.every``, an abort after
    record ``abort.at`` (both through the record), and a commit of the whole poll's records when a
    poll holds record ``commit.poll.at``."""

    def poll(self) -> list[SourceRecord] | None:
        records = super().poll()
        context = self.context.transaction_context()
        every = int(self.config.get("commit.every", "0"))
        for record in records or []:
            i = int(record.value.split()[1])
            if str(i) == self.config.get("abort.at"):
                context.abort_transaction(record)
            elif every and (i + 1) % every == 0:
                context.commit_transaction(record)
            if str(i) == self.config.get("commit.poll.at"):
                context.commit_transaction()
        return records


class DriverPolledSourceTask(RecordingSourceTask):
    """A :class:`RecordingSourceTask` that must be polled on the driver's host."""

    poll_on_driver = True
