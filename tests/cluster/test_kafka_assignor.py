"""Kafka's own assignor cases, run against connectd's assignor.

Each test is a case of Kafka's ``IncrementalCooperativeAssignorTest`` (or the
assignment cases of ``WorkerCoordinatorIncrementalTest``), same name in
snake case, same scenario, asserting what Kafka's test asserts: the sorted
connector and task counts per worker, whether anything was revoked, the
delay. :class:`KafkaHarness` plays Kafka's test fixture: ``perform()`` is
``performStandardRebalance`` (the last completed generation is always the
one before, as in Kafka's fixture), ``perform(failed=True)`` a round whose
assignment nobody applies, ``perform(mismatched=True)`` one whose leader did
not complete the previous SyncGroup.

Kafka's ``handleLostAssignments`` cases call that method on its own; here
they are whole rounds with the same members and loads, so what they check
(candidates, scheduled time, delay, where lost work goes) is read from the
returned :class:`AssignorState` and the members' work.

Where connectd differs on purpose the test says so and docs/cluster.md has
the line. The wire-format tests (``ConnectProtocolCompatibilityTest``) are in
test_protocol_codec.py. The eager protocol's cases (``WorkerCoordinatorTest``, whose
``EagerAssignor`` deals connectors, then tasks, round-robin over the sorted members) are
at the end, against :func:`assign_eager`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from connectd.cluster.assignor import AssignorState, assign, assign_eager
from connectd.cluster.protocol import (
    COMPATIBLE,
    SESSIONED,
    VERSIONS,
    ConnectAssignment,
    ConnectorTaskId,
    WorkerLoad,
    WorkerMetadata,
    decode_assignment,
    encode_assignment,
)

CONFIG_OFFSET = 618
DEFAULT_DELAY = 300_000  # DistributedConfig.SCHEDULED_REBALANCE_MAX_DELAY_MS_DEFAULT


def connectors_named(start: int, end: int) -> list[str]:
    return [f"connector{i}" for i in range(start, end)]


def tasks_of(connector: str, start: int, end: int) -> list[ConnectorTaskId]:
    return [ConnectorTaskId(connector, i) for i in range(start, end)]


def worker_load(connector_start: int, connector_num: int, task_start: int, task_num: int) -> WorkerLoad:
    """Kafka's workerLoad(): connectorN… and task-N… (tasks of a connector named "task")."""
    return WorkerLoad.of(
        connectors_named(connector_start, connector_start + connector_num),
        tasks_of("task", task_start, task_start + task_num),
    )


