"""Structured logging for the daemon: one processor chain for every logger.

structlog sits on top of the stdlib :mod:`logging` module. connectd's own
loggers (:func:`get_logger`) and every third-party stdlib logger (aiokafka,
py4j, asyncio, ...) end in the same handler on the root logger, whose
:class:`~structlog.stdlib.ProcessorFormatter` adds the timestamp, the level,
the logger name and the context bound with :func:`bind_context`, then renders
the line as JSON or for a human. Every rendered line is run through
:func:`connectd.secrets.redact` last, so a registered secret never reaches the
stream, not even inside a library's exception message.

Levels are the stdlib loggers' own levels, so :func:`set_level` (which backs
Kafka Connect's ``/admin/loggers``) changes what is written from then on, for
structlog and stdlib loggers alike.

A library's line that repeats, numbers aside (aiokafka's "Unable connect to
node" for every retry while a broker is away, librdkafka's in an executor), is
written once per :data:`REPEAT_WINDOW_S`; the next one written says how many
were held back. connectd's own lines are never held back.
"""

from __future__ import annotations

import logging as _stdlib_logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, TextIO

import structlog

from connectd.errors import ConfigError
from connectd.secrets import redact

__all__ = [
    "bind_context",
    "check_level",
    "configure_logging",
    "configure_spark_process",
    "get_level",
    "get_levels",
    "get_logger",
    "RepeatFilter",
    "set_level",
    "spark_process_worker",
    "spark_process_env",
]

_ROOT = "root"

# log4j's OFF: above CRITICAL, so nothing passes.
_OFF = _stdlib_logging.CRITICAL + 10

# log4j's ALL: below DEBUG, so everything passes (NOTSET would mean "as the parent").
_ALL = 1

_LEVELS: dict[str, int] = {
    "ALL": _ALL,
    "TRACE": _stdlib_logging.DEBUG,
    "DEBUG": _stdlib_logging.DEBUG,
    "INFO": _stdlib_logging.INFO,
    "WARN": _stdlib_logging.WARNING,
    "WARNING": _stdlib_logging.WARNING,
    "ERROR": _stdlib_logging.ERROR,
    "FATAL": _stdlib_logging.CRITICAL,
    "CRITICAL": _stdlib_logging.CRITICAL,
    "OFF": _OFF,
}
_LEVEL_CHOICES = "TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF, ALL"

# Reported with log4j's names, as Kafka Connect's /admin/loggers does.
_LEVEL_NAMES: dict[int, str] = {
    _stdlib_logging.DEBUG: "DEBUG",
    _stdlib_logging.INFO: "INFO",
    _stdlib_logging.WARNING: "WARN",
    _stdlib_logging.ERROR: "ERROR",
    _stdlib_logging.CRITICAL: "FATAL",
    _OFF: "OFF",
    _ALL: "ALL",
}

# Libraries too chatty below this level unless DEBUG was asked for.
_QUIET_LIBRARIES: dict[str, int] = {"py4j": _stdlib_logging.WARNING}

_FIRST_KEYS = ("timestamp", "level", "logger", "event")

_lock = threading.Lock()
_last_modified: dict[str, int] = {}


