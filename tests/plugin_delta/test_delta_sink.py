"""The Delta sink: rows from records, exactly-once batches on real Spark, and a SIGKILLed worker."""

from __future__ import annotations

import base64
import decimal
import json
import types
from pathlib import Path

import pyarrow as pa
import pytest
from connectd_delta.rows import KAFKA_COLUMNS, RecordError, records_table
from connectd_delta.task import DeltaSinkTask, app_id

from connectd import ConfigError, ConnectException, SinkTaskContext, TopicPartition

SCHEMA = {"type": "struct", "name": "order", "optional": False, "fields": [
    {"field": "id", "type": "int32", "optional": False},
    {"field": "country", "type": "string", "optional": True},
    {"field": "price", "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
     "version": 1, "parameters": {"scale": "2"}},
    {"field": "at", "type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
]}


def order(id_: int, country: str = "fr", cents: int = 150, **extra) -> bytes:
    schema = SCHEMA
    payload = {"id": id_, "country": country, "at": 1_795_600_000_000 + id_,
               "price": base64.b64encode(cents.to_bytes(4, "big", signed=True)).decode()}
    if extra:
        schema = {**SCHEMA, "fields": [*SCHEMA["fields"], *({"field": k, "type": "string", "optional": True}
                                                              for k in extra)]}
        payload.update(extra)
    return json.dumps({"schema": schema, "payload": payload}).encode()


def kafka_table(values: list[bytes | None], topic: str = "orders", partition: int = 0, first: int = 0) -> pa.Table:
    count = len(values)
    return pa.table({"topic": [topic] * count, "partition": pa.array([partition] * count, pa.int32()),
                     "offset": pa.array(range(first, first + count), pa.int64()),
                     "timestamp": pa.array([1000] * count, pa.int64()), "value": pa.array(values, pa.binary())})


def test_rows_take_their_types_from_the_connect_schema():
    rows = records_table(kafka_table([order(1), None, order(2, cents=-5)]), "json", kafka_columns=True)
    assert rows.schema.field("price").type == pa.decimal128(38, 2)
    assert rows.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert [(r["id"], str(r["price"]), r["_kafka_offset"]) for r in rows.to_pylist()] == [(1, "1.50", 0), (2, "-0.05", 2)]


def test_schemaless_json_strings_and_bytes():
    rows = records_table(kafka_table([b'{"a": 1}', b'{"b": "x"}', b"[1, 2]"]), "json", kafka_columns=False)
    assert rows.to_pylist() == [{"a": 1, "b": None, "value": None}, {"a": None, "b": "x", "value": None},
                                {"a": None, "b": None, "value": "[1, 2]"}]
    assert records_table(kafka_table([b"hi"]), "string", False).to_pylist() == [{"value": "hi"}]
    assert records_table(kafka_table([b"\xff"]), "bytes", False).to_pylist() == [{"value": b"\xff"}]
    with pytest.raises(RecordError, match="record orders-0@1: "):
        records_table(kafka_table([b"{}", b"{not json"]), "json", False)


def test_envelopes_with_a_null_payload_are_tombstones_and_with_a_null_schema_schemaless():
    optional = {**SCHEMA, "optional": True}
    values = [json.dumps({"schema": optional, "payload": None}).encode(),
              json.dumps({"schema": None, "payload": None}).encode(),
              json.dumps({"schema": None, "payload": {"id": 7, "note": "x"}}).encode()]
    rows = records_table(kafka_table(values), "json", kafka_columns=True)
    assert [(r["id"], r["note"], r["_kafka_offset"]) for r in rows.to_pylist()] == [(7, "x", 2)]
    assert rows.column_names == ["id", "note", *KAFKA_COLUMNS]


def frame(spark, table: pa.Table):
    """*table* as the DataFrame a Spark-level sink's batch is (the columns the Delta sink reads)."""
    return spark.createDataFrame([tuple(r.values()) for r in table.to_pylist()],
                                 "topic string, partition int, offset long, timestamp long, value binary")


class Batch:
    """A stand-in for a batch DataFrame, for the sink's own write and commit path without Spark: ``mapPartitions``
    runs the function once per simulated Spark partition (a list of (topic, partition, offset, timestamp, value))."""

    def __init__(self, *partitions: pa.Table) -> None:
        self.partitions = [list(zip(*t.to_pydict().values(), strict=True)) for t in partitions]
        self.rdd = self

    def select(self, *columns: str) -> Batch:
        return self

    def mapPartitions(self, function):
        return types.SimpleNamespace(collect=lambda: [row for rows in self.partitions for row in function(iter(rows))])


def values(*objects: dict) -> list[bytes]:
    return [json.dumps(o).encode() for o in objects]


def task_for(tmp_path: Path, partitions: list[TopicPartition], **config: str) -> DeltaSinkTask:
    settings = {"name": "orders-to-delta", "table.uri": str(tmp_path / "orders"), **config}
    task = DeltaSinkTask()
    task.context = SinkTaskContext(settings, partitions)
    task.start(settings)
    return task


def read(uri: Path) -> list[dict]:
    from deltalake import DeltaTable

    return sorted(DeltaTable(str(uri)).to_pyarrow_table().to_pylist(), key=lambda r: r["_kafka_offset"])


@pytest.mark.integration
def test_a_replayed_batch_is_skipped_and_a_new_task_starts_where_the_table_is(spark, tmp_path):
    from deltalake import DeltaTable

    tp = TopicPartition("orders", 0)
    task = task_for(tmp_path, [tp], **{"partition.by": "country"})
    first = kafka_table([order(i, country="fr" if i % 2 else "de") for i in range(5)])
    task.write_batch(frame(spark, first), 0)
    task.write_batch(frame(spark, first), 0)  # the same batch again: after a crash
    wider = kafka_table([order(i, note=f"n{i}") for i in range(3, 8)], first=3)  # overlaps, and a new field
    task.write_batch(frame(spark, wider), 1)
    task.stop()
    rows = read(tmp_path / "orders")
    assert [r["_kafka_offset"] for r in rows] == list(range(8))  # each record once
    assert [r["note"] for r in rows] == [None] * 5 + ["n5", "n6", "n7"]
    table = DeltaTable(str(tmp_path / "orders"))
    assert table.metadata().partition_columns == ["country"]
    assert table.transaction_version(app_id("orders-to-delta", "orders", 0)) == 8
    again = task_for(tmp_path, [tp, TopicPartition("orders", 1)])
    assert again.context.rewinds == {tp: 8}  # where the table got to; partition 1 has nothing stored
    again.stop()


def test_settings_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="value.format"):
        task_for(tmp_path, [], **{"value.format": "avro"})