@dataclass
class KafkaHarness:
    """Kafka's IncrementalCooperativeAssignorTest fixture: connector1 and connector2
    with 4 tasks each, one empty worker (worker1), generation 1000."""

    rebalance_delay: int = DEFAULT_DELAY
    connectors: dict[str, int] = field(default_factory=lambda: {"connector1": 4, "connector2": 4})
    members: dict[str, WorkerLoad] = field(default_factory=lambda: {"worker1": WorkerLoad()})
    # Work configured without being a connector's tasks (Kafka's "task-N" loads).
    extra: WorkerLoad = field(default_factory=WorkerLoad)
    generation: int = 1000
    now: int = 1_000_000
    state: AssignorState | None = None
    returned: dict[str, ConnectAssignment] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.init_assignor()

    def init_assignor(self) -> None:
        """A new assignor (a new leader): no memory, previous generation = the current one."""
        self.state = AssignorState(previous_generation=self.generation)

    @property
    def delay(self) -> int:
        assert self.state is not None
        return self.state.delay_ms

    def sleep(self, ms: int) -> None:
        self.now += ms

    def add_new_connector(self, name: str, tasks: int) -> None:
        assert name not in self.connectors
        self.connectors[name] = tasks

    def remove_connector(self, name: str) -> None:
        del self.connectors[name]

    def add_new_empty_workers(self, *workers: str) -> None:
        for worker in workers:
            self.add_new_worker(worker)

    def add_new_worker(self, worker: str, connectors=(), tasks=()) -> None:
        assert worker not in self.members, f"worker {worker} already exists"
        self.members[worker] = WorkerLoad.of(connectors, tasks)

    def remove_workers(self, *workers: str) -> None:
        for worker in workers:
            del self.members[worker]

    def perform(self, *, failed: bool = False, mismatched: bool = False) -> dict[str, ConnectAssignment]:
        self.generation += 1
        last_completed = self.generation - 2 if mismatched else self.generation - 1
        configured_connectors = [*self.connectors, *self.extra.connectors]
        configured_tasks = [
            *(ConnectorTaskId(c, i) for c, n in self.connectors.items() for i in range(n)),
            *self.extra.tasks,
        ]
        leader = min(self.members)
        self.returned, self.state = assign(
            leader=leader,
            members={m: WorkerMetadata(f"http://{m}:8083", CONFIG_OFFSET, load) for m, load in self.members.items()},
            config_offset=CONFIG_OFFSET,
            connectors=configured_connectors,
            tasks=configured_tasks,
            generation=self.generation,
            last_completed_generation=last_completed,
            state=self.state,
            now_ms=self.now,
            max_delay_ms=self.rebalance_delay,
        )
        self.assert_no_redundant_assignments()
        if not failed:
            self.apply()
        return self.returned

    def apply(self) -> None:
        for worker, a in self.returned.items():
            before = self.members[worker]
            self.members[worker] = WorkerLoad.of(
                (set(before.connectors) - set(a.revoked.connectors)) | set(a.connectors),
                (set(before.tasks) - set(a.revoked.tasks)) | set(a.tasks),
            )
            assert self.state is not None
            assert self.members[worker] == self.state.running[worker], "leader's view differs from the member's"

    # Kafka's assertions -------------------------------------------------

    def assert_delay(self, expected: int) -> None:
        assert self.delay == expected, "wrong rebalance delay"
        assert {a.delay_ms for a in self.returned.values()} == {expected}

    def assert_workers(self, *workers: str) -> None:
        assert set(self.returned) == set(workers)

    def assert_connector_allocations(self, *counts: int) -> None:
        assert sorted(len(m.connectors) for m in self.members.values()) == sorted(counts)

    def assert_task_allocations(self, *counts: int) -> None:
        assert sorted(len(m.tasks) for m in self.members.values()) == sorted(counts)

    def assert_no_revocations(self) -> None:
        assert all(not len(a.revoked) for a in self.returned.values()), self.returned

    def assert_empty_assignment(self) -> None:
        for a in self.returned.values():
            assert (a.connectors, a.tasks, a.revoked) == ((), (), WorkerLoad()), a

    def assert_no_redundant_assignments(self) -> None:
        new_connectors = [c for a in self.returned.values() for c in a.connectors]
        new_tasks = [t for a in self.returned.values() for t in a.tasks]
        assert len(new_connectors) == len(set(new_connectors))
        assert len(new_tasks) == len(set(new_tasks))
        assert not set(new_connectors) & {c for m in self.members.values() for c in m.connectors}
        assert not set(new_tasks) & {t for m in self.members.values() for t in m.tasks}

    def assert_balanced_and_complete_allocation(self) -> None:
        connector_counts = sorted(len(m.connectors) for m in self.members.values())
        task_counts = sorted(len(m.tasks) for m in self.members.values())
        assert connector_counts[-1] - connector_counts[0] <= 1, connector_counts
        assert task_counts[-1] - task_counts[0] <= 1, task_counts
        assigned_connectors = sorted(c for m in self.members.values() for c in m.connectors)
        assert assigned_connectors == sorted([*self.connectors, *self.extra.connectors])
        assigned_tasks = sorted(t for m in self.members.values() for t in m.tasks)
        expected = [ConnectorTaskId(c, i) for c, n in self.connectors.items() for i in range(n)]
        assert assigned_tasks == sorted([*expected, *self.extra.tasks])


@pytest.fixture
def kafka() -> KafkaHarness:
    return KafkaHarness()


def test_task_assignment_when_worker_joins(kafka):
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_workers("worker1")
    kafka.assert_connector_allocations(2)
    kafka.assert_task_allocations(8)
    kafka.assert_balanced_and_complete_allocation()

    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_workers("worker1", "worker2")
    kafka.assert_connector_allocations(0, 1)
    kafka.assert_task_allocations(0, 4)

    kafka.perform()
    kafka.assert_no_revocations()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)
    kafka.assert_balanced_and_complete_allocation()

    kafka.sleep(kafka.delay)
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_empty_assignment()