def _capture_exc_info(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    # exc_info=True means "the exception being handled now"; resolve it while
    # still inside the except block rather than whenever the handler formats.
    if event_dict.get("exc_info") is True:
        exc_info = sys.exc_info()
        if exc_info[0] is None:
            del event_dict["exc_info"]
        else:
            event_dict["exc_info"] = exc_info
    return event_dict


# What a LogRecord holds by itself; anything else on a record came from
# ``extra=``. "message" and "asctime" are added by any Formatter that ran first.
_RECORD_ATTRIBUTES = frozenset(
    _stdlib_logging.LogRecord("", 0, "", 0, "", (), None).__dict__
) | {"message", "asctime"}


def _add_extra(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    record = event_dict.get("_record")
    if record is not None:
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRIBUTES and not key.startswith("_"):
                event_dict.setdefault(key, value)
    return event_dict


def _add_timestamp(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    # The record's creation time, not the formatting time: both kinds of
    # record carry one, so structlog and stdlib lines are stamped alike.
    record = event_dict.get("_record")
    created = record.created if record is not None else time.time()
    stamp = datetime.fromtimestamp(created, tz=timezone.utc).isoformat(timespec="microseconds")
    event_dict["timestamp"] = stamp.replace("+00:00", "Z")
    return event_dict


#: Keys every line of this process carries unless the line sets them (:func:`configure_spark_process`).
_process_context: dict[str, Any] = {}


def _add_process_context(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    for key, value in _process_context.items():
        event_dict.setdefault(key, value)
    return event_dict


def _connect_context(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """On the console, a task's or connector's lines start as Kafka Connect's do:
    ``[orders-sink|task-0]`` or ``[orders-sink|worker]``."""
    connector = event_dict.pop("connector", None)
    if connector is None:
        return event_dict
    task = event_dict.pop("task", None)
    event_dict["event"] = f"[{connector}|{'worker' if task is None else f'task-{task}'}] {event_dict.get('event', '')}"
    return event_dict


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if type(value) is dict:
        return {key: _redact_value(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_redact_value(item) for item in value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    # The renderer would show repr(value); swap it in only when it holds a
    # secret so that ordinary values keep their usual rendering.
    text = repr(value)
    hidden = redact(text)
    return value if hidden == text else hidden


def _redact_values(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    # Before rendering as well as after: JSON and repr() escape quotes,
    # backslashes and non-ASCII characters, so a secret containing one no
    # longer matches itself in the rendered line. exc_info must stay an
    # exception for the console renderer; its traceback is plain text, which
    # the final pass over the line covers.
    return {
        key: value if key == "exc_info" else _redact_value(value)
        for key, value in event_dict.items()
    }


def _json_key_order(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    first = {key: event_dict.pop(key) for key in _FIRST_KEYS if key in event_dict}
    return {**first, **event_dict}


# Runs for connectd's own loggers, at the call site; the handler's formatter
# does the rest. Constant, so it does not matter when a logger was created.
_STRUCTLOG_PROCESSORS: list[Any] = [
    structlog.stdlib.filter_by_level,
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_logger_name,
    structlog.stdlib.add_log_level,
    structlog.stdlib.PositionalArgumentsFormatter(),
    structlog.processors.StackInfoRenderer(),
    _capture_exc_info,
    structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
]

# Runs for records of plain stdlib loggers, so they gain what the chain above
# gives structlog's. Formatting happens synchronously in the logging call, so
# the context merged here is the caller's.
_FOREIGN_PRE_CHAIN: list[Any] = [
    _add_extra,  # before the context, so that extra= wins over bound values
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_logger_name,
    structlog.stdlib.add_log_level,
]


class _RedactingFormatter(structlog.stdlib.ProcessorFormatter):
    def format(self, record: _stdlib_logging.LogRecord) -> str:
        return redact(super().format(record))


class _Handler(_stdlib_logging.StreamHandler):  # type: ignore[type-arg]
    # Found again by this attribute on reconfiguration (and survives a module
    # reload, which a class check would not).
    _connectd_owned = True


#: A library's line (numbers aside) is written at most once per this many seconds.
REPEAT_WINDOW_S = 30.0
_REPEATS_KEPT = 1000  # distinct lines remembered at most; the oldest are forgotten first


class RepeatFilter(_stdlib_logging.Filter):
    """Lets a library's line through once per :data:`REPEAT_WINDOW_S` (lines that differ only in
    numbers are the same line), saying how many were held back meanwhile: a client retrying a
    refused connection logs many lines a second.

    The worker's handler has one for every library's logger (connectd's own lines always pass
    it); a connectd logger that carries a library's lines (librdkafka's, in Spark's executors)
    gets one of its own with :meth:`on`.
    """

    def __init__(self, libraries_only: bool = False) -> None:
        super().__init__()
        self._libraries_only = libraries_only
        self._lock = threading.Lock()
        self._last: dict[tuple[str, int, str], tuple[float, int]] = {}  # line -> (written at, held back)

    @classmethod
    def on(cls, logger: _stdlib_logging.Logger) -> _stdlib_logging.Logger:
        """*logger*, with a filter of this kind added unless it has one."""
        if not any(isinstance(existing, cls) for existing in logger.filters):
            logger.addFilter(cls())
        return logger

    def filter(self, record: _stdlib_logging.LogRecord) -> bool:
        name = record.name
        if self._libraries_only and (name == "connectd" or name.startswith("connectd.")):
            return True
        message = record.getMessage()
        line = (name, record.levelno, re.sub(r"\d+", "#", message))
        with self._lock:
            last, held = self._last.pop(line, (float("-inf"), 0))
            if record.created - last < REPEAT_WINDOW_S:
                self._last[line] = (last, held + 1)
                return False
            self._last[line] = (record.created, 0)
            if len(self._last) > _REPEATS_KEPT:
                del self._last[next(iter(self._last))]
        if held:
            record.msg, record.args = f"{message} ({held} more like it in {record.created - last:.0f} s)", ()
        return True


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _parse_level(value: object, where: str) -> int:
    if isinstance(value, str):
        level = _LEVELS.get(value.strip().upper())
        if level is not None:
            return level
    raise ConfigError([f"{where}: {value!r} is not a log level; expected one of {_LEVEL_CHOICES}"])


def check_level(value: object, where: str) -> None:
    """Raise :class:`ConfigError` naming *where* unless *value* is a log level name."""
    _parse_level(value, where)


def _level_name(level: int) -> str:
    return _LEVEL_NAMES.get(level) or _stdlib_logging.getLevelName(level)


def _known_loggers() -> dict[str, _stdlib_logging.Logger]:
    # dict() copies in one step, so a logger created meanwhile by another
    # thread cannot break the iteration.
    entries = dict(_stdlib_logging.root.manager.loggerDict)
    return {
        name: logger
        for name, logger in entries.items()
        if isinstance(logger, _stdlib_logging.Logger)
    }


def _lookup(name: str) -> _stdlib_logging.Logger | None:
    if name in (_ROOT, ""):
        return _stdlib_logging.getLogger()
    return _known_loggers().get(name)


def configure_logging(
    level: str = "INFO",
    *,
    json: bool | None = None,
    stream: TextIO | None = None,
) -> None:
    """Send every log line, connectd's and the libraries', to *stream*.

    Calling it again replaces the previous configuration: the handler is
    swapped, never added twice. Levels set with :func:`set_level` on other
    loggers than the root and the quietened libraries are kept.

    :param level: the root logger's level, a log4j or Python level name in
        any case: ``TRACE`` (same as ``DEBUG``), ``DEBUG``, ``INFO``, ``WARN``
        or ``WARNING``, ``ERROR``, ``FATAL`` or ``CRITICAL``, ``OFF``.
        py4j is held at ``WARN`` or above unless this is ``DEBUG``.
    :param json: ``True`` for one JSON object a line, ``False`` for
        structlog's console format, ``None`` to choose JSON unless *stream*
        is a terminal. Colours only on a terminal.
    :param stream: where lines are written; ``sys.stdout`` by default.
    :raises ConfigError: *level* is not a level name.
    """
    numeric = _parse_level(level, "--log-level")
    if stream is None:
        stream = sys.stdout
    tty = _isatty(stream)
    as_json = not tty if json is None else json
    global _lines_are_json
    _lines_are_json = as_json

    processors: list[Any] = [
        _add_timestamp,
        _add_process_context,
        structlog.stdlib.ProcessorFormatter.remove_processors_meta,
    ]
    if as_json:
        processors += [
            structlog.processors.format_exc_info,
            _redact_values,
            _json_key_order,
            structlog.processors.JSONRenderer(),
        ]
    else:
        processors += [
            _redact_values,
            _connect_context,
            structlog.dev.ConsoleRenderer(
                colors=tty and "NO_COLOR" not in os.environ,
                # Rich tracebacks would colour text inside an exception
                # message and split a secret apart before redaction sees it.
                exception_formatter=structlog.dev.plain_traceback,
            ),
        ]

    handler = _Handler(stream)
    handler.addFilter(RepeatFilter(libraries_only=True))
    handler.setFormatter(
        _RedactingFormatter(processors=processors, foreign_pre_chain=_FOREIGN_PRE_CHAIN)
    )
    # The handler stays at NOTSET: loggers do the filtering, so set_level can
    # make a single logger more verbose than the root.

    root = _stdlib_logging.getLogger()
    with _lock:
        for old in list(root.handlers):
            if getattr(old, "_connectd_owned", False):
                root.removeHandler(old)
                old.close()
        root.addHandler(handler)
        root.setLevel(numeric)
        _last_modified.pop(_ROOT, None)
        for name, floor in _QUIET_LIBRARIES.items():
            if numeric <= _stdlib_logging.DEBUG:
                quiet = _stdlib_logging.NOTSET
            else:
                quiet = max(numeric, floor)
            _stdlib_logging.getLogger(name).setLevel(quiet)
            _last_modified.pop(name, None)

    # For code that calls structlog.get_logger() itself. Not cached: such a
    # logger may be created before this runs and must not keep the defaults.
    structlog.configure(
        processors=_STRUCTLOG_PROCESSORS,
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        context_class=dict,
        cache_logger_on_first_use=False,
    )


#: What the last :func:`configure_logging` chose: JSON lines (also before it runs, as for a pipe).
_lines_are_json = True


#: What a worker tells the Python processes Spark starts for it (planners, executors' workers),
#: through their environment: how to write log lines, and its id for each line.
_ENV_JSON, _ENV_LEVEL, _ENV_WORKER = "CONNECTD_LOG_JSON", "CONNECTD_LOG_LEVEL", "CONNECTD_WORKER_ID"


def spark_process_env(worker_id: str) -> dict[str, str]:
    """The environment of Spark's Python processes for this worker: its lines' format (as
    :func:`configure_logging` last chose), the root logger's level, and its id."""
    level = _level_name(_stdlib_logging.getLogger().getEffectiveLevel())
    return {_ENV_JSON: "true" if _lines_are_json else "false", _ENV_LEVEL: level, _ENV_WORKER: worker_id}


def configure_spark_process(**context: Any) -> None:
    """In a Python process Spark started (a task's planner, an executor's Python worker): write
    lines as the worker does (:func:`spark_process_env`) to stderr, the first time; every line
    carries the worker's id and *context* (a planner's ``connector`` and ``task``)."""
    with _lock:
        first = not _process_context
        _process_context["worker"] = spark_process_worker()
        _process_context.update(context)
    if first:
        configure_logging(os.environ.get(_ENV_LEVEL, "INFO"),
                          json=os.environ.get(_ENV_JSON, "true") == "true", stream=sys.stderr)


def spark_process_worker() -> str:
    """The id of the worker whose process started this one (:func:`spark_process_env`), or ``""``."""
    return os.environ.get(_ENV_WORKER, "")


def lines_are_json() -> bool:
    """Whether log lines are JSON objects (else structlog's console format), so that other
    writers of the same stream (Spark's JVM) can match them."""
    return _lines_are_json


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    """Return a structlog logger writing through the stdlib logger *name*.

    Event names are snake_case, details are keyword arguments::

        log = get_logger(__name__)
        log.info("task_started", connector="orders-sink", task=0)

    :param name: the stdlib logger's dotted name; ``None`` means the calling
        module's ``__name__``.
    """
    if name is None:
        name = sys._getframe(1).f_globals.get("__name__", _ROOT)
    return structlog.stdlib.BoundLogger(
        _stdlib_logging.getLogger(name),
        processors=_STRUCTLOG_PROCESSORS,
        context={},
    )


@contextmanager
def bind_context(**kv: Any) -> Iterator[None]:
    """Add *kv* to every line logged inside the ``with`` block.

    Lines of stdlib loggers carry them too. The previous values of these keys
    (or their absence) come back on exit; other keys are not touched. Bound
    through :mod:`contextvars`, so each asyncio task sees its own values::

        with bind_context(connector="orders-sink", task=0):
            ...

    :param kv: the keys to bind, by convention ``worker``, ``connector``,
        ``task``, ``generation``.
    """
    with structlog.contextvars.bound_contextvars(**kv):
        yield


def set_level(name: str, level: str) -> list[str]:
    """Set the level of logger *name* and of its existing descendants.

    As Kafka Connect's ``PUT /admin/loggers/{name}``: setting
    ``connectd.runtime`` also sets ``connectd.runtime.spark.session`` if that logger
    exists; ``root`` sets every logger. Takes effect on the next line logged.

    :param name: a dotted stdlib logger name, or ``root``; created if unknown.
    :param level: a level name, as for :func:`configure_logging`.
    :returns: the names of the loggers changed, *name* first.
    :raises ConfigError: *level* is not a level name.
    """
    numeric = _parse_level(level, f"logger {name!r}")
    known = _known_loggers()
    if name in (_ROOT, ""):
        target = _stdlib_logging.getLogger()
        descendants = sorted(known)
    else:
        target = _stdlib_logging.getLogger(name)
        prefix = name + "."
        descendants = sorted(other for other in known if other.startswith(prefix))
    now = time.time_ns() // 1_000_000
    changed = [target.name] + descendants
    with _lock:
        target.setLevel(numeric)
        for other in descendants:
            known[other].setLevel(numeric)
        for changed_name in changed:
            _last_modified[changed_name] = now
    return changed


def get_level(name: str) -> str | None:
    """Return the effective level of logger *name*, or ``None`` if there is none.

    :param name: a dotted stdlib logger name, or ``root``. Asking does not
        create the logger.
    """
    logger = _lookup(name)
    if logger is None:
        return None
    return _level_name(logger.getEffectiveLevel())


def get_levels() -> dict[str, dict[str, Any]]:
    """Return every logger that has a level of its own, as ``/admin/loggers`` does.

    ``{"root": {"level": "INFO", "last_modified": None}, "connectd.runtime":
    {"level": "DEBUG", "last_modified": 1718000000000}}``: ``last_modified``
    is when :func:`set_level` last changed it, in epoch milliseconds, or
    ``None`` if it has its level from start-up.
    """
    root = _stdlib_logging.getLogger()
    levels = {
        _ROOT: {"level": _level_name(root.level), "last_modified": _last_modified.get(_ROOT)}
    }
    for name, logger in sorted(_known_loggers().items()):
        if logger.level != _stdlib_logging.NOTSET:
            levels[name] = {
                "level": _level_name(logger.level),
                "last_modified": _last_modified.get(name),
            }
    return levels
