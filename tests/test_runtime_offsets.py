"""The standalone offsets file: Kafka's key format, atomic rewrite, concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from connectd.errors import ConfigError
from connectd.runtime.offsets.orphans import offset_topics_in_use
from connectd.runtime.offsets.store import (
    FileOffsetStore,
    TopicOffsetStore,
    canonical,
    open_offset_store,
    store_offsets_hook,
)


def test_put_get_and_delete(tmp_path):
    store = FileOffsetStore(tmp_path / "offsets.json")
    a, b = {"filename": "/a"}, {"filename": "/b"}
    assert store.get("src", [a]) == {}
    store.put("src", {canonical(a): {"position": 10}, canonical(b): {"position": 3}})
    store.put("other", {canonical(a): {"position": 99}})
    assert store.get("src", [a, b]) == {canonical(a): {"position": 10}, canonical(b): {"position": 3}}
    store.put("src", {canonical(b): None})  # None deletes, as a tombstone does
    assert store.get("src", [a, b]) == {canonical(a): {"position": 10}}
    assert store.connector_offsets("other") == [({"filename": "/a"}, {"position": 99})]


def test_a_tasks_offset_reader_maps_every_partition_asked_for_none_where_nothing_is_stored(tmp_path):
    from connectd import OffsetStorageReader

    store = FileOffsetStore(tmp_path / "offsets.json")
    a, b = {"filename": "/a"}, {"filename": "/b"}
    store.put("src", {canonical(a): {"position": 10}})
    reader = OffsetStorageReader(lambda partitions: store.get("src", partitions))
    # As Kafka Connect's OffsetStorageReader: a partition with no offset maps to null.
    assert reader.offsets([a, b]) == {canonical(a): {"position": 10}, canonical(b): None}
    assert reader.offset(a) == {"position": 10} and reader.offset(b) is None


def test_offsets_that_cannot_be_read_fail_the_task_with_the_reason():
    from connectd import OffsetStorageReader
    from connectd.errors import ConnectorError

    def unreadable(partitions):
        raise ConnectorError("topic connect-offsets not read to its end in time (4: 12 / 40)", retriable=True)

    # As Kafka Connect's reader (ConnectException): not retriable, so poll() is not tried again unseen.
    with pytest.raises(ConnectorError, match=r"failed to fetch offsets: topic connect-offsets .*4: 12 / 40") as failed:
        OffsetStorageReader(unreadable).offset({"filename": "/a"})
    assert not failed.value.retriable


def test_a_null_partitions_offset_is_kept_under_a_null_key_and_not_listed(tmp_path):
    store = FileOffsetStore(tmp_path / "offsets.json")
    store.put("src", {canonical(None): {"position": 4}, canonical({"f": 1}): {"position": 5}})
    assert store.get("src", [None]) == {"null": {"position": 4}}
    assert {"key": ["src", None], "value": {"position": 4}} in json.loads((tmp_path / "offsets.json").read_text())["offsets"]
    assert store.connector_offsets("src") == [({"f": 1}, {"position": 5})]  # as Kafka Connect's listing


def test_file_holds_kafka_connect_keys(tmp_path):
    path = tmp_path / "offsets.json"
    FileOffsetStore(path).put("src", {canonical({"filename": "/a"}): {"position": 10}})
    document = json.loads(path.read_text())
    assert document["offsets"] == [{"key": ["src", {"filename": "/a"}], "value": {"position": 10}}]


def test_rewrite_is_atomic_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    path = tmp_path / "offsets.json"
    store = FileOffsetStore(path)
    store.put("src", {canonical({"p": 1}): {"o": 1}})

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        store.put("src", {canonical({"p": 1}): {"o": 2}})
    monkeypatch.undo()
    assert store.get("src", [{"p": 1}]) == {canonical({"p": 1}): {"o": 1}}  # old offsets intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["offsets.json", "offsets.json.lock"]


def test_a_corrupt_file_is_a_clear_error(tmp_path):
    path = tmp_path / "offsets.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not a connectd offsets file"):
        FileOffsetStore(path).get("src", [{"p": 1}])


def _writer(path: str, task: int, count: int) -> None:
    store = FileOffsetStore(path)
    for i in range(count):
        store.put("src", {canonical({"task": task}): {"n": i}})


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "offsets.json")
    processes = [multiprocessing.Process(target=_writer, args=(path, t, 40)) for t in range(4)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(60)
        assert p.exitcode == 0
    assert FileOffsetStore(path).get("src", [{"task": t} for t in range(4)]) == {
        canonical({"task": t}): {"n": 39} for t in range(4)
    }


def test_commit_hook_stores_the_batchs_last_offsets(tmp_path):
    path = tmp_path / "offsets.json"
    arg = json.dumps({"path": str(path), "connector": "src"})
    store_offsets_hook(arg, 7, {canonical({"filename": "/a"}): json.dumps({"position": 42})}, 3)
    assert FileOffsetStore(path).get("src", [{"filename": "/a"}]) == {canonical({"filename": "/a"}): {"position": 42}}


def test_commit_hook_takes_a_file_spec_with_its_kind(tmp_path):
    path = tmp_path / "offsets.json"
    store_offsets_hook(json.dumps({"kind": "file", "path": str(path), "connector": "src"}), 1,
                       {canonical({"f": 1}): json.dumps({"o": 2})}, 1)
    assert FileOffsetStore(path).get("src", [{"f": 1}]) == {canonical({"f": 1}): {"o": 2}}


def test_open_offset_store_picks_the_store_a_spec_names(tmp_path, monkeypatch):
    from connectd.runtime.kafka.clients import client_option

    file_store = open_offset_store({"path": str(tmp_path / "o.json"), "connector": "ignored"})
    assert isinstance(file_store, FileOffsetStore) and file_store.path == tmp_path / "o.json"
    assert isinstance(open_offset_store({"kind": "file", "path": "x"}), FileOffsetStore)

    monkeypatch.setenv("OFFSETS_UNIT_BOOTSTRAP", "10.0.0.1:9092")
    worker = {"bootstrap.servers": "${env:OFFSETS_UNIT_BOOTSTRAP}", "config.providers": "env",
              "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider"}
    topic_store = open_offset_store({"kind": "topic", "topic": "own-offsets", "fallback": "connect-offsets",
                                     "client": client_option(worker, "producer"), "timeout": 5})
    assert isinstance(topic_store, TopicOffsetStore)
    assert topic_store.topic == "own-offsets"
    assert topic_store.primary.settings["bootstrap.servers"] == "10.0.0.1:9092"  # resolved in this process
    assert topic_store.primary.timeout == 5
    assert topic_store.fallback is not None and topic_store.fallback.topic == "connect-offsets"
    assert topic_store.fallback.settings == topic_store.primary.settings

    other = open_offset_store({"kind": "topic", "topic": "t", "client": {"bootstrap.servers": "a:1"},
                               "fallback": "t", "fallback_client": {"bootstrap.servers": "b:1"}})
    assert other.fallback is not None and other.fallback.settings == {"bootstrap.servers": "b:1"}  # another cluster
    same = open_offset_store({"kind": "topic", "topic": "t", "client": {"bootstrap.servers": "a:1,b:2"},
                              "fallback": "t", "fallback_client": {"bootstrap.servers": "b:2, a:1"}})
    assert same.fallback is None

    with pytest.raises(ConfigError, match="unknown offset store kind 'memory'"):
        open_offset_store({"kind": "memory"})


def test_offset_topics_in_use_are_live_connectors_and_the_workers():
    records = {
        b"connector-a": json.dumps({"properties": {"offsets.storage.topic": "a-offsets"}}).encode(),
        b"connector-b": None,
        b"connector-c": json.dumps({"properties": {"name": "c"}}).encode(),
        b"task-a-0": json.dumps({"properties": {"offsets.storage.topic": "task-offsets"}}).encode(),
        b"connector-d": b"not json",
    }
    assert offset_topics_in_use(records, "connect-offsets") == {"a-offsets", "connect-offsets"}
