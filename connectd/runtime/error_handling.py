"""Error handling around each record: retries, tolerance, logging, dead-letter queue.

Kafka Connect's ``errors.*`` settings, per operation on a record (a stage)::

    run ──ok──► result
     └─error─► retriable (a ConnectorError with retriable=True) and errors.retry.timeout not spent?
                 ─yes─► wait 0.3 s, 0.6 s, … (past errors.retry.delay.max.ms: a random wait below it;
                        never past the timeout) ─► run
                 └─no─► logged (errors.log.enable) and sent to the dead-letter topic
                        (errors.deadletterqueue.topic.name, with __connect.errors.* headers), then:
                        errors.tolerance=none ─► the task fails ("Tolerance exceeded in error handler: …",
                                                 naming stage, topic, partition, offset)
                        errors.tolerance=all  ─► the record is skipped; the task goes on

As Kafka Connect's ``RetryWithToleranceOperator``, only converters and transforms
(``KEY_CONVERTER``, ``VALUE_CONVERTER``, ``HEADER_CONVERTER``, ``TRANSFORMATION``)
are tolerated whatever they raise; in the other stages only a retriable error
whose retries ran out is, anything else fails the task ("Unhandled exception in
error handler"). Unlike Kafka Connect before KAFKA-18073, a retriable error whose
retries ran out under ``errors.tolerance=none`` fails the task too.

Sink tasks send the record as it was consumed (key and value bytes, headers);
source tasks — a connectd extension, Kafka Connect has no dead-letter queue
for them — send what could be converted, else the value's text, with
``__connect.errors.source.partition`` / ``source.offset`` headers saying
where it came from.
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from connectd.config.connector import ErrorPolicy  # the errors.* keys, parsed; re-exported for the runtime
from connectd.errors import ConnectorError
from connectd.logging import get_logger
from connectd.secrets import redact

__all__ = ["STAGES", "ErrorHandler", "ErrorPolicy", "Original", "RecordFailure", "TaskCounts", "apply_stages",
           "class_name"]

log = get_logger(__name__)

STAGES = ("KEY_CONVERTER", "VALUE_CONVERTER", "HEADER_CONVERTER", "TRANSFORMATION", "TASK_PUT", "TASK_POLL",
          "KAFKA_PRODUCE", "KAFKA_CONSUME")
HEADER_PREFIX = "__connect.errors."
_FIRST_DELAY_MS = 300
#: Stages whose failures errors.tolerance=all skips, whatever was raised (Kafka Connect's TOLERABLE_EXCEPTIONS).
_TOLERABLE_STAGES = frozenset(("KEY_CONVERTER", "VALUE_CONVERTER", "HEADER_CONVERTER", "TRANSFORMATION"))
_TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}  # librdkafka's codes


def class_name(cls: type | str) -> str:
    """A class as the ``class.name`` header and the error log name it: its Python dotted path
    (Kafka Connect gives the Java class's full name); a string is taken as it is."""
    return cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}"


def _is_retriable(error: BaseException) -> bool:
    # Kafka Connect retries its RetriableException only; connectd's is a ConnectorError(retriable=True).
    # Not any object with a "retriable" attribute: confluent-kafka's KafkaError has a retriable() method.
    return isinstance(error, ConnectorError) and error.retriable is True


class RecordFailure(ConnectorError):
    """A record failed in a stage and errors are not tolerated; the task fails with this."""


