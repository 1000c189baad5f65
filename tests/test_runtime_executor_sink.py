"""The states of a sink task's instances in one Python worker (connectd.runtime.sink.executor).

The instances are real (tests/support/recording_sink.py records their calls);
their consumers are made but never used, so no broker is needed.
"""

from __future__ import annotations

import os
import shutil

import pytest
from recording_sink import events

from connectd.runtime.sink import executor as executor_sink
from connectd.runtime.sink.executor import IDLE_STOP_S, SinkSpec


@pytest.fixture(autouse=True)
def no_instances(monkeypatch):
    # The tests play the reaper; the real one (and its signal handlers) stays out of pytest's process.
    monkeypatch.setattr(executor_sink, "_start_reaper", lambda: None)
    yield
    for instance in list(executor_sink._instances.values()):
        instance.stop()
    executor_sink._instances.clear()


def spec_for(tmp_path, run: str, workdir=None, task_id: int = 0) -> SinkSpec:
    return SinkSpec(
        connector="c", task_id=task_id, run=run, task_class="recording_sink.RecordingSinkTask",
        task_config={"file": str(tmp_path / "out.txt"), "events.file": str(tmp_path / f"events-{task_id}.txt")},
        connector_config={}, worker_config={"bootstrap.servers": "127.0.0.1:9",
                                            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                                            "value.converter": "org.apache.kafka.connect.storage.StringConverter"},
        consumer='{"bootstrap.servers": "127.0.0.1:9"}', producer="{}", partitions=[("t", 0), ("t", 1)],
        put_records=500, workdir=str(workdir or tmp_path / "gone"))


def calls(tmp_path, task_id: int = 0) -> list[str]:
    return [f"{call} {detail}".strip() for _, call, detail in events(tmp_path / f"events-{task_id}.txt")]


def test_the_first_batch_here_starts_the_task_and_opens_its_partitions(tmp_path):
    first = executor_sink._instance_for(spec_for(tmp_path, "run-1"))
    assert executor_sink._instance_for(spec_for(tmp_path, "run-1")) is first  # kept for the next batch
    assert calls(tmp_path) == ["start", "open t[0],t[1]"]
    assert {pid for pid, _, _ in events(tmp_path / "events-0.txt")} == {os.getpid()}


def test_a_batch_of_a_newer_run_stops_the_old_instance_first(tmp_path):
    old = executor_sink._instance_for(spec_for(tmp_path, "run-1"))
    new = executor_sink._instance_for(spec_for(tmp_path, "run-2"))
    assert new is not old
    assert calls(tmp_path) == ["start", "open t[0],t[1]", "close", "stop", "start", "open t[0],t[1]"]


def test_an_idle_instance_is_stopped_after_the_idle_bound_and_not_before(tmp_path):
    instance = executor_sink._instance_for(spec_for(tmp_path, "run-1"))
    executor_sink._reap_once(now=instance.last_used + IDLE_STOP_S - 1)
    assert calls(tmp_path)[-1] == "open t[0],t[1]"
    executor_sink._reap_once(now=instance.last_used + IDLE_STOP_S + 1)
    assert calls(tmp_path)[-2:] == ["close", "stop"]
    assert executor_sink._instances == {}


def test_a_busy_instance_is_never_stopped_by_the_reaper(tmp_path):
    instance = executor_sink._instance_for(spec_for(tmp_path, "run-1"))
    with instance.lock:  # a batch is running
        executor_sink._reap_once(now=instance.last_used + IDLE_STOP_S + 1)
    assert "stop" not in calls(tmp_path)
    assert executor_sink._locked_instance(spec_for(tmp_path, "run-1")) is instance
    instance.lock.release()


def test_an_instance_seeing_its_run_stop_is_stopped_at_once_and_unregisters(tmp_path):
    workdir = tmp_path / "run"
    workdir.mkdir()
    instance = executor_sink._instance_for(spec_for(tmp_path, "run-1", workdir))
    registered = workdir / "instances" / str(os.getpid())
    assert registered.exists()
    executor_sink._reap_once()
    assert "stop" not in calls(tmp_path)
    (workdir / "stop").touch()  # TaskQuery.stop()
    executor_sink._reap_once(now=instance.last_used)
    assert calls(tmp_path)[-2:] == ["close", "stop"]
    assert not registered.exists()


def test_a_removed_run_directory_also_stops_the_instance(tmp_path):
    workdir = tmp_path / "run"
    workdir.mkdir()
    instance = executor_sink._instance_for(spec_for(tmp_path, "run-1", workdir))
    shutil.rmtree(workdir)
    executor_sink._reap_once(now=instance.last_used)
    assert calls(tmp_path)[-2:] == ["close", "stop"]


def test_instances_of_other_tasks_are_left_alone(tmp_path):
    idle = executor_sink._instance_for(spec_for(tmp_path, "run-1", task_id=0))
    other = executor_sink._instance_for(spec_for(tmp_path, "run-1", task_id=1))
    other.last_used = idle.last_used + IDLE_STOP_S  # task 1 had a batch since
    executor_sink._reap_once(now=idle.last_used + IDLE_STOP_S + 1)
    assert calls(tmp_path, 0)[-1] == "stop"
    assert "stop" not in calls(tmp_path, 1)


def test_the_spec_crosses_as_json(tmp_path):
    spec = spec_for(tmp_path, "run-1")
    assert SinkSpec.from_json(spec.to_json()) == spec


def test_a_record_being_retried_gives_up_once_the_run_stops(tmp_path):
    import dataclasses

    from connectd.errors import ConnectorError, RetriableException
    from connectd.runtime.error_handling import Original

    workdir = tmp_path / "run"
    workdir.mkdir()
    # a bounded timeout, so that waiting it out (not giving up) ends too
    spec = dataclasses.replace(spec_for(tmp_path, "run-1", workdir), connector_config={"errors.retry.timeout": "1000"})
    instance = executor_sink._instance_for(spec)
    (workdir / "stop").touch()  # TaskQuery.stop()

    def converting():
        raise RetriableException("the schema registry is not there yet")

    with pytest.raises(ConnectorError, match="the task is stopping: a failed record is not retried again"):
        instance.runner.errors.run("VALUE_CONVERTER", "X", converting, Original("t"))


def test_a_python_worker_told_to_go_while_it_looks_up_an_instance_goes():
    """SIGTERM's handler stops the instances under the lock the main thread may be holding as the
    signal comes (looking its task's instance up): the worker goes, it does not hang."""
    import signal
    import subprocess
    import sys

    script = """
import signal
from connectd.runtime.sink import executor as executor_sink
executor_sink._start_reaper()  # as the first batch does, on the main thread: SIGTERM's handler
with executor_sink._instances_lock:
    signal.raise_signal(signal.SIGTERM)  # handled here, the lock held
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == -signal.SIGTERM, done.stderr
