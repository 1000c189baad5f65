"""Kafka Connect's REST API over a herder, served with aiohttp.

One module per resource group: :mod:`.connectors` (``/connectors``),
:mod:`.plugins` (``/connector-plugins``), :mod:`.loggers`
(``/admin/loggers``), :mod:`.openapi` (``/openapi.json``, describing them
all); :mod:`.app` builds the application and serves it,
:mod:`.errors` turns every failure into Kafka's JSON error body,
:mod:`.security` adds TLS, Basic authentication and CORS as the worker config asks,
:mod:`.headers` the headers of ``response.http.headers.config``.
"""

from __future__ import annotations

from connectd.rest.app import Listener, RestServer, create_admin_app, create_app

__all__ = ["Listener", "RestServer", "create_admin_app", "create_app"]
