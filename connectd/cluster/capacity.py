"""A cluster worker's part in the capacity policy (docs/capacity.md).

Every ``capacity.evaluation.interval.ms`` each worker runs one step::

    sample its process tree's CPU (connectd_worker_cpu_utilization_percent)
    no policy (capacity.mode=none and none stored by PUT /capacity), or Spark still warming
    (starting Spark is not load) ─► done
    report its load: connectd-capacity-load-<worker> in the status topic
        {"url", "worker", "time_ms", "cpu_percent", "sink_lag"}
    the leader, with the group settled:
        decide (connectd.capacity.decision) from every member's reports in the window
        ─► connectd-capacity-decision in the status topic (every worker reads it: GET
           /capacity/status, connectd status, the metrics), logged (capacity_decision, at info
           when the desired count changes), counted (connectd_capacity_decisions_total)
        ─► a provider that acts in the leader (systemd) applies it
    (with the spark provider the policy sizes each worker's executors instead, and each worker
     decides for its own: connectd.capacity.spark; the leader decides no worker count)

Every worker reads the status topic from its start, so a new leader has the
members' recent reports and the last decision (its cool-down goes on); its
window starts with its own first report (and again when the policy changes). The policy is the one ``PUT /capacity``
stored in the config topic, else the worker keys ``capacity.*`` (the
leader's, when workers differ). A scale-in is a worker's clean stop (SIGTERM,
``systemctl stop``): it stops its tasks and says so before it leaves, and
the leader hands that work over at once (``released_work_reassigned``).
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from connectd.capacity.decision import HOLD, Decision, LoadSample, decide
from connectd.capacity.load import ProcessTreeCpu
from connectd.capacity.policy import CapacityPolicy, PolicyError
from connectd.capacity.providers import EACH_WORKER, LEADER, CapacityProvider
from connectd.errors import ConnectdError
from connectd.logging import get_logger

__all__ = ["CapacityController", "worker_of"]

log = get_logger(__name__)

_LOAD_PREFIX = "load-"
_DECISION = "decision"
_KEPT_SAMPLES = 4096  # per member, far more than a window of reports


def worker_of(url: str) -> str:
    """A worker's id as statuses show it (its advertised ``host:port``), from its REST URL."""
    return urlsplit(url).netloc or url


