"""Source offsets where a worker keeps them: a local file (standalone mode's
``offset.storage.file.filename``) or an offsets topic (distributed mode).
A sink connector's offsets are its consumer group's (:mod:`connectd.runtime.offsets.groups`);
the offsets API's form (KIP-875) is read by :mod:`connectd.herder.offsets_admin`.

Keys are Kafka Connect's: ``["<connector>", {<source partition>}]``; values
the source offset, ``None`` deleting it — the same records the offsets topic
holds in distributed mode, so moving between the two is a copy.

The file is JSON, or Kafka Connect's own Java-serialized map when the
worker found one there (a worker moved from Kafka Connect keeps writing it,
so it could move back: :mod:`connectd.runtime.offsets.java_file`),
rewritten whole on every commit: written to a temporary
file in the same directory, fsynced, renamed over the old one, and the
directory fsynced, so a crash leaves either the old or the new offsets,
never a torn file. Each task's query commits from its own process, so
writers take an exclusive ``flock`` on a lock file beside it.

Offsets topics (distributed mode)
---------------------------------
:class:`TopicOffsetStore` keeps them in an offsets topic, record for record
as Kafka Connect does: key ``["<connector>",{<partition>}]`` and value the
offset, both as Kafka's JsonConverter writes them (:func:`jackson_json`), a
tombstone deleting it; keyed records go to
the partition Java's producer picks (murmur2), so a topic is shared with, or
taken over from, Kafka Connect. Reads go from the beginning of every
partition to its end (:mod:`connectd.runtime.kafka.topic_reader`), the last
record of a key winning. A new partition's key is written in the
connector's own map order, as Kafka Connect writes it (a source partition
travels from the task as :func:`ordered` text; its identity is
:func:`canonical`). A partition whose map order changed between writes (or
between runtimes) may so be stored under several keys,
possibly in different topic partitions: entries are matched by the
canonical form of the parsed partition, the newest record (by timestamp)
winning between keys; and every key a partition was found under is
remembered (per process and topic), so later writes go to that same key —
the same topic partition, replacing it for readers and for compaction —
and a write before this process ever read the topic reads it first.

A connector's own ``offsets.storage.topic`` is the *primary* topic and the
worker's the *fallback*, as Kafka Connect's ``ConnectorOffsetBackingStore``:
a partition not found in the primary (never written, or deleted) is read
from the fallback; writes go to the primary, with tombstones written to the
fallback first (else a deleted offset would come back from it) and the
other offsets copied to it afterwards, best effort (failures logged).

Which store a spec names (the commit hook's argument and the source
reader's ``offsets``) is decided by :func:`open_offset_store` alone.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from connectd.data._text import json_double, json_quote
from connectd.errors import ConfigError, ConnectorError
from connectd.logging import get_logger
from connectd.runtime.kafka.clients import client_settings
from connectd.runtime.offsets.java_file import JavaOffsetsFile, is_java_serialized

log = get_logger(__name__)

__all__ = [
    "FileOffsetStore",
    "TopicOffsetStore",
    "canonical",
    "close_producers",
    "jackson_json",
    "open_offset_store",
    "ordered",
    "parse_key",
    "store_offsets_hook",
]

_FORMAT_VERSION = 1


def canonical(value: Any) -> str:
    """JSON text that is the same for equal values (sorted keys, no spaces): a partition's identity."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def ordered(value: Any) -> str:
    """JSON text of *value* with its maps' keys in their own order (no spaces): how a source
    partition travels to the offset store, which writes a new key in that order, as Kafka does."""
    return json.dumps(value, separators=(",", ":"))


