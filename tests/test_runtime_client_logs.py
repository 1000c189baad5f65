"""Kafka client log lines from executors: the same line (numbers aside) once per period."""

from __future__ import annotations

import logging

from connectd.runtime import kafka_io


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("connectd.kafka.client", logging.ERROR, __file__, 1, message, (), None)


def test_repeats_are_held_back_and_counted_when_the_line_comes_again(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(kafka_io.time, "monotonic", lambda: now[0])
    limit = kafka_io._RateLimited()
    first = record("127.0.0.1:9092/bootstrap: SASL handshake failed (after 0ms in state AUTH_HANDSHAKE)")
    assert limit.filter(first)
    for ms in range(1, 6):
        now[0] += 1
        assert not limit.filter(record(f"127.0.0.1:9092/bootstrap: SASL handshake failed (after {ms}ms in state "
                                       "AUTH_HANDSHAKE)"))
    assert limit.filter(record("another line"))  # a different line is not held back
    now[0] += kafka_io.CLIENT_LOG_EVERY_S
    again = record("127.0.0.1:9092/bootstrap: SASL handshake failed (after 7ms in state AUTH_HANDSHAKE)")
    assert limit.filter(again)
    assert again.getMessage().endswith("(5 more like it in 35 s)")
