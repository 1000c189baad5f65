"""The suite's shared helpers (tests/conftest.py) fail the way their callers rely on."""

from __future__ import annotations

import asyncio
import itertools

import pytest


def test_wait_until_returns_the_first_true_value(wait_until):
    counter = itertools.count()
    assert wait_until(lambda: next(counter) >= 3 and "done", "the counter to reach 3", interval=0) == "done"


def test_wait_until_with_until_returns_the_value_it_accepted(wait_until):
    counter = itertools.count()
    assert wait_until(lambda: next(counter), "the counter to reach 3", until=lambda n: n >= 3, interval=0) == 3


def test_wait_until_fails_naming_what_it_awaited_and_the_last_value(wait_until):
    with pytest.raises(AssertionError) as failure:
        wait_until(lambda: {"state": "PAUSED"}, "the task to run", until=lambda s: s["state"] == "RUNNING",
                   timeout=0.2, interval=0.05)
    assert str(failure.value) == "timed out after 0.2s waiting for the task to run; last value seen: {'state': 'PAUSED'}"


def test_a_long_last_value_is_cut_and_sized(wait_until):
    with pytest.raises(AssertionError, match=r"last value seen: \['line', .*… \(1000 items\)$"):
        wait_until(lambda: ["line"] * 1000, "1001 lines", until=lambda lines: len(lines) > 1000, timeout=0)


def test_wait_until_async_awaits_coroutine_conditions(wait_until_async):
    counter = itertools.count()

    async def probe() -> int:
        return next(counter)

    async def scenario() -> int:
        return await wait_until_async(probe, "the probe to answer 2", until=lambda n: n == 2, interval=0)

    assert asyncio.run(scenario()) == 2


def test_wait_until_async_fails_like_the_sync_form(wait_until_async):
    async def scenario() -> None:
        await wait_until_async(lambda: False, "nothing", timeout=0.1, interval=0.02)

    with pytest.raises(AssertionError, match=r"^timed out after 0.1s waiting for nothing; last value seen: False$"):
        asyncio.run(scenario())
