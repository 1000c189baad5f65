"""The ``processes`` capacity provider: ``connectd cluster run WORKER_FILE`` runs a host's workers.

The supervisor starts the workers of one host as its child processes, each a
``connectd distributed`` of the same worker file with its own REST port (from
``capacity.processes.rest.ports``), its own properties and log file
(``worker-<port>.properties`` / ``.log`` in ``capacity.processes.log.dir``),
and follows the leader's decisions, which any of its workers reports
(``GET /capacity/status``)::

    start ─► the policy's lowest count of workers (capacity.* of the file)
    every capacity.evaluation.interval.ms:
        a worker that exited and was not asked to ─► restarted on its port, after a back-off
                                                     doubling from 1 s to 60 s (cluster_worker_exited)
        ask its workers for the last decision (desired count, the group's workers)
        mine = desired − the group's workers this supervisor does not run
        fewer running than that ─► start one (mcuCount from the policy: local[mcuCount],
                                    spark.driver.memory mcuCount × 4g unless the file sets it)
        more running than that, none stopping ─► SIGTERM the newest that is not the leader:
            a clean leave: it stops its tasks, says so in the status topic and leaves the
            group; the leader hands them over at once (no scheduled.rebalance.max.delay.ms)
    SIGTERM / SIGINT ─► SIGTERM every worker, wait for each (task.shutdown.graceful.timeout.ms
                        and a minute), SIGKILL what is left, exit 0

One supervisor sizes a cluster: workers it does not run (other hosts, other
supervisors) count as fixed. Its workers also get SIGTERM if the supervisor
dies (Linux's parent-death signal), so none outlives it unsupervised.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import javaproperties

from connectd.capacity.policy import CapacityPolicy, PolicyError
from connectd.capacity.providers import SUPERVISOR, CapacityProvider, ProviderUnusable
from connectd.errors import ConfigError
from connectd.logging import get_logger

__all__ = ["SUPERVISOR_ENV", "ProcessesProvider", "Supervisor"]

log = get_logger(__name__)

#: set in the environment of the workers ``connectd cluster run`` starts (its process id)
SUPERVISOR_ENV = "CONNECTD_CLUSTER_RUN"
_BACKOFF_FIRST_S, _BACKOFF_MAX_S = 1.0, 60.0
_STOP_MARGIN_S = 60.0  # past task.shutdown.graceful.timeout.ms, before a stopping worker is killed


class ProcessesProvider(CapacityProvider):
    """Workers as child processes of ``connectd cluster run`` (:class:`Supervisor`)."""

    name = "processes"
    acts_in = SUPERVISOR

    def check(self) -> None:
        if not os.environ.get(SUPERVISOR_ENV):
            raise ProviderUnusable(self.name, "this worker was not started by `connectd cluster run WORKER_FILE`, "
                                              "which starts and stops a host's workers as the leader decides")


@dataclass
class _Child:
    port: int
    process: subprocess.Popen[bytes] | None = None
    worker_id: str | None = None
    stopping_since: float | None = None
    failures: int = 0
    start_at: float = 0.0  # when a crashed worker is started again
    started_at: float = field(default_factory=time.monotonic)


def _ports(spec: str) -> range:
    first, _, last = spec.partition("-")
    return range(int(first), int(last) + 1)


def _free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host or "0.0.0.0", port))
        except OSError:
            return False
    return True


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Supervisor:
    """``connectd cluster run``: a host's workers, as many as the leader's decisions leave to it.

    :param file: the worker properties file every worker is made from.
    :param config: that file, read and checked.
    :param client_for: a REST client (:class:`connectd.rest.client.Client`) for a worker's URL.
    """

    def __init__(self, file: str | Path, config: Any, client_for: Callable[[str], Any]) -> None:
        self.file = Path(file).resolve()
        self.config = config
        self.client_for = client_for
        if str(config.get("capacity.provider")).strip() != ProcessesProvider.name:
            raise ConfigError([f"{file}: capacity.provider must be processes for `connectd cluster run`, not "
                               f"{config.get('capacity.provider')!r}"])
        listeners = [item.strip() for item in (config.raw("listeners") or "http://:8083").split(",") if item.strip()]
        if len(listeners) != 1:
            raise ConfigError([f"{file}: listeners: `connectd cluster run` gives each worker one listener on a port "
                               f"of capacity.processes.rest.ports; expected one, not {len(listeners)}"])
        if config.raw("admin.listeners"):
            raise ConfigError([f"{file}: admin.listeners: the workers of `connectd cluster run` would share its "
                               "ports; remove it (the /admin endpoints are then on each worker's listener)"])
        parsed = urlsplit(listeners[0])
        self.scheme, self.host = parsed.scheme or "http", parsed.hostname or ""
        self.ports = _ports(str(config.get("capacity.processes.rest.ports")))
        log_dir = str(config.get("capacity.processes.log.dir") or "").strip()
        self.log_dir = Path(log_dir) if log_dir else self.file.parent / "logs"
        if not self.log_dir.is_absolute():
            self.log_dir = self.file.parent / self.log_dir
        self.interval_s = config.get("capacity.evaluation.interval.ms") / 1000
        self.stop_timeout_s = config.get("task.shutdown.graceful.timeout.ms") / 1000 + _STOP_MARGIN_S
        try:
            policy = CapacityPolicy.from_worker(config)
        except PolicyError as exc:
            raise ConfigError([f"{file}: {exc}"]) from None
        self.initial = policy.lowest if policy is not None else 1
        self.mcu_count = policy.mcu_count if policy is not None else int(config.get("capacity.mcu.count"))
        self.children: dict[int, _Child] = {}

    # --- the loop ---

    def run(self, stop: threading.Event) -> int:
        """Run until *stop* is set, then stop every worker; the exit code."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log.info("cluster_run_started", file=str(self.file), workers=self.initial, ports=f"{self.ports.start}-"
                 f"{self.ports.stop - 1}", logs=str(self.log_dir))
        for _ in range(self.initial):
            self._start_new()
        try:
            while not stop.wait(self.interval_s):
                self.step()
        finally:
            self.stop_all()
        return 0

    def step(self) -> None:
        """One round: restart what crashed, then follow the last decision."""
        self._reap()
        view = self._ask()
        if view is None:
            return
        policy = view.get("policy")
        if isinstance(policy, dict):
            with contextlib.suppress(PolicyError):
                self.mcu_count = CapacityPolicy.from_json(policy).mcu_count
        decision = view.get("last_decision")
        if not isinstance(decision, dict):
            return
        mine = {child.worker_id for child in self.children.values() if child.worker_id}
        others = [w for w in decision.get("workers", []) if w not in mine]
        target = max(int(decision["desired"]) - len(others), 0)
        live = [c for c in self.children.values() if c.stopping_since is None]
        if len(live) < target:
            log.info("cluster_worker_added", running=len(live), wanted=target, reason=decision.get("reason"))
            self._start_new()
        elif len(live) > target and not any(c.stopping_since is not None for c in self.children.values()):
            leader = view.get("leader")
            candidates = [c for c in live if c.worker_id and c.worker_id != leader]
            if candidates:
                victim = max(candidates, key=lambda c: c.started_at)
                log.info("cluster_worker_removed", port=victim.port, worker=victim.worker_id, running=len(live),
                         wanted=target, reason=decision.get("reason"))
                self._stop(victim)

    def _ask(self) -> dict[str, Any] | None:
        """``GET /capacity/status`` of the workers; learns each one's worker id. The first answer
        with a decision (every worker reads the same status topic)."""
        found: dict[str, Any] | None = None
        for child in sorted(self.children.values(), key=lambda c: c.started_at):
            if child.process is None or child.stopping_since is not None:
                continue
            if child.worker_id is not None and found is not None:
                continue
            try:
                view = self.client_for(self._url(child.port)).request("GET", "/capacity/status")
            except Exception as exc:  # not up yet, or going down: the next round asks again
                log.debug("cluster_worker_unanswered", port=child.port, error=str(exc))
                continue
            child.worker_id = view.get("worker") or child.worker_id
            child.failures = 0  # up and answering: a later crash backs off from the start again
            if found is None or (found.get("last_decision") is None and view.get("last_decision") is not None):
                found = view
        return found

    def _reap(self) -> None:
        now = time.monotonic()
        for port, child in list(self.children.items()):
            if child.process is not None and child.process.poll() is not None:
                code = child.process.returncode
                if child.stopping_since is not None:
                    log.info("cluster_worker_stopped", port=port, worker=child.worker_id, exit_code=code)
                    del self.children[port]
                    continue
                child.failures += 1
                delay_s = min(_BACKOFF_FIRST_S * 2 ** (child.failures - 1), _BACKOFF_MAX_S)
                log.error("cluster_worker_exited", port=port, worker=child.worker_id, exit_code=code,
                          restart_in_s=delay_s, log=str(self._log_path(port)))
                child.process, child.start_at = None, now + delay_s
            elif child.process is not None and child.stopping_since is not None:
                if now - child.stopping_since > self.stop_timeout_s:
                    log.warning("cluster_worker_killed", port=port, after_s=round(now - child.stopping_since))
                    child.process.kill()
            if child.process is None and child.stopping_since is None and now >= child.start_at:
                self._spawn(child)

    # --- workers ---

    def _url(self, port: int) -> str:
        host = self.host or "127.0.0.1"
        return f"{self.scheme}://{'[' + host + ']' if ':' in host else host}:{port}"

    def _log_path(self, port: int) -> Path:
        return self.log_dir / f"worker-{port}.log"

    def _start_new(self) -> None:
        port = next((p for p in self.ports if p not in self.children and _free(self.host, p)), None)
        if port is None:
            log.error("cluster_worker_not_started", reason=f"no free port in capacity.processes.rest.ports "
                                                           f"{self.ports.start}-{self.ports.stop - 1}")
            return
        child = self.children[port] = _Child(port)
        self._spawn(child)

    def worker_properties(self, port: int) -> dict[str, str]:
        """The worker file's properties for the worker on *port*."""
        values = self.config.originals()
        values["listeners"] = f"{self.scheme}://{self.host}:{port}" if self.host else f"{self.scheme}://:{port}"
        if "rest.advertised.port" in values:
            values["rest.advertised.port"] = str(port)
        master = values.get("spark.master", "local[*]")
        if master.startswith("local"):
            values["spark.master"] = f"local[{self.mcu_count}]"
        values.setdefault("spark.driver.memory", f"{4 * self.mcu_count}g")
        return values

    def _spawn(self, child: _Child) -> None:
        properties = self.log_dir / f"worker-{child.port}.properties"
        # The worker file's values, secrets included: readable by this user only, as the file should be.
        descriptor = os.open(properties, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(descriptor, "w", encoding="utf-8") as written:
            written.write(f"# Written by `connectd cluster run {self.file}`; remade at each start.\n"
                          + javaproperties.dumps(self.worker_properties(child.port), timestamp=False))
        env = {**os.environ, SUPERVISOR_ENV: str(os.getpid())}
        with open(self._log_path(child.port), "ab") as output:
            child.process = subprocess.Popen(
                [sys.executable, "-m", "connectd", "distributed", str(properties)], cwd=self.file.parent, env=env,
                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        child.started_at, child.worker_id = time.monotonic(), None
        log.info("cluster_worker_started", port=child.port, pid=child.process.pid, log=str(self._log_path(child.port)))

    def _stop(self, child: _Child) -> None:
        child.stopping_since = time.monotonic()
        if child.process is None:
            del self.children[child.port]
            return
        with contextlib.suppress(ProcessLookupError):
            child.process.send_signal(signal.SIGTERM)

    def stop_all(self) -> None:
        """SIGTERM every worker; wait for each, then SIGKILL what is left."""
        for child in list(self.children.values()):
            if child.stopping_since is None:
                self._stop(child)
        deadline = time.monotonic() + self.stop_timeout_s
        for port, child in list(self.children.items()):
            if child.process is None:
                continue
            try:
                child.process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                log.warning("cluster_worker_killed", port=port, after_s=round(self.stop_timeout_s))
                child.process.kill()
                child.process.wait()
            log.info("cluster_worker_stopped", port=port, worker=child.worker_id, exit_code=child.process.returncode)
        self.children.clear()
