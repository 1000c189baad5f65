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
        async with http.put("/admin/loggers/connectd.resttest", json={"level": "LOUD"}) as r:
            assert r.status == 400
            assert "LOUD" in (await r.json())["message"]
        async with http.put("/admin/loggers/connectd.resttest", json={}) as r:
            assert r.status == 400
        async with http.put("/admin/loggers/connectd.resttest?scope=galaxy", json={"level": "INFO"}) as r:
            assert r.status == 400
        async with http.get("/admin/loggers/connectd.never.made") as r:
            assert r.status == 404

    try:
        rest(scenario)
    finally:
        logging.getLogger("connectd.resttest").setLevel(logging.NOTSET)
        child.setLevel(logging.NOTSET)
