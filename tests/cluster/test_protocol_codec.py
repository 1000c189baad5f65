"""The Connect group protocol's bytes: round trips, golden bytes written by hand from Kafka's
ConnectProtocol and IncrementalCooperativeConnectProtocol schemas, and bytes made by Java code that
writes them as Kafka's Schemas do (tests/support/java/KafkaConnectProtocol.java)."""

from __future__ import annotations

import struct

import pytest

from connectd.cluster.protocol import (
    CONFIG_MISMATCH,
    ConnectAssignment,
    ConnectorTaskId,
    ProtocolError,
    WorkerLoad,
    WorkerMetadata,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def s(v):
    raw = v.encode()
    return i16(len(raw)) + raw


T = ConnectorTaskId

ASSIGNMENT = ConnectAssignment(
    error=0,
    leader="leader-1",
    leader_url="http://l:8083/",
    config_offset=17,
    connectors=("a",),
    tasks=(T("a", 0), T("b", 2)),
    revoked=WorkerLoad.of(["c"], [T("c", 1)]),
    delay_ms=2500,
)

ASSIGNMENT_V2_BYTES = b"".join([
    i16(2),                      # version
    i16(0),                      # error
    s("leader-1"),
    s("http://l:8083/"),
    i64(17),                     # config offset
    i32(2),                      # assignment: 2 connectors
    s("a"), i32(2), i32(-1), i32(0),   # the connector itself, then task 0
    s("b"), i32(1), i32(2),
    i32(1),                      # revoked
    s("c"), i32(2), i32(-1), i32(1),
    i32(2500),                   # delay
])


def test_assignment_golden_bytes():
    assert encode_assignment(ASSIGNMENT, 2) == ASSIGNMENT_V2_BYTES
    assert decode_assignment(ASSIGNMENT_V2_BYTES) == ASSIGNMENT


def test_metadata_golden_bytes_embed_the_allocation_as_an_assignment():
    metadata = WorkerMetadata("http://w:8083", 42, WorkerLoad.of(["x"], [T("x", 0), T("x", 3)]))
    allocation = b"".join([
        i16(1), i16(0), s(""), s(""), i64(42),
        i32(1), s("x"), i32(3), i32(-1), i32(0), i32(3),
        i32(0),                  # nothing revoked
        i32(0),                  # no delay
    ])
    expected = i16(1) + s("http://w:8083") + i64(42) + i32(len(allocation)) + allocation
    assert encode_metadata(metadata, 1) == expected
    assert decode_metadata(expected) == metadata


def test_metadata_without_an_assignment_has_a_null_allocation():
    metadata = WorkerMetadata("http://w:8083", -1, None)
    raw = encode_metadata(metadata, 2)
    assert raw == i16(2) + s("http://w:8083") + i64(-1) + i32(-1)
    assert decode_metadata(raw) == metadata


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(
    "assignment",
    [
        ASSIGNMENT,
        ConnectAssignment(CONFIG_MISMATCH, "l", "http://l", 99),
        ConnectAssignment(0, "", "", 0, revoked=WorkerLoad.of(tasks=[T("z", 5)])),
        ConnectAssignment(0, "lé", "http://ü", 2**40, connectors=("a", "b"), tasks=(T("b", 0),)),
    ],
)
def test_assignment_round_trip(assignment, version):
    raw = encode_assignment(assignment, version)
    assert struct.unpack(">h", raw[:2])[0] == version
    assert decode_assignment(raw) == assignment


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(
    "metadata",
    [
        WorkerMetadata("http://a:8083/", 0),
        WorkerMetadata("http://a:8083/", 12, WorkerLoad()),
        WorkerMetadata("https://b", 7, WorkerLoad.of(["a", "b"], [T("a", 0), T("c", 9)])),
    ],
)
def test_metadata_round_trip(metadata, version):
    assert decode_metadata(encode_metadata(metadata, version)) == metadata


def test_eager_version_0_bytes_are_read():
    # ConnectProtocol v0: no allocation in the metadata, no revoked/delay in the assignment.
    assert decode_metadata(i16(0) + s("http://e") + i64(3)) == WorkerMetadata("http://e", 3, None)
    raw = i16(0) + i16(0) + s("l") + s("http://l") + i64(3) + i32(1) + s("a") + i32(1) + i32(-1)
    assert decode_assignment(raw) == ConnectAssignment(0, "l", "http://l", 3, connectors=("a",))


def test_null_arrays_read_as_empty():
    raw = i16(1) + i16(0) + s("l") + s("u") + i64(3) + i32(-1) + i32(-1) + i32(0)
    assert decode_assignment(raw) == ConnectAssignment(0, "l", "u", 3)


@pytest.mark.parametrize("raw", [b"", ASSIGNMENT_V2_BYTES[:9], i16(-1) + ASSIGNMENT_V2_BYTES[2:]])
def test_bad_bytes_raise_protocol_error(raw):
    with pytest.raises(ProtocolError):
        decode_assignment(raw)


def test_only_versions_0_to_2_are_written_and_version_0_cannot_revoke_or_delay():
    with pytest.raises(ValueError, match="0, 1 or 2"):
        encode_assignment(ASSIGNMENT, 3)
    with pytest.raises(ValueError, match="eager"):
        encode_assignment(ASSIGNMENT, 0)  # it revokes and delays
    with pytest.raises(ValueError, match="eager"):
        encode_assignment(ConnectAssignment(0, "l", "u", 1, delay_ms=5), 0)


def test_eager_version_0_golden_bytes():
    # ConnectProtocol: header {version}, CONFIG_STATE_V0 {url, config_offset}; nothing more, whatever
    # the member runs (and no connectd extension: a warming member cannot say so under eager).
    metadata = WorkerMetadata("http://w:8083", 42, WorkerLoad.of(["x"]), warming=True)
    assert encode_metadata(metadata, 0) == i16(0) + s("http://w:8083") + i64(42)
    assert decode_metadata(encode_metadata(metadata, 0)) == WorkerMetadata("http://w:8083", 42)
    # ASSIGNMENT_V0 {error, leader, leader_url, config_offset, assignment}: no revoked, no delay
    eager = ConnectAssignment(0, "leader-1", "http://l:8083/", 17, connectors=("a",), tasks=(T("a", 0), T("b", 2)))
    raw = b"".join([i16(0), i16(0), s("leader-1"), s("http://l:8083/"), i64(17),
                    i32(2), s("a"), i32(2), i32(-1), i32(0), s("b"), i32(1), i32(2)])
    assert encode_assignment(eager, 0) == raw
    assert decode_assignment(raw) == eager


def test_version_0_metadata_is_read_as_kafka_reads_it_whatever_follows():
    # ConnectProtocol.deserializeMetadata reads the two fields and no further.
    raw = i16(0) + s("http://e") + i64(3) + i32(-1) + s("connectd") + b"\x01"
    assert decode_metadata(raw) == WorkerMetadata("http://e", 3, None)


@pytest.fixture(scope="module")
def kafka_bytes(java_program):
    """``kafka_bytes(*args) -> bytes``: what KafkaConnectProtocol.java writes for *args*."""
    run = java_program("KafkaConnectProtocol")
    return lambda *args: bytes.fromhex(run(*args).strip())


@pytest.mark.parametrize("version", [0, 1, 2])
def test_assignments_are_the_bytes_kafkas_schemas_write(kafka_bytes, version):
    revoked = WorkerLoad() if version == 0 else WorkerLoad.of(["c"], [T("c", 1)])
    delay = 0 if version == 0 else 2500
    assignment = ConnectAssignment(0, "leader-é", "http://l:8083/", 2**40, connectors=("a",),
                                   tasks=(T("a", 0), T("a", 7)), revoked=revoked, delay_ms=delay)
    java = kafka_bytes("assignment", version, 0, "leader-é", "http://l:8083/", 2**40, "a:-1,0,7",
                       *(() if version == 0 else ("c:-1,1", delay)))
    assert encode_assignment(assignment, version) == java
    assert decode_assignment(java) == assignment
    mismatch = kafka_bytes("assignment", version, CONFIG_MISMATCH, "l", "http://l", 99, "",
                           *(() if version == 0 else ("", 0)))
    assert decode_assignment(mismatch) == ConnectAssignment(CONFIG_MISMATCH, "l", "http://l", 99)
    assert encode_assignment(ConnectAssignment(CONFIG_MISMATCH, "l", "http://l", 99), version) == mismatch


@pytest.mark.parametrize("version", [0, 1, 2])
def test_metadata_is_the_bytes_kafkas_schemas_write(kafka_bytes, version):
    first = WorkerMetadata("http://w:8083/", -1)
    assert encode_metadata(first, version) == kafka_bytes("metadata", version, "http://w:8083/", -1, "null")
    load = WorkerLoad.of(["x"], [T("x", 0), T("x", 3)])
    running = WorkerMetadata("http://w:8083/", 42, load)
    if version == 0:  # eager: what it runs is not said
        assert encode_metadata(running, 0) == kafka_bytes("metadata", 0, "http://w:8083/", 42)
        return
    allocation = kafka_bytes("assignment", version, 0, "", "", 42, "x:-1,0,3", "", 0)
    java = kafka_bytes("metadata", version, "http://w:8083/", 42, allocation.hex())
    assert encode_metadata(running, version) == java
    assert decode_metadata(java) == running


def test_an_assignment_ending_after_the_config_offset_takes_kafkas_defaults():
    # ASSIGNMENT_V1 tolerates missing fields with defaults: assignment and revoked null, delay 0.
    raw = i16(1) + i16(CONFIG_MISMATCH) + s("l") + s("http://l") + i64(42)
    assert decode_assignment(raw) == ConnectAssignment(CONFIG_MISMATCH, "l", "http://l", 42)


def test_strings_that_are_not_utf8_are_replaced_as_kafka_reads_them():
    raw = i16(1) + i16(0) + i16(2) + b"\xff\xfe" + s("u") + i64(3)
    assert decode_assignment(raw).leader == "\ufffd\ufffd"


def test_metadata_as_a_kafka_connect_worker_writes_it():
    # IncrementalCooperativeConnectProtocol.serializeMetadata(state, sessioned=true): header v2,
    # CONFIG_STATE_V1, ALLOCATION_V1 holding serializeAssignment: header v2 + ASSIGNMENT_V1 as
    # ExtendedAssignment.toStruct writes it (connectors in HashSet order, revoked as an array).
    allocation = b"".join([
        i16(2), i16(0), s("w1"), s("http://w1:8083/"), i64(9),
        i32(2), s("b"), i32(2), i32(-1), i32(0), s("a"), i32(1), i32(-1),
        i32(0),  # nothing revoked
        i32(0),  # no delay
    ])
    raw = i16(2) + s("http://w2:8083/") + i64(11) + i32(len(allocation)) + allocation
    assert decode_metadata(raw) == WorkerMetadata("http://w2:8083/", 11, WorkerLoad.of(["a", "b"], [T("b", 0)]))
    # a worker that has had no assignment yet writes a null allocation (ExtendedAssignment.empty())
    assert decode_metadata(i16(1) + s("http://w3") + i64(-1) + i32(-1)) == WorkerMetadata("http://w3", -1, None)


def test_a_warming_member_says_so_after_the_allocation_where_kafka_reads_nothing():
    """connectd's extension follows the fields Kafka's deserializeMetadata reads, in order: a Kafka
    Connect leader reads the same member; a metadata without it (Kafka's) reads as not warming."""
    metadata = WorkerMetadata("http://w:8083", 42, None, warming=True)
    raw = encode_metadata(metadata, 2)
    plain = encode_metadata(WorkerMetadata("http://w:8083", 42, None), 2)
    assert raw == plain + s("connectd") + bytes([1])
    assert decode_metadata(raw) == metadata
    assert decode_metadata(plain).warming is False
    # Bytes after the allocation that are someone else's (a later Kafka field) are no extension.
    assert decode_metadata(plain + i32(7)).warming is False
    assert decode_metadata(plain + s("other") + bytes([1])).warming is False
