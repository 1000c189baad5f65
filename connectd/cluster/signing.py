"""Signed requests between workers (KIP-507's session key).

The leader writes a random key to the config topic (``session-key``) and
replaces it every ``inter.worker.key.ttl.ms``; every worker reads it. A
worker sending a request to another signs it with the current key; the
receiving worker checks the signature against the current key (and the one
before it, so a request signed just before a rotation still passes).

Two signatures travel together. Kafka Connect's, as its
``InternalRequestSignature`` makes it: the HMAC of the request *body* only,
base64, in :data:`SIGNATURE_HEADER` with the algorithm in
:data:`ALGORITHM_HEADER` — what a Kafka Connect worker in the same cluster
sends and checks on its internal endpoints (``POST /connectors/{c}/tasks``,
``PUT /connectors/{c}/fence``). And connectd's, over method, path with query
and body, in :data:`CONNECTD_SIGNATURE_HEADER`, so that a signed request
cannot be replayed on another endpoint; connectd checks it on the user
requests it forwards to the leader.

Refusals are Kafka's (:class:`Refusal`): no signature, or an algorithm not
in ``inter.worker.verification.algorithms``, 400; no session key yet, 503; a
signature that does not match, 403.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

__all__ = ["ALGORITHM_HEADER", "CONNECTD_SIGNATURE_HEADER", "SIGNATURE_HEADER", "Refusal", "SessionKey",
           "new_session_key", "sign", "sign_body", "verify"]

SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
CONNECTD_SIGNATURE_HEADER = "X-Connectd-Request-Signature"

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


def _hmac(key: SessionKey, algorithm: str, payload: bytes) -> str:
    return base64.b64encode(hmac.new(key.key, payload, _DIGESTS[algorithm]).digest()).decode()


def sign_body(key: SessionKey, algorithm: str, body: bytes) -> str:
    """Kafka Connect's signature of a request: the base64 HMAC of its body, for :data:`SIGNATURE_HEADER`."""
    return _hmac(key, algorithm, body)


def sign(key: SessionKey, algorithm: str, method: str, path_qs: str, body: bytes) -> str:
    """connectd's signature of a request (method, path with query, body), for :data:`CONNECTD_SIGNATURE_HEADER`."""
    return _hmac(key, algorithm, _payload(method, path_qs, body))


@dataclass(frozen=True)
class Refusal:
    """Why a request between workers is refused, and the HTTP status Kafka Connect answers it with."""

    status: int
    message: str


def verify(keys: list[SessionKey], accepted: list[str], algorithm: str | None, signature: str | None,
           body: bytes, method: str | None = None, path_qs: str | None = None) -> Refusal | None:
    """``None`` when the request is signed by one of *keys*; otherwise why it is refused.

    With *method* and *path_qs*, *signature* is connectd's (:func:`sign`); without, Kafka's (:func:`sign_body`).
    """
    if not signature or not algorithm:
        return Refusal(400, "Internal request missing required signature")
    if algorithm not in accepted or algorithm not in _DIGESTS:
        return Refusal(400, f"This worker does not support the '{algorithm}' signature algorithm used by other "
                            "workers (inter.worker.verification.algorithms)")
    if not keys:
        return Refusal(503, "Internal request cannot be verified until this worker has read the session key")
    for key in keys:
        expected = sign_body(key, algorithm, body) if method is None else sign(key, algorithm, method, path_qs or "",
                                                                                body)
        if hmac.compare_digest(expected, signature):
            return None
    return Refusal(403, "Internal request contained invalid signature.")
