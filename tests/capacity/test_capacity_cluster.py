"""A cluster worker whose capacity provider the machine cannot use stops at start, saying why (the policy
over REST and the decisions on real workers: test_cluster_run.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_a_provider_the_machine_cannot_use_is_refused_at_start_with_the_reason(cluster):
    workers = cluster(**{"capacity.mode": "autoscaling", "capacity.provider": "processes"})
    workers.start("a")
    process = workers.workers["a"]
    assert process.wait(120) == 78
    log = (workers.directory / "a.log").read_text()
    assert "capacity.provider=processes: this worker was not started by `connectd cluster run WORKER_FILE`" in log
    workers.workers.pop("a")
