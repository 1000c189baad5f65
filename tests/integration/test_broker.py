"""The embedded tansu broker: Kafka clients work against it, and it never outlives its owner."""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import connectd.broker
from connectd.broker import EmbeddedBroker, free_port, run_broker
from connectd.errors import ConnectdError

pytestmark = pytest.mark.integration


def create_topic(bootstrap_servers: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    futures[name].result(timeout=10)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_session_broker_answers_metadata(broker: EmbeddedBroker) -> None:
    assert broker.is_running()
    assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"

    metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=5)

    assert metadata.cluster_id == broker.cluster_id
    [advertised] = metadata.brokers.values()
    assert (advertised.host, advertised.port) == ("127.0.0.1", broker.port)


def test_confluent_kafka_round_trip_with_keys_headers_and_tombstone(
    broker: EmbeddedBroker, topic_name: str, consume_records
) -> None:
    create_topic(broker.bootstrap_servers, topic_name, partitions=3)
    described = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(
        topic_name, timeout=5
    )
    assert len(described.topics[topic_name].partitions) == 3

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    errors = []
    for i in range(12):
        producer.produce(
            topic_name,
            key=f"key-{i}".encode(),
            value=f"value-{i}".encode(),
            headers=[("source", b"test"), ("seq", str(i).encode())],
            on_delivery=lambda err, msg: errors.append(err) if err else None,
        )
    producer.produce(topic_name, key=b"key-0", value=None)
    assert producer.flush(10) == 0
    assert errors == []

    records = consume_records(topic_name, 13, partitions=3, timeout=15)

    assert len(records) == 13
    assert len({r.partition() for r in records}) > 1, "keys should spread over partitions"
    by_key: dict[bytes, list] = {}
    for r in records:
        by_key.setdefault(r.key(), []).append(r)
    for i in range(1, 12):
        [r] = by_key[f"key-{i}".encode()]
        assert r.value() == f"value-{i}".encode()
        assert r.headers() == [("source", b"test"), ("seq", str(i).encode())]
    # Same key, same partition, in order: the value, then its tombstone.
    value, tombstone = by_key[b"key-0"]
    assert value.value() == b"value-0"
    assert tombstone.value() is None
    assert tombstone.partition() == value.partition()
    assert tombstone.offset() > value.offset()


def test_aiokafka_round_trip(broker: EmbeddedBroker, topic_name: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as AioTopicPartition

    create_topic(broker.bootstrap_servers, topic_name, partitions=2)

    async def round_trip() -> list:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        try:
            for i in range(6):
                await producer.send_and_wait(
                    topic_name, key=f"k{i}".encode(), value=f"v{i}".encode(), headers=[("h", b"x")]
                )
            await producer.send_and_wait(topic_name, key=b"k0", value=None)
        finally:
            await producer.stop()

        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            consumer.assign([AioTopicPartition(topic_name, p) for p in range(2)])
            records: list = []
            deadline = time.monotonic() + 15
            while len(records) < 7 and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=200)
                for batch in batches.values():
                    records.extend(batch)
            return records
        finally:
            await consumer.stop()

    records = asyncio.run(round_trip())

    assert Counter((r.key, r.value) for r in records) == Counter(
        [(f"k{i}".encode(), f"v{i}".encode()) for i in range(6)] + [(b"k0", None)]
    )
    assert all(list(r.headers) == [("h", b"x")] for r in records if r.value is not None)


def test_stop_ends_the_process_and_is_idempotent(tmp_path: Path) -> None:
    log_file = tmp_path / "tansu.log"
    embedded = EmbeddedBroker(log_file=log_file)
    assert embedded.pid is None
    embedded.stop()  # never started: nothing to do

    with embedded:
        pid = embedded.pid
        assert pid is not None and not gone(pid)
        assert embedded.is_running()
        assert embedded.port != 0
        AdminClient({"bootstrap.servers": embedded.bootstrap_servers}).list_topics(timeout=5)

    assert not embedded.is_running()
    assert gone(pid)
    embedded.stop()
    embedded.stop()
    assert "listening on" in log_file.read_text()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_run_broker_exits_0_on_signal_and_leaves_no_broker(signum: int) -> None:
    code = (
        "import sys\n"
        "from connectd.broker import run_broker\n"
        "sys.exit(run_broker(0, on_ready=lambda b: print(b.pid, b.bootstrap_servers, flush=True)))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=20)
        except queue.Empty:
            pytest.fail("run_broker never called on_ready")
        assert line, proc.stderr.read()
        pid_text, bootstrap_servers = line.split()
        tansu_pid = int(pid_text)
        AdminClient({"bootstrap.servers": bootstrap_servers}).list_topics(timeout=5)

        proc.send_signal(signum)

        assert proc.wait(timeout=15) == 0, proc.stderr.read()
        assert gone(tansu_pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_run_broker_fails_fast_when_the_port_is_taken(broker: EmbeddedBroker) -> None:
    with pytest.raises(ConnectdError, match="already in use"):
        run_broker(broker.port)


def test_start_on_a_port_in_use_fails_rather_than_hangs() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()

        with pytest.raises(ConnectdError, match="in use"):
            EmbeddedBroker(port).start(timeout=5)

        assert time.monotonic() - started < 5


def test_a_broker_that_cannot_bind_is_not_mistaken_for_the_one_on_the_port(
    broker: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Skip the up-front port check, as if another broker took the port in
    # between: tansu then fails to bind while the other one answers.
    monkeypatch.setattr(connectd.broker, "_check_port_free", lambda host, port: None)
    second = EmbeddedBroker(broker.port)

    with pytest.raises(ConnectdError):
        second.start(timeout=5)

    assert second.pid is not None and gone(second.pid)
    assert broker.is_running()


def test_a_failed_start_reports_the_broker_output_and_leaves_no_process() -> None:
    embedded = EmbeddedBroker(storage="bogus://nowhere/")

    with pytest.raises(ConnectdError, match="UnsupportedStorageUrl") as excinfo:
        embedded.start(timeout=5)

    assert "exited with code" in str(excinfo.value)
    assert "\x1b[" not in str(excinfo.value)
    assert embedded.pid is not None and gone(embedded.pid)


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
