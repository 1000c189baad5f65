"""MSK Connect's capacity JSON read into a policy and written back (connectd.capacity.policy)."""

from __future__ import annotations

import pytest

from connectd.capacity.policy import AUTOSCALING, PROVISIONED, CapacityPolicy, PolicyError


def test_provisioned_capacity_reads_and_writes_back():
    body = {"provisionedCapacity": {"workerCount": 3, "mcuCount": 2}}
    policy = CapacityPolicy.from_json(body)
    assert (policy.mode, policy.worker_count, policy.mcu_count) == (PROVISIONED, 3, 2)
    assert (policy.lowest, policy.highest) == (3, 3)
    assert policy.to_json() == body


def test_autoscaling_takes_msk_connect_defaults_and_connectd_timings():
    body = {"autoScaling": {"minWorkerCount": 1, "maxWorkerCount": 4, "mcuCount": 1}}
    policy = CapacityPolicy.from_json(body, window_s=90, cooldown_s=30)
    assert (policy.mode, policy.min_workers, policy.max_workers) == (AUTOSCALING, 1, 4)
    assert (policy.scale_in_cpu, policy.scale_out_cpu, policy.window_s, policy.cooldown_s) == (20, 80, 90, 30)
    written = policy.to_json()
    assert written["autoScaling"]["scaleOutPolicy"] == {"cpuUtilizationPercentage": 80}
    assert written["autoScaling"]["evaluationWindowSeconds"] == 90
    assert CapacityPolicy.from_json(written) == policy


@pytest.mark.parametrize(("body", "message"), [
    ([], "expected a JSON object"),
    ({}, "exactly one of provisionedCapacity and autoScaling"),
    ({"provisionedCapacity": {"workerCount": 1}, "autoScaling": {}}, "exactly one of"),
    ({"capacity": {}}, "unknown field 'capacity'"),
    ({"provisionedCapacity": {"mcuCount": 1}}, "provisionedCapacity.workerCount is missing"),
    ({"provisionedCapacity": {"workerCount": "2"}}, "workerCount '2': expected a whole number"),
    ({"provisionedCapacity": {"workerCount": 2, "mcuCount": 3}}, "mcuCount 3: expected one of 1, 2, 4, 8"),
    ({"provisionedCapacity": {"workerCount": 0}}, "workerCount 0: expected 1 to"),
    ({"provisionedCapacity": {"workerCount": 1, "workers": 2}}, "unknown field 'workers'"),
    ({"autoScaling": {"minWorkerCount": 3, "maxWorkerCount": 2}}, "minWorkerCount 3 is above maxWorkerCount 2"),
    ({"autoScaling": {"minWorkerCount": 1, "maxWorkerCount": 2, "scaleInPolicy": {"cpuUtilizationPercentage": 0}}},
     "scaleInPolicy.cpuUtilizationPercentage 0: expected 1 to 100"),
    ({"autoScaling": {"minWorkerCount": 1, "maxWorkerCount": 2, "scaleInPolicy": {"cpuUtilizationPercentage": 90}}},
     "must be below scaleOutPolicy.cpuUtilizationPercentage 80"),
    ({"autoScaling": {"minWorkerCount": 1, "maxWorkerCount": 2, "scaleOutPolicy": 80}},
     "autoScaling.scaleOutPolicy: expected a JSON object"),
    ({"autoScaling": {"minWorkerCount": 1, "maxWorkerCount": 2, "evaluationWindowSeconds": 0}},
     "evaluationWindowSeconds 0 must be above 0"),
])
def test_a_bad_body_says_which_field_and_what_was_expected(body, message):
    with pytest.raises(PolicyError, match=message.replace("(", r"\(").replace(".", r"\.")):
        CapacityPolicy.from_json(body)
