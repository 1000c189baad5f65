"""FileStreamSource/FileStreamSink tasks: lines, byte positions, resuming, truncation, replacement."""

from __future__ import annotations

import json
import logging
import os
import sys
import time

import pytest
from connectd_file.connectors import FileStreamSinkConnector, FileStreamSourceConnector
from connectd_file.tasks import FileStreamSinkTask, FileStreamSourceTask

from connectd import (
    ConnectException,
    OffsetStorageReader,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SinkTaskContext,
    SourceTaskContext,
    Struct,
    TopicPartition,
)


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


def test_lines_ending_in_newline_alone_come_as_one_batch_with_the_same_values_and_positions(tmp_path):
    """The common file (\\n alone) is polled as a SourceRecordBatch: decoded at once, its offsets made
    when read; values and byte positions are those of the line-by-line way, odd bytes included."""
    from connectd import SourceRecordBatch

    path = tmp_path / "in.txt"
    lines = ["one".encode(), "thrée".encode(), b"bad \xe2\x82", "€nd".encode(), b""]
    path.write_bytes(b"\n".join(lines) + b"\n")
    batch = source_task(path).poll()
    assert isinstance(batch, SourceRecordBatch)
    assert batch.source_offsets[-1] == {"position": path.stat().st_size}  # the batch's offset, read first
    assert [r.value for r in batch] == [line.decode("utf-8", errors="replace") for line in lines]
    ends = [sum(len(line) + 1 for line in lines[:i + 1]) for i in range(len(lines))]
    assert [r.source_offset for r in batch] == [{"position": end} for end in ends]
    assert {(r.topic, r.timestamp) for r in batch} == {("lines", batch.timestamp)}


def test_ascii_and_other_text_in_turn_keep_their_order_values_and_byte_positions(tmp_path):
    """ASCII lines (read in one decode) and text that is not (UTF-8, \\r line ends: read byte by byte)
    follow each other in one file, across reads and polls: every line once, in order, at its byte end."""
    chunks = ["plain 1\nplain 2\nplain 3\n", "thr\u00e9e\nplain 5\n", "cr\r\ncrlf 7\rplain 8\n",
              "plain 9\nplain 10\nplain 11\n", "\u20acnd\n"]
    path = tmp_path / "in.txt"
    path.write_bytes(b"")
    task = source_task(path, **{"batch.size": "2"})
    seen = []
    for chunk in chunks:
        with open(path, "ab") as f:
            f.write(chunk.encode())
        seen += task.poll() or []  # one poll a write: what it leaves is read with the next write's
    seen = [(r.value, r.source_offset["position"]) for r in seen + poll_all(task, rounds=10)]
    text = "".join(chunks).replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")[:-1]
    data = "".join(chunks).encode()
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A or (byte == 0x0D and data[i + 1] != 0x0A)]
    assert seen == list(zip(lines, ends, strict=True))


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
    assert path.read_text() == "already here\nx\n42\nnull\n"  # String.valueOf(null), as Kafka's println
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