@dataclass(frozen=True)
class Original:
    """Where a failed record came from, and its bytes as consumed (sinks) or produced (sources)."""

    topic: str | None
    partition: int | None = None
    offset: int | None = None
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    source_partition: str | None = None
    source_offset: str | None = None
    #: The consumed record's timestamp (ms) and librdkafka timestamp type (1 create, 2 log append time);
    #: the dead-letter record keeps the timestamp, as Kafka Connect's does.
    timestamp: int | None = None
    timestamp_type: int = 0

    def where(self) -> str:
        if self.offset is not None:
            return f"topic={self.topic} partition={self.partition} offset={self.offset}"
        if self.source_partition is not None:
            return f"topic={self.topic} source partition={self.source_partition} offset={self.source_offset}"
        return f"topic={self.topic}"

    def described(self) -> str:
        """The record as Kafka Connect's error log describes it with ``errors.log.include.messages``:
        where it is, never its key or value."""
        if self.offset is not None:
            text = f"consumed record is {{topic='{self.topic}', partition={self.partition}, offset={self.offset}"
            if self.timestamp is not None and self.timestamp_type in _TIMESTAMP_TYPES:
                text += f", timestamp={self.timestamp}, timestampType={_TIMESTAMP_TYPES[self.timestamp_type]}"
            return text + "}"
        return (f"source record is = {{topic='{self.topic}', kafkaPartition={self.partition}, "
                f"sourcePartition={self.source_partition}, sourceOffset={self.source_offset}}}")


