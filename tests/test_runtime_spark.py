"""Which Spark failures a task's query is restarted for at once (pure logic; the herder's handling
is in tests/integration/test_herder.py)."""

from __future__ import annotations

from connectd.runtime.spark.session import is_hiccup


def test_a_python_process_late_to_connect_back_is_a_hiccup_in_a_trace_or_an_exception_chain():
    assert is_hiccup("org.apache.spark.SparkException: Python worker failed to connect back.\n\tat ...")
    assert is_hiccup("java.net.SocketTimeoutException: Timed out while waiting for the Python worker to "
                     "connect back after 10000 ms")
    try:
        try:
            raise TimeoutError("Python worker failed to connect back.")
        except TimeoutError as cause:
            raise RuntimeError("Query terminated with exception") from cause
    except RuntimeError as wrapped:
        assert is_hiccup(wrapped)


def test_the_tasks_own_failures_are_not():
    assert not is_hiccup("connectd.errors.ConnectException: cannot read record 7")
    assert not is_hiccup(ValueError("Python worker exited unexpectedly (crashed)"))
    assert not is_hiccup("")
