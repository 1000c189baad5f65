"""The leader's capacity decision alone (connectd.capacity.decision): thresholds, window, cool-down,
limits, a member that stops reporting, the sinks' lag."""

from __future__ import annotations

import pytest

from connectd.capacity.decision import HOLD, SCALE_IN, SCALE_OUT, Decision, LoadSample, decide
from connectd.capacity.policy import AUTOSCALING, PROVISIONED, CapacityPolicy

POLICY = CapacityPolicy(AUTOSCALING, min_workers=1, max_workers=3, scale_in_cpu=20, scale_out_cpu=80,
                        window_s=60, cooldown_s=120)
NOW = 10_000.0


def steady(cpu: float, *, until: float = NOW, every: float = 10, lag: int | None = None) -> list[LoadSample]:
    """A member's samples over the last two windows, one every *every* seconds, all at *cpu*."""
    return [LoadSample(t, cpu, lag) for t in range(int(until - 120), int(until) + 1, int(every))]


def run(members, loads, *, policy=POLICY, now=NOW, since=NOW - 1000, previous=None):
    return decide(policy, members, loads, now, watching_since_s=since, silent_after_s=30, previous=previous)


def test_cpu_above_scale_out_adds_one_worker():
    decision = run(["a"], {"a": steady(95)})
    assert (decision.desired, decision.current, decision.action) == (2, 1, SCALE_OUT)
    assert "above scale-out 80 %" in decision.reason and decision.cpu_percent == 95
    assert decision.changed_s == NOW


def test_cpu_below_scale_in_removes_one_worker():
    decision = run(["a", "b"], {"a": steady(5), "b": steady(15)})
    assert (decision.desired, decision.action) == (1, SCALE_IN)
    assert decision.cpu_percent == pytest.approx(10)


def test_cpu_between_thresholds_holds():
    decision = run(["a", "b"], {"a": steady(50), "b": steady(60)})
    assert (decision.desired, decision.action) == (2, HOLD)
    assert "within 20–80 %" in decision.reason


@pytest.mark.parametrize(("cpu", "expected"), [(80, HOLD), (80.5, SCALE_OUT), (20, HOLD), (19.5, SCALE_IN)])
def test_thresholds_are_strict(cpu, expected):
    assert run(["a", "b"], {"a": steady(cpu), "b": steady(cpu)}).action == expected


def test_the_average_is_over_the_window_only():
    # Busy two minutes ago, idle over the last 60 s window: scale in, not out.
    samples = [LoadSample(t, 100.0) for t in range(int(NOW - 200), int(NOW - 70), 10)] + steady(5)[-6:]
    assert run(["a", "b"], {"a": samples, "b": steady(5)}).action == SCALE_IN


def test_limits_bound_the_count():
    at_max = run(["a", "b", "c"], {m: steady(99) for m in "abc"})
    assert (at_max.desired, at_max.action) == (3, HOLD) and "at maxWorkerCount 3" in at_max.reason
    at_min = run(["a"], {"a": steady(1)})
    assert (at_min.desired, at_min.action) == (1, HOLD) and "at minWorkerCount 1" in at_min.reason


def test_a_count_outside_the_limits_is_brought_back_at_once_even_in_cool_down():
    previous = Decision(NOW - 5, 4, 4, SCALE_OUT, "", changed_s=NOW - 5)
    over = run(["a", "b", "c", "d"], {}, previous=previous)
    assert (over.desired, over.action) == (3, SCALE_IN) and "above maxWorkerCount 3" in over.reason
    policy = CapacityPolicy(AUTOSCALING, min_workers=2, max_workers=3, window_s=60, cooldown_s=120)
    under = run(["a"], {}, policy=policy, previous=Decision(NOW - 5, 1, 1, HOLD, "", changed_s=NOW - 5))
    assert (under.desired, under.action) == (2, SCALE_OUT) and "below minWorkerCount 2" in under.reason


