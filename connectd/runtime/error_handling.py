"""Error handling around each record: retries, tolerance, logging, dead-letter queue.

Kafka Connect's ``errors.*`` settings, per operation on a record (a stage)::

    run ──ok──► result
     └─error─► retriable and errors.retry.timeout not spent? ─yes─► wait (doubling, ≤ errors.retry.delay.max.ms) ─► run
                 └─no─► errors.tolerance=none ─► the task fails; the error names stage, topic, partition, offset
                        errors.tolerance=all  ─► logged (errors.log.enable), sent to the dead-letter topic
                                                  (errors.deadletterqueue.topic.name) with __connect.errors.*
                                                  headers, and skipped; the task goes on

Sink tasks send the record as it was consumed (key and value bytes, headers);
source tasks — a connectd extension, Kafka Connect has no dead-letter queue
for them — send what could be converted, else the value's text, with
``__connect.errors.source.partition`` / ``source.offset`` headers saying
where it came from.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from connectd.errors import ConnectorError
from connectd.logging import get_logger
from connectd.secrets import redact

__all__ = ["STAGES", "ErrorHandler", "ErrorPolicy", "Original", "RecordFailure", "TaskCounts"]

log = get_logger(__name__)

STAGES = ("KEY_CONVERTER", "VALUE_CONVERTER", "HEADER_CONVERTER", "TRANSFORMATION", "TASK_PUT", "TASK_POLL",
          "KAFKA_PRODUCE", "KAFKA_CONSUME")
HEADER_PREFIX = "__connect.errors."
_FIRST_DELAY_S = 0.3


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

    def where(self) -> str:
        if self.offset is not None:
            return f"topic={self.topic} partition={self.partition} offset={self.offset}"
        if self.source_partition is not None:
            return f"topic={self.topic} source partition={self.source_partition} offset={self.source_offset}"
        return f"topic={self.topic}"


@dataclass(frozen=True)
class ErrorPolicy:
    """A connector's ``errors.*`` settings (resolved values)."""

    tolerate_all: bool = False
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60000
    log_enable: bool = False
    log_include_messages: bool = False
    dlq_topic: str = ""
    dlq_context_headers: bool = False

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ErrorPolicy:
        def flag(key: str) -> bool:
            return str(config.get(key, "false")).strip().lower() == "true"

        return cls(
            tolerate_all=str(config.get("errors.tolerance", "none")).strip().lower() == "all",
            retry_timeout_ms=int(config.get("errors.retry.timeout", "0")),
            retry_delay_max_ms=int(config.get("errors.retry.delay.max.ms", "60000")),
            log_enable=flag("errors.log.enable"),
            log_include_messages=flag("errors.log.include.messages"),
            dlq_topic=str(config.get("errors.deadletterqueue.topic.name", "") or "").strip(),
            dlq_context_headers=flag("errors.deadletterqueue.context.headers.enable"),
        )


class ErrorHandler:
    """Runs one stage of one record under a connector's error policy.

    :param send_to_dlq: ``send(topic, key, value, headers[, delivered])`` (a future completed
        on acknowledgement, for errant records); flushed by the caller
        before offsets move past the failed record.
    """

    def __init__(
        self,
        policy: ErrorPolicy,
        connector: str,
        task_id: int,
        send_to_dlq: Callable[..., None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.policy = policy
        self.connector = connector
        self.task_id = task_id
        self._send = send_to_dlq
        self._sleep = sleep
        self.failures = 0
        self.skipped = 0
        self.retries = 0
        self.logged = 0
        self.dlq_produced = 0

    def run(self, stage: str, executing: str, operation: Callable[[], Any],
            original: Original | Callable[[], Original]) -> tuple[bool, Any]:
        """``(True, result)``, or ``(False, None)`` when the record failed and is tolerated.

        :param original: the record's origin, or a function making it (called only on failure,
            so the common path pays nothing for it).
        :raises RecordFailure: when the record failed and errors are not tolerated.
        """
        started = time.monotonic()
        delay = _FIRST_DELAY_S
        while True:
            try:
                return True, operation()
            except Exception as exc:
                if getattr(exc, "retriable", False) and self._may_retry(started, delay):
                    self.retries += 1
                    self._sleep(delay)
                    delay = min(delay * 2, self.policy.retry_delay_max_ms / 1000)
                    continue
                self._failed(stage, executing, exc, original() if callable(original) else original)
                return False, None

    def _may_retry(self, started: float, delay: float) -> bool:
        timeout = self.policy.retry_timeout_ms
        if timeout == 0:
            return False
        return timeout < 0 or (time.monotonic() - started + delay) * 1000 <= timeout

    def _failed(self, stage: str, executing: str, exc: Exception, original: Original) -> None:
        self.failures += 1
        message = f"{stage} ({executing}) failed on record {original.where()}: {type(exc).__name__}: {exc}"
        if not self.policy.tolerate_all:
            raise RecordFailure(message) from exc
        self.skipped += 1
        self._report(stage, executing, exc, original)

    def _report(self, stage: str, executing: str, exc: BaseException, original: Original,
                delivered: Future[None] | None = None) -> None:
        """Log the failed record and send it to the dead-letter queue, as the policy says;
        *delivered* completes once Kafka acknowledged it (at once when nothing is sent)."""
        if self.policy.log_enable:
            details: dict[str, Any] = {"connector": self.connector, "task": self.task_id, "stage": stage}
            if self.policy.log_include_messages:
                details["record"] = original.where()
            log.error("record_failed", error=f"{type(exc).__name__}: {exc}", **details)
            self.logged += 1
        if self.policy.dlq_topic and self._send is not None:
            headers = list(original.headers)
            if self.policy.dlq_context_headers:
                headers += self._context_headers(stage, executing, exc, original)
            if delivered is None:
                self._send(self.policy.dlq_topic, original.key, original.value, headers)
            else:
                self._send(self.policy.dlq_topic, original.key, original.value, headers, delivered)
            self.dlq_produced += 1
        elif delivered is not None:
            delivered.set_result(None)

    def report_errant(self, executing: str, exc: BaseException, original: Original) -> Future[None]:
        """A sink task's errant record (KIP-610): logged and sent to the dead-letter queue as a
        failed ``put`` would be; the future completes once Kafka acknowledged it.

        :raises RecordFailure: after reporting, when errors are not tolerated (the task fails,
            as Kafka Connect's "Tolerance exceeded in error handler").
        """
        self.failures += 1
        delivered: Future[None] = Future()
        self._report("TASK_PUT", executing, exc, original, delivered)
        if not self.policy.tolerate_all:
            raise RecordFailure(f"Tolerance exceeded in error handler: TASK_PUT ({executing}) reported record "
                                f"{original.where()} as errant: {type(exc).__name__}: {exc}") from exc
        self.skipped += 1
        return delivered

    def _context_headers(self, stage: str, executing: str, exc: Exception, original: Original) -> list[tuple[str, bytes]]:
        values: dict[str, Any] = {
            "topic": original.topic,
            "partition": original.partition,
            "offset": original.offset,
            "source.partition": original.source_partition,
            "source.offset": original.source_offset,
            "connector.name": self.connector,
            "task.id": self.task_id,
            "stage": stage,
            "class.name": executing,
            "exception.class.name": f"{type(exc).__module__}.{type(exc).__qualname__}",
            # Resolved secrets hidden: a message may quote a config value (the record's data stays).
            "exception.message": redact(str(exc)),
            "exception.stacktrace": redact("".join(traceback.format_exception(exc))),
        }
        return [(HEADER_PREFIX + k, str(v).encode()) for k, v in values.items() if v is not None]


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
