"""The supervisor's state machine, transition by transition (connectd/herder/supervision.py).

Pure logic: a real StandaloneHerder and Supervisor, with an assembler that
hands out stand-in queries instead of Spark's, so that each transition can be
driven (a query that fails, ends, stalls) and what the supervisor did read
back from the statuses, its states and the assembler's starts and stops.
Spark's own queries go through the same supervisor in tests/integration.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import pytest

from connectd import SinkConnector, SinkTask
from connectd.connector import TopicPartition
from connectd.herder import StandaloneHerder
from connectd.herder.runs import ConnectorRun, TaskRun
from connectd.herder.supervision import HICCUPS_ALLOWED
from connectd.runtime.assembly import TaskHandle
from connectd.status import FAILED, PAUSED, RESTARTING, RUNNING

HICCUP = "org.apache.spark.SparkException: Python worker failed to connect back."


class _Task(SinkTask):
    pass


class _Sink(SinkConnector):
    def task_class(self):
        return _Task

    def task_configs(self, max_tasks):
        return [{"topics": "t"}] * max_tasks


@dataclass
class _Query:
    """Stands for a task's Spark query: what the supervisor asks of it."""

    name: str = "sink-0"
    active: bool = True
    error: str | None = None
    trigger_active: bool = False
    last_progress: float = field(default_factory=time.time)
    paused: bool = False

    def is_active(self) -> bool:
        return self.active

    def failure(self) -> str | None:
        return self.error

    def progress(self) -> tuple[bool, float | None]:
        return self.trigger_active, self.last_progress

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False


