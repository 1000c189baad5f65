"""connectd.loops: a loop ends when its owner stops it, even when a step loses the cancellation."""

from __future__ import annotations

import asyncio
import io
import json

from connectd import loops as loops_module
from connectd.logging import configure_logging
from connectd.loops import Loops


def _stopped_under_way(step_body) -> tuple[asyncio.Task, int]:
    """Run a loop of *step_body* (an ``async`` function given an Event to set once it is under way),
    stop it while a step is under way; the loop's task and how many steps began."""
    steps = []

    async def scenario():
        began = asyncio.Event()

        async def step():
            steps.append(None)
            await step_body(began)

        loops = Loops()
        task = loops.run("lossy", step)
        await began.wait()
        await asyncio.wait_for(loops.stop("lossy"), 10)
        return task

    return asyncio.run(scenario()), len(steps)


def test_a_step_that_loses_the_cancellation_does_not_keep_its_loop_running():
    """Python 3.11's wait_for can turn a cancellation into the TimeoutError a step handles: the step
    returns as if nothing happened. The loop must not begin another step (it once ran for ever,
    and the worker's stop with it)."""
    async def losing(began: asyncio.Event) -> None:
        began.set()
        try:
            await asyncio.sleep(30)  # the step's own wait, cancelled by the stop
        except asyncio.CancelledError:
            return  # lost, as wait_for may lose it

    task, steps = _stopped_under_way(losing)
    assert task.done() and steps == 1


def test_a_step_still_waiting_after_losing_the_cancellation_is_cancelled_again_and_says_so(monkeypatch):
    monkeypatch.setattr(loops_module, "_RECANCEL_S", 0.2)
    stream = io.StringIO()
    configure_logging("INFO", json=True, stream=stream)

    async def stubborn(began: asyncio.Event) -> None:
        began.set()
        try:
            await asyncio.sleep(30)  # the step's own wait, cancelled by the stop
        except asyncio.CancelledError:
            pass  # lost; and it goes on waiting
        await asyncio.sleep(30)

    task, _ = _stopped_under_way(stubborn)
    assert task.cancelled()
    events = [json.loads(line)["event"] for line in stream.getvalue().splitlines()]
    assert "background_loop_stop_slow" in events
