"""``response.http.headers.config``: the middleware that adds its headers to every REST response.

The value's syntax and parser live in :mod:`connectd.config.response_headers`
(the worker config validates the key with the same parser).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from connectd.config.definitions import ConfigProblem, display_value
from connectd.config.response_headers import KEY, HeaderAction, parse_header_config
from connectd.errors import ConfigError

if TYPE_CHECKING:
    from connectd.config.worker import WorkerConfig

__all__ = ["response_headers_middleware"]

Handler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]
Middleware = Callable[["web.Request", Handler], Awaitable["web.StreamResponse"]]


def response_headers_middleware(config: WorkerConfig) -> Middleware | None:
    """The headers of ``response.http.headers.config`` on every response, errors included; ``None`` if unset.

    :raises ConfigError: naming the file, line, key and the malformed entry.
    """
    text = config.get(KEY) or ""  # the key's validator parses it too: config.get raises first
    try:
        actions = parse_header_config(text)
    except ValueError as exc:
        problem = ConfigProblem(config.origin(KEY), KEY, str(exc), display_value(KEY, config.raw(KEY)))
        raise ConfigError([problem]) from None
    if not actions:
        return None

    @web.middleware
    async def response_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            response = await handler(request)
        except web.HTTPException as exc:  # redirects pass through the error middleware as exceptions
            _apply(actions, exc.headers)
            raise
        if not response.prepared:
            _apply(actions, response.headers)
        return response

    return response_headers


def _apply(actions: list[HeaderAction], headers: Any) -> None:
    now = time.time()
    for action in actions:
        action.apply(headers, now)
