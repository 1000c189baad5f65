"""``GET /health`` (KIP-1017): 503 while starting, 200 once started, 500 when the herder cannot work."""

from __future__ import annotations

import asyncio

import aiohttp

from connectd.herder import StandaloneHerder
from connectd.rest import RestServer, create_app

HEALTHY = {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}
UNHEALTHY = "Worker was unable to handle this request and may be unable to handle other requests. "


async def _health(http):
    async with http.get("/health") as r:
        return r.status, await r.json()


def test_starting_until_the_herder_has_started_then_healthy(worker_config):
    config = worker_config()

    async def main():
        herder = StandaloneHerder(config, "test-worker", None)
        app = create_app(herder, worker_id="w", kafka_cluster_id=None, version="1")
        async with RestServer(app) as server, aiohttp.ClientSession(base_url=server.url) as http:
            assert await _health(http) == (503, {"status": "starting", "message": "Worker is still starting up."})
            await herder.start()
            try:
                assert await _health(http) == (200, HEALTHY)
            finally:
                await herder.stop()
            status, body = await _health(http)  # stopped: it will not do any more work
            assert status == 500 and body["status"] == "unhealthy"
            assert body["message"] == UNHEALTHY + "The herder is not running."

    asyncio.run(main())


def test_unhealthy_while_an_operation_holds_the_herder_then_healthy_again(rest, wait_until_async):
    async def scenario(http, herder):
        herder.health_check_timeout_s = 0.3
        assert await _health(http) == (200, HEALTHY)
        async with herder._lock:  # as a connector operation stuck in a plugin would
            status, body = await wait_until_async(lambda: _health(http), "/health to answer 500",
                                                  until=lambda a: a[0] == 500, timeout=10)
            # Answered at once, not after a wait for the herder.
            loop = asyncio.get_running_loop()
            asked = loop.time()
            assert (await _health(http))[0] == 500 and loop.time() - asked < 0.2
        assert body["status"] == "unhealthy" and body["message"].startswith(UNHEALTHY)
        assert "watch loop has waited" in body["message"] and "(more than 0.3 s)" in body["message"]
        healthy = await wait_until_async(lambda: _health(http), "/health to answer 200", until=lambda a: a[0] == 200,
                                         timeout=10)
        assert healthy == (200, HEALTHY)

    rest(scenario)


def test_a_watch_loop_that_keeps_failing_is_retried_and_makes_the_worker_unhealthy(rest, caplog, wait_until_async):
    class Broken(dict):
        def values(self):
            raise RuntimeError("password=hunter2")

    caplog.set_level("INFO")

    async def scenario(http, herder):
        herder.loops.unhealthy_after_s = 0.5
        working = herder._connectors
        herder._connectors = Broken()
        unhealthy = await wait_until_async(lambda: _health(http), "/health to answer 500",
                                           until=lambda a: a[0] == 500, timeout=10)
        assert not herder._watcher.done()  # failing, retried: never ended
        herder._connectors = working  # the next step succeeds: healthy again
        healthy = await wait_until_async(lambda: _health(http), "/health to answer 200",
                                         until=lambda a: a[0] == 200, timeout=30)
        return unhealthy, healthy

    (status, body), healthy = rest(scenario)
    assert status == 500 and body["status"] == "unhealthy"
    assert body["message"].startswith(UNHEALTHY + "The background loop herder-watch has failed ")
    assert "(last with RuntimeError); see the worker's log." in body["message"]
    assert "hunter2" not in body["message"]
    assert healthy == (200, HEALTHY)
    failures = [r.getMessage() for r in caplog.records if "background_loop_failed" in r.getMessage()]
    assert failures and all("'exc_info': RuntimeError" in failure for failure in failures)  # its trace, rendered
    assert any("background_loop_recovered" in r.getMessage() for r in caplog.records)