def test_assignments_when_workers_join_after_revocations(kafka):
    kafka.add_new_connector("connector3", 4)
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(3)
    kafka.assert_task_allocations(12)
    kafka.assert_balanced_and_complete_allocation()

    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_connector_allocations(0, 2)
    kafka.assert_task_allocations(0, 6)

    # A successive revoking round: no revocations, a backoff instead.
    kafka.add_new_empty_workers("worker3")
    kafka.perform()
    assert kafka.delay > 0
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(0, 1, 2)
    kafka.assert_task_allocations(3, 3, 6)

    kafka.sleep(kafka.delay)
    kafka.add_new_empty_workers("worker4")
    kafka.perform()
    kafka.assert_connector_allocations(0, 0, 1, 1)
    kafka.assert_task_allocations(0, 3, 3, 3)

    kafka.add_new_empty_workers("worker5")
    kafka.perform()
    assert kafka.delay > 40  # the backoff grew past its first step
    kafka.assert_connector_allocations(0, 0, 1, 1, 1)
    kafka.assert_task_allocations(1, 2, 3, 3, 3)

    kafka.sleep(kafka.delay)
    kafka.add_new_empty_workers("worker6")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 0, 0, 1, 1, 1)
    kafka.assert_task_allocations(0, 1, 2, 2, 2, 2)

    kafka.perform()
    kafka.assert_connector_allocations(0, 0, 0, 1, 1, 1)
    kafka.assert_task_allocations(2, 2, 2, 2, 2, 2)
    kafka.assert_balanced_and_complete_allocation()


def test_immediate_revocations_when_max_delay_is_0():
    kafka = KafkaHarness(rebalance_delay=0)
    kafka.add_new_connector("connector3", 4)
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(3)
    kafka.assert_task_allocations(12)

    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_connector_allocations(0, 2)
    kafka.assert_task_allocations(0, 6)

    # Successive revoking round, but with no delay allowed it revokes anyway.
    kafka.add_new_empty_workers("worker3")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(3, 3, 4)

    kafka.perform()
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(1, 1, 1)
    kafka.assert_task_allocations(4, 4, 4)
    kafka.assert_balanced_and_complete_allocation()


def test_successive_revocations_when_max_delay_is_equal_to_exp_back_off_initial_interval():
    kafka = KafkaHarness(rebalance_delay=1)
    kafka.add_new_connector("connector3", 4)
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(3)
    kafka.assert_task_allocations(12)

    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_connector_allocations(0, 2)
    kafka.assert_task_allocations(0, 6)

    kafka.add_new_empty_workers("worker3")
    kafka.perform()
    kafka.assert_delay(1)
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(0, 1, 2)
    kafka.assert_task_allocations(3, 3, 6)


def test_worker_joining_during_delayed_rebalance(kafka):
    kafka.add_new_connector("connector3", 4)
    kafka.perform()
    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_connector_allocations(0, 2)
    kafka.assert_task_allocations(0, 6)

    kafka.add_new_empty_workers("worker3")
    kafka.perform()
    assert kafka.delay > 0
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(0, 1, 2)
    kafka.assert_task_allocations(3, 3, 6)

    # A worker joining while the backoff runs: still no revocations.
    kafka.sleep(kafka.delay // 2)
    kafka.add_new_empty_workers("worker4")
    kafka.perform()
    assert kafka.delay > 0
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(0, 0, 1, 2)
    kafka.assert_task_allocations(0, 3, 3, 6)

    kafka.sleep(kafka.delay)
    kafka.add_new_empty_workers("worker5")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 0, 0, 1, 1)
    kafka.assert_task_allocations(0, 0, 2, 3, 3)

    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(0, 0, 1, 1, 1)
    kafka.assert_task_allocations(2, 2, 2, 3, 3)
    kafka.assert_balanced_and_complete_allocation()


