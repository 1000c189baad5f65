"""Supervision: one state machine per task, and the one place that starts, stops and restarts tasks.

Both herders hand every start, stop, restart, pause, resume, liveness check
and partition rediscovery of a task to their :class:`Supervisor`; nothing
else touches a task's query. The supervisor's states, and the status each
reports (REST, the status topic)::

    state        status          what the task is doing
    assigned     UNASSIGNED      given to this worker, not started yet
    starting     (unchanged)     its query is starting (first start: UNASSIGNED; restart: RESTARTING)
    running      RUNNING         a live query whose trigger fires
    paused       PAUSED          a live query offered nothing new (the connector is PAUSED)
    stopping     (unchanged)     its query stops: the batch in flight finishes, bounded
    failed       FAILED + trace  its query failed, or could not start; it holds nothing
    restarting   RESTARTING      failed, its automatic restart due at ``restart_at``
                                 (``errors.restart.enable``), or restarted on request
    unassigned   UNASSIGNED      stopped: no query, no client, no plugin instance

Transitions::

    assigned, unassigned, failed ──start──► starting ──query up──► running (paused: target PAUSED)
    starting ──a Spark hiccup──► starting, at once (see "The budget")
    starting ──any other error──► failed ──errors.restart.enable──► restarting ──due──► starting
    running ◄──pause / resume──► paused
    running, paused ──check: the query failed──► failed (its clients released) ──► restarting …
    running, paused ──check: a hiccup; the query ended unasked; its trigger stalled──► starting,
                      at once (quietly: the status stays), within the budget; past it: failed
    running, paused ──rediscovery: its share of partitions changed──► stopping ──► starting (quietly)
    any ──stop: revoked, connector stopped, deleted or reconfigured, worker stopping──► stopping ──► unassigned
    any ──restart (REST, a restart request)──► restarting ──► stopping ──► starting

A stop always ends in ``unassigned``: each of its steps (the query, each of
the task's clients and its plugin instance, its metrics, its active topics)
runs whatever the others did, and a step that fails is logged with its
trace. A start that fails ends in ``failed`` with the trace. So the state a
task reports is what it does: RUNNING and PAUSED only with a live query.

The liveness check (:meth:`Supervisor.check`, every pass of the herder's
watch loop) holds every running or paused task to it: its query is active
(each pass); its trigger still fires — an idle query reports progress every
``spark.sql.streaming.noDataProgressEventInterval`` (10 s), so none for
three times that while no trigger runs means it no longer fires; and no
trigger (planning and running one micro-batch) has run longer than the
worker's ``task.stall.timeout.ms`` (every few seconds). A query that failed
makes the task FAILED (then RESTARTING with ``errors.restart.enable``); one
that ended without being asked, or stalled, is started again at once.

The budget: Spark's own failures (:func:`connectd.runtime.spark.session.is_hiccup`),
queries that ended unasked and stalls restart a task at once, quietly (its
status stays RUNNING, no record is written), at most
:data:`HICCUPS_ALLOWED` times in :data:`HICCUP_WINDOW_S`; one more makes it
FAILED with what happened, for an operator or ``errors.restart.enable``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connectd.herder.runs import ConnectorRun, TaskRun, trace_of
from connectd.logging import bind_context, get_logger
from connectd.runtime.sink.task import assign_partitions
from connectd.runtime.source.active_topics import read_active_topics, remove_active_topics
from connectd.runtime.spark.session import is_hiccup
from connectd.status import FAILED, PAUSED, RESTARTING, RUNNING

if TYPE_CHECKING:
    from connectd.herder.base import HerderBase
    from connectd.runtime.assembly import TaskHandle

__all__ = ["HICCUPS_ALLOWED", "HICCUP_WINDOW_S", "Supervisor"]

log = get_logger(__name__)

ASSIGNED, STARTING, RUNNING_, PAUSED_ = "assigned", "starting", "running", "paused"
STOPPING, FAILED_, RESTARTING_, UNASSIGNED = "stopping", "failed", "restarting", "unassigned"
_LIVE = (RUNNING_, PAUSED_)

#: Spark's own failures, unasked ends and stalls restart a task at once at most this many times in
#: the window; one more makes the task FAILED.
HICCUPS_ALLOWED = 3
HICCUP_WINDOW_S = 600.0
_FIRST_RESTART_DELAY_S = 1.0
#: How often a live task's trigger is looked at (its query's activity: every check).
_PROGRESS_CHECK_S = 5.0
#: An idle query reports progress this often unless Spark's conf says otherwise.
_IDLE_PROGRESS_S = 10.0
#: A trigger that has not fired for this many idle-progress intervals (30 s at least) has stopped.
_IDLE_INTERVALS = 3
_MIN_IDLE_LIMIT_S = 30.0


@dataclass(frozen=True)
class Liveness:
    """What a task's query is doing, as Spark says."""

    active: bool
    failure: str | None = None
    #: A trigger (planning and running a micro-batch) is under way.
    trigger_active: bool = False
    #: Seconds since the query's last progress report (or its start), ``None``: not looked at.
    progress_age_s: float | None = None


