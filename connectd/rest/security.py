"""Security of the REST API: TLS listeners, HTTP Basic authentication, CORS.

Each is off until the worker config asks for it:

- every ``https://`` entry of ``listeners`` is served with the
  :class:`ssl.SSLContext` of :func:`connectd.config.tls.server_ssl_context`, built from the
  ``listeners.https.ssl.*`` keys or, when no ``listeners.https.`` key is set
  at all, from the worker's own ``ssl.*`` keys (Kafka Connect's
  all-or-nothing rule); the ``https://`` entries of ``admin.listeners``
  (:func:`admin_listeners`) likewise from ``admin.listeners.https.ssl.*``;
- ``rest.extension.classes`` naming Kafka's ``BasicAuthSecurityRestExtension``
  turns on :func:`basic_auth_middleware`, with the users of
  ``rest.basic.auth.credentials.file`` (or of the file a JAAS file's
  ``PropertyFileLoginModule`` names), read once at start;
- ``access.control.allow.origin`` turns on :func:`cors_middleware`, which
  answers as Jetty's ``CrossOriginFilter`` does for Kafka Connect;
- ``response.http.headers.config`` adds headers to every response
  (:mod:`connectd.rest.headers`).

Passwords — of key stores, keys and users — may be ``${provider:…}``
placeholders; they are resolved through the worker's config providers, which
register them for redaction, and no message or log line ever quotes one.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from secrets import token_bytes
from typing import TYPE_CHECKING

from aiohttp import hdrs, web

from connectd.config.clients import parse_jaas
from connectd.config.definitions import ConfigProblem
from connectd.config.properties import load_properties
from connectd.config.providers import has_placeholder
from connectd.config.tls import server_ssl_context
from connectd.config.worker_keys import BASIC_AUTH_EXTENSIONS
from connectd.errors import ConfigError
from connectd.logging import get_logger
from connectd.rest.app import Listener
from connectd.rest.error_responses import error_response
from connectd.rest.headers import response_headers_middleware
from connectd.secrets import Secret

if TYPE_CHECKING:
    from connectd.config.worker import WorkerConfig

__all__ = [
    "PUBLIC_PATHS",
    "admin_listeners",
    "basic_auth_middleware",
    "cors_middleware",
    "load_credentials",
    "rest_listeners",
    "rest_middlewares",
    "server_ssl_context",
]

log = get_logger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Middleware = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]


def rest_listeners(config: WorkerConfig) -> list[Listener]:
    """Every entry of ``listeners``, the https ones with their TLS context (one context for all).

    :raises ConfigError: if a listener is malformed or the TLS settings are wrong.
    """
    return _listeners(config, "listeners")


def admin_listeners(config: WorkerConfig) -> list[Listener] | None:
    """Every entry of ``admin.listeners`` (KIP-495), as :func:`rest_listeners` does for ``listeners``.

    https ones take their TLS settings from ``admin.listeners.https.ssl.*``, or
    from the worker's ``ssl.*`` keys when no ``admin.listeners.https.`` key is set.

    :returns: ``None`` when unset (the /admin endpoints are served on
        ``listeners``); empty when set empty (they are not served at all).
    :raises ConfigError: if a listener is malformed or the TLS settings are wrong.
    """
    if config.get("admin.listeners") is None:
        return None
    return _listeners(config, "admin.listeners")


def _listeners(config: WorkerConfig, key: str) -> list[Listener]:
    listeners = [Listener.parse(text) for text in config.get(key)]
    if any(listener.scheme == "https" for listener in listeners):
        context = server_ssl_context(config, listeners_key=key)
        listeners = [Listener(lst.scheme, lst.host, lst.port, context if lst.scheme == "https" else None)
                     for lst in listeners]
    return listeners


def rest_middlewares(config: WorkerConfig) -> list[Middleware]:
    """The configured response headers (outermost, so that every answer carries them), CORS (so that
    refusals carry its headers too) and Basic authentication, as configured.

    :raises ConfigError: if the credentials cannot be read or the response headers are malformed.
    """
    middlewares: list[Middleware] = []
    headers = response_headers_middleware(config)
    if headers is not None:
        middlewares.append(headers)
    origins = (config.get("access.control.allow.origin") or "").strip()
    if origins:
        middlewares.append(cors_middleware(origins, config.get("access.control.allow.methods") or ""))
    credentials = load_credentials(config)
    if credentials is not None:
        middlewares.append(basic_auth_middleware(credentials))
    return middlewares


# --- HTTP Basic authentication -------------------------------------------------

#: Answered without credentials: load balancers and orchestrators probe it, and it tells nothing.
PUBLIC_PATHS = frozenset({"/health"})

_REALM = "connectd"
_UNAUTHORIZED = "User cannot access the resource."  # Kafka's BasicAuthSecurityRestExtension's words


def load_credentials(config: WorkerConfig) -> dict[str, Secret] | None:
    """The users and passwords Basic authentication accepts, or ``None`` when it is off.

    :raises ConfigError: if the files cannot be read, a placeholder does not
        resolve, or a user has no password (naming file and line).
    """
    extensions = config.get("rest.extension.classes") or []
    if not any(name in BASIC_AUTH_EXTENSIONS for name in extensions):
        for key in ("rest.basic.auth.credentials.file", "rest.basic.auth.jaas.file"):
            if config.raw(key):
                raise ConfigError([ConfigProblem(config.origin(key), key, "is set but rest.extension.classes does not "
                                                 "list BasicAuthSecurityRestExtension")])
        return None
    path = config.get("rest.basic.auth.credentials.file")
    jaas = config.get("rest.basic.auth.jaas.file")
    if path and jaas:
        raise ConfigError([ConfigProblem(config.origin("rest.basic.auth.jaas.file"), "rest.basic.auth.jaas.file",
                                         "set rest.basic.auth.credentials.file or rest.basic.auth.jaas.file, not both")])
    if jaas:
        path = _jaas_credentials_file(config, jaas)
    elif not path:
        raise ConfigError([ConfigProblem(config.origin("rest.extension.classes"), "rest.extension.classes",
                                         "BasicAuthSecurityRestExtension needs rest.basic.auth.credentials.file "
                                         "(or rest.basic.auth.jaas.file) to name the users and their passwords")])
    key = "rest.basic.auth.jaas.file" if jaas else "rest.basic.auth.credentials.file"
    if not Path(path).is_file():
        raise ConfigError([f"{config.origin(key)}: {key}: {path}: no such file"])
    properties = load_properties(path)
    users: dict[str, Secret] = {}
    problems: list[str] = []
    for user in properties:
        written = properties[user]
        try:
            password = config.providers.resolve(written) if has_placeholder(written) else written
        except ConfigError as exc:
            problems.extend(f"{properties.origin(user)}: user {user}: {p}" for p in exc.problems)
            continue
        if not password:
            problems.append(f"{properties.origin(user)}: user {user} has an empty password")
            continue
        users[user] = Secret(password)
    if not properties:
        problems.append(f"{path}: lists no users (expected user=password lines)")
    if problems:
        raise ConfigError(problems)
    log.info("rest_basic_auth_enabled", credentials_file=str(path), users=len(users))
    return users


_JAAS_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*|#[^\n]*", re.DOTALL)
_JAAS_ENTRY = re.compile(r"([\w.-]+)\s*\{(.*?)\}\s*;", re.DOTALL)
_JAAS_MODULE = re.compile(r"([\w.$]+)\s+(?:required|requisite|sufficient|optional)\b(.*?);", re.DOTALL)


def _jaas_credentials_file(config: WorkerConfig, jaas: str) -> str:
    """The ``file=`` option of the ``PropertyFileLoginModule`` in the ``KafkaConnect`` entry of a JAAS file."""
    where = f"{config.origin('rest.basic.auth.jaas.file')}: rest.basic.auth.jaas.file: {jaas}"
    try:
        text = Path(jaas).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{where}: cannot read the file: {exc.strerror or exc}"]) from None
    entries = {name: body for name, body in _JAAS_ENTRY.findall(_JAAS_COMMENTS.sub("", text))}
    if "KafkaConnect" not in entries:
        raise ConfigError([f"{where}: has no KafkaConnect {{ … }}; entry"])
    for module, options in _JAAS_MODULE.findall(entries["KafkaConnect"]):
        if module.rsplit(".", 1)[-1] == "PropertyFileLoginModule":
            file = parse_jaas(options).get("file")
            if not file:
                raise ConfigError([f"{where}: PropertyFileLoginModule has no file= option"])
            return file
    known = "PropertyFileLoginModule, the only login module connectd knows"
    raise ConfigError([f"{where}: the KafkaConnect entry has no {known}"])


def basic_auth_middleware(credentials: Mapping[str, Secret | str], *, realm: str = _REALM) -> Middleware:
    """Answer 401 to requests without a valid ``Authorization: Basic`` header.

    ``GET /health`` is answered without credentials (:data:`PUBLIC_PATHS`).
    Neither the header nor a password is ever logged.

    :param credentials: user → password.
    """
    users = {user: (p.value() if isinstance(p, Secret) else p).encode("utf-8") for user, p in credentials.items()}
    # Unknown users are compared against this, so that they take as long as known ones.
    decoy = token_bytes(32)
    challenge = f'Basic realm="{realm}", charset="UTF-8"'

    @web.middleware
    async def basic_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in ("GET", "HEAD") and request.path in PUBLIC_PATHS:
            return await handler(request)
        user, password = _basic_credentials(request.headers.get(hdrs.AUTHORIZATION))
        expected = users.get(user) if user is not None else None
        matches = hmac.compare_digest(password or b"", expected if expected is not None else decoy)
        if expected is None or not matches:
            # Debug, as Kafka does: a mistyped password is not worth a log line each time.
            log.debug("rest_authentication_failed", method=request.method, path=request.path, remote=request.remote,
                      reason="no credentials" if user is None else "unknown user" if expected is None else "wrong password")
            response = error_response(401, _UNAUTHORIZED)
            response.headers[hdrs.WWW_AUTHENTICATE] = challenge
            return response
        return await handler(request)

    return basic_auth


def _basic_credentials(header: str | None) -> tuple[str | None, bytes | None]:
    if not header:
        return None, None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None, None
    try:
        decoded = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None, None
    user, colon, password = decoded.partition(b":")
    if not colon or not user:
        return None, None
    try:
        return user.decode("utf-8"), password
    except UnicodeDecodeError:
        return None, None


# --- CORS --------------------------------------------------------------------

# Jetty CrossOriginFilter's defaults, which Kafka Connect keeps, plus
# Authorization so that a browser may send Basic credentials.
_ALLOWED_HEADERS = ("X-Requested-With", "Content-Type", "Accept", "Origin", "Authorization")
_DEFAULT_METHODS = ("GET", "POST", "HEAD")
_PREFLIGHT_MAX_AGE = "1800"


def cors_middleware(allow_origin: str, allow_methods: str = "") -> Middleware:
    """Cross-origin requests as Kafka Connect's ``access.control.allow.*`` settings allow them.

    A preflight (``OPTIONS`` with ``Access-Control-Request-Method``) from an
    allowed origin for an allowed method is answered 200 with the
    ``Access-Control-Allow-*`` headers, before authentication (browsers send
    no credentials with it); from any other origin, or for another method or
    header, 403. Other requests from an allowed origin get
    ``Access-Control-Allow-Origin``; from other origins they are served
    without it, so the browser hides the answer.

    :param allow_origin: origins, comma-separated; ``*`` in one matches any
        characters; ``*`` alone allows every origin, without credentials.
    :param allow_methods: methods, comma-separated; empty means GET, POST, HEAD.
    """
    patterns = [item.strip() for item in allow_origin.split(",") if item.strip()]
    any_origin = "*" in patterns
    matchers = [re.compile(".*".join(re.escape(part) for part in p.lower().split("*"))) for p in patterns]
    methods = tuple(m.strip().upper() for m in allow_methods.split(",") if m.strip()) or _DEFAULT_METHODS
    allowed_headers = {h.lower() for h in _ALLOWED_HEADERS}

    def allows(origin: str) -> bool:
        return any_origin or any(m.fullmatch(origin.lower()) for m in matchers)

    def origin_headers(origin: str) -> dict[str, str]:
        if any_origin:
            # Echoing any origin with credentials allowed would let every web
            # page use a browser's cached Basic credentials: "*" never does.
            return {"Access-Control-Allow-Origin": "*"}
        return {"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Credentials": "true", "Vary": "Origin"}

    @web.middleware
    async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is None:
            return await handler(request)
        method = request.headers.get(hdrs.ACCESS_CONTROL_REQUEST_METHOD)
        if request.method == "OPTIONS" and method is not None:
            requested = [h.strip() for h in request.headers.get(hdrs.ACCESS_CONTROL_REQUEST_HEADERS, "").split(",") if h.strip()]
            if not allows(origin):
                return error_response(403, "Cross-origin requests from this origin are not allowed")
            if method.upper() not in methods:
                return error_response(403, f"Cross-origin {method} requests are not allowed")
            if any(h.lower() not in allowed_headers for h in requested):
                return error_response(403, "Cross-origin requests with these headers are not allowed")
            return web.Response(status=200, headers={
                **origin_headers(origin),
                "Access-Control-Allow-Methods": ",".join(methods),
                "Access-Control-Allow-Headers": ",".join(_ALLOWED_HEADERS),
                "Access-Control-Max-Age": _PREFLIGHT_MAX_AGE,
            })
        if not allows(origin):
            return await handler(request)
        try:
            response = await handler(request)
        except web.HTTPException as exc:  # redirects pass through the error middleware as exceptions
            exc.headers.update(origin_headers(origin))
            raise
        if not response.prepared:
            for name, value in origin_headers(origin).items():
                if name == "Vary":
                    response.headers.add(name, value)
                else:
                    response.headers[name] = value
        return response

    return cors
