"""Kafka Connect's REST API over a herder, served with aiohttp.

One module per resource group: :mod:`.connectors` (``/connectors``),
:mod:`.plugins` (``/connector-plugins``), :mod:`.loggers`
(``/admin/loggers``); :mod:`.app` builds the application and serves it,
:mod:`.errors` turns every failure into Kafka's JSON error body.
"""

from __future__ import annotations

from connectd.rest.app import RestServer, create_app

__all__ = ["RestServer", "create_app"]
