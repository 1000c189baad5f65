"""The worker's lifecycle against the real broker: NEW → RUNNING → STOPPED."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from connectd.broker import free_port
from connectd.config.worker import WorkerConfig
from connectd.errors import ConfigError, ConnectdError
from connectd.logging import configure_logging
from connectd.worker import Worker

pytestmark = pytest.mark.integration


def config_for(worker_config, **extra: str) -> WorkerConfig:
    return worker_config(**{"value.converter": "org.apache.kafka.connect.json.JsonConverter", **extra})


def test_worker_starts_reports_and_stops(broker, worker_config):
    stream = io.StringIO()
    configure_logging("INFO", json=True, stream=stream)
    config = config_for(worker_config)
    port = config.raw("listeners").rsplit(":", 1)[1]  # a free port, not 0: the worker id carries it
    worker = Worker(config)

    async def scenario():
        assert worker.state == "NEW"
        async with worker:
            assert worker.state == "RUNNING"
            assert worker.cluster_id
            assert worker.converters["value.converter"].__name__ == "JsonConverter"
        assert worker.state == "STOPPED"
        await worker.stop()  # idempotent
        assert worker.state == "STOPPED"

    asyncio.run(scenario())
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    started = next(line for line in lines if line["event"] == "worker_started")
    assert started["worker"] == worker.worker_id == f"{worker.worker_id.split(':')[0]}:{port}"
    assert started["kafka_cluster_id"] == worker.cluster_id
    assert any(line["event"] == "worker_stopped" for line in lines)


def test_worker_refuses_a_bad_config_before_touching_kafka(worker_config):
    worker = Worker(config_for(worker_config, **{"offset.flush.interval.ms": "soon"}))
    with pytest.raises(ConfigError, match="offset.flush.interval.ms='soon': expected a 64-bit integer"):
        asyncio.run(worker.start())
    assert worker.state == "STOPPED"


def test_unreachable_cluster_is_a_clear_error(worker_config):
    port = free_port()  # nothing listens there
    worker = Worker(config_for(worker_config, **{"bootstrap.servers": f"127.0.0.1:{port}",
                                                 "request.timeout.ms": "1500"}))
    with pytest.raises(ConnectdError, match=f"cannot reach the Kafka cluster at 127.0.0.1:{port}"):
        asyncio.run(worker.start())
    assert worker.state == "STOPPED"


def test_worker_serves_the_rest_api_on_its_listener(broker, spark, worker_config):
    import aiohttp

    config = config_for(worker_config, listeners="http://127.0.0.1:0")

    async def scenario():
        async with Worker(config) as worker:
            await worker.start_herder(spark)  # the suite's session: the worker must not stop it
            async with aiohttp.ClientSession() as http:
                async with http.get(f"{worker.rest_url}/") as response:
                    root = await response.json()
                async with http.get(f"{worker.rest_url}/connectors") as response:
                    connectors = await response.json()
        return worker, root, connectors

    worker, root, connectors = asyncio.run(scenario())
    assert root["kafka_cluster_id"] == worker.cluster_id
    assert connectors == []
    assert spark.range(3).count() == 3  # still usable by the tests after this one


def test_sigusr1_logs_where_every_task_of_the_worker_waits():
    """What an operator (and a failed cluster test) asks a worker that seems stuck."""
    from connectd.worker import _log_tasks

    stream = io.StringIO()
    configure_logging("INFO", json=True, stream=stream)

    async def waits_for_ever(waiting: asyncio.Event, never: asyncio.Event) -> None:
        waiting.set()
        await never.wait()

    async def scenario():
        waiting, never = asyncio.Event(), asyncio.Event()
        task = asyncio.get_running_loop().create_task(waits_for_ever(waiting, never), name="group-heartbeat")
        await waiting.wait()  # the task is in its wait now
        _log_tasks()
        task.cancel()

    asyncio.run(scenario())
    dump = next(json.loads(line) for line in stream.getvalue().splitlines() if '"worker_tasks"' in line)
    waiting = next(t for t in dump["tasks"] if t["name"] == "group-heartbeat")
    assert "waits_for_ever" in waiting["stack"] and "never.wait()" in waiting["stack"]
    assert dump["count"] == len(dump["tasks"]) == 2  # and the scenario itself
