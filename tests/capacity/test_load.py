"""A worker's process-tree CPU (connectd.capacity.load), measured on real processes."""

from __future__ import annotations

import subprocess
import sys

from connectd.capacity.load import ProcessTreeCpu

_BURN = "import time\nend = time.process_time() + 0.8\nwhile time.process_time() < end: pass\n"
_TREE = ("import subprocess, sys\n"
         f"child = subprocess.Popen([sys.executable, '-c', {_BURN!r}])\n"
         "print('started', flush=True)\n"
         "child.wait()\n"
         "print('burned', flush=True)\n"
         "sys.stdin.readline()\n")


def test_a_grandchild_counts_and_what_ended_stays_counted(wait_until):
    parent = subprocess.Popen([sys.executable, "-c", _TREE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        cpu = ProcessTreeCpu(cores=1, pid=parent.pid)
        assert cpu.percent() is None  # no interval yet
        assert parent.stdout.readline() == "started\n"
        # Read while the grandchild burns: its CPU shows in the tree's.
        wait_until(cpu.cpu_seconds, "the grandchild's CPU in the tree's", until=lambda used: used >= 0.5, timeout=30)
        assert parent.stdout.readline() == "burned\n"
        # Ended and reaped: what it used when last read is still counted; the total never goes down.
        assert cpu.cpu_seconds() >= 0.5
        percent = cpu.percent()
        assert percent is not None and percent > 0
    finally:
        parent.communicate("\n", timeout=30)
