"""Records exactly as a Kafka Connect worker writes them, read by connectd's stores (no broker).

The bytes are written out by hand from Kafka's own code: ``KafkaConfigBackingStore`` and
``KafkaStatusBackingStore`` serialise a Struct with the internal ``JsonConverter``
(``schemas.enable=false``), which is Jackson's compact JSON with the fields in schema order;
keys are plain strings (``StringSerializer``). Each record goes through the store's reading
callback as the topic's consumer would hand it over.
"""

from __future__ import annotations

import itertools

import pytest
from aiokafka.structs import ConsumerRecord

from connectd.cluster.config_store import (
    ConfigSnapshot,
    KafkaConfigStore,
    RestartRequest,
    SessionKey,
)
from connectd.cluster.protocol import ConnectorTaskId
from connectd.cluster.status_store import KafkaStatusStore, TopicStatus
from connectd.status import Status

from ._listeners import Recorder

T = ConnectorTaskId
_offsets = itertools.count()


def record(key: bytes | str | None, value: bytes | None, offset: int | None = None, timestamp: int = 1_700_000_000_000,
           partition: int = 0) -> ConsumerRecord:
    raw_key = key.encode() if isinstance(key, str) else key
    return ConsumerRecord("t", partition, next(_offsets) if offset is None else offset, timestamp, 0, raw_key, value,
                          None, len(raw_key or b""), len(value or b""), [])


def config_store(listener=None) -> KafkaConfigStore:
    return KafkaConfigStore("connect-configs", {}, {}, listener=listener)


def read_config(records: list[tuple[bytes | str | None, bytes | None]], listener=None, started=False) -> ConfigSnapshot:
    store = config_store(listener)
    store._started = started  # as after start(): listeners are told
    for offset, (key, value) in enumerate(records):
        store._read(record(key, value, offset))
    return store.snapshot()


# --- the config topic ---------------------------------------------------------

