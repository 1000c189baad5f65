"""Fixtures shared by the whole suite.

``broker`` starts one embedded tansu broker (see :mod:`connectd.broker`) on a
free loopback port the first time a test asks for it, and stops it by PID at
the end of the session. Tests share it, so each one works in topics of its
own: ask for ``topic_name``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from connectd.broker import EmbeddedBroker


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
