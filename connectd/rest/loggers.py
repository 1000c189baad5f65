"""``/admin/loggers``: read and change log levels while the worker runs."""

from __future__ import annotations

from aiohttp import web

from connectd.errors import ConfigError
from connectd.logging import check_level, get_level, get_levels, set_level
from connectd.rest._keys import HERDER
from connectd.rest.connectors import read_json
from connectd.rest.error_responses import RestError

__all__ = ["add_routes"]

_SCOPES = ("worker", "cluster")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/admin/loggers", _list)
    router.add_get("/admin/loggers/{logger}", _get)
    router.add_put("/admin/loggers/{logger}", _put)


async def _list(request: web.Request) -> web.Response:
    return web.json_response(get_levels())


async def _get(request: web.Request) -> web.Response:
    name = request.match_info["logger"]
    level = get_level(name)
    if level is None:
        raise RestError(404, f"Logger {name} not found.")
    return web.json_response({"level": level, "last_modified": get_levels().get(name, {}).get("last_modified")})


async def _put(request: web.Request) -> web.Response:
    name = request.match_info["logger"]
    # As Kafka: an absent or empty scope is the default, worker.
    scope = request.query.get("scope", "").strip().lower() or "worker"
    if scope not in _SCOPES:
        raise RestError(400, f"scope must be one of {', '.join(_SCOPES)}, not {request.query['scope']!r}")
    body = await read_json(request)
    given = body.get("level") if isinstance(body, dict) else None
    if given is None:
        raise RestError(400, "Desired 'level' parameter was not specified in request.")
    level = str(given).strip().upper()
    try:
        check_level(level, f"logger {name!r}")
    except ConfigError as exc:
        # Kafka answers a level it does not know with 404, not 400.
        expected = str(exc).rpartition("; ")[2]
        raise RestError(404, f"invalid log level '{given}'; {expected}") from None
    herder = request.app.get(HERDER)
    if scope == "cluster" and hasattr(herder, "put_logger_level"):
        # Every worker applies it when it reads it from the config topic, this one included.
        await herder.put_logger_level(name, level)
        return web.Response(status=204)
    # A standalone worker is the whole cluster: scope=cluster changes this worker.
    return web.json_response(set_level(name, level))
