"""The metrics' names, labels and life cycle (pure logic: a herder's view as data, no worker)."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from connectd.metrics import TASK_STATES, WorkerMetrics


class View:
    """What a herder tells the metrics."""

    def __init__(self, connectors, group=None) -> None:
        self.connectors, self.group = connectors, group

    def local_view(self):
        return self.connectors

    def group_view(self):
        return self.group


def scrape(metrics: WorkerMetrics) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(generate_latest(metrics.registry).decode())
            for s in family.samples}


SINK = {"name": "out", "type": "sink", "class": "p.Sink", "version": "1.2", "running": True, "state": "RUNNING",
        "tasks": [{"id": 0, "state": "RUNNING", "partitions": 3}, {"id": 1, "state": "FAILED", "partitions": 2}]}


def test_state_series_are_read_at_each_scrape_with_every_state_listed():
    metrics = WorkerMetrics("w:8083")
    view = View([SINK], {"generation": 7, "leader": True, "rebalancing": False})
    metrics.watch(view)
    found = scrape(metrics)
    w = ("worker", "w:8083")
    assert found[("connectd_worker_connectors", (w,))] == 1
    assert {state: found[("connectd_worker_tasks", (("state", state), w))] for state in TASK_STATES} == {
        "UNASSIGNED": 0, "RUNNING": 1, "PAUSED": 0, "FAILED": 1, "RESTARTING": 0}
    assert found[("connectd_task_status", (("connector", "out"), ("state", "FAILED"), ("task", "1"), w))] == 1
    assert found[("connectd_task_status", (("connector", "out"), ("state", "RUNNING"), ("task", "1"), w))] == 0
    assert found[("connectd_connector_info", (("class", "p.Sink"), ("connector", "out"), ("type", "sink"),
                                              ("version", "1.2"), w))] == 1
    assert found[("connectd_sink_task_partitions", (("connector", "out"), ("task", "0"), w))] == 3
    assert found[("connectd_group_generation", (w,))] == 7 and found[("connectd_group_leader", (w,))] == 1
    view.connectors = []  # the connector left: at the next scrape it has no series
    assert not [key for key in scrape(metrics) if ("connector", "out") in key[1]]


def test_task_series_count_batches_and_commits_and_go_with_the_task():
    metrics = WorkerMetrics("w")
    task = metrics.task("in", 0)
    task.batch(0.2, 500, "source")
    task.batch(0.1, 300, "source")
    task.committed(0.01, ok=True)
    task.committed(0.5, ok=False)
    metrics.started("task", True)
    metrics.rebalanced(1.5)
    found = scrape(metrics)
    labels = (("connector", "in"), ("task", "0"), ("worker", "w"))
    assert found[("connectd_task_batches_total", labels)] == 2
    assert found[("connectd_source_records_written_total", labels)] == 800
    assert found[("connectd_task_batch_records_sum", labels)] == 800
    assert found[("connectd_task_offset_commits_total", (labels[0], ("result", "failure"), *labels[1:]))] == 1
    assert found[("connectd_task_startups_total", (("result", "success"), ("worker", "w")))] == 1
    assert found[("connectd_task_startups_total", (("result", "failure"), ("worker", "w")))] == 0
    assert found[("connectd_rebalances_total", (("worker", "w"),))] == 1
    assert found[("connectd_rebalance_seconds_sum", (("worker", "w"),))] == 1.5
    task.remove()
    assert not [key for key in scrape(metrics) if ("connector", "in") in key[1]]


def test_a_tasks_seconds_in_each_state_give_kafka_connects_running_and_pause_ratios(monkeypatch):
    import connectd.metrics

    clock = [100.0]
    monkeypatch.setattr(connectd.metrics.time, "monotonic", lambda: clock[0])
    metrics = WorkerMetrics("w")
    task = metrics.task("in", 0)
    task.state("RUNNING")
    clock[0] += 30
    task.state("PAUSED")
    clock[0] += 10
    task.state("RUNNING")
    clock[0] += 5  # running still: counted up to the scrape
    found = scrape(metrics)
    labels = (("connector", "in"), ("state", "RUNNING"), ("task", "0"), ("worker", "w"))
    assert found[("connectd_task_state_seconds_total", labels)] == 35
    assert found[("connectd_task_state_seconds_total", (labels[0], ("state", "PAUSED"), *labels[2:]))] == 10
    task.remove()
    assert not [key for key in scrape(metrics) if ("connector", "in") in key[1]]
