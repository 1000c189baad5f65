from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
import structlog

import connectd.logging as connectd_logging
from connectd import secrets
from connectd.errors import ConfigError
from connectd.logging import (
    bind_context,
    configure_logging,
    get_level,
    get_levels,
    get_logger,
    set_level,
)

SECRET = "s3cr3t-passw0rd"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _restore_logging():
    """Undo everything configure_logging and set_level change in the process."""
    root = logging.getLogger()
    root_level = root.level
    levels = {
        name: logger.level
        for name, logger in dict(logging.root.manager.loggerDict).items()
        if isinstance(logger, logging.Logger)
    }
    yield
    for handler in list(root.handlers):
        if getattr(handler, "_connectd_owned", False):
            root.removeHandler(handler)
    root.setLevel(root_level)
    for name, logger in dict(logging.root.manager.loggerDict).items():
        if isinstance(logger, logging.Logger):
            logger.setLevel(levels.get(name, logging.NOTSET))
    connectd_logging._last_modified.clear()
    structlog.contextvars.clear_contextvars()
    structlog.reset_defaults()
    secrets.forget_all()


def _configure(level: str = "INFO", **kwargs) -> io.StringIO:
    stream = io.StringIO()
    configure_logging(level, stream=stream, **kwargs)
    return stream


def _lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def _events(stream: io.StringIO) -> list[str]:
    return [line["event"] for line in _lines(stream)]


# --- rendering ---------------------------------------------------------------


def test_json_line_has_timestamp_level_logger_event_and_fields():
    stream = _configure()
    get_logger("connectd.runtime").info("task_started", connector="orders", task=0)

    [line] = _lines(stream)
    assert list(line)[:4] == ["timestamp", "level", "logger", "event"]
    assert line["level"] == "info"
    assert line["logger"] == "connectd.runtime"
    assert line["event"] == "task_started"
    assert line["connector"] == "orders"
    assert line["task"] == 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", line["timestamp"])
    stamp = datetime.fromisoformat(line["timestamp"])
    assert stamp.utcoffset() == timedelta(0)
    assert abs(datetime.now(timezone.utc) - stamp) < timedelta(minutes=1)


def test_positional_arguments_are_interpolated():
    stream = _configure()
    get_logger("connectd.x").info("read %d records from %s", 5, "orders")

    assert _events(stream) == ["read 5 records from orders"]


def test_auto_mode_writes_json_when_stream_is_not_a_tty():
    stream = io.StringIO()
    configure_logging("INFO", stream=stream)  # json=None
    get_logger("connectd.x").info("hello", n=1)

    assert _lines(stream)[0]["n"] == 1


