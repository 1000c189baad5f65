"""The ``systemd`` capacity provider: the leader starts and stops ``connectd@.service`` instances.

A host's workers are instances of the template unit ``systemd/connectd@.service``,
``connectd@NAME.service`` reading ``/etc/connectd/NAME.properties``
(``capacity.systemd.config.dir``). ``capacity.systemd.instances`` lists the
instances this host may run, in the order they are started; each file gives
the instance its own ``listeners`` port, which is how the leader tells them
from the group's other workers. On each decision, the leader (its own
instance among them)::

    mine   = desired − the group's workers that are none of these instances
    active = the instances `systemctl is-active` says are active or activating
    fewer active than mine ─► `systemctl start --no-block` the first inactive ones
    more active than mine, none deactivating ─► `systemctl stop --no-block` the last
        active one that is not the leader itself: systemd's SIGTERM is a clean leave

The leader runs as the unit's user (``connectd``), so the system manager must
let that user start and stop ``connectd@*.service`` (a polkit rule:
docs/capacity.md). A machine whose init is not systemd is refused at start.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

from connectd.capacity.decision import Decision
from connectd.capacity.providers import LEADER, CapacityProvider, ProviderUnusable
from connectd.config.properties import load_properties
from connectd.errors import ConfigError, ConnectdError
from connectd.logging import get_logger

__all__ = ["SystemdProvider"]

log = get_logger(__name__)

_TEMPLATE = "connectd@{}.service"
_TIMEOUT_S = 30.0
#: sd_booted(3): systemd is the init system when this directory exists
BOOTED_MARK = "/run/systemd/system"


class SystemdProvider(CapacityProvider):
    """Workers as instances of ``connectd@.service`` on the leader's host."""

    name = "systemd"
    acts_in = LEADER

    def __init__(self, worker: Any) -> None:
        super().__init__(worker)
        self.instances = [name.strip() for name in worker.get("capacity.systemd.instances") or [] if name.strip()]
        self.config_dir = Path(str(worker.get("capacity.systemd.config.dir")))
        self.systemctl = shutil.which("systemctl") or "systemctl"
        self._ids: dict[str, str] | None = None  # the instances' worker ids, read once from their files

    def check(self) -> None:
        if not os.path.isdir(BOOTED_MARK):
            raise ProviderUnusable(self.name, f"systemd is not this machine's init (PID 1): no {BOOTED_MARK}")
        if shutil.which("systemctl") is None:
            raise ProviderUnusable(self.name, "systemctl is not on PATH")
        if not self.instances:
            raise ProviderUnusable(self.name, "capacity.systemd.instances lists no instance of connectd@.service")
        self.worker_ids()  # every instance's file readable

    def worker_ids(self) -> dict[str, str]:
        """Each instance's worker id (its advertised ``host:port``), from its properties file, read the
        first time (an instance's file is its own worker's start-up config: it does not change under it).

        :raises ProviderUnusable: an instance's file is missing or unreadable.
        """
        if self._ids is not None:
            return self._ids
        # lazy: connectd.config.worker loads the plugin registry, which registers this module
        from connectd.config.worker import WorkerConfig

        ids = {}
        for instance in self.instances:
            path = self.config_dir / f"{instance}.properties"
            try:
                ids[instance] = WorkerConfig(dict(load_properties(path)), "distributed", source=str(path)).advertised_id
            except ConfigError as exc:
                raise ProviderUnusable(self.name, f"instance {instance}: {exc}") from None
        self._ids = ids
        return ids

    async def apply(self, decision: Decision, workers: list[str], me: str) -> None:
        ids = self.worker_ids()
        others = [w for w in workers if w not in ids.values()]
        wanted = max(decision.desired - len(others), 0)
        states = await self._states()
        active = [i for i in self.instances if states.get(i) in ("active", "activating", "reloading")]
        if any(state == "deactivating" for state in states.values()):
            return  # one clean leave at a time
        if len(active) < wanted:
            starting = [i for i in self.instances if i not in active][:wanted - len(active)]
            if not starting:
                log.warning("capacity_instances_exhausted", wanted=wanted, instances=len(self.instances))
                return
            log.info("capacity_instances_started", instances=starting, wanted=wanted, reason=decision.reason)
            await self._systemctl("start", "--no-block", *(_TEMPLATE.format(i) for i in starting))
        elif len(active) > wanted:
            candidates = [i for i in active if ids[i] != me]
            if candidates:
                log.info("capacity_instance_stopped", instance=candidates[-1], wanted=wanted, reason=decision.reason)
                await self._systemctl("stop", "--no-block", _TEMPLATE.format(candidates[-1]))

    async def _states(self) -> dict[str, str]:
        # is-active exits non-zero when any unit is inactive; its lines are what counts.
        output = await self._systemctl("is-active", *(_TEMPLATE.format(i) for i in self.instances), check=False)
        return dict(zip(self.instances, output.split(), strict=False))

    async def _systemctl(self, *args: str, check: bool = True) -> str:
        process = await asyncio.create_subprocess_exec(self.systemctl, *args, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(process.communicate(), _TIMEOUT_S)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise ConnectdError(f"systemctl {' '.join(args)}: no answer in {_TIMEOUT_S:g} s") from None
        if check and process.returncode:
            raise ConnectdError(f"systemctl {' '.join(args)} exited with {process.returncode}: "
                                f"{err.decode(errors='replace').strip()}")
        return out.decode(errors="replace")
