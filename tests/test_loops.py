"""connectd.loops: a loop ends when its owner stops it, even when a step loses the cancellation."""

from __future__ import annotations

import asyncio
import io
import json

from connectd import loops as loops_module
from connectd.logging import configure_logging
from connectd.loops import Loops


def test_a_step_that_loses_the_cancellation_does_not_keep_its_loop_running():
    """Python 3.11's wait_for can turn a cancellation into the TimeoutError a step handles: the step
    returns as if nothing happened. The loop must not begin another step (it once ran for ever,
    and the worker's stop with it)."""
    steps = []
    began = asyncio.Event()

    async def losing_step():
        steps.append(None)
        began.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return  # lost, as wait_for may lose it

    async def scenario():
        loops = Loops()
        task = loops.run("lossy", losing_step)
        await began.wait()
        await asyncio.wait_for(loops.stop("lossy"), 10)
        return task

    task = asyncio.run(scenario())
    assert task.done() and len(steps) == 1


def test_a_step_still_waiting_after_losing_the_cancellation_is_cancelled_again_and_says_so(monkeypatch):
    monkeypatch.setattr(loops_module, "_RECANCEL_S", 0.2)
    stream = io.StringIO()
    configure_logging("INFO", json=True, stream=stream)

    began = asyncio.Event()

    async def stubborn_step():
        began.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass  # lost; and it goes on waiting
        await asyncio.sleep(30)

    async def scenario():
        loops = Loops()
        task = loops.run("stubborn", stubborn_step)
        await began.wait()
        await asyncio.wait_for(loops.stop("stubborn"), 10)
        return task

    assert asyncio.run(scenario()).cancelled()
    events = [json.loads(line)["event"] for line in stream.getvalue().splitlines()]
    assert "background_loop_stop_slow" in events