class FileOffsetStore:
    """Offsets of every connector in one file: connectd's JSON, or Kafka Connect's own.

    A file Kafka Connect's ``FileOffsetBackingStore`` wrote (a Java-serialized map,
    :mod:`connectd.runtime.offsets.java_file`) is read as such and written back in
    that format, each key that was there written back with its own bytes; any other
    file is connectd's JSON, which a new file is too.

    :param path: the file; created on the first write.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _read(self) -> dict[str, Any]:
        """canonical key text → offset."""
        return self._load().stored

    def _load(self) -> _Loaded:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return _Loaded({})
        if is_java_serialized(data):
            return self._load_java(data)
        try:
            document = json.loads(data.decode("utf-8"))
            entries = document["offsets"]
            return _Loaded({canonical(entry["key"]): entry["value"] for entry in entries})
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError([f"{self.path}: not a connectd offsets file, nor a Kafka Connect one ({exc}); "
                               "move it away to start without stored offsets"]) from exc

    def _load_java(self, data: bytes) -> _Loaded:
        try:
            java = JavaOffsetsFile(data)
        except ValueError as exc:
            raise ConfigError([f"{self.path}: a Java serialization stream, but not Kafka Connect's offsets: {exc}; "
                               "move it away to start without stored offsets"]) from exc
        loaded = _Loaded({}, java)
        for key, value in java.entries:
            try:
                parsed = json.loads(key)
                if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], str)):
                    raise ValueError("expected [connector, partition]")
                offset = None if value is None else json.loads(value)
            except ValueError:
                loaded.foreign.append((key, value))  # not an offset of a connector: kept as it is
                continue
            text = canonical(parsed)
            loaded.stored[text] = offset
            loaded.raw_keys[text] = key
        return loaded

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{self.path}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        """Stored offsets of *partitions* of *connector*, keyed by the partition's canonical JSON."""
        stored = self._read()
        found = {}
        for partition in partitions:
            value = stored.get(canonical([connector, partition]))
            if value is not None:
                found[canonical(partition)] = value
        return found

    def connector_offsets(self, connector: str) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """Every (partition, offset) stored for *connector*, but a null partition's (Kafka Connect's
        offsets listing leaves it out too: its task reads it, the REST API does not show it)."""
        pairs = []
        for key_text, value in self._read().items():
            key = json.loads(key_text)
            if key[0] == connector and value is not None and key[1] is not None:
                pairs.append((key[1], value))
        return pairs

    def put(self, connector: str, offsets: Mapping[str, Mapping[str, Any] | None]) -> None:
        """Store *offsets* (partition as JSON text, :func:`ordered` or canonical → offset, ``None``
        deletes) atomically."""
        if not offsets:
            return
        with self._locked():
            loaded = self._load()
            stored = loaded.stored
            for partition_text, value in offsets.items():
                partition = json.loads(partition_text)
                key = canonical([connector, partition])
                if value is None:
                    stored.pop(key, None)
                else:
                    stored[key] = value
                    if loaded.java is not None and key not in loaded.raw_keys:  # a new key, in the map's order
                        loaded.raw_keys[key] = jackson_json([connector, partition]).encode("utf-8")
            if loaded.java is None:
                self._replace(json.dumps({
                    "version": _FORMAT_VERSION,
                    "offsets": [{"key": json.loads(k), "value": v} for k, v in sorted(stored.items())],
                }, indent=1).encode("utf-8"))
            else:
                # As Kafka's MemoryOffsetBackingStore keeps them: a deleted offset's key is gone.
                entries = [(loaded.raw_keys[k], None if v is None else jackson_json(v).encode("utf-8"))
                           for k, v in stored.items()]
                self._replace(loaded.java.dumps(loaded.foreign + entries))

    def _replace(self, data: bytes) -> None:
        """The file's content replaced by *data*: written beside it, fsynced, renamed over it."""
        handle, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


@dataclass
class _Loaded:
    """An offsets file as read: canonical key text → offset, and for Kafka Connect's format the map
    read (to write its kind again), each key's bytes as read, and entries that are no offsets."""

    stored: dict[str, Any]
    java: JavaOffsetsFile | None = None
    raw_keys: dict[str, bytes] = field(default_factory=dict)
    foreign: list[tuple[bytes, bytes | None]] = field(default_factory=list)


# --- offsets topics (distributed mode) -------------------------------------------

_DEFAULT_TIMEOUT_S = 30.0


def record_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    """The offsets topic's key for *partition* of *connector*: ``["<connector>",{...}]`` as Kafka's
    JsonConverter (Jackson) writes it, the partition's keys in its own order (as a Java connector's
    map gives them to Jackson)."""
    return jackson_json([connector, partition]).encode("utf-8")


def _record_value(offset: Mapping[str, Any] | None) -> bytes | None:
    if offset is None:
        return None
    return jackson_json(offset).encode("utf-8")


