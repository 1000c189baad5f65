"""systemd's notification protocol (``sd_notify``), spoken by the worker itself.

Under a unit with ``Type=notify`` systemd passes ``NOTIFY_SOCKET`` (a unix
datagram socket: a path, or ``@name`` in the abstract namespace) and, with
``WatchdogSec=``, ``WATCHDOG_USEC``. The worker sends::

    starting ──REST serves, Spark is up, the herder started (a cluster member
               joined its group), the connectors given on the command line are in──► READY=1, STATUS=…
    ready ──every WATCHDOG_USEC/2, only while the herder's health check passes──► WATCHDOG=1
    ready ──every STATUS_INTERVAL_S──► STATUS=<connectors and tasks running here>
    any ──SIGTERM/SIGINT──► STOPPING=1 (then the graceful stop)

A worker whose herder is stuck stops sending ``WATCHDOG=1``, and systemd
restarts it after ``WatchdogSec``. Without ``NOTIFY_SOCKET`` nothing is sent.
The variables are removed from the environment once read, so Spark's JVM and
Python workers — children of the worker — never speak for it
(``NotifyAccess=main`` would ignore them anyway). A datagram that cannot be
sent (systemd gone) is logged once and dropped: notification never stops
the worker.
"""

from __future__ import annotations

import os
import socket
from collections.abc import MutableMapping

from connectd.logging import get_logger

__all__ = ["STATUS_INTERVAL_S", "SystemdNotifier"]

log = get_logger(__name__)

#: How often ``STATUS=`` is refreshed while the worker runs.
STATUS_INTERVAL_S = 5.0


class SystemdNotifier:
    """Sends ``sd_notify`` datagrams to the socket systemd named, if any.

    :param environ: where ``NOTIFY_SOCKET``, ``WATCHDOG_USEC`` and ``WATCHDOG_PID``
        are read (and then removed); this process's environment by default.
    """

    def __init__(self, environ: MutableMapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        address = environ.pop("NOTIFY_SOCKET", "") or ""
        usec = environ.pop("WATCHDOG_USEC", "") or ""
        pid = environ.pop("WATCHDOG_PID", "") or ""
        self._address: str | None = None
        if address.startswith("@"):  # the abstract namespace
            self._address = "\0" + address[1:]
        elif address.startswith("/"):
            self._address = address
        #: Seconds systemd waits for ``WATCHDOG=1`` (``None``: no watchdog for this process).
        self.watchdog_s: float | None = None
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            self.watchdog_s = int(usec) / 1_000_000
        self._socket: socket.socket | None = None
        self._failed = False

    @property
    def enabled(self) -> bool:
        """Whether systemd listens (``NOTIFY_SOCKET`` was set)."""
        return self._address is not None

    def notify(self, *fields: str) -> bool:
        """Send ``KEY=value`` *fields* in one datagram; whether it was sent."""
        if self._address is None or not fields:
            return False
        message = "\n".join(field.replace("\n", " ") for field in fields).encode("utf-8")
        try:
            if self._socket is None:
                self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._socket.sendto(message, self._address)
        except OSError as error:
            if not self._failed:
                self._failed = True
                log.warning("systemd_notify_failed", error=str(error))
            return False
        self._failed = False
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def status(self, status: str) -> bool:
        return self.notify(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1", "STATUS=stopping: tasks are finishing their batches")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
