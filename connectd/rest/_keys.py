"""What the handlers find on the application."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from connectd.herder import Herder

# Either herder; a cluster's has more (put_task_configs, put_logger_level), asked for with hasattr.
HERDER: web.AppKey[Herder] = web.AppKey("herder", object)
INFO: web.AppKey[dict[str, Any]] = web.AppKey("info", dict)
# The worker's plugins: what /connector-plugins lists and validates against.
REGISTRY: web.AppKey[Any] = web.AppKey("registry", object)
# Held while checking that a connector does not exist and creating it, so two
# concurrent POSTs of one name give one 201 and one 409.
CREATE_LOCK: web.AppKey[asyncio.Lock] = web.AppKey("create_lock", asyncio.Lock)
