"""One worker's membership in the Connect group (Kafka's ``WorkerGroupMember``).

:class:`WorkerGroupMember` speaks the classic group protocol to the group
coordinator with aiokafka's low-level client (FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, LeaveGroup) and leaves every decision about work to a
:class:`MembershipHandler`, which the distributed herder implements.

States and transitions::

    UNJOINED --JoinGroup--> JOINING --SyncGroup ok--> STABLE
       ^                      |  ^                      |
       |                      |  +-- rejoin needed -----+   REBALANCE_IN_PROGRESS in a heartbeat,
       |                      |                             request_rejoin(), revocations,
       |                      |                             delay_ms elapsed, CONFIG_MISMATCH
       +-- unknown member / illegal generation / fenced / session deadline passed
       |   (on_revoked_all first if the member held work; the next JoinGroup waits for it)
       +-- leave_for(seconds): on_revoked_all, LeaveGroup, then *seconds* out of the group
           (Kafka's worker.unsync.backoff.ms for a worker behind the config topic)

- JOINING: the member sends JoinGroup with the metadata of every sub-protocol
  it speaks (``sessioned`` = version 2, ``compatible`` = version 1, ``default``
  = version 0, in order of preference). When the group's protocol is
  ``default`` (eager: a Kafka Connect worker with ``connect.protocol=eager``
  in the group, or this one) a member that holds work first stops all of it
  (``on_revoked_all("eager_rebalance")``, Kafka's ``onJoinPrepare``), so
  every round starts from nothing and each assignment is all the member runs.
  A broker that answers MEMBER_ID_REQUIRED gets the same request again with
  the member id it gave. The coordinator picks a leader; the leader
  decodes every member's metadata, asks :meth:`MembershipHandler.assign` and
  sends the encoded assignments in its SyncGroup; followers send an empty one.
- STABLE: the decoded assignment goes to :meth:`MembershipHandler.on_assigned`;
  the member then heartbeats every ``heartbeat_interval_ms``. Under ``sessioned``
  and ``compatible`` the rebalancing is
  incremental and cooperative (KIP-415): a rejoin never stops work by itself;
  only ``revoked`` in an assignment says what to stop, and after such an
  assignment the member rejoins at once so the leader can hand the freed work
  to others in a second round.
- Heartbeats go on during JOINING too, on their own connection: the coordinator
  answers REBALANCE_IN_PROGRESS (or NONE once the join completed) to a member
  it still counts, which is what keeps the session deadline below honest while
  a JoinGroup is held for the others to rejoin.

The session deadline (why ``on_revoked_all`` does not wait for an error):
the coordinator drops a member whose last request reached it more than
``session_timeout_ms`` ago, and then hands its work to others. A request that
succeeded was *sent* no earlier than it reached the coordinator, so the member
counts from the send time of its last request the coordinator answered as to a
current member (a heartbeat with NONE or REBALANCE_IN_PROGRESS, a JoinGroup or
a SyncGroup that succeeded). Once ``session_timeout_ms - revocation_margin_ms``
has passed since then the member may be about to be dropped, possibly without
ever hearing so (a network partition, a dead coordinator), and it calls
``on_revoked_all`` right there. The coordinator cannot drop it earlier than
``session_timeout_ms`` after that send, and only after that can another member
be given its work, so as long as the herder stops its work within
``revocation_margin_ms`` no connector or task runs twice. An error response
that says the member is gone (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
FENCED_INSTANCE_ID) calls it at once. A coordinator that moves is not in
itself a loss: the group lives on at the new coordinator, and the deadline
decides if it took too long.

Network errors are retried after ``retry_backoff_ms`` (the client's setting).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import Any, Protocol, Self

from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType
from aiokafka.errors import GroupCoordinatorNotAvailableError, KafkaConnectionError, KafkaError
from aiokafka.protocol.group import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest

from connectd.cluster.protocol import (
    EAGER,
    PROTOCOL_TYPE,
    VERSIONS,
    ConnectAssignment,
    ProtocolError,
    WorkerMetadata,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)
from connectd.errors import ConfigError
from connectd.logging import get_logger
from connectd.loops import Loops

__all__ = ["EAGER_REBALANCE", "MembershipHandler", "WorkerGroupMember"]

log = get_logger(__name__)

# Kafka error codes the group protocol reacts to.
_NONE = 0
_GROUP_LOAD_IN_PROGRESS = 14
_COORDINATOR_NOT_AVAILABLE = 15
_NOT_COORDINATOR = 16
_ILLEGAL_GENERATION = 22
_UNKNOWN_MEMBER_ID = 25
_REBALANCE_IN_PROGRESS = 27
_MEMBER_ID_REQUIRED = 79
_FENCED_INSTANCE_ID = 82
_GONE = {
    _ILLEGAL_GENERATION: "illegal_generation",
    _UNKNOWN_MEMBER_ID: "unknown_member_id",
    _FENCED_INSTANCE_ID: "fenced_instance_id",
}
_COORDINATOR_MOVED = (_COORDINATOR_NOT_AVAILABLE, _NOT_COORDINATOR)

#: ``on_revoked_all``'s reason when an eager group rebalances (not a loss of the group).
EAGER_REBALANCE = "eager_rebalance"

_UNJOINED = "unjoined"
_JOINING = "joining"
_STABLE = "stable"

# Kafka's AbstractCoordinator waits this much longer than the rebalance timeout for a JoinGroup.
_JOIN_TIMEOUT_EXTRA_MS = 5000


class MembershipHandler(Protocol):
    """What the herder does for its :class:`WorkerGroupMember`.

    The member never runs two of ``assign``, ``on_assigned`` and
    ``on_revoked_all`` at once. An optional ``async on_rebalance_start()`` is
    called when a heartbeat learns that a rebalance began, and an optional
    ``on_lease(until)`` whenever the moment the member may hold its work
    until moves (the session deadline: ``time.monotonic()`` seconds; 0 once
    it holds none), for :mod:`connectd.runtime.fencing`.
    """

    def metadata(self) -> WorkerMetadata:
        """What to tell the leader in the next JoinGroup: REST URL, config offset
        read so far, and what this worker runs now (``None`` before its first assignment)."""

    async def assign(
        self, leader_id: str, generation: int, protocol: str, members: dict[str, WorkerMetadata]
    ) -> dict[str, ConnectAssignment]:
        """Leader only: the assignment of every member of ``members`` (keyed by member id).

        :param leader_id: this member's id.
        :param generation: the generation being formed.
        :param protocol: ``sessioned``, ``compatible`` or ``default`` (eager), as the coordinator chose.
        :param members: every member's decoded metadata, this one included.
        """

    async def on_assigned(
        self, assignment: ConnectAssignment, generation: int, member_id: str, protocol: str
    ) -> None:
        """The leader's answer for this member arrived: stop ``assignment.revoked``,
        start what it newly gives. With ``assignment.error`` set (CONFIG_MISMATCH)
        read the config topic to ``assignment.config_offset``; the member rejoins after."""

    async def on_revoked_all(self, reason: str) -> None:
        """The member may have lost the group: stop every connector and task now,
        within the member's ``revocation_margin_ms`` (see the module docstring).

        :param reason: ``session_deadline``, ``unknown_member_id``,
            ``illegal_generation`` or ``fenced_instance_id``; or :data:`EAGER_REBALANCE`: the
            group is eager and rebalances, the work is stopped gracefully before the member rejoins.
        """


class WorkerGroupMember:
    """A worker in the Connect group; see the module docstring for the states.

    :param client_settings: keyword arguments for :class:`aiokafka.AIOKafkaClient`
        (``bootstrap_servers``, security settings, ``retry_backoff_ms``, ...).
    :param group_id: the Connect cluster's ``group.id``.
    :param session_timeout_ms: the coordinator drops a member silent for this long.
    :param rebalance_timeout_ms: how long the coordinator waits for members to rejoin.
    :param heartbeat_interval_ms: time between heartbeats.
    :param protocols: sub-protocols in order of preference, as
        :data:`~connectd.cluster.protocol.OFFERED` gives them.
    :param handler: the herder's side.
    :param loops: where its join, heartbeat and session-deadline loops run (the herder's); its own
        by default.
    :param revocation_margin_ms: how long before the session could expire
        ``on_revoked_all`` is called, i.e. the time the herder has to stop its
        work; default a third of the session timeout.
    :param retry_backoff_max_ms: ``retry.backoff.max.ms``: after each failed join in a row the
        wait doubles, from ``retry_backoff_ms`` up to this (with Kafka's 20 % jitter), so a
        broker away for long is asked about once a second, not ten times.
    """

    def __init__(
        self,
        client_settings: dict[str, Any],
        group_id: str,
        *,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        heartbeat_interval_ms: int,
        protocols: list[str],
        handler: MembershipHandler,
        revocation_margin_ms: int | None = None,
        loops: Loops | None = None,
        retry_backoff_max_ms: int | None = None,
    ) -> None:
        unknown = [name for name in protocols if name not in VERSIONS]
        if not protocols or unknown:
            raise ConfigError([f"connect protocols must be among {sorted(VERSIONS)}, not {protocols}"])
        if revocation_margin_ms is None:
            revocation_margin_ms = session_timeout_ms // 3
        if session_timeout_ms - revocation_margin_ms <= heartbeat_interval_ms:
            problem = (
                f"heartbeat.interval.ms ({heartbeat_interval_ms}) must be below the session timeout "
                f"({session_timeout_ms}) minus the revocation margin ({revocation_margin_ms})"
            )
            raise ConfigError([problem])
        self._settings = dict(client_settings)
        self._group_id = group_id
        self._session_timeout_ms = session_timeout_ms
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self._heartbeat_interval = heartbeat_interval_ms / 1000
        self._protocols = list(protocols)
        self._handler = handler
        self._revocation_deadline = (session_timeout_ms - revocation_margin_ms) / 1000
        self._retry_backoff = self._settings.get("retry_backoff_ms", 100) / 1000
        self._retry_backoff_max = max(self._retry_backoff, (retry_backoff_max_ms or 0) / 1000)
        self._failed_joins = 0  # in a row; the back-off grows with it

        self._client: AIOKafkaClient | None = None
        self._bootstrapped = False
        self._coordinator_id: int | None = None
        self._member_id = ""
        self._generation = -1
        self._leader_id = ""
        self._protocol: str | None = None
        self._assignment: ConnectAssignment | None = None
        self._state = _UNJOINED
        self._holds_work = False
        self._last_contact = 0.0  # monotonic send time of the last request that proved membership
        self._rebalance_noticed_generation = -1

        self._rejoin = asyncio.Event()
        self._closing = asyncio.Event()
        self._coordinator_lost = asyncio.Event()
        self._callbacks = asyncio.Lock()
        self._loops = loops if loops is not None else Loops()
        self._loop_names: list[str] = []
        self._delayed_rejoin: asyncio.TimerHandle | None = None
        self._leave_request: tuple[float, str] | None = None  # (seconds out of the group, why)
        self._started = False
        self._stopped = False
        # Test hook: clear it and no request leaves this member (a network partition).
        self._network_gate = asyncio.Event()
        self._network_gate.set()

    # --- public ---------------------------------------------------------------

    @property
    def member_id(self) -> str:
        """The id the coordinator gave this member ("" before the first join)."""
        return self._member_id

    @property
    def generation(self) -> int:
        """The generation of the last JoinGroup (-1 before the first)."""
        return self._generation

    @property
    def leader_id(self) -> str:
        return self._leader_id

    @property
    def is_leader(self) -> bool:
        return bool(self._member_id) and self._member_id == self._leader_id

    @property
    def protocol(self) -> str | None:
        """The sub-protocol the coordinator chose at the last JoinGroup (``None`` before one)."""
        return self._protocol

    @property
    def leader_url(self) -> str | None:
        """The leader's REST URL from the last assignment (``None`` before one)."""
        return self._assignment.leader_url if self._assignment is not None else None

    @property
    def assignment(self) -> ConnectAssignment | None:
        """The last assignment received."""
        return self._assignment

    @property
    def rebalancing(self) -> bool:
        """True until the member holds a current assignment, and while it rejoins."""
        return self._state != _STABLE or self._rejoin.is_set()

    async def start(self) -> None:
        """Start joining the group in the background; returns at once."""
        if self._started:
            return
        self._started = True
        settings = dict(self._settings)
        # A JoinGroup is held until the others rejoin, up to the rebalance timeout.
        settings["request_timeout_ms"] = max(
            settings.get("request_timeout_ms", 40000), self._rebalance_timeout_ms + _JOIN_TIMEOUT_EXTRA_MS
        )
        self._client = AIOKafkaClient(**settings)
        for name, step in (("join", self._join_step), ("heartbeat", self._heartbeat_step),
                           ("session-deadline", self._deadline_step)):
            self._loop_names.append(f"group-{name}")
            self._loops.run(f"group-{name}", step)

    async def stop(self) -> None:
        """Leave the group (LeaveGroup, so the others rebalance at once) and close
        the client. Idempotent. The herder stops its own work before calling it."""
        if self._stopped:
            return
        self._stopped = True
        self._closing.set()
        self._cancel_delayed_rejoin()
        for name in self._loop_names:
            await self._loops.stop(name)
        if self._client is None:
            return
        try:
            if self._member_id and self._coordinator_id is not None and self._network_gate.is_set():
                await self._leave_group()
        finally:
            await self._client.close()
            self._state = _UNJOINED

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def request_rejoin(self) -> None:
        """Ask for a rebalance (e.g. the connector configs changed); work keeps running."""
        if not self._rejoin.is_set():
            log.info("group_rejoin_requested", group=self._group_id, generation=self._generation)
            self._rejoin.set()

    def leave_for(self, seconds: float, reason: str) -> None:
        """Leave the group and stay out for *seconds* before joining again; returns at once.

        The join loop revokes the member's work (``on_revoked_all``), sends LeaveGroup so that
        the others rebalance at once, and waits; as Kafka's worker does with
        ``worker.unsync.backoff.ms`` when it cannot read the config topic in time.
        """
        self._leave_request = (seconds, reason)
        self._rejoin.set()

    # --- the join loop ----------------------------------------------------------

    async def _join_step(self) -> None:
        """One turn of the join loop: leave for a while, (re)join, or wait for a reason to rejoin.
        A network error is a warning and a back-off; anything else (a bug, a handler that raised)
        goes to the loop's keeper, which logs its trace and backs off: the membership lives on."""
        if self._closing.is_set():
            await asyncio.sleep(self._retry_backoff)  # stop() cancels this loop
            return
        try:
            if self._leave_request is not None:
                await self._stay_out()
                return
            await self._ensure_coordinator()
            if self._state != _STABLE or self._rejoin.is_set():
                if not await self._join_and_sync():
                    await self._backoff()
                    return
                self._failed_joins = 0
                return
            await self._wait_any(self._rejoin, self._coordinator_lost)
        except (TimeoutError, KafkaError, OSError) as exc:
            log.warning(
                "group_request_failed", group=self._group_id, generation=self._generation, error=repr(exc)
            )
            await self._backoff()

    async def _ensure_coordinator(self) -> None:
        while self._coordinator_id is None:
            await self._network_gate.wait()
            assert self._client is not None
            if not self._bootstrapped:
                await self._client.bootstrap()
                self._bootstrapped = True
            node_id = await self._client.coordinator_lookup(CoordinationType.GROUP, self._group_id)
            if not await self._client.ready(node_id, group=ConnectionGroup.COORDINATION):
                raise KafkaConnectionError(f"cannot connect to the group coordinator (node {node_id})")
            self._coordinator_id = node_id
            self._coordinator_lost.clear()
            log.info("group_coordinator_found", group=self._group_id, node=node_id)

    async def _join_and_sync(self) -> bool:
        """One JoinGroup + SyncGroup round; False when the caller should back off first."""
        # After the herder's callbacks: a member that lost the group is still stopping its work
        # (on_revoked_all) when its rejoin is asked for, and a JoinGroup sent meanwhile would
        # tell the leader it still runs that work: no one would be given it (Kafka's
        # onJoinPrepare likewise finishes before the JoinGroup).
        if self._protocol == EAGER and self._holds_work:
            # Eager: all work stops before the member joins; the leader then assigns everything afresh.
            self._holds_work = False
            self._tell_lease(0.0)
            await self._revoke_all(EAGER_REBALANCE)
        async with self._callbacks:
            self._rejoin.clear()
            self._state = _JOINING
            metadata = self._handler.metadata()
        protocols = [(name, encode_metadata(metadata, VERSIONS[name])) for name in self._protocols]
        log.info("group_joining", group=self._group_id, generation=self._generation, member_id=self._member_id)
        while True:
            sent = time.monotonic()
            response = await self._send(
                JoinGroupRequest(
                    self._group_id,
                    self._session_timeout_ms,
                    self._rebalance_timeout_ms,
                    self._member_id,
                    None,
                    PROTOCOL_TYPE,
                    protocols,
                ),
                ConnectionGroup.COORDINATION,
            )
            if response.error_code != _MEMBER_ID_REQUIRED:
                break
            # KIP-394: the broker hands out the id and wants it back before counting the member.
            self._member_id = response.member_id
        error = response.error_code
        if error != _NONE:
            return await self._join_failed("join_group", error)

        self._contact(sent)
        self._member_id = response.member_id
        self._generation = response.generation_id
        self._leader_id = response.leader_id
        self._protocol = response.group_protocol
        log.info(
            "group_joined",
            group=self._group_id,
            generation=self._generation,
            member_id=self._member_id,
            leader=self._leader_id,
            protocol=self._protocol,
            members=len(response.members),
        )
        version = VERSIONS.get(self._protocol)
        if version is None:
            log.error("group_protocol_unknown", group=self._group_id, protocol=self._protocol)
            return False

        group_assignment: list[tuple[str, bytes]] = []
        assignments: dict[str, ConnectAssignment] = {}
        if self.is_leader:
            members = {}
            for member in response.members:
                # v5 adds group_instance_id in the middle; metadata is always last
                member_id, raw = member[0], member[-1]
                try:
                    members[member_id] = decode_metadata(raw)
                except ProtocolError as exc:
                    log.error("group_member_metadata_unreadable", group=self._group_id, member=member_id, error=str(exc))
                    return False
            async with self._callbacks:
                assignments = await self._handler.assign(self._member_id, self._generation, self._protocol, members)
            group_assignment = [(member_id, encode_assignment(a, version)) for member_id, a in assignments.items()]
            log.info("group_assignments_computed", group=self._group_id, generation=self._generation, members=len(members))

        sent = time.monotonic()
        response = await self._send(
            SyncGroupRequest(self._group_id, self._generation, self._member_id, None, group_assignment),
            ConnectionGroup.COORDINATION,
        )
        error = response.error_code
        if error != _NONE:
            return await self._join_failed("sync_group", error)
        self._contact(sent)
        try:
            assignment = decode_assignment(response.member_assignment)
        except ProtocolError as exc:
            log.error("group_assignment_unreadable", group=self._group_id, generation=self._generation, error=str(exc))
            self._state = _UNJOINED
            return False
        if self.is_leader and assignment != assignments.get(self._member_id, assignment):
            # Kafka answers the leader with what it sent for itself. A coordinator that answers with
            # another round's assignment (the dev broker does, when a lone member rejoins and keeps its
            # generation) would have the leader act on a stale plan: the leader's own plan is the truth.
            log.warning("group_assignment_differs_from_sent", group=self._group_id, generation=self._generation)
            assignment = assignments[self._member_id]

        self._assignment = assignment
        self._state = _STABLE
        self._cancel_delayed_rejoin()
        log.info(
            "group_assigned",
            group=self._group_id,
            generation=self._generation,
            leader=assignment.leader,
            error=assignment.error,
            connectors=list(assignment.connectors),
            tasks=[str(t) for t in assignment.tasks],
            revoked_connectors=list(assignment.revoked.connectors),
            revoked_tasks=[str(t) for t in assignment.revoked.tasks],
            delay_ms=assignment.delay_ms,
        )
        self._holds_work = True
        self._tell_lease(self._last_contact + self._revocation_deadline)
        async with self._callbacks:
            try:
                await self._handler.on_assigned(assignment, self._generation, self._member_id, self._protocol)
            except Exception:
                # The herder reports its own failures; the membership carries on.
                log.exception("group_assigned_callback_failed", group=self._group_id, generation=self._generation)
        if assignment.failed:
            # CONFIG_MISMATCH: the herder has read the config topic in on_assigned.
            self.request_rejoin()
        elif len(assignment.revoked):
            # KIP-415 second round: the revoked work is stopped, let the leader give it out.
            self.request_rejoin()
        elif assignment.delay_ms > 0:
            log.info("group_rejoin_scheduled", group=self._group_id, generation=self._generation, delay_ms=assignment.delay_ms)
            self._delayed_rejoin = asyncio.get_running_loop().call_later(
                assignment.delay_ms / 1000, self.request_rejoin
            )
        return True

    async def _join_failed(self, api: str, error: int) -> bool:
        log.warning("group_request_rejected", group=self._group_id, api=api, error=error, generation=self._generation)
        if error in _GONE:
            await self._lost(_GONE[error])
            return True
        if error in _COORDINATOR_MOVED:
            self._mark_coordinator_dead()
            return True
        if error == _REBALANCE_IN_PROGRESS:
            # SyncGroup raced a new rebalance: the member is still in the group, rejoin.
            self._rejoin.set()
            return True
        if error == _GROUP_LOAD_IN_PROGRESS:
            return False
        # Anything else (inconsistent protocol, bad session timeout, authorization)
        # needs an operator; keep retrying slowly and say so.
        log.error("group_join_refused", group=self._group_id, api=api, error=error)
        return False

    # --- heartbeats and the session deadline -------------------------------------

    async def _heartbeat_step(self) -> None:
        """One heartbeat, after the heartbeat interval (when the member has joined)."""
        await self._sleep(self._heartbeat_interval)
        if self._closing.is_set() or self._coordinator_id is None or not self._member_id or self._generation < 0:
            return
        member_id, generation, joining = self._member_id, self._generation, self._state != _STABLE
        sent = time.monotonic()
        try:
            async with asyncio.timeout(self._session_timeout_ms / 1000):  # not wait_for: see _sleep
                response = await self._send(HeartbeatRequest(self._group_id, generation, member_id),
                                            ConnectionGroup.DEFAULT)
        except asyncio.CancelledError:
            raise
        except (TimeoutError, KafkaError, OSError) as exc:
            log.warning("group_heartbeat_failed", group=self._group_id, generation=generation, error=repr(exc))
            return
        error = response.error_code
        if error == _NONE:
            self._contact(sent)
        elif error == _REBALANCE_IN_PROGRESS:
            self._contact(sent)
            if not joining and generation == self._generation and self._state == _STABLE:
                await self._rebalance_started()
        elif error in _GONE:
            # A heartbeat with the old generation can cross the JoinGroup that makes
            # a new one: only the current generation, outside a join, is a verdict.
            current = not joining and self._state == _STABLE and generation == self._generation
            if member_id == self._member_id and (error != _ILLEGAL_GENERATION or current):
                await self._lost(_GONE[error])
        elif error in _COORDINATOR_MOVED:
            self._mark_coordinator_dead()
        else:
            log.warning("group_heartbeat_rejected", group=self._group_id, generation=generation, error=error)

    async def _deadline_step(self) -> None:
        """The session deadline looked at: passed, the work is revoked; else wait until it may be."""
        if self._closing.is_set():
            await asyncio.sleep(self._heartbeat_interval)  # stop() cancels this loop
            return
        wait = self._heartbeat_interval
        if self._holds_work:
            remaining = self._last_contact + self._revocation_deadline - time.monotonic()
            if remaining <= 0:
                await self._lost("session_deadline")
                return
            wait = min(wait, remaining)
        await self._sleep(wait)

    async def _rebalance_started(self) -> None:
        if self._rebalance_noticed_generation == self._generation:
            return
        self._rebalance_noticed_generation = self._generation
        log.info("group_rebalance_started", group=self._group_id, generation=self._generation)
        self._rejoin.set()
        callback = getattr(self._handler, "on_rebalance_start", None)
        if callback is not None:
            try:
                await callback()
            except Exception:
                log.exception("group_rebalance_callback_failed", group=self._group_id)

    async def _lost(self, reason: str) -> None:
        """The member is, or may be, out of the group: the herder stops everything, then rejoin afresh."""
        held = self._holds_work
        generation = self._generation
        self._holds_work = False
        self._tell_lease(0.0)
        self._cancel_delayed_rejoin()
        if reason != "session_deadline":
            self._member_id = ""
            self._generation = -1
            self._leader_id = ""
        self._state = _UNJOINED
        self._rejoin.set()
        log.warning(
            "group_membership_lost", group=self._group_id, reason=reason, generation=generation, held_work=held
        )
        if held:
            await self._revoke_all(reason)

    async def _revoke_all(self, reason: str) -> None:
        """The herder stops all its work (``on_revoked_all``); a callback that fails is logged."""
        async with self._callbacks:
            try:
                await self._handler.on_revoked_all(reason)
            except Exception:
                log.exception("group_revoke_callback_failed", group=self._group_id)

    async def _stay_out(self) -> None:
        """:meth:`leave_for`: the work revoked, the group left, the time waited."""
        assert self._leave_request is not None
        seconds, reason = self._leave_request
        self._leave_request = None
        held, generation = self._holds_work, self._generation
        self._holds_work = False
        self._tell_lease(0.0)
        self._cancel_delayed_rejoin()
        if held:
            await self._revoke_all(reason)
        if self._member_id and self._coordinator_id is not None:
            await self._leave_group()
        self._member_id, self._generation, self._leader_id = "", -1, ""
        self._state = _UNJOINED
        log.warning("group_left_for_a_while", group=self._group_id, reason=reason, generation=generation,
                    rejoin_in_s=seconds)
        await self._sleep(seconds)
        self._rejoin.set()

    def _contact(self, sent: float) -> None:
        self._last_contact = max(self._last_contact, sent)
        if self._holds_work:
            self._tell_lease(self._last_contact + self._revocation_deadline)

    def _tell_lease(self, until: float) -> None:
        """The handler's optional ``on_lease(until)``: the member holds its work until *until*
        (``time.monotonic()`` seconds; the session deadline above), 0 once it holds none."""
        callback = getattr(self._handler, "on_lease", None)
        if callback is not None:
            try:
                callback(until)
            except Exception:
                log.exception("group_lease_callback_failed", group=self._group_id)

    # --- requests -------------------------------------------------------------

    async def _send(self, request: Any, group: ConnectionGroup) -> Any:
        await self._network_gate.wait()
        node_id = self._coordinator_id
        if node_id is None:
            raise GroupCoordinatorNotAvailableError()
        assert self._client is not None
        try:
            return await self._client.send(node_id, request, group=group)
        except KafkaError:
            self._mark_coordinator_dead()
            raise

    async def _leave_group(self) -> None:
        assert self._client is not None and self._coordinator_id is not None
        member_id, generation = self._member_id, self._generation
        try:
            response = await asyncio.wait_for(
                self._client.send(
                    self._coordinator_id, LeaveGroupRequest(self._group_id, member_id), group=ConnectionGroup.DEFAULT
                ),
                self._session_timeout_ms / 1000,
            )
        except (TimeoutError, KafkaError, OSError) as exc:
            # The session timeout will drop the member instead.
            log.warning("group_leave_failed", group=self._group_id, generation=generation, error=repr(exc))
            return
        self._member_id = ""
        self._generation = -1
        log.info(
            "group_left", group=self._group_id, generation=generation, member_id=member_id, error=response.error_code
        )

    def _mark_coordinator_dead(self) -> None:
        if self._coordinator_id is not None:
            log.warning("group_coordinator_lost", group=self._group_id, node=self._coordinator_id)
            self._coordinator_id = None
            self._coordinator_lost.set()

    def _cancel_delayed_rejoin(self) -> None:
        if self._delayed_rejoin is not None:
            self._delayed_rejoin.cancel()
            self._delayed_rejoin = None

    def backoff_s(self, failures: int) -> float:
        """The wait before the next join after *failures* failed joins in a row: ``retry.backoff.ms``
        doubled per failure, at most ``retry.backoff.max.ms``, with 20 % jitter either way."""
        wait = min(self._retry_backoff * 2 ** min(failures, 30), self._retry_backoff_max)
        return wait * random.uniform(0.8, 1.2)

    async def _backoff(self) -> None:
        wait = self.backoff_s(self._failed_joins)
        self._failed_joins += 1
        await self._sleep(wait)

    async def _sleep(self, seconds: float) -> None:
        """*seconds*, or until the member closes. ``asyncio.timeout``, not ``wait_for``: Python 3.11's
        ``wait_for`` can turn a cancellation that arrives as it times out into the ``TimeoutError``
        suppressed here, and the loop that sleeps would not stop (connectd.loops)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(seconds, 0)):
                await self._closing.wait()

    async def _wait_any(self, *events: asyncio.Event) -> None:
        waiters = [asyncio.create_task(event.wait()) for event in (*events, self._closing)]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