def test_auto_mode_writes_coloured_console_lines_on_a_tty(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = _Terminal()
    configure_logging("INFO", stream=stream)
    get_logger("connectd.x").info("hello", n=1)

    out = stream.getvalue()
    assert "hello" in out
    assert "\x1b[" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_no_colours_on_a_tty_when_no_color_is_set(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    stream = _Terminal()
    configure_logging("INFO", stream=stream)
    get_logger("connectd.x").info("hello")

    assert "hello" in stream.getvalue()
    assert "\x1b[" not in stream.getvalue()


def test_json_true_forces_json_on_a_tty():
    stream = _Terminal()
    configure_logging("INFO", json=True, stream=stream)
    get_logger("connectd.x").info("hello")

    assert _events(stream) == ["hello"]


def test_console_mode_without_tty_is_readable_and_uncoloured():
    stream = _configure(json=False)
    get_logger("connectd.runtime").warning("task_failed", connector="orders", reason="a b")

    out = stream.getvalue()
    assert out.count("\n") == 1
    assert "task_failed" in out
    assert "[connectd.runtime]" in out
    assert "warning" in out
    assert "[orders|worker] task_failed" in out  # Kafka Connect's connector context, first
    assert "reason='a b'" in out
    assert "\x1b[" not in out
    timestamp = out.split()[0]
    assert datetime.fromisoformat(timestamp).utcoffset() == timedelta(0)


def test_stream_defaults_to_stdout(capsys):
    configure_logging("INFO", json=True)
    get_logger("connectd.x").info("to_stdout")

    captured = capsys.readouterr()
    assert json.loads(captured.out)["event"] == "to_stdout"
    assert captured.err == ""


def test_exception_is_a_string_field_in_json():
    stream = _configure()
    log = get_logger("connectd.x")
    try:
        raise ValueError("broker went away")
    except ValueError:
        log.exception("poll_failed")

    [line] = _lines(stream)
    assert line["level"] == "error"
    assert isinstance(line["exception"], str)
    assert line["exception"].startswith("Traceback (most recent call last)")
    assert "ValueError: broker went away" in line["exception"]
    assert "exc_info" not in line


def test_exception_from_stdlib_logger_is_rendered():
    stream = _configure()
    try:
        raise KeyError("partition")
    except KeyError:
        logging.getLogger("aiokafka").error("fetch_failed", exc_info=True)

    [line] = _lines(stream)
    assert "KeyError: 'partition'" in line["exception"]


def test_exception_in_console_mode_prints_traceback():
    stream = _configure(json=False)
    try:
        raise ValueError("broker went away")
    except ValueError:
        get_logger("connectd.x").exception("poll_failed")

    out = stream.getvalue()
    assert "poll_failed" in out
    assert "Traceback (most recent call last)" in out
    assert "ValueError: broker went away" in out


def test_exc_info_true_outside_an_except_block_is_ignored():
    stream = _configure()
    get_logger("connectd.x").error("odd", exc_info=True)

    [line] = _lines(stream)
    assert line["event"] == "odd"
    assert "exception" not in line


# --- stdlib loggers and context ------------------------------------------------


def test_stdlib_logger_goes_through_the_same_chain_with_context():
    stream = _configure()
    with bind_context(worker="w1", connector="orders", task=3):
        logging.getLogger("aiokafka").warning("heartbeat %s late", "3s", extra={"group": "g1"})
        get_logger("connectd.x").warning("own_line")

    stdlib_line, own_line = _lines(stream)
    assert stdlib_line["event"] == "heartbeat 3s late"
    assert stdlib_line["logger"] == "aiokafka"
    assert stdlib_line["level"] == "warning"
    assert stdlib_line["group"] == "g1"
    assert stdlib_line["timestamp"].endswith("Z")
    for line in (stdlib_line, own_line):
        assert (line["worker"], line["connector"], line["task"]) == ("w1", "orders", 3)
    assert set(stdlib_line) - {"group"} == set(own_line)


def test_explicit_values_win_over_bound_context():
    stream = _configure()
    with bind_context(connector="bound", task=1):
        logging.getLogger("aiokafka").info("stdlib", extra={"connector": "extra"})
        get_logger("connectd.x").info("own", connector="kwarg")

    stdlib_line, own_line = _lines(stream)
    assert (stdlib_line["connector"], stdlib_line["task"]) == ("extra", 1)
    assert (own_line["connector"], own_line["task"]) == ("kwarg", 1)


def test_stdlib_logger_in_console_mode_carries_context():
    stream = _configure(json=False)
    with bind_context(connector="orders"):
        logging.getLogger("asyncio").warning("slow callback")

    out = stream.getvalue()
    assert "[orders|worker] slow callback" in out
    assert "[asyncio]" in out


def test_a_tasks_console_lines_start_with_its_connector_and_task_as_kafka_connect_s_do():
    stream = _configure(json=False)
    with bind_context(connector="orders-sink", task=2, worker="w:8083"):
        get_logger("connectd.runtime").info("batch_done", records=5)
    out = stream.getvalue()
    assert "[orders-sink|task-2] batch_done" in out and "records=5" in out and "worker=w:8083" in out
    assert "connector=" not in out and "task=" not in out


def test_sparks_python_processes_write_the_workers_lines_with_its_id_and_their_tasks():
    import subprocess
    import sys

    from connectd.logging import spark_process_env

    configure_logging("WARN", json=True, stream=io.StringIO())
    env = spark_process_env("127.0.0.1:8083")
    assert env == {"CONNECTD_LOG_JSON": "true", "CONNECTD_LOG_LEVEL": "WARN", "CONNECTD_WORKER_ID": "127.0.0.1:8083"}
    script = """
from connectd.logging import configure_spark_process, get_logger
configure_spark_process(connector="lines", task=0)  # a planner: one task's process
get_logger("connectd.runtime.source.task").warning("poll_slow")
get_logger("connectd.runtime.source.task").info("not_shown")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True,
                          env={**os.environ, **env})
    [line] = [json.loads(text) for text in done.stderr.splitlines()]
    assert (line["event"], line["level"], line["worker"], line["connector"], line["task"]) == (
        "poll_slow", "warning", "127.0.0.1:8083", "lines", 0)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True,
                          env={**os.environ, **env, "CONNECTD_LOG_JSON": "false"})
    assert "[lines|task-0] poll_slow" in done.stderr and "worker=127.0.0.1:8083" in done.stderr


def test_structlog_get_logger_goes_through_the_chain_after_configure():
    stream = _configure()
    structlog.get_logger("some_plugin").info("plugin_loaded", name="p")

    [line] = _lines(stream)
    assert (line["logger"], line["event"], line["name"]) == ("some_plugin", "plugin_loaded", "p")


def test_bind_context_restores_previous_values():
    stream = _configure()
    log = get_logger("connectd.x")
    with bind_context(worker="w1", connector="a"):
        with bind_context(connector="b", task=1):
            log.info("inner")
        log.info("outer")
    log.info("outside")

    inner, outer, outside = _lines(stream)
    assert (inner["worker"], inner["connector"], inner["task"]) == ("w1", "b", 1)
    assert (outer["worker"], outer["connector"]) == ("w1", "a")
    assert "task" not in outer
    assert not {"worker", "connector", "task"} & set(outside)


def test_bind_context_restores_on_exception():
    stream = _configure()
    with bind_context(connector="a"):
        with pytest.raises(RuntimeError):
            with bind_context(connector="b"):
                raise RuntimeError
        get_logger("connectd.x").info("after")

    assert _lines(stream)[0]["connector"] == "a"


def test_bind_context_is_separate_per_asyncio_task():
    stream = _configure()
    log = get_logger("connectd.runtime")

    async def run_task(connector: str, barrier: asyncio.Barrier) -> None:
        with bind_context(connector=connector):
            await barrier.wait()  # both have bound before either logs
            log.info(f"task_of_{connector}")
            logging.getLogger("aiokafka").info(f"fetch_of_{connector}")

    async def main() -> None:
        barrier = asyncio.Barrier(2)
        await asyncio.gather(run_task("a", barrier), run_task("b", barrier))

    asyncio.run(main())

    lines = _lines(stream)
    assert len(lines) == 4
    for line in lines:
        assert line["event"].endswith("_of_" + line["connector"])


# --- levels ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("trace", "DEBUG"),
        ("DEBUG", "DEBUG"),
        (" info ", "INFO"),
        ("Warn", "WARN"),
        ("warning", "WARN"),
        ("error", "ERROR"),
        ("fatal", "FATAL"),
        ("CRITICAL", "FATAL"),
        ("off", "OFF"),
        ("all", "ALL"),
    ],
)
def test_level_names_are_case_insensitive_with_log4j_aliases(name, expected):
    _configure(name)

    assert get_level("root") == expected


@pytest.mark.parametrize("bad", ["verbose", "", "10", "WARNINGS"])
def test_bad_level_name_raises_config_error_and_keeps_configuration(bad):
    stream = _configure("INFO")

    with pytest.raises(ConfigError) as excinfo:
        configure_logging(bad, stream=io.StringIO())

    assert excinfo.value.problems == [
        f"--log-level: {bad!r} is not a log level; "
        "expected one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF, ALL"
    ]
    get_logger("connectd.x").info("still_here")
    assert _events(stream) == ["still_here"]
    assert get_level("root") == "INFO"


def test_set_level_rejects_bad_level_and_changes_nothing():
    _configure("INFO")
    logging.getLogger("connectd.x")

    with pytest.raises(ConfigError, match="'loud' is not a log level"):
        set_level("connectd.x", "loud")

    assert get_level("connectd.x") == "INFO"
    assert "connectd.x" not in get_levels()


def test_off_silences_everything():
    stream = _configure("OFF")
    get_logger("connectd.x").critical("nope")
    logging.getLogger("aiokafka").critical("nope")

    assert stream.getvalue() == ""


def test_set_level_filters_at_runtime():
    stream = _configure("INFO")
    log = get_logger("connectd.x")
    stdlib_log = logging.getLogger("connectd.x")
    log.info("before")

    set_level("connectd.x", "WARN")
    log.info("dropped")
    stdlib_log.info("dropped_too")
    log.warning("kept")
    stdlib_log.error("kept_too")
    get_logger("connectd.y").info("sibling_unaffected")

    assert _events(stream) == ["before", "kept", "kept_too", "sibling_unaffected"]


def test_set_level_can_make_one_logger_more_verbose_than_root():
    stream = _configure("INFO")
    set_level("connectd.x", "debug")
    get_logger("connectd.x").debug("shown")
    logging.getLogger("connectd.x.child").debug("child_shown")
    get_logger("connectd.y").debug("hidden")

    assert _events(stream) == ["shown", "child_shown"]


def test_set_level_affects_the_logger_and_existing_descendants_only():
    _configure("INFO")
    # Names no module uses: connectd's own modules create loggers under connectd.*.
    for name in ("lvltest.runtime", "lvltest.runtime.spark", "lvltest.runtimex", "lvltest.rest"):
        logging.getLogger(name)

    changed = set_level("lvltest.runtime", "DEBUG")

    assert changed == ["lvltest.runtime", "lvltest.runtime.spark"]
    assert logging.getLogger("lvltest.runtime.spark").level == logging.DEBUG
    assert logging.getLogger("lvltest.runtimex").level == logging.NOTSET
    assert logging.getLogger("lvltest.rest").level == logging.NOTSET
    assert get_level("lvltest.runtimex") == "INFO"


def test_set_level_on_parent_resets_descendant_with_its_own_level():
    stream = _configure("INFO")
    set_level("connectd.runtime.spark.session", "DEBUG")
    set_level("connectd.runtime", "ERROR")

    get_logger("connectd.runtime.spark.session").warning("dropped")
    assert stream.getvalue() == ""
    assert get_level("connectd.runtime.spark.session") == "ERROR"


def test_set_level_root_changes_root_and_every_logger():
    _configure("INFO")
    logging.getLogger("connectd.runtime")
    logging.getLogger("aiokafka.consumer")

    changed = set_level("root", "ERROR")

    assert changed[0] == "root"
    assert {"connectd.runtime", "aiokafka.consumer", "py4j"} <= set(changed)
    assert logging.getLogger().level == logging.ERROR
    assert logging.getLogger("aiokafka.consumer").level == logging.ERROR
    assert get_levels()["root"]["level"] == "ERROR"


def test_set_level_creates_an_unknown_logger():
    assert get_level("connectd.brand_new") is None

    assert set_level("connectd.brand_new", "WARN") == ["connectd.brand_new"]
    assert get_level("connectd.brand_new") == "WARN"


def test_get_level_is_effective_and_does_not_create_loggers():
    _configure("WARN")
    logging.getLogger("connectd.parent.child")

    assert get_level("connectd.parent.child") == "WARN"
    assert get_level("connectd.parent") is None  # only a placeholder so far
    assert get_level("no.such.logger") is None
    assert "no.such.logger" not in logging.root.manager.loggerDict


def test_get_levels_has_kafka_shape():
    _configure("INFO")
    logging.getLogger("connectd.untouched")
    before = time.time_ns() // 1_000_000
    set_level("connectd.runtime", "DEBUG")
    after = time.time_ns() // 1_000_000

    levels = get_levels()

    assert levels["root"] == {"level": "INFO", "last_modified": None}
    assert levels["py4j"] == {"level": "WARN", "last_modified": None}
    runtime = levels["connectd.runtime"]
    assert runtime["level"] == "DEBUG"
    assert isinstance(runtime["last_modified"], int)
    assert before <= runtime["last_modified"] <= after
    assert "connectd.untouched" not in levels
    assert json.loads(json.dumps(levels)) == levels


def test_reconfigure_resets_last_modified_of_root():
    _configure("INFO")
    set_level("root", "DEBUG")
    assert isinstance(get_levels()["root"]["last_modified"], int)

    _configure("WARN")

    assert get_levels()["root"] == {"level": "WARN", "last_modified": None}


@pytest.mark.parametrize(
    ("level", "py4j_shown", "aiokafka_shown"),
    [
        ("INFO", ["py4j_warning", "py4j_error"], ["aiokafka_info", "aiokafka_warning"]),
        ("DEBUG", ["py4j_debug", "py4j_info", "py4j_warning", "py4j_error"],
         ["aiokafka_debug", "aiokafka_info", "aiokafka_warning"]),
        ("TRACE", ["py4j_debug", "py4j_info", "py4j_warning", "py4j_error"],
         ["aiokafka_debug", "aiokafka_info", "aiokafka_warning"]),
        ("ERROR", ["py4j_error"], []),
    ],
)
def test_py4j_is_quiet_unless_debug_and_aiokafka_follows_level(level, py4j_shown, aiokafka_shown):
    stream = _configure(level)
    py4j = logging.getLogger("py4j.clientserver")
    py4j.debug("py4j_debug")
    py4j.info("py4j_info")
    py4j.warning("py4j_warning")
    py4j.error("py4j_error")
    aiokafka = logging.getLogger("aiokafka.consumer")
    aiokafka.debug("aiokafka_debug")
    aiokafka.info("aiokafka_info")
    aiokafka.warning("aiokafka_warning")

    events = _events(stream)
    assert [e for e in events if e.startswith("py4j")] == py4j_shown
    assert [e for e in events if e.startswith("aiokafka")] == aiokafka_shown


def test_py4j_follows_reconfiguration_to_debug():
    _configure("INFO")
    assert get_level("py4j") == "WARN"

    stream = _configure("DEBUG")
    logging.getLogger("py4j").debug("now_shown")

    assert _events(stream) == ["now_shown"]
    assert "py4j" not in get_levels()


# --- redaction ------------------------------------------------------------------


def test_redacts_registered_secret_in_fields_and_event():
    secrets.register(SECRET)
    stream = _configure()
    get_logger("connectd.x").info(
        f"connecting with {SECRET}",
        password=SECRET,
        nested={"sasl": {"password": SECRET}, "list": [SECRET]},
    )

    out = stream.getvalue()
    assert SECRET not in out
    [line] = _lines(stream)
    assert line["event"] == "connecting with [hidden]"
    assert line["password"] == "[hidden]"
    assert line["nested"] == {"sasl": {"password": "[hidden]"}, "list": ["[hidden]"]}


def test_secret_object_shows_hidden():
    stream = _configure()
    get_logger("connectd.x").info("config_loaded", password=secrets.Secret(SECRET))

    assert SECRET not in stream.getvalue()
    assert _lines(stream)[0]["password"] == "[hidden]"


@pytest.mark.parametrize("as_json", [True, False])
def test_redacts_secret_in_library_exception_message(as_json):
    secrets.register(SECRET)
    stream = _configure(json=as_json)
    try:
        raise PermissionError(f"SASL authentication failed for password {SECRET}")
    except PermissionError:
        logging.getLogger("aiokafka").exception("connection_failed")

    out = stream.getvalue()
    assert SECRET not in out
    assert "SASL authentication failed for password [hidden]" in out
    assert "connection_failed" in out


@pytest.mark.parametrize("as_json", [True, False])
def test_redacts_secret_that_rendering_would_escape(as_json):
    secret = 'pa"ss\\wörd 9'
    secrets.register(secret)
    stream = _configure(json=as_json)
    log = get_logger("connectd.x")
    log.info("login", password=secret)
    try:
        raise ValueError(f"bad password {secret}")
    except ValueError:
        log.exception("login_failed")

    out = stream.getvalue()
    for form in (secret, json.dumps(secret)[1:-1], repr(secret)[1:-1]):
        assert form not in out
    assert "bad password [hidden]" in out
    assert "[hidden]" in out.splitlines()[0]


def test_redacts_secret_inside_an_object_repr():
    @dataclass
    class Credentials:
        user: str
        password: str

    secrets.register(SECRET)
    stream = _configure()
    get_logger("connectd.x").info("creds", creds=Credentials("alice", SECRET))

    out = stream.getvalue()
    assert SECRET not in out
    assert "alice" in _lines(stream)[0]["creds"]


def test_redaction_is_the_last_step_of_the_handler():
    # A secret registered after configuration is still hidden: redaction looks
    # at the rendered line each time, nothing is precomputed.
    stream = _configure(json=False)
    secrets.register(SECRET)
    logging.getLogger("py4j").warning(f"token {SECRET}")

    assert SECRET not in stream.getvalue()
    assert "token [hidden]" in stream.getvalue()


# --- configuration ----------------------------------------------------------------


def test_reconfiguring_does_not_duplicate_lines_or_handlers():
    stream = io.StringIO()
    for _ in range(3):
        configure_logging("INFO", stream=stream)
    get_logger("connectd.x").info("once")
    logging.getLogger("aiokafka").info("once_too")

    assert _events(stream) == ["once", "once_too"]
    owned = [h for h in logging.getLogger().handlers if getattr(h, "_connectd_owned", False)]
    assert len(owned) == 1


def test_reconfiguring_switches_stream_format_and_level():
    first = _configure("INFO", json=True)
    second = _configure("WARN", json=False)
    log = get_logger("connectd.x")
    log.info("dropped")
    log.warning("kept")

    assert first.getvalue() == ""
    assert "kept" in second.getvalue()
    assert "dropped" not in second.getvalue()


def test_configure_keeps_handlers_it_did_not_install():
    other = logging.StreamHandler(io.StringIO())
    logging.getLogger().addHandler(other)
    try:
        _configure()
        assert other in logging.getLogger().handlers
    finally:
        logging.getLogger().removeHandler(other)


def test_get_logger_wraps_the_stdlib_logger_of_that_name():
    stream = _configure()
    log = get_logger("connectd.cluster")

    assert isinstance(log, structlog.stdlib.BoundLogger)
    assert log._logger is logging.getLogger("connectd.cluster")
    log.bind(generation=4).info("rebalanced")
    assert _lines(stream)[0]["generation"] == 4


def test_get_logger_without_name_uses_the_calling_module():
    assert get_logger()._logger is logging.getLogger(__name__)


def test_import_is_cheap():
    heavy = ["pyspark", "py4j", "aiokafka", "confluent_kafka", "aiohttp", "rich"]
    # structlog itself imports rich when it is installed (schemathesis brings it): only
    # what connectd.logging adds to what structlog loads counts.
    code = (
        "import sys, structlog; "
        f"before = {{m for m in {heavy!r} if m in sys.modules}}; "
        "import connectd.logging; "
        f"print([m for m in {heavy!r} if m in sys.modules and m not in before])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "[]"


def test_the_output_scrubber_hides_secrets_written_by_the_process_and_its_children():
    import subprocess
    import sys

    script = """
import os, subprocess, sys
from connectd.secrets import OutputScrubber, register
register("pw-0123456789")
with OutputScrubber():
    print("python says pw-0123456789", flush=True)
    os.write(2, b"fd 2 says pw-0123456789\\n")
    subprocess.run(["sh", "-c", "echo child says pw-0123456789; printf 'no newline pw-0123456789'"], check=True)
    sys.stdout.flush()
print("after")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert "pw-0123456789" not in done.stdout + done.stderr
    assert done.stdout.splitlines() == ["python says [hidden]", "child says [hidden]", "no newline [hidden]after"]
    assert done.stderr == "fd 2 says [hidden]\n"


def test_spark_log4j_lines_have_the_worker_s_keys_and_levels():
    from connectd.runtime.spark.session import log4j_config

    config = dict(line.split(" = ", 1) for line in log4j_config(True, "WARN", "host:8083").splitlines())
    pattern = config["appender.out.layout.pattern"]
    assert pattern.startswith('{"timestamp": ') and '"worker": "host:8083"' in pattern
    assert "%enc{%msg}{JSON}" in pattern and "WARN=warning" in pattern and "lowerCase=true" in pattern
    assert config["rootLogger.level"] == "WARN" and config["appender.out.target"] == "SYSTEM_OUT"
    assert config["appender.out.filter.cancel.onMatch"] == "DENY"  # a stopped query's benign warning
    console = dict(line.split(" = ", 1) for line in log4j_config(False, "ERROR").splitlines())
    assert console["appender.out.layout.pattern"].startswith("%d{") and console["rootLogger.level"] == "ERROR"


# --- repeated library lines -------------------------------------------------------


def test_a_library_line_repeated_numbers_aside_is_written_once_a_window_then_with_its_count(monkeypatch):
    stream = _configure()
    now = [1000.0]
    monkeypatch.setattr(time, "time", lambda: now[0])  # LogRecord.created
    monkeypatch.setattr(time, "time_ns", lambda: int(now[0] * 1e9))
    library = logging.getLogger("aiokafka.client")
    executors_client = connectd_logging.RepeatFilter.on(logging.getLogger("connectd.kafka.client"))  # librdkafka's
    connectd_logging.RepeatFilter.on(executors_client)  # asked twice, one filter
    assert sum(isinstance(f, connectd_logging.RepeatFilter) for f in executors_client.filters) == 1
    own = get_logger("connectd.cluster.membership")
    for ms in range(50):  # a broker away: every retry says the same
        library.error("Unable connect to node with id %s", 111)
        library.error("Unable to update metadata from [%s]", 111)
        executors_client.error("127.0.0.1:9092/bootstrap: Connect failed (after %dms in state CONNECT)", ms)
        own.warning("group_request_failed", group="g")
        now[0] += 0.1
    library.warning("Unable connect to node with id %s", 111)  # at another level: another line
    now[0] += connectd_logging.REPEAT_WINDOW_S
    library.error("Unable connect to node with id %s", 112)

    events = [(line["logger"], line["event"]) for line in _lines(stream) if line["event"] != "group_request_failed"]
    assert events == [
        ("aiokafka.client", "Unable connect to node with id 111"),
        ("aiokafka.client", "Unable to update metadata from [111]"),
        ("connectd.kafka.client", "127.0.0.1:9092/bootstrap: Connect failed (after 0ms in state CONNECT)"),
        ("aiokafka.client", "Unable connect to node with id 111"),
        ("aiokafka.client", "Unable connect to node with id 112 (49 more like it in 35 s)")]
    assert _events(stream).count("group_request_failed") == 50  # connectd's own: every one