@pytest.mark.integration
def test_sigkill_mid_stream_leaves_every_record_exactly_once(broker, topic_name, tmp_path, wait_until, worker_config,
                                                             connectd_processes):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from deltalake import DeltaTable

    count = 60_000
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic_name, order(i), partition=i % 2)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    uri = tmp_path / "table"
    # Small batches, so that the kill lands between commits.
    worker = worker_config.file(**{"sink.batch.max.records": "2000"})
    (tmp_path / "delta.json").write_text(json.dumps({"name": "to-delta", "config": {
        "connector.class": "DeltaSink", "topics": topic_name, "tasks.max": "2", "table.uri": str(uri)}}))

    def rows() -> int:
        try:
            return DeltaTable(str(uri)).count()
        except Exception:  # noqa: BLE001 - no table yet
            return 0

    process = connectd_processes.start("standalone", worker, tmp_path / "delta.json")
    wait_until(rows, "the first batches in the table", until=lambda n: n >= 4000, timeout=180)
    assert rows() < count, "too fast to kill mid-stream; raise the record count"
    connectd_processes.kill(process)
    process = connectd_processes.start("standalone", worker, tmp_path / "delta.json")
    wait_until(rows, "every record in the table", until=lambda n: n >= count, timeout=300)
    assert connectd_processes.terminate(process) == 0
    table = DeltaTable(str(uri)).to_pyarrow_table(columns=["id", "_kafka_partition", "_kafka_offset"])
    assert table.num_rows == count
    assert sorted(table.column("id").to_pylist()) == list(range(count))  # each record exactly once


def test_a_relative_table_path_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="expected an absolute path or a URI"):
        task_for(tmp_path, [], **{"table.uri": "lake/orders"})


def test_an_existing_table_keeps_its_partitioning(tmp_path):
    from deltalake import DeltaTable

    tp = TopicPartition("orders", 0)
    task_for(tmp_path, [tp], **{"partition.by": "country"}).write_batch(
        Batch(kafka_table(values({"id": 1, "country": "fr"}))), 0)
    task = task_for(tmp_path, [tp])  # without partition.by: the table's own columns
    task.write_batch(Batch(kafka_table(values({"id": 2, "country": "de"}), first=1)), 1)
    assert [(r["id"], r["country"]) for r in read(tmp_path / "orders")] == [(1, "fr"), (2, "de")]
    assert DeltaTable(str(tmp_path / "orders")).metadata().partition_columns == ["country"]
    with pytest.raises(ConnectException, match="partitioned by country, but partition.by is id"):
        task_for(tmp_path, [tp], **{"partition.by": "id"})


