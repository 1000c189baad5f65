"""Fixtures and helpers shared by the whole suite.

``broker`` starts one embedded tansu broker (see :mod:`connectd.broker`) on a
free loopback port the first time a test asks for it, and stops it by PID at
the end of the session. Tests share it, so each one works in topics of its
own: ask for ``topic_name``.

The helpers are fixtures that hand back a function, because test modules
cannot import this file (``--import-mode=importlib``):

- ``wait_until`` / ``wait_until_async``: poll a condition until it holds or a
  deadline passes, then fail saying what was awaited and the last value seen.
  The only place in the suite that sleeps to wait for something.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sized
from typing import Any, TypeVar

import pytest

from connectd.broker import EmbeddedBroker

T = TypeVar("T")

WAIT_INTERVAL_S = 0.1


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    """The session's broker; ``broker.bootstrap_servers`` is ``127.0.0.1:PORT``."""
    embedded = EmbeddedBroker(port=0, host="127.0.0.1")
    embedded.start()
    try:
        yield embedded
    finally:
        embedded.stop()


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name no other test uses, starting with the test's name for logs."""
    stem = "".join(c if c.isalnum() else "-" for c in request.node.name)[:40].strip("-")
    return f"test-{stem}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    """One SparkSession for every test that needs Spark (starting one takes seconds).

    Built from a worker config's ``spark_conf()``, as the worker builds its
    own: local master bound to 127.0.0.1, FAIR scheduler, no web UI.
    """
    from connectd.config.worker import WorkerConfig
    from connectd.runtime.spark import start_session

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    config = WorkerConfig(
        {
            "bootstrap.servers": "127.0.0.1:9",
            "key.converter": "x",
            "value.converter": "x",
            "offset.storage.file.filename": str(warehouse / "offsets"),
            "spark.master": "local[2]",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.warehouse.dir": str(warehouse),
        },
        "standalone",
        source="tests",
    )
    session = start_session(config)
    try:
        yield session
    finally:
        session.stop()


# --- waiting -------------------------------------------------------------------


def _shown(value: Any, limit: int = 500) -> str:
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f"{len(value)} items" if isinstance(value, Sized) and not isinstance(value, (str, bytes)) else \
        f"{len(text)} characters"
    return f"{text[:limit]}… ({size})"


def _timed_out(what: str, timeout: float, value: Any) -> AssertionError:
    return AssertionError(f"timed out after {timeout:g}s waiting for {what}; last value seen: {_shown(value)}")


def _wait_until(condition: Callable[[], T], what: str, *, until: Callable[[T], Any] | None = None,
                timeout: float = 60.0, interval: float = WAIT_INTERVAL_S) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if until(value) if until is not None else value:
            return value
        if time.monotonic() >= deadline:
            raise _timed_out(what, timeout, value)
        time.sleep(interval)


async def _wait_until_async(condition: Callable[[], T | Awaitable[T]], what: str, *,
                            until: Callable[[T], Any] | None = None, timeout: float = 60.0,
                            interval: float = WAIT_INTERVAL_S) -> T:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if until(value) if until is not None else value:
            return value
        if loop.time() >= deadline:
            raise _timed_out(what, timeout, value)
        await asyncio.sleep(interval)


@pytest.fixture(scope="session")
def wait_until() -> Callable[..., Any]:
    """``wait_until(condition, what, *, until=None, timeout=60.0, interval=0.1)``.

    Calls ``condition()`` every *interval* seconds until its value is true (or,
    with *until*, until ``until(value)`` is) and returns that value; after
    *timeout* seconds fails with an AssertionError naming *what* was awaited and
    the last value seen. Exceptions from *condition* are not swallowed.
    """
    return _wait_until


@pytest.fixture(scope="session")
def wait_until_async() -> Callable[..., Awaitable[Any]]:
    """``await wait_until_async(condition, what, *, until=None, timeout=60.0, interval=0.1)``.

    :func:`wait_until` for a scenario running on an event loop: it sleeps with
    ``asyncio.sleep``, and *condition* may be a coroutine function.
    """
    return _wait_until_async
