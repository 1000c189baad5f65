"""The ``spark`` capacity provider: a worker's executors on a Spark standalone cluster of two Spark workers
grow under load and shrink when idle, and no record is lost (docs/capacity.md)."""

from __future__ import annotations

import pytest
from ledger_sink import read_ledger

from connectd.capacity.providers import ProviderUnusable
from connectd.capacity.spark import SparkProvider
from connectd.config.worker import WorkerConfig

PARTITIONS = 2


def _worker(**settings: str) -> WorkerConfig:
    return WorkerConfig({"bootstrap.servers": "127.0.0.1:9092", "group.id": "g", "config.storage.topic": "c",
                         "offset.storage.topic": "o", "status.storage.topic": "s", "capacity.provider": "spark",
                         **settings}, "distributed")


def test_it_is_refused_without_a_spark_master_or_beside_dynamic_allocation():
    with pytest.raises(ProviderUnusable, match=r"capacity.provider=spark: spark.master is local\[2\]: .* there is "
                                               r"no Spark master"):
        SparkProvider(_worker(**{"spark.master": "local[2]"})).check()
    with pytest.raises(ProviderUnusable, match="spark.dynamicAllocation.enabled=true: Spark's dynamic allocation"):
        SparkProvider(_worker(**{"spark.master": "spark://127.0.0.1:7077",
                                 "spark.dynamicAllocation.enabled": "true"})).check()
    SparkProvider(_worker(**{"spark.master": "spark://127.0.0.1:7077"})).check()


def test_mcu_count_sizes_the_executors_unless_the_file_does():
    conf = _worker(**{"spark.master": "spark://127.0.0.1:7077", "capacity.mcu.count": "2"}).spark_conf()
    assert (conf["spark.executor.cores"], conf["spark.executor.memory"]) == ("2", "8g")
    conf = _worker(**{"spark.master": "spark://m:7077", "spark.executor.memory": "512m"}).spark_conf()
    assert (conf["spark.executor.cores"], conf["spark.executor.memory"]) == ("1", "512m")


@pytest.mark.integration
def test_executors_grow_under_load_and_shrink_when_idle(spark_standalone_pair, cluster, topic_name, consume_records,
                                                        wait_until, tmp_path):
    workers = cluster(**{"spark.master": spark_standalone_pair.master_url, "spark.driver.host": "127.0.0.1",
                         "spark.driver.bindAddress": "127.0.0.1", "spark.executor.memory": "512m",
                         "capacity.mode": "autoscaling", "capacity.provider": "spark",
                         "capacity.min.worker.count": "1", "capacity.max.worker.count": "2",
                         "capacity.scale.out.cpu.utilization.percentage": "50",
                         "capacity.scale.in.cpu.utilization.percentage": "10",
                         "capacity.evaluation.interval.ms": "1000", "capacity.evaluation.window.ms": "6000",
                         "capacity.cooldown.ms": "10000"})
    workers.start("a")
    workers.wait_up("a")

    def executors() -> list[dict]:
        return (workers.call("a", "GET", "/capacity/status")[1].get("spark") or {}).get("executors", [])

    # It starts at the policy's lowest count: one executor (the master gave it one on each Spark worker).
    wait_until(executors, "one executor", until=lambda found: len(found) == 1, timeout=120)
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    load = {"connector.class": "DatagenConnector", "kafka.topic": topic_name, "quickstart": "users",
            "max.interval": "0", "batch.size": "200", "tasks.max": str(PARTITIONS),
            "topic.creation.default.partitions": str(PARTITIONS), "topic.creation.default.replication.factor": "1"}
    sink = {"connector.class": "FileStreamSink", "topics": topic_name, "tasks.max": str(PARTITIONS),
            "file": str(tmp_path / "unused.txt"), "task.class": "ledger_sink.LedgerSinkTask", "ledger.dir": str(ledger)}
    assert workers.call("a", "POST", "/connectors", {"name": "load", "config": load})[0] == 201
    assert workers.call("a", "POST", "/connectors", {"name": "ledger", "config": sink})[0] == 201

    # Busy over 50 % of its core: a second executor, on the other Spark worker.
    grown = wait_until(executors, "a second executor", until=lambda found: len(found) == 2, timeout=180)
    assert len({e["host"].rsplit(":", 1)[0] for e in grown}) >= 1
    change = workers.call("a", "GET", "/capacity/status")[1]["spark"]["last_change"]
    assert change["desired"] == 2 and "executors, above scale-out 50 %" in change["reason"]

    # Idle: back to one executor.
    assert workers.call("a", "PUT", "/connectors/load/stop")[0] == 204
    wait_until(executors, "one executor again", until=lambda found: len(found) == 1, timeout=180)
    change = workers.call("a", "GET", "/capacity/status")[1]["spark"]["last_change"]
    assert change["desired"] == 1 and "below scale-in 10 %" in change["reason"]

    # No record lost: every record the source wrote reached the sink (a batch of a removed executor
    # runs again, so a record may arrive twice).
    written = {(m.partition(), m.offset()) for m in consume_records(topic_name, partitions=PARTITIONS, timeout=60)}
    assert written
    wait_until(lambda: {(e.partition, e.offset) for e in read_ledger(ledger)}, "every record in the sink",
               until=lambda seen: seen >= written, timeout=120)