def jackson_json(value: Any) -> str:
    """*value* as Kafka's JsonConverter (``schemas.enable=false``) serialises it, maps' keys in their order.

    Byte for byte what Jackson writes for the same values in the same key order: no spaces,
    UTF-8 unescaped, control characters as ``\\u00XX`` (upper-case hex), doubles in Java's
    ``Double.toString`` form (``1.0E7``, ``1.5E-5``). Offsets keys compare as bytes, in
    Kafka Connect's reader and in compaction, so their form must not vary.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json_quote(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return json_double(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{jackson_json(k if isinstance(k, str) else json.dumps(k))}:{jackson_json(v)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(jackson_json(item) for item in value) + "]"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def parse_key(key: bytes) -> tuple[str, dict[str, Any] | None] | None:
    """``(connector, partition)`` of an offsets-topic key (a null partition is one: Kafka Connect stores
    a record's offset under it); ``None`` for any other key."""
    try:
        parsed = json.loads(key)
    except ValueError:
        return None
    if (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], str)
            and (parsed[1] is None or isinstance(parsed[1], dict))):
        return parsed[0], parsed[1]
    return None


def _settings_key(settings: Mapping[str, Any]) -> str:
    return json.dumps(sorted((str(k), repr(v)) for k, v in settings.items()))


def _cluster_key(settings: Mapping[str, Any]) -> str:
    servers = str(settings.get("bootstrap.servers", ""))
    return ",".join(sorted(s.strip() for s in servers.split(",") if s.strip()))


_lock = threading.Lock()
_producers: dict[tuple[int, str], Any] = {}
# (cluster, topic) -> canonical key text -> the keys (bytes) it was found under
_key_forms: dict[tuple[str, str], dict[str, set[bytes]]] = {}


def _producer(settings: Mapping[str, Any]) -> Any:
    """One producer per process and settings: the commit hook runs once per batch.

    Keyed by the pid too, so a forked process never uses its parent's client.
    """
    # lazy: a source task's planner imports this module; with a file store it needs no Kafka client
    from confluent_kafka import Producer

    key = (os.getpid(), _settings_key(settings))
    with _lock:
        producer = _producers.get(key)
        if producer is None:
            config = {"linger.ms": 0, **{k: v for k, v in settings.items() if k != "transactional.id"}}
            # Every offset acknowledged by all replicas; keyed records where Java's producer puts them.
            config.update({"acks": "all", "enable.idempotence": True, "partitioner": "murmur2_random"})
            producer = _producers[key] = Producer(config)
        return producer


def close_producers(timeout: float = 5.0) -> None:
    """Flush and drop this process's offset producers (a worker stopping; tests)."""
    with _lock:
        producers = [p for (pid, _), p in _producers.items() if pid == os.getpid()]
        _producers.clear()
        _key_forms.clear()
    for producer in producers:
        producer.flush(timeout)


class _OffsetsTopic:
    """One offsets topic on one cluster."""

    def __init__(self, topic: str, settings: Mapping[str, Any], timeout: float) -> None:
        self.topic = topic
        self.settings = dict(settings)
        self.timeout = timeout
        self._forms_key = (_cluster_key(settings), topic)

    def read(self) -> dict[str, tuple[dict[str, Any], Any]]:
        """canonical ``[connector, partition]`` text → (partition as stored, offset or ``None`` if deleted)."""
        # lazy: only an offsets-topic store reads a topic; not at the worker's start-up, nor in a
        # source task's planner with a file store
        from connectd.runtime.kafka.topic_reader import read_topic_records

        newest: dict[str, tuple[int, dict[str, Any], Any]] = {}
        forms: dict[str, set[bytes]] = {}
        for key, (value, timestamp) in read_topic_records(self.settings, self.topic, self.timeout).items():
            parsed = parse_key(key)
            if parsed is None:
                continue
            try:
                offset = None if value is None else json.loads(value)
            except ValueError:
                log.warning("offset_record_unreadable", topic=self.topic, key=key.decode(errors="replace"))
                continue
            text = canonical(list(parsed))
            forms.setdefault(text, set()).add(key)
            if text not in newest or timestamp >= newest[text][0]:
                newest[text] = (timestamp, parsed[1], offset)
        with _lock:
            _key_forms[self._forms_key] = forms
        return {text: (partition, offset) for text, (_, partition, offset) in newest.items()}

    def write(self, connector: str, offsets: Mapping[str, Mapping[str, Any] | None], *, wait: bool = True) -> None:
        """Produce *offsets* (partition as JSON text, :func:`ordered` or canonical → offset, ``None``
        deletes); a partition stored before goes to every key it was found under, a new one to its key
        in the text's map order.

        :param wait: until every record is acknowledged, raising if one is not; else
            send and log failures when they are reported.
        :raises ConnectorError: (retriable) when a record is not acknowledged in time.
        """
        if offsets:
            self._send(self.records(connector, offsets), wait)

    def records(self, connector: str,
                offsets: Mapping[str, Mapping[str, Any] | None]) -> list[tuple[bytes, bytes | None]]:
        """The (key, value) records that store *offsets* (as :meth:`write` takes them)."""
        with _lock:
            known = _key_forms.get(self._forms_key)
        if known is None:
            self.read()  # learn the keys stored partitions go by, before adding any
            with _lock:
                known = _key_forms.get(self._forms_key, {})
        records: list[tuple[bytes, bytes | None]] = []
        for partition_text, offset in offsets.items():
            partition = json.loads(partition_text)
            text = canonical([connector, partition])
            with _lock:  # a copy: another thread may add to the set while this one sends
                keys = set(known.get(text, ())) or {record_key(connector, partition)}
                known.setdefault(text, set()).update(keys)
            records.extend((key, _record_value(offset)) for key in sorted(keys))
        return records

    def _send(self, records: list[tuple[bytes, bytes | None]], wait: bool) -> None:
        producer = _producer(self.settings)
        acked: list[None] = []
        failures: list[str] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                failures.append(f"{message.topic()}[{message.partition()}]: {error}")
                if not wait:
                    log.warning("offsets_copy_failed", topic=self.topic, error=str(error))
            acked.append(None)

        _produce_all(producer, self.topic, records, delivered)
        if not wait:
            producer.poll(0)
            return
        deadline = time.monotonic() + self.timeout
        producer.flush(self.timeout)
        # flush() may return while another thread serves our callbacks: wait for them all.
        while len(acked) < len(records) and time.monotonic() < deadline:
            producer.poll(0.05)
        if len(acked) < len(records):
            raise ConnectorError(f"{len(records) - len(acked)} offset records to {self.topic} not acknowledged "
                                 f"within {self.timeout:.0f} s", retriable=True)
        if failures:
            raise ConnectorError(f"offsets not written to {self.topic}: " + "; ".join(failures[:5]), retriable=True)


