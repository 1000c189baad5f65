"""Kafka Connect's own offsets file: what ``FileOffsetBackingStore`` writes, read and written here.

A standalone Kafka Connect worker keeps its source offsets in
``offset.storage.file.filename`` as one Java-serialized ``java.util.HashMap``
of ``byte[]`` to ``byte[]`` (``ObjectOutputStream.writeObject``): each key the
UTF-8 JSON ``["<connector>",{<source partition>}]`` and each value the JSON
offset, or ``null``, both as its JsonConverter writes them. A worker moved
from Kafka Connect reads that file and keeps writing it in that format, so it
resumes every source where it was and could move back.

The Java serialization stream is read and written by javaobj-py3's v1 codec
(:mod:`javaobj.v1`), which round-trips a stream byte for byte. Writing a map
with other entries rebuilds what ``HashMap.writeObject`` writes: its two
fields (``loadFactor``, ``threshold``), then block data with the number of
buckets and of entries, then each key and value. The map read stands as the
template for its class descriptors, so the file keeps the classes it came
with.
"""

from __future__ import annotations

import struct
from typing import Any

import javaobj.v1 as javaobj
from javaobj.v1.beans import JavaByteArray, JavaClass

__all__ = ["JAVA_STREAM_MAGIC", "JavaOffsetsFile", "is_java_serialized"]

#: ``ObjectOutputStream``'s stream header: magic 0xACED, version 5.
JAVA_STREAM_MAGIC = b"\xac\xed\x00\x05"

#: ``byte[]``'s class descriptor, for a map read with no entry to take it from.
_BYTE_ARRAY_UID = -5984413125824719648
_SC_SERIALIZABLE = 0x02
_LOAD_FACTOR = 0.75


def is_java_serialized(data: bytes) -> bool:
    """Whether *data* starts as a Java serialization stream does."""
    return data.startswith(JAVA_STREAM_MAGIC)


class JavaOffsetsFile:
    """One Java-serialized ``HashMap<byte[], byte[]>``: its entries, and a writer of new ones.

    :raises ValueError: *data* is a Java stream but not a map of byte arrays.
    """

    def __init__(self, data: bytes) -> None:
        try:
            self._map = javaobj.loads(data)
        except Exception as exc:  # noqa: BLE001 - the codec's own errors are of many kinds
            raise ValueError(f"not a readable Java serialization stream ({type(exc).__name__}: {exc})") from exc
        name = self._map.get_class().name if hasattr(self._map, "get_class") else type(self._map).__name__
        if not isinstance(self._map, dict) or name != "java.util.HashMap":
            raise ValueError(f"expected a java.util.HashMap, as Kafka's FileOffsetBackingStore writes, found {name}")
        self.entries: list[tuple[bytes, bytes | None]] = []
        for key, value in self._map.items():
            if not isinstance(key, JavaByteArray) or not (value is None or isinstance(value, JavaByteArray)):
                raise ValueError("expected a map of byte[] to byte[], as Kafka's FileOffsetBackingStore writes")
            self.entries.append((_bytes(key), None if value is None else _bytes(value)))

    def dumps(self, entries: list[tuple[bytes, bytes | None]]) -> bytes:
        """The stream of a map of *entries*, with the classes of the map read."""
        byte_array = self._byte_array_class()
        capacity = 16
        while capacity * _LOAD_FACTOR < len(entries):
            capacity *= 2
        # Block data is a plain str to the codec (a Java String is its JavaString): bytes as Latin-1.
        annotations: list[Any] = [struct.pack(">ii", capacity, len(entries)).decode("latin-1")]
        for key, value in entries:
            annotations.append(JavaByteArray(key, byte_array))
            annotations.append(None if value is None else JavaByteArray(value, byte_array))
        self._map.loadFactor = _LOAD_FACTOR
        self._map.threshold = int(capacity * _LOAD_FACTOR)
        self._map.annotations = annotations
        return javaobj.dumps(self._map)

    def _byte_array_class(self) -> JavaClass:
        for key in self._map:
            return key.classdesc
        descriptor = JavaClass()
        descriptor.name, descriptor.serialVersionUID, descriptor.flags = "[B", _BYTE_ARRAY_UID, _SC_SERIALIZABLE
        return descriptor


def _bytes(array: JavaByteArray) -> bytes:
    return struct.pack(f"{len(array)}b", *array)
