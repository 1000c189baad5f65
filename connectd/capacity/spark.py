"""The ``spark`` capacity provider: each worker grows and shrinks its own Spark executors.

Capacity for the data plane without more workers: on a Spark standalone
cluster (``spark.master=spark://…``), the records of a worker's tasks move
through its executors, and this provider keeps their number within the
policy's limits, which then count *executors per worker* (``minWorkerCount``
… ``maxWorkerCount``), by the same decision as the leader's for workers
(:func:`connectd.capacity.decision.decide`), every ``capacity.evaluation.interval.ms``::

    each executor's utilisation = its task time over the interval / (interval × its cores)
        (Spark's own executor summaries: what its tasks kept its cores busy with)
    decide(policy, executors, their utilisation, window, cool-down)
    more wanted ─► SparkContext.requestTotalExecutors(desired): the master starts them
    fewer wanted ─► requestTotalExecutors(desired), then kill the newest idle executor (none
                    running a task), one a round: a micro-batch's task lost with an executor
                    is run again by Spark, and its offsets are committed only after it

``mcuCount`` of the worker keys sizes each executor (``spark.executor.cores``
mcuCount, ``spark.executor.memory`` mcuCount × 4g, unless the file sets them),
at the worker's start. Spark's own dynamic allocation is refused beside it:
both would size the executors.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from typing import Any

from connectd.capacity.decision import HOLD, Decision, LoadSample, decide
from connectd.capacity.providers import EACH_WORKER, CapacityProvider, ProviderUnusable
from connectd.logging import get_logger

__all__ = ["SparkProvider"]

log = get_logger(__name__)

_KEPT_SAMPLES = 4096


class SparkProvider(CapacityProvider):
    """A worker's executors on a Spark standalone cluster, sized by the capacity policy."""

    name = "spark"
    acts_in = EACH_WORKER

    def __init__(self, worker: Any) -> None:
        super().__init__(worker)
        self.interval_s = worker.get("capacity.evaluation.interval.ms") / 1000
        self.last: Decision | None = None
        self._spark: Any = None
        self._policy: Callable[[], Any] = lambda: None
        self._task: asyncio.Task[None] | None = None
        self._loads: dict[str, collections.deque[LoadSample]] = {}
        self._seen: dict[str, tuple[float, int]] = {}  # executor → (time, its total task time in ms)
        self._watching_since = 0.0
        self._executors: list[dict[str, Any]] = []
        self._removing: set[str] = set()  # executors asked to go, until Spark no longer lists them
        #: the last decision that changed the desired count
        self.last_change: Decision | None = None

    def check(self) -> None:
        conf = self.worker.spark_conf()
        master = conf["spark.master"]
        if not master.startswith("spark://"):
            raise ProviderUnusable(self.name, f"spark.master is {master}: it sizes a worker's executors on a Spark "
                                              "standalone cluster (spark://host:port), and there is no Spark master")
        if conf.get("spark.dynamicAllocation.enabled", "false").strip().lower() == "true":
            raise ProviderUnusable(self.name, "spark.dynamicAllocation.enabled=true: Spark's dynamic allocation "
                                              "and this provider would both size the executors; turn one off")

    async def start(self, spark: Any, policy: Callable[[], Any]) -> None:
        self._spark, self._policy = spark, policy
        self._watching_since = time.time()
        current = self._policy()
        if current is not None:  # from the lowest count up, as load asks
            await asyncio.to_thread(self._request, current.lowest)
            self.last = Decision(time.time(), current.lowest, len(await asyncio.to_thread(self._read)), HOLD,
                                 f"started at the lowest count, {current.lowest}")
        self._task = asyncio.get_running_loop().create_task(self._run(), name="capacity-spark")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                # The policy is read here, on the event loop that keeps the config topic's snapshot up to date.
                policy = self._policy()
                await asyncio.to_thread(self.step, policy)
            except Exception as exc:  # the next round tries again; the worker and its tasks go on
                log.error("capacity_provider_failed", provider=self.name, error=str(exc), exc_info=exc)

    # --- one round, in a thread (py4j calls block; nothing here reads the event loop's state) ---

    def step(self, policy: Any) -> None:
        """One round under *policy* (a :class:`~connectd.capacity.policy.CapacityPolicy`, or ``None``)."""
        executors = self._read()
        now = time.time()
        for executor in executors:
            if executor["id"] in self._removing:
                continue
            seen = self._seen.get(executor["id"])
            self._seen[executor["id"]] = (now, executor["task_ms"])
            if seen is not None and now > seen[0]:
                # Spark credits a task's time to the executor only as the task ends: a long task would show
                # as idle while it runs, then as a burst of more than the executor's cores. So the share of
                # its cores running tasks now counts too, and no sample is more than 100 %.
                ended = max(executor["task_ms"] - seen[1], 0) / 1000 / (now - seen[0]) / executor["cores"] * 100
                running = min(executor["active_tasks"], executor["cores"]) / executor["cores"] * 100
                busy = min(max(ended, running), 100.0)
                self._loads.setdefault(executor["id"], collections.deque(maxlen=_KEPT_SAMPLES)).append(
                    LoadSample(now, busy))
        self._removing &= {executor["id"] for executor in executors}
        executors = [executor for executor in executors if executor["id"] not in self._removing]
        ids = [executor["id"] for executor in executors]
        for gone in [e for e in self._seen if e not in ids]:
            self._seen.pop(gone)
            self._loads.pop(gone, None)
        self._executors = executors
        if policy is None or not executors:
            return
        decision = decide(policy, ids, self._loads, now, watching_since_s=self._watching_since,
                          silent_after_s=max(3 * self.interval_s, 1.0), previous=self.last, unit="executors")
        changed = self.last is None or decision.desired != self.last.desired
        self.last = decision
        if changed:
            self.last_change = decision
        (log.info if changed else log.debug)("spark_executors_decision", desired=decision.desired,
                                             current=decision.current, action=decision.action,
                                             reason=decision.reason)
        if len(executors) > decision.desired:
            idle = [e for e in executors if e["active_tasks"] == 0]
            if idle:
                newest = max(idle, key=lambda e: e["added_ms"])
                log.info("spark_executor_removed", executor=newest["id"], host=newest["host"],
                         desired=decision.desired, current=len(executors))
                self._kill(newest["id"])
                self._removing.add(newest["id"])
        # Every round, after any kill (which lowers Spark's target by one): the master keeps this many.
        self._request(decision.desired)

    def _read(self) -> list[dict[str, Any]]:
        """The application's live executors (not the driver), from Spark's status store."""
        summaries = self._spark.sparkContext._jsc.sc().statusStore().executorList(True)
        found = []
        for i in range(summaries.size()):
            summary = summaries.apply(i)
            if summary.id() == "driver":
                continue
            found.append({"id": summary.id(), "host": summary.hostPort(), "cores": max(summary.totalCores(), 1),
                          "task_ms": summary.totalDuration(), "active_tasks": summary.activeTasks(),
                          "added_ms": summary.addTime().getTime()})
        return found

    def _request(self, total: int) -> None:
        context = self._spark.sparkContext
        empty = getattr(context._jvm.scala.collection.immutable, "Map$").__getattr__("MODULE$").empty()
        if not context._jsc.sc().requestTotalExecutors(total, 0, empty):
            log.warning("spark_executors_not_requested", total=total)

    def _kill(self, executor: str) -> None:
        context = self._spark.sparkContext
        ids = context._jvm.java.util.ArrayList()
        ids.add(executor)
        seq = context._jvm.scala.jdk.javaapi.CollectionConverters.asScala(ids).toList()
        if not context._jsc.sc().killExecutors(seq):
            log.warning("spark_executor_not_removed", executor=executor)

    def view(self) -> dict[str, Any]:
        """What ``GET /capacity/status`` shows of this worker's executors."""
        return {"executors": [{k: e[k] for k in ("id", "host", "cores", "active_tasks")} for e in self._executors],
                "desired": self.last.desired if self.last is not None else None,
                "last_decision": self.last.to_json() if self.last is not None else None,
                "last_change": self.last_change.to_json() if self.last_change is not None else None}