def test_partition_by_is_refused_for_an_existing_unpartitioned_table(tmp_path):
    tp = TopicPartition("orders", 0)
    task_for(tmp_path, [tp]).write_batch(Batch(kafka_table(values({"id": 1, "country": "fr"}))), 0)
    with pytest.raises(ConnectException, match="partitioned by no column, but partition.by is country"):
        task_for(tmp_path, [tp], **{"partition.by": "country"})
    assert [(r["id"], r["country"]) for r in read(tmp_path / "orders")] == [(1, "fr")]


def test_files_whose_types_conflict_are_not_committed(tmp_path):
    from deltalake import DeltaTable

    uri = tmp_path / "orders"
    both = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    task = task_for(tmp_path, both)
    # Each Spark partition infers its own types: a long in one, a double in the other.
    first = Batch(kafka_table(values({"id": 1, "v": 1})), kafka_table(values({"id": 2, "v": 2.5}), partition=1))
    with pytest.raises(ConnectException, match="v: int64 in the files of orders-0; double in the files of orders-1"):
        task.write_batch(first, 0)
    assert not DeltaTable.is_deltatable(str(uri))
    task.write_batch(Batch(kafka_table(values({"id": 1}))), 0)
    new_column = Batch(kafka_table(values({"id": 2, "w": "abc"}), first=1), kafka_table(values({"id": 3, "w": 7}),
                                                                                          partition=1))
    with pytest.raises(ConnectException, match="w: string in the files of orders-0; int64 in the files of orders-1"):
        task.write_batch(new_column, 1)
    with pytest.raises(ConnectException, match="column id is int64 in the table, double in records of orders-0"):
        task.write_batch(Batch(kafka_table(values({"id": 2.5}), first=1)), 1)
    table = DeltaTable(str(uri))
    assert table.to_pyarrow_table().to_pylist() == [{"id": 1, "_kafka_topic": "orders", "_kafka_partition": 0,
                                                     "_kafka_offset": 0, "_kafka_timestamp": 1000}]
    assert table.transaction_version(app_id("orders-to-delta", "orders", 0)) == 1


def test_a_column_another_writer_added_with_another_type_is_not_written(tmp_path):
    from deltalake import DeltaTable

    uri = tmp_path / "orders"
    task = task_for(tmp_path, [TopicPartition("orders", 0)])
    task.write_batch(Batch(kafka_table(values({"id": 1}))), 0)
    other = task_for(tmp_path, [TopicPartition("orders", 1)])
    batch = Batch(kafka_table(values({"id": 2, "price": 10.5}), first=1))
    collect = batch.mapPartitions

    def meanwhile(function):  # the other task's batch commits while this one's executors write
        written = collect(function).collect()
        other.write_batch(Batch(kafka_table(values({"id": 3, "price": 10}), partition=1)), 0)
        return types.SimpleNamespace(collect=lambda: written)
    batch.mapPartitions = meanwhile
    with pytest.raises(ConnectException, match=r"price: double in the files of orders-0 \(the table has int64\)"):
        task.write_batch(batch, 1)
    assert sorted(r["price"] or 0 for r in DeltaTable(str(uri)).to_pyarrow_table().to_pylist()) == [0, 10]


def test_a_field_without_a_value_yet_is_added_with_its_first_value(tmp_path):
    from deltalake import DeltaTable

    task = task_for(tmp_path, [TopicPartition("orders", 0)])
    task.write_batch(Batch(kafka_table(values({"id": 1, "coupon": None, "tags": [], "addr": {"city": "Paris",
                                                                                           "zip": None}}))), 0)
    schema = pa.schema(DeltaTable(str(tmp_path / "orders")).schema().to_arrow())
    assert "coupon" not in schema.names and "tags" not in schema.names  # no void columns
    assert schema.field("addr").type == pa.struct([("city", pa.string())])
    task.write_batch(Batch(kafka_table(values({"id": 2, "coupon": "SALE", "tags": ["a"]}), first=1)), 1)
    assert [(r["id"], r["coupon"], r["tags"]) for r in read(tmp_path / "orders")] == [(1, None, None),
                                                                                     (2, "SALE", ["a"])]


