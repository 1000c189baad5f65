"""Requests a follower cannot answer itself: forwarded to the cluster's leader.

The herder raises :class:`~connectd.errors.NotLeaderError` for a write
that only the leader may make; this middleware sends the request on to the
leader (:func:`connectd.cluster.forwarding.forward`) and returns the
leader's answer as it is. It also refuses a request between workers that
is not signed with the cluster's session key, with Kafka Connect's status
(400 unsigned, 403 a wrong signature, 503 no key yet). A standalone herder never raises NotLeaderError and has no session
key, so on a standalone worker this middleware passes every request through.
"""

from __future__ import annotations

from aiohttp import web

from connectd.cluster.forwarding import FORWARDED_HEADER, check_signature, forward
from connectd.errors import NotLeaderError
from connectd.rest._keys import HERDER
from connectd.rest.error_responses import Handler, RestError

__all__ = ["forwarding_middleware"]

REBALANCING = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"


@web.middleware
async def forwarding_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    herder = request.app[HERDER]
    if herder is None:
        return await handler(request)
    body = await request.read() if request.can_read_body else b""
    refused = check_signature(herder, request.method, request.path, request.path_qs, body, request.headers)
    if refused is not None:
        raise RestError(refused.status, refused.message)
    try:
        return await handler(request)
    except NotLeaderError as exc:
        if exc.leader_url is None:
            raise RestError(409, f"{REBALANCING}: no leader is known yet") from exc
        if FORWARDED_HEADER in request.headers:  # the leader moved while the request was on its way
            raise RestError(409, f"{REBALANCING}: this worker is no longer the leader") from exc
        if _forwarding_refused(request):
            raise RestError(409, f"{REBALANCING}: this worker is not the leader, and the request "
                                 "asks not to be forwarded (forward=false)") from exc
        answer = await forward(herder, exc.leader_url, request.method, request.path_qs, body, request.headers)
        return web.Response(status=answer.status, body=answer.body, headers=dict(answer.headers))


def _forwarding_refused(request: web.Request) -> bool:
    """Kafka Connect's hidden ``?forward=false``: a worker that is not the leader answers 409
    rather than forward the request (Kafka's workers set it on the request's second hop)."""
    return request.query.get("forward", "").strip().lower() == "false"
