"""A worker's Prometheus metrics: one registry per worker, served on ``/metrics`` of its REST listeners.

Names follow Prometheus' conventions: the ``connectd_`` prefix, ``_total``
for counters, seconds for durations; labels ``worker`` on every series,
``connector`` and ``task`` where they apply. ``docs/metrics.md`` maps
Kafka Connect's JMX metrics to these.

Two kinds of series:

- **states**, computed when Prometheus scrapes (:class:`_StateCollector`,
  reading the herder): connectors and tasks by state, each connector's and
  task's state, connector info, a sink task's partitions, the group's
  generation, leadership and whether it is rebalancing. Nothing keeps them
  up to date between scrapes, and a connector that left this worker leaves
  no series behind.
- **events**, counted as they happen, in the worker process (the control
  plane): start-ups of connectors and tasks, rebalances, and per task its
  micro-batches (duration, records), records read or written, offset
  commits, a sink task's records read and not yet committed (from the
  offsets of its batches and commits) (:class:`TaskMetrics`, one per running
  task, whose series go when the task stops). What a sink task's plugin did
  where it runs (put() calls and time, records sent, failed, skipped,
  retried, logged, dead-lettered) comes back with each batch's result rows,
  and its lag per partition with the batch's plan; a source task's poll()
  calls and errors with its batch's plan (:meth:`TaskMetrics.task_counts`).
  When the latest rebalance and a task's latest record failure happened are
  timestamps set as the worker learns of them.

Counting costs a few dictionary look-ups per micro-batch, never per record.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.registry import Collector

__all__ = ["CONNECTOR_STATES", "TASK_STATES", "TaskMetrics", "WorkerMetrics", "timed_commit"]

#: The states a connector or task may be in, each a series (1 for the current one, 0 for the others).
CONNECTOR_STATES = ("UNASSIGNED", "RUNNING", "PAUSED", "STOPPED", "FAILED", "RESTARTING")
TASK_STATES = ("UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "RESTARTING")

_DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_RECORD_BUCKETS = (1, 10, 100, 500, 1000, 5000, 10000, 50000, 100000)
_REBALANCE_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

_TASK = ["worker", "connector", "task"]


class WorkerMetrics:
    """The registry of one worker and the series counted as things happen.

    :param worker_id: the worker's id, the ``worker`` label of every series.
    """

    def __init__(self, worker_id: str) -> None:
        self.worker_id = worker_id
        self.registry = CollectorRegistry()
        registry = self.registry
        self.connector_startups = Counter(
            "connectd_connector_startups", "Connector start-ups on this worker, by result (success, failure).",
            ["worker", "result"], registry=registry)
        self.task_startups = Counter(
            "connectd_task_startups", "Task start-ups on this worker, by result (success, failure).",
            ["worker", "result"], registry=registry)
        self.spark_hiccups = Counter(
            "connectd_spark_hiccups", "Task queries restarted at once after one of Spark's own failures "
            "(a Python process late to connect back to the JVM), not counted as the task's failure.", ["worker"],
            registry=registry)
        self.rebalances = Counter(
            "connectd_rebalances", "Rebalances of the Connect group this worker completed.", ["worker"],
            registry=registry)
        self.last_rebalance = Gauge(
            "connectd_last_rebalance_timestamp_seconds", "When this worker last completed a rebalance (Unix time); "
            "absent until its first.", ["worker"], registry=registry)
        self.rebalance_seconds = Histogram(
            "connectd_rebalance_seconds", "How long this worker's rebalances took, from the start of the "
            "rebalance to its assignment applied (revoked work stopped, new work started).", ["worker"],
            buckets=_REBALANCE_BUCKETS, registry=registry)
        self.batches = Counter(
            "connectd_task_batches", "Micro-batches a task completed.", _TASK, registry=registry)
        self.batch_seconds = Histogram(
            "connectd_task_batch_seconds", "How long a task's micro-batches took in the worker's foreachBatch "
            "(the batch's Spark job included: reading, converting, putting or producing).", _TASK,
            buckets=_DURATION_BUCKETS, registry=registry)
        self.batch_records = Histogram(
            "connectd_task_batch_records", "Records in a task's micro-batches.", _TASK,
            buckets=_RECORD_BUCKETS, registry=registry)
        self.source_records = Counter(
            "connectd_source_records_written", "Records a source task wrote to Kafka (acknowledged).", _TASK,
            registry=registry)
        self.sink_records = Counter(
            "connectd_sink_records_read", "Records a sink task read from Kafka and handed to its plugin.", _TASK,
            registry=registry)
        self.sink_sent = Counter(
            "connectd_sink_records_sent", "Records a sink task's put() got (after transforms; filtered records "
            "not counted).", _TASK, registry=registry)
        self.sink_puts = Counter(
            "connectd_sink_puts", "put() calls of a sink task (an idle task's put([]) included).", _TASK,
            registry=registry)
        self.sink_put_seconds = Counter(
            "connectd_sink_put_seconds", "Seconds a sink task's put() calls took, retries included: divided by "
            "connectd_sink_puts_total, the mean time of a put().", _TASK, registry=registry)
        self.sink_lag = Gauge(
            "connectd_sink_record_lag", "Records of a partition past what a sink task's last batch of it "
            "read, as its high watermark stood when the batch was planned.", [*_TASK, "topic", "partition"],
            registry=registry)
        self.sink_active = Gauge(
            "connectd_sink_records_active", "Records a sink task read and whose offsets it has not committed "
            "yet (put, and not yet flushed as its pre_commit() allows), as its last batch or commit left them.",
            _TASK, registry=registry)
        self.source_polls = Counter(
            "connectd_source_polls", "poll() calls of a source task that returned records.", _TASK,
            registry=registry)
        self.source_poll_seconds = Counter(
            "connectd_source_poll_seconds", "Seconds a source task's poll() calls took (those that returned "
            "nothing included).", _TASK, registry=registry)
        self.source_polled = Counter(
            "connectd_source_records_polled", "Records a source task's poll() returned (before transforms).",
            _TASK, registry=registry)
        self.source_active = Gauge(
            "connectd_source_records_active", "Records a source task polled and has not yet written, sampled once "
            "per micro-batch (that batch's and those polled ahead).", _TASK, registry=registry)
        self.source_transaction_records = Histogram(
            "connectd_source_transaction_records", "Records in each transaction a source task committed "
            "(exactly.once.source.support=enabled; _count: its transactions).", _TASK,
            buckets=_RECORD_BUCKETS, registry=registry)
        self.source_transaction_commit_seconds = Counter(
            "connectd_source_transaction_commit_seconds", "Seconds a source task's transaction commits took "
            "(sending what was not sent yet included): divided by connectd_source_transaction_records_count, "
            "the mean time of a commit.", _TASK, registry=registry)
        self.source_transaction_aborts = Counter(
            "connectd_source_transaction_aborts", "Transactions a source task aborted: those its connector "
            "asked to abort (transaction.boundary=connector), and one open as the task stopped.", _TASK,
            registry=registry)
        self.record_failures = Counter(
            "connectd_task_record_failures", "Records whose conversion, transformation or put failed (each "
            "attempt's final failure; reported errant records and source records Kafka did not take under "
            "errors.tolerance=all included).", _TASK, registry=registry)
        self.records_skipped = Counter(
            "connectd_task_records_skipped", "Failed records skipped (errors.tolerance=all).", _TASK,
            registry=registry)
        self.error_retries = Counter(
            "connectd_task_error_retries", "Retries of a failed operation on a record (retriable errors).",
            _TASK, registry=registry)
        self.errors_logged = Counter(
            "connectd_task_errors_logged", "Failed records logged (errors.log.enable).", _TASK, registry=registry)
        self.last_error = Gauge(
            "connectd_task_last_error_timestamp_seconds", "When the worker learnt of a task's latest record "
            "failure (Unix time; with the failed record's micro-batch); absent until its first.", _TASK,
            registry=registry)
        self.dlq_requests = Counter(
            "connectd_task_dlq_produce_requests", "Records sent to the dead-letter queue.", _TASK,
            registry=registry)
        self.dlq_failures = Counter(
            "connectd_task_dlq_produce_failures", "Records the dead-letter queue's topic did not take.", _TASK,
            registry=registry)
        self.offset_commits = Counter(
            "connectd_task_offset_commits", "A task's offset commits, by result (success, failure).",
            [*_TASK, "result"], registry=registry)
        self.offset_commit_seconds = Histogram(
            "connectd_task_offset_commit_seconds", "How long a task's offset commits took.", _TASK,
            buckets=_DURATION_BUCKETS, registry=registry)
        self.cpu_utilization = Gauge(
            "connectd_worker_cpu_utilization_percent", "CPU of this worker's whole process tree (Python, Spark's "
            "JVM and its Python workers) over the last capacity evaluation interval, in percent of its Spark's "
            "cores: the figure the capacity policy's leader averages (distributed mode).", ["worker"],
            registry=registry)
        self.capacity_decisions = Counter(
            "connectd_capacity_decisions", "The capacity decisions this worker took as the leader, by action "
            "(scale_out, scale_in, hold).", ["worker", "action"], registry=registry)
        #: this worker's process tree (connectd.capacity.load.ProcessTreeCpu), for connectd_worker_cpu_seconds_total
        self.process_tree: Any = None
        for result in ("success", "failure"):  # exported from the start, at 0
            self.connector_startups.labels(worker_id, result)
            self.task_startups.labels(worker_id, result)
        self.rebalances.labels(worker_id)
        self.spark_hiccups.labels(worker_id)
        self._herder: Any = None
        self._tasks: dict[tuple[str, ...], TaskMetrics] = {}  # the tasks running here, for their state seconds
        registry.register(_StateCollector(self))

    def watch(self, herder: Any) -> None:
        """Compute the state series from *herder* at each scrape."""
        self._herder = herder

    def task(self, connector: str, task: int) -> TaskMetrics:
        """The event series of one running task."""
        made = TaskMetrics(self, connector, task)
        self._tasks[made._labels] = made
        return made

    def rebalanced(self, seconds: float) -> None:
        self.rebalances.labels(self.worker_id).inc()
        self.last_rebalance.labels(self.worker_id).set_to_current_time()
        self.rebalance_seconds.labels(self.worker_id).observe(seconds)

    def started(self, what: str, ok: bool) -> None:
        """A connector's (*what* ``connector``) or a task's (``task``) start-up ended."""
        family = self.connector_startups if what == "connector" else self.task_startups
        family.labels(self.worker_id, "success" if ok else "failure").inc()


class TaskMetrics:
    """One task's event series, labelled once (cheap to count per micro-batch)."""

    def __init__(self, metrics: WorkerMetrics, connector: str, task: int) -> None:
        self._metrics = metrics
        self._labels = (metrics.worker_id, connector, str(task))
        labels = self._labels
        self._batches = metrics.batches.labels(*labels)
        self._batch_seconds = metrics.batch_seconds.labels(*labels)
        self._batch_records = metrics.batch_records.labels(*labels)
        self._source_records = metrics.source_records.labels(*labels)
        self._sink_records = metrics.sink_records.labels(*labels)
        self._commit_ok = metrics.offset_commits.labels(*labels, "success")
        self._commit_failed = metrics.offset_commits.labels(*labels, "failure")
        self._commit_seconds = metrics.offset_commit_seconds.labels(*labels)
        errors = {"failures": metrics.record_failures, "skipped": metrics.records_skipped,
                  "retries": metrics.error_retries, "logged": metrics.errors_logged,
                  "dlq_requests": metrics.dlq_requests, "dlq_failures": metrics.dlq_failures}
        #: TaskCounts keys → families, by the kind of task that reports them
        self._counted = {
            "sink": {"sent": metrics.sink_sent, "puts": metrics.sink_puts, "put_seconds": metrics.sink_put_seconds,
                     **errors},
            "source": {"polls": metrics.source_polls, "poll_seconds": metrics.source_poll_seconds,
                       "polled": metrics.source_polled, **errors},
        }
        self._lagging: set[tuple[str, str]] = set()  # (topic, partition) with a lag series
        self._read_to: dict[tuple[str, int], int] = {}  # a sink task's next offset to read, per partition
        self._committed_to: dict[tuple[str, int], int] = {}  # and to commit
        self._state: str | None = None
        self._since = time.monotonic()
        self._state_seconds: dict[str, float] = {}

    def batch(self, seconds: float, records: int, kind: str) -> None:
        """A micro-batch of *records* records completed in *seconds*; *kind* ``source`` or ``sink``."""
        self._batches.inc()
        self._batch_seconds.observe(seconds)
        self._batch_records.observe(records)
        (self._source_records if kind == "source" else self._sink_records).inc(records)

    def task_counts(self, counts: Mapping[str, float], lag: Mapping[tuple[str, int], int] | None = None) -> None:
        """What the task did where it runs, since its last batch
        (:class:`connectd.runtime.error_handling.TaskCounts`); for a sink task, with *lag*:
        ``{(topic, partition): records past the batch's end}``."""
        for key, family in self._counted["source" if lag is None else "sink"].items():
            family.labels(*self._labels).inc(counts.get(key, 0))  # every one exported, at 0 until it counts
        if counts.get("failures"):
            self._metrics.last_error.labels(*self._labels).set_to_current_time()
        if "active" in counts:
            self._metrics.source_active.labels(*self._labels).set(counts["active"])
        if "transactions" in counts:  # a source task delivering exactly once
            sizes = self._metrics.source_transaction_records.labels(*self._labels)
            for records in counts["transactions"]:
                sizes.observe(records)
            self._metrics.source_transaction_commit_seconds.labels(*self._labels).inc(
                counts.get("transaction_commit_seconds", 0))
        if counts.get("transaction_aborts"):
            self._metrics.source_transaction_aborts.labels(*self._labels).inc(counts["transaction_aborts"])
        for (topic, partition), records in (lag or {}).items():
            self._lagging.add((topic, str(partition)))
            self._metrics.sink_lag.labels(*self._labels, topic, str(partition)).set(records)

    def sink_read(self, ends: Mapping[tuple[str, int], int]) -> None:
        """A sink task's batch read its partitions up to *ends*: ``{(topic, partition): next offset}``."""
        self._read_to.update(ends)
        self._active()

    def sink_committed(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """A sink task's group offsets are *offsets* (committed, or found at its start)."""
        self._committed_to.update(offsets)
        if self._read_to:  # a Spark-level task reads nothing here: no series
            self._active()

    def _active(self) -> None:
        # As Kafka Connect's sink-record-active-count: per partition, read past committed.
        committed = self._committed_to
        self._metrics.sink_active.labels(*self._labels).set(sum(
            max(end - committed[tp], 0) for tp, end in self._read_to.items() if tp in committed))

    def state(self, state: str) -> None:
        """The task is in *state* from now on (``RUNNING``, ``PAUSED``, …)."""
        now = time.monotonic()
        if self._state is not None:
            self._state_seconds[self._state] = self._state_seconds.get(self._state, 0.0) + now - self._since
        self._state, self._since = state, now

    def state_seconds(self) -> dict[str, float]:
        """Seconds the task spent in each state here so far, the current one included."""
        seconds = dict(self._state_seconds)
        if self._state is not None:
            seconds[self._state] = seconds.get(self._state, 0.0) + time.monotonic() - self._since
        return seconds

    def committed(self, seconds: float, ok: bool) -> None:
        """An offset commit ended (stored in the offsets file or topic, or committed to the group)."""
        (self._commit_ok if ok else self._commit_failed).inc()
        self._commit_seconds.observe(seconds)

    def remove(self) -> None:
        """The task stopped here: its series go (another worker may run it now)."""
        metrics = self._metrics
        if metrics._tasks.get(self._labels) is self:
            del metrics._tasks[self._labels]
        for family in (metrics.batches, metrics.batch_seconds, metrics.batch_records, metrics.source_records,
                       metrics.sink_records, metrics.offset_commit_seconds, metrics.source_active,
                       metrics.sink_active, metrics.last_error, metrics.source_transaction_records,
                       metrics.source_transaction_commit_seconds, metrics.source_transaction_aborts,
                       *self._counted["sink"].values(),
                       *self._counted["source"].values()):
            _remove(family, self._labels)
        for topic, partition in self._lagging:
            _remove(metrics.sink_lag, (*self._labels, topic, partition))
        for result in ("success", "failure"):
            _remove(metrics.offset_commits, (*self._labels, result))


@contextlib.contextmanager
def timed_commit(metrics: TaskMetrics | None) -> Iterator[None]:
    """Count the offset commit done in the ``with`` block: its duration, and whether it raised."""
    began = time.monotonic()
    try:
        yield
    except BaseException:
        if metrics is not None:
            metrics.committed(time.monotonic() - began, ok=False)
        raise
    if metrics is not None:
        metrics.committed(time.monotonic() - began, ok=True)


def _remove(family: Any, labels: tuple[str, ...]) -> None:
    try:
        family.remove(*labels)
    except KeyError:
        pass  # never counted


class _StateCollector(Collector):
    """The state series, read off the herder at each scrape."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        herder = self._metrics._herder
        worker = self._metrics.worker_id
        state_seconds = CounterMetricFamily(
            "connectd_task_state_seconds", "Seconds a task spent in each state on this worker since it started "
            "here: rate() of RUNNING's is Kafka Connect's running-ratio, of PAUSED's its pause-ratio.",
            labels=["worker", "connector", "task", "state"])
        for labels, task_metrics in list(self._metrics._tasks.items()):
            for state, seconds in task_metrics.state_seconds().items():
                state_seconds.add_metric([*labels, state], seconds)
        yield state_seconds
        tree = self._metrics.process_tree
        if tree is not None:
            cpu = CounterMetricFamily("connectd_worker_cpu_seconds", "User and system CPU seconds of this worker's "
                                      "whole process tree: Python, Spark's JVM and its Python workers.",
                                      labels=["worker"])
            cpu.add_metric([worker], tree.cpu_seconds())
            yield cpu
            cores = GaugeMetricFamily("connectd_worker_cpu_cores", "The cores this worker's Spark runs tasks on: "
                                      "100 % of connectd_worker_cpu_utilization_percent.", labels=["worker"])
            cores.add_metric([worker], tree.cores)
            yield cores
        if herder is None:
            return
        view = herder.local_view()
        connectors = GaugeMetricFamily("connectd_worker_connectors", "Connectors whose instance runs on this worker.",
                                       labels=["worker"])
        connectors.add_metric([worker], sum(1 for c in view if c["running"]))
        yield connectors
        by_state = GaugeMetricFamily("connectd_worker_tasks", "Tasks this worker runs, by state.",
                                     labels=["worker", "state"])
        counts = {state: 0 for state in TASK_STATES}
        for connector in view:
            for task in connector["tasks"]:
                counts[task["state"]] = counts.get(task["state"], 0) + 1
        for state, count in counts.items():
            by_state.add_metric([worker, state], count)
        yield by_state
        info = InfoMetricFamily("connectd_connector", "A connector this worker runs or runs tasks of.",
                                labels=["worker", "connector", "type", "class", "version"])
        status = GaugeMetricFamily("connectd_connector_status",
                                   "1 for the state a connector whose instance runs here is in, 0 for the others.",
                                   labels=["worker", "connector", "state"])
        task_status = GaugeMetricFamily("connectd_task_status",
                                        "1 for the state a task this worker runs is in, 0 for the others.",
                                        labels=["worker", "connector", "task", "state"])
        partitions = GaugeMetricFamily("connectd_sink_task_partitions", "Partitions assigned to a sink task.",
                                       labels=["worker", "connector", "task"])
        for connector in view:
            name = connector["name"]
            info.add_metric([worker, name, connector["type"], connector["class"], connector["version"]], {})
            if connector["running"]:
                for state in CONNECTOR_STATES:
                    status.add_metric([worker, name, state], float(connector["state"] == state))
            for task in connector["tasks"]:
                for state in TASK_STATES:
                    task_status.add_metric([worker, name, str(task["id"]), state], float(task["state"] == state))
                if task["partitions"] is not None:
                    partitions.add_metric([worker, name, str(task["id"])], task["partitions"])
        yield from (info, status, task_status, partitions)
        group = herder.group_view() if hasattr(herder, "group_view") else None
        if group is not None:
            for name, documentation, value in (
                    ("connectd_group_generation",
                     "The Connect group's generation this worker is in (Kafka Connect's epoch).", group["generation"]),
                    ("connectd_group_leader", "1 if this worker leads the Connect group.", float(group["leader"])),
                    ("connectd_rebalancing", "1 while this worker is rebalancing.", float(group["rebalancing"]))):
                gauge = GaugeMetricFamily(name, documentation, labels=["worker"])
                gauge.add_metric([worker], value)
                yield gauge
        capacity = getattr(herder, "capacity", None)
        decision = capacity.last if capacity is not None else None
        if decision is not None:
            for name, documentation, value in (
                    ("connectd_capacity_workers_desired", "The worker count the cluster's last capacity decision "
                     "asked for (every worker shows the leader's last decision).", decision.desired),
                    ("connectd_capacity_workers_current", "The group's workers when the last capacity decision "
                     "was taken.", decision.current)):
                gauge = GaugeMetricFamily(name, documentation, labels=["worker"])
                gauge.add_metric([worker], value)
                yield gauge