def test_nullability_is_no_type_conflict_and_a_nested_field_the_table_lacks_is_added(tmp_path, caplog):
    from deltalake import DeltaTable

    both = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    task = task_for(tmp_path, both)
    task.write_batch(Batch(kafka_table(values({"id": 1}))), 0)
    # A new column from a Connect schema's required nested field and from an inferred (nullable) one at once.
    required = {"type": "struct", "optional": False, "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "addr", "type": "struct", "optional": False, "fields": [
            {"field": "city", "type": "string", "optional": False}]}]}
    task.write_batch(Batch(kafka_table(values({"schema": required, "payload": {"id": 2, "addr": {"city": "Lyon"}}}),
                                       first=1),
                           kafka_table(values({"id": 3, "addr": {"city": "Nice"}}), partition=1)), 1)
    with caplog.at_level("INFO", logger="connectd_delta.task"):
        task.write_batch(Batch(kafka_table(values({"id": 4, "addr": {"city": "Metz", "zip": "57000"}}), first=2)), 2)
    assert sorted(((r["id"], r["addr"]) for r in read(tmp_path / "orders")), key=lambda r: r[0]) == [
        (1, None), (2, {"city": "Lyon", "zip": None}), (3, {"city": "Nice", "zip": None}),
        (4, {"city": "Metz", "zip": "57000"})]
    assert pa.schema(DeltaTable(str(tmp_path / "orders")).schema().to_arrow()).field("addr").type == pa.struct(
        [("city", pa.string()), ("zip", pa.string())])
    assert "delta_schema_evolved: " in caplog.text and ": addr.zip" in caplog.text


def test_decimals_written_as_json_numbers_are_exact():
    schema = {"type": "struct", "optional": False, "fields": [
        {"field": "price", "type": "bytes", "optional": False, "name": "org.apache.kafka.connect.data.Decimal",
         "parameters": {"scale": "2", "connect.decimal.precision": "20"}},
        {"field": "rate", "type": "float64", "optional": False},
        {"field": "line", "type": "struct", "optional": False, "fields": [
            {"field": "weight", "type": "float32", "optional": False}]}]}
    # JsonConverter's decimal.format=NUMERIC: the decimal is a JSON number, too long for a float
    value = b'{"schema": %s, "payload": {"price": 12345678901234567.89, "rate": 1.5, "line": {"weight": 0.25}}}' \
        % json.dumps(schema).encode()
    schemaless = json.dumps({"note": "org.apache.kafka.connect.data.Decimal", "v": 2.5}).encode()
    (row,) = records_table(kafka_table([value]), "json", kafka_columns=False).to_pylist()
    assert row == {"price": decimal.Decimal("12345678901234567.89"), "rate": 1.5, "line": {"weight": 0.25}}
    (inferred,) = records_table(kafka_table([schemaless]), "json", kafka_columns=False).to_pylist()
    assert inferred == {"note": "org.apache.kafka.connect.data.Decimal", "v": 2.5}


def test_two_tasks_that_both_create_the_table_both_commit(tmp_path, monkeypatch):
    import deltalake.transaction
    from deltalake import DeltaTable

    first = task_for(tmp_path, [TopicPartition("orders", 0)])
    second = task_for(tmp_path, [TopicPartition("orders", 1)])
    create = deltalake.transaction.create_table_with_add_actions

    def first_creates_it_meanwhile(*arguments, **options):  # between the second's look and its create
        monkeypatch.setattr(deltalake.transaction, "create_table_with_add_actions", create)
        first.write_batch(Batch(kafka_table(values({"id": 1}))), 0)
        return create(*arguments, **options)
    monkeypatch.setattr(deltalake.transaction, "create_table_with_add_actions", first_creates_it_meanwhile)
    second.write_batch(Batch(kafka_table(values({"id": 2, "v": 1}), partition=1)), 0)  # its create loses: appends
    assert [(r["id"], r["v"]) for r in sorted(read(tmp_path / "orders"), key=lambda r: r["id"])] == [(1, None), (2, 1)]
    assert DeltaTable(str(tmp_path / "orders")).transaction_version(app_id("orders-to-delta", "orders", 1)) == 1


def test_a_partition_column_without_a_value_in_the_first_batch_is_made_a_string(tmp_path, caplog):
    tp = TopicPartition("orders", 0)
    task = task_for(tmp_path, [tp], **{"partition.by": "country"})
    with caplog.at_level("WARNING", logger="connectd_delta.task"):
        task.write_batch(Batch(kafka_table(values({"id": 1, "country": None}))), 0)
    assert "country has no value in the records that create the table" in caplog.text
    task.write_batch(Batch(kafka_table(values({"id": 2, "country": "fr"}), first=1)), 1)
    assert [(r["id"], r["country"]) for r in read(tmp_path / "orders")] == [(1, None), (2, "fr")]


