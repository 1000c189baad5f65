"""Who runs what: Kafka Connect's incremental cooperative assignor (KIP-415).

The group leader calls :func:`assign` once per rebalance with every member's
metadata (its config offset and what it runs now) and what the config topic
says should run. It answers each member with a :class:`ConnectAssignment` and
returns the :class:`AssignorState` to pass to the next call. The function is
pure: time, generations and the previous state come in as arguments. It follows
Kafka's ``IncrementalCooperativeAssignor`` (3.6+, with KIP-415's delayed
reassignment and the exponential backoff between successive revoking rounds).

What an assignment means
------------------------
As in Kafka's incremental protocol, an assignment is a *change*:
``connectors``/``tasks`` are only what the member is **newly given** this round,
``revoked`` is what it must **stop**; it keeps running everything else it ran.
So after a round a member runs ``(running - revoked) | assigned``, and a member
whose work does not move gets empty connectors, tasks and revoked. Nothing is
ever in a member's ``revoked`` and its ``connectors``/``tasks`` at once.
(``revoked`` may name work the member never started: lost work handed to a
returning worker and taken back for balance in the same round, as in Kafka;
stopping it is a no-op.) :attr:`AssignorState.running` is the leader's view of
what each member runs once it has applied this round.

A round, step by step
---------------------
0. **Warming members.** A member whose metadata says it is still warming up
   (connectd's extension: its Spark is not ready) and that runs nothing gets
   an empty assignment and takes no part in the rest: it is given no work and
   counts for no balance, so no task is stopped elsewhere to wait for it. It
   rejoins once warm. (Kafka's members never say so: all take part.)
1. **Config check.** If a member has read the config topic further than the
   leader's snapshot (``config_offset``), every member gets
   :data:`CONFIG_MISMATCH` with the highest offset; they read up to it and
   rejoin. The state does not change. Otherwise every assignment carries the
   leader's ``config_offset``, the snapshot it was computed from, for members
   to read up to before they start work (Kafka sends the highest member
   offset, which can be older than the leader's snapshot).
2. **Sets.** ``previous`` is what the leader assigned last round (plus lost
   work it is still holding); it is forgotten when ``last_completed_generation``
   is not the generation of that round (the previous sync did not complete, or
   this leader is new). If last round's revocations are still reported as
   running, the revocation did not take effect and ``previous`` becomes what
   members report. Then, as Kafka:

   - ``deleted = previous - configured``: revoked from whoever runs it;
   - ``duplicated``: reported by two or more members, revoked from all of them
     (it is assigned once in the next round);
   - ``lost = previous - active - deleted``: its worker left the group;
   - ``created = configured - previous - active``: assigned this round.
3. **Lost work** (see the states below): held, given to candidates, or
   assigned like created work.
4. **Balance.** Unless a delay is active, connectors and tasks are counted
   separately; a worker above ``total // workers`` (+1 for the first
   ``total % workers`` such workers) has its surplus revoked. Revoked work is
   assigned in the *next* round, once its old owner has stopped it.
5. **Assign** created (and released lost) work, connectors then tasks, to the
   least loaded workers (level filling; ties broken by member id).

States between rounds
---------------------
``STABLE`` (no scheduled rebalance, ``revoked_in_previous`` false)
    --lost work seen--> ``HOLDING`` (delay = ``max_delay_ms``). With
    ``max_delay_ms == 0``, or if no member left the group since the last round
    (the lost work is an assignment that never reached its worker), lost work
    is assigned at once instead.
    --balance needs revocations--> ``REVOKED``.

``REVOKED`` (``revoked_in_previous``: the last round revoked for balance)
    Members stop the revoked work and rejoin at once; the next round assigns it.
    --no balancing revocation needed--> ``STABLE`` (the backoff counter resets).
    --balancing revocations needed again--> they are *not* made; the leader
    schedules a rebalance after a backoff (40 ms, 1.6 s, 64 s, ... capped at
    ``max_delay_ms``; 0 when ``max_delay_ms`` is 0, which revokes at once) and
    goes to ``HOLDING``; at its end, revocations are allowed again.

``HOLDING`` (``scheduled_rebalance_ms`` set)
    Every member gets ``delay_ms`` = the time left and rejoins when it runs out.
    No balancing revocations; created work is still assigned. Each round, the
    members with nothing to run are added to ``candidates`` (a bounced worker
    rejoins empty, under a new member id, and so becomes one).
    --round at or after the scheduled time--> lost work goes round-robin to the
    candidates still in the group (the returning worker gets its work back), or
    to the least loaded workers if there are none; then ``STABLE`` (the same
    round may revoke for balance).

A leader that leaves takes the state with it: the new leader starts with no
state, so it has no ``previous`` and everything configured that no member
reports is ``created`` and assigned at once.

The eager protocol
------------------
When the group runs ``default`` (``connect.protocol=eager`` on some member)
:func:`assign_eager` is used instead, as Kafka's ``EagerAssignor``: every
member stopped all its work before joining, so each gets everything it is
to run: after the config check, connectors sorted by name and then their
tasks sorted, dealt round-robin over the members sorted by id, the deal
going on from the connectors into the tasks. No state, no delay, nothing
revoked (there is nothing running to revoke); warming members take work
too (a version 0 metadata cannot say it warms).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from connectd.cluster.protocol import (
    CONFIG_MISMATCH,
    NO_ERROR,
    ConnectAssignment,
    ConnectorTaskId,
    WorkerLoad,
    WorkerMetadata,
)
from connectd.logging import get_logger

__all__ = ["AssignorState", "assign", "assign_eager"]

log = get_logger(__name__)

_T = TypeVar("_T")

_EMPTY = WorkerLoad()

# Kafka's ExponentialBackoff for successive revoking rebalances: 1 ms * 40^n, no jitter.
_BACKOFF_INITIAL_MS = 1
_BACKOFF_MULTIPLIER = 40


@dataclass(frozen=True)
class AssignorState:
    """What the leader remembers between rounds (Kafka keeps it in the assignor).

    Start with ``None`` (or ``AssignorState()``); pass each round's result to the next.
    A worker that stops being leader drops it.

    :param previous_assignment: all work assigned after the last round, with
        lost work still held for its worker (one flat set, as Kafka's).
    :param previous_revocation: what the last round revoked.
    :param previous_generation: the generation of the last round (-1: none).
    :param previous_members: the member ids of the last round.
    :param revoked_in_previous: the last round revoked for balance.
    :param successive_revoking_rebalances: how many balancing rounds in a row
        wanted to revoke (drives the backoff).
    :param scheduled_rebalance_ms: when held lost work gets reassigned, or the
        backoff ends (absolute, same clock as ``now_ms``); ``None``: nothing scheduled.
    :param delay_ms: the delay sent to members in the last round.
    :param candidates: members seen empty while lost work was held, in the order
        they were found; they receive the lost work when the delay ends.
    :param running: member id -> what it runs once it applied the last round.
    """

    previous_assignment: WorkerLoad = _EMPTY
    previous_revocation: WorkerLoad = _EMPTY
    previous_generation: int = -1
    previous_members: frozenset[str] = frozenset()
    revoked_in_previous: bool = False
    successive_revoking_rebalances: int = 0
    scheduled_rebalance_ms: int | None = None
    delay_ms: int = 0
    candidates: tuple[str, ...] = ()
    running: Mapping[str, WorkerLoad] = field(default_factory=dict)


def assign(
    *,
    leader: str,
    members: Mapping[str, WorkerMetadata],
    config_offset: int,
    connectors: Iterable[str],
    tasks: Iterable[ConnectorTaskId],
    generation: int,
    last_completed_generation: int,
    state: AssignorState | None,
    now_ms: int,
    max_delay_ms: int,
) -> tuple[dict[str, ConnectAssignment], AssignorState]:
    """Compute one round's assignments.

    :param leader: the leader's member id (one of ``members``).
    :param members: member id -> its JoinGroup metadata; ``assignment`` is what it runs now.
    :param config_offset: the offset the leader's config snapshot was read up to.
    :param connectors: the connectors that snapshot configures (stopped ones included).
    :param tasks: their tasks (a stopped connector has none).
    :param generation: the generation this round assigns for.
    :param last_completed_generation: the last generation whose SyncGroup this
        worker completed (-1: none); if it is not ``state.previous_generation``
        the previous assignment is not trusted (Kafka's check).
    :param state: what the last call returned, or ``None`` for a new leader.
    :param now_ms: the current time, in milliseconds.
    :param max_delay_ms: ``scheduled.rebalance.max.delay.ms``.
    :returns: member id -> its assignment, and the state for the next round.
    """
    if leader not in members:
        raise ValueError(f"leader {leader!r} is not a member of the group")
    state = state if state is not None else AssignorState()
    leader_url = members[leader].url

    max_offset = max(m.config_offset for m in members.values())
    if max_offset > config_offset:
        log.info("assignor_config_behind", leader_offset=config_offset, max_offset=max_offset)
        return (
            {m: ConnectAssignment(CONFIG_MISMATCH, leader, leader_url, max_offset) for m in sorted(members)},
            state,
        )

    # A member still warming up (connectd's extension) that runs nothing takes no part in the round:
    # it is given nothing, counts for no balance, and rejoins once it can run work.
    taking = sorted(m for m, metadata in members.items() if not (metadata.warming and not metadata.assignment))
    warming = sorted(set(members) - set(taking))
    if warming:
        log.info("assignor_members_warming", members=warming)
    idle = {m: ConnectAssignment(NO_ERROR, leader, leader_url, config_offset) for m in warming}
    if not taking:
        return idle, state
    round_ = _Round(state, now_ms, max_delay_ms)
    changes, next_state = round_.run(
        {m: members[m].assignment or _EMPTY for m in taking},
        sorted(set(connectors)),
        sorted(set(tasks)),
        generation,
        last_completed_generation,
    )
    assignments = idle | {
        m: ConnectAssignment(
            NO_ERROR,
            leader,
            leader_url,
            config_offset,
            connectors=tuple(sorted(added.connectors)),
            tasks=tuple(sorted(added.tasks)),
            revoked=revoked,
            delay_ms=next_state.delay_ms,
        )
        for m, (added, revoked) in changes.items()
    }
    return assignments, next_state


def assign_eager(
    *,
    leader: str,
    members: Mapping[str, WorkerMetadata],
    config_offset: int,
    connectors: Iterable[str],
    tasks: Iterable[ConnectorTaskId],
) -> dict[str, ConnectAssignment]:
    """One round of the eager protocol (see "The eager protocol" above): member id → all it runs.

    :param leader: the leader's member id (one of ``members``).
    :param members: member id -> its JoinGroup metadata (only the URL and config offset are read).
    :param config_offset: the offset the leader's config snapshot was read up to.
    :param connectors: the connectors that snapshot configures.
    :param tasks: their tasks.
    """
    if leader not in members:
        raise ValueError(f"leader {leader!r} is not a member of the group")
    leader_url = members[leader].url
    max_offset = max(m.config_offset for m in members.values())
    if max_offset > config_offset:
        log.info("assignor_config_behind", leader_offset=config_offset, max_offset=max_offset)
        return {m: ConnectAssignment(CONFIG_MISMATCH, leader, leader_url, max_offset) for m in sorted(members)}
    order = sorted(members)
    given: dict[str, tuple[list[str], list[ConnectorTaskId]]] = {m: ([], []) for m in order}
    dealt = 0
    for name in sorted(set(connectors)):
        given[order[dealt % len(order)]][0].append(name)
        dealt += 1
    for task in sorted(set(tasks)):
        given[order[dealt % len(order)]][1].append(task)
        dealt += 1
    return {m: ConnectAssignment(NO_ERROR, leader, leader_url, config_offset, connectors=tuple(names),
                                 tasks=tuple(ids)) for m, (names, ids) in given.items()}


class _Load:
    """One worker's load while a round is computed (Kafka's mutable WorkerLoad):
    lists, so work given this round comes after what the worker already runs."""

    __slots__ = ("connectors", "tasks", "worker")

    def __init__(self, worker: str, connectors: Iterable[str] = (), tasks: Iterable[ConnectorTaskId] = ()):
        self.worker = worker
        self.connectors: list[str] = list(connectors)
        self.tasks: list[ConnectorTaskId] = list(tasks)

    def is_empty(self) -> bool:
        return not self.connectors and not self.tasks

    def remove(self, load: WorkerLoad) -> None:
        self.connectors = [c for c in self.connectors if c not in load.connectors]
        self.tasks = [t for t in self.tasks if t not in load.tasks]

    def frozen(self) -> WorkerLoad:
        return WorkerLoad.of(self.connectors, self.tasks)


def _union(loads: Iterable[WorkerLoad]) -> WorkerLoad:
    loads = list(loads)
    return WorkerLoad.of(
        (c for load in loads for c in load.connectors),
        (t for load in loads for t in load.tasks),
    )


def _diff(base: WorkerLoad, *subtract: WorkerLoad) -> WorkerLoad:
    connectors = set(base.connectors)
    tasks = set(base.tasks)
    for load in subtract:
        connectors.difference_update(load.connectors)
        tasks.difference_update(load.tasks)
    return WorkerLoad.of(connectors, tasks)


def _intersect(load: WorkerLoad, other: WorkerLoad) -> WorkerLoad:
    return WorkerLoad.of(set(load.connectors) & set(other.connectors), set(load.tasks) & set(other.tasks))


def _overlaps(load: WorkerLoad, other: WorkerLoad) -> bool:
    return bool(set(load.connectors) & set(other.connectors) or set(load.tasks) & set(other.tasks))


def _backoff_ms(attempts: int, max_delay_ms: int) -> int:
    """Kafka's ExponentialBackoff(initial 1 ms (0 if max is 0), x40, max max_delay_ms, no jitter)."""
    initial = min(max_delay_ms, 0 if max_delay_ms == 0 else _BACKOFF_INITIAL_MS)
    if max_delay_ms <= initial:
        return initial
    exp_max = math.log(max_delay_ms / max(initial, 1)) / math.log(_BACKOFF_MULTIPLIER)
    term = initial * math.pow(_BACKOFF_MULTIPLIER, min(attempts, exp_max))
    return min(int(term), max_delay_ms)


class _Round:
    """One call of :func:`assign`: Kafka's assignor fields, copied in, updated, frozen out."""

    def __init__(self, state: AssignorState, now_ms: int, max_delay_ms: int):
        self.now = now_ms
        self.max_delay = max_delay_ms
        self.previous = state.previous_assignment
        self.previous_revocation = state.previous_revocation
        self.previous_generation = state.previous_generation
        self.previous_members = state.previous_members
        self.revoked_in_previous = state.revoked_in_previous
        self.successive_revocations = state.successive_revoking_rebalances
        self.scheduled = state.scheduled_rebalance_ms
        self.delay = state.delay_ms
        self.candidates = list(state.candidates)

    def run(
        self,
        member_loads: dict[str, WorkerLoad],
        configured_connectors: list[str],
        configured_tasks: list[ConnectorTaskId],
        generation: int,
        last_completed_generation: int,
    ) -> tuple[dict[str, tuple[WorkerLoad, WorkerLoad]], AssignorState]:
        if self.previous_generation != last_completed_generation:
            # The last round's assignment may never have reached the members.
            if len(self.previous):
                log.debug(
                    "assignor_previous_assignment_dropped",
                    previous_generation=self.previous_generation,
                    last_completed_generation=last_completed_generation,
                )
            self.previous = _EMPTY

        configured = WorkerLoad.of(configured_connectors, configured_tasks)
        active = _union(member_loads.values())

        if len(self.previous_revocation) and _overlaps(self.previous_revocation, active):
            # A revocation did not take effect: trust what members report.
            self.previous = active
        self.previous_revocation = _EMPTY

        deleted = _diff(self.previous, configured)
        duplicated = _duplicated(member_loads)
        lost = _diff(self.previous, active, deleted)
        created = _diff(configured, self.previous, active)

        current = {m: _diff(load, deleted) for m, load in member_loads.items()}
        to_revoke: dict[str, WorkerLoad] = {}
        deleted_to_revoke = {m: _intersect(load, deleted) for m, load in member_loads.items()}
        duplicated_to_revoke = {m: _intersect(load, duplicated) for m, load in member_loads.items()}
        _add_all(to_revoke, deleted_to_revoke)
        _add_all(to_revoke, duplicated_to_revoke)

        next_loads = [_Load(m, load.connectors, load.tasks) for m, load in member_loads.items()]
        _remove_all(next_loads, deleted_to_revoke)
        _remove_all(next_loads, duplicated_to_revoke)

        lost_to_reassign = self._handle_lost(lost, next_loads)

        if self.delay == 0:
            balancing = _balancing_revocations(configured, next_loads)
            if self.revoked_in_previous and balancing:
                self.successive_revocations += 1
                self.delay = _backoff_ms(self.successive_revocations, self.max_delay)
                if self.delay != 0:
                    self.scheduled = self.now + self.delay
                    log.debug("assignor_revocation_backoff", delay_ms=self.delay)
                else:
                    _add_all(to_revoke, balancing)
                    _remove_all(next_loads, balancing)
            elif balancing:
                _add_all(to_revoke, balancing)
                _remove_all(next_loads, balancing)
                self.revoked_in_previous = True
            elif self.revoked_in_previous:
                # Converged after revoking: the backoff starts over.
                self.revoked_in_previous = False
                self.successive_revocations = 0
        else:
            self.revoked_in_previous = False

        _assign_connectors(next_loads, [*created.connectors, *lost_to_reassign.connectors])
        _assign_tasks(next_loads, [*created.tasks, *lost_to_reassign.tasks])

        next_by_worker = {load.worker: load.frozen() for load in next_loads}
        changes = {
            m: (_diff(next_by_worker[m], current[m]), to_revoke.get(m, _EMPTY)) for m in member_loads
        }
        all_revoked = _union(to_revoke.values())
        self.previous = _union([_diff(_union(next_by_worker.values()), all_revoked), lost])
        self.previous_revocation = all_revoked

        log.debug(
            "assignor_round",
            generation=generation,
            members=len(member_loads),
            created=len(created),
            lost=len(lost),
            deleted=len(deleted),
            duplicated=len(duplicated),
            revoked=len(all_revoked),
            delay_ms=self.delay,
        )
        next_state = AssignorState(
            previous_assignment=self.previous,
            previous_revocation=self.previous_revocation,
            previous_generation=generation,
            previous_members=frozenset(member_loads),
            revoked_in_previous=self.revoked_in_previous,
            successive_revoking_rebalances=self.successive_revocations,
            scheduled_rebalance_ms=self.scheduled,
            delay_ms=self.delay,
            candidates=tuple(self.candidates),
            running=dict(sorted(next_by_worker.items())),
        )
        return changes, next_state

    def _handle_lost(self, lost: WorkerLoad, next_loads: list[_Load]) -> WorkerLoad:
        """Kafka's handleLostAssignments: hold lost work, or say what to assign now
        (lost work given to candidates is added to their loads here)."""
        if not len(lost) and not self.revoked_in_previous:
            self._reset_delay()
            return _EMPTY

        active_members = {load.worker for load in next_loads}
        if self.scheduled is None and active_members >= self.previous_members:
            # Nobody left: the lost work is an assignment that never reached its worker.
            return lost
        if self.max_delay == 0:
            return lost

        if self.scheduled is not None and self.now >= self.scheduled:
            by_worker = {load.worker: load for load in next_loads}
            candidates = [by_worker[c] for c in self.candidates if c in by_worker]
            released = _EMPTY
            if candidates:
                log.info("assignor_lost_work_to_candidates", candidates=[c.worker for c in candidates], work=len(lost))
                for i, connector in enumerate(lost.connectors):
                    candidates[i % len(candidates)].connectors.append(connector)
                for i, task in enumerate(lost.tasks):
                    candidates[i % len(candidates)].tasks.append(task)
            else:
                log.info("assignor_lost_work_released", work=len(lost))
                released = lost
            self._reset_delay()
            # The full delay has passed: revoking rounds may follow each other again.
            self.revoked_in_previous = False
            return released

        for load in next_loads:
            if load.is_empty() and load.worker not in self.candidates:
                self.candidates.append(load.worker)
        if self.scheduled is not None and self.now < self.scheduled:
            self.delay = min(self.scheduled - self.now, self.max_delay)
        else:
            self.delay = self.max_delay
            if len(lost):
                log.info("assignor_lost_work_held", delay_ms=self.delay, work=len(lost))
        self.scheduled = self.now + self.delay
        return _EMPTY

    def _reset_delay(self) -> None:
        self.candidates = []
        self.scheduled = None
        self.delay = 0


def _duplicated(member_loads: Mapping[str, WorkerLoad]) -> WorkerLoad:
    connectors = Counter(c for load in member_loads.values() for c in load.connectors)
    tasks = Counter(t for load in member_loads.values() for t in load.tasks)
    return WorkerLoad.of((c for c, n in connectors.items() if n > 1), (t for t, n in tasks.items() if n > 1))


def _add_all(base: dict[str, WorkerLoad], add: Mapping[str, WorkerLoad]) -> None:
    for worker, load in add.items():
        if len(load):
            base[worker] = _union([base.get(worker, _EMPTY), load])


def _remove_all(loads: list[_Load], remove: Mapping[str, WorkerLoad]) -> None:
    for load in loads:
        if load.worker in remove:
            load.remove(remove[load.worker])


def _balancing_revocations(configured: WorkerLoad, loads: list[_Load]) -> dict[str, WorkerLoad]:
    """What to revoke so that no worker runs more than a balanced share, connectors
    and tasks counted separately (Kafka's performLoadBalancingRevocations)."""
    if all(load.is_empty() for load in loads) or not len(configured):
        return {}
    ordered = sorted(loads, key=lambda load: load.worker)
    connectors = _surplus(len(configured.connectors), [(load.worker, load.connectors) for load in ordered])
    tasks = _surplus(len(configured.tasks), [(load.worker, load.tasks) for load in ordered])
    return {
        worker: WorkerLoad.of(connectors.get(worker, ()), tasks.get(worker, ()))
        for worker in sorted(connectors.keys() | tasks.keys())
    }


def _surplus(total: int, allocations: list[tuple[str, list[_T]]]) -> dict[str, list[_T]]:
    workers = len(allocations)
    minimum, extras = divmod(total, workers)
    at_minimum = sum(1 for _, items in allocations if len(items) == minimum)
    at_extra = sum(1 for _, items in allocations if len(items) == minimum + 1)
    if at_extra == extras and at_minimum + at_extra == workers:
        return {}
    result: dict[str, list[_T]] = {}
    extras_given = 0
    for worker, items in allocations:
        if len(items) <= minimum:
            continue
        if extras_given < extras:
            extras_given += 1
            if len(items) == minimum + 1:
                continue
            cap = minimum + 1
        else:
            cap = minimum
        # The front of the list is what the worker ran before this round.
        result[worker] = items[: len(items) - cap]
    return result


def _assign_connectors(loads: list[_Load], connectors: list[str]) -> None:
    loads.sort(key=lambda load: (len(load.connectors), load.worker))
    _level_fill(loads, connectors, lambda load: load.connectors)


def _assign_tasks(loads: list[_Load], tasks: list[ConnectorTaskId]) -> None:
    loads.sort(key=lambda load: (len(load.tasks), load.worker))
    _level_fill(loads, tasks, lambda load: load.tasks)


def _level_fill(loads: list[_Load], items: list[_T], allocation: Callable[[_Load], list[_T]]) -> None:
    """Give items one at a time to each of the least loaded workers, raising the
    level by one each pass (Kafka's assignConnectors/assignTasks; *loads* is sorted)."""
    pending = iter(items)
    remaining = len(items)
    first = loads[0]
    while remaining:
        level = len(allocation(first))
        up_to = next((i for i, load in enumerate(loads) if len(allocation(load)) > level), len(loads))
        for load in loads[:up_to]:
            allocation(load).append(next(pending))
            remaining -= 1
            if not remaining:
                break