class _Assembler:
    """Starts stand-in queries; a start may be made to fail, a stop to raise."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.stops: list[int] = []
        self.start_errors: list[BaseException] = []
        self.stop_error: BaseException | None = None
        self.partitions: frozenset[TopicPartition] = frozenset()

    def start(self, *, task_id: int, **_: object) -> TaskHandle:
        if self.start_errors:
            raise self.start_errors.pop(0)
        self.starts.append(task_id)
        return TaskHandle(query=_Query(name=f"sink-{task_id}"), partitions=self.partitions)

    def stop(self, handle: TaskHandle, graceful_timeout_s: float) -> None:
        self.stops.append(int(handle.query.name.rsplit("-", 1)[1]))
        if self.stop_error is not None:
            raise self.stop_error


@pytest.fixture
def supervised(worker_config):
    """``supervised(scenario, tasks=1, **connector_config)``: runs ``await scenario(herder, run, assembler)``
    with a herder whose connector ``sink`` has *tasks* tasks (not started)."""

    def run_scenario(scenario, tasks: int = 1, **config: str):
        async def main():
            herder = StandaloneHerder(worker_config(**{"task.stall.timeout.ms": "60000"}), "w", None)
            assembler = herder.assembler = _Assembler()
            run = ConnectorRun("sink", {"name": "sink", "topics": "t", **config}, _Sink)
            run.tasks = [TaskRun(i, {"topics": "t"}) for i in range(tasks)]
            herder._connectors["sink"] = run
            return await scenario(herder, run, assembler)

        return asyncio.run(main())

    return run_scenario


def _states(herder, run) -> list[str]:
    return [herder.status.task(run.name, task.id).state for task in run.tasks]


async def _check(herder, run) -> None:
    for task in run.tasks:
        await herder.supervisor.check(run, task, asyncio.get_running_loop().time())


def test_a_start_reports_running_and_a_start_that_fails_reports_failed_with_the_trace(supervised):
    async def scenario(herder, run, assembler):
        assembler.start_errors = [RuntimeError("cannot reach the store")]
        for task in run.tasks:
            await herder.supervisor.start(run, task)
        return [task.state for task in run.tasks], _states(herder, run), herder.status.task("sink", 0).trace

    states, statuses, trace = supervised(scenario, tasks=2)
    assert states == ["failed", "running"] and statuses == [FAILED, RUNNING]
    assert "RuntimeError: cannot reach the store" in trace


def test_a_query_that_failed_makes_the_task_failed_holding_nothing_then_restarting_with_the_option(supervised):
    async def scenario(herder, run, assembler):
        task = run.tasks[0]
        await herder.supervisor.start(run, task)
        task.query.active, task.query.error = False, "ValueError: bad record"
        await _check(herder, run)
        failed = (task.state, task.handle, list(assembler.stops))
        assert herder.status.task("sink", 0).state == RESTARTING  # errors.restart.enable
        task.restart_at = 0.0  # due
        await _check(herder, run)
        return failed, task.state, assembler.starts

    failed, state, starts = supervised(scenario, **{"errors.restart.enable": "true"})
    assert failed == ("restarting", None, [0])  # stopped, released: it holds nothing
    assert (state, starts) == ("running", [0, 0])


def test_spark_hiccups_restart_the_query_quietly_within_the_budget_then_fail_it(supervised):
    async def scenario(herder, run, assembler):
        task = run.tasks[0]
        await herder.supervisor.start(run, task)
        seen = []
        for _ in range(HICCUPS_ALLOWED + 1):
            task.query.active, task.query.error = False, HICCUP
            await _check(herder, run)
            seen.append(herder.status.task("sink", 0).state)
        return seen, assembler.starts

    seen, starts = supervised(scenario)
    assert seen == [RUNNING] * HICCUPS_ALLOWED + [FAILED]
    assert len(starts) == 1 + HICCUPS_ALLOWED


def test_a_query_that_ended_unasked_is_started_again_and_past_the_budget_failed_saying_so(supervised):
    async def scenario(herder, run, assembler):
        task = run.tasks[0]
        await herder.supervisor.start(run, task)
        for _ in range(HICCUPS_ALLOWED + 1):
            task.query.active = False  # no error: it stopped by itself
            await _check(herder, run)
        return herder.status.task("sink", 0), assembler.starts

    status, starts = supervised(scenario)
    assert len(starts) == 1 + HICCUPS_ALLOWED
    assert status.state == FAILED
    assert "ended without the worker asking it to stop, more than 3 times in 10 minutes" in status.trace


@pytest.mark.parametrize(("trigger_active", "age_s", "restarted"), [
    (False, 29, False),   # idle: progress is reported every 10 s, so 29 s is late but within 3 intervals
    (False, 31, True),    # idle and silent for 3 intervals: the trigger no longer fires
    (True, 59, False),    # in a trigger for 59 s: within task.stall.timeout.ms (60 s here)
    (True, 61, True),     # stalled in one trigger
])
def test_a_trigger_that_stopped_firing_or_stalled_restarts_the_task(supervised, trigger_active, age_s, restarted):
    async def scenario(herder, run, assembler):
        task = run.tasks[0]
        await herder.supervisor.start(run, task)
        task.query.trigger_active, task.query.last_progress = trigger_active, time.time() - age_s
        await _check(herder, run)
        return assembler.starts, herder.status.task("sink", 0).state

    starts, state = supervised(scenario)
    assert (len(starts) == 2, state) == (restarted, RUNNING)


def test_a_stop_whose_steps_fail_still_ends_unassigned_and_a_restart_starts_it(supervised):
    async def scenario(herder, run, assembler):
        task = run.tasks[0]
        await herder.supervisor.start(run, task)
        assembler.stop_error = FileNotFoundError("linger.ms.tmp")  # issue 11's failure
        await herder.supervisor.stop(run, task)
        stopped = (task.state, task.handle)
        await herder.supervisor.restart(run, task)
        return stopped, task.state, herder.status.task("sink", 0).state

    stopped, state, status = supervised(scenario)
    assert stopped == ("unassigned", None)
    assert (state, status) == ("running", RUNNING)


def test_pausing_pauses_running_tasks_and_leaves_a_failed_one_failed(supervised):
    async def scenario(herder, run, assembler):
        assembler.start_errors = [RuntimeError("no")]
        for task in run.tasks:
            await herder.supervisor.start(run, task)
        for task in run.tasks:
            await herder.supervisor.pause(run, task)
        return _states(herder, run), run.tasks[1].query.paused

    states, paused = supervised(scenario, tasks=2)
    assert states == [FAILED, PAUSED] and paused


def test_partitions_that_appear_restart_only_the_tasks_whose_share_changed(supervised):
    async def scenario(herder, run, assembler):
        first = frozenset(TopicPartition("a", p) for p in range(2))
        assembler.partitions = first
        for task in run.tasks:
            await herder.supervisor.start(run, task)
        before = {task.id: task.query for task in run.tasks}
        grown = assembler.partitions = first | {TopicPartition("a", 2)}  # one new partition: one task gets it
        await herder.supervisor.rediscover(run, grown)
        moved = sorted(task.id for task in run.tasks if task.query is not before[task.id])
        return moved, run.partitions == grown, _states(herder, run)

    moved, updated, states = supervised(scenario, tasks=3)
    from connectd.runtime.sink.task import assign_partitions

    grown = [TopicPartition("a", p) for p in range(3)]
    assert moved == [t for t in range(3) if TopicPartition("a", 2) in assign_partitions(grown, t, 3)]
    assert updated and states == [RUNNING] * 3
