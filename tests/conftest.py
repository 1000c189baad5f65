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
- ``consume_records``: read a topic of the session broker from the beginning,
  N records or up to its end, with a deadline.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sized
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from connectd.broker import EmbeddedBroker

if TYPE_CHECKING:
    from confluent_kafka import Message

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


# --- reading topics ------------------------------------------------------------


def _consume_records(bootstrap_servers: str, topic: str, count: int | None = None, *, partitions: int | None = None,
                     timeout: float = 60.0, linger: float = 0.0) -> list[Message]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    deadline = time.monotonic() + timeout
    consumer = Consumer({
        "bootstrap.servers": bootstrap_servers,
        "group.id": f"test-reader-{uuid.uuid4().hex[:12]}",  # assign() only: the group is never joined
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 10,
        # The end of a partition is where a fetch response's high watermark says
        # it is; ListOffsets LATEST is wrong on tansu.
        "enable.partition.eof": True,
    })
    try:
        if partitions is None:
            metadata = _wait_until(lambda: consumer.list_topics(topic, timeout=10).topics[topic],
                                   f"topic {topic} to exist", until=lambda found: found.error is None,
                                   timeout=max(deadline - time.monotonic(), 0))
            partitions = len(metadata.partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        records: list[Message] = []
        at_end: set[int] = set()
        last_error = None

        def done() -> bool:
            return len(records) >= count if count is not None else len(at_end) == partitions

        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                if count is not None:
                    expected = f"expected {count}"
                else:
                    missing = sorted(set(range(partitions)) - at_end)
                    expected = f"expected all of them, but the end of partitions {missing} was not reached"
                error = f"; last error: {last_error}" if last_error is not None else ""
                raise AssertionError(f"topic {topic}: {len(records)} records arrived within {timeout:g}s, "
                                     f"{expected}{error}")
            for message in consumer.consume(10_000, timeout=min(left, 0.5)):
                error = message.error()
                if error is None:
                    records.append(message)
                    at_end.discard(message.partition())
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                elif error.fatal():
                    raise AssertionError(f"{topic}: reading failed: {error}")
                else:
                    last_error = error
        # Records past the goal (duplicates, stragglers) show up in what is returned.
        linger_end = time.monotonic() + linger
        while (left := linger_end - time.monotonic()) > 0:
            records += [m for m in consumer.consume(10_000, timeout=left) if m.error() is None]
        return records
    finally:
        consumer.close()


@pytest.fixture(scope="session")
def consume_records(broker: EmbeddedBroker) -> Callable[..., list[Message]]:
    """``consume_records(topic, count=None, *, partitions=None, timeout=60.0, linger=0.0)``.

    Reads *topic* of the session broker from the beginning of each of its
    partitions (the first *partitions*, or all of them) with a consumer that
    joins no group, and returns the confluent-kafka messages in the order
    they arrived (offset order within a partition). It reads until *count*
    records have arrived, or with no *count* until the end of every partition
    as of the reading; then *linger* seconds more. It fails after *timeout*
    seconds naming the topic, how many records arrived and how many were
    expected. It may return more than *count*: what else was there, or
    arrived while lingering.
    """
    return functools.partial(_consume_records, broker.bootstrap_servers)
