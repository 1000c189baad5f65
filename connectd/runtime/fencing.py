"""A cluster worker's lease on its work: no new micro-batch once its group session may be gone.

A worker of a Connect cluster runs its tasks only while it is sure to be in
the group: its membership (:mod:`connectd.cluster.membership`) counts from
the send time of the last request the coordinator answered, and once the
session timeout less the revocation margin has passed it stops every task
(``on_revoked_all``), before the coordinator can have handed them to
another worker. A worker that is *frozen* (SIGSTOP, a VM paused, a
stop-the-world pause longer than the session timeout) cannot stop anything
while frozen: when it wakes, its Spark queries go on at once, while their
tasks may already run elsewhere.

So the worker also writes the moment its lease ends to a *lease file*
(:func:`write_lease`; ``CLOCK_MONOTONIC`` seconds, which every process of
the host shares and which runs on while a process is stopped), and every
task's query reads it:

- a reader's ``latestOffset`` offers nothing new once the lease has ended
  (:func:`lease_expired`): no micro-batch is planned by a worker that may
  have lost its work;
- the worker's ``foreachBatch`` stores no offsets of a batch that ends after
  the lease did: the work's new owner keeps the offsets it commits.

What a frozen worker may still do when it wakes is finish the one batch
that was in flight when it froze (a sink's ``put()`` of those records, a
source's records produced): at-least-once, the duplicates stay within that
one batch, and its offsets are not stored. No file: no lease (a standalone
worker), never expired.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["LEASE_OPTION", "fenced", "lease_expired", "write_lease"]

#: The query option naming the lease file.
LEASE_OPTION = "lease.file"


def write_lease(path: str | os.PathLike[str], until: float) -> None:
    """The worker's lease ends at *until* (``time.monotonic()`` seconds); written whole."""
    temporary = f"{os.fspath(path)}.{os.getpid()}-{threading.get_ident()}.tmp"
    with open(temporary, "w", encoding="ascii") as handle:
        handle.write(repr(float(until)))
    os.replace(temporary, path)


def lease_expired(path: str | os.PathLike[str] | None) -> bool:
    """Whether the lease in *path* has ended (a lease file that is missing or unreadable has: the
    worker wrote none yet, or it is gone with the worker); ``False`` without a path."""
    if not path:
        return False
    try:
        with open(path, encoding="ascii") as handle:
            until = float(handle.read())
    except (OSError, ValueError):
        return True
    return time.monotonic() >= until


def fenced(path: str | os.PathLike[str] | None, what: str) -> bool:
    """Whether offsets of *what* (a batch that just ended) must not be stored, the lease in *path*
    having ended: the work may have a new owner, whose offsets stand. Said in the log."""
    if not lease_expired(path):
        return False
    from connectd.logging import get_logger  # lazy: Spark's planners and readers of source batches import this module

    get_logger(__name__).warning("offsets_not_stored_lease_ended", batch=what,
                                 reason="this worker's group session may have ended: its work may run elsewhere")
    return True