class ErrorHandler:
    """Runs one stage of one record under a connector's error policy.

    :param send_to_dlq: ``send(topic, key, value, headers, delivered, timestamp)`` (*delivered*: a
        future completed on acknowledgement, for errant records, else ``None``); flushed by the
        caller before offsets move past the failed record.
    :param sleep: waits between retries (seconds); may raise to give up (a task being stopped).
    :param clock: a monotonic clock in nanoseconds.
    :param jitter: a random number in [0, 1), for waits past ``errors.retry.delay.max.ms``.
    """

    def __init__(
        self,
        policy: ErrorPolicy,
        connector: str,
        task_id: int,
        send_to_dlq: Callable[..., None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], int] = time.monotonic_ns,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.policy = policy
        self.connector = connector
        self.task_id = task_id
        self._send = send_to_dlq
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter
        self.failures = 0
        self.skipped = 0
        self.retries = 0
        self.logged = 0
        self.dlq_produced = 0
        #: The first errant record reported while errors are not tolerated (see :meth:`check_errant`).
        self.errant_failure: RecordFailure | None = None

    def run(self, stage: str, executing: str | type, operation: Callable[[], Any],
            original: Original | Callable[[], Original]) -> tuple[bool, Any]:
        """``(True, result)``, or ``(False, None)`` when the record failed and is tolerated.

        :param executing: the class doing the work (or its name), for the log and the headers.
        :param original: the record's origin, or a function making it (called only on failure,
            so the common path pays nothing for it).
        :raises RecordFailure: when the record failed and errors are not tolerated.
        """
        try:
            return True, operation()
        except Exception as exc:
            return self._retry(stage, executing, operation, original, exc)

    def _retry(self, stage: str, executing: str | type, operation: Callable[[], Any],
               original: Original | Callable[[], Original], error: Exception) -> tuple[bool, Any]:
        timeout_ms = self.policy.retry_timeout_ms
        # From the first failure (Kafka Connect: from the first attempt), so success reads no clock.
        deadline = None if timeout_ms < 0 else self._clock() + timeout_ms * 1_000_000
        attempt = 1
        while _is_retriable(error) and (deadline is None or self._clock() < deadline):
            self._sleep(self._backoff(attempt, deadline) / 1e9)
            self.retries += 1
            attempt += 1
            try:
                return True, operation()
            except Exception as exc:
                error = exc
        self._failed(stage, executing, error, original() if callable(original) else original)
        return False, None

    def _backoff(self, attempt: int, deadline: int | None) -> int:
        """Nanoseconds to wait after *attempt* failed: 300 ms doubling; past the cap a random wait
        below it (so tasks failing together do not retry together); never past *deadline*."""
        delay_ms: float = _FIRST_DELAY_MS << min(attempt - 1, 40)
        cap_ms = self.policy.retry_delay_max_ms
        if delay_ms > cap_ms:
            delay_ms = self._jitter() * cap_ms
        delay = int(delay_ms * 1_000_000)
        if deadline is not None:
            delay = max(0, min(delay, deadline - self._clock()))
        return delay

    def _failed(self, stage: str, executing: str | type, exc: Exception, original: Original) -> None:
        self.failures += 1
        # Reported first, tolerated or not, as Kafka Connect reports before it fails the task.
        self._report(stage, executing, exc, original)
        detail = (f"{stage} ({class_name(executing)}) failed on record {original.where()}: "
                  f"{type(exc).__name__}: {exc}")
        if stage not in _TOLERABLE_STAGES and not _is_retriable(exc):
            raise RecordFailure(f"Unhandled exception in error handler: {detail}") from exc
        if not self.policy.tolerate_all:
            raise RecordFailure(f"Tolerance exceeded in error handler: {detail}") from exc
        self.skipped += 1

    def execute_failed(self, stage: str, executing: str | type, exc: BaseException, original: Original) -> None:
        """A record that failed outside :meth:`run`: counted, logged and dead-lettered as the policy
        says, as Kafka Connect's ``executeFailed`` (a source record Kafka did not take, KIP-779);
        like Kafka's, it counts the failure but not a skipped record.

        :raises RecordFailure: after reporting, when errors are not tolerated.
        """
        self.failures += 1
        self._report(stage, executing, exc, original)
        if not self.policy.tolerate_all:
            raise RecordFailure(f"Tolerance exceeded in error handler: {stage} ({class_name(executing)}) failed on "
                                f"record {original.where()}: {type(exc).__name__}: {exc}") from exc

    def log_message(self, stage: str, executing: str | type, original: Original) -> str:
        """Kafka Connect's error log line for a failed record (its ``LogReporter``)."""
        text = (f"Error encountered in task {self.connector}-{self.task_id}. "
                f"Executing stage '{stage}' with class '{class_name(executing)}'")
        if self.policy.log_include_messages:
            text += ", where " + original.described()
        return text + "."

    def _report(self, stage: str, executing: str | type, exc: BaseException, original: Original,
                delivered: Future[None] | None = None) -> None:
        """Log the failed record and send it to the dead-letter queue, as the policy says;
        *delivered* completes once Kafka acknowledged it (at once when nothing is sent)."""
        if self.policy.log_enable:
            details: dict[str, Any] = {}
            if self.policy.log_include_messages:
                details.update(topic=original.topic, partition=original.partition, offset=original.offset)
                if original.source_partition is not None:
                    details.update(source_partition=original.source_partition,
                                   source_offset=original.source_offset)
            # Kafka Connect's text for those who alert on it; never the record's key or value.
            log.error("record_failed", message=self.log_message(stage, executing, original),
                      connector=self.connector, task=self.task_id, stage=stage, class_name=class_name(executing),
                      error=f"{type(exc).__name__}: {exc}", exc_info=exc, **details)
            self.logged += 1
        if self.policy.dlq_topic and self._send is not None:
            headers = list(original.headers)
            if self.policy.dlq_context_headers:
                headers += self._context_headers(stage, executing, exc, original)
            self._send(self.policy.dlq_topic, original.key, original.value, headers, delivered, original.timestamp)
            self.dlq_produced += 1
        elif delivered is not None:
            delivered.set_result(None)

    def report_errant(self, executing: str | type, exc: BaseException, original: Original) -> Future[None]:
        """A sink task's errant record (KIP-610): logged and sent to the dead-letter queue as a
        failed ``put`` would be; the future completes once Kafka acknowledged it.

        :raises RecordFailure: after reporting, when errors are not tolerated (the task fails,
            as Kafka Connect's "Tolerance exceeded in error handler"); kept in
            :attr:`errant_failure` too, for :meth:`check_errant`.
        """
        self.failures += 1
        delivered: Future[None] = Future()
        self._report("TASK_PUT", executing, exc, original, delivered)
        if not self.policy.tolerate_all:
            failure = RecordFailure(f"Tolerance exceeded in error handler: TASK_PUT ({class_name(executing)}) "
                                    f"reported record {original.where()} as errant: {type(exc).__name__}: {exc}")
            failure.__cause__ = exc
            if self.errant_failure is None:
                self.errant_failure = failure
            raise failure
        self.skipped += 1
        return delivered

    def check_errant(self) -> None:
        """Raise the failure of an errant record reported while errors are not tolerated, for a
        task that caught it in ``put()`` (Kafka Connect's check after each ``put()``).

        :raises RecordFailure: the first such failure.
        """
        if self.errant_failure is not None:
            raise self.errant_failure

    def _context_headers(self, stage: str, executing: str | type, exc: BaseException, original: Original
                         ) -> list[tuple[str, bytes | None]]:
        values: dict[str, Any] = {
            "topic": original.topic,
            "partition": original.partition,
            "offset": original.offset,
            "source.partition": original.source_partition,
            "source.offset": original.source_offset,
            "connector.name": self.connector,
            "task.id": self.task_id,
            "stage": stage,
            "class.name": class_name(executing),
            "exception.class.name": class_name(type(exc)),
        }
        headers = [(HEADER_PREFIX + k, str(v).encode()) for k, v in values.items() if v is not None]
        # Kafka Connect's header is null for an exception without a message (Java's getMessage() null).
        # Resolved secrets hidden: a message may quote a config value (the record's data stays).
        text = str(exc)
        message = redact(text).encode() if text or exc.args else None
        headers.append((HEADER_PREFIX + "exception.message", message))
        # Python's traceback (most recent call last, causes first), where Kafka Connect has Java's.
        trace = redact("".join(traceback.format_exception(exc)))
        headers.append((HEADER_PREFIX + "exception.stacktrace", trace.encode()))
        return headers


