"""A client of a worker's REST API, behind the ``connectd connectors …`` verbs.

Plain :mod:`urllib`: a command-line call makes one request, and needs no
event loop. Every method returns the answer's JSON (``None`` for an empty
answer) or raises :class:`RestClientError` with the server's message.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from connectd.errors import ConfigError, ConnectdError

__all__ = ["DEFAULT_URL", "Client", "RestClientError"]

DEFAULT_URL = "http://localhost:8083"


class RestClientError(ConnectdError):
    """The worker answered with an error, or could not be reached.

    :param message: the server's message, or what went wrong on the way.
    :param status: the HTTP status; ``None`` when there was no answer.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Client:
    """Kafka Connect's REST API at *url*.

    :param url: the worker, ``http://host:port`` or ``https://host:port``.
    :param user: with *password*, sent as HTTP Basic credentials.
    :param password: the user's password.
    :param insecure: for https, accept any certificate and host name.
    :param cacert: for https, a PEM file of the certificate authorities to trust
        (the system's by default).
    :param timeout: seconds to wait for each answer.
    :raises ConfigError: when *cacert* cannot be loaded.
    """

    def __init__(self, url: str = DEFAULT_URL, *, user: str | None = None, password: str | None = None,
                 insecure: bool = False, cacert: str | None = None, timeout: float = 60.0) -> None:
        parsed = urllib.parse.urlsplit(url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise RestClientError(f"URL {url!r}: expected http://host:port or https://host:port")
        self.url = url.strip().rstrip("/")
        self.timeout = timeout
        self._headers = {"Accept": "application/json"}
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"
        context = None
        if parsed.scheme == "https":
            try:
                context = ssl.create_default_context(cafile=cacert)
            except (OSError, ssl.SSLError) as exc:
                reason = getattr(exc, "strerror", None) or exc
                raise ConfigError([f"{cacert}: cannot load the CA certificates: {reason}"]) from exc
            if insecure:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        self._opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))

    # --- the API ---

    def connectors(self, expand: Sequence[str] = ()) -> Any:
        """Names; with *expand* (``status``, ``info``) a map name → ``{status, info}``."""
        return self.request("GET", "/connectors", query=[("expand", e) for e in expand])

    def create(self, body: Mapping[str, Any]) -> Any:
        """``POST /connectors`` with ``{"name", "config", "initial_state"?}``; the new connector's info."""
        return self.request("POST", "/connectors", body=body)

    def delete(self, name: str) -> None:
        self.request("DELETE", _connector(name))

    def status(self, name: str) -> Any:
        return self.request("GET", _connector(name, "status"))

    def pause(self, name: str) -> None:
        self.request("PUT", _connector(name, "pause"))

    def resume(self, name: str) -> None:
        self.request("PUT", _connector(name, "resume"))

    def stop(self, name: str) -> None:
        self.request("PUT", _connector(name, "stop"))

    def restart(self, name: str, *, include_tasks: bool = False, only_failed: bool = False) -> Any:
        """The status after the restart, or ``None`` when only the connector restarted."""
        query = [("includeTasks", _flag(include_tasks)), ("onlyFailed", _flag(only_failed))]
        return self.request("POST", _connector(name, "restart"), query=query)

    def offsets(self, name: str) -> Any:
        return self.request("GET", _connector(name, "offsets"))

    def alter_offsets(self, name: str, body: Mapping[str, Any]) -> Any:
        """``PATCH`` with ``{"offsets": [{"partition", "offset"}, …]}``; the connector must be STOPPED."""
        return self.request("PATCH", _connector(name, "offsets"), body=body)

    def reset_offsets(self, name: str) -> Any:
        """Forget every offset of a STOPPED connector."""
        return self.request("DELETE", _connector(name, "offsets"))

    def text(self, path: str) -> str:
        """A plain-text answer (``/metrics``).

        :raises RestClientError: for an error answer or no answer.
        """
        request = urllib.request.Request(self.url + path, headers={**self._headers, "Accept": "text/plain"})
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return response.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            with exc:
                raw = exc.read()
            raise RestClientError(_error_message(exc.code, exc.reason, raw), exc.code) from None
        except (urllib.error.URLError, TimeoutError, http.client.HTTPException, ConnectionError) as exc:
            raise RestClientError(f"cannot read {self.url}{path}: {_reason(getattr(exc, 'reason', exc))}") from None

    # --- plumbing ---

    def request(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: Any = None) -> Any:
        """One request; the answer's JSON, or ``None`` when it has no body.

        :raises RestClientError: for an error answer (with the server's message) or no answer.
        """
        url = self.url + path + (f"?{urllib.parse.urlencode(list(query))}" if query else "")
        headers = dict(self._headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            with exc:
                raw = exc.read()
            raise RestClientError(_error_message(exc.code, exc.reason, raw), exc.code) from None
        except urllib.error.URLError as exc:
            raise RestClientError(f"cannot reach the connectd REST API at {self.url}: {_reason(exc.reason)}") from None
        except (TimeoutError, http.client.HTTPException, ConnectionError) as exc:
            raise RestClientError(f"no answer from the connectd REST API at {self.url}: "
                                  f"{_reason(exc)}") from None
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise RestClientError(f"{method} {url}: the answer is not JSON: {_snippet(raw)}") from None


def _connector(name: str, *rest: str) -> str:
    return "/".join(["/connectors", urllib.parse.quote(name, safe=""), *rest])


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _error_message(status: int, reason: str, raw: bytes) -> str:
    try:
        message = json.loads(raw)["message"]
    except (ValueError, KeyError, TypeError):
        message = _snippet(raw) or reason
    return f"HTTP {status}: {message}"


def _reason(reason: object) -> str:
    if isinstance(reason, ssl.SSLCertVerificationError):
        return f"{reason.verify_message or reason} (trust its CA with --cacert, or skip the check with --insecure)"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    if isinstance(reason, TimeoutError) or isinstance(reason, str) and reason == "timed out":
        return "timed out"
    return str(reason) or type(reason).__name__


def _snippet(raw: bytes, limit: int = 200) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "…"
