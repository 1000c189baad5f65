"""Every failure answered as Kafka Connect does: ``{"error_code": <status>, "message": "…"}``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from connectd.errors import (
    BadRequestError,
    ConfigError,
    ConnectorError,
    KafkaUnavailableError,
    NotFoundError,
    RebalanceInProgressError,
)
from connectd.logging import get_logger
from connectd.secrets import redact

__all__ = ["RestError", "error_middleware", "error_response"]

log = get_logger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RestError(Exception):
    """Answer the request with *status* and *message* as a JSON error body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str) -> web.Response:
    # A message may quote a config value or a client library's error: no resolved secret in it.
    return web.json_response({"error_code": status, "message": redact(message)}, status=status)


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except RestError as exc:
        return error_response(exc.status, exc.message)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        # aiohttp's own answers (no route, wrong method): same body as Kafka's Jersey ones.
        response = error_response(exc.status, f"HTTP {exc.status} {exc.reason}")
        if exc.status == 405 and "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
        return response
    except ConfigError as exc:
        return error_response(400, _config_message(exc))
    except NotFoundError as exc:
        return error_response(404, _capitalised(str(exc)))
    except BadRequestError as exc:  # written as shown: it may start with a field's name
        return error_response(400, str(exc))
    except KafkaUnavailableError as exc:  # as Kafka Connect: 500, saying which cluster did not answer
        return error_response(500, _capitalised(str(exc)))
    except RebalanceInProgressError as exc:  # Kafka's 409: the cluster is rebalancing, or the work unassigned
        return error_response(409, _capitalised(str(exc)))
    except ConnectorError as exc:
        # Kafka Connect answers a ConnectException with 500 and its message: the leader unreachable,
        # offsets that could not be read or written, a connector's own failure.
        return error_response(500, _capitalised(str(exc)))
    except Exception:
        # The trace can hold config values (and so secrets): it goes to the log only.
        log.exception("rest_request_failed", method=request.method, path=request.path)
        return error_response(500, "Internal server error; see the worker's log")


# Kafka Connect ends an invalid config's message so, pointing at where each key's errors are listed.
_VALIDATE_HINT = "You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"


def _config_message(exc: ConfigError) -> str:
    problems = [str(p) for p in exc.problems]
    count = len(problems)
    head = f"Connector configuration is invalid and contains the following {count} error(s):"
    return "\n".join([head, *problems, _VALIDATE_HINT])


def _capitalised(message: str) -> str:
    return message[:1].upper() + message[1:]
