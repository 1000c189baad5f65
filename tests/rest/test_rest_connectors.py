"""``/connectors`` over a real StandaloneHerder running FileStreamSource with real Spark."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


async def _json(response):
    return await response.json() if response.status != 204 else None


async def _body(http, path):
    async with http.get(path) as r:
        return await r.json()


def _running(body):
    return body["connector"]["state"] == "RUNNING" and [t["state"] for t in body["tasks"]] == ["RUNNING"]


def test_connector_lifecycle_over_http(rest, spark, broker, topic_name, tmp_path, wait_until_async):
    (tmp_path / "in.txt").write_text("a\nb\n")
    placeholder = f"${{file:{rest.secrets}:topic}}"
    config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": placeholder}

    async def scenario(http, herder):
        async def running():
            return await wait_until_async(lambda: _body(http, "/connectors/src/status"), "src and its task to run",
                                          until=_running)

        async with http.post("/connectors", json={"name": "src", "config": config}) as r:
            assert r.status == 201, await r.text()
            assert r.headers["Location"].endswith("/connectors/src")
            created = await r.json()
        assert created == {"name": "src", "config": {**config, "name": "src"},
                           "tasks": [{"connector": "src", "task": 0}], "type": "source"}
        async with http.post("/connectors", json={"name": "src", "config": config}) as r:
            assert r.status == 409
            assert (await r.json()) == {"error_code": 409, "message": "Connector src already exists"}

        async with http.get("/connectors") as r:
            assert await r.json() == ["src"]
        async with http.get("/connectors?expand=status&expand=info") as r:
            expanded = await r.json()
        assert set(expanded["src"]) == {"status", "info"} and expanded["src"]["info"]["type"] == "source"
        async with http.get("/connectors?expand=status") as r:
            assert set((await r.json())["src"]) == {"status"}

        # placeholders are shown as written, never resolved
        async with http.get("/connectors/src") as r:
            assert (await r.json())["config"]["topic"] == placeholder
        async with http.get("/connectors/src/config") as r:
            assert await r.json() == {**config, "name": "src"}
        async with http.get("/connectors/src/tasks") as r:
            tasks = await r.json()
        assert tasks[0]["id"] == {"connector": "src", "task": 0}
        assert tasks[0]["config"]["topic"] == placeholder and "rest-secret-topic" not in str(tasks)
        async with http.get("/connectors/src/tasks-config") as r:  # Kafka 3.x's deprecated form
            assert await r.json() == {"src-0": tasks[0]["config"]}

        status = await running()
        assert status == {"name": "src", "type": "source",
                          "connector": {"state": "RUNNING", "worker_id": "test-worker"},
                          "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "test-worker"}]}
        async with http.get("/connectors/src/tasks/0/status") as r:
            assert await r.json() == {"id": 0, "state": "RUNNING", "worker_id": "test-worker"}
        async with http.get("/connectors/src/tasks/5/status") as r:
            assert r.status == 404

        async with http.put("/connectors/src/pause") as r:
            assert r.status == 202
        async with http.get("/connectors/src/status") as r:
            assert (await r.json())["connector"]["state"] == "PAUSED"
        async with http.put("/connectors/src/resume") as r:
            assert r.status == 202
        assert _running(await running())

        async with http.post("/connectors/src/restart") as r:
            assert r.status == 204
        async with http.post("/connectors/src/restart?includeTasks=true&onlyFailed=false") as r:
            assert r.status == 202
            restarted = await r.json()
        # Kafka answers with what the restart does, not the state from before it
        assert restarted == {"name": "src", "type": "source",
                             "connector": {"state": "RESTARTING", "worker_id": "test-worker"},
                             "tasks": [{"id": 0, "state": "RESTARTING", "worker_id": "test-worker"}]}
        assert _running(await running())
        async with http.post("/connectors/src/restart?includeTasks=true&onlyFailed=true") as r:
            assert r.status == 202  # nothing FAILED: nothing restarted, states as they are
            assert _running(await r.json())
        async with http.post("/connectors/src/restart?includeTasks=yes") as r:
            assert r.status == 400
        async with http.post("/connectors/src/tasks/0/restart") as r:
            assert r.status == 204
        async with http.post("/connectors/src/tasks/7/restart") as r:
            assert r.status == 404

        async with http.patch("/connectors/src/config", json={"batch.size": "10"}) as r:
            assert r.status == 200
            assert (await r.json())["config"]["batch.size"] == "10"
        async with http.patch("/connectors/src/config", json={"batch.size": None}) as r:
            assert "batch.size" not in (await r.json())["config"]
        async with http.patch("/connectors/src/config", json={"name": "other"}) as r:
            assert r.status == 400
        async with http.put("/connectors/src/config", json={**config, "batch.size": "5"}) as r:
            assert r.status == 200
            assert (await r.json())["config"]["batch.size"] == "5"
        async with http.put("/connectors/src/config", json={**config, "tasks.max": "x"}) as r:
            assert r.status == 400 and "tasks.max" in (await r.json())["message"]

        async with http.put("/connectors/src/stop") as r:
            assert r.status == 204
        async with http.get("/connectors/src/status") as r:
            stopped = await r.json()
        assert stopped["connector"]["state"] == "STOPPED" and stopped["tasks"] == []
        async with http.get("/connectors/src/config") as r:
            assert (await r.json())["batch.size"] == "5"  # config kept
        async with http.post("/connectors/src/restart") as r:
            assert r.status == 204  # as Kafka Connect: it stays stopped
        async with http.get("/connectors/src/status") as r:
            assert (await r.json())["connector"]["state"] == "STOPPED"

        async with http.delete("/connectors/src") as r:
            assert r.status == 204
        async with http.get("/connectors/src") as r:
            assert r.status == 404
            assert await r.json() == {"error_code": 404, "message": "Connector src not found"}
        async with http.get("/connectors") as r:
            assert await r.json() == []

    rest(scenario, spark=spark, broker=broker)


def test_put_config_creates_and_initial_state(rest, spark, broker, topic_name, tmp_path):
    (tmp_path / "in.txt").write_text("a\n")
    config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": topic_name}

    async def scenario(http, herder):
        async with http.put("/connectors/made/config", json=config) as r:
            assert r.status == 201, await r.text()
            assert r.headers["Location"].endswith("/connectors/made")
            assert (await r.json())["name"] == "made"
        async with http.put("/connectors/made/config", json={**config, "name": "wrong"}) as r:
            assert r.status == 400
        async with http.post("/connectors", json={"name": "parked", "config": config,
                                                  "initial_state": "STOPPED"}) as r:
            assert r.status == 201
        async with http.get("/connectors/parked/status") as r:
            assert (await r.json())["connector"]["state"] == "STOPPED"
        async with http.put("/connectors/parked/pause") as r:  # as Kafka: a STOPPED connector starts paused
            assert r.status == 202
        async with http.get("/connectors/parked/status") as r:
            assert (await r.json())["connector"]["state"] == "PAUSED"
        for name in ("made", "parked"):
            async with http.delete(f"/connectors/{name}") as r:
                assert r.status == 204

    rest(scenario, spark=spark, broker=broker)