class CapacityController:
    """The capacity step of one cluster worker.

    :param herder: the worker's :class:`~connectd.cluster.herder.DistributedHerder`.
    :param provider: the checked provider ``capacity.provider`` names, if any.
    """

    def __init__(self, herder: Any, provider: CapacityProvider | None = None) -> None:
        self.herder = herder
        self.worker = herder.worker
        self.provider = provider
        self.interval_s = self.worker.get("capacity.evaluation.interval.ms") / 1000
        self.cpu: ProcessTreeCpu = herder.metrics.process_tree
        #: the leader's last decision, as this worker read it (or took it)
        self.last: Decision | None = None
        self.last_workers: list[str] = []
        #: the last decision that changed the desired count (the reason a cluster has its size)
        self.last_change: Decision | None = None
        self._loads: dict[str, collections.deque[LoadSample]] = {}  # by worker URL
        self._names: dict[str, str] = {}  # worker URL → worker id
        self._latest: dict[str, dict[str, Any]] = {}  # worker URL → its last report, as written
        self._watching_since: float | None = None  # this worker's first report (under the current policy)
        self._policy_problem: str | None = None

    # --- the policy ---

    def policy(self) -> tuple[CapacityPolicy | None, str]:
        """The cluster's policy and where it comes from (``config topic`` or ``worker config``)."""
        window_s = self.worker.get("capacity.evaluation.window.ms") / 1000
        cooldown_s = self.worker.get("capacity.cooldown.ms") / 1000
        stored = self.herder.snapshot.capacity_policy
        if stored is not None:
            try:
                return CapacityPolicy.from_json(stored, window_s=window_s, cooldown_s=cooldown_s), "config topic"
            except PolicyError as exc:  # checked when written: only a record written by hand gets here
                if self._policy_problem != str(exc):
                    log.error("capacity_policy_unusable", source="config topic", error=str(exc))
                    self._policy_problem = str(exc)
        return CapacityPolicy.from_worker(self.worker), "worker config"

    def on_policy_changed(self) -> None:
        """A policy was stored or removed: the window starts again (reports under the old policy's
        worker count say nothing of the new one's)."""
        self._watching_since = None
        self._policy_problem = None
        policy, source = self.policy()
        log.info("capacity_policy_changed", source=source, policy=policy.to_json() if policy else None)

    # --- the status topic's records ---

    def on_record(self, name: str, value: Any) -> None:
        """A capacity record read from the status topic (this worker's own included)."""
        if name == _DECISION:
            if isinstance(value, Mapping):
                try:
                    self.last = Decision.from_json(value)
                    change = value.get("last_change")
                    self.last_change = Decision.from_json(change) if isinstance(change, Mapping) else None
                except (KeyError, TypeError, ValueError) as exc:
                    log.warning("capacity_record_skipped", record=name, reason=f"malformed: {exc!r}")
                    return
                self.last_workers = [str(w) for w in value.get("workers", [])]
            return
        if not name.startswith(_LOAD_PREFIX) or not isinstance(value, Mapping):
            return
        try:
            url = str(value["url"])
            sample = LoadSample(int(value["time_ms"]) / 1000, float(value["cpu_percent"]),
                                None if value.get("sink_lag") is None else int(value["sink_lag"]))
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("capacity_record_skipped", record=name, reason=f"malformed: {exc!r}")
            return
        samples = self._loads.setdefault(url, collections.deque(maxlen=_KEPT_SAMPLES))
        if samples and sample.time_s <= samples[-1].time_s:
            return  # a report read twice, or out of order
        samples.append(sample)
        self._names[url] = str(value.get("worker") or worker_of(url))
        self._latest[url] = dict(value)

    # --- one step ---

    async def step(self) -> None:
        """Report this worker's load and, on the leader, decide and act."""
        percent = await asyncio.to_thread(self.cpu.percent)  # a walk of the process tree: off the loop
        if percent is not None:
            self.herder.metrics.cpu_utilization.labels(self.herder.worker_id).set(percent)
        policy, source = self.policy()
        if policy is None or percent is None or not self.herder.rest_url or self.herder.warming:
            return  # a worker starting its Spark is busy with that, not with load: it reports once warm
        now = time.time()
        if self._watching_since is None:
            self._watching_since = now
        self.herder.status.put_capacity(_LOAD_PREFIX + self.herder.worker_id, {
            "url": self.herder.rest_url, "worker": self.herder.worker_id, "time_ms": int(now * 1000),
            "cpu_percent": round(percent, 2), "sink_lag": self._sink_lag()})
        if not self.herder.is_leader or self.herder.group_view()["rebalancing"] or self.wants_spark:
            return  # with the spark provider, the policy sizes each worker's executors, not the workers
        members = self.herder.member_urls()
        if not members:
            return
        self._forget_departed(members)
        decision = decide(policy, members, self._loads, now, watching_since_s=self._watching_since,
                          silent_after_s=max(3 * self.interval_s, 1.0), previous=self.last)
        workers = [self._names.get(url, worker_of(url)) for url in members]
        changed = self.last is None or decision.desired != self.last.desired
        self.last, self.last_workers = decision, workers
        if changed:
            self.last_change = decision
        self.herder.status.put_capacity(_DECISION, {
            **decision.to_json(), "workers": workers, "policy": policy.to_json(), "source": source,
            "last_change": self.last_change.to_json() if self.last_change is not None else None})
        self.herder.metrics.capacity_decisions.labels(self.herder.worker_id, decision.action).inc()
        (log.info if changed or decision.action != HOLD else log.debug)(
            "capacity_decision", desired=decision.desired, current=decision.current, action=decision.action,
            reason=decision.reason, source=source)
        if self.provider is not None and self.provider.acts_in == LEADER:
            try:
                await self.provider.apply(decision, workers, self.herder.worker_id)
            except Exception as exc:  # the next decision tries again; the worker and its tasks go on
                log.error("capacity_provider_failed", provider=self.provider.name, error=str(exc),
                          exc_info=not isinstance(exc, ConnectdError))

    def _sink_lag(self) -> int | None:
        """The records this worker's sink tasks have yet to read (``None``: it runs none)."""
        total, any_series = 0, False
        for family in self.herder.metrics.sink_lag.collect():
            for sample in family.samples:
                total += int(sample.value)
                any_series = True
        return total if any_series else None

    def _forget_departed(self, members: list[str]) -> None:
        for url in [u for u in self._loads if u not in members]:
            samples = self._loads[url]
            if samples and samples[-1].time_s < time.time() - 2 * self._window_s():
                del self._loads[url]
                self._latest.pop(url, None)

    def _window_s(self) -> float:
        return self.worker.get("capacity.evaluation.window.ms") / 1000

    # --- what GET /capacity/status shows ---

    def view(self) -> dict[str, Any]:
        policy, source = self.policy()
        decision = self.last
        leader = self.herder.leader_url
        return {
            "worker": self.herder.worker_id,
            "leader": worker_of(leader) if leader else None,
            "policy": policy.to_json() if policy is not None else None,
            "source": source if policy is not None else None,
            "provider": self.provider.name if self.provider is not None else None,
            "desired": decision.desired if decision is not None else None,
            "current": decision.current if decision is not None else None,
            "last_decision": None if decision is None else {**decision.to_json(), "workers": self.last_workers},
            "last_change": None if self.last_change is None else self.last_change.to_json(),
            "workers": {self._names.get(url, worker_of(url)): {k: v for k, v in report.items() if k != "worker"}
                        for url, report in sorted(self._latest.items())},
            **({"spark": self.provider.view()} if self.wants_spark else {}),  # type: ignore[union-attr]
        }

    @property
    def wants_spark(self) -> bool:
        """Whether the provider acts in each worker, on its Spark (:meth:`start` gives it the session)."""
        return self.provider is not None and self.provider.acts_in == EACH_WORKER

    async def start(self, spark: Any) -> None:
        if self.wants_spark:
            await self.provider.start(spark, lambda: self.policy()[0])  # type: ignore[union-attr]

    async def close(self) -> None:
        if self.provider is not None:
            await self.provider.close()
