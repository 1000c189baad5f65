"""``connectd status``: a Connect cluster's workers, connectors and tasks at a glance, over its REST API.

One look is two reads of every worker's ``/metrics`` (records/s is the
difference over the interval), one of ``GET /connectors?expand=status&
expand=info`` and one of ``GET /capacity/status`` (the capacity policy, the
desired and current worker counts, the last decision) from the worker given; ``--watch`` looks again every interval
and redraws the table in place (rich's ``Live``) until Ctrl-C. The workers
are those the statuses name (their ids are their advertised ``host:port``);
one that cannot be read shows ``?`` for its tasks' rates.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from connectd.rest.client import RestClientError

__all__ = ["Snapshot", "TaskLine", "look", "render"]

#: The counters a task's records/s is computed from (sources write, sinks read).
_RECORD_COUNTERS = ("connectd_source_records_written_total", "connectd_sink_records_read_total")


@dataclass
class TaskLine:
    """One row: a connector (``task`` ``None``) or one of its tasks."""

    connector: str
    task: int | None
    kind: str
    state: str
    worker: str
    error: str = ""
    rate: float | None = None  #: records per second over the last interval; None: unknown


@dataclass
class Snapshot:
    lines: list[TaskLine] = field(default_factory=list)
    workers: dict[str, int] = field(default_factory=dict)  #: worker → tasks it runs
    unreachable: list[str] = field(default_factory=list)  #: workers whose /metrics could not be read
    capacity: Mapping[str, Any] | None = None  #: ``GET /capacity/status``; None: a standalone worker, or unread


def _first_line(trace: str | None) -> str:
    return (trace or "").strip().splitlines()[0][:160] if (trace or "").strip() else ""


def record_counts(metrics_text: str) -> dict[tuple[str, int], float]:
    """Each task's records (written or read) so far, from a worker's ``/metrics``."""
    counts: dict[tuple[str, int], float] = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name in _RECORD_COUNTERS:
                key = (sample.labels["connector"], int(sample.labels["task"]))
                counts[key] = counts.get(key, 0.0) + sample.value
    return counts


def look(connectors: Callable[[], Mapping[str, Any]], metrics: Callable[[str], str],
         previous: tuple[float, dict[tuple[str, int], float]] | None = None,
         capacity: Callable[[], Mapping[str, Any]] | None = None,
         ) -> tuple[Snapshot, tuple[float, dict[tuple[str, int], float]]]:
    """One look at the cluster.

    :param connectors: ``GET /connectors?expand=status&expand=info``.
    :param capacity: ``GET /capacity/status``; raises :class:`~connectd.rest.client.RestClientError`
        where there is none (a standalone worker answers 404).
    :param metrics: a worker's ``/metrics`` text, by worker id; raises ``OSError`` or
        :class:`~connectd.rest.client.RestClientError` when it cannot be read.
    :param previous: what the last look counted, for the rates.
    :returns: the snapshot, and what this look counted (for the next).
    """
    answer = connectors()
    snapshot = Snapshot()
    if capacity is not None:
        try:
            snapshot.capacity = capacity()
        except (OSError, RestClientError, ValueError):
            snapshot.capacity = None
    for name in sorted(answer):
        entry = answer[name]
        status = entry.get("status", {})
        kind = (entry.get("info") or {}).get("type") or status.get("type", "")
        connector = status.get("connector", {})
        snapshot.lines.append(TaskLine(name, None, kind, connector.get("state", "?"), connector.get("worker_id", ""),
                                       _first_line(connector.get("trace"))))
        for task in sorted(status.get("tasks", []), key=lambda t: t.get("id", 0)):
            worker = task.get("worker_id", "")
            snapshot.lines.append(TaskLine(name, int(task.get("id", 0)), kind, task.get("state", "?"), worker,
                                           _first_line(task.get("trace"))))
            if worker:
                snapshot.workers[worker] = snapshot.workers.get(worker, 0) + 1
        if connector.get("worker_id"):
            snapshot.workers.setdefault(connector["worker_id"], 0)
    now = time.monotonic()
    counts: dict[tuple[str, int], float] = {}
    for worker in sorted(snapshot.workers):
        try:
            counts.update(record_counts(metrics(worker)))
        except (OSError, RestClientError, ValueError):
            snapshot.unreachable.append(worker)
    if previous is not None:
        then, before = previous
        elapsed = max(now - then, 1e-6)
        for line in snapshot.lines:
            key = (line.connector, line.task) if line.task is not None else None
            if key in counts and key in before and line.worker not in snapshot.unreachable:
                line.rate = max(counts[key] - before[key], 0.0) / elapsed
    return snapshot, (now, counts)


_STATE_STYLES = {"RUNNING": "green", "FAILED": "bold red", "PAUSED": "yellow", "STOPPED": "yellow",
                 "RESTARTING": "cyan", "UNASSIGNED": "dim"}


def render(snapshot: Snapshot, url: str) -> Any:
    """The snapshot as a rich table (connectors, then their tasks indented), with the capacity
    policy's line under it where the cluster has one."""
    tasks = [line for line in snapshot.lines if line.task is not None]
    running = sum(1 for line in tasks if line.state == "RUNNING")
    failed = sum(1 for line in tasks if line.state == "FAILED")
    connectors = len(snapshot.lines) - len(tasks)
    title = (f"{url}: {len(snapshot.workers)} worker{'s' if len(snapshot.workers) != 1 else ''}, "
             f"{connectors} connector{'s' if connectors != 1 else ''}, {running} of {len(tasks)} tasks running"
             + (f", {failed} failed" if failed else ""))
    table = Table(title=title, title_justify="left", expand=False, box=box.SIMPLE_HEAD)
    for column, justify in (("connector / task", "left"), ("type", "left"), ("state", "left"),
                            ("worker", "left"), ("records/s", "right"), ("error", "left")):
        table.add_column(column, justify=justify, no_wrap=column != "error")
    for line in snapshot.lines:
        name = line.connector if line.task is None else f"  task {line.task}"
        if line.task is None:
            rate = ""
        elif line.rate is None:
            rate = "?" if line.worker in snapshot.unreachable else "-"
        else:
            rate = f"{line.rate:,.0f}"
        style = _STATE_STYLES.get(line.state, "")
        table.add_row(name, line.kind if line.task is None else "", f"[{style}]{line.state}[/]" if style else line.state,
                      line.worker, rate, line.error)
    if snapshot.unreachable:
        table.caption = "no metrics from " + ", ".join(snapshot.unreachable)
    if not snapshot.capacity:
        return table
    return Group(table, Text(capacity_line(snapshot.capacity), overflow="fold"))