def test_task_assignment_when_worker_leaves_permanently(kafka):
    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)

    kafka.remove_workers("worker2")
    kafka.perform()
    kafka.assert_delay(kafka.rebalance_delay)
    kafka.assert_workers("worker1")
    kafka.assert_empty_assignment()

    kafka.sleep(kafka.rebalance_delay // 2)
    kafka.perform()
    kafka.assert_delay(kafka.rebalance_delay // 2)
    kafka.assert_empty_assignment()

    kafka.sleep(kafka.rebalance_delay // 2 + 1)
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(2)
    kafka.assert_task_allocations(8)
    kafka.assert_balanced_and_complete_allocation()


def test_task_assignment_when_worker_bounces(kafka):
    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)
    worker2_work = kafka.members["worker2"]

    kafka.remove_workers("worker2")
    kafka.perform()
    kafka.assert_delay(kafka.rebalance_delay)
    kafka.assert_empty_assignment()

    kafka.sleep(kafka.rebalance_delay // 2)
    kafka.perform()
    kafka.assert_delay(kafka.rebalance_delay // 2)
    kafka.assert_empty_assignment()

    kafka.sleep(kafka.rebalance_delay // 4)
    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_delay(kafka.rebalance_delay // 4)
    kafka.assert_workers("worker1", "worker2")
    kafka.assert_empty_assignment()

    kafka.sleep(kafka.rebalance_delay // 4)
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)
    kafka.assert_balanced_and_complete_allocation()
    assert kafka.members["worker2"] == worker2_work  # its own work back, as Kafka's candidate logic gives


def test_task_assignment_when_leader_leaves_permanently(kafka):
    kafka.add_new_empty_workers("worker2", "worker3")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(2, 3, 3)

    kafka.remove_workers("worker1")
    kafka.init_assignor()  # the new leader starts from a clean slate
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_workers("worker2", "worker3")
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)
    kafka.assert_balanced_and_complete_allocation()

    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_empty_assignment()


def test_task_assignment_when_leader_bounces(kafka):
    kafka.add_new_empty_workers("worker2", "worker3")
    kafka.perform()
    kafka.remove_workers("worker1")
    kafka.init_assignor()
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)

    # The old leader comes back as a new worker: balanced at once, revocations first.
    kafka.add_new_empty_workers("worker1")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(0, 3, 3)

    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(2, 3, 3)
    kafka.assert_balanced_and_complete_allocation()


def test_task_assignment_when_first_assignment_attempt_fails(kafka):
    kafka.add_new_empty_workers("worker2")
    kafka.perform(failed=True)
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 0)
    kafka.assert_task_allocations(0, 0)

    # Same members report nothing again: the lost work is treated as new, no delay.
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)
    kafka.assert_balanced_and_complete_allocation()


def test_task_assignment_when_subsequent_assignment_attempt_fails(kafka):
    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)

    kafka.add_new_empty_workers("worker3")
    kafka.perform(failed=True)
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 1, 1)  # nobody applied the revocations
    kafka.assert_task_allocations(0, 4, 4)

    # The revocation did not take effect, and this is a successive revoking round: backoff.
    kafka.perform()
    assert kafka.delay > 0
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(0, 4, 4)

    kafka.sleep(kafka.delay)
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(0, 3, 3)

    kafka.perform()
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(2, 3, 3)
    kafka.assert_balanced_and_complete_allocation()


def test_task_assignment_when_subsequent_assignment_attempt_fails_outside_the_assignor(kafka):
    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.add_new_empty_workers("worker3")
    kafka.perform(failed=True)
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(0, 4, 4)

    # The leader's SyncGroup failed too: its previous assignment is not trusted.
    kafka.perform(mismatched=True)
    assert kafka.delay > 0
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(0, 4, 4)

    kafka.sleep(kafka.delay)
    kafka.perform()
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(0, 3, 3)

    kafka.perform()
    kafka.assert_connector_allocations(0, 1, 1)
    kafka.assert_task_allocations(2, 3, 3)
    kafka.assert_balanced_and_complete_allocation()


def test_task_assignment_when_connectors_are_deleted(kafka):
    kafka.add_new_connector("connector3", 4)
    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(1, 2)
    kafka.assert_task_allocations(6, 6)

    kafka.remove_connector("connector3")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)
    kafka.assert_balanced_and_complete_allocation()