def test_cool_down_holds_the_last_desired_count():
    previous = Decision(NOW - 60, 2, 1, SCALE_OUT, "", changed_s=NOW - 60)
    decision = run(["a"], {"a": steady(99)}, previous=previous)  # the new worker is still starting
    assert (decision.desired, decision.action) == (2, HOLD)
    assert "cool-down: 60 s left of 120 s" in decision.reason and decision.changed_s == NOW - 60
    after = run(["a", "b"], {"a": steady(99), "b": steady(99)}, previous=previous, now=NOW + 61)
    assert "cool-down" not in after.reason


def test_a_window_not_yet_covered_holds():
    started = run(["a"], {"a": steady(99)[-2:]}, since=NOW - 15)
    assert (started.desired, started.action) == (1, HOLD) and "window is covered in 45 s" in started.reason
    # After a change, the window starts again once the cool-down is over (cool-down shorter than the window).
    policy = CapacityPolicy(AUTOSCALING, min_workers=1, max_workers=3, window_s=60, cooldown_s=10)
    previous = Decision(NOW - 30, 2, 1, SCALE_OUT, "", changed_s=NOW - 30)
    assert "window is covered in 30 s" in run(["a", "b"], {"a": steady(99), "b": steady(99)}, policy=policy,
                                              previous=previous).reason


def test_no_report_at_all_holds():
    decision = run(["a", "b"], {"a": steady(99, until=NOW - 100)})
    assert (decision.desired, decision.action) == (2, HOLD) and "no member reported" in decision.reason


def test_a_silent_member_counts_in_the_workers_but_not_in_the_average():
    loads = {"a": steady(95), "b": steady(5, until=NOW - 40)}  # b's last report is 40 s old
    decision = run(["a", "b"], loads)
    assert decision.current == 2
    # b's samples in the window still count in the average, and a is busy enough alone to scale out.
    busy = run(["a", "b"], {"a": steady(95), "b": []})
    assert (busy.desired, busy.action) == (3, SCALE_OUT) and "of 1 of 2 workers" in busy.reason
    assert decision.cpu_percent is not None


def test_a_silent_member_blocks_scale_in():
    decision = run(["a", "b"], {"a": steady(5), "b": steady(5, until=NOW - 40)})
    assert (decision.desired, decision.action) == (2, HOLD)
    assert "b did not report within 30 s" in decision.reason


def test_growing_sink_lag_blocks_scale_in():
    growing = [LoadSample(t, 5.0, int(t - NOW + 200)) for t in range(int(NOW - 60), int(NOW) + 1, 10)]
    decision = run(["a", "b"], {"a": growing, "b": steady(5)})
    assert (decision.desired, decision.action) == (2, HOLD) and "lag grew from 140 to 200" in decision.reason
    shrinking = [LoadSample(t, 5.0, int(NOW - t)) for t in range(int(NOW - 60), int(NOW) + 1, 10)]
    assert run(["a", "b"], {"a": shrinking, "b": steady(5)}).action == SCALE_IN


def test_provisioned_is_the_worker_count_whatever_the_load():
    policy = CapacityPolicy(PROVISIONED, worker_count=3)
    decision = run(["a"], {"a": steady(1)}, policy=policy)
    assert (decision.desired, decision.action) == (3, SCALE_OUT) and decision.reason == "provisioned: workerCount 3"
    again = run(["a", "b", "c"], {}, policy=policy, previous=decision, now=NOW + 10)
    assert (again.desired, again.action, again.changed_s) == (3, HOLD, NOW)


def test_a_decision_survives_its_json():
    decision = run(["a"], {"a": steady(95)})
    assert Decision.from_json(decision.to_json()) == decision


def test_the_reasons_name_what_is_counted():
    decision = decide(POLICY, ["0"], {"0": steady(95)}, NOW, watching_since_s=NOW - 1000, silent_after_s=30,
                      unit="executors")
    assert decision.reason == "average CPU 95 % over 60 s of 1 of 1 executors, above scale-out 80 %"
