"""Source offsets in an offsets topic, record for record as Kafka Connect keeps them (real broker)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.cli import EXIT_CONFIG, EXIT_OK, main
from connectd.runtime.kafka.clients import client_option
from connectd.runtime.kafka.topic_reader import read_topic, read_topic_records
from connectd.runtime.offsets.store import (
    TopicOffsetStore,
    canonical,
    close_producers,
    open_offset_store,
    ordered,
    record_key,
    store_offsets_hook,
)

pytestmark = pytest.mark.integration

PARTITIONS = 5


@pytest.fixture(autouse=True)
def _no_clients_left():
    """The store's producers are cached per process: drop them, so no client outlives its broker."""
    yield
    close_producers()


def create(bootstrap: str, *topics: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
        future.result(timeout=30)


@pytest.fixture
def settings(broker):
    return {"bootstrap.servers": broker.bootstrap_servers}


@pytest.fixture
def topic(broker, topic_name):
    create(broker.bootstrap_servers, topic_name)
    return topic_name


def murmur2(data: bytes) -> int:
    """Kafka's Java ``Utils.murmur2`` (signed 32-bit), for checking where records land."""
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(data)) & 0xFFFFFFFF
    whole = len(data) // 4 * 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = data[whole:]
    if len(rest) >= 3:
        h ^= rest[2] << 16
    if len(rest) >= 2:
        h ^= rest[1] << 8
    if rest:
        h ^= rest[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


def java_partition(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def test_murmur2_matches_kafkas_test_vectors():
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


def where(settings, topic):
    """key → (partition, value) of the last record of each key, read raw."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({**settings, "group.id": "raw", "enable.partition.eof": True, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        found, eof, deadline = {}, set(), time.monotonic() + 30
        while len(eof) < PARTITIONS and time.monotonic() < deadline:
            for message in consumer.consume(100, timeout=0.2):
                if message.error() is not None:
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(message.partition())
                    continue
                found[message.key()] = (message.partition(), message.value())
        assert len(eof) == PARTITIONS
        return found
    finally:
        consumer.close()


def test_round_trip(settings, topic):
    store = TopicOffsetStore(topic, settings)
    a, b = {"filename": "/a"}, {"filename": "/b"}
    assert store.get("src", [a]) == {}
    store.put("src", {canonical(a): {"position": 10}, canonical(b): {"position": 3}})
    store.put("other", {canonical(a): {"position": 99}})
    assert store.get("src", [a, b]) == {canonical(a): {"position": 10}, canonical(b): {"position": 3}}
    assert store.get("src", [{"filename": "/c"}]) == {}
    assert store.connector_offsets("other") == [({"filename": "/a"}, {"position": 99})]
    assert sorted(store.connector_offsets("src"), key=str) == [(a, {"position": 10}), (b, {"position": 3})]
    # a store made later, as in another process, reads the same
    assert TopicOffsetStore(topic, settings).get("other", [a]) == {canonical(a): {"position": 99}}


def test_records_are_kafka_connects_bytes_in_javas_partition(settings, topic):
    # a new partition's key in the connector's map order, as Kafka Connect writes it (not sorted)
    partition = {"table": "users", "shard": 2, "ünï": "cödé"}
    TopicOffsetStore(topic, settings).put("my-source", {ordered(partition): {"ts": 1.5, "id": 42}})
    key = '["my-source",{"table":"users","shard":2,"ünï":"cödé"}]'.encode()
    assert where(settings, topic) == {key: (java_partition(key, PARTITIONS), b'{"ts":1.5,"id":42}')}
    # the same partition in another order later: the key it is stored under, not a second one
    TopicOffsetStore(topic, settings).put("my-source", {ordered({"shard": 2, "ünï": "cödé", "table": "users"}):
                                                        {"ts": 2.5, "id": 43}})
    assert where(settings, topic) == {key: (java_partition(key, PARTITIONS), b'{"ts":2.5,"id":43}')}


def test_keys_are_the_bytes_jackson_writes():
    # Kafka's JsonConverter (schemas.enable=false) writes through Jackson: \u00XX with upper-case
    # hex for control characters, doubles as Java's Double.toString, NaN as a string.
    partition = {"path": "/data/a\x1fb\x0b\n\"\\é", "ratio": 1e7, "tiny": 1.5e-5, "half": 0.5, "n": -3,
                 "ok": True, "gone": None, "nan": float("nan")}
    assert record_key("src", partition) == (
        '["src",{"path":"/data/a\\u001Fb\\u000B\\n\\"\\\\é","ratio":1.0E7,"tiny":1.5E-5,"half":0.5,"n":-3,'
        '"ok":true,"gone":null,"nan":"NaN"}]').encode()
    # the map's own order, as Jackson writes a Java connector's map
    assert record_key("src", {"b": 1, "a": 2.0}) == b'["src",{"b":1,"a":2.0}]'
    assert record_key("src", {"a": 2.0, "b": 1}) == b'["src",{"a":2.0,"b":1}]'


def test_a_partition_with_doubles_and_control_characters_gets_javas_key(settings, topic):
    partition = {"file": "log\x1b.txt", "shard": 12345678.0}
    TopicOffsetStore(topic, settings).put("src", {canonical(partition): {"pos": 1e-7}})
    key = b'["src",{"file":"log\\u001B.txt","shard":1.2345678E7}]'
    assert where(settings, topic) == {key: (java_partition(key, PARTITIONS), b'{"pos":1.0E-7}')}
    # written again by another process: the same key, so compaction keeps one record
    TopicOffsetStore(topic, settings).put("src", {canonical(partition): {"pos": 2.5}})
    assert where(settings, topic) == {key: (java_partition(key, PARTITIONS), b'{"pos":2.5}')}
    assert TopicOffsetStore(topic, settings).get("src", [partition]) == {canonical(partition): {"pos": 2.5}}


def test_finds_a_record_kafka_connect_wrote_and_updates_it_under_its_key(settings, topic):
    java_key = b'["src",{"table":"users","db":"prod"}]'  # Jackson keeps the map's order, unsorted
    producer = Producer({**settings, "partitioner": "murmur2_random"})
    producer.produce(topic, key=java_key, value=b'{"lsn":100}')
    assert producer.flush(30) == 0
    partition = {"db": "prod", "table": "users"}
    store = TopicOffsetStore(topic, settings)
    assert store.get("src", [partition]) == {canonical(partition): {"lsn": 100}}
    assert store.connector_offsets("src") == [({"table": "users", "db": "prod"}, {"lsn": 100})]

    # A writer that never read the topic reads it first: the update replaces the record for
    # readers and compaction alike, in the same topic partition.
    TopicOffsetStore(topic, settings).put("src", {canonical(partition): {"lsn": 200}})
    assert where(settings, topic) == {java_key: (java_partition(java_key, PARTITIONS), b'{"lsn":200}')}
    TopicOffsetStore(topic, settings).put("src", {canonical(partition): None})
    assert read_topic(settings, topic) == {java_key: None}
    assert store.get("src", [partition]) == {}


def test_the_newest_record_wins_between_keys_of_one_partition(settings, topic):
    producer = Producer({**settings, "partitioner": "murmur2_random"})
    now = int(time.time() * 1000)
    producer.produce(topic, key=b'["src",{"b":1,"a":2}]', value=b'{"n":1}', timestamp=now - 1000)
    producer.produce(topic, key=b'["src",{"a":2,"b":1}]', value=b'{"n":2}', timestamp=now)
    producer.produce(topic, key=b'["src",{"a":3,"b":1}]', value=b'{"n":3}', timestamp=now)
    producer.produce(topic, key=b'["src",{"b":1,"a":3}]', value=None, timestamp=now + 1000)
    assert producer.flush(30) == 0
    store = TopicOffsetStore(topic, settings)
    assert store.get("src", [{"a": 2, "b": 1}, {"a": 3, "b": 1}]) == {canonical({"a": 2, "b": 1}): {"n": 2}}
    # writing a partition stored under two keys writes both
    store.put("src", {canonical({"a": 2, "b": 1}): {"n": 4}})
    assert {k: v for k, v in read_topic(settings, topic).items() if b'"a":2' in k} == {
        b'["src",{"b":1,"a":2}]': b'{"n":4}', b'["src",{"a":2,"b":1}]': b'{"n":4}'}


def test_a_null_partition_is_stored_and_read_back_but_not_listed(settings, topic):
    """As Kafka Connect: a record without a source partition has its offset under ["<name>",null],
    which the task reads back and the REST listing (OffsetUtils.processPartitionKey) leaves out."""
    store = TopicOffsetStore(topic, settings)
    a = {"p": "a"}
    store.put("src", {canonical(None): {"o": 1}, canonical(a): {"o": 2}})
    assert read_topic(settings, topic)[b'["src",null]'] == b'{"o":1}'
    assert TopicOffsetStore(topic, settings).get("src", [None, a]) == {"null": {"o": 1}, canonical(a): {"o": 2}}
    assert store.connector_offsets("src") == [(a, {"o": 2})]


def test_null_deletes(settings, topic):
    store = TopicOffsetStore(topic, settings)
    a, b = {"p": "a"}, {"p": "b"}
    store.put("src", {canonical(a): {"o": 1}, canonical(b): {"o": 2}})
    store.put("src", {canonical(a): None})
    assert store.get("src", [a, b]) == {canonical(b): {"o": 2}}
    assert store.connector_offsets("src") == [(b, {"o": 2})]
    assert read_topic(settings, topic)[b'["src",{"p":"a"}]'] is None  # a tombstone, as Kafka Connect writes


def test_last_value_wins_over_many_updates(settings, topic):
    store = TopicOffsetStore(topic, settings)
    partitions = [{"shard": n} for n in range(40)]
    for round_ in range(30):
        store.put("src", {canonical(p): {"round": round_, "shard": p["shard"]} for p in partitions})
    assert store.get("src", partitions) == {canonical(p): {"round": 29, "shard": p["shard"]} for p in partitions}
    assert len(read_topic_records(settings, topic)) == 40


def test_connector_topic_falls_back_to_the_workers(broker, settings, topic_name, wait_until):
    own, worker = f"{topic_name}-own", f"{topic_name}-worker"
    create(broker.bootstrap_servers, own, worker)
    a, b, c = {"p": "a"}, {"p": "b"}, {"p": "c"}
    TopicOffsetStore(worker, settings).put("src", {canonical(a): {"o": 1}, canonical(b): {"o": 2}})
    store = TopicOffsetStore(own, settings, fallback_topic=worker)
    assert store.get("src", [a, b, c]) == {canonical(a): {"o": 1}, canonical(b): {"o": 2}}

    store.put("src", {canonical(a): {"o": 10}, canonical(c): {"o": 30}})
    assert TopicOffsetStore(own, settings).get("src", [a, b, c]) == {canonical(a): {"o": 10}, canonical(c): {"o": 30}}
    assert store.get("src", [a, b, c]) == {canonical(a): {"o": 10}, canonical(b): {"o": 2}, canonical(c): {"o": 30}}
    assert sorted(store.connector_offsets("src"), key=str) == [(a, {"o": 10}), (b, {"o": 2}), (c, {"o": 30})]

    # a deletion reaches the worker's topic too, else the fallback would bring the offset back
    store.put("src", {canonical(b): None})
    assert store.get("src", [b]) == {}
    assert TopicOffsetStore(worker, settings).get("src", [b]) == {}
    # other offsets are copied to the worker's topic, best effort
    wait_until(lambda: TopicOffsetStore(worker, settings).get("src", [a])[canonical(a)] == {"o": 10},
               "offsets copied to the worker's topic", timeout=30)
    # the worker's topic as the connector's: one store, no fallback
    assert TopicOffsetStore(worker, settings, fallback_topic=worker).fallback is None


def test_hook_stores_a_batch_with_the_client_resolved_here(broker, topic, monkeypatch):
    monkeypatch.setenv("OFFSETS_TEST_BOOTSTRAP", broker.bootstrap_servers)
    worker = {"bootstrap.servers": "${env:OFFSETS_TEST_BOOTSTRAP}", "config.providers": "env",
              "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider"}
    spec = {"kind": "topic", "topic": topic, "client": client_option(worker, "producer"), "connector": "src"}
    batch = {canonical({"file": "/x"}): json.dumps({"line": 7}), canonical({"file": "/y"}): json.dumps({"line": 1})}
    store_offsets_hook(json.dumps(spec), 3, batch, 12)
    store = TopicOffsetStore(topic, {"bootstrap.servers": broker.bootstrap_servers})
    assert store.get("src", [{"file": "/x"}, {"file": "/y"}]) == {
        canonical({"file": "/x"}): {"line": 7}, canonical({"file": "/y"}): {"line": 1}}
    assert open_offset_store(spec).get("src", [{"file": "/x"}]) == {canonical({"file": "/x"}): {"line": 7}}


def test_a_missing_topic_reads_empty(settings, topic_name):
    assert read_topic(settings, f"{topic_name}-missing") == {}
    assert TopicOffsetStore(f"{topic_name}-missing", settings).get("src", [{"a": 1}]) == {}


def test_a_topic_written_to_all_the_time_is_read_to_where_it_was(settings, topic):
    """The end is fixed when the read begins (as Kafka's readToEnd): a writer that never stops, as a
    source committing offsets while its task reads them, does not keep the read going."""
    producer = Producer({**settings, "linger.ms": 1})
    for i in range(PARTITIONS * 20):
        producer.produce(topic, key=f"before-{i}".encode(), value=b"1", partition=i % PARTITIONS)
    producer.flush(30)
    stop = threading.Event()

    def write_on() -> None:
        i = 0
        while not stop.is_set():
            try:
                producer.produce(topic, key=f"during-{i % 50}".encode(), value=b"2", partition=i % PARTITIONS)
            except BufferError:  # as fast as the broker takes them
                producer.poll(0.01)
            producer.poll(0)
            i += 1

    writer = threading.Thread(target=write_on, daemon=True)
    writer.start()
    try:
        for _ in range(3):
            read = read_topic(settings, topic, timeout=20)
            assert {f"before-{i}".encode() for i in range(PARTITIONS * 20)} <= set(read)
    finally:
        stop.set()
        writer.join(10)
        producer.flush(30)


def test_a_broker_that_answers_short_fetches_empty_is_read_with_longer_waits(lasting_broker):
    """tansu on S3 storage answers a fetch empty when its 10 ms wait runs out before the storage
    has read a partition's records: the read goes on, from where it was, with longer waits."""
    settings = {"bootstrap.servers": lasting_broker.bootstrap_servers}
    create(lasting_broker.bootstrap_servers, "offsets", partitions=3)
    producer = Producer({**settings, "linger.ms": 0})
    for i in range(150):  # each its own batch, as offset commits are
        producer.produce("offsets", key=b"k", value=str(i).encode(), partition=1)
        producer.flush(10)
    assert read_topic_records(settings, "offsets", timeout=60)[b"k"][0] == b"149"


# --- connectd topics orphans -------------------------------------------------------


@pytest.fixture
def cluster(tmp_path):
    """A broker of the test's own: --delete deletes every orphan it finds."""
    from connectd.broker import EmbeddedBroker

    with EmbeddedBroker(port=0, host="127.0.0.1") as own:
        yield own


def test_orphans_lists_and_deletes_unused_offsets_topics(cluster, tmp_path, capsys, wait_until):
    bootstrap = cluster.bootstrap_servers
    settings = {"bootstrap.servers": bootstrap}
    create(bootstrap, "connect-configs", partitions=1)
    create(bootstrap, "connect-offsets", "a-offsets", "b-offsets", "c-offsets", "not-offsets", "empty-offsets",
           "data")
    producer = Producer(settings)
    config = {"connector-a": {"properties": {"name": "a", "offsets.storage.topic": "a-offsets"}},
              "connector-b": {"properties": {"name": "b", "offsets.storage.topic": "b-offsets"}},
              "connector-w": {"properties": {"name": "w"}}}
    for key, value in config.items():
        producer.produce("connect-configs", key=key.encode(), value=json.dumps(value).encode())
    producer.produce("connect-configs", key=b"connector-b", value=None)  # b deleted since
    assert producer.flush(30) == 0
    for topic, connector in (("connect-offsets", "w"), ("a-offsets", "a"), ("b-offsets", "b"), ("c-offsets", "c"),
                             ("c-offsets", "c2"), ("data", "x")):
        producer.produce(topic, key=f'["{connector}",{{"p":1}}]'.encode(), value=b'{"o":1}')
    producer.produce("not-offsets", key=b"user-1", value=b'{"name": "x"}')
    assert producer.flush(30) == 0

    worker_file = tmp_path / "worker.properties"
    worker_file.write_text(
        f"bootstrap.servers={bootstrap}\ngroup.id=cluster\nconfig.storage.topic=connect-configs\n"
        "offset.storage.topic=connect-offsets\nstatus.storage.topic=connect-status\n"
        "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n")
    assert main(["topics", "orphans", str(worker_file)]) == EXIT_OK
    assert capsys.readouterr().out.splitlines() == ["b-offsets\tb", "c-offsets\tc,c2"]

    assert main(["topics", "orphans", "--delete", str(worker_file)]) == EXIT_OK
    assert capsys.readouterr().out.splitlines() == ["deleted b-offsets\tb", "deleted c-offsets\tc,c2"]
    admin = AdminClient(settings)
    wait_until(lambda: not {"b-offsets", "c-offsets"} & set(admin.list_topics(timeout=10).topics),
               "the orphans deleted", timeout=30)
    assert {"a-offsets", "connect-offsets", "not-offsets", "empty-offsets", "data"} <= set(
        admin.list_topics(timeout=10).topics)
    assert main(["topics", "orphans", str(worker_file)]) == EXIT_OK
    assert capsys.readouterr().out == ""


def test_orphans_needs_the_internal_topics(tmp_path, capsys):
    worker_file = tmp_path / "worker.properties"
    worker_file.write_text("bootstrap.servers=127.0.0.1:9\ngroup.id=cluster\n")
    assert main(["topics", "orphans", str(worker_file)]) == EXIT_CONFIG
    assert "offset.storage.topic is required" in capsys.readouterr().err
