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
