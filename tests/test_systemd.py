"""The systemd units verify, and the worker's sd_notify speaks systemd's protocol (a real datagram socket)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from connectd.notify import SystemdNotifier

ROOT = Path(__file__).resolve().parents[1]
UNITS = ["connectd.service", "connectd@.service"]
INSTALLED = "/opt/connectd/venv"  # where docs/deploy.md installs connectd


def directives(unit: Path) -> dict[str, str]:
    found = {}
    for line in unit.read_text().splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            found[key] = value
    return found


@pytest.mark.parametrize("unit", UNITS)
def test_the_unit_verifies_with_systemd_analyze(unit, tmp_path):
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing (Debian package systemd)"
    text = (ROOT / "systemd" / unit).read_text()
    assert f"ExecStart={INSTALLED}/bin/connectd " in text
    # Verified as installed, but with this environment's connectd, since verify checks that it exists.
    (tmp_path / unit).write_text(text.replace(INSTALLED, sys.prefix))
    name = unit.replace("@.", "@worker-1.")
    if name != unit:
        (tmp_path / name).symlink_to(tmp_path / unit)
    result = subprocess.run([analyze, "verify", "--man=no", f"./{name}"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, check=False)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


@pytest.mark.parametrize("unit", UNITS)
def test_the_unit_says_what_the_deployment_guide_promises(unit):
    found = directives(ROOT / "systemd" / unit)
    assert {key: found.get(key) for key in ("Type", "NotifyAccess", "Restart", "RestartPreventExitStatus",
                                            "KillMode", "ProtectSystem", "NoNewPrivileges", "User")} == {
        "Type": "notify", "NotifyAccess": "main", "Restart": "on-failure", "RestartPreventExitStatus": "78",
        "KillMode": "mixed", "ProtectSystem": "strict", "NoNewPrivileges": "yes", "User": "connectd"}
    assert int(found["WatchdogSec"]) > 0 and found["StateDirectory"].startswith("connectd")
    assert "%i" in found["ExecStart"] if "@" in unit else "%i" not in found["ExecStart"]


def test_the_notifier_sends_each_state_and_hides_the_socket_from_children(notify_socket):
    environ = {"NOTIFY_SOCKET": notify_socket.address, "WATCHDOG_USEC": "4000000",
               "WATCHDOG_PID": str(os.getpid()), "OTHER": "kept"}
    notifier = SystemdNotifier(environ)
    assert environ == {"OTHER": "kept"}  # Spark's JVM and Python workers never see them
    assert notifier.enabled and notifier.watchdog_s == 4.0
    assert notifier.ready("1 connector, 2 of 2 tasks running")
    assert notifier.watchdog() and notifier.status("line\nbreak") and notifier.stopping()
    notifier.close()
    assert notify_socket.messages() == [
        {"READY": "1", "STATUS": "1 connector, 2 of 2 tasks running", "MAINPID": str(os.getpid())},
        {"WATCHDOG": "1"}, {"STATUS": "line break"},
        {"STOPPING": "1", "STATUS": "stopping: tasks are finishing their batches"}]


def test_the_abstract_namespace_and_a_watchdog_meant_for_another_process():
    import socket  # systemd's "@name" is the abstract address "\0name"

    name = f"connectd-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listening:
        listening.bind("\0" + name)
        listening.settimeout(5)
        notifier = SystemdNotifier({"NOTIFY_SOCKET": f"@{name}", "WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"})
        assert notifier.watchdog_s is None  # WATCHDOG_PID names another process
        assert notifier.ready("starting")
        assert listening.recv(65536).startswith(b"READY=1\n")


def test_without_systemd_nothing_is_sent_and_a_vanished_socket_does_not_stop_the_worker(tmp_path):
    assert not SystemdNotifier({}).enabled and SystemdNotifier({}).ready("x") is False
    gone = SystemdNotifier({"NOTIFY_SOCKET": str(tmp_path / "nobody.sock")})
    assert gone.enabled and gone.watchdog() is False and gone.watchdog() is False