def test_lines_end_at_cr_lf_and_crlf_as_in_kafka(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\rb\r\nc\n\rd\r")
    task = source_task(path)
    records = poll_all(task)
    # A lone \r ends a line too; the final \r may be half of \r\n, so "d" waits for the next byte.
    assert [r.value for r in records] == ["a", "b", "c", ""]
    assert [r.source_offset["position"] for r in records] == [2, 5, 7, 8]
    with open(path, "ab") as f:
        f.write(b"\ne\rf")
    records = poll_all(task)
    assert [(r.value, r.source_offset["position"]) for r in records] == [("d", 11), ("e", 13)]
    task.stop()


def test_cr_ending_a_read_is_not_a_line_yet(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"x\r")
    task = source_task(path)
    assert poll_all(task) == []
    with open(path, "ab") as f:
        f.write(b"y\n")
    assert [(r.value, r.source_offset) for r in poll_all(task)] == [("x", {"position": 2}), ("y", {"position": 4})]


def test_records_carry_the_read_time_as_kafka_sets_it(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a\n")
    before = time.time_ns() // 1_000_000
    (record,) = poll_all(source_task(path))
    assert before <= record.timestamp <= time.time_ns() // 1_000_000


def test_a_stored_position_that_is_not_a_number_fails_the_task(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a\n")
    task = source_task(path, stored={"position": "2"})
    with pytest.raises(ConnectException, match="Offset position is the incorrect type"):
        task.poll()


def test_missing_file_is_logged_once_while_waiting(tmp_path, caplog):
    path = tmp_path / "later.txt"
    task = source_task(path)
    with caplog.at_level(logging.WARNING):
        assert task.poll() is None
        assert task.poll() is None
    assert [r.message for r in caplog.records].count(
        f"file_missing: couldn't find {path}; waiting for it to be created") == 1


def test_without_file_reads_stdin_without_offsets(monkeypatch):
    read_end, write_end = os.pipe()
    with open(read_end, "rb") as stdin_bytes, open(write_end, "wb", buffering=0) as writer:
        monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": stdin_bytes})())
        settings = {"topic": "lines"}
        task = FileStreamSourceTask()
        task.context = SourceTaskContext(settings, OffsetStorageReader(lambda partitions: {}))
        task.start(settings)
        assert task.poll() is None  # nothing typed yet: returns instead of blocking
        writer.write("héllo\nwor".encode())
        records = poll_all(task, rounds=2)
        assert [r.value for r in records] == ["héllo"]
        # As Kafka's: partition {"filename": null}, offset {"position": null}.
        assert (records[0].source_partition, records[0].source_offset) == ({"filename": None}, {"position": None})
        writer.write(b"ld\n")
        assert [r.value for r in poll_all(task, rounds=2)] == ["world"]


def test_file_is_optional_for_both_connectors_as_in_kafka():
    source_problems = FileStreamSourceConnector.config_def.validate({"topic": "connect-test"})
    assert [p for p in source_problems if p.is_error] == []
    (warning,) = FileStreamSourceConnector().validate({"topic": "connect-test"})
    assert (warning.key, warning.is_error) == ("file", False)
    assert FileStreamSourceConnector().validate({"topic": "t", "file": "/f"}) == []
    assert [p for p in FileStreamSinkConnector.config_def.validate({}) if p.is_error] == []
    assert [p.key for p in FileStreamSourceConnector.config_def.validate({"file": "/f"}) if p.is_error] == ["topic"]


def test_sink_without_file_writes_to_stdout(capsys):
    task = FileStreamSinkTask()
    task.context = SinkTaskContext({}, [TopicPartition("t", 0)])
    task.start({})
    task.put([record("to stdout", 0)])
    task.flush({TopicPartition("t", 0): 1})
    task.stop()
    assert capsys.readouterr().out == "to stdout\n"
    assert not sys.stdout.closed


def test_sink_writes_values_as_java_prints_them(tmp_path):
    path = tmp_path / "out.txt"
    schema = SchemaBuilder.struct().name("s").field("a", Schema.INT32).field("b", Schema.OPTIONAL_STRING).build()
    task = FileStreamSinkTask()
    task.start({"file": str(path)})
    values = [True, 1.5, 1e7, 1.0e-4, [1, "x", None], {"k": 1, "l": False}, Struct(schema, {"a": 1}), b"raw"]
    task.put([record(v, i) for i, v in enumerate(values)])
    task.flush({})
    task.stop()
    assert path.read_text().splitlines() == [
        "true", "1.5", "1.0E7", "1.0E-4", "[1, x, null]", "{k=1, l=false}", "Struct{a=1}", "raw"]


def test_sink_that_cannot_create_its_file_says_so(tmp_path):
    path = tmp_path / "no-such-dir" / "out.txt"
    with pytest.raises(ConnectException, match=f"Couldn't find or create file '{path}' for FileStreamSinkTask"):
        FileStreamSinkTask().start({"file": str(path)})


def partition(filename) -> str:
    return json.dumps({"filename": filename}, sort_keys=True, separators=(",", ":"))


def test_source_alter_offsets_accepts_what_kafka_accepts():
    connector = FileStreamSourceConnector()
    config = {"file": "/f", "topic": "t"}
    assert connector.alter_offsets(config, {partition("/f"): {"position": 10}, partition("/old"): None}) is True
    assert connector.alter_offsets(config, {json.dumps({"garbage": 1}): None}) is True  # tombstones clean up anything


@pytest.mark.parametrize(
    ("config", "offsets", "message"),
    [
        ({"topic": "t"}, {partition("/f"): {"position": 1}},
         ("Offsets cannot be modified if the 'file' configuration is unspecified. "
         "This is because stdin is used for input and offsets are not tracked.")),
        ({"file": "/f"}, {partition("/f"): {"pos": 1}},
         "Offset objects should either be null or contain the key 'position'"),
        ({"file": "/f"}, {partition("/f"): {"position": "1"}},
         "The value for the 'position' key in the offset is expected to be a Long value"),
        ({"file": "/f"}, {partition("/f"): {"position": 1.5}},
         "The value for the 'position' key in the offset is expected to be a Long value"),
        ({"file": "/f"}, {partition("/f"): {"position": -1}},
         "The value for the 'position' key in the offset should be a non-negative value"),
        ({"file": "/f"}, {"null": {"position": 1}}, "Partition objects cannot be null"),
        ({"file": "/f"}, {json.dumps({"file": "/f"}): {"position": 1}},
         "Partition objects should contain the key 'filename'"),
    ],
)
def test_source_alter_offsets_refuses_with_kafkas_messages(config, offsets, message):
    with pytest.raises(ConnectException) as raised:
        FileStreamSourceConnector().alter_offsets(config, offsets)
    assert str(raised.value) == message


def test_sink_alter_offsets_confirms_as_kafka():
    assert FileStreamSinkConnector().alter_offsets({"topics": "t"}, {TopicPartition("t", 0): 5}) is True
