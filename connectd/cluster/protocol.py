"""What the members of a Connect group say to each other.

Kafka Connect's group protocol (protocol type ``connect``): each member's
metadata names its REST URL, the config-topic offset it has read up to and
what it runs now; the leader answers each member with an assignment. The
sub-protocols are ``sessioned`` (version 2, KIP-507), ``compatible``
(version 1, KIP-415) and ``default`` (version 0, ``connect.protocol=eager``).
A worker offers them as Kafka's ``WorkerCoordinator`` does
(:data:`OFFERED`): ``sessioned`` → sessioned, compatible, default;
``compatible`` → compatible, default; ``eager`` → default. The coordinator
picks one every member offers, so one eager worker makes the whole group
eager (how Kafka Connect rolls a cluster from eager to cooperative).

Work is named as in Kafka Connect: a connector (its ``Connector`` instance
runs on one worker) or a :class:`ConnectorTaskId`.

Wire format (Kafka's ``IncrementalCooperativeConnectProtocol`` and, for
version 0, ``ConnectProtocol``; big-endian, strings are int16 length + UTF-8,
arrays int32 count, nullable bytes int32 length with -1 for null)::

    metadata   = version:int16 url:string config_offset:int64
                 allocation:nullable_bytes      # versions 1, 2: an encoded assignment, or null
                 [extension]                    # connectd's, only while it has something to say
    extension  = "connectd":string flags:int8   # flags bit 0: warming (takes no work yet)
    assignment = version:int16 error:int16 leader:string leader_url:string
                 config_offset:int64 assignment:[work]
                 revoked:[work] delay:int32     # versions 1, 2
    work       = connector:string tasks:[int32]  # task -1 is the connector itself

The allocation inside a metadata carries the metadata's version. A version
0 metadata ends after the config offset and a version 0 assignment after
its work: under ``default`` an assignment is everything the member runs (it
stopped all its work before it joined). The extension is connectd's, in
versions 1 and 2 only: Kafka's workers read a metadata's fields in order
and ignore what follows
(``IncrementalCooperativeConnectProtocol.deserializeMetadata``), so a Kafka
Connect leader reads such a member as any other; a connectd leader reads
a metadata without it (Kafka's, or connectd's at ease) as "not warming".
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from connectd.errors import ConnectdError

__all__ = [
    "COMPATIBLE",
    "CONFIG_MISMATCH",
    "EAGER",
    "NO_ERROR",
    "OFFERED",
    "SESSIONED",
    "ConnectAssignment",
    "ConnectorTaskId",
    "ProtocolError",
    "WorkerLoad",
    "WorkerMetadata",
    "decode_assignment",
    "decode_metadata",
    "encode_assignment",
    "encode_metadata",
]

PROTOCOL_TYPE = "connect"
COMPATIBLE = "compatible"  # version 1: incremental cooperative rebalancing (KIP-415)
SESSIONED = "sessioned"  # version 2: and signed internal requests (KIP-507)
EAGER = "default"  # version 0 (connect.protocol=eager): every rebalance stops all work first
VERSIONS = {EAGER: 0, COMPATIBLE: 1, SESSIONED: 2}
#: ``connect.protocol`` → the sub-protocols a worker offers, in order of preference (Kafka's).
OFFERED = {"eager": [EAGER], COMPATIBLE: [COMPATIBLE, EAGER], SESSIONED: [SESSIONED, COMPATIBLE, EAGER]}

NO_ERROR = 0
CONFIG_MISMATCH = 1  # the leader could not read the config topic as far as a member had


class ConnectorTaskId(NamedTuple):
    """One task of a connector; orders by connector, then task number."""

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass(frozen=True)
class WorkerLoad:
    """What one worker runs: connectors and tasks (sorted tuples, so equal loads compare equal)."""

    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()

    @classmethod
    def of(cls, connectors=(), tasks=()) -> WorkerLoad:
        return cls(tuple(sorted(set(connectors))), tuple(sorted(set(tasks))))

    def __len__(self) -> int:
        return len(self.connectors) + len(self.tasks)


@dataclass(frozen=True)
class WorkerMetadata:
    """A member's JoinGroup metadata: where its REST API is, how far it has read
    the config topic, and what it ran in the last generation (``None`` if nothing yet)."""

    url: str
    config_offset: int
    assignment: WorkerLoad | None = None
    #: The last assignment the member received (leader, offset, revoked, delay), written around
    #: ``assignment`` in the metadata as Kafka Connect writes its assignment snapshot; ``None``: none yet.
    last: ConnectAssignment | None = None
    #: The member is in the group but cannot run work yet (its Spark is still warming up): a connectd
    #: leader gives it none until it rejoins without this (connectd's extension, see above).
    warming: bool = False


@dataclass(frozen=True)
class ConnectAssignment:
    """The leader's answer to one member in SyncGroup.

    ``connectors``/``tasks`` are what it is *newly* given to start in this
    round, ``revoked`` what it must stop before rejoining; ``delay_ms`` > 0
    asks it to rejoin after that long (lost work is held for its worker to
    come back). ``error`` is :data:`CONFIG_MISMATCH` when the member must
    read the config topic up to ``config_offset`` and rejoin.
    """

    error: int
    leader: str
    leader_url: str
    config_offset: int
    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()
    revoked: WorkerLoad = field(default_factory=WorkerLoad)
    delay_ms: int = 0

    @property
    def failed(self) -> bool:
        return self.error != NO_ERROR


# --- binary form -------------------------------------------------------------

CONNECTOR_TASK = -1  # the task number that stands for the connector itself

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
#: connectd's extension of a member's metadata, and its flags.
_EXTENSION = "connectd"
_WARMING = 0x01
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class ProtocolError(ConnectdError):
    """Bytes from another member that are not a Connect metadata or assignment."""


def encode_metadata(metadata: WorkerMetadata, version: int) -> bytes:
    """A member's JoinGroup metadata for the sub-protocol of ``version`` (0, 1 or 2).

    Version 0 is Kafka's ``ConnectProtocol``: URL and config offset, nothing else.

    The allocation (what the member runs now) is written as Kafka writes it, a
    whole assignment: the last one the member received (``metadata.last``: its
    leader, offset, revocations and delay) with the connectors and tasks it
    runs now, or error 0, no leader, ``config_offset`` and nothing revoked when
    it has none. The leader reads only its connectors and tasks; the rest makes
    a member's metadata change from one round to the next as Kafka Connect's
    does (a coordinator may answer an unchanged member's JoinGroup without a
    new generation). ``None`` is written as a null allocation (a member that
    has run nothing yet).

    :param metadata: what to tell the leader.
    :param version: 0 (``default``), 1 (``compatible``) or 2 (``sessioned``).
    """
    _check_version(version)
    out = bytearray()
    out += _INT16.pack(version)
    _write_string(out, metadata.url)
    out += _INT64.pack(metadata.config_offset)
    if version == 0:
        return bytes(out)
    if metadata.assignment is None:
        out += _INT32.pack(-1)
    else:
        load = metadata.assignment
        last = metadata.last or ConnectAssignment(NO_ERROR, "", "", metadata.config_offset)
        allocation = encode_assignment(replace(last, connectors=load.connectors, tasks=load.tasks), version)
        out += _INT32.pack(len(allocation))
        out += allocation
    if metadata.warming:
        _write_string(out, _EXTENSION)
        out += _INT8.pack(_WARMING)
    return bytes(out)


def decode_metadata(data: bytes) -> WorkerMetadata:
    """Read a member's JoinGroup metadata (any version from 0 on).

    :raises ProtocolError: if the bytes are cut short or the version is negative.
    """
    reader = _Reader(data)
    version = _read_version(reader)
    url = reader.string()
    config_offset = reader.int64()
    assignment = None
    if version == 0:  # ConnectProtocol's: what follows (nothing, from Kafka) is not read
        return WorkerMetadata(url=url, config_offset=config_offset)
    if not reader.at_end():
        allocation = reader.nullable_bytes()
        if allocation is not None:
            previous = decode_assignment(allocation)
            assignment = WorkerLoad.of(previous.connectors, previous.tasks)
    return WorkerMetadata(url=url, config_offset=config_offset, assignment=assignment,
                          warming=bool(_extension_flags(reader) & _WARMING))


def _extension_flags(reader: _Reader) -> int:
    """The flags of connectd's extension after a metadata's allocation; 0 when there is none (or
    the bytes there are someone else's)."""
    try:
        if reader.at_end() or reader.string() != _EXTENSION:
            return 0
        return reader.int8()
    except ProtocolError:
        return 0


def encode_assignment(assignment: ConnectAssignment, version: int) -> bytes:
    """The leader's SyncGroup answer to one member, for the sub-protocol of ``version``.

    :param assignment: what the member is given and must give up.
    :param version: 0 (``default``: all the member runs; nothing revoked, no delay, which it
        cannot say), 1 (``compatible``) or 2 (``sessioned``).
    """
    _check_version(version)
    if version == 0 and (len(assignment.revoked) or assignment.delay_ms):
        raise ValueError("a version 0 (eager) assignment has no revocations and no delay")
    out = bytearray()
    out += _INT16.pack(version)
    out += _INT16.pack(assignment.error)
    _write_string(out, assignment.leader)
    _write_string(out, assignment.leader_url)
    out += _INT64.pack(assignment.config_offset)
    _write_work(out, assignment.connectors, assignment.tasks)
    if version == 0:
        return bytes(out)
    _write_work(out, assignment.revoked.connectors, assignment.revoked.tasks)
    out += _INT32.pack(assignment.delay_ms)
    return bytes(out)


def decode_assignment(data: bytes) -> ConnectAssignment:
    """Read an assignment (any version from 0 on; missing trailing fields take
    Kafka's defaults: nothing assigned or revoked, no delay). Connectors and tasks come back sorted.

    :raises ProtocolError: if the bytes are cut short or the version is negative.
    """
    reader = _Reader(data)
    _read_version(reader)
    error = reader.int16()
    leader = reader.string()
    leader_url = reader.string()
    config_offset = reader.int64()
    connectors, tasks = _read_work(reader) if not reader.at_end() else ([], [])
    revoked = WorkerLoad()
    delay_ms = 0
    if not reader.at_end():
        revoked = WorkerLoad.of(*_read_work(reader))
    if not reader.at_end():
        delay_ms = reader.int32()
    return ConnectAssignment(
        error=error,
        leader=leader,
        leader_url=leader_url,
        config_offset=config_offset,
        connectors=tuple(sorted(set(connectors))),
        tasks=tuple(sorted(set(tasks))),
        revoked=revoked,
        delay_ms=delay_ms,
    )


def _check_version(version: int) -> None:
    if version not in VERSIONS.values():
        raise ValueError(f"Connect protocol version {version} cannot be written (0, 1 or 2)")


def _read_version(reader: _Reader) -> int:
    version = reader.int16()
    if version < 0:
        raise ProtocolError(f"unsupported Connect protocol version {version}")
    return version


def _write_string(out: bytearray, value: str) -> None:
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"string too long for the Connect protocol ({len(raw)} bytes)")
    out += _INT16.pack(len(raw))
    out += raw


