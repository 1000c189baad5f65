"""Kafka Connect's own error-handling tests, ported: retries and their waits, which stages
tolerate what, the error log's text, the dead-letter record and its ``__connect.errors.*``
headers, errant records, and a dead-letter topic that cannot be written.

From ``connect/runtime/src/test/java/org/apache/kafka/connect/runtime/errors/``
(``RetryWithToleranceOperatorTest``, ``ErrorReporterTest``,
``WorkerErrantRecordReporterTest``) and ``ErrorHandlingTaskTest``; pure logic, no broker.
"""

from __future__ import annotations

import logging

import pytest

from connectd.connector import SinkTask, TopicPartition
from connectd.data.converters import StringConverter
from connectd.data.json_converter import JsonConverter
from connectd.errors import ConnectException, ConnectorError, RetriableException
from connectd.runtime.dead_letters import DeadLetterQueue
from connectd.runtime.error_handling import ErrorHandler, ErrorPolicy, Original, RecordFailure, class_name
from connectd.runtime.sink.task import SinkTaskRunner

CONSUMED = Original("source-topic", 7, 10, b"source-key", b"source-value", timestamp=1_700_000_000_123,
                    timestamp_type=1)


class FakeTime:
    """Kafka's MockTime: sleeping moves the clock (nanoseconds) and records the wait (ms)."""

    def __init__(self) -> None:
        self.now = 0
        self.waits_ms: list[float] = []

    def clock(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits_ms.append(round(seconds * 1000, 6))
        self.now += round(seconds * 1e9)


class Failing:
    """An operation raising *error* its first *times* calls, then returning "Success"."""

    def __init__(self, error: Exception, times: int = 1_000_000) -> None:
        self.error, self.times, self.calls = error, times, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return "Success"


def handler(tolerate_all: bool = True, retry_timeout_ms: int = 0, retry_delay_max_ms: int = 60000,
            time: FakeTime | None = None, sent: list | None = None, **policy) -> ErrorHandler:
    fake = time or FakeTime()
    send = None if sent is None else (lambda *record: sent.append(record))
    return ErrorHandler(ErrorPolicy(tolerate_all=tolerate_all, retry_timeout_ms=retry_timeout_ms,
                                    retry_delay_max_ms=retry_delay_max_ms, **policy),
                        "job", 0, send_to_dlq=send, sleep=fake.sleep, clock=fake.clock)


# --- RetryWithToleranceOperatorTest -------------------------------------------------------------


@pytest.mark.parametrize("stage", ["TRANSFORMATION", "HEADER_CONVERTER", "VALUE_CONVERTER", "KEY_CONVERTER"])
def test_any_exception_in_a_converter_or_transform_is_tolerated(stage):
    assert handler().run(stage, "X", Failing(Exception("x")), CONSUMED) == (False, None)


@pytest.mark.parametrize("stage", ["TASK_PUT", "TASK_POLL"])
def test_a_retriable_exception_in_put_or_poll_is_tolerated_once_its_retries_ran_out(stage):
    assert handler().run(stage, "X", Failing(RetriableException("Test")), CONSUMED) == (False, None)


@pytest.mark.parametrize("stage", ["TASK_PUT", "TASK_POLL", "KAFKA_CONSUME", "KAFKA_PRODUCE"])
def test_any_other_exception_in_the_other_stages_fails_the_task_even_when_tolerating_all(stage):
    errors = handler()
    with pytest.raises(RecordFailure, match=f"^Unhandled exception in error handler: {stage} "):
        errors.run(stage, "X", Failing(Exception("x")), CONSUMED)
    assert errors.skipped == 0


@pytest.mark.parametrize(("timeout_ms", "failures", "waits", "succeeds"), [
    (6000, 1, [300], True),                                                           # ...RetriableErrorOnce
    (6000, 3, [300, 600, 1200], True),                                                # ...RetriableErrorThrice
    (-1, 8, [300, 600, 1200, 2400, 4800, 9600, 19200, 38400], True),                  # ...WithInfiniteRetries
    (6000, 6, [300, 600, 1200, 2400, 1500], False),                                   # ...WithMaxRetriesExceeded
])
def test_retriable_errors_wait_300ms_doubling_and_never_past_the_timeout(timeout_ms, failures, waits, succeeds):
    time = FakeTime()
    errors = handler(retry_timeout_ms=timeout_ms, time=time)
    operation = Failing(RetriableException("Test"), failures)
    assert errors.run("VALUE_CONVERTER", "X", operation, CONSUMED) == ((True, "Success") if succeeds else (False, None))
    assert time.waits_ms == waits
    assert operation.calls == failures + 1 if succeeds else failures  # after the last wait, one more try
    assert errors.retries == len(waits)


def test_a_non_retriable_error_is_not_retried():
    time = FakeTime()
    operation = Failing(Exception("Test"))
    assert handler(retry_timeout_ms=6000, time=time).run("VALUE_CONVERTER", "X", operation, CONSUMED) == (False, None)
    assert operation.calls == 1 and time.waits_ms == []


def test_only_a_retriable_connector_error_is_retriable():
    class LibraryError(Exception):  # confluent-kafka's KafkaError has a retriable() *method*
        def retriable(self) -> bool:
            return False

    time = FakeTime()
    for error in (LibraryError("x"), ConnectorError("x"), ConnectException("x")):
        operation = Failing(error)
        handler(retry_timeout_ms=6000, time=time).run("VALUE_CONVERTER", "X", operation, CONSUMED)
        assert operation.calls == 1
    operation = Failing(ConnectorError("x", retriable=True), 1)
    assert handler(retry_timeout_ms=6000, time=time).run("VALUE_CONVERTER", "X", operation, CONSUMED)[0]
    assert time.waits_ms == [300]


def test_backoff_limit():
    time = FakeTime()
    errors = handler(retry_timeout_ms=5, retry_delay_max_ms=5000, time=time)
    deadline = 5000 * 1_000_000
    waits = []
    for attempt in range(1, 6):
        waits.append(errors._backoff(attempt, deadline) / 1e6)
        time.sleep(waits[-1] / 1000)
    time.now += 1_000_000  # a little late: the deadline has passed; no negative wait
    waits.append(errors._backoff(6, deadline) / 1e6)
    assert waits == [300, 600, 1200, 2400, 500, 0]


def test_waits_past_the_cap_are_random_below_it():
    time = FakeTime()
    operation = Failing(RetriableException("Test"), 40)
    handler(retry_timeout_ms=-1, retry_delay_max_ms=1000, time=time).run("KEY_CONVERTER", "X", operation, CONSUMED)
    assert time.waits_ms[:2] == [300, 600]
    jittered = time.waits_ms[2:]
    assert all(0 <= wait < 1000 for wait in jittered) and len(set(jittered)) > 1


def test_a_cap_below_300ms_caps_the_first_wait_too():
    time = FakeTime()
    handler(retry_timeout_ms=-1, retry_delay_max_ms=100, time=time).run(
        "KEY_CONVERTER", "X", Failing(RetriableException("Test"), 3), CONSUMED)
    assert len(time.waits_ms) == 3 and all(wait < 100 for wait in time.waits_ms)


def test_retriable_errors_whose_retries_ran_out_fail_the_task_without_tolerance():
    # Kafka Connect before KAFKA-18073 (Dec 2024) dropped such a record silently; after it, and here, the task fails.
    with pytest.raises(RecordFailure, match="^Tolerance exceeded in error handler: VALUE_CONVERTER"):
        handler(tolerate_all=False).run("VALUE_CONVERTER", "X", Failing(RetriableException("Test")), CONSUMED)


def test_default_and_set_configs():
    assert ErrorPolicy.from_config({}) == ErrorPolicy(tolerate_all=False, retry_timeout_ms=0, retry_delay_max_ms=60000)
    assert ErrorPolicy.from_config({"errors.retry.timeout": "100"}).retry_timeout_ms == 100
    assert ErrorPolicy.from_config({"errors.retry.delay.max.ms": "100"}).retry_delay_max_ms == 100
    assert ErrorPolicy.from_config({"errors.tolerance": "none"}).tolerate_all is False


def test_tolerance_limit_counts():
    errors = handler()
    for _ in range(2):
        errors.run("TRANSFORMATION", "X", Failing(Exception("x")), CONSUMED)
    assert (errors.failures, errors.skipped) == (2, 2)
    strict = handler(tolerate_all=False)
    with pytest.raises(RecordFailure):
        strict.run("TRANSFORMATION", "X", Failing(Exception("x")), CONSUMED)
    assert (strict.failures, strict.skipped) == (1, 0)


# --- ErrorReporterTest: the dead-letter queue -----------------------------------------------------


def test_no_dead_letter_topic_sends_nothing():
    sent = []
    handler(sent=sent).run("KEY_CONVERTER", "X", Failing(Exception("x")), CONSUMED)
    assert sent == []


def test_each_report_sends_one_dead_letter_record():
    sent = []
    errors = handler(sent=sent, dlq_topic="dlq")
    errors.run("KEY_CONVERTER", "X", Failing(Exception("x")), CONSUMED)
    errors.run("KEY_CONVERTER", "X", Failing(Exception("x")), CONSUMED)
    assert len(sent) == 2 and errors.dlq_produced == 2


def test_the_dead_letter_record_is_the_consumed_one_with_its_timestamp():
    sent = []
    handler(sent=sent, dlq_topic="dlq").run("VALUE_CONVERTER", "X", Failing(Exception("x")), CONSUMED)
    ((topic, key, value, headers, delivered, timestamp),) = sent
    assert (topic, key, value, headers, delivered) == ("dlq", b"source-key", b"source-value", [], None)
    assert timestamp == 1_700_000_000_123


def test_without_tolerance_the_record_is_still_reported_before_the_task_fails(caplog):
    sent = []
    errors = handler(tolerate_all=False, sent=sent, dlq_topic="dlq", log_enable=True)
    with caplog.at_level(logging.ERROR), pytest.raises(RecordFailure, match="^Tolerance exceeded in error handler"):
        errors.run("VALUE_CONVERTER", "X", Failing(Exception("x")), CONSUMED)
    assert len(sent) == 1 and errors.logged == 1


def context_headers(error: BaseException, original: Original = CONSUMED) -> list[tuple[str, bytes | None]]:
    sent = []
    handler(sent=sent, dlq_topic="dlq", dlq_context_headers=True).run(
        "TRANSFORMATION", ConnectException, Failing(error), original)
    return sent[0][3]


def test_dlq_context_headers():
    headers = context_headers(ConnectException("Test Exception"))
    assert [name for name, _ in headers] == [f"__connect.errors.{name}" for name in (
        "topic", "partition", "offset", "connector.name", "task.id", "stage", "class.name",
        "exception.class.name", "exception.message", "exception.stacktrace")]
    named = dict(headers)
    assert named["__connect.errors.topic"] == b"source-topic"
    assert named["__connect.errors.partition"] == b"7"
    assert named["__connect.errors.offset"] == b"10"
    assert named["__connect.errors.connector.name"] == b"job"
    assert named["__connect.errors.task.id"] == b"0"
    assert named["__connect.errors.stage"] == b"TRANSFORMATION"
    assert named["__connect.errors.class.name"] == b"connectd.errors.ConnectException"  # a class: its dotted path
    assert named["__connect.errors.exception.class.name"] == b"connectd.errors.ConnectException"
    assert named["__connect.errors.exception.message"] == b"Test Exception"
    # Python's traceback where Kafka Connect has Java's: the exception's line comes last, not first.
    trace = named["__connect.errors.exception.stacktrace"].decode()
    assert trace.startswith("Traceback (most recent call last):\n")
    assert trace.endswith("connectd.errors.ConnectException: Test Exception\n")


def test_dlq_header_on_an_exception_without_a_message_is_null():
    named = dict(context_headers(ValueError()))
    assert "__connect.errors.exception.message" in named and named["__connect.errors.exception.message"] is None
    assert named["__connect.errors.exception.class.name"] == b"builtins.ValueError"
    assert named["__connect.errors.exception.stacktrace"].decode().endswith("ValueError\n")
    assert dict(context_headers(ValueError("")))["__connect.errors.exception.message"] == b""


def test_dlq_headers_are_appended_to_the_records_own():
    original = Original("source-topic", 7, 10, b"k", b"v", [("__connect.errors.topic", b"dummy")])
    headers = context_headers(ConnectException("Test Exception"), original)
    assert [value for name, value in headers if name == "__connect.errors.topic"] == [b"dummy", b"source-topic"]


def test_the_stacktrace_shows_the_cause_chain():
    def fails():
        try:
            raise KeyError("inner")
        except KeyError as exc:
            raise ConnectException("outer") from exc

    sent = []
    handler(sent=sent, dlq_topic="dlq", dlq_context_headers=True).run("TRANSFORMATION", "X", fails, CONSUMED)
    trace = dict(sent[0][3])["__connect.errors.exception.stacktrace"].decode()
    assert trace.index("KeyError: 'inner'") < trace.index("direct cause") < trace.index("ConnectException: outer")


# --- ErrorReporterTest: the error log ---------------------------------------------------------------


def logged(caplog, include: bool, original: Original = CONSUMED, **policy) -> list[dict]:
    errors = handler(log_enable=True, log_include_messages=include, **policy)
    with caplog.at_level(logging.ERROR, logger="connectd.runtime.error_handling"):
        errors.run("KEY_CONVERTER", JsonConverter, Failing(ValueError("bad key")), original)
    return [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("event") == "record_failed"]


def test_log_on_disabled_log_reporter(caplog):
    errors = handler()
    with caplog.at_level(logging.ERROR):
        errors.run("KEY_CONVERTER", "X", Failing(ValueError("x")), CONSUMED)
    assert errors.logged == 0 and "record_failed" not in caplog.text


def test_log_message_with_no_records(caplog):
    (line,) = logged(caplog, include=False)
    assert line["message"] == ("Error encountered in task job-0. Executing stage 'KEY_CONVERTER' with class "
                               "'connectd.data.json_converter.JsonConverter'.")
    assert isinstance(line["exc_info"], ValueError)  # with its stack trace, as Kafka Connect logs it
    assert "topic" not in line and "offset" not in line


def test_log_message_with_sink_records(caplog):
    (line,) = logged(caplog, include=True, original=Original("test-topic", 5, 100, b"ab", b"x"))
    assert line["message"] == ("Error encountered in task job-0. Executing stage 'KEY_CONVERTER' with class "
                               "'connectd.data.json_converter.JsonConverter', where consumed record is "
                               "{topic='test-topic', partition=5, offset=100}.")
    assert (line["topic"], line["partition"], line["offset"]) == ("test-topic", 5, 100)


def test_log_message_with_a_timestamp(caplog):
    (line,) = logged(caplog, include=True)
    assert line["message"].endswith("where consumed record is {topic='source-topic', partition=7, offset=10, "
                                    "timestamp=1700000000123, timestampType=CreateTime}.")


def test_the_log_never_shows_the_records_key_or_value(caplog):
    logged(caplog, include=True)
    assert "source-value" not in caplog.text and "source-key" not in caplog.text


def test_source_records_are_described_by_where_they_came_from(caplog):
    source = Original("orders", None, value=b"secret row", source_partition='{"table":"t"}', source_offset='{"id":4}')
    (line,) = logged(caplog, include=True, original=source)
    assert line["message"].endswith("where source record is = {topic='orders', kafkaPartition=None, "
                                    "sourcePartition={\"table\":\"t\"}, sourceOffset={\"id\":4}}.")
    assert "secret row" not in caplog.text


def test_class_names_are_python_dotted_paths():
    assert class_name(JsonConverter) == "connectd.data.json_converter.JsonConverter"
    assert class_name("AsGiven") == "AsGiven"


# --- WorkerErrantRecordReporterTest ---------------------------------------------------------------


@pytest.mark.parametrize("tolerated", [True, False])
def test_report_errant_record(tolerated):
    sent = []
    errors = handler(tolerate_all=tolerated, sent=sent, dlq_topic="dlq")
    if tolerated:
        assert not errors.report_errant("T", Exception("x"), CONSUMED).done()
    else:
        with pytest.raises(RecordFailure, match="^Tolerance exceeded in error handler"):
            errors.report_errant("T", Exception("x"), CONSUMED)
    assert len(sent) == 1  # reported either way


def test_check_errant_raises_the_swallowed_failure():
    errors = handler(tolerate_all=False)
    try:
        errors.report_errant("T", Exception("x"), CONSUMED)
    except RecordFailure:
        pass  # a task swallowing it in put()
    with pytest.raises(RecordFailure, match="^Tolerance exceeded in error handler"):
        errors.check_errant()
    handler().check_errant()  # nothing reported: nothing raised


# --- a dead-letter topic that cannot be written ----------------------------------------------------


def unreachable_dlq() -> DeadLetterQueue:
    return DeadLetterQueue({"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 300,
                            "socket.connection.setup.timeout.ms": 1000}, "dlq")


def test_undelivered_dead_letters_fail_the_flush_and_the_errant_future(caplog):
    dlq = unreachable_dlq()
    errors = ErrorHandler(ErrorPolicy(tolerate_all=True, dlq_topic="dlq"), "job", 0, send_to_dlq=dlq.send)
    future = errors.report_errant("T", Exception("x"), CONSUMED)
    with caplog.at_level(logging.ERROR), pytest.raises(ConnectorError, match="dead-letter records not written to dlq"):
        dlq.flush(10)
    (line,) = [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("event") == "dlq_produce_failed"]
    assert line["message"] == "Could not produce message to dead letter queue. topic=dlq"  # Kafka Connect's line
    with pytest.raises(ConnectorError, match="not delivered to dlq"):
        future.result(timeout=0)
    assert dlq.failed == 1


class Recording(SinkTask):
    def start(self, config):
        self.put_calls = []

    def put(self, records):
        self.put_calls.append(list(records))

    def stop(self):
        pass


def test_a_sink_batch_whose_dead_letters_are_not_written_commits_nothing():
    dlq = unreachable_dlq()
    converters = {"key": StringConverter(), "value": JsonConverter(), "header": StringConverter()}
    for name, converter in converters.items():
        converter.configure({"schemas.enable": "false"} if name == "value" else {}, is_key=name == "key")
    committed = []

    class NoTransforms:
        def apply(self, record):
            return record

        def apply_batch(self, records):
            return records

    errors = ErrorHandler(ErrorPolicy(tolerate_all=True, dlq_topic="dlq"), "job", 0, send_to_dlq=dlq.send)
    runner = SinkTaskRunner(Recording(), {}, [TopicPartition("a", 0)], converters, NoTransforms(), committed.append,
                            errors, dlq)
    try:
        rows = [("a", 0, 0, None, 0, None, b'{"n": 1}', None), ("a", 0, 1, None, 0, None, b"{bad", None)]
        with pytest.raises(ConnectorError, match="dead-letter records not written"):
            runner.process(rows)
        assert committed == []  # Kafka Connect commits past it (converter failures); connectd does not
        assert [r.value for r in runner.task.put_calls[0]] == [{"n": 1}]
    finally:
        runner.close()


# --- ErrorHandlingTaskTest: counts of a task that tolerates all --------------------------------------


def test_counts_of_a_faulty_transform_retried_within_the_timeout():
    time = FakeTime()
    errors = handler(retry_timeout_ms=30000, time=time)
    flaky = Failing(RetriableException("Bad invocations"), 2)
    assert errors.run("TRANSFORMATION", "FaultyPassthrough", flaky, CONSUMED) == (True, "Success")
    assert (errors.failures, errors.skipped, errors.retries) == (0, 0, 2)
    assert errors.run("TRANSFORMATION", "FaultyPassthrough", Failing(ValueError("bad")), CONSUMED) == (False, None)
    assert (errors.failures, errors.skipped, errors.retries) == (1, 1, 2)

