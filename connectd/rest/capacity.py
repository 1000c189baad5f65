"""``/capacity``: the cluster's capacity policy, in MSK Connect's JSON, and what the leader decided.

``GET`` answers the policy in force (stored by ``PUT``, else the worker keys
``capacity.*``); ``PUT`` stores one in the config topic (the leader writes
it: a follower forwards the request), ``DELETE`` removes it, and
``GET /capacity/status`` shows the policy, the desired and current worker
counts, the last decision with its reason and each worker's last report. A
standalone worker has no cluster to size: 404 (docs/capacity.md).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from connectd.capacity.policy import CapacityPolicy, PolicyError
from connectd.rest._keys import HERDER
from connectd.rest.connectors import read_json
from connectd.rest.error_responses import RestError

__all__ = ["add_routes"]


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/capacity", _get)
    router.add_put("/capacity", _put)
    router.add_delete("/capacity", _delete)
    router.add_get("/capacity/status", _status)


def _cluster(request: web.Request) -> Any:
    herder = request.app[HERDER]
    if getattr(herder, "capacity", None) is None:
        raise RestError(404, "This worker runs standalone: capacity is a Connect cluster's (distributed mode).")
    return herder


async def _get(request: web.Request) -> web.Response:
    policy, _ = _cluster(request).capacity.policy()
    if policy is None:
        raise RestError(404, "The cluster has no capacity policy: PUT /capacity, or set capacity.mode in the "
                             "workers' config.")
    return web.json_response(policy.to_json())


async def _put(request: web.Request) -> web.Response:
    herder = _cluster(request)
    body = await read_json(request)
    try:
        policy = CapacityPolicy.from_json(body, window_s=herder.worker.get("capacity.evaluation.window.ms") / 1000,
                                          cooldown_s=herder.worker.get("capacity.cooldown.ms") / 1000)
    except PolicyError as exc:
        raise RestError(400, f"Invalid capacity: {exc}") from None
    # Stored as given: fields it leaves out take each worker's capacity.* defaults.
    await herder.put_capacity_policy(body)
    return web.json_response(policy.to_json())


async def _delete(request: web.Request) -> web.Response:
    await _cluster(request).put_capacity_policy(None)
    return web.Response(status=204)


async def _status(request: web.Request) -> web.Response:
    return web.json_response(_cluster(request).capacity.view())