def table_rows(uri: Path) -> list[dict]:
    """The rows of the table at *uri* by id, for tables with rows of other writers (no ``_kafka_offset``)."""
    from deltalake import DeltaTable

    return sorted(DeltaTable(str(uri)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def table_schema(uri: Path) -> pa.Schema:
    from deltalake import DeltaTable

    return pa.schema(DeltaTable(str(uri)).schema().to_arrow())


def test_nested_fields_are_added_in_structs_at_any_depth_and_in_lists_of_structs(tmp_path):
    from deltalake import DeltaTable

    uri = tmp_path / "orders"
    both = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    task = task_for(tmp_path, both, **{"kafka.columns": "false"})
    task.write_batch(Batch(kafka_table(values({"id": 1, "addr": {"city": "Paris"}, "lines": [{"sku": "a"}]}))), 0)
    # Each Spark partition brings its own new fields: in a struct, in a struct in a struct, in a list's structs.
    task.write_batch(Batch(
        kafka_table(values({"id": 2, "addr": {"city": "Lyon", "zip": "69000"}, "lines": [{"sku": "b", "qty": 2}]}),
                    first=1),
        kafka_table(values({"id": 3, "addr": {"geo": {"lat": 45.5}}, "lines": [{"sku": "c"}]}), partition=1)), 1)
    schema = table_schema(uri)
    assert schema.field("addr").type == pa.struct([("city", pa.string()), ("zip", pa.string()),
                                                   ("geo", pa.struct([("lat", pa.float64())]))])
    assert schema.field("lines").type.value_type == pa.struct([("sku", pa.string()), ("qty", pa.int64())])
    # Connect schemas of two versions in one batch: the newer one's nested field is added too.
    v1 = {"type": "struct", "optional": False, "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "addr", "type": "struct", "optional": True, "fields": [
            {"field": "city", "type": "string", "optional": True}]}]}
    v2 = json.loads(json.dumps(v1))
    v2["fields"][1]["fields"].append({"field": "geo", "type": "struct", "optional": True, "fields": [
        {"field": "lat", "type": "float64", "optional": True}, {"field": "lon", "type": "float64", "optional": True}]})
    task.write_batch(Batch(kafka_table(values({"schema": v1, "payload": {"id": 4, "addr": {"city": "Metz"}}},
                                              {"schema": v2, "payload": {"id": 5, "addr": {"geo": {"lon": 6.2}}}}),
                                       first=2)), 2)
    assert [(r["id"], r["addr"], r["lines"]) for r in table_rows(uri)] == [
        (1, {"city": "Paris", "zip": None, "geo": None}, [{"sku": "a", "qty": None}]),
        (2, {"city": "Lyon", "zip": "69000", "geo": None}, [{"sku": "b", "qty": 2}]),
        (3, {"city": None, "zip": None, "geo": {"lat": 45.5, "lon": None}}, [{"sku": "c", "qty": None}]),
        (4, {"city": "Metz", "zip": None, "geo": None}, None),
        (5, {"city": None, "zip": None, "geo": {"lat": None, "lon": 6.2}}, None)]
    # A nested field new in two files with two types: nothing committed, the paths named.
    with pytest.raises(ConnectException, match=r"addr\.floor: int64 in the files of orders-0; string in the files "
                                               r"of orders-1 \|"):
        task.write_batch(Batch(kafka_table(values({"id": 6, "addr": {"floor": 1}, "lines": [{"lot": 1}]}), first=4),
                               kafka_table(values({"id": 7, "addr": {"floor": "2nd"}, "lines": [{"lot": "x"}]}),
                                           partition=1, first=1)), 3)
    # A nested field the table has, with a value its type cannot hold.
    with pytest.raises(ConnectException, match=r"column lines is .* in the table, .* in records of orders-0"):
        task.write_batch(Batch(kafka_table(values({"id": 6, "lines": [{"qty": 1.5}]}), first=4)), 3)
    table = DeltaTable(str(uri))
    assert table.count() == 5
    assert table.transaction_version(app_id("orders-to-delta", "orders", 0)) == 4
    assert "floor" not in str(table.schema().to_arrow())


def test_a_nested_conflict_names_every_path_but_not_those_under_a_conflicting_one(tmp_path):
    task = task_for(tmp_path, [TopicPartition("orders", 0), TopicPartition("orders", 1)])
    with pytest.raises(ConnectException) as failure:
        task.write_batch(Batch(kafka_table(values({"id": 1, "a": {"b": {"c": 1}}, "l": [{"x": 1}]})),
                               kafka_table(values({"id": 2, "a": {"b": "text"}, "l": [{"x": 1.5}]}), partition=1)), 0)
    assert "a.b: struct in the files of orders-0; string in the files of orders-1" in str(failure.value)
    assert "l[].x: int64 in the files of orders-0; double in the files of orders-1" in str(failure.value)
    assert "a.b.c" not in str(failure.value)