def _produce_all(producer: Any, topic: str, records: list[tuple[bytes, bytes | None]],
                 on_delivery: Any = None) -> None:
    """Hand *records* to *producer*, waiting for room in its queue when it is full."""
    for key, value in records:
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)


class TopicOffsetStore:
    """Source offsets in an offsets topic (see the module's docstring), synchronous.

    Same interface as :class:`FileOffsetStore`; safe to use from several threads.

    :param topic: the offsets topic: the connector's ``offsets.storage.topic``, or the worker's
        ``offset.storage.topic``.
    :param settings: confluent-kafka settings of its cluster (placeholders resolved); producer-only
        settings are left out of the reading consumer.
    :param fallback_topic: the worker's ``offset.storage.topic`` when *topic* is a connector's own:
        read for partitions *topic* does not have. Ignored when it is *topic* on the same cluster.
    :param fallback_settings: settings of the fallback's cluster (default: *settings*).
    :param timeout: seconds for a read to the end, or for a write to be acknowledged.
    """

    def __init__(self, topic: str, settings: Mapping[str, Any], fallback_topic: str | None = None, *,
                 fallback_settings: Mapping[str, Any] | None = None, timeout: float = _DEFAULT_TIMEOUT_S) -> None:
        self.primary = _OffsetsTopic(topic, settings, timeout)
        fallback_settings = settings if fallback_settings is None else fallback_settings
        same = fallback_topic == topic and _cluster_key(fallback_settings) == _cluster_key(settings)
        self.fallback = _OffsetsTopic(fallback_topic, fallback_settings, timeout) if fallback_topic and not same else None

    @property
    def topic(self) -> str:
        return self.primary.topic

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        """Stored offsets of *partitions* of *connector*, keyed by the partition's canonical JSON."""
        wanted = {canonical(p): canonical([connector, p]) for p in partitions}
        found: dict[str, Mapping[str, Any]] = {}
        for store in (self.primary, self.fallback):
            if store is None or not wanted:
                break
            stored = store.read()
            for partition_text, key_text in list(wanted.items()):
                entry = stored.get(key_text)
                if entry is not None and entry[1] is not None:
                    found[partition_text] = entry[1]
                    del wanted[partition_text]
        return found

    def connector_offsets(self, connector: str) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """Every (partition, offset) stored for *connector*, the primary topic's before the fallback's."""
        pairs: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        for store in (self.fallback, self.primary):
            if store is None:
                continue
            for key_text, (partition, offset) in store.read().items():
                # a partition deleted from the primary topic is the fallback's, as in get(); a null
                # partition's is left out, as FileOffsetStore.connector_offsets says
                if offset is not None and partition is not None and json.loads(key_text)[0] == connector:
                    pairs[key_text] = (partition, offset)
        return list(pairs.values())

    def put(self, connector: str, offsets: Mapping[str, Mapping[str, Any] | None]) -> None:
        """Store *offsets* (partition as JSON text, :func:`ordered` or canonical → offset, ``None`` deletes).

        :raises ConnectorError: (retriable) if a record is not acknowledged (``acks=all``) in time.
        """
        if not offsets:
            return
        self._delete_from_fallback(connector, offsets)
        self.primary.write(connector, offsets)
        self.copy_to_fallback(connector, offsets)

    def put_in_transaction(self, producer: Any, connector: str,
                           offsets: Mapping[str, Mapping[str, Any] | None]) -> None:
        """Produce *offsets*' records to the primary topic with *producer*, a transactional producer
        whose transaction holds the records they are the offsets of (exactly-once source delivery,
        as Kafka Connect's ``ExactlyOnceWorkerSourceTask``): they are stored when it commits, and
        not at all when it aborts. Deletions go to the fallback topic first, as :meth:`put` writes
        them; :meth:`copy_to_fallback` once the transaction committed.
        """
        if not offsets:
            return
        self._delete_from_fallback(connector, offsets)
        _produce_all(producer, self.primary.topic, self.primary.records(connector, offsets))

    def _delete_from_fallback(self, connector: str, offsets: Mapping[str, Mapping[str, Any] | None]) -> None:
        """*offsets*' deletions written to the fallback topic first: else a deleted offset would come
        back from it."""
        if self.fallback is not None:
            self.fallback.write(connector, {p: None for p, o in offsets.items() if o is None})

    def copy_to_fallback(self, connector: str, offsets: Mapping[str, Mapping[str, Any] | None]) -> None:
        """The stored *offsets* to the fallback topic too, best effort (failures logged), as Kafka Connect
        copies them to the worker's topic."""
        if self.fallback is not None:
            kept = {p: o for p, o in offsets.items() if o is not None}
            self.fallback.write(connector, kept, wait=False)