def test_a_kafka_connect_config_topic_reads_as_kafka_reads_it():
    listener = Recorder()
    snapshot = read_config([
        # POST /connectors with "initial_state": "STOPPED" (KIP-980): target state first, STATE_V1 with v2
        ("target-state-jdbc-src", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        ("connector-jdbc-src", (b'{"properties":{"connector.class":"io.confluent.connect.jdbc.JdbcSourceConnector",'
                                b'"tasks.max":"2","name":"jdbc-src","topic.prefix":"db-","password":null}}')),
        ("task-jdbc-src-0", b'{"properties":{"tables":"a","task.class":"x.T"}}'),
        ("task-jdbc-src-1", b'{"properties":{"tables":"b","task.class":"x.T"}}'),
        ("commit-jdbc-src", b'{"tasks":2}'),
        # exactly-once leader's task-count record (KIP-618): TASK_COUNT_RECORD_V0
        ("tasks-fencing-jdbc-src", b'{"task-count":2}'),
        # PUT /connectors/{c}/stop: an empty task set, then STOPPED
        ("commit-jdbc-src", b'{"tasks":0}'),
        ("target-state-jdbc-src", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        # a connector of a pre-KIP-875 worker: TARGET_STATE_V0, no state.v2
        ("connector-old", b'{"properties":{"connector.class":"FileStreamSink","topics":"t"}}'),
        ("target-state-old", b'{"state":"PAUSED"}'),
        # POST /connectors/{c}/restart?includeTasks=true&onlyFailed=true: RESTART_REQUEST_V0
        ("restart-connector-old", b'{"include-tasks":true,"only-failed":true}'),
        # KIP-507 session key: SESSION_KEY_V0, key base64 (java.util.Base64 encoder)
        ("session-key", (b'{"key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","algorithm":"HmacSHA256",'
                         b'"creation-timestamp":1700000000123}')),
        # KIP-976 cluster-wide log level: LOGGER_LEVEL_V0
        ("logger-cluster-org.apache.kafka.connect", b'{"level":"DEBUG"}'),
        # DELETE /connectors/gone after it had tasks: connector and target-state tombstones
        ("connector-gone", b'{"properties":{"connector.class":"X"}}'),
        ("task-gone-0", b'{"properties":{"k":"v"}}'),
        ("commit-gone", b'{"tasks":1}'),
        ("connector-gone", None),
        ("target-state-gone", None),
    ], listener)
    assert snapshot.offset == 18
    assert snapshot.connectors() == ["jdbc-src", "old"]
    assert snapshot.connector_configs["jdbc-src"]["password"] is None
    assert dict(snapshot.target_states) == {"jdbc-src": "STOPPED", "old": "PAUSED"}
    assert dict(snapshot.task_counts) == {"jdbc-src": 0}
    assert snapshot.tasks("jdbc-src") == [] and snapshot.task_configs == {}
    assert snapshot.session_key == SessionKey(bytes(range(32)), "HmacSHA256", 1_700_000_000_123)
    assert snapshot.inconsistent == frozenset()
    assert listener.calls == []  # read before the store started: in the snapshot, not told


def test_records_read_after_start_are_told_as_kafka_tells_them():
    listener = Recorder()
    read_config([
        ("connector-c", b'{"properties":{"tasks.max":"1"}}'),
        ("task-c-0", b'{"properties":{"k":"v"}}'),
        ("commit-c", b'{"tasks":1}'),
        ("target-state-c", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        ("target-state-c", b'{"state":"PAUSED","state.v2":"PAUSED"}'),  # unchanged: not told
        ("restart-connector-c", b'{"include-tasks":false,"only-failed":true}'),
        ("restart-connector-c", b'{"include-tasks":"yes"}'),  # not booleans: Kafka's defaults, false
        ("tasks-fencing-c", b'{"task-count":1}'),  # tolerated, nothing told
        ("session-key", b'{"key":"AAEC","algorithm":"HmacSHA256","creation-timestamp":5}'),
        ("logger-cluster-org.example", b'{"level":"TRACE"}'),
        ("connector-c", None),
        ("target-state-c", None),  # the connector's removal was told already
    ], listener, started=True)
    assert listener.calls == [
        ("connector", "c"),
        ("tasks", [T("c", 0)]),
        ("target", "c"),
        ("restart", RestartRequest("c", include_tasks=False, only_failed=True)),
        ("restart", RestartRequest("c", include_tasks=False, only_failed=False)),
        ("session", SessionKey(b"\x00\x01\x02", "HmacSHA256", 5)),
        ("logger", "org.example", "TRACE"),
        ("connector", "c"),
    ]


def test_kafkas_compaction_examples_from_its_javadoc():
    # [connector-foo, task-foo-1, task-foo-2, commit-foo(2), task-foo-1, commit-foo(1)] compacted to
    # [connector-foo, task-foo-2, commit-foo(2), task-foo-1, commit-foo(1)]: the first commit is
    # incomplete, the second repairs it (task-foo-2 is a leftover beyond the count).
    repaired = read_config([
        ("connector-foo", b'{"properties":{}}'),
        ("task-foo-1", b'{"properties":{"n":"1 old"}}'),
        ("commit-foo", b'{"tasks":2}'),
        ("task-foo-0", b'{"properties":{"n":"0 new"}}'),
        ("commit-foo", b'{"tasks":1}'),
    ])
    assert repaired.inconsistent == frozenset()
    assert repaired.tasks("foo") == [T("foo", 0)]
    assert dict(repaired.task_configs[T("foo", 0)]) == {"n": "0 new"}
    # A leader that died mid-write: [connector-foo, task-foo-1(old), commit-foo(2), task-foo-0(new)]
    # stays inconsistent, and the uncommitted task config is never applied.
    broken = read_config([
        ("connector-foo", b'{"properties":{}}'),
        ("task-foo-1", b'{"properties":{"n":"1 old"}}'),
        ("commit-foo", b'{"tasks":2}'),
        ("task-foo-0", b'{"properties":{"n":"0 new"}}'),
    ])
    assert broken.inconsistent == {"foo"}
    assert broken.tasks("foo") == [] and broken.task_configs == {}
    assert dict(broken.task_counts) == {"foo": 2}
    # A later complete set only clears it if it is complete on its own: the deferred configs of
    # the incomplete commit were dropped with it, as Kafka drops them.
    still = read_config([
        ("connector-foo", b'{"properties":{}}'),
        ("task-foo-1", b'{"properties":{"n":"1"}}'),
        ("commit-foo", b'{"tasks":2}'),
        ("task-foo-0", b'{"properties":{"n":"0"}}'),
        ("commit-foo", b'{"tasks":2}'),
    ])
    assert still.inconsistent == {"foo"}


def test_a_commit_for_a_connector_compacted_away_is_ignored():
    snapshot = read_config([
        ("task-deleted-0", b'{"properties":{"k":"v"}}'),
        ("commit-deleted", b'{"tasks":1}'),
        ("connector-deleted", b'{"properties":{}}'),  # created again: the old tasks must not come back
        ("commit-deleted", b'{"tasks":1}'),
    ])
    assert snapshot.connectors() == ["deleted"]
    assert snapshot.task_configs == {} and snapshot.inconsistent == {"deleted"}


def test_task_keys_parse_as_kafkas_split_on_dashes():
    snapshot = read_config([
        ("connector-a-b", b'{"properties":{}}'),
        ("task-a-b-0", b'{"properties":{"n":"0"}}'),
        ("task-a-b-1-", b'{"properties":{"n":"1"}}'),  # String.split drops the trailing empty part
        ("task-a-b-4294967296", b'{"properties":{"n":"big"}}'),  # Integer.parseInt refuses it: skipped
        ("commit-a-b", b'{"tasks":2}'),
    ])
    assert {t: dict(c) for t, c in snapshot.task_configs.items()} == {T("a-b", 0): {"n": "0"}, T("a-b", 1): {"n": "1"}}


def test_a_key_that_is_not_utf8_is_read_past_and_counted_as_kafka_does():
    # StringDeserializer decodes with replacement: the record is an unknown key, its offset counts.
    snapshot = read_config([("connector-ok", b'{"properties":{}}'), (b"\xff\xfe", b'{"a":1}')])
    assert snapshot.offset == 2 and snapshot.connectors() == ["ok"]


def test_a_session_key_without_base64_padding_is_read_as_javas_decoder_reads_it():
    snapshot = read_config([("session-key", b'{"key":"AAECAw","algorithm":"HmacSHA256","creation-timestamp":7}')])
    assert snapshot.session_key == SessionKey(b"\x00\x01\x02\x03", "HmacSHA256", 7)


@pytest.mark.parametrize("value", [
    b'{"key":"AAEC","algorithm":"HmacSHA256","creation-timestamp":7.5}',  # not a long
    b'{"key":"AAEC","algorithm":"HmacSHA256"}',
    b'{"key":5,"algorithm":"HmacSHA256","creation-timestamp":7}',
    b'{"key":"A","algorithm":"HmacSHA256","creation-timestamp":7}',  # not base64
    b"null",
])
def test_a_malformed_session_key_is_ignored(value):
    assert read_config([("session-key", value)]).session_key is None


@pytest.mark.parametrize("value", [b'{"state":"RUNNING"}', b'{"state":7}', b'{"state":"STOPPED","state.v2":"X"}',
                                   b'"PAUSED"'])
def test_a_target_state_kafka_would_refuse_leaves_the_state_as_it_was(value):
    # an unknown state.v2 is refused, not replaced by the v1 field
    snapshot = read_config([("connector-c", b'{"properties":{}}'), ("target-state-c", value)])
    assert dict(snapshot.target_states) == {"c": "STARTED"}


def test_state_v2_alone_is_enough_as_in_kafka():
    snapshot = read_config([("connector-c", b'{"properties":{}}'), ("target-state-c", b'{"state.v2":"STOPPED"}')])
    assert dict(snapshot.target_states) == {"c": "STOPPED"}


# --- the status topic ---------------------------------------------------------

def status_store() -> KafkaStatusStore:
    return KafkaStatusStore("connect-status", {}, {})


def read_statuses(records) -> KafkaStatusStore:
    store = status_store()
    for key, value, *rest in records:
        store._read(record(key, value, timestamp=rest[0] if rest else 1_700_000_000_000))
    return store


def test_a_kafka_connect_status_topic_reads_as_kafka_reads_it():
    store = read_statuses([
        # STATUS_SCHEMA_V0: state, trace (optional: null when unset), worker_id, generation
        ("status-connector-c", b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":7}', 1),
        ("status-task-c-0", (b'{"state":"FAILED","trace":"org.apache.kafka.connect.errors.ConnectException: x\\n\\tat Y",'
                             b'"worker_id":"10.0.0.2:8083","generation":7}'), 2),
        ("status-task-c-1", b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":7}', 3),
        ("status-connector-stopped", b'{"state":"STOPPED","trace":null,"worker_id":"10.0.0.1:8083","generation":8}', 4),
        # TOPIC_STATUS_SCHEMA_V0: {"topic": {name, connector, task, discoverTimestamp}}
        ("status-topic-orders:connector-c", (b'{"topic":{"name":"orders","connector":"c","task":1,'
                                             b'"discoverTimestamp":1700000000999}}')),
        ("status-topic-gone:connector-c", b'{"topic":{"name":"gone","connector":"c","task":0,"discoverTimestamp":1}}'),
        ("status-topic-gone:connector-c", None),
        ("status-connector-deleted", b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}'),
        ("status-task-deleted-0", b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}'),
        ("status-connector-deleted", None),  # Kafka forgets its tasks with it
    ])
    assert store.connector("c") == Status("RUNNING", "10.0.0.1:8083", None, 7, timestamp_ms=1)
    assert store.tasks("c") == {
        0: Status("FAILED", "10.0.0.2:8083", "org.apache.kafka.connect.errors.ConnectException: x\n\tat Y", 7,
                  timestamp_ms=2),
        1: Status("RUNNING", "10.0.0.1:8083", None, 7, timestamp_ms=3),
    }
    assert store.connector("stopped").state == "STOPPED"
    assert store.topics("c") == {"orders"}
    assert store.topic_status("c", "orders") == TopicStatus("orders", "c", 1, 1_700_000_000_999)
    assert store.connectors() == {"c", "stopped"}
    assert store.tasks("deleted") == {}


@pytest.mark.parametrize("value", [
    b'{"state":"BOGUS","trace":null,"worker_id":"w","generation":1}',  # TaskStatus.State.valueOf refuses it
    b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1.0}',  # (Long) cast fails
    b'{"state":"RUNNING","trace":3,"worker_id":"w","generation":1}',
    b'{"state":"RUNNING","trace":null,"worker_id":"w"}',
    b'[1]',
    b'not json',
])
def test_a_status_kafka_would_refuse_is_skipped(value):
    good = b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}'
    store = read_statuses([("status-task-c-0", good), ("status-task-c-0", value)])
    assert store.task("c", 0).state == "RUNNING"


def test_a_stale_unassigned_task_status_is_ignored_as_kafka_ignores_it():
    store = read_statuses([
        ("status-task-c-0", b'{"state":"RUNNING","trace":null,"worker_id":"w2","generation":5}'),
        ("status-task-c-0", b'{"state":"UNASSIGNED","trace":null,"worker_id":"w1","generation":4}'),  # older
        ("status-task-c-1", b'{"state":"RUNNING","trace":null,"worker_id":"w2","generation":5}'),
        ("status-task-c-1", b'{"state":"UNASSIGNED","trace":null,"worker_id":"w1","generation":5}'),  # same, other
        ("status-task-c-2", b'{"state":"RUNNING","trace":null,"worker_id":"w2","generation":5}'),
        ("status-task-c-2", b'{"state":"UNASSIGNED","trace":null,"worker_id":"w1","generation":6}'),  # newer: stands
        ("status-task-c-3", b'{"state":"RUNNING","trace":null,"worker_id":"w2","generation":5}'),
        ("status-task-c-3", b'{"state":"FAILED","trace":"x","worker_id":"w1","generation":4}'),  # only UNASSIGNED is
    ])
    assert {n: (s.state, s.worker_id) for n, s in store.tasks("c").items()} == {
        0: ("RUNNING", "w2"), 1: ("RUNNING", "w2"), 2: ("UNASSIGNED", "w1"), 3: ("FAILED", "w1")}


def test_status_keys_parse_as_kafka_parses_them():
    value = b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}'
    store = read_statuses([
        ("status-task-a-b-+3", value),  # Integer.parseInt takes a sign
        ("status-task-a-b-4-", value),  # String.split drops the trailing empty part
        ("status-task-a-b-++5", value),  # not a number: skipped, nothing raised
        ("status-task-a-b-2147483648", value),  # beyond int32: skipped
        ("status-connector-", value),  # empty connector: skipped
        ("status-topic-:connector-c", b'{"topic":{"name":"","connector":"c","task":0,"discoverTimestamp":1}}'),
        ("status-other", value),
    ])
    assert sorted(store.tasks("a-b")) == [3, 4]
    assert store.connectors() == set() and store.topics("c") == set()


def test_the_applied_connector_config_is_the_one_its_last_complete_commit_saw():
    v1 = b'{"properties":{"connector.class":"FileStreamSource","transforms":""}}'
    v2 = b'{"properties":{"connector.class":"FileStreamSource","transforms":"route"}}'
    task = b'{"properties":{"task.class":"FileStreamSourceTask"}}'
    applied = lambda records: {c: dict(p) for c, p in read_config(records).applied_connector_configs.items()}  # noqa: E731

    committed = [("connector-c", v1), ("task-c-0", task), ("commit-c", b'{"tasks":1}')]
    assert applied(committed) == {"c": {"connector.class": "FileStreamSource", "transforms": ""}}
    # A new connector config, its task configs not written again yet: the tasks run under v1.
    assert applied([*committed, ("connector-c", v2)])["c"]["transforms"] == ""
    assert applied([*committed, ("connector-c", v2), ("task-c-0", task), ("commit-c", b'{"tasks":1}')])["c"] == {
        "connector.class": "FileStreamSource", "transforms": "route"}
    # An incomplete commit applies nothing; a deleted connector has no applied config.
    assert "c" not in applied([("connector-c", v1), ("commit-c", b'{"tasks":1}')])
    assert applied([*committed, ("connector-c", None)]) == {}
