"""The error handler: retries, tolerance, logging and dead-letter headers (pure logic)."""

from __future__ import annotations

import pytest

from connectd.errors import ConnectorError
from connectd.runtime.error_handling import (
    ErrorHandler,
    ErrorPolicy,
    Original,
    RecordFailure,
)

ORIGINAL = Original("orders", 2, 41, b"k", b"{bad", [("trace", b"1")])


class Flaky:
    def __init__(self, failures: int, retriable: bool = True) -> None:
        self.failures, self.retriable, self.calls = failures, retriable, 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectorError("temporarily down", retriable=self.retriable)
        return "done"


def test_success_passes_the_result_through():
    assert ErrorHandler(ErrorPolicy(), "c", 0).run("VALUE_CONVERTER", "X", lambda: 42, ORIGINAL) == (True, 42)


def test_failure_without_tolerance_names_stage_and_record():
    handler = ErrorHandler(ErrorPolicy(), "c", 0)
    with pytest.raises(RecordFailure) as info:
        handler.run("VALUE_CONVERTER", "JsonConverter", lambda: 1 / 0, ORIGINAL)
    assert str(info.value) == ("Tolerance exceeded in error handler: VALUE_CONVERTER (JsonConverter) failed on record "
                               "topic=orders partition=2 offset=41: ZeroDivisionError: division by zero")
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_retriable_errors_are_retried_with_doubling_waits_then_random_ones_below_the_cap():
    waits = []
    handler = ErrorHandler(ErrorPolicy(retry_timeout_ms=-1, retry_delay_max_ms=1000), "c", 0, sleep=waits.append,
                           jitter=lambda: 0.25)
    flaky = Flaky(4)
    assert handler.run("TASK_PUT", "T", flaky, ORIGINAL) == (True, "done")
    assert waits == [0.3, 0.6, 0.25, 0.25]
    assert handler.retries == 4


def test_no_retry_when_the_timeout_is_zero_or_the_error_is_not_retriable():
    waits = []
    with pytest.raises(RecordFailure):
        ErrorHandler(ErrorPolicy(), "c", 0, sleep=waits.append).run("TASK_PUT", "T", Flaky(1), ORIGINAL)
    with pytest.raises(RecordFailure):
        ErrorHandler(ErrorPolicy(retry_timeout_ms=-1), "c", 0, sleep=waits.append).run(
            "TASK_PUT", "T", Flaky(1, retriable=False), ORIGINAL)
    assert waits == []


def test_retries_stop_at_the_timeout_with_a_last_wait_up_to_it():
    now = [0]
    waits = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += round(seconds * 1e9)

    handler = ErrorHandler(ErrorPolicy(retry_timeout_ms=1000), "c", 0, sleep=sleep, clock=lambda: now[0])
    flaky = Flaky(100)
    with pytest.raises(RecordFailure):
        handler.run("TASK_PUT", "T", flaky, ORIGINAL)
    assert waits == [0.3, 0.6, 0.1] and flaky.calls == 4  # the last wait ends at the timeout; one more try


