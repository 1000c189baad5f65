"""`connectd status`'s look and table (pure logic: the REST answers as data)."""

from __future__ import annotations

import io

from rich.console import Console

from connectd.rest.client import RestClientError
from connectd.cli_status import look, record_counts, render

CONNECTORS = {
    "in": {"info": {"type": "source"}, "status": {
        "connector": {"state": "RUNNING", "worker_id": "a:8083"},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "a:8083"},
                  {"id": 1, "state": "FAILED", "worker_id": "b:8083",
                   "trace": "org.example.Boom: the disk is full\n\tat somewhere"}]}},
}


def exposition(written0: float, written1: float) -> str:
    return ("# TYPE connectd_source_records_written counter\n"
            f'connectd_source_records_written_total{{connector="in",task="0",worker="a:8083"}} {written0}\n'
            f'connectd_source_records_written_total{{connector="in",task="1",worker="a:8083"}} {written1}\n')


def test_records_per_second_come_from_two_looks_and_an_unreadable_worker_is_named():
    pages = {"a:8083": exposition(100, 0)}

    def metrics(worker: str) -> str:
        if worker not in pages:
            raise RestClientError(f"cannot read {worker}")
        return pages[worker]

    first, counted = look(lambda: CONNECTORS, metrics)
    assert [line.rate for line in first.lines] == [None, None, None]  # one look: no rate yet
    pages["a:8083"] = exposition(100 + 500, 0)
    then, counts = counted
    snapshot, _ = look(lambda: CONNECTORS, metrics, (then - 2.0, counts))  # as if 2 s had passed
    connector, task0, task1 = snapshot.lines
    assert (connector.task, task0.task, task1.task) == (None, 0, 1)
    assert 240 <= task0.rate <= 250  # 500 records in a little over 2 s
    assert task1.rate is None and snapshot.unreachable == ["b:8083"]  # b's metrics could not be read
    assert task1.error == "org.example.Boom: the disk is full"
    assert snapshot.workers == {"a:8083": 1, "b:8083": 1}


def test_the_table_says_what_runs_where_and_what_failed():
    snapshot, _ = look(lambda: CONNECTORS, lambda worker: exposition(1, 1))
    out = io.StringIO()
    Console(file=out, width=160).print(render(snapshot, "http://a:8083"))
    text = out.getvalue()
    assert "http://a:8083: 2 workers, 1 connector, 1 of 2 tasks running, 1 failed" in text
    rows = [line.split() for line in text.splitlines()]
    assert ["in", "source", "RUNNING", "a:8083"] in rows
    assert ["task", "1", "FAILED", "b:8083", "-", "org.example.Boom:", "the", "disk", "is", "full"] in rows


def test_record_counts_add_sources_and_sinks_per_task():
    text = exposition(3, 4) + ("# TYPE connectd_sink_records_read counter\n"
                               'connectd_sink_records_read_total{connector="out",task="0",worker="a"} 7\n')
    assert record_counts(text) == {("in", 0): 3, ("in", 1): 4, ("out", 0): 7}


def test_the_capacity_policy_desired_and_current_counts_and_the_last_change_are_shown():
    change = {"time_ms": 1_700_000_000_000, "desired": 2, "current": 1, "action": "scale_out",
              "reason": "average CPU 91 % over 120 s of 1 of 1 workers, above scale-out 80 %"}
    view = {"policy": {"autoScaling": {"minWorkerCount": 1, "maxWorkerCount": 3, "mcuCount": 2,
                                       "scaleInPolicy": {"cpuUtilizationPercentage": 20},
                                       "scaleOutPolicy": {"cpuUtilizationPercentage": 80}}},
            "source": "config topic", "provider": "processes", "desired": 2, "current": 1, "last_change": change,
            "last_decision": {**change, "time_ms": change["time_ms"] + 60_000, "action": "hold",
                              "reason": "cool-down: 240 s left of 300 s"}}
    snapshot, _ = look(lambda: CONNECTORS, lambda worker: exposition(1, 1), capacity=lambda: view)
    out = io.StringIO()
    Console(file=out, width=200).print(render(snapshot, "http://a:8083"))
    text = out.getvalue()
    assert ("capacity: autoscaling 1–3 × 2 MCU, CPU in < 20 % < out 80 % (config topic; provider processes); "
            "workers: 1, desired 2") in text
    assert "scale out, 2: average CPU 91 % over 120 s of 1 of 1 workers, above scale-out 80 %" in text
    assert "hold, 2: cool-down: 240 s left of 300 s" in text

    def standalone():
        raise RestClientError("404: This worker runs standalone")

    alone, _ = look(lambda: CONNECTORS, lambda worker: exposition(1, 1), capacity=standalone)
    out = io.StringIO()
    Console(file=out, width=200).print(render(alone, "http://a:8083"))
    assert alone.capacity is None and "capacity" not in out.getvalue()