def _client_settings(value: Any) -> dict[str, Any]:
    """confluent-kafka settings from a spec's client: a ``client_option`` value (resolved here) or settings."""
    if isinstance(value, Mapping):
        return dict(value)
    return client_settings(value or "{}")


def open_offset_store(spec: Mapping[str, Any]) -> FileOffsetStore | TopicOffsetStore:
    """The offset store a spec names; the one place that decides it.

    - ``{"kind": "file", "path": ...}`` (``kind`` may be left out): :class:`FileOffsetStore`.
    - ``{"kind": "topic", "topic": ..., "client": ..., "fallback": ..., "fallback_client": ...,
      "timeout": seconds}``: :class:`TopicOffsetStore`. ``client`` is the value of
      :func:`~connectd.runtime.kafka.clients.client_option` (a worker config as written, resolved in
      this process by its config providers) or confluent-kafka settings; ``fallback`` (the worker's
      topic) and ``fallback_client`` (default ``client``) are optional.

    Other keys (the hook's ``connector``) are ignored.

    :raises ConfigError: for a spec of no known kind.
    """
    kind = spec.get("kind", "file")
    if kind == "file":
        return FileOffsetStore(spec["path"])
    if kind == "topic":
        settings = _client_settings(spec.get("client"))
        fallback = spec.get("fallback_client")
        return TopicOffsetStore(spec["topic"], settings, spec.get("fallback") or None,
                                fallback_settings=None if fallback is None else _client_settings(fallback),
                                timeout=float(spec.get("timeout", _DEFAULT_TIMEOUT_S)))
    raise ConfigError([f"unknown offset store kind {kind!r}; expected 'file' or 'topic'"])


def store_offsets_hook(arg: str, batch_id: int, offsets: dict[str, str], records: int) -> None:
    """The Kafka writer's ``commit.hook`` for source tasks: stores a flushed batch's offsets.

    :param arg: JSON: an :func:`open_offset_store` spec with ``"connector": <name>``.
    :param offsets: source partition (:func:`ordered` JSON text) → source offset (JSON text),
        the last of each partition in the batch; called only after the batch is flushed.
    """
    spec = json.loads(arg)
    open_offset_store(spec).put(spec["connector"], {p: json.loads(o) for p, o in offsets.items()})