def test_void_columns_of_an_older_writer_take_the_type_of_their_first_values(tmp_path, caplog):
    from deltalake import DeltaTable, write_deltalake

    uri = tmp_path / "orders"
    # As Spark (a column of NullType) or an older connectd left it: void columns, at the top and in a struct.
    write_deltalake(str(uri), pa.table({"id": pa.array([0], pa.int64()), "note": pa.array([None], pa.null()),
                                        "addr": pa.array([{"city": "Paris", "zip": None}],
                                                         pa.struct([("city", pa.string()), ("zip", pa.null())]))}))
    assert '"type":"void"' in DeltaTable(str(uri)).schema().to_json()
    task = task_for(tmp_path, [TopicPartition("orders", 0)], **{"kafka.columns": "false"})
    task.write_batch(Batch(kafka_table(values({"id": 1, "note": None, "addr": {"city": "Lyon", "zip": None}}))), 0)
    assert pa.types.is_null(table_schema(uri).field("note").type)  # still no value: still void
    with caplog.at_level("INFO", logger="connectd_delta.task"):
        task.write_batch(Batch(kafka_table(values({"id": 2, "note": "gift", "addr": {"city": "Nice", "zip": 6000}}),
                                           first=1)), 1)
    schema = table_schema(uri)
    assert schema.field("note").type == pa.string()
    assert schema.field("addr").type == pa.struct([("city", pa.string()), ("zip", pa.int64())])
    assert [(r["id"], r["note"], r["addr"]) for r in table_rows(uri)] == [
        (0, None, {"city": "Paris", "zip": None}), (1, None, {"city": "Lyon", "zip": None}),
        (2, "gift", {"city": "Nice", "zip": 6000})]
    assert ": note, addr.zip" in caplog.text
    # From then on the column has a type like any other.
    with pytest.raises(ConnectException, match="column note is string in the table, struct"):
        task.write_batch(Batch(kafka_table(values({"id": 3, "note": {"text": "x"}}), first=2)), 2)


def test_fields_are_written_to_the_columns_whose_names_differ_only_in_case(tmp_path):
    uri = tmp_path / "orders"
    both = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    task = task_for(tmp_path, both, **{"kafka.columns": "false", "partition.by": "Country"})
    task.write_batch(Batch(kafka_table(values({"Id": 1, "Country": "fr", "Addr": {"City": "Paris"}}))), 0)
    task.write_batch(Batch(kafka_table(values({"id": 2, "country": "de", "addr": {"city": "Bonn", "Zip": "53111"}}),
                                       first=1)), 1)
    assert sorted(table_schema(uri).names) == ["Addr", "Country", "Id"]  # Delta's names are case-insensitive
    assert table_schema(uri).field("Addr").type == pa.struct([("City", pa.string()), ("Zip", pa.string())])
    assert sorted((r["Id"], r["Country"], r["Addr"]) for r in table_rows_by(uri, "Id")) == [
        (1, "fr", {"City": "Paris", "Zip": None}), (2, "de", {"City": "Bonn", "Zip": "53111"})]
    with pytest.raises(ConnectException, match="fields addr.zip and addr.ZIP in records of orders-0 differ only in "
                                               "case"):
        task.write_batch(Batch(kafka_table(values({"id": 3, "country": "fr", "addr": {"zip": "1", "ZIP": "2"}}),
                                           first=2)), 2)
    with pytest.raises(ConnectException, match="note: spelled note in the files of orders-0; Note in the files of "
                                               "orders-1, one name to Delta"):
        task.write_batch(Batch(kafka_table(values({"id": 3, "country": "fr", "note": "a"}), first=2),
                               kafka_table(values({"id": 4, "country": "fr", "Note": "b"}), partition=1)), 2)
    assert len(table_rows_by(uri, "Id")) == 2


def table_rows_by(uri: Path, key: str) -> list[dict]:
    from deltalake import DeltaTable

    return sorted(DeltaTable(str(uri)).to_pyarrow_table().to_pylist(), key=lambda r: r[key])


def test_a_batch_whose_partition_another_writer_committed_meanwhile_commits_nothing(tmp_path):
    tp = TopicPartition("orders", 0)
    task = task_for(tmp_path, [tp])
    task.write_batch(Batch(kafka_table(values({"id": 0}))), 0)
    zombie = task_for(tmp_path, [tp])  # the partition's task of before a rebalance, not stopped yet
    batch = Batch(kafka_table(values({"id": 1}, {"id": 2}), first=1))
    collect = batch.mapPartitions

    def meanwhile(function):  # the other writer commits the same records while this batch's executors write
        written = collect(function).collect()
        zombie.write_batch(Batch(kafka_table(values({"id": 1}, {"id": 2}), first=1)), 1)
        return types.SimpleNamespace(collect=lambda: written)
    batch.mapPartitions = meanwhile
    with pytest.raises(ConnectException, match=r"orders-0 \(now 3, the batch started from 1\); nothing committed"):
        task.write_batch(batch, 1)
    assert [r["id"] for r in read(tmp_path / "orders")] == [0, 1, 2]  # each once
    assert task_for(tmp_path, [tp]).context.rewinds == {tp: 3}  # started again, it goes on from the table


