"""Keeps resolved secrets out of log lines, exception messages and reprs.

Every value a config provider resolves is registered here; :func:`redact`
replaces each registered value in a text by ``[hidden]``. The log chain runs
every rendered line through it, so a secret that slips into a message
(an exception text from a client library, say) is still never written out;
so do status traces, REST error messages and dead letter queue headers, and
:class:`OutputScrubber` does it for whatever a worker's process or its
children (Spark's JVM and Python workers) write to stdout and stderr.
"""

from __future__ import annotations

import os
import select
import sys
import threading

__all__ = ["HIDDEN", "OutputScrubber", "Secret", "forget_all", "looks_secret", "redact", "register"]

HIDDEN = "[hidden]"

# Values shorter than this are not scrubbed from free text: replacing every
# "1" or "true" in a log line would destroy the line and hide nothing.
_MIN_LENGTH = 4

_lock = threading.Lock()
_secrets: set[str] = set()
_ordered: list[str] = []  # longest first, so a secret containing another is replaced whole


def register(value: str) -> None:
    """Remember *value* as secret so that :func:`redact` hides it."""
    if not isinstance(value, str) or len(value) < _MIN_LENGTH:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        _ordered[:] = sorted(_secrets, key=len, reverse=True)


def redact(text: str) -> str:
    """Return *text* with every registered secret replaced by ``[hidden]``."""
    if not _ordered or not text:
        return text
    for secret in _ordered:
        if secret in text:
            text = text.replace(secret, HIDDEN)
    return text


_SECRET_WORDS = ("password", "jaas.config", "secret", "credentials", "token", "user.info", "api.key", "private.key")


def looks_secret(key: str) -> bool:
    """Whether a setting named *key* holds a secret, for keys nobody declared
    (``producer.ssl.key.password``, a plugin's ``db.password``)."""
    lowered = key.lower()
    if lowered.endswith((".class", ".type")):  # names a class, e.g. config.providers.secretManager.class
        return False
    if lowered.endswith(".file"):  # names a file, e.g. rest.basic.auth.credentials.file
        return False
    return any(word in lowered for word in _SECRET_WORDS)


def forget_all() -> None:
    """Forget every registered secret (for tests)."""
    with _lock:
        _secrets.clear()
        _ordered.clear()


class Secret:
    """A string that shows as ``[hidden]`` in ``str``, ``repr`` and formatting.

    Kafka's ``Password`` type: the value is only reachable through
    :meth:`value`, so it cannot end up in a message by accident.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        register(value)

    def value(self) -> str:
        """The secret itself; hand it only to the client that needs it."""
        return self._value

    def __repr__(self) -> str:
        return HIDDEN

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return HIDDEN

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self):  # pickling keeps the value; only display hides it
        return (Secret, (self._value,))


class OutputScrubber:
    """Runs this process's stdout and stderr, at the file-descriptor level, through :func:`redact`.

    What the log chain does for log lines, this does for everything else written to
    fd 1 and 2 — by this process and by every child that inherits them: Spark's JVM
    (its error blocks quote a failed Python task's traceback), the Python workers it
    forks, py4j. Each fd is pointed at a pipe; a thread reads it, hides every
    registered secret line by line, and writes to where the fd pointed before. A line
    not ended by a newline goes out after ``_PARTIAL_FLUSH_S`` of quiet (a prompt, a
    progress line). Use as a context manager; leaving points the fds back and
    passes on what children still write until they close their copies.
    """

    _PARTIAL_FLUSH_S = 0.2
    _MAX_PENDING = 1 << 20

    def __init__(self, fds: tuple[int, ...] = (1, 2)) -> None:
        self.fds = fds
        self._originals: dict[int, int] = {}
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> OutputScrubber:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd in self.fds:
            original = os.dup(fd)
            read_end, write_end = os.pipe()
            os.dup2(write_end, fd)
            os.close(write_end)
            self._originals[fd] = original
            thread = threading.Thread(target=self._pump, args=(read_end, original), name=f"scrub-fd{fd}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        for fd, original in self._originals.items():
            os.dup2(original, fd)  # the pipe's last writers now are children still running, if any
        for thread in self._threads:
            thread.join(1.0)

    def _pump(self, read_end: int, out: int) -> None:
        pending = b""
        try:
            while True:
                ready, _, _ = select.select([read_end], [], [], self._PARTIAL_FLUSH_S if pending else None)
                if not ready:
                    _write_all(out, pending)
                    pending = b""
                    continue
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    break
                pending += chunk
                complete, newline, rest = pending.rpartition(b"\n")
                if newline:
                    _write_all(out, complete + newline)
                    pending = rest
                elif len(pending) > self._MAX_PENDING:
                    _write_all(out, pending)
                    pending = b""
            _write_all(out, pending)
        finally:
            os.close(read_end)
            os.close(out)


def _write_all(fd: int, data: bytes) -> None:
    if not data:
        return
    data = redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    while data:
        try:
            written = os.write(fd, data)
        except InterruptedError:
            continue
        except OSError:
            # The reader went away, or the stream broke: drop the output rather than stop
            # draining the pipe (writers to a full pipe would block: the worker would hang).
            return
        data = data[written:]
