"""The application: root, health, errors for unknown routes and failures, the server's life."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from connectd.errors import BadRequestError, ConnectorError, NotFoundError, RebalanceInProgressError
from connectd.rest import RestServer, create_app


def test_root_and_health(rest):
    async def scenario(http, herder):
        async with http.get("/") as r:
            assert r.status == 200
            body = await r.json()
        assert body == {"version": "9.9.9", "commit": "unknown", "kafka_cluster_id": "test-cluster"}
        async with http.get("/health") as r:
            assert r.status == 200
            health = await r.json()
        assert health["status"] == "healthy" and health["message"]

    rest(scenario)


def test_unknown_route_and_wrong_method_answer_json(rest):
    async def scenario(http, herder):
        async with http.get("/no/such/thing") as r:
            assert r.status == 404
            assert await r.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
        async with http.delete("/connectors") as r:
            assert r.status == 405
            body = await r.json()
            assert body["error_code"] == 405 and "GET" in r.headers["Allow"]
        async with http.get("/connectors/nope/tasks/x/status") as r:  # a task id is a number
            assert r.status == 404

    rest(scenario)


def test_an_unexpected_failure_is_500_without_trace_or_secret(rest, caplog):
    async def scenario(http, herder):
        def boom():
            raise RuntimeError("password=hunter2")

        herder.connectors = boom
        async with http.get("/connectors") as r:
            assert r.status == 500
            body = await r.json()
        assert body["error_code"] == 500
        assert "hunter2" not in body["message"] and "Traceback" not in body["message"]

    rest(scenario)
    logged = [r for r in caplog.records if r.name == "connectd.rest.error_responses"]
    assert logged and logged[0].exc_info is not None  # the trace goes to the log


@pytest.mark.parametrize(("error", "status"), [
    (ConnectorError("could not forward the request to the leader at http://w1:8083: ClientConnectorError"), 500),
    (ConnectorError("Failed to modify offsets for source connector src: disk full"), 500),
    (RebalanceInProgressError("Cannot complete request because of a conflicting operation (e.g. worker "
                              "rebalance)"), 409),
    (BadRequestError("Connector src is not STOPPED"), 400),
    (NotFoundError("connector src not found"), 404),
])
def test_the_herders_refusals_answer_as_kafka_connect_answers_them(rest, error, status):
    """Kafka Connect's mappers: a ConnectException is 500 with its message, a rebalance (or work not
    assigned yet) 409, a bad request 400, an unknown connector 404."""
    async def scenario(http, herder):
        def refuse():
            raise error

        herder.connectors = refuse
        async with http.get("/connectors") as r:
            return r.status, await r.json()

    answered, body = rest(scenario)
    assert (answered, body["error_code"]) == (status, status)
    assert body["message"].lower() == str(error).lower()


def test_server_takes_a_free_port_and_stops_twice():
    async def main():
        server = RestServer(create_app(object(), worker_id="w", kafka_cluster_id=None, version="1"))
        await server.start("127.0.0.1", 0)
        assert server.port and server.port > 0
        async with aiohttp.ClientSession() as http, http.get(f"{server.url}/") as r:
            assert (await r.json())["kafka_cluster_id"] is None
        await server.stop()
        await server.stop()
        async with RestServer(create_app(object(), worker_id="w", kafka_cluster_id=None, version="1")) as other:
            assert other.port > 0

    asyncio.run(main())


def test_a_sinks_offsets_with_no_kafka_answering_are_500_naming_the_cluster_within_the_bound(rest, monkeypatch):
    import time

    from connectd.herder import offsets_admin

    monkeypatch.setattr(offsets_admin, "_ADMIN_TIMEOUT_S", 1.0)  # the bound (30 s) made short

    async def scenario(http, herder):
        config = {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/connectd-unused.txt"}
        async with http.post("/connectors", json={"name": "s", "config": config, "initial_state": "STOPPED"}) as r:
            assert r.status == 201
        asked = time.monotonic()
        async with http.get("/connectors/s/offsets") as r:
            return r.status, await r.json(), time.monotonic() - asked

    status, body, took = rest(scenario)
    assert status == 500 and took < 10
    assert body["message"] == ("Failed to retrieve consumer group offsets for sink connector s: no answer from the "
                               "Kafka cluster at 127.0.0.1:9 within 1 s")


def test_a_trailing_slash_reaches_the_same_route(rest):
    # Kafka Connect's Jersey matches `/connectors/` as `/connectors`; scripts and tools rely on it.
    config = {"connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/in.txt"}

    async def scenario(http, herder):
        answers = {}
        async with http.post("/connectors/", json={"name": "slash", "config": config,
                                                   "initial_state": "STOPPED"}) as r:
            answers["POST /connectors/"] = r.status, r.headers.get("Location", "")
        for path in ("/connectors/", "/connectors/slash/", "/connectors/slash/status/", "/connectors/slash/config/",
                     "/connector-plugins/", "/admin/loggers/", "/connectors/ghost/", "/no/such/thing/",
                     "/connectors//"):
            async with http.get(path) as r:
                answers[f"GET {path}"] = r.status, await r.json()
        async with http.delete("/connectors/") as r:
            answers["DELETE /connectors/"] = r.status, r.headers.get("Allow", "")
        async with http.delete("/connectors/slash/") as r:
            answers["DELETE /connectors/slash/"] = r.status, herder.connectors()
        return answers

    answers = rest(scenario)
    assert answers["POST /connectors/"][0] == 201
    assert answers["POST /connectors/"][1].endswith("/connectors/slash")
    assert answers["GET /connectors/"] == (200, ["slash"])
    assert answers["GET /connectors/slash/"][1]["name"] == "slash"
    assert answers["GET /connectors/slash/status/"][1]["connector"]["state"] == "STOPPED"
    assert answers["GET /connectors/slash/config/"][1]["topic"] == "t"
    assert answers["GET /connector-plugins/"][0] == 200 and answers["GET /admin/loggers/"][0] == 200
    assert answers["GET /connectors/ghost/"] == (404, {"error_code": 404, "message": "Connector ghost not found"})
    assert answers["GET /no/such/thing/"] == (404, {"error_code": 404, "message": "HTTP 404 Not Found"})
    assert answers["GET /connectors//"][0] == 404  # one slash only, as Jersey
    status, allow = answers["DELETE /connectors/"]
    assert status == 405 and "GET" in allow and "POST" in allow
    assert answers["DELETE /connectors/slash/"] == (204, [])
