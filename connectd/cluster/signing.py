"""Signed requests between workers (KIP-507's session key).

The leader writes a random key to the config topic (``session-key``) and
replaces it every ``inter.worker.key.ttl.ms``; every worker reads it. A
worker forwarding a request signs it with the current key; the receiving
worker checks the signature against the current key (and the one before
it, so a request signed just before a rotation still passes) and refuses
the request with 403 when the signature is missing, uses an algorithm not
in ``inter.worker.verification.algorithms``, or does not match.

Kafka Connect signs the body; connectd signs method, path with query and
body, so a signature cannot be replayed on another endpoint. The headers
are Kafka Connect's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

__all__ = ["ALGORITHM_HEADER", "SIGNATURE_HEADER", "SessionKey", "new_session_key", "sign", "verify"]

SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"

_DIGESTS = {"HmacSHA256": hashlib.sha256, "HmacSHA384": hashlib.sha384, "HmacSHA512": hashlib.sha512}
_DEFAULT_BITS = {"HmacSHA256": 256, "HmacSHA384": 384, "HmacSHA512": 512}


@dataclass(frozen=True)
class SessionKey:
    """The cluster's signing key as the config topic holds it."""

    key: bytes
    algorithm: str
    creation_timestamp_ms: int

    def __repr__(self) -> str:  # the key itself stays out of logs
        return f"SessionKey(algorithm={self.algorithm!r}, creation_timestamp_ms={self.creation_timestamp_ms})"

    def expired(self, ttl_ms: int, now_ms: int | None = None) -> bool:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return now_ms - self.creation_timestamp_ms >= ttl_ms


def new_session_key(algorithm: str = "HmacSHA256", bits: int | None = None) -> SessionKey:
    """A random key for *algorithm* (``inter.worker.key.generation.algorithm``, ``inter.worker.key.size``)."""
    if algorithm not in _DIGESTS:
        raise ValueError(f"unsupported key algorithm {algorithm!r}; expected one of {sorted(_DIGESTS)}")
    size = bits or _DEFAULT_BITS[algorithm]
    return SessionKey(secrets.token_bytes((size + 7) // 8), algorithm, int(time.time() * 1000))


def _payload(method: str, path_qs: str, body: bytes) -> bytes:
    return method.upper().encode() + b"\n" + path_qs.encode() + b"\n" + body


def sign(key: SessionKey, algorithm: str, method: str, path_qs: str, body: bytes) -> str:
    """The base64 signature of a request, for :data:`SIGNATURE_HEADER`."""
    digest = hmac.new(key.key, _payload(method, path_qs, body), _DIGESTS[algorithm]).digest()
    return base64.b64encode(digest).decode()


def verify(keys: list[SessionKey], accepted: list[str], algorithm: str | None, signature: str | None,
           method: str, path_qs: str, body: bytes) -> str | None:
    """``None`` when the request is signed by one of *keys*; otherwise why it is refused."""
    if not signature or not algorithm:
        return "the request is not signed"
    if algorithm not in accepted or algorithm not in _DIGESTS:
        return f"signature algorithm {algorithm} is not accepted (inter.worker.verification.algorithms)"
    if not keys:
        return "this worker has no session key yet"
    for key in keys:
        if hmac.compare_digest(sign(key, algorithm, method, path_qs, body), signature):
            return None
    return "the request signature does not match the session key"
