"""The leader's capacity decision: how many workers the cluster should have. Pure: no I/O, no clock.

Every evaluation interval the leader calls :func:`decide` with the policy, the
group's members, what each reported (:class:`LoadSample`: its process tree's
CPU utilisation and its sink tasks' lag) and the previous decision::

    provisioned            ─► desired = workerCount
    autoscaling
      current outside [min, max]            ─► desired = the nearest limit, at once
      within the cool-down of the last change ─► hold the last desired count
      window not yet covered since the leader
        began watching or the last change    ─► hold (a new worker's first minute says nothing)
      no member reported in the window        ─► hold
      average CPU over the window > scale-out ─► current + 1 (at most max), unless at max
      average CPU over the window < scale-in  ─► current - 1 (at least min), unless at min,
                                                 a member is silent (its CPU is unknown), or
                                                 the sinks' lag grew over the window
      otherwise                               ─► hold

The average is MSK Connect's: the mean over the reporting members of each
member's mean over the window. A member is *silent* when its last sample is
older than ``silent_after_s``; it counts in the current worker count (it is
still in the group) but not in the average.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from connectd.capacity.policy import PROVISIONED, CapacityPolicy

__all__ = ["HOLD", "SCALE_IN", "SCALE_OUT", "Decision", "LoadSample", "decide"]

SCALE_OUT, SCALE_IN, HOLD = "scale_out", "scale_in", "hold"


@dataclass(frozen=True)
class LoadSample:
    """What a member reported at *time_s*: its process tree's CPU (percent of its cores, over the last
    interval) and the records its sink tasks have yet to read (``None``: it runs none)."""

    time_s: float
    cpu_percent: float
    sink_lag: int | None = None


@dataclass(frozen=True)
class Decision:
    """One evaluation: the desired worker count and why.

    :attr action: :data:`SCALE_OUT`, :data:`SCALE_IN` or :data:`HOLD`, against the previous desired count.
    :attr changed_s: when the desired count last changed (this decision's time if it did now).
    """

    time_s: float
    desired: int
    current: int
    action: str
    reason: str
    cpu_percent: float | None = None
    changed_s: float | None = None

    def to_json(self) -> dict[str, object]:
        return {"time_ms": int(self.time_s * 1000), "desired": self.desired, "current": self.current,
                "action": self.action, "reason": self.reason,
                "cpu_percent": None if self.cpu_percent is None else round(self.cpu_percent, 1),
                "changed_ms": None if self.changed_s is None else int(self.changed_s * 1000)}

    @classmethod
    def from_json(cls, value: Mapping[str, object]) -> Decision:
        cpu, changed = value.get("cpu_percent"), value.get("changed_ms")
        return cls(int(value["time_ms"]) / 1000, int(value["desired"]), int(value["current"]),  # type: ignore[call-overload]
                   str(value["action"]), str(value["reason"]), None if cpu is None else float(cpu),  # type: ignore[arg-type]
                   None if changed is None else int(changed) / 1000)  # type: ignore[call-overload]


def decide(policy: CapacityPolicy, members: Sequence[str], loads: Mapping[str, Sequence[LoadSample]],
           now_s: float, *, watching_since_s: float, silent_after_s: float,
           previous: Decision | None = None, unit: str = "workers") -> Decision:
    """The desired worker count now.

    :param members: the group's members (their worker ids); their number is the current count.
    :param loads: each member's samples, oldest first (older ones and other workers' are ignored).
    :param watching_since_s: when this leader began collecting samples (or the policy changed).
    :param silent_after_s: a member whose last sample is older than this is silent.
    :param previous: the last decision (this leader's or the one before it, from the status topic).
    :param unit: what the members are, in the reasons (the spark provider's are executors).
    """
    current = len(members)
    before = previous.desired if previous is not None else current
    changed_s = previous.changed_s if previous is not None else None

    def decision(desired: int, reason: str, cpu: float | None = None) -> Decision:
        action = SCALE_OUT if desired > before else SCALE_IN if desired < before else HOLD
        return Decision(now_s, desired, current, action, reason, cpu,
                        now_s if desired != before else changed_s)

    if policy.mode == PROVISIONED:
        return decision(policy.worker_count, f"provisioned: workerCount {policy.worker_count}")
    if current < policy.min_workers:
        return decision(policy.min_workers, f"{current} {unit}, below minWorkerCount {policy.min_workers}")
    if current > policy.max_workers:
        return decision(policy.max_workers, f"{current} {unit}, above maxWorkerCount {policy.max_workers}")
    held = min(max(before, policy.min_workers), policy.max_workers)
    if changed_s is not None and now_s - changed_s < policy.cooldown_s:
        left = policy.cooldown_s - (now_s - changed_s)
        return decision(held, f"cool-down: {left:.0f} s left of {policy.cooldown_s:g} s")
    covered_from = max(watching_since_s, changed_s if changed_s is not None else watching_since_s)
    if now_s - covered_from < policy.window_s:
        left = policy.window_s - (now_s - covered_from)
        return decision(held, f"evaluating: the {policy.window_s:g} s window is covered in {left:.0f} s")
    window_start = now_s - policy.window_s
    means: dict[str, float] = {}
    silent: list[str] = []
    lag_first = lag_last = 0
    for member in members:
        samples = [s for s in loads.get(member, ()) if window_start <= s.time_s <= now_s]
        if not samples or now_s - samples[-1].time_s > silent_after_s:
            silent.append(member)
        if samples:
            means[member] = sum(s.cpu_percent for s in samples) / len(samples)
            lag_first += samples[0].sink_lag or 0
            lag_last += samples[-1].sink_lag or 0
    if not means:
        return decision(held, f"no member reported its CPU in the last {policy.window_s:g} s")
    cpu = sum(means.values()) / len(means)
    average = f"average CPU {cpu:.0f} % over {policy.window_s:g} s of {len(means)} of {current} {unit}"
    if cpu > policy.scale_out_cpu:
        if current >= policy.max_workers:
            return decision(held, f"{average}, above {policy.scale_out_cpu} %, at maxWorkerCount "
                                  f"{policy.max_workers}", cpu)
        return decision(current + 1, f"{average}, above scale-out {policy.scale_out_cpu} %", cpu)
    if cpu < policy.scale_in_cpu:
        if current <= policy.min_workers:
            return decision(held, f"{average}, below {policy.scale_in_cpu} %, at minWorkerCount "
                                  f"{policy.min_workers}", cpu)
        if silent:
            return decision(held, f"{average}, below {policy.scale_in_cpu} %, but {', '.join(sorted(silent))} "
                                  f"did not report within {silent_after_s:g} s", cpu)
        if lag_last > lag_first:
            return decision(held, f"{average}, below {policy.scale_in_cpu} %, but the sinks' lag grew from "
                                  f"{lag_first} to {lag_last} records", cpu)
        return decision(current - 1, f"{average}, below scale-in {policy.scale_in_cpu} %", cpu)
    return decision(held, f"{average}, within {policy.scale_in_cpu}–{policy.scale_out_cpu} %", cpu)