def test_a_partition_column_null_in_one_spark_partition_and_set_in_another_creates_the_table(tmp_path):
    task = task_for(tmp_path, [TopicPartition("orders", 0), TopicPartition("orders", 1)],
                    **{"partition.by": "country"})
    task.write_batch(Batch(kafka_table(values({"id": 1, "country": None})),
                           kafka_table(values({"id": 2, "country": "fr"}), partition=1)), 0)
    assert table_schema(tmp_path / "orders").field("country").type == pa.string()
    assert [(r["id"], r["country"]) for r in table_rows(tmp_path / "orders")] == [(1, None), (2, "fr")]


def test_schemaless_values_without_one_type_name_the_field_and_the_records():
    with pytest.raises(RecordError, match=r"records orders-0@3\.\.4: field v: its values fit no one column type"):
        records_table(kafka_table(values({"v": 1, "w": "a"}, {"v": "x", "w": "b"}), first=3), "json", False)
    with pytest.raises(RecordError, match=r"records orders-0@0\.\.1: their schemas \(or, without one, their values\) "
                                          "disagree on a field's type"):
        records_table(kafka_table([order(1), json.dumps({"id": "x"}).encode()]), "json", False)


@pytest.mark.integration
def test_on_spark_nested_fields_are_added_and_void_columns_typed(spark, tmp_path):
    from deltalake import write_deltalake

    uri = tmp_path / "orders"
    write_deltalake(str(uri), pa.table({"id": pa.array([0], pa.int64()), "Note": pa.array([None], pa.null()),
                                        "addr": pa.array([{"city": "Paris"}], pa.struct([("city", pa.string())]))}))
    task = task_for(tmp_path, [TopicPartition("orders", 0)], **{"kafka.columns": "false"})
    task.write_batch(frame(spark, kafka_table(values({"id": 1, "note": "gift", "addr": {"city": "Lyon", "zip": "69000"}},
                                                     {"id": 2, "addr": {"geo": {"lat": 45.5}}}))), 0)
    task.stop()
    assert table_schema(uri).field("addr").type == pa.struct([("city", pa.string()), ("zip", pa.string()),
                                                              ("geo", pa.struct([("lat", pa.float64())]))])
    assert [(r["id"], r["Note"], r["addr"]) for r in table_rows(uri)] == [
        (0, None, {"city": "Paris", "zip": None, "geo": None}),
        (1, "gift", {"city": "Lyon", "zip": "69000", "geo": None}),
        (2, None, {"city": None, "zip": None, "geo": {"lat": 45.5}})]


def test_records_below_the_tables_offset_are_skipped_and_said_in_the_log(tmp_path, caplog):
    from deltalake import DeltaTable

    tp = TopicPartition("orders", 0)
    task = task_for(tmp_path, [tp])
    task.write_batch(Batch(kafka_table(values({"id": 0}, {"id": 1}, {"id": 2}))), 0)
    # The topic deleted and made again: its offsets start over, below those the table holds.
    with caplog.at_level("WARNING", logger="connectd_delta.task"):
        task.write_batch(Batch(kafka_table(values({"id": 10}, {"id": 11}, {"id": 12}, {"id": 13}))), 1)
    assert [r["id"] for r in read(tmp_path / "orders")] == [0, 1, 2, 13]
    assert "delta_records_already_in_table: orders-0 from offset 0: the table holds it up to offset 3" in caplog.text
    version = DeltaTable(str(tmp_path / "orders")).version()
    task.write_batch(Batch(kafka_table(values({"id": 20}, {"id": 21}))), 2)  # all below: no commit at all
    assert DeltaTable(str(tmp_path / "orders")).version() == version
    caplog.clear()
    with caplog.at_level("WARNING", logger="connectd_delta.task"):
        task.write_batch(Batch(kafka_table(values({"id": 14}), first=4)), 3)
    assert "delta_records_already_in_table" not in caplog.text
    assert [r["id"] for r in read(tmp_path / "orders")] == [0, 1, 2, 13, 14]