def _balanced_three(kafka: KafkaHarness) -> None:
    """worker0..2 running connector0..5 and task-0..5, two of each: Kafka's
    workerLoad(worker_i, 2i, 2, 2i, 2) start."""
    kafka.members = {f"worker{i}": worker_load(2 * i, 2, 2 * i, 2) for i in range(3)}
    kafka.extra = WorkerLoad.of(connectors_named(0, 6), tasks_of("task", 0, 6))
    kafka.connectors = {}
    kafka.perform()
    kafka.assert_empty_assignment()


def test_assign_connectors_when_balanced(kafka):
    _balanced_three(kafka)
    kafka.extra = WorkerLoad.of(connectors_named(0, 11), kafka.extra.tasks)
    returned = kafka.perform()
    # Kafka: connector6, 9 to worker0; 7, 10 to worker1; 8 to worker2 (level filling in
    # the order given). connectd fills in name order ("connector10" before "connector6"),
    # so which connector lands where differs; the counts, and that the ties go to the
    # first workers by id, are the same.
    assert [len(returned[w].connectors) for w in ("worker0", "worker1", "worker2")] == [2, 2, 1]
    assert {c for a in returned.values() for c in a.connectors} == set(connectors_named(6, 11))
    kafka.assert_no_revocations()


def test_assign_tasks_when_balanced(kafka):
    _balanced_three(kafka)
    kafka.extra = WorkerLoad.of(connectors_named(0, 11), tasks_of("task", 0, 11))
    returned = kafka.perform()
    # Tasks sort by (connector, number), so here the order is Kafka's and so are the sets.
    assert [set(returned[w].tasks) for w in ("worker0", "worker1", "worker2")] == [
        set(tasks_of("task", 6, 7) + tasks_of("task", 9, 10)),
        set(tasks_of("task", 7, 8) + tasks_of("task", 10, 11)),
        set(tasks_of("task", 8, 9)),
    ]
    assert [len(returned[w].connectors) for w in ("worker0", "worker1", "worker2")] == [2, 2, 1]
    kafka.assert_no_revocations()


def test_assign_connectors_when_imbalanced(kafka):
    kafka.members = {
        "worker0": worker_load(0, 2, 0, 2),
        "worker1": worker_load(2, 3, 2, 3),
        "worker2": worker_load(5, 4, 5, 4),
        "worker3": WorkerLoad(),
    }
    # Kafka assigns connector9..23 / task-9..23 to this imbalanced start directly
    # (assignConnectors/assignTasks, no revocation step): 6 each. In a whole round the
    # same start is first taken as a new leader's view, so everything is "created"
    # or running; the level filling gives the same 6 each without any revocation.
    kafka.extra = WorkerLoad.of(connectors_named(0, 24), tasks_of("task", 0, 24))
    kafka.connectors = {}
    kafka.init_assignor()
    kafka.perform()
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(6, 6, 6, 6)
    kafka.assert_task_allocations(6, 6, 6, 6)


# Kafka's handleLostAssignments cases, as whole rounds ------------------------------


def _lost_setup(rebalance_delay: int = DEFAULT_DELAY) -> tuple[KafkaHarness, WorkerLoad]:
    """worker0..2 each run 2 connectors and 4 tasks; a first round records them."""
    kafka = KafkaHarness(rebalance_delay=rebalance_delay)
    kafka.members = {
        "worker0": worker_load(0, 2, 0, 4),
        "worker1": worker_load(2, 2, 4, 4),
        "worker2": worker_load(4, 2, 8, 4),
    }
    kafka.connectors = {}
    kafka.extra = WorkerLoad.of(connectors_named(0, 6), tasks_of("task", 0, 12))
    kafka.perform()
    kafka.assert_empty_assignment()
    assert kafka.state.candidates == ()
    assert kafka.state.scheduled_rebalance_ms is None
    kafka.assert_delay(0)
    return kafka, kafka.members["worker1"]


