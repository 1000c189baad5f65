"""The worker's background loops, kept alive and watched.

Every loop of the control plane that runs for the worker's whole life
(the herder's task checks and partition discovery, the config and status
topics' readers, group heartbeats, session-key rotation) runs its work one
*step* at a time through :meth:`Loops.run`. A step that raises is never the
loop's end::

    RUNNING ──step raises──► FAILING: logged with its trace (``background_loop_failed``),
       ▲                     the step tried again after a back-off doubling from the
       │                     loop's pause (0.5 s at least) up to 30 s
       └──a step succeeds──── (``background_loop_recovered``, with how many failed)
    any ──the owner stops it──► STOPPING: cancelled; no step begins any more ──► STOPPED

A stop does not rely on the cancellation alone: Python 3.11's
``asyncio.wait_for`` can lose a cancellation that arrives as its timeout
fires (turned into the ``TimeoutError`` a step expects and handles), and a
``while True`` around such a step then ran for ever and its owner's stop
with it (a worker that ignored SIGTERM; a test that hung). So the loop looks
at its STOPPING flag before every step, and :meth:`Loops.stop` cancels
again every 5 s until the task has ended, saying so
(``background_loop_stop_slow``) if one cancellation was not enough.

What a failing step concerns is the step's to say: the herder's task
checks fail the task they were checking (FAILED, with the trace) before
the exception would reach here, so a loop fails only for what concerns no
task. A loop that has failed without a success for longer than
``unhealthy_after_s``, or whose asyncio task ended (it cannot, short of a
bug here), is a problem :meth:`Loops.problems` names, and the worker's
``GET /health`` answers 500 with it: the loop cannot go on, and an
operator (or systemd's watchdog) must know. Errors a step expects and
handles itself — the Kafka cluster away for a while — are not failures:
the step logs them as warnings and returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from connectd.logging import get_logger

__all__ = ["Loops"]

log = get_logger(__name__)

#: A loop failing without a success for this long makes the worker unhealthy.
UNHEALTHY_AFTER_S = 30.0
_BACKOFF_MAX_S = 30.0
_FIRST_BACKOFF_S = 0.5
_RECANCEL_S = 5.0  # a loop not ended this long after its cancellation is cancelled again (cleanups get this long)


@dataclass
class _Loop:
    name: str
    task: asyncio.Task[None] | None = None
    failures: int = 0
    failing_since: float | None = None  # monotonic time of the first failure since the last success
    last_error: str | None = None
    stopping: bool = False  # the owner stops it: no step begins any more


class Loops:
    """The background loops of one worker (one herder and the parts it owns).

    :param unhealthy_after_s: how long a loop may fail without a success before :meth:`problems` names it.
    """

    def __init__(self, unhealthy_after_s: float = UNHEALTHY_AFTER_S) -> None:
        self.unhealthy_after_s = unhealthy_after_s
        self._loops: dict[str, _Loop] = {}

    def run(self, name: str, step: Callable[[], Awaitable[object]], *, pause_s: float = 0.0) -> asyncio.Task[None]:
        """Start the loop *name*: ``await step()``, then *pause_s* seconds, for ever.

        :returns: its asyncio task; cancel it (:meth:`stop`) to end the loop.
        """
        loop = self._loops[name] = _Loop(name)
        loop.task = asyncio.get_running_loop().create_task(self._forever(loop, step, pause_s),
                                                           name=name)
        return loop.task

    async def stop(self, name: str) -> None:
        """End the loop *name* (cancelled, awaited) and forget it; nothing if there is none."""
        loop = self._loops.pop(name, None)
        if loop is None or loop.task is None:
            return
        loop.stopping = True
        cancels = 0
        while not loop.task.done():
            loop.task.cancel()
            cancels += 1
            if cancels == 2:
                log.warning("background_loop_stop_slow", loop=loop.name,
                            why="a cancellation was lost in a step; cancelled again")
            await asyncio.wait({loop.task}, timeout=_RECANCEL_S)
        with contextlib.suppress(BaseException):  # its outcome was its own to log; retrieved so asyncio does not
            loop.task.result()

    def problems(self) -> list[str]:
        """Why loops cannot go on, one sentence each; empty when every loop is sound."""
        now = time.monotonic()
        found = []
        for loop in self._loops.values():
            if loop.task is not None and loop.task.done():
                found.append(f"The background loop {loop.name} has ended; see the worker's log.")
            elif loop.failing_since is not None and now - loop.failing_since > self.unhealthy_after_s:
                # The error's type only: its message may quote a value (/health is unauthenticated).
                found.append(f"The background loop {loop.name} has failed {loop.failures} times in a row for "
                             f"{now - loop.failing_since:.0f} s (last with {loop.last_error}); see the worker's log.")
        return found

    async def _forever(self, loop: _Loop, step: Callable[[], Awaitable[object]], pause_s: float) -> None:
        while not loop.stopping:
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the loop must outlive any step; the trace is logged
                loop.failures += 1
                if loop.failing_since is None:
                    loop.failing_since = time.monotonic()
                loop.last_error = type(exc).__name__
                delay = min(max(pause_s, _FIRST_BACKOFF_S) * 2 ** (loop.failures - 1), _BACKOFF_MAX_S)
                log.error("background_loop_failed", loop=loop.name, attempt=loop.failures, retry_in_s=delay,
                          error=f"{type(exc).__name__}: {exc}", exc_info=exc)
                await asyncio.sleep(delay)
                continue
            if loop.failures:
                log.info("background_loop_recovered", loop=loop.name, failures=loop.failures)
                loop.failures, loop.failing_since, loop.last_error = 0, None, None
            await asyncio.sleep(pause_s)  # 0 too: a step that did not yield must not starve the event loop
