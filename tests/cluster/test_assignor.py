"""The incremental cooperative assignor, round by round, on a simulated group.

:class:`Group` plays the members: it feeds their metadata to :func:`assign`,
checks each round's answers and applies them the way a member does (stop what
is revoked, start what is assigned, keep the rest).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectd.cluster.assignor import AssignorState, assign
from connectd.cluster.protocol import (
    CONFIG_MISMATCH,
    NO_ERROR,
    ConnectAssignment,
    ConnectorTaskId,
    WorkerLoad,
    WorkerMetadata,
)

MAX_DELAY = 300_000
CONFIG_OFFSET = 618


def T(connector: str, *numbers: int) -> tuple[ConnectorTaskId, ...]:
    return tuple(ConnectorTaskId(connector, n) for n in numbers)


def load(connectors=(), tasks=()) -> WorkerLoad:
    return WorkerLoad.of(connectors, tasks)


@dataclass
class Group:
    """A Connect group as the leader sees it; members run what they were told."""

    config: dict[str, int]  # connector -> number of tasks
    max_delay_ms: int = MAX_DELAY
    running: dict[str, WorkerLoad] = field(default_factory=dict)
    offsets: dict[str, int] = field(default_factory=dict)
    state: AssignorState | None = None
    generation: int = 0
    last_completed: int = -1
    now: int = 1_000_000
    config_offset: int = CONFIG_OFFSET
    last: dict[str, ConnectAssignment] = field(default_factory=dict)

    @property
    def leader(self) -> str:
        return next(iter(self.running))  # the oldest member leads

    def join(self, *workers: str, running: WorkerLoad | None = None) -> None:
        for worker in workers:
            assert worker not in self.running
            self.running[worker] = running or WorkerLoad()
            self.offsets[worker] = self.config_offset

    def leave(self, *workers: str) -> None:
        for worker in workers:
            if worker == self.leader:
                self.state = None  # the new leader starts with nothing
            del self.running[worker]
            del self.offsets[worker]

    def configured(self) -> tuple[list[str], list[ConnectorTaskId]]:
        return sorted(self.config), [ConnectorTaskId(c, i) for c, n in sorted(self.config.items()) for i in range(n)]

    def rebalance(self, *, delivered: bool = True) -> dict[str, ConnectAssignment]:
        """One round; ``delivered=False`` is a round whose SyncGroup fails (nobody applies it)."""
        self.generation += 1
        connectors, tasks = self.configured()
        assignments, state = assign(
            leader=self.leader,
            members={
                m: WorkerMetadata(f"http://{m}:8083", self.offsets[m], self.running[m]) for m in self.running
            },
            config_offset=self.config_offset,
            connectors=connectors,
            tasks=tasks,
            generation=self.generation,
            last_completed_generation=self.last_completed,
            state=self.state,
            now_ms=self.now,
            max_delay_ms=self.max_delay_ms,
        )
        assert sorted(assignments) == sorted(self.running)
        self.last = assignments
        self.state = state
        if not delivered:
            return assignments
        self.last_completed = self.generation
        for member, a in assignments.items():
            assert a.leader == self.leader and a.leader_url == f"http://{self.leader}:8083"
            if a.failed:
                continue
            before = self.running[member]
            assert not set(a.connectors) & set(before.connectors), "assigned what it already runs"
            assert not set(a.tasks) & set(before.tasks), "assigned what it already runs"
            assert not set(a.connectors) & set(a.revoked.connectors)
            assert not set(a.tasks) & set(a.revoked.tasks)
            self.running[member] = WorkerLoad.of(
                (set(before.connectors) - set(a.revoked.connectors)) | set(a.connectors),
                (set(before.tasks) - set(a.revoked.tasks)) | set(a.tasks),
            )
            assert self.running[member] == state.running[member], "leader's view differs from the member's"
        return assignments

    def wait(self, ms: int) -> None:
        self.now += ms

    def settle(self, rounds: int = 40) -> int:
        """Rebalance (members rejoining after the delay they are given) until a
        round changes nothing; returns how many rounds it took."""
        for n in range(1, rounds + 1):
            assignments = self.rebalance()
            delay = max(a.delay_ms for a in assignments.values())
            if delay:
                self.wait(delay)
            elif not any(changed(a) for a in assignments.values()):
                return n
        raise AssertionError(f"no stable assignment after {rounds} rounds: {self.running}")

    def counts(self) -> tuple[list[int], list[int]]:
        return (
            [len(self.running[m].connectors) for m in sorted(self.running)],
            [len(self.running[m].tasks) for m in sorted(self.running)],
        )

    def assert_balanced_and_complete(self) -> None:
        connectors, tasks = self.configured()
        owned_connectors = sorted(c for m in self.running.values() for c in m.connectors)
        owned_tasks = sorted(t for m in self.running.values() for t in m.tasks)
        assert owned_connectors == connectors, "every connector on exactly one worker"
        assert owned_tasks == tasks, "every task on exactly one worker"
        connector_counts, task_counts = self.counts()
        assert max(connector_counts) - min(connector_counts) <= 1, connector_counts
        assert max(task_counts) - min(task_counts) <= 1, task_counts


def changed(a: ConnectAssignment) -> bool:
    return bool(a.connectors or a.tasks or len(a.revoked))


def gave(assignments, member, connectors=(), tasks=(), revoked=None, delay_ms=0) -> None:
    """Assert exactly what *member* was told: newly assigned, revoked, delay."""
    a = assignments[member]
    revoked = revoked or WorkerLoad()
    assert (a.error, a.connectors, a.tasks, a.revoked, a.delay_ms) == (
        NO_ERROR,
        tuple(connectors),
        tuple(tasks),
        revoked,
        delay_ms,
    ), a


def nothing(assignments, delay_ms=0) -> None:
    for member in assignments:
        gave(assignments, member, delay_ms=delay_ms)


def three_workers(config=None, **kwargs) -> Group:
    group = Group(config or {"c1": 4, "c2": 4, "c3": 4}, **kwargs)
    group.join("w1", "w2", "w3")
    group.rebalance()
    return group


# w1/w2/w3 after the first round of three_workers(): connectors then tasks round-robin.
W1 = load(["c1"], T("c1", 0, 3) + T("c2", 2) + T("c3", 1))
W2 = load(["c2"], T("c1", 1) + T("c2", 0, 3) + T("c3", 2))
W3 = load(["c3"], T("c1", 2) + T("c2", 1) + T("c3", 0, 3))


def test_first_join_of_one_worker_gives_it_everything():
    group = Group({"c1": 4, "c2": 4})
    group.join("w1")
    assignments = group.rebalance()
    gave(assignments, "w1", ["c1", "c2"], T("c1", 0, 1, 2, 3) + T("c2", 0, 1, 2, 3))
    assert assignments["w1"].config_offset == CONFIG_OFFSET
    assert group.settle() == 1


def test_first_join_of_three_workers_spreads_round_robin():
    group = Group({"c1": 4, "c2": 4, "c3": 4})
    group.join("w1", "w2", "w3")
    assignments = group.rebalance()
    gave(assignments, "w1", W1.connectors, W1.tasks)
    gave(assignments, "w2", W2.connectors, W2.tasks)
    gave(assignments, "w3", W3.connectors, W3.tasks)
    group.assert_balanced_and_complete()
    nothing(group.rebalance())


def test_fourth_worker_joins_only_surplus_tasks_move_in_two_rounds():
    group = three_workers()
    group.join("w4")

    # Round 1: each old worker stops its surplus task; nothing is started yet.
    first = group.rebalance()
    gave(first, "w1", revoked=load(tasks=T("c1", 0)))
    gave(first, "w2", revoked=load(tasks=T("c1", 1)))
    gave(first, "w3", revoked=load(tasks=T("c1", 2)))
    gave(first, "w4")
    assert group.state.revoked_in_previous

    # Round 2: the stopped tasks go to the new worker; nobody else is touched.
    second = group.rebalance()
    gave(second, "w4", tasks=T("c1", 0, 1, 2))
    for worker in ("w1", "w2", "w3"):
        gave(second, worker)
    assert not group.state.revoked_in_previous
    assert group.counts() == ([1, 1, 1, 0], [3, 3, 3, 3])
    group.assert_balanced_and_complete()
    nothing(group.rebalance())


def test_bounced_worker_gets_its_own_work_back_and_nothing_else_moves():
    group = three_workers()
    group.leave("w3")

    gone = group.rebalance()
    nothing(gone, delay_ms=MAX_DELAY)  # w3's work is held for it
    assert group.state.scheduled_rebalance_ms == group.now + MAX_DELAY
    assert group.state.previous_assignment == load(["c1", "c2", "c3"], [*W1.tasks, *W2.tasks, *W3.tasks])

    group.wait(MAX_DELAY // 2)
    nothing(group.rebalance(), delay_ms=MAX_DELAY // 2)  # an incidental round: still held

    group.wait(MAX_DELAY // 4)
    group.join("w3-again")  # a restarted worker rejoins empty, under a new member id
    back = group.rebalance()
    nothing(back, delay_ms=MAX_DELAY // 4)
    assert group.state.candidates == ("w3-again",)

    group.wait(MAX_DELAY // 4)
    expired = group.rebalance()
    gave(expired, "w3-again", W3.connectors, W3.tasks)
    gave(expired, "w1")
    gave(expired, "w2")
    assert group.state.scheduled_rebalance_ms is None and group.state.candidates == ()
    assert group.running == {"w1": W1, "w2": W2, "w3-again": W3}
    nothing(group.rebalance())


def test_worker_leaves_for_good_then_its_work_is_spread_after_the_delay():
    group = three_workers()
    group.leave("w3")
    nothing(group.rebalance(), delay_ms=MAX_DELAY)
    group.wait(MAX_DELAY - 1)
    nothing(group.rebalance(), delay_ms=1)

    group.wait(1)
    expired = group.rebalance()
    gave(expired, "w1", ["c3"], T("c1", 2) + T("c3", 0))
    gave(expired, "w2", [], T("c2", 1) + T("c3", 3))
    assert group.counts() == ([2, 1], [6, 6])
    group.assert_balanced_and_complete()
    nothing(group.rebalance())


def test_lost_work_is_dealt_round_robin_to_several_candidates():
    group = three_workers()
    group.leave("w2", "w3")
    nothing(group.rebalance(), delay_ms=MAX_DELAY)
    group.wait(1000)
    group.join("w5", "w6")
    nothing(group.rebalance(), delay_ms=MAX_DELAY - 1000)
    assert group.state.candidates == ("w5", "w6")

    group.wait(MAX_DELAY - 1000)
    expired = group.rebalance()
    gave(expired, "w5", ["c2"], T("c1", 1) + T("c2", 0, 3) + T("c3", 2))
    gave(expired, "w6", ["c3"], T("c1", 2) + T("c2", 1) + T("c3", 0, 3))
    gave(expired, "w1")
    group.assert_balanced_and_complete()
    nothing(group.rebalance())


def test_candidate_given_too_much_is_told_to_revoke_work_it_never_started():
    group = three_workers()
    group.leave("w2", "w3")
    nothing(group.rebalance(), delay_ms=MAX_DELAY)
    group.join("w4")
    nothing(group.rebalance(), delay_ms=MAX_DELAY)

    group.wait(MAX_DELAY)
    expired = group.rebalance()
    # w4 is dealt all 8 lost tasks, 2 more than its share; as in Kafka, the
    # surplus is revoked at once, although w4 never ran it (stopping it is a no-op)...
    gave(
        expired,
        "w4",
        ["c2", "c3"],
        T("c2", 0, 1, 3) + T("c3", 0, 2, 3),
        revoked=load([], T("c1", 1, 2)),
    )
    gave(expired, "w1")
    # ...and the next round finds it missing and gives it out at once.
    after = group.rebalance()
    gave(after, "w1", [], T("c1", 1, 2))
    gave(after, "w4")
    group.assert_balanced_and_complete()


def test_candidate_that_leaves_again_gets_nothing():
    group = three_workers()
    group.leave("w3")
    nothing(group.rebalance(), delay_ms=MAX_DELAY)
    group.wait(1000)
    group.join("w3-again")
    nothing(group.rebalance(), delay_ms=MAX_DELAY - 1000)
    group.wait(1000)
    group.leave("w3-again")
    nothing(group.rebalance(), delay_ms=MAX_DELAY - 2000)

    group.wait(MAX_DELAY - 2000)
    expired = group.rebalance()  # no candidate left: the lost work is spread like new work
    gave(expired, "w1", ["c3"], T("c1", 2) + T("c3", 0))
    gave(expired, "w2", [], T("c2", 1) + T("c3", 3))
    group.assert_balanced_and_complete()


def test_leader_leaves_new_leader_works_from_reported_assignments():
    group = three_workers()
    group.leave("w1")
    assert group.state is None and group.leader == "w2"

    # No previous assignment: w1's work is simply unassigned, so it is given at once.
    assignments = group.rebalance()
    gave(assignments, "w2", ["c1"], T("c1", 0) + T("c2", 2))
    gave(assignments, "w3", [], T("c1", 3) + T("c3", 1))
    group.assert_balanced_and_complete()
    nothing(group.rebalance())


def test_new_worker_joining_during_the_delay_is_a_candidate_for_the_lost_work():
    group = three_workers()
    group.leave("w2")
    nothing(group.rebalance(), delay_ms=MAX_DELAY)

    group.wait(1000)
    group.join("w4")
    # Still held: no balancing revocations either, though w4 runs nothing.
    nothing(group.rebalance(), delay_ms=MAX_DELAY - 1000)
    assert group.state.candidates == ("w4",)

    group.config["c4"] = 2  # new work is not held
    created = group.rebalance()
    gave(created, "w4", ["c4"], T("c4", 0, 1), delay_ms=MAX_DELAY - 1000)
    gave(created, "w1", delay_ms=MAX_DELAY - 1000)

    group.wait(MAX_DELAY)
    expired = group.rebalance()
    # The candidate takes all of w2's work; with 14 tasks on 3 workers it now
    # runs one too many, so the same round revokes its surplus (the front of
    # its list: what it ran before)...
    gave(expired, "w4", W2.connectors, W2.tasks, revoked=load([], T("c4", 0)))
    gave(expired, "w1")
    gave(expired, "w3")
    # ...which the next round gives to the least loaded.
    after = group.rebalance()
    gave(after, "w1", [], T("c4", 0))
    gave(after, "w3")
    gave(after, "w4")
    assert group.counts() == ([1, 1, 2], [5, 4, 5])
    group.assert_balanced_and_complete()
    nothing(group.rebalance())


def test_delay_zero_reassigns_lost_work_at_once():
    group = three_workers(max_delay_ms=0)
    group.leave("w3")
    assignments = group.rebalance()
    gave(assignments, "w1", ["c3"], T("c1", 2) + T("c3", 0))
    gave(assignments, "w2", [], T("c2", 1) + T("c3", 3))
    group.assert_balanced_and_complete()


def test_delay_zero_revokes_in_successive_rounds():
    group = Group({"c1": 4, "c2": 4, "c3": 4}, max_delay_ms=0)
    group.join("w1")
    group.rebalance()
    group.join("w2")
    group.rebalance()
    group.join("w3")
    assignments = group.rebalance()  # revoked last round, and revokes again: no backoff at 0
    gave(assignments, "w1", revoked=load(["c2"], T("c2", 2, 3)))
    gave(assignments, "w2", ["c1"], T("c1", 0, 2) + T("c2", 0))
    gave(assignments, "w3", [], T("c1", 1, 3) + T("c2", 1))
    group.settle()
    group.assert_balanced_and_complete()


def test_successive_revoking_rounds_back_off():
    group = Group({"c1": 4, "c2": 4, "c3": 4})
    group.join("w1")
    group.rebalance()

    group.join("w2")
    first = group.rebalance()
    gave(first, "w1", revoked=load(["c1"], T("c1", 0, 1, 2, 3) + T("c2", 0, 1)))
    gave(first, "w2")

    # w3 joins before the follow-up round: balance would revoke again, so this
    # round only hands out what was revoked and asks everyone back in 40 ms.
    group.join("w3")
    second = group.rebalance()
    gave(second, "w1", delay_ms=40)
    gave(second, "w2", ["c1"], T("c1", 0, 2) + T("c2", 0), delay_ms=40)
    gave(second, "w3", [], T("c1", 1, 3) + T("c2", 1), delay_ms=40)
    assert group.state.successive_revoking_rebalances == 1
    assert group.counts() == ([2, 1, 0], [6, 3, 3])

    group.wait(40)
    third = group.rebalance()  # the backoff is over: revoke
    gave(third, "w1", revoked=load(["c2"], T("c2", 2, 3)))
    gave(third, "w2")
    gave(third, "w3")

    fourth = group.rebalance()
    gave(fourth, "w2", [], T("c2", 2))
    gave(fourth, "w3", ["c2"], T("c2", 3))
    gave(fourth, "w1")
    assert group.state.successive_revoking_rebalances == 0
    group.assert_balanced_and_complete()
    nothing(group.rebalance())


def test_backoff_grows_with_each_successive_revoking_round():
    group = Group({"c1": 12})
    group.join("w1")
    group.rebalance()
    rounds = []
    for new in ("w2", "w3", "w4", "w5", "w6"):
        group.join(new)
        assignments = group.rebalance()
        revoked = sum(len(a.revoked) for a in assignments.values())
        rounds.append((max(a.delay_ms for a in assignments.values()), revoked))
    assert rounds == [
        (0, 6),  # w2: revokes half of w1's tasks
        (40, 0),  # w3: would revoke again: backs off 40 ms instead
        (40, 0),  # w4, inside the backoff: the delay runs on, nothing revoked...
        (0, 4),  # w5: ...and that round ended the revoking streak (as in Kafka), so this one revokes
        (1600, 0),  # w6: second successive revoking round: 40 * 40 ms
    ]
    assert group.state.successive_revoking_rebalances == 2
    group.settle()
    group.assert_balanced_and_complete()


def test_duplicated_work_is_revoked_from_every_member_and_assigned_once():
    group = Group({"c1": 4, "c2": 4})
    group.join("w1")
    group.rebalance()
    group.join("w2", running=load(["c1", "c2"], T("c1", 0, 1, 2, 3)))

    first = group.rebalance()
    both = load(["c1", "c2"], T("c1", 0, 1, 2, 3))
    gave(first, "w1", revoked=both)
    gave(first, "w2", revoked=both)

    second = group.rebalance()
    gave(second, "w1", ["c1"])
    gave(second, "w2", ["c2"], T("c1", 0, 1, 2, 3))
    group.assert_balanced_and_complete()
    nothing(group.rebalance())


def test_member_ahead_of_the_leader_config_gets_config_mismatch():
    group = three_workers()
    state = group.state
    group.offsets["w2"] = CONFIG_OFFSET + 5
    assignments = group.rebalance()
    for member, a in assignments.items():
        assert a == ConnectAssignment(CONFIG_MISMATCH, "w1", "http://w1:8083", CONFIG_OFFSET + 5), member
    assert group.state is state

    group.config_offset = CONFIG_OFFSET + 5  # the leader read the config topic further
    nothing(group.rebalance())
    assert all(a.config_offset == CONFIG_OFFSET + 5 for a in group.last.values())


def test_deleted_connector_is_revoked_from_whoever_runs_it():
    group = Group({"c1": 4, "c2": 4, "c3": 4})
    group.join("w1", "w2")
    group.rebalance()
    del group.config["c3"]
    assignments = group.rebalance()
    gave(assignments, "w1", revoked=load(["c3"], T("c3", 0, 2)))
    gave(assignments, "w2", revoked=load([], T("c3", 1, 3)))
    group.assert_balanced_and_complete()
    nothing(group.rebalance())


def test_task_count_change_assigns_new_tasks_and_revokes_removed_ones():
    group = Group({"c1": 4, "c2": 4})
    group.join("w1", "w2")
    group.rebalance()
    group.config.update(c1=2, c2=6)
    assignments = group.rebalance()
    gave(assignments, "w1", [], T("c2", 4), revoked=load([], T("c1", 2)))
    gave(assignments, "w2", [], T("c2", 5), revoked=load([], T("c1", 3)))
    group.assert_balanced_and_complete()


def test_stopped_connector_keeps_its_connector_and_loses_its_tasks():
    group = Group({"c1": 2, "c2": 2})
    group.join("w1", "w2")
    group.rebalance()
    group.config["c2"] = 0  # STOPPED: configured, no tasks
    assignments = group.rebalance()
    gave(assignments, "w1", revoked=load([], T("c2", 0)))
    gave(assignments, "w2", revoked=load([], T("c2", 1)))
    assert group.running == {"w1": load(["c1"], T("c1", 0)), "w2": load(["c2"], T("c1", 1))}


def test_assignment_that_never_reached_the_members_is_given_again_at_once():
    group = Group({"c1": 4, "c2": 4})
    group.join("w1", "w2")
    group.rebalance(delivered=False)
    group.last_completed = group.generation  # the leader's sync completed, the others' did not
    # Everything the leader assigned is missing, but nobody left: no delay.
    assignments = group.rebalance()
    gave(assignments, "w1", ["c1"], T("c1", 0, 2) + T("c2", 0, 2))
    gave(assignments, "w2", ["c2"], T("c1", 1, 3) + T("c2", 1, 3))


def test_previous_assignment_is_dropped_when_the_last_generation_did_not_complete():
    group = three_workers()
    group.leave("w3")
    group.last_completed -= 1  # the leader missed the last generation's sync
    assignments = group.rebalance()
    # Without a trusted previous assignment, w3's work is not "lost" but unassigned.
    gave(assignments, "w1", ["c3"], T("c1", 2) + T("c3", 0))
    gave(assignments, "w2", [], T("c2", 1) + T("c3", 3))


def test_revocation_that_did_not_take_effect_is_made_again():
    group = three_workers()
    group.join("w4")
    group.rebalance(delivered=False)  # revoked c1-0/1/2, but the members never heard
    group.last_completed = group.generation  # the sync completed for the leader only
    assignments = group.rebalance()
    # Members still report the revoked tasks: the leader trusts what they report.
    assert all(not a.tasks and not a.connectors for a in assignments.values())
    group.settle()
    group.assert_balanced_and_complete()


def test_output_does_not_depend_on_input_order():
    def run(reverse):
        order = sorted(["w1", "w2", "w3", "w4"], reverse=reverse)
        members = {
            "w1": WorkerMetadata("http://w1:8083", 3, W1),
            "w2": WorkerMetadata("http://w2:8083", 3, W2),
            "w3": WorkerMetadata("http://w3:8083", 3),
            "w4": WorkerMetadata("http://w4:8083", 3),
        }
        return assign(
            leader="w1",
            members={m: members[m] for m in order},
            config_offset=3,
            connectors=sorted(["c3", "c1", "c2"], reverse=reverse),
            tasks=sorted([*W1.tasks, *W2.tasks, *W3.tasks], reverse=reverse),
            generation=5,
            last_completed_generation=4,
            state=None,
            now_ms=0,
            max_delay_ms=MAX_DELAY,
        )

    assignments, state = run(reverse=False)
    assert (assignments, state) == run(reverse=True)
    assert list(assignments) == ["w1", "w2", "w3", "w4"]
    assert len(state.previous_revocation)  # w3 and w4 are empty: balancing revoked something


def test_leader_not_a_member_is_an_error():
    with pytest.raises(ValueError, match="leader"):
        assign(
            leader="w9",
            members={"w1": WorkerMetadata("http://w1:8083", 0)},
            config_offset=0,
            connectors=[],
            tasks=[],
            generation=1,
            last_completed_generation=-1,
            state=None,
            now_ms=0,
            max_delay_ms=MAX_DELAY,
        )


# ---------------------------------------------------------------------------
# Property: whatever happens, once members keep rejoining the group settles
# into an assignment that runs everything once, balanced within one.

events = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.integers(0, 7)),
        st.tuples(st.just("leave"), st.integers(0, 7)),
        st.tuples(st.just("configure"), st.sampled_from(["a", "b", "c", "d"]), st.integers(-1, 5)),
        st.tuples(st.just("wait"), st.integers(0, MAX_DELAY)),
        st.tuples(st.just("rebalance")),
        st.tuples(st.just("failed_sync"), st.booleans()),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events, st.sampled_from([0, 1, 1000, MAX_DELAY]), st.integers(1, 4))
def test_any_history_settles_balanced_and_complete(history, max_delay_ms, initial_workers):
    group = Group({"a": 2, "b": 3}, max_delay_ms=max_delay_ms)
    group.join(*(f"w{i}" for i in range(initial_workers)))
    group.rebalance()
    for event in history:
        match event:
            case ("join", n) if f"w{n}" not in group.running:
                group.join(f"w{n}")
                group.rebalance()
            case ("leave", n) if f"w{n}" in group.running and len(group.running) > 1:
                group.leave(f"w{n}")
                group.rebalance()
            case ("configure", connector, tasks):
                if tasks < 0:
                    group.config.pop(connector, None)
                else:
                    group.config[connector] = tasks
                group.rebalance()
            case ("wait", ms):
                group.wait(ms)
            case ("rebalance",):
                group.rebalance()
            case ("failed_sync", leader_synced):
                group.rebalance(delivered=False)
                if leader_synced:
                    group.last_completed = group.generation
    group.settle()
    group.assert_balanced_and_complete()


def _round(group: Group, warming: set[str]) -> dict[str, ConnectAssignment]:
    """One round in which the members named in *warming* say they are still warming up."""
    group.generation += 1
    connectors, tasks = group.configured()
    assignments, group.state = assign(
        leader=group.leader, members={m: WorkerMetadata(f"http://{m}:8083", group.offsets[m], group.running[m],
                                                        warming=m in warming) for m in group.running},
        config_offset=group.config_offset, connectors=connectors, tasks=tasks, generation=group.generation,
        last_completed_generation=group.last_completed, state=group.state, now_ms=group.now,
        max_delay_ms=group.max_delay_ms)
    group.last_completed = group.generation
    for member, a in assignments.items():
        before = group.running[member]
        group.running[member] = WorkerLoad.of((set(before.connectors) - set(a.revoked.connectors)) | set(a.connectors),
                                              (set(before.tasks) - set(a.revoked.tasks)) | set(a.tasks))
    return assignments


def test_a_warming_member_is_given_nothing_and_nothing_is_revoked_for_it_until_it_is_warm():
    group = three_workers()
    group.join("w4")
    nothing(_round(group, {"w4"}))  # no task stopped elsewhere to wait for a cold Spark
    assert group.counts() == ([1, 1, 1, 0], [4, 4, 4, 0])  # the three that take work keep theirs
    group.settle()  # w4 warm: it rejoins without the flag and takes its share, two rounds as any joiner
    assert group.counts()[1] == [3, 3, 3, 3]


def test_a_cluster_of_warming_members_assigns_nothing_until_one_is_warm():
    group = Group({"c1": 2})
    group.join("w1", "w2")
    nothing(_round(group, {"w1", "w2"}))
    gave(_round(group, {"w2"}), "w1", connectors=["c1"], tasks=T("c1", 0, 1))
    group.settle()
    group.assert_balanced_and_complete()
