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
