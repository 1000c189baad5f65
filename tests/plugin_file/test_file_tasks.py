"""FileStreamSource/FileStreamSink tasks: lines, byte positions, resuming, truncation, replacement."""

from __future__ import annotations

import json
import logging
import os

import pytest
from connectd_file.connectors import FileStreamSinkConnector, FileStreamSourceConnector
from connectd_file.tasks import FileStreamSinkTask, FileStreamSourceTask

from connectd import OffsetStorageReader, SinkRecord, SinkTaskContext, SourceTaskContext, TopicPartition


def source_task(path, stored: dict | None = None, **config: str) -> FileStreamSourceTask:
    def lookup(partitions):
        found = {}
        for partition in partitions:
            if stored is not None and partition == {"filename": str(path)}:
                found[json.dumps(partition, sort_keys=True, separators=(",", ":"))] = stored
        return found

    settings = {"file": str(path), "topic": "lines", **config}
    task = FileStreamSourceTask()
    task.context = SourceTaskContext(settings, OffsetStorageReader(lookup))
    task.start(settings)
    return task


def poll_all(task, rounds: int = 5) -> list:
    records = []
    for _ in range(rounds):
        records += task.poll() or []
    return records


def test_complete_lines_with_byte_positions(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("one\r\ntwo\nthrée\npartial".encode())
    task = source_task(path)
    records = poll_all(task)
    assert [r.value for r in records] == ["one", "two", "thrée"]
    assert [r.source_offset for r in records] == [{"position": 5}, {"position": 9}, {"position": 16}]
    assert {r.topic for r in records} == {"lines"}
    assert records[0].source_partition == {"filename": str(path)}
    with open(path, "ab") as f:
        f.write(b" line\n")
    (last,) = poll_all(task)
    assert (last.value, last.source_offset) == ("partial line", {"position": 29})
    task.stop()


def test_batch_size_bounds_each_poll(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("".join(f"{i}\n" for i in range(10)))
    task = source_task(path, **{"batch.size": "3"})
    sizes = [len(task.poll() or []) for _ in range(5)]
    assert sizes[:4] == [3, 3, 3, 1]


def test_resumes_exactly_after_the_stored_position(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a\nb\nc\n")
    first = source_task(path)
    records = poll_all(first)
    first.stop()
    resumed = source_task(path, stored=records[1].source_offset)  # stored after "b"
    assert [r.value for r in poll_all(resumed)] == ["c"]


def test_truncated_file_is_read_from_the_start_and_logged(tmp_path, caplog):
    path = tmp_path / "in.txt"
    path.write_text("a long first line\nsecond\n")
    with caplog.at_level(logging.WARNING):
        task = source_task(path, stored={"position": 1000})
        assert [r.value for r in poll_all(task)] == ["a long first line", "second"]
    assert "file_truncated" in caplog.text


def test_file_truncated_while_running(tmp_path, caplog):
    path = tmp_path / "in.txt"
    path.write_text("aaaaaaaaaa\nbbbbbbbbbb\n")
    task = source_task(path)
    assert len(poll_all(task)) == 2
    with open(path, "w") as f:  # truncate in place (same inode), shorter content
        f.write("new\n")
    with caplog.at_level(logging.WARNING):
        records = poll_all(task)
    assert [r.value for r in records] == ["new"]
    assert records[0].source_offset == {"position": 4}
    assert "file_truncated" in caplog.text


def test_replaced_file_is_read_from_the_start(tmp_path, caplog):
    path = tmp_path / "in.txt"
    path.write_text("old 1\nold 2\nold 3\n")
    task = source_task(path)
    assert len(poll_all(task)) == 3
    replacement = tmp_path / "new.txt"
    replacement.write_text("new 1\nnew 2\nnew 3\nnew 4\n")
    os.replace(replacement, path)  # a new inode, as log rotation does
    with caplog.at_level(logging.WARNING):
        assert [r.value for r in poll_all(task)] == ["new 1", "new 2", "new 3", "new 4"]
    assert "file_replaced" in caplog.text


def test_missing_file_waits_for_it(tmp_path):
    path = tmp_path / "later.txt"
    task = source_task(path)
    assert task.poll() is None
    path.write_text("here\n")
    assert [r.value for r in poll_all(task)] == ["here"]


def record(value, offset: int) -> SinkRecord:
    return SinkRecord(topic="t", kafka_partition=0, key_schema=None, key=None, value_schema=None,
                      value=value, kafka_offset=offset, timestamp=None)


def test_sink_appends_lines_and_flush_makes_them_durable(tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_text("already here\n")
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    task = FileStreamSinkTask()
    task.context = SinkTaskContext({"file": str(path)}, [TopicPartition("t", 0)])
    task.start({"file": str(path)})
    task.put([record("x", 0), record(42, 1), record(None, 2)])
    task.flush({TopicPartition("t", 0): 3})
    assert synced, "flush must fsync before offsets are committed"
    assert path.read_text() == "already here\nx\n42\nNone\n"
    task.stop()


def test_connectors_name_their_tasks_and_split_work():
    source = FileStreamSourceConnector()
    source.start({"file": "/f", "topic": "t"})
    assert source.task_class() is FileStreamSourceTask
    assert source.task_configs(4) == [{"file": "/f", "topic": "t"}]  # one reader per file
    sink = FileStreamSinkConnector()
    sink.start({"file": "/o", "topics": "t"})
    assert sink.task_class() is FileStreamSinkTask
    assert len(sink.task_configs(2)) == 2


@pytest.mark.parametrize("cls", [FileStreamSourceTask, FileStreamSinkTask])
def test_tasks_report_the_plugin_version(cls):
    from importlib import metadata

    assert cls().version() == metadata.version("connectd-file")
