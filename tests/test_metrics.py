"""The metrics' names, labels and life cycle (pure logic: a herder's view as data, no worker)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from connectd.capacity.decision import SCALE_OUT, Decision
from connectd.capacity.load import ProcessTreeCpu
from connectd.metrics import TASK_STATES, WorkerMetrics


class View:
    """What a herder tells the metrics."""

    def __init__(self, connectors, group=None, capacity=None) -> None:
        self.connectors, self.group, self.capacity = connectors, group, capacity

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


DOCS = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"


def exercised() -> WorkerMetrics:
    """A worker whose every series has a sample: a sink and a source task that did everything."""
    metrics = WorkerMetrics("w")
    decision = Decision(1000.0, 2, 1, SCALE_OUT, "average CPU 90 %")
    metrics.watch(View([SINK], {"generation": 3, "leader": False, "rebalancing": True},
                       capacity=SimpleNamespace(last=decision)))
    metrics.process_tree = ProcessTreeCpu(cores=2)
    metrics.cpu_utilization.labels("w").set(12.5)
    metrics.capacity_decisions.labels("w", SCALE_OUT).inc()
    metrics.started("connector", True)
    metrics.spark_hiccups.labels("w").inc()
    metrics.rebalanced(0.5)
    counts = {key: 1 for key in ("sent", "puts", "put_seconds", "polls", "poll_seconds", "polled", "failures",
                                 "skipped", "retries", "logged", "dlq_requests", "dlq_failures")}
    sink, source = metrics.task("out", 0), metrics.task("in", 0)
    for task, kind in ((sink, "sink"), (source, "source")):
        task.state("RUNNING")
        task.batch(0.1, 10, kind)
        task.committed(0.01, ok=True)
    sink.sink_committed({("t", 0): 0})
    sink.sink_read({("t", 0): 10})
    sink.task_counts(counts, {("t", 0): 5})
    source.task_counts({**counts, "active": 4, "transactions": [2000, 150], "transaction_commit_seconds": 0.02,
                        "transaction_aborts": 1})
    return metrics


def documented() -> dict[str, set[str]]:
    """The series docs/metrics.md's table lists: name → its labels besides ``worker``."""
    text = DOCS.read_text()
    table = text[text.index("## The series"):text.index("\n## ", text.index("## The series") + 1)]
    found = {}
    for row in table.splitlines():
        if row.startswith("| `"):
            for name, labels in re.findall(r"`(connectd_[a-z_]+)(?:\{([a-z_,]+)\})?`", row.split(" | ")[0]):
                found[name] = set(labels.split(",")) if labels else set()
    return found


def test_the_docs_list_every_series_a_worker_registers_and_no_other_with_its_labels():
    registered = {}
    for family in exercised().registry.collect():
        name = family.name + {"counter": "_total", "info": "_info"}.get(family.type, "")
        samples = [s for s in family.samples if not s.name.endswith("_created")]
        assert samples, f"{name} has no sample: the test does not exercise it"
        assert all(s.labels.get("worker") == "w" for s in samples), name
        registered[name] = {key for s in samples for key in s.labels} - {"worker", "le"}
    assert registered == documented()


def test_a_sink_tasks_active_records_are_those_read_past_their_committed_offsets():
    metrics = WorkerMetrics("w")
    task = metrics.task("out", 0)
    labels = {"worker": "w", "connector": "out", "task": "0"}
    task.sink_committed({("t", 0): 100, ("t", 1): 0})  # where the group stood at the start
    assert metrics.registry.get_sample_value("connectd_sink_records_active", labels) is None  # nothing read yet
    task.sink_read({("t", 0): 150, ("t", 1): 20})
    assert metrics.registry.get_sample_value("connectd_sink_records_active", labels) == 70
    task.sink_committed({("t", 0): 150})  # pre_commit let one partition's offsets go
    assert metrics.registry.get_sample_value("connectd_sink_records_active", labels) == 20
    task.sink_read({("t", 1): 10})  # rewound by the task, below what is committed: counts as none
    task.sink_committed({("t", 1): 15})
    assert metrics.registry.get_sample_value("connectd_sink_records_active", labels) == 0
    task.remove()
    assert metrics.registry.get_sample_value("connectd_sink_records_active", labels) is None


def test_a_source_tasks_transactions_are_a_histogram_of_their_sizes_only_where_it_delivers_exactly_once():
    metrics = WorkerMetrics("w")
    labels = {"worker": "w", "connector": "in", "task": "0"}
    plain, exactly_once = metrics.task("in", 0), metrics.task("in", 1)
    plain.task_counts({"polls": 3})
    exactly_once.task_counts({"polls": 3, "transactions": [2000, 150], "transaction_commit_seconds": 0.5})
    exactly_once.task_counts({"transactions": [10], "transaction_commit_seconds": 0.25, "transaction_aborts": 2})

    def value(name: str, task: str) -> float | None:
        return metrics.registry.get_sample_value(f"connectd_source_transaction_{name}", {**labels, "task": task})

    assert value("records_count", "0") is None and value("commit_seconds_total", "0") is None
    assert value("aborts_total", "0") is None
    assert (value("records_count", "1"), value("records_sum", "1"), value("commit_seconds_total", "1"),
            value("aborts_total", "1")) == (3, 2160, 0.75, 2)
    exactly_once.remove()
    assert value("records_count", "1") is None and value("aborts_total", "1") is None


def test_a_spark_level_sink_task_that_reads_nothing_here_has_no_active_records_series():
    metrics = WorkerMetrics("w")
    metrics.task("out", 0).sink_committed({("t", 0): 5})
    assert metrics.registry.get_sample_value(
        "connectd_sink_records_active", {"worker": "w", "connector": "out", "task": "0"}) is None


def test_the_last_error_and_last_rebalance_are_timestamps_set_when_they_happen(monkeypatch):
    import prometheus_client.metrics

    monkeypatch.setattr(prometheus_client.metrics.time, "time", lambda: 1700000000.0)
    metrics = WorkerMetrics("w")
    task = metrics.task("out", 0)
    labels = {"worker": "w", "connector": "out", "task": "0"}
    task.task_counts({"sent": 3}, {})
    assert metrics.registry.get_sample_value("connectd_task_last_error_timestamp_seconds", labels) is None
    assert metrics.registry.get_sample_value("connectd_last_rebalance_timestamp_seconds", {"worker": "w"}) is None
    task.task_counts({"failures": 1, "skipped": 1}, {})
    metrics.rebalanced(2.0)
    assert metrics.registry.get_sample_value("connectd_task_last_error_timestamp_seconds", labels) == 1700000000
    assert metrics.registry.get_sample_value("connectd_last_rebalance_timestamp_seconds", {"worker": "w"}) == 1700000000


def test_a_stopped_tasks_every_series_goes_and_its_counters_only_went_up():
    metrics = exercised()
    before = scrape(metrics)
    for task in list(metrics._tasks.values()):
        task.task_counts({"sent": 2}, {("t", 0): 1})  # counts again: every counter stays or grows
    after = scrape(metrics)
    assert all(after[key] >= value for key, value in before.items() if key[0].endswith("_total"))
    for task in list(metrics._tasks.values()):
        task.remove()
    left = [key for key in scrape(metrics) if ("task", "0") in key[1]
            and key[0] not in ("connectd_task_status", "connectd_sink_task_partitions")]  # the herder's view
    assert left == []