class Supervisor:
    """Runs the tasks of one herder; see the module docstring.

    :param herder: the herder whose tasks these are: its assembler, metrics, statuses and
        per-mode answers (``_task_count``, ``_prepare_task``, ``_too_many_tasks``).
    """

    def __init__(self, herder: HerderBase) -> None:
        self._herder = herder
        #: ``task.stall.timeout.ms`` in seconds; 0: a long trigger is never a stall.
        self.stall_timeout_s = herder.worker.get("task.stall.timeout.ms") / 1000
        self._idle_limit_s: float | None = None

    # --- operations (each takes the task's lock) ---

    async def start(self, run: ConnectorRun, task: TaskRun) -> None:
        """Start *task*'s query and report it RUNNING (PAUSED), or FAILED with why it could not start."""
        async with task.lock:
            await self._start(run, task)

    async def stop(self, run: ConnectorRun, task: TaskRun, timeout_s: float | None = None) -> None:
        """Stop *task* (gracefully within *timeout_s*, ``task.shutdown.graceful.timeout.ms`` by
        default); it ends ``unassigned`` whatever fails on the way. Reports no status: the caller
        says what the task is now (UNASSIGNED when revoked, nothing when it is forgotten)."""
        async with task.lock:
            await self._stop(run, task, timeout_s)

    async def stop_all(self, tasks: Iterable[tuple[ConnectorRun, TaskRun]], timeout_s: float | None = None) -> None:
        """Stop several tasks at once: each waits for its own batch in flight, all for the slowest."""
        await asyncio.gather(*(self.stop(run, task, timeout_s) for run, task in tasks))

    async def restart(self, run: ConnectorRun, task: TaskRun) -> None:
        """Restart *task* on request (REST, a restart request): RESTARTING, stopped, started again,
        with its automatic restarts counted afresh."""
        async with task.lock:
            self._report(run, task, RESTARTING_, RESTARTING)
            task.restart_at, task.restarts = None, 0
            await self._stop(run, task)
            too_many = self._herder._too_many_tasks(run)
            if too_many is not None:
                self._report(run, task, FAILED_, FAILED, too_many)
                return
            await self._start(run, task)

    async def fail(self, run: ConnectorRun, task: TaskRun, trace: str) -> None:
        """FAILED with *trace* (something went wrong with the task outside its query): its query is
        stopped and its clients released first; ``errors.restart.enable`` applies."""
        async with task.lock:
            await self._stop(run, task)
            self._fail(run, task, trace)

    async def pause(self, run: ConnectorRun, task: TaskRun) -> None:
        """A running task reads nothing new (the batch in flight completes); one that failed stays FAILED."""
        async with task.lock:
            if task.state in _LIVE and task.query is not None:
                task.query.pause()
                self._report(run, task, PAUSED_, PAUSED)

    async def resume(self, run: ConnectorRun, task: TaskRun) -> None:
        async with task.lock:
            if task.state in _LIVE and task.query is not None:
                task.query.resume()
                self._report(run, task, RUNNING_, RUNNING)

    async def check(self, run: ConnectorRun, task: TaskRun, now: float) -> None:
        """The liveness check of one task (see the module docstring); an automatic restart due runs here.

        An operation under way on the task (it holds its lock) is left alone: it decides.
        """
        if task.lock.locked():
            return
        async with task.lock:
            with bind_context(connector=run.name, task=task.id):
                if task.state == RESTARTING_ and task.restart_at is not None:
                    if now >= task.restart_at:
                        task.restart_at = None
                        log.info("task_restarting", attempt=task.restarts)
                        await self._stop(run, task)
                        await self._start(run, task)
                    return
                if task.state not in _LIVE:
                    return
                handle = task.handle
                if handle is None or handle.query is None:  # never, by construction: said loudly if it happens
                    await self._restart_quietly(run, task, "the task was reported live but had no Spark query")
                    return
                deep = now - task.progress_checked >= _PROGRESS_CHECK_S
                if deep:
                    task.progress_checked = now
                liveness = await asyncio.to_thread(self._liveness, handle, task.started_wall, deep)
                await self._judge(run, task, handle, liveness)

    async def rediscover(self, run: ConnectorRun, partitions: frozenset[Any]) -> None:
        """A sink connector's partitions are now *partitions*: each of its tasks here whose share
        changed (a topic that appeared or grew, a new topic matching ``topics.regex``) is stopped and
        started again on its new share; the others go on undisturbed."""
        before, count = run.partitions, self._herder._task_count(run)
        moved = [task for task in run.tasks if task.state in _LIVE
                 and assign_partitions(before, task.id, count) != assign_partitions(partitions, task.id, count)]
        with bind_context(connector=run.name):
            log.info("sink_topics_changed", before=len(before), after=len(partitions),
                     tasks_restarted=[task.id for task in moved])
            run.partitions = partitions
            for task in moved:
                await task.lock.acquire()
            try:
                await asyncio.gather(*(self._stop(run, task) for task in moved))
                for task in moved:  # one after another: see _start_assigned in connectd.cluster.herder
                    await self._start(run, task, quiet=True)
            finally:
                for task in moved:
                    task.lock.release()

    # --- the state machine ---

    def _report(self, run: ConnectorRun, task: TaskRun, state: str, status: str | None = None,
                trace: str | None = None) -> None:
        task.state = state
        if status is not None:
            self._herder._set(run.name, task.id, status, trace)

    async def _start(self, run: ConnectorRun, task: TaskRun, *, quiet: bool = False) -> None:
        """*quiet*: the task was live and is started again (a hiccup, new partitions): its status is
        written only if it changes."""
        herder = self._herder
        with bind_context(connector=run.name, task=task.id):
            task.state = STARTING
            while True:
                metrics = herder.metrics.task(run.name, task.id)
                try:
                    await herder._prepare_task(run)
                    task_class = run.task_class(task.config)
                    tasks, paused = herder._task_count(run), run.target == "PAUSED"
                    handle = await asyncio.to_thread(  # the config's placeholders resolved in the thread too
                        lambda: herder.assembler.start(
                            connector=run.name, connector_config=run.config, settings=herder.settings(run),
                            task_class=task_class, task_id=task.id, task_config=task.config, tasks=tasks,
                            paused=paused, metrics=metrics))
                    break
                except Exception as exc:
                    metrics.remove()  # a task that did not start leaves no series
                    if self._hiccup(task, exc):
                        continue
                    herder.metrics.started("task", False)
                    log.error("task_failed", error=str(exc))
                    self._fail(run, task, trace_of(exc))
                    return
            task.handle, task.started_wall = handle, time.time()
            if handle.partitions:
                run.partitions = handle.partitions
            herder.metrics.started("task", True)
            status = PAUSED if run.target == "PAUSED" else RUNNING
            metrics.state(status)
            current = herder.status.task(run.name, task.id)
            self._report(run, task, PAUSED_ if status == PAUSED else RUNNING_,
                         None if quiet and current is not None and current.state == status else status)

    async def _stop(self, run: ConnectorRun, task: TaskRun, timeout_s: float | None = None) -> None:
        handle, task.handle = task.handle, None
        task.restart_at = None
        task.progress_checked = 0.0
        if handle is None:
            task.state = UNASSIGNED
            return
        task.state = STOPPING
        timeout = self._herder.graceful_timeout_s if timeout_s is None else timeout_s
        try:
            await asyncio.to_thread(self._release, run, handle, timeout)
        finally:
            task.state = UNASSIGNED

    def _release(self, run: ConnectorRun, handle: TaskHandle, timeout_s: float) -> None:
        """Every step of a stop, each whatever the others did (blocking: in a thread)."""
        herder = self._herder

        def fold_active_topics() -> None:
            workdir = getattr(handle.query, "workdir", None)
            if workdir is not None:  # a source task's topics, now final, go to the store
                if herder.topic_tracking:
                    herder.active_topics.add(run.name, read_active_topics(workdir))
                remove_active_topics(workdir)

        steps = [("query", lambda: herder.assembler.stop(handle, timeout_s)),
                 ("metrics", lambda: handle.metrics.remove() if handle.metrics is not None else None),
                 ("active_topics", fold_active_topics)]
        for step, action in steps:
            try:
                action()
            except Exception as exc:  # noqa: BLE001 - the other steps run all the same; the trace is logged
                log.error("task_stop_step_failed", connector=run.name, step=step, error=f"{type(exc).__name__}: {exc}",
                          exc_info=exc)

    def _fail(self, run: ConnectorRun, task: TaskRun, trace: str) -> None:
        """FAILED with *trace*; with ``errors.restart.enable``, RESTARTING after a back-off."""
        self._report(run, task, FAILED_, FAILED, trace)
        policy = self._herder.settings(run).restart
        if not policy.enable:
            return
        if 0 <= policy.max_attempts <= task.restarts:
            log.error("task_restarts_exhausted", connector=run.name, task=task.id, attempts=task.restarts)
            return
        cap = policy.backoff_max_ms / 1000
        delay = min(_FIRST_RESTART_DELAY_S * 2**task.restarts, cap)
        task.restarts += 1
        task.restart_at = asyncio.get_running_loop().time() + delay
        self._report(run, task, RESTARTING_, RESTARTING, self._herder.status.task(run.name, task.id).trace)
        log.warning("task_restart_scheduled", connector=run.name, task=task.id, attempt=task.restarts, delay_s=delay)

    async def _judge(self, run: ConnectorRun, task: TaskRun, handle: TaskHandle, liveness: Liveness) -> None:
        """Act on what the task's query is doing (the task's lock held)."""
        if not liveness.active:
            if liveness.failure:
                if self._hiccup(task, liveness.failure):  # not the task's failure: its query starts again at once
                    await self._stop(run, task)
                    await self._start(run, task, quiet=True)
                    return
                log.error("task_failed", error=liveness.failure.strip().splitlines()[0][:300])
                await self._stop(run, task)  # its clients and plugin instance are released now
                self._fail(run, task, liveness.failure)
                return
            await self._restart_quietly(run, task, f"its Spark query {handle.query.name} ended without the worker "
                                                   "asking it to stop")
            return
        if liveness.progress_age_s is None:
            return
        idle_limit = self._idle_limit()
        if not liveness.trigger_active and liveness.progress_age_s > idle_limit:
            await self._restart_quietly(run, task, f"its Spark query's trigger has not fired for "
                                                   f"{liveness.progress_age_s:.0f} s (an idle query reports "
                                                   f"progress every {idle_limit / _IDLE_INTERVALS:g} s)")
        elif liveness.trigger_active and self.stall_timeout_s and liveness.progress_age_s > self.stall_timeout_s:
            await self._restart_quietly(run, task, f"its Spark query has been in one trigger (a micro-batch) for "
                                                   f"{liveness.progress_age_s:.0f} s, more than task.stall.timeout.ms "
                                                   f"({self.stall_timeout_s:g} s)")

    async def _restart_quietly(self, run: ConnectorRun, task: TaskRun, what: str) -> None:
        """A live task whose query is gone or stuck: started again at once within the budget, else FAILED."""
        log.error("task_query_lost", error=what)
        if self._within_budget(task):
            await self._stop(run, task)
            await self._start(run, task, quiet=True)
            return
        await self._stop(run, task)
        self._fail(run, task, f"connectd: task {task.id} of connector {run.name} stopped working: {what}, "
                              f"more than {HICCUPS_ALLOWED} times in {HICCUP_WINDOW_S / 60:g} minutes.")

    def _hiccup(self, task: TaskRun, error: BaseException | str) -> bool:
        """Whether *error* is one of Spark's own failures, within the budget (counted if so)."""
        if not is_hiccup(error) or not self._within_budget(task):
            return False
        self._herder.metrics.spark_hiccups.labels(self._herder.metrics.worker_id).inc()
        text = error if isinstance(error, str) else str(error)
        log.warning("task_spark_hiccup", attempt=len(task.hiccups), error=text.strip().splitlines()[0][:300])
        return True

    def _within_budget(self, task: TaskRun) -> bool:
        """Whether one more at-once restart is allowed (:data:`HICCUPS_ALLOWED` in :data:`HICCUP_WINDOW_S`);
        counts it if so."""
        now = asyncio.get_running_loop().time()
        task.hiccups = [at for at in task.hiccups if now - at < HICCUP_WINDOW_S]
        if len(task.hiccups) >= HICCUPS_ALLOWED:
            return False
        task.hiccups.append(now)
        return True

    def _liveness(self, handle: TaskHandle, started_wall: float | None, deep: bool) -> Liveness:
        """Ask Spark (blocking: py4j)."""
        query = handle.query
        if not query.is_active():
            return Liveness(False, query.failure())
        if not deep:
            return Liveness(True)
        trigger_active, last = query.progress()
        if not query.is_active():  # it ended meanwhile: the next check says how
            return Liveness(True)
        baseline = last if last is not None else started_wall
        return Liveness(True, None, trigger_active, None if baseline is None else max(time.time() - baseline, 0.0))

    def _idle_limit(self) -> float:
        if self._idle_limit_s is None:
            interval = _IDLE_PROGRESS_S
            spark = self._herder.spark
            if spark is not None:
                try:
                    text = spark.conf.get("spark.sql.streaming.noDataProgressEventInterval", "10000ms")
                    interval = _duration_s(text)
                except Exception:  # noqa: BLE001 - an unreadable setting: Spark's default
                    interval = _IDLE_PROGRESS_S
            self._idle_limit_s = max(interval * _IDLE_INTERVALS, _MIN_IDLE_LIMIT_S)
        return self._idle_limit_s


def _duration_s(text: str) -> float:
    """A Spark time setting (``10000``, ``10000ms``, ``10s``, ``1min``) in seconds."""
    text = text.strip().lower()
    for suffix, scale in (("ms", 0.001), ("min", 60.0), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text) / 1000
