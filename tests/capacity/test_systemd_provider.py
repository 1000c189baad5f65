"""The ``systemd`` capacity provider: refused where systemd is not the init, and the systemctl commands it
runs for each decision (against a systemctl that answers from a state file and writes its calls down)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from connectd.capacity.decision import HOLD, Decision
from connectd.capacity.providers import ProviderUnusable
from connectd.capacity.systemd import BOOTED_MARK, SystemdProvider
from connectd.config.worker import WorkerConfig

ROOT = Path(__file__).resolve().parents[2]

# systemctl as the provider uses it: is-active prints one state per unit (exit 3 if any is not active);
# start and stop change the state file; every call is written down.
_SYSTEMCTL = """#!{python}
import json, sys
from pathlib import Path
here = Path(__file__).parent
states = json.loads((here / "states.json").read_text())
with open(here / "calls.log", "a") as calls:
    calls.write(" ".join(sys.argv[1:]) + "\\n")
verb, units = sys.argv[1], [a for a in sys.argv[2:] if not a.startswith("--")]
names = [u.removeprefix("connectd@").removesuffix(".service") for u in units]
if verb == "is-active":
    print("\\n".join(states.get(n, "inactive") for n in names))
    sys.exit(0 if all(states.get(n) == "active" for n in names) else 3)
for name in names:
    states[name] = "active" if verb == "start" else "inactive"
(here / "states.json").write_text(json.dumps(states))
"""


@pytest.fixture
def systemd(tmp_path, monkeypatch):
    """Three instances' properties files (ports 9001-9003) and a systemctl first on PATH."""
    bin_dir, config_dir = tmp_path / "bin", tmp_path / "etc"
    bin_dir.mkdir()
    config_dir.mkdir()
    for n in (1, 2, 3):
        (config_dir / f"worker-{n}.properties").write_text(
            f"bootstrap.servers=127.0.0.1:9092\nlisteners=http://:900{n}\nrest.advertised.host.name=host-a\n")
    tool = bin_dir / "systemctl"
    tool.write_text(_SYSTEMCTL.format(python=sys.executable))
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    worker = WorkerConfig({"bootstrap.servers": "127.0.0.1:9092", "group.id": "g", "config.storage.topic": "c",
                           "offset.storage.topic": "o", "status.storage.topic": "s",
                           "capacity.provider": "systemd", "capacity.systemd.instances": "worker-1,worker-2,worker-3",
                           "capacity.systemd.config.dir": str(config_dir)}, "distributed")

    class Systemd:
        provider = SystemdProvider(worker)

        def states(self, **states: str) -> None:
            (bin_dir / "states.json").write_text(json.dumps(states))

        def calls(self) -> list[str]:
            log = bin_dir / "calls.log"
            lines = log.read_text().splitlines() if log.exists() else []
            log.unlink(missing_ok=True)
            return [line for line in lines if not line.startswith("is-active")]

        def apply(self, desired: int, workers: list[str], me: str = "host-a:9001") -> list[str]:
            decision = Decision(0.0, desired, len(workers), HOLD, "test")
            asyncio.run(self.provider.apply(decision, workers, me))
            return self.calls()

    return Systemd()


def test_it_is_refused_where_systemd_is_not_the_init_and_taken_where_it_is(systemd):
    if os.path.isdir(BOOTED_MARK):
        systemd.provider.check()
    else:
        with pytest.raises(ProviderUnusable, match=r"capacity.provider=systemd: systemd is not this machine's init "
                                                   r"\(PID 1\): no /run/systemd/system"):
            systemd.provider.check()


def test_each_instance_is_known_by_its_worker_id(systemd):
    assert systemd.provider.worker_ids() == {"worker-1": "host-a:9001", "worker-2": "host-a:9002",
                                             "worker-3": "host-a:9003"}


def test_more_workers_start_the_first_inactive_instances(systemd):
    systemd.states(**{"worker-1": "active"})
    assert systemd.apply(3, ["host-a:9001"]) == ["start --no-block connectd@worker-2.service "
                                                 "connectd@worker-3.service"]
    # Started, not yet in the group: nothing more is started.
    assert systemd.apply(3, ["host-a:9001"]) == []


def test_workers_elsewhere_count_against_the_desired_number(systemd):
    systemd.states(**{"worker-1": "active"})
    assert systemd.apply(3, ["host-a:9001", "host-b:8083"]) == ["start --no-block connectd@worker-2.service"]


def test_fewer_workers_stop_the_last_active_instance_that_is_not_the_leader(systemd):
    systemd.states(**{"worker-1": "active", "worker-2": "active", "worker-3": "active"})
    assert systemd.apply(2, ["host-a:9001", "host-a:9002", "host-a:9003"], me="host-a:9003") == [
        "stop --no-block connectd@worker-2.service"]
    # One at a time: while one instance is deactivating, nothing else is stopped.
    systemd.states(**{"worker-1": "active", "worker-2": "deactivating", "worker-3": "active"})
    assert systemd.apply(1, ["host-a:9001", "host-a:9002", "host-a:9003"]) == []


def test_the_shipped_instance_config_and_polkit_rule_name_what_the_provider_uses():
    config = WorkerConfig.from_file(ROOT / "systemd" / "worker-1.properties")
    assert [str(p) for p in config.problems() if p.is_error] == []
    assert config.get("capacity.provider") == "systemd"
    assert config.get("capacity.systemd.instances")[0] == "worker-1"
    rule = (ROOT / "systemd" / "50-connectd-capacity.rules").read_text()
    assert "org.freedesktop.systemd1.manage-units" in rule and '"connectd@"' in rule