def test_lost_assignment_handling_when_worker_bounces():
    kafka, lost = _lost_setup()
    delay = kafka.rebalance_delay

    kafka.remove_workers("worker1")
    kafka.perform()
    assert kafka.state.candidates == ()
    assert kafka.state.scheduled_rebalance_ms == kafka.now + delay
    kafka.assert_delay(delay)

    kafka.sleep(delay // 2)
    kafka.add_new_empty_workers("worker1")  # probably the returning worker
    kafka.perform()
    assert kafka.state.candidates == ("worker1",)
    assert kafka.state.scheduled_rebalance_ms == kafka.now + delay // 2
    kafka.assert_delay(delay // 2)

    kafka.sleep(delay // 2)
    kafka.perform()  # still empty: the lost work goes to it
    assert kafka.members["worker1"] == lost
    assert kafka.state.candidates == ()
    assert kafka.state.scheduled_rebalance_ms is None
    kafka.assert_delay(0)


def test_lost_assignment_handling_when_worker_leaves_permanently():
    kafka, lost = _lost_setup()
    delay = kafka.rebalance_delay

    kafka.remove_workers("worker1")
    kafka.perform()
    assert kafka.state.candidates == ()
    assert kafka.state.scheduled_rebalance_ms == kafka.now + delay
    kafka.assert_delay(delay)

    kafka.sleep(delay // 2)
    kafka.perform()
    assert kafka.state.candidates == ()
    assert kafka.state.scheduled_rebalance_ms == kafka.now + delay // 2
    kafka.assert_delay(delay // 2)

    kafka.sleep(delay // 2)
    kafka.perform()
    # No candidate: the lost work is assigned like new work, to the remaining workers.
    assert set(lost.connectors) <= {c for m in kafka.members.values() for c in m.connectors}
    assert set(lost.tasks) <= {t for m in kafka.members.values() for t in m.tasks}
    assert kafka.state.candidates == ()
    assert kafka.state.scheduled_rebalance_ms is None
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(3, 3)
    kafka.assert_task_allocations(6, 6)


def test_lost_assignment_handling_with_more_than_one_candidates():
    kafka, lost = _lost_setup()
    delay = kafka.rebalance_delay

    kafka.remove_workers("worker1")
    kafka.add_new_empty_workers("worker3")  # a new worker, not the one that left
    kafka.perform()
    assert kafka.state.candidates == ("worker3",)
    assert kafka.state.scheduled_rebalance_ms == kafka.now + delay
    kafka.assert_delay(delay)
    kafka.assert_empty_assignment()

    kafka.sleep(delay // 2)
    kafka.add_new_empty_workers("worker1")
    kafka.perform()
    assert set(kafka.state.candidates) == {"worker1", "worker3"}
    assert kafka.state.scheduled_rebalance_ms == kafka.now + delay // 2
    kafka.assert_delay(delay // 2)

    kafka.sleep(delay // 2)
    kafka.perform()
    # Kafka's case gives the candidates other work meanwhile (not possible in a whole
    # round: nothing is assigned while the delay runs); the point is the same: the lost
    # work is dealt among both candidates, nothing else moves to them.
    on_candidates = WorkerLoad.of(
        [*kafka.members["worker1"].connectors, *kafka.members["worker3"].connectors],
        [*kafka.members["worker1"].tasks, *kafka.members["worker3"].tasks],
    )
    assert on_candidates == lost
    assert len(kafka.members["worker1"].tasks) == len(kafka.members["worker3"].tasks) == 2
    assert kafka.state.candidates == ()
    assert kafka.state.scheduled_rebalance_ms is None
    # The lost work's tasks sit 4, 2, 4, 2: the same round revokes for balance (the delay
    # ended), the next gives the revoked work out.
    kafka.perform()
    kafka.assert_balanced_and_complete_allocation()


def test_lost_assignment_handling_when_worker_bounces_back_but_finally_leaves():
    kafka, lost = _lost_setup()
    delay = kafka.rebalance_delay

    kafka.remove_workers("worker1")
    kafka.perform()
    kafka.assert_delay(delay)

    kafka.sleep(delay // 2)
    kafka.add_new_empty_workers("worker1")
    kafka.perform()
    assert kafka.state.candidates == ("worker1",)
    kafka.assert_delay(delay // 2)

    kafka.sleep(delay // 2)
    kafka.remove_workers("worker1")  # it leaves for good after all
    kafka.perform()
    assert set(lost.connectors) <= {c for m in kafka.members.values() for c in m.connectors}
    assert set(lost.tasks) <= {t for m in kafka.members.values() for t in m.tasks}
    assert kafka.state.candidates == ()
    assert kafka.state.scheduled_rebalance_ms is None
    kafka.assert_delay(0)


def test_lost_assignment_handling_when_scheduled_delay_is_disabled():
    kafka, lost = _lost_setup(rebalance_delay=0)

    kafka.remove_workers("worker1")
    kafka.perform()
    # Reassigned at once.
    assert set(lost.connectors) <= {c for m in kafka.members.values() for c in m.connectors}
    assert set(lost.tasks) <= {t for m in kafka.members.values() for t in m.tasks}
    assert kafka.state.candidates == ()
    assert kafka.state.scheduled_rebalance_ms is None
    kafka.assert_delay(0)


def test_scheduled_delay_is_disabled():
    kafka = KafkaHarness(rebalance_delay=0)
    kafka.add_new_empty_workers("worker2")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)

    kafka.remove_workers("worker2")
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_workers("worker1")
    kafka.assert_connector_allocations(2)
    kafka.assert_task_allocations(8)
    kafka.assert_balanced_and_complete_allocation()


def test_task_assignment_when_tasks_duplicated_in_worker_assignment(kafka):
    kafka.perform()
    kafka.assert_connector_allocations(2)
    kafka.assert_task_allocations(8)

    # worker2 joins claiming connector1 and its tasks, which worker1 runs too.
    kafka.add_new_worker("worker2", ["connector1"], tasks_of("connector1", 0, 4))
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 1)
    kafka.assert_task_allocations(0, 4)

    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(1, 1)
    kafka.assert_task_allocations(4, 4)
    kafka.assert_balanced_and_complete_allocation()

    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_empty_assignment()


def test_duplicated_assignment_handle_when_the_duplicated_assignments_deleted(kafka):
    kafka.perform()
    kafka.assert_connector_allocations(2)
    kafka.assert_task_allocations(8)

    kafka.remove_connector("connector1")
    kafka.add_new_worker("worker2", ["connector1"], tasks_of("connector1", 0, 4))
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_connector_allocations(0, 1)
    kafka.assert_task_allocations(0, 2)

    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_no_revocations()
    kafka.assert_connector_allocations(0, 1)
    kafka.assert_task_allocations(2, 2)
    kafka.assert_balanced_and_complete_allocation()

    kafka.sleep(kafka.delay)
    kafka.perform()
    kafka.assert_delay(0)
    kafka.assert_empty_assignment()


@pytest.mark.parametrize("protocol", [COMPATIBLE, SESSIONED])
def test_protocol_version_follows_the_selected_protocol(protocol):
    """Kafka's testProtocolV1/V2: assignments carry the version of the protocol the
    group selected. connectd's assign() is version-free; the membership layer encodes
    with VERSIONS[protocol], checked here end to end through the codec."""
    kafka = KafkaHarness()
    kafka.connectors = {}
    returned = kafka.perform()
    raw = encode_assignment(returned["worker1"], VERSIONS[protocol])
    assert int.from_bytes(raw[:2], "big") == VERSIONS[protocol]
    assert decode_assignment(raw) == returned["worker1"]


# WorkerCoordinatorIncrementalTest: two connectors with 4 tasks, offset 10 -------------


def _coordinator_group(*workers: str) -> KafkaHarness:
    kafka = KafkaHarness()
    kafka.members = {w: WorkerLoad() for w in workers}
    return kafka


def test_coordinator_task_assignment_when_worker_joins():
    kafka = _coordinator_group("leader", "member")
    returned = kafka.perform()
    assert [(len(returned[w].connectors), len(returned[w].tasks)) for w in ("leader", "member")] == [(1, 4), (1, 4)]

    kafka.add_new_empty_workers("other")
    returned = kafka.perform()
    # One task revoked from each of the two busy workers, nothing given yet.
    assert [(len(returned[w].revoked.connectors), len(returned[w].revoked.tasks)) for w in ("leader", "member")] == [
        (0, 1),
        (0, 1),
    ]
    assert returned["other"].connectors == returned["other"].tasks == ()
    assert not any(a.connectors or a.tasks for a in returned.values())


def test_coordinator_task_assignment_when_worker_leaves_permanently():
    kafka = _coordinator_group("leader", "member", "other")
    returned = kafka.perform()
    assert sorted((len(a.connectors), len(a.tasks)) for a in returned.values()) == [(0, 2), (1, 3), (1, 3)]

    kafka.remove_workers("other")
    kafka.perform()
    kafka.assert_empty_assignment()
    kafka.assert_delay(kafka.rebalance_delay)

    kafka.sleep(kafka.rebalance_delay // 2)
    kafka.perform()
    kafka.assert_empty_assignment()
    kafka.assert_delay(kafka.rebalance_delay // 2)

    kafka.sleep(kafka.rebalance_delay // 2 + 1)
    returned = kafka.perform()
    assert [len(returned[w].tasks) for w in ("leader", "member")] == [1, 1]
    kafka.assert_no_revocations()


def test_coordinator_task_assignment_when_worker_bounces():
    kafka = _coordinator_group("leader", "member", "other")
    kafka.perform()
    other = kafka.members["other"]

    kafka.remove_workers("other")
    kafka.perform()
    kafka.assert_delay(kafka.rebalance_delay)

    kafka.sleep(kafka.rebalance_delay // 2)
    kafka.add_new_empty_workers("other")
    kafka.perform()
    kafka.assert_empty_assignment()
    kafka.assert_delay(kafka.rebalance_delay // 2)

    kafka.sleep(kafka.rebalance_delay // 2 + 1)
    returned = kafka.perform()
    assert [len(returned[w].tasks) for w in ("leader", "member")] == [0, 0]
    assert set(returned["other"].tasks) == set(other.tasks) and len(other.tasks) == 2
    kafka.assert_delay(0)


# --- the eager protocol (WorkerCoordinatorTest, connect.protocol=eager) ----------------------------


def _eager(connectors: dict[str, int], members=("leader", "member"), offsets=None):
    from connectd.cluster.protocol import ConnectorTaskId, WorkerMetadata

    offsets = offsets or {}
    metadata = {m: WorkerMetadata(f"http://{m}", offsets.get(m, 1)) for m in members}
    tasks = [ConnectorTaskId(c, n) for c, count in connectors.items() for n in range(count)]
    return assign_eager(leader="leader", members=metadata, config_offset=1, connectors=list(connectors), tasks=tasks)


def _given(assignment):
    return list(assignment.connectors), [str(t) for t in assignment.tasks]


def test_eager_leader_perform_assignment1():
    # configState1: connector1 with one task; the leader gets the connector, the member its task
    result = _eager({"connector1": 1})
    assert _given(result["leader"]) == (["connector1"], [])
    assert _given(result["member"]) == ([], ["connector1-0"])
    assert all(a.leader == "leader" and a.leader_url == "http://leader" and a.config_offset == 1
               and not len(a.revoked) and a.delay_ms == 0 for a in result.values())


def test_eager_leader_perform_assignment2():
    # configState2: connector1 with two tasks, connector2 with one; the deal goes on from the connectors
    result = _eager({"connector1": 2, "connector2": 1})
    assert _given(result["leader"]) == (["connector1"], ["connector1-0", "connector2-0"])
    assert _given(result["member"]) == (["connector2"], ["connector1-1"])


def test_eager_leader_perform_assignment_single_task_connectors():
    result = _eager({"connector1": 1, "connector2": 1, "connector3": 1})
    assert _given(result["leader"]) == (["connector1", "connector3"], ["connector2-0"])
    assert _given(result["member"]) == (["connector2"], ["connector1-0", "connector3-0"])


def test_eager_config_mismatch_hands_every_member_the_highest_offset():
    from connectd.cluster.protocol import CONFIG_MISMATCH

    result = _eager({"connector1": 1}, offsets={"member": 7})
    assert {m: (a.error, a.config_offset, len(a.connectors) + len(a.tasks)) for m, a in result.items()} \
        == {"leader": (CONFIG_MISMATCH, 7, 0), "member": (CONFIG_MISMATCH, 7, 0)}
