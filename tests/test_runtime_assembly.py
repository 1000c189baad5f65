"""Record-level sink tasks assembled in the worker process (connectd.runtime.assembly), their queries
not started: what a pinned task's runner is given, what the queries are told (no broker, no Spark)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from recording_sink import PinnedRecordingSinkTask, RecordingSinkTask

from connectd.config.connector import ConnectorConfig
from connectd.errors import ConnectorError, RetriableException
from connectd.plugins import get_registry
from connectd.runtime import assembly
from connectd.runtime.assembly import TaskAssembler
from connectd.runtime.error_handling import Original


def test_a_pinned_tasks_record_being_retried_gives_up_once_the_task_is_stopping(tmp_path, monkeypatch,
                                                                                 worker_config):
    metadata = SimpleNamespace(topics={"t": SimpleNamespace(partitions={0: None})})
    admin = SimpleNamespace(list_topics=lambda timeout: metadata)
    monkeypatch.setattr(assembly, "start_offsets", lambda consumer, partitions, reset: {})
    monkeypatch.setattr(assembly, "start_sink_query", lambda spark, **options: SimpleNamespace())
    assembler = TaskAssembler(worker_config(), None, get_registry(), lambda: admin, lambda config: {},
                              lambda connector, topics: None)
    task_config = {"file": str(tmp_path / "out.txt"), "events.file": str(tmp_path / "events.txt"), "topics": "t"}
    # a bounded timeout, so that waiting it out (not giving up) ends too
    connector_config = {"name": "c", "connector.class": "FileStreamSink", "topics": "t", "errors.retry.timeout": "1000"}
    handle = assembler.start(connector="c", connector_config=connector_config,
                             settings=ConnectorConfig.parse(connector_config, "sink"),
                             task_class=PinnedRecordingSinkTask, task_id=0, task_config=task_config, tasks=1,
                             paused=False)
    try:
        handle.runner.stopping = lambda: True  # TaskQuery.stop(), as the query sets it

        def converting():
            raise RetriableException("the schema registry is not there yet")

        with pytest.raises(ConnectorError, match="the task is stopping: a failed record is not retried again"):
            handle.runner.errors.run("VALUE_CONVERTER", "X", converting, Original("t"))
    finally:
        assembler.release(handle)


def test_sink_tasks_linger_as_many_as_spark_has_cores_less_one_first_started_first(tmp_path, monkeypatch,
                                                                                      worker_config):
    metadata = SimpleNamespace(topics={"t": SimpleNamespace(partitions={0: None, 1: None, 2: None})})
    admin = SimpleNamespace(list_topics=lambda timeout: metadata)
    started = []

    class Query:
        def __init__(self, **options):
            self.options, self.lingers = options, []
            started.append(self)

        def linger(self, ms):
            self.lingers.append(ms)

    monkeypatch.setattr(assembly, "start_offsets", lambda consumer, partitions, reset: {})
    monkeypatch.setattr(assembly, "start_sink_query", lambda spark, **options: Query(**options))
    worker = worker_config(**{"sink.batch.linger.ms": "750", "sink.batch.max.records": "1234"})
    spark = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=3))
    assembler = TaskAssembler(worker, spark, get_registry(), lambda: admin, lambda config: {},
                              lambda connector, topics: None)
    task_config = {"file": str(tmp_path / "out.txt"), "events.file": str(tmp_path / "events.txt"), "topics": "t"}
    connector_config = {"name": "c", "connector.class": "FileStreamSink", "topics": "t"}
    settings = ConnectorConfig.parse(connector_config, "sink")
    handles = [assembler.start(connector="c", connector_config=connector_config, settings=settings,
                               task_class=RecordingSinkTask, task_id=task, task_config=task_config, tasks=3,
                               paused=False) for task in range(3)]
    assert [q.options["max_records"] for q in started] == [1234] * 3
    assert [q.lingers[-1] for q in started] == [750, 750, 0]  # 3 cores: 2 lingering, one core for the rest
    assembler.release(handles[0])  # the first stops: the third lingers now
    assert [q.lingers[-1] for q in started[1:]] == [750, 750]
    for handle in handles[1:]:
        assembler.release(handle)


def test_sink_tasks_stopping_at_once_never_write_into_each_others_run_directories(tmp_path, worker_config):
    """Issue 11: several sink tasks of one connector stopped at once (new partitions, a rebalance).
    Each stop hands the lingering over among the tasks left; a stopping task leaves them before its
    query removes its run directory, and a run directory gone meanwhile is no error."""
    import shutil
    from pathlib import Path

    from connectd.runtime.assembly import TaskHandle
    from connectd.runtime.spark.queries import TaskQuery

    spark = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=4))
    assembler = TaskAssembler(worker_config(**{"sink.batch.linger.ms": "300"}), spark, get_registry(),
                              lambda: None, lambda config: {}, lambda connector, topics: None)
    handles = []
    for task in range(3):
        workdir = tmp_path / f"run-{task}"
        workdir.mkdir()
        handle = TaskHandle(query=TaskQuery(f"c-{task}", SimpleNamespace(isActive=False), workdir, workdir / "stop"))
        assembler._share_linger(new=handle)
        handles.append(handle)
    assert [(Path(h.query.workdir) / "linger.ms").read_text() for h in handles] == ["300"] * 3
    shutil.rmtree(handles[1].query.workdir)  # task 1's stop removed its run directory, still listed
    assembler.stop(handles[0], 1.0)  # hands the lingering over: task 1's directory is gone, no error
    assembler.stop(handles[1], 1.0)
    assert not any(h is handles[1] for h in assembler._sinks)
    assert [h.query.name for h in assembler._sinks] == ["c-2"]


def _source_query_options(worker, monkeypatch, connector_config, task_class=None):
    """What start_source_query is told for task 0 of a FileStreamSource on *worker* (no Spark)."""
    from connectd_file.tasks import FileStreamSourceTask

    told = {}
    monkeypatch.setattr(assembly, "start_source_query", lambda spark, **options: told.update(options))
    assembler = TaskAssembler(worker, None, get_registry(), lambda *args: None,
                              lambda config: {"kind": "topic", "topic": "offsets"}, lambda connector, topics: None)
    config = {"name": "c", "connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/in.txt",
              **connector_config}
    assembler.start(connector="c", connector_config=config, settings=ConnectorConfig.parse(config, "source"),
                    task_class=task_class or FileStreamSourceTask, task_id=0, task_config=config, tasks=1,
                    paused=False)
    return told


def test_an_exactly_once_workers_source_task_gets_kafka_connects_transactional_id(worker_config, monkeypatch):
    enabled = worker_config("distributed", **{"exactly.once.source.support": "enabled", "group.id": "cluster-a"})
    assert _source_query_options(enabled, monkeypatch, {})["exactly_once"] == {
        "transactional_id": "cluster-a-c-0", "boundary": "poll", "interval_ms": 60_000}  # offset.flush.interval.ms
    interval = {"transaction.boundary": "Interval", "transaction.boundary.interval.ms": "2500"}
    assert _source_query_options(enabled, monkeypatch, interval)["exactly_once"] == {
        "transactional_id": "cluster-a-c-0", "boundary": "interval", "interval_ms": 2500}
    assert _source_query_options(worker_config("distributed"), monkeypatch, {})["exactly_once"] is None


def test_exactly_once_refuses_a_task_whose_records_go_to_another_cluster_or_that_is_polled_on_the_driver(
        worker_config, monkeypatch):
    from recording_source import DriverPolledSourceTask

    enabled = worker_config("distributed", **{"exactly.once.source.support": "enabled"})
    with pytest.raises(ConnectorError, match="names another Kafka cluster than the worker's"):
        _source_query_options(enabled, monkeypatch, {"producer.override.bootstrap.servers": "elsewhere:9092"})
    same = enabled.raw("bootstrap.servers")
    assert _source_query_options(enabled, monkeypatch, {"producer.override.bootstrap.servers": same})["exactly_once"]
    with pytest.raises(ConnectorError, match="polled on the driver"):
        _source_query_options(enabled, monkeypatch, {}, DriverPolledSourceTask)
