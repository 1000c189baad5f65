"""The standalone herder: every connector runs on this worker; configs live in memory.

The connectors come from the files on the command line and from REST calls; statuses, active
topics and (for sources) offsets stay on this machine (the offsets file). Everything a task
goes through is :class:`~connectd.herder.base.HerderBase`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from connectd.config.properties import Origin
from connectd.errors import NotFoundError
from connectd.herder.base import HerderBase, RestartPlan
from connectd.herder.runs import ConnectorRun, TaskRun, restarting
from connectd.logging import get_logger
from connectd.status import FAILED, PAUSED, RESTARTING, RUNNING, STOPPED, UNASSIGNED, Status

__all__ = ["StandaloneHerder"]

log = get_logger(__name__)


class StandaloneHerder(HerderBase):
    """Runs every connector on this worker alone; configs live in memory (and the files given).

    :param worker: the worker's configuration.
    :param worker_id: shown in statuses.
    :param spark: the worker's SparkSession (already started).
    :param status: where statuses go; in memory by default.
    :param active_topics: where the topics connectors use go; in memory by default.
    """

    async def put(
        self,
        config: Mapping[str, str],
        origin: Callable[[str], Origin | None] = lambda key: None,
        initial_state: str | None = None,
    ) -> bool:
        """Create the connector, or replace its config; ``True`` if anything was (re)started.

        Only this connector's tasks are stopped and started; every other
        connector keeps running undisturbed.

        :param initial_state: for a new connector, ``RUNNING`` (default), ``PAUSED`` or
            ``STOPPED`` — reached without running first. An existing connector keeps its state.
        :raises ConfigError: listing every problem of the config.
        """
        name, cls, initial = await self._validated(config, origin, initial_state)
        async with self._lock:
            current = self._connectors.get(name)
            if current is not None and current.config == dict(config):
                return False
            if current is not None:
                await self._stop_connector(current)
            target = current.target if current else initial
            run = ConnectorRun(name, dict(config), cls, target=target)
            self._connectors[name] = run
            if run.target == "STOPPED":  # a new config for a stopped connector is kept, not run
                self._set(name, None, STOPPED)
                return True
            await self._start_connector(run)
            return True

    async def pause(self, name: str) -> None:
        """PAUSED: tasks stay up but read nothing new; the batch in flight completes.

        A STOPPED connector starts with its tasks paused, as in Kafka Connect.
        """
        await self._retarget(name, "PAUSED")

    async def resume(self, name: str) -> None:
        """Back to RUNNING from PAUSED (tasks read on) or STOPPED (the connector starts again)."""
        await self._retarget(name, "STARTED")

    async def _retarget(self, name: str, target: str) -> None:
        async with self._lock:
            run = self._run(name)
            previous, run.target = run.target, target
            if previous == "STOPPED":
                await self._start_connector(run)
                return
            change = self.supervisor.pause if target == "PAUSED" else self.supervisor.resume
            for task in run.tasks:
                await change(run, task)
            self._set(name, None, PAUSED if target == "PAUSED" else RUNNING)

    async def stop_connector(self, name: str) -> None:
        """STOPPED: every task shut down gracefully, the config kept, offsets editable."""
        async with self._lock:
            run = self._run(name)
            run.target = "STOPPED"
            await self._stop_connector(run)
            run.tasks = []
            for task_id in self.status.tasks(name):
                self.status.forget_task(name, task_id)
            self._set(name, None, STOPPED)

    async def restart(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> RestartPlan:
        """Kafka Connect's restart: the connector unless *only_failed* and it is not FAILED;
        with *include_tasks*, every task (only the FAILED ones with *only_failed*).

        :returns: what was restarted, with the statuses Kafka answers (RESTARTING for those).
        """
        async with self._lock:
            run = self._run(name)
            if run.target == "STOPPED":
                # As Kafka Connect: a STOPPED connector stays stopped (Kafka starts it again in its target
                # state, STOPPED), and it has no tasks to restart.
                return RestartPlan(self.status.connector(name) or Status(STOPPED, self.worker_id), {})
            connector_status = self.status.connector(name) or Status(UNASSIGNED, self.worker_id)
            restart_connector = not only_failed or connector_status.state == FAILED
            task_statuses = {task.id: self.status.task(name, task.id) or Status(UNASSIGNED, self.worker_id)
                             for task in run.tasks}
            restarted = [task for task in run.tasks
                         if include_tasks and (not only_failed or task_statuses[task.id].state == FAILED)]
            plan = RestartPlan(
                restarting(connector_status) if restart_connector else connector_status,
                {task.id: restarting(task_statuses[task.id]) if task in restarted else task_statuses[task.id]
                 for task in run.tasks},
            )
            if restart_connector:
                self._set(name, None, RESTARTING)
                await self._stop_instance(run)
                await self._start_connector_only(run)
            for task in restarted:
                await self.supervisor.restart(run, task)
            return plan

    async def restart_task(self, name: str, task_id: int) -> None:
        async with self._lock:
            run = self._run(name)
            task = next((t for t in run.tasks if t.id == task_id), None)
            if task is None:
                raise NotFoundError(f"task {task_id} of connector {name} not found")
            await self.supervisor.restart(run, task)

    async def delete(self, name: str) -> None:
        async with self._lock:
            run = self._connectors.pop(name, None)
            if run is None:
                raise NotFoundError(f"connector {name} not found")
            await self._stop_connector(run)
            self.status.forget(name)
            self.active_topics.reset(name)

    async def _apply_task_configs(self, run: ConnectorRun, written: list[dict[str, str]]) -> None:
        """New task configs replace the tasks only if they differ."""
        if written == [task.config for task in run.tasks]:
            log.info("task_reconfiguration_unchanged")
            return
        log.info("task_reconfiguration", tasks_before=len(run.tasks), tasks_after=len(written))
        await self.supervisor.stop_all((run, task) for task in run.tasks)
        for task in run.tasks:
            self.status.forget_task(run.name, task.id)
        run.tasks = [TaskRun(i, config) for i, config in enumerate(written)]
        for task in run.tasks:
            await self.supervisor.start(run, task)
