"""Requests between workers: a follower's REST writes forwarded to the leader, task configs to the leader.

A forwarded request is the user's request as it came — method, path with
query, body, ``Content-Type`` and the user's ``Authorization`` — sent on to
the leader's advertised REST URL, with :data:`FORWARDED_HEADER` naming the
worker that forwarded it and, while the group runs ``sessioned``, HMAC
signatures made with the cluster's session key, Kafka Connect's and
connectd's (:mod:`connectd.cluster.signing`). The leader's answer goes back to the
user unchanged. A worker that receives a forwarded request and is not the
leader (leadership moved meanwhile) does not forward it again: it answers
409 and the user retries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from connectd.cluster.signing import (
    ALGORITHM_HEADER,
    CONNECTD_SIGNATURE_HEADER,
    SIGNATURE_HEADER,
    Refusal,
    SessionKey,
    sign,
    sign_body,
    verify,
)
from connectd.errors import ConnectorError, NotLeaderError
from connectd.logging import get_logger

__all__ = ["FORWARDED_HEADER", "Forwarded", "check_signature", "forward", "request_fencing", "send_task_configs"]

log = get_logger(__name__)

FORWARDED_HEADER = "X-Connectd-Forwarded-By"
_TIMEOUT_S = 60.0
_PASSED_HEADERS = ("Content-Type", "Authorization", "Accept")


@dataclass(frozen=True)
class Forwarded:
    """The leader's answer to a forwarded request."""

    status: int
    body: bytes
    headers: Mapping[str, str]


def _signing(herder: Any) -> tuple[SessionKey | None, str]:
    keys = herder.session_keys() if hasattr(herder, "session_keys") else []
    algorithm = str(herder.worker.get("inter.worker.signature.algorithm"))
    return (keys[0] if keys else None), algorithm


def _sessioned(herder: Any) -> bool:
    """Requests between workers are signed and checked now (the group runs ``sessioned``)."""
    return bool(getattr(herder, "signs_requests", False))


async def forward(herder: Any, url: str, method: str, path_qs: str, body: bytes,
                  headers: Mapping[str, str]) -> Forwarded:
    """Send a request on to *url* (another worker's REST base URL) and return its answer.

    :raises ConnectorError: when that worker cannot be reached.
    """
    sent = {name: headers[name] for name in _PASSED_HEADERS if name in headers}
    sent[FORWARDED_HEADER] = herder.worker_id
    if _sessioned(herder):
        key, algorithm = _signing(herder)
        if key is not None:  # Kafka's signature, and connectd's beside it
            sent[SIGNATURE_HEADER] = sign_body(key, algorithm, body)
            sent[ALGORITHM_HEADER] = algorithm
            sent[CONNECTD_SIGNATURE_HEADER] = sign(key, algorithm, method, path_qs, body)
    target = url.rstrip("/") + path_qs
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=_TIMEOUT_S)) as session:
            async with session.request(method, target, data=body or None, headers=sent) as response:
                answer = await response.read()
                kept = {k: v for k, v in response.headers.items() if k in ("Content-Type", "Location")}
                return Forwarded(response.status, answer, kept)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ConnectorError(f"could not forward the request to the leader at {url}: "
                             f"{type(exc).__name__}: {exc}", retriable=True) from exc


#: Kafka Connect's internal endpoints: a request to them is always a worker's, and must be signed.
_INTERNAL = re.compile(r"^/connectors/[^/]+/(?:tasks|fence)$")


def check_signature(herder: Any, method: str, path: str, path_qs: str, body: bytes,
                    headers: Mapping[str, str]) -> Refusal | None:
    """Why a request between workers is refused, or ``None`` if it may pass (checked while the group
    runs ``sessioned``, as Kafka checks them only then).

    A request to an internal endpoint (``POST /connectors/{c}/tasks``, ``PUT /connectors/{c}/fence``)
    must carry Kafka's signature, as Kafka Connect's workers require it of each other. A user's
    request forwarded by a connectd worker must carry connectd's. Other requests are users' and pass.
    """
    internal = method in ("POST", "PUT") and _INTERNAL.match(path) is not None
    forwarded = FORWARDED_HEADER in headers
    if not (internal or forwarded) or not hasattr(herder, "session_keys") or not _sessioned(herder):
        return None
    accepted = [str(a) for a in herder.worker.get("inter.worker.verification.algorithms")]
    keys, algorithm = herder.session_keys(), headers.get(ALGORITHM_HEADER)
    if internal:
        refused = verify(keys, accepted, algorithm, headers.get(SIGNATURE_HEADER), body)
        if refused is not None or not forwarded:
            return refused
    return verify(keys, accepted, algorithm, headers.get(CONNECTD_SIGNATURE_HEADER), body, method, path_qs)


async def send_task_configs(herder: Any, connector: str, configs: list[dict[str, str]]) -> None:
    """Give the leader a connector's new task configs (Kafka's internal ``POST /connectors/{c}/tasks``)."""
    await _internal(herder, "POST", connector, "tasks", json.dumps(configs).encode(), "the task configs of")


async def request_fencing(herder: Any, connector: str) -> None:
    """Ask the leader for a round of zombie fencing of *connector*'s exactly-once source tasks (Kafka's
    internal ``PUT /connectors/{c}/fence``, no body); returns once it is done."""
    await _internal(herder, "PUT", connector, "fence", b"", "a round of zombie fencing of")


async def _internal(herder: Any, method: str, connector: str, endpoint: str, body: bytes, what: str) -> None:
    url = herder.leader_url
    if url is None:
        raise NotLeaderError(f"no leader is known to take {what} {connector}", None)
    answer = await forward(herder, url, method, f"/connectors/{quote(connector, safe='')}/{endpoint}", body,
                           {"Content-Type": "application/json"} if body else {})
    if answer.status >= 300:
        raise ConnectorError(f"the leader at {url} refused {what} {connector}: "
                             f"{answer.status} {answer.body[:300].decode(errors='replace')}", retriable=True)