def test_tolerated_failures_go_to_the_dead_letter_topic_with_context_headers():
    sent = []
    policy = ErrorPolicy(tolerate_all=True, dlq_topic="dlq", dlq_context_headers=True)
    handler = ErrorHandler(policy, "orders-sink", 3, send_to_dlq=lambda *args: sent.append(args))
    assert handler.run("VALUE_CONVERTER", "JsonConverter", lambda: 1 / 0, ORIGINAL) == (False, None)
    (topic, key, value, headers, _, _) = sent[0]
    assert (topic, key, value) == ("dlq", b"k", b"{bad")
    named = dict(headers)
    assert headers[0] == ("trace", b"1")  # the record's own headers come first
    assert named["__connect.errors.topic"] == b"orders"
    assert named["__connect.errors.partition"] == b"2"
    assert named["__connect.errors.offset"] == b"41"
    assert named["__connect.errors.connector.name"] == b"orders-sink"
    assert named["__connect.errors.task.id"] == b"3"
    assert named["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert named["__connect.errors.class.name"] == b"JsonConverter"
    assert named["__connect.errors.exception.class.name"] == b"builtins.ZeroDivisionError"
    assert named["__connect.errors.exception.message"] == b"division by zero"
    assert b"Traceback" in named["__connect.errors.exception.stacktrace"]
    assert (handler.failures, handler.skipped, handler.dlq_produced) == (1, 1, 1)


def test_context_headers_hide_resolved_secrets():
    from connectd import secrets

    secrets.register("s3cr3t-value")
    try:
        sent = []
        policy = ErrorPolicy(tolerate_all=True, dlq_topic="dlq", dlq_context_headers=True)
        handler = ErrorHandler(policy, "c", 0, send_to_dlq=lambda *args: sent.append(args))

        def fails() -> None:
            raise ValueError("cannot use pattern s3cr3t-value")

        handler.run("TRANSFORMATION", "T", fails, ORIGINAL)
    finally:
        secrets.forget_all()
    named = dict(sent[0][3])
    assert named["__connect.errors.exception.message"] == b"cannot use pattern [hidden]"
    assert b"s3cr3t" not in named["__connect.errors.exception.stacktrace"]
    assert b"[hidden]" in named["__connect.errors.exception.stacktrace"]


def test_without_context_headers_only_the_records_own_headers_are_sent():
    sent = []
    handler = ErrorHandler(ErrorPolicy(tolerate_all=True, dlq_topic="dlq"), "c", 0,
                           send_to_dlq=lambda *args: sent.append(args))
    handler.run("KEY_CONVERTER", "X", lambda: 1 / 0, ORIGINAL)
    assert sent[0][3] == [("trace", b"1")]


def test_errors_log_enable_logs_with_or_without_the_record(caplog):
    import logging

    for include in (False, True):
        caplog.clear()
        handler = ErrorHandler(ErrorPolicy(tolerate_all=True, log_enable=True, log_include_messages=include), "c", 0)
        with caplog.at_level(logging.ERROR):
            handler.run("VALUE_CONVERTER", "X", lambda: 1 / 0, ORIGINAL)
        assert "record_failed" in caplog.text
        assert ("offset=41" in caplog.text) is include


def test_policy_from_connector_config():
    policy = ErrorPolicy.from_config({
        "errors.tolerance": "all", "errors.retry.timeout": "-1", "errors.log.enable": "true",
        "errors.deadletterqueue.topic.name": " dlq ", "errors.deadletterqueue.context.headers.enable": "true",
    })
    assert policy == ErrorPolicy(tolerate_all=True, retry_timeout_ms=-1, log_enable=True, dlq_topic="dlq",
                                 dlq_context_headers=True)


def test_an_errant_record_is_sent_with_its_context_and_its_future_completes_on_delivery():
    sent = []
    policy = ErrorPolicy(tolerate_all=True, dlq_topic="dlq", dlq_context_headers=True)
    handler = ErrorHandler(policy, "c", 3, send_to_dlq=lambda *record: sent.append(record))
    future = handler.report_errant("MySinkTask", ValueError("no room"), ORIGINAL)
    ((topic, key, value, headers, delivered, _),) = sent
    assert (topic, key, value) == ("dlq", b"k", b"{bad") and delivered is future and not future.done()
    context = dict(headers)
    assert context["__connect.errors.stage"] == b"TASK_PUT" and context["__connect.errors.class.name"] == b"MySinkTask"
    assert context["__connect.errors.exception.message"] == b"no room" and context["trace"] == b"1"
    delivered.set_result(None)  # what the dead-letter producer does once Kafka acknowledged it
    assert future.result(timeout=0) is None
    assert (handler.failures, handler.skipped, handler.dlq_produced) == (1, 1, 1)


def test_an_errant_record_without_a_dead_letter_topic_is_logged_and_done(caplog):
    handler = ErrorHandler(ErrorPolicy(tolerate_all=True, log_enable=True), "c", 0)
    future = handler.report_errant("MySinkTask", ValueError("no room"), ORIGINAL)
    assert future.done() and future.result() is None
    assert "record_failed" in caplog.text


def test_an_errant_record_without_tolerance_is_reported_then_fails_the_task():
    sent = []
    handler = ErrorHandler(ErrorPolicy(dlq_topic="dlq"), "c", 0, send_to_dlq=lambda *record: sent.append(record))
    with pytest.raises(RecordFailure, match="Tolerance exceeded in error handler: TASK_PUT \\(MySinkTask\\) reported "
                                            "record topic=orders partition=2 offset=41 as errant"):
        handler.report_errant("MySinkTask", ValueError("no room"), ORIGINAL)
    assert len(sent) == 1  # reported first, as in Kafka Connect
