"""A cluster's capacity policy over REST, stored in the config topic, and the leader's decisions in the
status topic, on real worker processes (docs/capacity.md)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.integration

AUTOSCALING = {"autoScaling": {"minWorkerCount": 1, "maxWorkerCount": 3, "mcuCount": 1,
                               "scaleInPolicy": {"cpuUtilizationPercentage": 10},
                               "scaleOutPolicy": {"cpuUtilizationPercentage": 95},
                               "evaluationWindowSeconds": 2, "cooldownSeconds": 0}}


def _samples(text: str) -> dict[str, float]:
    return {sample.name: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples}


def test_the_policy_is_the_clusters_and_the_leader_decides_within_it(cluster, wait_until):
    workers = cluster(**{"capacity.mode": "provisioned", "capacity.worker.count": "2",
                         "capacity.evaluation.interval.ms": "500"})
    workers.start("a")
    workers.start("b")
    workers.wait_up("a", "b")
    # The worker keys' policy, on every worker.
    for name in ("a", "b"):
        assert workers.call(name, "GET", "/capacity") == (200, {"provisionedCapacity": {"workerCount": 2,
                                                                                         "mcuCount": 1}})
    # The leader decides; every worker reads its decision and each worker's report from the status topic.
    status = wait_until(lambda: workers.call("b", "GET", "/capacity/status")[1], "a provisioned decision",
                        until=lambda view: view["last_decision"] is not None and len(view["workers"]) == 2)
    assert (status["desired"], status["current"], status["source"]) == (2, 2, "worker config")
    assert status["last_decision"]["reason"] == "provisioned: workerCount 2"
    assert sorted(status["last_decision"]["workers"]) == sorted(status["workers"])
    assert all(report["cpu_percent"] >= 0 for report in status["workers"].values())

    # A follower forwards PUT to the leader, which stores it in the config topic: every worker has it.
    follower = "a" if workers.leader() == "b" else "b"
    code, body = workers.call(follower, "PUT", "/capacity", AUTOSCALING)
    assert (code, body) == (200, AUTOSCALING)
    for name in ("a", "b"):
        wait_until(lambda n=name: workers.call(n, "GET", "/capacity"), f"worker {name} to read the stored policy",
                   until=lambda answer: answer == (200, AUTOSCALING))
    # Two idle workers, CPU under 10 %: the leader asks for one fewer, and says why.
    decided = wait_until(lambda: workers.call(follower, "GET", "/capacity/status")[1], "a scale-in decision",
                         until=lambda view: view["desired"] == 1, timeout=90)
    assert decided["source"] == "config topic"
    assert "below scale-in 10 %" in decided["last_decision"]["reason"]
    assert decided["last_decision"]["action"] == "scale_in"
    metrics = _samples(_metrics(workers, follower))
    assert metrics["connectd_capacity_workers_desired"] == 1
    assert metrics["connectd_capacity_workers_current"] == 2
    assert metrics["connectd_worker_cpu_seconds_total"] > 0
    assert metrics["connectd_worker_cpu_cores"] == 1  # spark.master=local[1]
    assert "connectd_worker_cpu_utilization_percent" in metrics

    # A bad policy is refused, saying which field and what was expected; the stored one stays.
    code, body = workers.call("a", "PUT", "/capacity", {"autoScaling": {"minWorkerCount": 3, "maxWorkerCount": 2}})
    assert code == 400 and body["message"] == "Invalid capacity: minWorkerCount 3 is above maxWorkerCount 2"
    assert workers.call("a", "GET", "/capacity") == (200, AUTOSCALING)

    # A restarted worker reads the stored policy back from the config topic.
    workers.terminate(follower)
    workers.start(follower)
    workers.wait_up(follower)
    assert workers.call(follower, "GET", "/capacity") == (200, AUTOSCALING)

    # DELETE: the worker keys apply again.
    assert workers.call("a", "DELETE", "/capacity")[0] == 204
    wait_until(lambda: workers.call("b", "GET", "/capacity")[1], "the worker keys' policy again",
               until=lambda body: body == {"provisionedCapacity": {"workerCount": 2, "mcuCount": 1}})


def _metrics(workers, name: str) -> str:
    import urllib.request

    with urllib.request.urlopen(workers.urls[name] + "/metrics", timeout=30) as response:
        return response.read().decode()


def test_a_provider_the_machine_cannot_use_is_refused_at_start_with_the_reason(cluster, wait_until):
    workers = cluster(**{"capacity.mode": "autoscaling", "capacity.provider": "processes"})
    workers.start("a")
    process = workers.workers["a"]
    assert process.wait(120) == 78
    log = (workers.directory / "a.log").read_text()
    assert "capacity.provider=processes: this worker was not started by `connectd cluster run WORKER_FILE`" in log
    workers.workers.pop("a")
