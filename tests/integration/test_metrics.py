"""A worker's /metrics under load: a real worker, broker and Spark, read with Prometheus' own parser."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from connectd.worker import Worker

pytestmark = pytest.mark.integration

LINES = 3000
DASHBOARD = Path(__file__).resolve().parents[2] / "etc" / "grafana" / "connectd.json"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of an exposition: (name, labels without worker) → value."""
    return {(s.name, frozenset((k, v) for k, v in s.labels.items() if k != "worker")): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: dict, name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


@pytest.mark.parametrize("mode", ["standalone", "distributed"])
def test_metrics_show_states_start_ups_batches_records_and_commits(broker, spark, topic_name, tmp_path, mode,
                                                                    worker_config, wait_until_async, capsys):
    import aiohttp
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"line {i}\n" for i in range(LINES)))
    # a worker id other workers (and `connectd status`) can reach it at
    config = worker_config(mode, **{"rest.advertised.host.name": "127.0.0.1"})

    async def scenario() -> tuple[str, str, str]:
        async with Worker(config) as worker:
            herder = await worker.start_herder(spark)
            await herder.put({"name": "lines-in", "connector.class": "FileStreamSource", "file": str(source_file),
                              "topic": topic_name})
            await herder.put({"name": "lines-out", "connector.class": "FileStreamSink", "topics": topic_name,
                              "file": str(sink_file)})
            await wait_until_async(lambda: sink_file.read_text().count("\n") if sink_file.exists() else 0,
                                   f"{LINES} lines through both connectors", until=lambda n: n >= LINES, timeout=120)
            async with aiohttp.ClientSession() as http:
                async def scrape() -> str:
                    async with http.get(f"{worker.rest_url}/metrics") as answer:
                        assert answer.status == 200 and answer.content_type == "text/plain"
                        return await answer.text()

                # a batch is counted once its offsets are committed, a moment after its records are written
                loaded = await wait_until_async(scrape, "every record counted", until=lambda text: all(
                    (value(samples(text), name, connector=connector, task="0") or 0) >= LINES
                    for name, connector in (("connectd_sink_records_read_total", "lines-out"),
                                            ("connectd_source_records_written_total", "lines-in"))))
                # `connectd status` reads the same worker: both connectors and tasks, RUNNING, here
                from connectd.cli import main

                capsys.readouterr()
                code = await asyncio.to_thread(main, ["status", "--url", worker.rest_url, "--interval", "0.2"])
                status_view = capsys.readouterr().out
                assert code == 0, status_view
                await herder.delete("lines-in")
                after_delete = await wait_until_async(scrape, "the deleted connector's series gone", until=lambda text: (
                    "lines-in" not in text))
            return worker.worker_id, loaded, after_delete, status_view

    worker_id, text, after_delete, status_view = asyncio.run(scenario())
    assert "1 worker, 2 connectors, 2 of 2 tasks running" in status_view
    rows = [line.split() for line in status_view.splitlines()]
    assert ["lines-in", "source", "RUNNING", worker_id] in [row[:4] for row in rows]
    assert ["lines-out", "sink", "RUNNING", worker_id] in [row[:4] for row in rows]
    assert [row[:5] for row in rows if row[:2] == ["task", "0"]] == [["task", "0", "RUNNING", worker_id, "0"]] * 2
    assert f'worker="{worker_id}"' in text
    found = samples(text)
    assert value(found, "connectd_worker_connectors") == 2
    assert value(found, "connectd_worker_tasks", state="RUNNING") == 2
    assert value(found, "connectd_worker_tasks", state="FAILED") == 0
    assert value(found, "connectd_task_startups_total", result="success") == 2
    assert value(found, "connectd_task_startups_total", result="failure") == 0
    assert value(found, "connectd_connector_startups_total", result="success") == 2
    for connector in ("lines-in", "lines-out"):
        assert value(found, "connectd_connector_status", connector=connector, state="RUNNING") == 1
        assert value(found, "connectd_connector_status", connector=connector, state="FAILED") == 0
        assert value(found, "connectd_task_status", connector=connector, task="0", state="RUNNING") == 1
        assert value(found, "connectd_task_batches_total", connector=connector, task="0") >= 1
        assert value(found, "connectd_task_offset_commits_total", connector=connector, task="0",
                      result="success") >= 1
        assert value(found, "connectd_task_offset_commits_total", connector=connector, task="0",
                     result="failure") == 0
        assert value(found, "connectd_task_batch_seconds_count", connector=connector, task="0") >= 1
    assert value(found, "connectd_source_records_written_total", connector="lines-in", task="0") == LINES
    assert value(found, "connectd_sink_records_read_total", connector="lines-out", task="0") == LINES
    # what the sink's executor did, brought back with each batch
    assert value(found, "connectd_sink_records_sent_total", connector="lines-out", task="0") == LINES
    assert value(found, "connectd_sink_puts_total", connector="lines-out", task="0") >= 1
    assert value(found, "connectd_sink_put_seconds_total", connector="lines-out", task="0") > 0
    assert value(found, "connectd_task_record_failures_total", connector="lines-out", task="0") == 0
    assert value(found, "connectd_task_last_error_timestamp_seconds", connector="lines-out", task="0") is None
    # every record read is committed by now (its batch was counted when its offsets were)
    assert value(found, "connectd_sink_records_active", connector="lines-out", task="0") == 0
    # time in each state, whose rate() is Kafka Connect's running-ratio
    assert value(found, "connectd_task_state_seconds_total", connector="lines-in", task="0", state="RUNNING") > 0
    assert value(found, "connectd_task_state_seconds_total", connector="lines-in", task="0", state="PAUSED") is None
    assert value(found, "connectd_source_records_polled_total", connector="lines-in", task="0") == LINES
    assert value(found, "connectd_source_polls_total", connector="lines-in", task="0") >= 1
    assert 0 < value(found, "connectd_source_records_active", connector="lines-in", task="0") <= LINES
    assert value(found, "connectd_task_record_failures_total", connector="lines-in", task="0") == 0
    for partition in ("0", "1"):  # all read
        assert value(found, "connectd_sink_record_lag", connector="lines-out", task="0", topic=topic_name,
                     partition=partition) == 0
    assert value(found, "connectd_task_batch_records_sum", connector="lines-in", task="0") == LINES
    assert value(found, "connectd_sink_task_partitions", connector="lines-out", task="0") == 2
    info = [labels for (name, labels), v in found.items() if name == "connectd_connector_info" and v == 1]
    assert {dict(labels)["connector"]: dict(labels)["type"] for labels in info} == {"lines-in": "source",
                                                                                    "lines-out": "sink"}
    # a connector that went leaves no series behind
    assert value(samples(after_delete), "connectd_worker_tasks", state="RUNNING") == 1
    if mode == "distributed":
        assert value(found, "connectd_group_leader") == 1 and value(found, "connectd_rebalancing") == 0
        assert value(found, "connectd_last_rebalance_timestamp_seconds") > 0
        assert value(found, "connectd_group_generation") >= 1
        assert value(found, "connectd_rebalances_total") >= 1
        assert value(found, "connectd_rebalance_seconds_count") == value(found, "connectd_rebalances_total")
        # every series the Grafana dashboard charts is there on a real worker
        declared = set(re.findall(r"^# TYPE (\S+)", text, re.MULTILINE)) | {name for name, _ in found}
        queried = {name for panel in json.loads(DASHBOARD.read_text())["panels"] for target in panel["targets"]
                   for name in re.findall(r"connectd_[a-z_]+", target["expr"])}
        assert queried and not {name for name in queried
                                if name not in declared and re.sub(r"_(bucket|sum|count)$", "", name) not in declared}