def test_partition_values_of_any_type_and_text_are_read_back_as_written(tmp_path):
    from deltalake import DeltaTable

    schema = {"type": "struct", "optional": False, "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "at", "type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp"},
        {"field": "price", "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
         "parameters": {"scale": "8"}},
        {"field": "country", "type": "string", "optional": True}]}
    texts = ["a/b", "50% off", "x=y", "é:1", "a%2Fb", "null", ""]
    records = values(*({"schema": schema, "payload": {"id": i, "at": 1_795_600_000_123 + i * 3_600_000,
                                                      "price": base64.b64encode(bytes([i + 1])).decode(),
                                                      "country": text}} for i, text in enumerate(texts)))
    task = task_for(tmp_path, [TopicPartition("orders", 0)], **{"partition.by": "at,price,country"})
    task.write_batch(Batch(kafka_table(records)), 0)
    table = DeltaTable(str(tmp_path / "orders"))
    log = (tmp_path / "orders" / "_delta_log" / "00000000000000000000.json").read_text().splitlines()
    values_of = [json.loads(line)["add"]["partitionValues"] for line in log if '"add"' in line]
    assert {"at": "2026-11-25T09:46:40.123000Z", "price": "0.00000001", "country": "a/b"} in values_of
    rows = read(tmp_path / "orders")
    assert [(r["id"], r["country"], str(r["price"])) for r in rows] == [
        (i, text or None, str(decimal.Decimal(i + 1).scaleb(-8))) for i, text in enumerate(texts)]  # "": null
    assert [r["at"].timestamp() for r in rows] == [1_795_600_000.123 + i * 3600 for i in range(len(texts))]
    assert [r["id"] for r in table.to_pyarrow_table(filters=[("country", "=", "a/b")]).to_pylist()] == [0]


def test_a_column_another_task_adds_just_before_the_commit_is_no_failure(tmp_path, monkeypatch):
    from deltalake import DeltaTable

    first = task_for(tmp_path, [TopicPartition("orders", 0)])
    first.write_batch(Batch(kafka_table(values({"id": 1}))), 0)
    second = task_for(tmp_path, [TopicPartition("orders", 1)])
    commit = DeltaTable.create_write_transaction

    def second_evolves_the_schema_meanwhile(table, *arguments, **options):  # after the first's last look
        monkeypatch.setattr(DeltaTable, "create_write_transaction", commit)
        second.write_batch(Batch(kafka_table(values({"id": 2, "coupon": "SALE"}), partition=1)), 0)
        return commit(table, *arguments, **options)
    monkeypatch.setattr(DeltaTable, "create_write_transaction", second_evolves_the_schema_meanwhile)
    first.write_batch(Batch(kafka_table(values({"id": 3, "note": "x"}), first=1)), 1)
    assert [(r["id"], r["coupon"], r["note"]) for r in table_rows(tmp_path / "orders")] == [
        (1, None, None), (2, "SALE", None), (3, None, "x")]
    table = DeltaTable(str(tmp_path / "orders"))
    assert table.transaction_version(app_id("orders-to-delta", "orders", 0)) == 2
    assert table.transaction_version(app_id("orders-to-delta", "orders", 1)) == 1


def test_a_map_column_of_another_writer_takes_no_records_values(tmp_path):
    from deltalake import write_deltalake

    uri = tmp_path / "orders"
    write_deltalake(str(uri), pa.table({"id": pa.array([0], pa.int64()),
                                        "attrs": pa.array([[("k", "v")]], pa.map_(pa.string(), pa.string()))}))
    task = task_for(tmp_path, [TopicPartition("orders", 0)])
    with pytest.raises(ConnectException, match="column attrs is map<string, string> in the table, struct"):
        task.write_batch(Batch(kafka_table(values({"id": 1, "attrs": {"k": "w"}}))), 0)


def test_a_timestamp_ntz_partition_column_of_another_writer_takes_connect_timestamps(tmp_path):
    import datetime

    from deltalake import write_deltalake

    uri = tmp_path / "orders"
    write_deltalake(str(uri), pa.table({"id": pa.array([0], pa.int64()),
                                        "at": pa.array([datetime.datetime(2026, 1, 1)], pa.timestamp("us"))}),
                    partition_by=["at"])
    task = task_for(tmp_path, [TopicPartition("orders", 0)], **{"kafka.columns": "false"})
    task.write_batch(Batch(kafka_table([order(1)])), 0)  # at: a Connect Timestamp, 2026-11-25 09:46:40.001 UTC
    log = "".join(path.read_text() for path in sorted((uri / "_delta_log").glob("*.json")))
    assert '"partitionValues":{"at":"2026-11-25 09:46:40.001000"}' in log  # no zone: the column's has none
    assert [(r["id"], r["at"]) for r in table_rows(uri)] == [
        (0, datetime.datetime(2026, 1, 1)), (1, datetime.datetime(2026, 11, 25, 9, 46, 40, 1000))]
