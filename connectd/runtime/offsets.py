"""Source offsets in a local file (standalone mode's ``offset.storage.file.filename``).

Keys are Kafka Connect's: ``["<connector>", {<source partition>}]``; values
the source offset, ``None`` deleting it — the same records the offsets topic
holds in distributed mode, so moving between the two is a copy.

The file is JSON, rewritten whole on every commit: written to a temporary
file in the same directory, fsynced, renamed over the old one, and the
directory fsynced, so a crash leaves either the old or the new offsets,
never a torn file. Each task's query commits from its own process, so
writers take an exclusive ``flock`` on a lock file beside it.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from connectd.errors import ConfigError

__all__ = ["FileOffsetStore", "canonical", "store_offsets_hook"]

_FORMAT_VERSION = 1


def canonical(value: Any) -> str:
    """JSON text that is the same for equal values (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class FileOffsetStore:
    """Offsets of every connector in one file.

    :param path: the file; created on the first write.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _read(self) -> dict[str, Any]:
        """canonical key text → offset."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            document = json.loads(text)
            entries = document["offsets"]
            return {canonical(entry["key"]): entry["value"] for entry in entries}
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError([f"{self.path}: not a connectd offsets file ({exc}); "
                               "move it away to start without stored offsets"]) from exc

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
        """Every (partition, offset) stored for *connector*."""
        pairs = []
        for key_text, value in self._read().items():
            key = json.loads(key_text)
            if key[0] == connector and value is not None:
                pairs.append((key[1], value))
        return pairs

    def put(self, connector: str, offsets: Mapping[str, Mapping[str, Any] | None]) -> None:
        """Store *offsets* (partition as canonical JSON text → offset, ``None`` deletes) atomically."""
        if not offsets:
            return
        with self._locked():
            stored = self._read()
            for partition_text, value in offsets.items():
                key = canonical([connector, json.loads(partition_text)])
                if value is None:
                    stored.pop(key, None)
                else:
                    stored[key] = value
            self._write(stored)

    def _write(self, stored: Mapping[str, Any]) -> None:
        document = {
            "version": _FORMAT_VERSION,
            "offsets": [{"key": json.loads(k), "value": v} for k, v in sorted(stored.items())],
        }
        handle, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(document, out, indent=1)
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


def store_offsets_hook(arg: str, batch_id: int, offsets: dict[str, str], records: int) -> None:
    """The Kafka writer's ``commit.hook`` for standalone source tasks.

    :param arg: JSON ``{"path": <offsets file>, "connector": <name>}``.
    :param offsets: source partition (canonical JSON text) → source offset (JSON text),
        the last of each partition in the batch; called only after the batch is flushed.
    """
    spec = json.loads(arg)
    FileOffsetStore(spec["path"]).put(spec["connector"], {p: json.loads(o) for p, o in offsets.items()})
