"""The planner of a source task run on an executor's host: which batch it asks for, and when
(the states in connectd.runtime.source.executor's docstring)."""

from __future__ import annotations

import json
import time

import pytest

from connectd.runtime.source.executor import SourceExecutorReader


@pytest.fixture
def run_dir(tmp_path):
    return tmp_path / "run"


def reader(run_dir, local: bool = True, flush_ms: int = 60000) -> SourceExecutorReader:
    run_dir.mkdir(exist_ok=True)
    spec = {"connector": "c", "task_id": 0, "run": "r", "worker_config": {"offset.flush.interval.ms": str(flush_ms)}}
    options = {"task.secret.spec": json.dumps(spec), "stop.file": str(run_dir / "stop"),
               "pause.file": str(run_dir / "pause"), "stored.dir": str(run_dir / "stored")}
    if local:
        options["host.local"] = "true"
    return SourceExecutorReader(options)


def next_request(planner: SourceExecutorReader) -> dict | None:
    """The request of the batch the planner asks for now, or None."""
    start = planner._seq
    end = planner.latestOffset({"seq": start})["seq"]
    if end == start:
        return None
    (partition,) = planner.partitions({"seq": start}, {"seq": end})
    return partition.request


def stored(run_dir, batch: int, seqs: list[int], hooks: bool = True) -> None:
    (run_dir / "stored").mkdir(exist_ok=True)
    (run_dir / "stored" / f"{batch:012d}-0.json").write_text(json.dumps({"seqs": seqs, "hooks": hooks}))


def test_the_first_look_starts_the_task_then_batches_follow_the_hosts_ready_flag(run_dir):
    planner = reader(run_dir)
    assert next_request(planner) == {"seq": 1, "prev": 0, "mode": "run", "stored": []}
    assert next_request(planner) is None  # nothing flagged: no Spark job for an idle source
    (run_dir / "ready").touch()
    assert next_request(planner)["mode"] == "run"


def test_without_a_shared_file_system_every_look_is_a_batch(run_dir):
    planner = reader(run_dir, local=False)
    assert [next_request(planner)["mode"] for _ in range(3)] == ["run"] * 3


def test_stored_batches_go_back_with_the_next_request_or_a_settle_batch_of_their_own(run_dir):
    planner = reader(run_dir)
    next_request(planner)
    stored(run_dir, 0, [1])
    assert next_request(planner) == {"seq": 2, "prev": 1, "mode": "settle", "stored": [1]}
    stored(run_dir, 1, [2])
    (run_dir / "ready").touch()
    assert next_request(planner) == {"seq": 3, "prev": 2, "mode": "run", "stored": [2]}
    assert not list((run_dir / "stored").iterdir())


def test_a_task_without_commit_record_or_commit_is_not_told_of_stored_batches(run_dir):
    planner = reader(run_dir)
    next_request(planner)
    stored(run_dir, 0, [1], hooks=False)
    assert next_request(planner) is None


def test_commit_is_owed_every_flush_interval_while_idle(run_dir):
    planner = reader(run_dir, flush_ms=50)
    next_request(planner)
    assert next_request(planner) is None
    planner._last_request -= 0.06  # the interval has passed since the last request
    assert next_request(planner)["mode"] == "settle"


def test_paused_nothing_is_polled_but_stored_batches_are_settled(run_dir):
    planner = reader(run_dir)
    next_request(planner)
    (run_dir / "pause").touch()
    (run_dir / "ready").touch()
    assert next_request(planner) is None
    stored(run_dir, 0, [1])
    assert next_request(planner)["mode"] == "settle"


def test_a_task_created_paused_is_not_started(run_dir):
    planner = reader(run_dir)
    (run_dir / "pause").touch()
    assert next_request(planner) is None


def test_stopping_takes_what_was_polled_then_a_final_batch_then_nothing(run_dir):
    planner = reader(run_dir)
    next_request(planner)
    (run_dir / "stop").touch()
    assert next_request(planner)["mode"] == "stop"
    stored(run_dir, 1, [2])
    assert next_request(planner) == {"seq": 3, "prev": 2, "mode": "final", "stored": [2]}
    (run_dir / "ready").touch()
    assert next_request(planner) is None


def test_stopping_while_paused_takes_nothing_and_a_task_never_started_needs_no_batch(run_dir):
    planner = reader(run_dir)
    next_request(planner)
    (run_dir / "pause").touch()
    (run_dir / "stop").touch()
    assert next_request(planner)["mode"] == "final"
    never = reader(run_dir / "other")
    (run_dir / "other" / "stop").touch()
    assert next_request(never) is None


def test_no_batch_once_the_workers_lease_ended(run_dir):
    planner = reader(run_dir)
    planner.lease_file = str(run_dir / "lease")
    (run_dir / "lease").write_text(repr(time.monotonic() - 1))
    assert next_request(planner) is None