def _write_work(out: bytearray, connectors, tasks) -> None:
    # Grouped by connector as Kafka does: the connector's own entry (-1) first,
    # then its tasks, connectors in order of first mention.
    grouped: dict[str, list[int]] = {}
    for connector in connectors:
        grouped.setdefault(connector, []).append(CONNECTOR_TASK)
    for task in tasks:
        grouped.setdefault(task.connector, []).append(task.task)
    out += _INT32.pack(len(grouped))
    for connector, numbers in grouped.items():
        _write_string(out, connector)
        out += _INT32.pack(len(numbers))
        for number in numbers:
            out += _INT32.pack(number)


def _read_work(reader: _Reader) -> tuple[list[str], list[ConnectorTaskId]]:
    connectors: list[str] = []
    tasks: list[ConnectorTaskId] = []
    count = reader.int32()
    for _ in range(max(count, 0)):  # -1 is a null array: nothing
        connector = reader.string()
        for _ in range(max(reader.int32(), 0)):
            number = reader.int32()
            if number == CONNECTOR_TASK:
                connectors.append(connector)
            else:
                tasks.append(ConnectorTaskId(connector, number))
    return connectors, tasks


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = memoryview(bytes(data))
        self._pos = 0

    def at_end(self) -> bool:
        return self._pos >= len(self._data)

    def _take(self, size: int) -> memoryview:
        if size < 0 or self._pos + size > len(self._data):
            raise ProtocolError(
                f"Connect protocol bytes end early (need {size} at {self._pos} of {len(self._data)})"
            )
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def int8(self) -> int:
        return _INT8.unpack(self._take(1))[0]

    def int16(self) -> int:
        return _INT16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _INT32.unpack(self._take(4))[0]

    def int64(self) -> int:
        return _INT64.unpack(self._take(8))[0]

    def string(self) -> str:
        size = self.int16()
        if size < 0:
            raise ProtocolError("null string where the Connect protocol needs one")
        # As Kafka's Utils.utf8: bytes that are not UTF-8 are replaced, not refused.
        return bytes(self._take(size)).decode("utf-8", "replace")

    def nullable_bytes(self) -> bytes | None:
        size = self.int32()
        if size == -1:
            return None
        return bytes(self._take(size))