class TaskCounts:
    """What a task did since the last look, for its metrics (:class:`connectd.metrics.TaskMetrics`),
    from running totals kept where the task runs (an executor, the planner process)."""

    def __init__(self) -> None:
        self._reported: dict[str, float] = {}

    def take(self, totals: dict[str, float], handlers: tuple[ErrorHandler | None, ...] = (),
             dead_letters: Any = None) -> dict[str, float]:
        """The totals that moved since the last call, by how much: *totals* and, of the task's
        error *handlers* (added up) and *dead_letters* queue, record ``failures``, records
        ``skipped``, ``retries``, errors ``logged``, dead-letter records sent (``dlq_requests``)
        and not delivered (``dlq_failures``)."""
        now = dict(totals)
        counted = [h for h in handlers if h is not None]
        if counted:
            now.update(failures=sum(h.failures for h in counted), skipped=sum(h.skipped for h in counted),
                       retries=sum(h.retries for h in counted), logged=sum(h.logged for h in counted),
                       dlq_requests=sum(h.dlq_produced for h in counted),
                       dlq_failures=dead_letters.failed if dead_letters is not None else 0)
        changed = {key: value - self._reported.get(key, 0) for key, value in now.items()}
        self._reported = now
        return {key: value for key, value in changed.items() if value}


def apply_stages(errors: ErrorHandler, stages: Iterable[Any], record: Any, original: Callable[[], Original]) -> Any:
    """*record* through a transformation chain's *stages* one by one, each under *errors* as stage
    ``TRANSFORMATION`` of its transform's class (as Kafka Connect's chain runs them, so a failure
    names the transform); ``None`` once a stage dropped it or its failure was tolerated.

    :param original: makes the record's origin (called only on failure).
    """
    run = errors.run
    for stage in stages:
        ok, record = run("TRANSFORMATION", type(stage.transformation), partial(_apply_stage, stage, record), original)
        if not ok or record is None:
            return None
    return record


def _apply_stage(stage: Any, record: Any) -> Any:
    try:
        return stage.apply(record)
    except Exception as exc:
        note = f"in transform {stage.alias!r} ({type(stage.transformation).__name__})"  # as the chain notes it
        if note not in getattr(exc, "__notes__", ()):  # once, though retried
            exc.add_note(note)
        raise
