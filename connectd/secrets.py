"""Keeps resolved secrets out of log lines, exception messages and reprs.

Every value a config provider resolves is registered here; :func:`redact`
replaces each registered value in a text by ``[hidden]``. The log chain runs
every rendered line through it, so a secret that slips into a message
(an exception text from a client library, say) is still never written out.
"""

from __future__ import annotations

import threading

__all__ = ["HIDDEN", "Secret", "forget_all", "looks_secret", "redact", "register"]

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
