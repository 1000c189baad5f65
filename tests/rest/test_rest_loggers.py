"""``/admin/loggers``: levels read and changed at run time."""

from __future__ import annotations

import logging


def test_get_and_set_levels(rest):
    child = logging.getLogger("connectd.resttest.child")

    async def scenario(http, herder):
        async with http.put("/admin/loggers/connectd.resttest", json={"level": "DEBUG"}) as r:
            assert r.status == 200
            changed = await r.json()
        assert changed == ["connectd.resttest", "connectd.resttest.child"]
        assert child.getEffectiveLevel() == logging.DEBUG
        async with http.get("/admin/loggers") as r:
            levels = await r.json()
        assert levels["connectd.resttest"]["level"] == "DEBUG" and "root" in levels
        async with http.get("/admin/loggers/connectd.resttest") as r:
            one = await r.json()
        assert one["level"] == "DEBUG" and one["last_modified"]
        async with http.put("/admin/loggers/connectd.resttest?scope=cluster", json={"level": "warn"}) as r:
            assert r.status == 200
        assert child.getEffectiveLevel() == logging.WARNING
        # Kafka's answers: an unknown level is 404, no level 400
        async with http.put("/admin/loggers/connectd.resttest", json={"level": "LOUD"}) as r:
            assert r.status == 404
            assert (await r.json())["message"].startswith("invalid log level 'LOUD'; expected one of TRACE, DEBUG")
        async with http.put("/admin/loggers/connectd.resttest", json={"level": ""}) as r:
            assert r.status == 404
        async with http.put("/admin/loggers/connectd.resttest", json={}) as r:
            assert r.status == 400
            assert await r.json() == {"error_code": 400,
                                      "message": "Desired 'level' parameter was not specified in request."}
        async with http.put("/admin/loggers/connectd.resttest?scope=", json={"level": "ERROR"}) as r:
            assert r.status == 200  # an empty scope is the default, worker
        assert child.getEffectiveLevel() == logging.ERROR
        async with http.put("/admin/loggers/connectd.resttest?scope=galaxy", json={"level": "INFO"}) as r:
            assert r.status == 400
        async with http.get("/admin/loggers/connectd.never.made") as r:
            assert r.status == 404

    try:
        rest(scenario)
    finally:
        logging.getLogger("connectd.resttest").setLevel(logging.NOTSET)
        child.setLevel(logging.NOTSET)
