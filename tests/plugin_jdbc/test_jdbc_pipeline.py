"""Kafka → the JDBC sink on real Spark executors → the machine's PostgreSQL and MariaDB, through a real worker."""

from __future__ import annotations

import asyncio
import json

import pytest

from connectd.herder import StandaloneHerder

pytestmark = pytest.mark.integration

KEY_SCHEMA = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "int32", "optional": False}]}
VALUE_SCHEMA = {"type": "struct", "optional": False, "name": "account", "fields": [
    {"field": "id", "type": "int32", "optional": False},
    {"field": "owner", "type": "string", "optional": True},
    {"field": "balance", "type": "bytes", "optional": False, "name": "org.apache.kafka.connect.data.Decimal",
     "version": 1, "parameters": {"scale": "2"}},
]}


def envelope(schema: dict, payload: dict | None) -> bytes | None:
    return None if payload is None else json.dumps({"schema": schema, "payload": payload}).encode()


def test_upserts_and_deletes_arrive_and_offsets_follow_the_commits(spark, broker, database, table, tmp_path,
                                                                    worker_config, wait_until_async):
    import base64
    import decimal

    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(table, 2, 1)])[table].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    expected: dict[int, tuple[int, str, decimal.Decimal]] = {}
    sent = 0
    for round_ in range(3):
        for id_ in range(50):
            cents = id_ * 100 + round_
            balance = base64.b64encode(cents.to_bytes(4, "big", signed=True)).decode()
            deleted = round_ == 2 and id_ % 5 == 0
            value = None if deleted else {"id": id_, "owner": f"owner-{id_}-{round_}", "balance": balance}
            producer.produce(table, key=envelope(KEY_SCHEMA, {"id": id_}), value=envelope(VALUE_SCHEMA, value),
                             partition=id_ % 2)
            sent += 1
            if deleted:
                expected.pop(id_, None)
            else:
                expected[id_] = (id_, f"owner-{id_}-{round_}", decimal.Decimal(cents).scaleb(-2))
    assert producer.flush(30) == 0
    connector = {
        "name": f"jdbc-{table}", "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "tasks.max": "2", "topics": table, "connection.url": database.url, "connection.user": database.user,
        "insert.mode": "upsert", "pk.mode": "record_key", "delete.enabled": "true", "auto.create": "true",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    }
    group = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"connect-jdbc-{table}"})

    def committed() -> int:
        found = group.committed([TopicPartition(table, p) for p in (0, 1)], timeout=30)
        return sum(max(tp.offset, 0) for tp in found)

    def rows() -> list[tuple]:
        try:
            return [(i, o, decimal.Decimal(b)) for i, o, b in database.rows(table, "id")]
        except Exception:  # noqa: BLE001 - the table is not there yet
            return []

    async def scenario() -> None:
        herder = StandaloneHerder(worker_config(), "test-worker", spark)
        await herder.start()
        try:
            await herder.put(connector)
            await wait_until_async(lambda: rows() == sorted(expected.values()), "the table to hold the last state "
                                   "of every key", timeout=120)
            await wait_until_async(lambda: committed() == sent, "every offset committed", timeout=60)
            assert {s.state for s in herder.status.tasks(connector["name"]).values()} == {"RUNNING"}
        finally:
            await herder.stop()

    try:
        asyncio.run(scenario())
    finally:
        group.close()
