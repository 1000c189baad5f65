"""Kafka Connect's REST API over a herder, served with aiohttp, and a client of it.

One module per resource group: :mod:`.connectors` (``/connectors``),
:mod:`.plugins` (``/connector-plugins``), :mod:`.loggers`
(``/admin/loggers``), :mod:`.openapi` (``/openapi.json``, describing them
all); :mod:`.app` builds the application and serves it,
:mod:`.errors` turns every failure into Kafka's JSON error body,
:mod:`.security` adds TLS, Basic authentication and CORS as the worker config asks,
:mod:`.headers` the headers of ``response.http.headers.config``.
:mod:`.client` is the other side: the client behind ``connectd connectors …``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectd.rest.app import Listener, RestServer, create_admin_app, create_app

__all__ = ["Listener", "RestServer", "create_admin_app", "create_app"]


def __getattr__(name: str) -> Any:
    # The server's names load aiohttp; `connectd connectors …` imports only
    # connectd.rest.client, and should not pay for the server.
    if name in __all__:
        from connectd.rest import app  # lazy: see above

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