def capacity_line(view: Mapping[str, Any]) -> str:
    """The capacity policy, the desired and current counts and the last change, in a line or two."""
    policy = view.get("policy")
    if not policy:
        return "capacity: no policy"
    if "provisionedCapacity" in policy:
        shape = policy["provisionedCapacity"]
        text = f"capacity: provisioned {shape['workerCount']} × {shape.get('mcuCount', 1)} MCU"
    else:
        shape = policy["autoScaling"]
        text = (f"capacity: autoscaling {shape['minWorkerCount']}–{shape['maxWorkerCount']} × "
                f"{shape.get('mcuCount', 1)} MCU, CPU in < {shape['scaleInPolicy']['cpuUtilizationPercentage']} % "
                f"< out {shape['scaleOutPolicy']['cpuUtilizationPercentage']} %")
    text += f" ({view.get('source')}; provider {view.get('provider') or 'none'})"
    spark = view.get("spark")
    decided = view if spark is None else spark  # with the spark provider, the policy sizes this worker's executors
    if spark is not None:
        text += f"; this worker's executors: {len(spark.get('executors', []))}, desired {spark.get('desired')}"
    else:
        text += f"; workers: {view.get('current')}, desired {view.get('desired')}"
    for label, key in (("last decision", "last_decision"), ("last change", "last_change")):
        decision = decided.get(key)
        if decision:
            when = time.strftime("%H:%M:%S", time.localtime(decision["time_ms"] / 1000))
            text += (f"\n{label} {when}: {decision['action'].replace('_', ' ')}, {decision['desired']}: "
                     f"{decision['reason']}")
    return text
