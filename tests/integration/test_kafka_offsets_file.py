"""Kafka Connect's own standalone offsets file (FileOffsetBackingStore's Java-serialized map), made
and read by Java code that does what Kafka's does (tests/support/java/KafkaOffsetsFile.java)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from connectd.runtime.offsets.store import FileOffsetStore, canonical, ordered

pytestmark = pytest.mark.integration

@pytest.fixture(scope="module")
def kafka_offsets_file(java_program):
    """``write(path, {key: value or None})`` and ``read(path) -> (class, {key: value or None})``, as
    Kafka's FileOffsetBackingStore writes and reads the file."""
    run = java_program("KafkaOffsetsFile")

    class Kafka:
        @staticmethod
        def write(path: Path, entries: dict[str, str | None]) -> None:
            run("write", str(path), *(part for key, value in entries.items() for part in (key, value or "null")))

        @staticmethod
        def read(path: Path) -> tuple[str, dict[str, str | None]]:
            kind, *lines = run("read", str(path)).splitlines()
            pairs = (line.split("\t", 1) for line in lines)
            return kind, {key: None if value == "null" else value for key, value in pairs}

    return Kafka


def test_kafka_connects_file_is_read_and_written_back_in_its_own_format(kafka_offsets_file, tmp_path):
    path = tmp_path / "connect.offsets"
    other_key = '["other",{"table":"b","db":"a"}]'  # a Java connector's map order, not sorted
    kafka_offsets_file.write(path, {'["src",{"filename":"/data/in.txt"}]': '{"position":42}',
                                    other_key: '{"lsn":7}', '["gone",{"p":1}]': None})
    store = FileOffsetStore(path)
    data_in = canonical({"filename": "/data/in.txt"})
    assert store.get("src", [{"filename": "/data/in.txt"}]) == {data_in: {"position": 42}}
    assert store.connector_offsets("other") == [({"db": "a", "table": "b"}, {"lsn": 7})]
    assert store.connector_offsets("gone") == []

    store.put("src", {data_in: {"position": 99}, canonical({"filename": "/x"}): {"position": 1}})
    store.put("other", {canonical({"db": "a", "table": "b"}): {"lsn": 8}})
    kind, entries = kafka_offsets_file.read(path)
    assert kind == "java.util.HashMap"
    assert entries == {'["src",{"filename":"/data/in.txt"}]': '{"position":99}',
                       '["src",{"filename":"/x"}]': '{"position":1}',
                       other_key: '{"lsn":8}', '["gone",{"p":1}]': None}  # each key with the bytes it came with

    store.put("src", {canonical({"filename": "/x"}): None})  # deleted: the key is gone, as Kafka's store removes it
    assert '["src",{"filename":"/x"}]' not in kafka_offsets_file.read(path)[1]


def test_an_empty_kafka_file_takes_offsets_and_stays_kafkas(kafka_offsets_file, tmp_path):
    path = tmp_path / "connect.offsets"
    kafka_offsets_file.write(path, {})
    FileOffsetStore(path).put("src", {canonical({"p": 0}): {"o": 5}})
    assert kafka_offsets_file.read(path) == ("java.util.HashMap", {'["src",{"p":0}]': '{"o":5}'})


def test_a_new_partitions_key_keeps_the_connectors_map_order(kafka_offsets_file, tmp_path):
    path = tmp_path / "connect.offsets"
    kafka_offsets_file.write(path, {})
    store = FileOffsetStore(path)
    store.put("src", {ordered({"table": "t", "db": "d"}): {"lsn": 5, "file": "b.1"}})
    store.put("src", {ordered({"db": "d", "table": "t"}): {"lsn": 6, "file": "b.1"}})  # one partition, one key
    assert kafka_offsets_file.read(path)[1] == {'["src",{"table":"t","db":"d"}]': '{"lsn":6,"file":"b.1"}'}


def test_a_java_stream_that_is_not_kafkas_offsets_is_a_clear_error(tmp_path):
    from connectd.errors import ConfigError

    path = tmp_path / "connect.offsets"
    path.write_bytes(b"\xac\xed\x00\x05t\x00\x05hello")  # a serialized String
    with pytest.raises(ConfigError, match=r"connect.offsets: a Java serialization stream, but not Kafka Connect's "
                                          r"offsets: expected a java.util.HashMap"):
        FileOffsetStore(path).get("src", [{"p": 1}])


def test_a_worker_moved_from_kafka_connect_resumes_its_source_where_it_was(kafka_offsets_file, broker, topic_name,
                                                                           tmp_path, worker_config, consume_records,
                                                                           wait_until):
    """A standalone worker given Kafka Connect's offsets file: the FileStreamSource goes on from the
    byte position Kafka Connect stored, and the file stays Kafka's, so the worker could move back."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=30)  # one partition: one order
    source = tmp_path / "in.txt"
    lines = [f"line {i:03d}" for i in range(100)]
    source.write_text("".join(f"{line}\n" for line in lines))
    done = len("".join(f"{line}\n" for line in lines[:60]).encode())
    offsets = tmp_path / "connect.offsets"
    key = json.dumps(["moved", {"filename": str(source)}], separators=(",", ":"))
    kafka_offsets_file.write(offsets, {key: f'{{"position":{done}}}'})
    worker = worker_config.file(**{"offset.storage.file.filename": str(offsets)})
    (tmp_path / "source.properties").write_text(
        f"name=moved\nconnector.class=org.apache.kafka.connect.file.FileStreamSourceConnector\nfile={source}\n"
        f"topic={topic_name}\n")
    process = subprocess.Popen([sys.executable, "-m", "connectd.cli", "standalone", str(worker),
                                str(tmp_path / "source.properties")],
                               stdout=open(tmp_path / "worker.log", "ab"), stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: kafka_offsets_file.read(offsets)[1].get(key), "the source's offset committed",
                   until=lambda value: value == f'{{"position":{source.stat().st_size}}}', timeout=180)
    finally:
        process.terminate()
        try:
            stopped = process.wait(90)
        except subprocess.TimeoutExpired:
            process.kill()  # by its PID, so no worker outlives a failed test
            process.wait(30)
            raise
    assert stopped == 0
    values = [m.value().decode() for m in consume_records(topic_name, partitions=1)]
    assert values == lines[60:]
    assert kafka_offsets_file.read(offsets)[0] == "java.util.HashMap"
