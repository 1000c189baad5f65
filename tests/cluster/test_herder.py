"""The distributed herder against Kafka's DistributedHerder: what it writes and what it starts.

No group and no Spark: the herder is made as a worker makes it, then its
config store is a fixed snapshot (what the config topic says) and starting
or stopping a task is recorded instead of run. Statuses go through a real
status topic where what other workers would read matters.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from connectd.cluster.config_store import ConfigSnapshot
from connectd.cluster.herder import DistributedHerder
from connectd.cluster.protocol import ConnectAssignment, ConnectorTaskId, WorkerLoad
from connectd.cluster.status_store import KafkaStatusStore
from connectd.connector import SinkConnector, SinkTask, SourceConnector
from connectd.errors import ConnectdError, ConnectorError
from connectd.herder.runs import ConnectorRun, TaskRun
from connectd.status import MemoryStatusStore, Status

from .test_status_store import create_topic, fresh


class _Sink(SinkConnector):
    pass


#: Stands for a warm Spark session: these herders start no query (their starts are recorded), but a
#: herder without a session would wait for one before starting what it is assigned.
_NO_SPARK = SimpleNamespace()


def _herder(worker_config, snapshot: ConfigSnapshot) -> tuple[DistributedHerder, list[tuple[int, int]]]:
    """A herder whose config topic reads *snapshot*; returns it and the (task, task count) of each start."""
    herder = DistributedHerder(worker_config("distributed"), "w1:8083", _NO_SPARK, "http://w1:8083")
    herder.config_store = SimpleNamespace(snapshot=lambda: snapshot, writer=None,
                                          relinquish_write_privileges=_no_wait)
    herder.status = MemoryStatusStore()
    started: list[tuple[int, int]] = []

    async def start(run, task, *, quiet=False):
        started.append((task.id, herder._task_count(run)))
        herder._set(run.name, task.id, "RUNNING")

    async def stop(run, task, timeout_s=None):
        task.handle = None

    herder.supervisor._start = start
    herder.supervisor._stop = stop
    for name, config in snapshot.connector_configs.items():  # its class known: a sink
        herder._connectors[name] = ConnectorRun(name, dict(config), _Sink)
    return herder, started


def _snapshot(name: str, tasks: int, **config: str) -> ConfigSnapshot:
    connector = {"name": name, "connector.class": "x.Sink", "topics": "t", **config}
    return ConfigSnapshot(
        offset=10,
        connector_configs={name: connector},
        task_configs={ConnectorTaskId(name, i): {"topics": "t"} for i in range(tasks)},
        task_counts={name: tasks},
        target_states={name: "STARTED"},
    )


def test_a_restarted_task_gets_its_share_of_all_the_connectors_tasks(worker_config):
    """KIP-745 restart of a connector spread over workers: this worker runs task 2 of 4 only.
    A sink task's partitions are its share of the connector's task count (Kafka's consumer
    group does the same split); counting only this worker's tasks made task 2 read
    partitions 2, 3, … — those of task 3 on another worker too."""
    herder, started = _herder(worker_config, _snapshot("spread", 4, **{"tasks.max": "4"}))
    run = herder._connectors["spread"]
    task = TaskRun(2, {"topics": "t"})
    run.tasks = [task]

    asyncio.run(herder.supervisor.restart(run, task))

    assert started == [(2, 4)]


def test_a_task_beyond_a_lowered_tasks_max_fails_at_start_as_kafkas_too_many_tasks(worker_config):
    """KIP-1004: Kafka's Worker.startTask fails a task whose connector has more committed tasks
    than its tasks.max (lowered since the tasks were written, not yet written again)."""
    herder, started = _herder(worker_config, _snapshot("lowered", 3, **{"tasks.max": "2"}))

    asyncio.run(herder._start_owned_task(ConnectorTaskId("lowered", 2)))

    status = herder.status.task("lowered", 2)
    assert started == []
    assert status.state == "FAILED"
    assert status.trace.startswith("The connector lowered has generated 3 tasks, which is greater than 2, ")
    assert "'tasks.max.enforce' set to false" in status.trace


def test_a_restart_beyond_a_lowered_tasks_max_stops_the_task_and_fails_it(worker_config):
    """The same check when a running task is restarted (REST or errors.restart.enable): it
    stops, and is not started again."""
    herder, started = _herder(worker_config, _snapshot("lowered", 3, **{"tasks.max": "2"}))
    run = herder._connectors["lowered"]
    task = TaskRun(2, {"topics": "t"})
    run.tasks = [task]
    stopped = []

    async def stop(run, task, timeout_s=None):
        stopped.append(task.id)

    herder.supervisor._stop = stop

    asyncio.run(herder.supervisor.restart(run, task))

    assert (started, stopped) == ([], [2])
    status = herder.status.task("lowered", 2)
    assert status.state == "FAILED"
    assert status.trace.startswith("The connector lowered has generated 3 tasks, which is greater than 2, ")


def test_tasks_max_enforce_false_starts_the_task_anyway(worker_config):
    herder, started = _herder(worker_config, _snapshot("lenient", 3, **{"tasks.max": "2",
                                                                        "tasks.max.enforce": "false"}))

    asyncio.run(herder._start_owned_task(ConnectorTaskId("lenient", 2)))

    assert started == [(2, 3)]
    assert herder.status.task("lenient", 2).state == "RUNNING"


class _Source(SourceConnector):
    pass


def _exactly_once_herder(worker_config, snapshots: list[ConfigSnapshot], enabled: str = "enabled"):
    """A herder (``_herder``'s) of source connector ``src`` assigned its task 0, whose config topic
    reads ``snapshots[0]`` and moves to the next one at each round of fencing; its rounds and the
    work it hands to ``_later`` are recorded."""
    herder, started = _herder(lambda mode: worker_config(mode, **{"exactly.once.source.support": enabled}),
                              snapshots[0])
    herder.config_store = SimpleNamespace(snapshot=lambda: snapshots[0], refresh=_no_wait)
    herder._connectors["src"] = ConnectorRun("src", dict(snapshots[0].connector_configs["src"]), _Source)
    herder._assigned = WorkerLoad.of([], [ConnectorTaskId("src", 0)])
    herder.later: list = []
    herder._later = lambda work, connector=None: herder.later.append(work)
    herder.rounds = []

    async def fence(name):
        herder.rounds.append(name)
        if len(snapshots) > 1:
            snapshots.pop(0)

    herder.fence_zombies = fence
    return herder, started


async def _no_wait(timeout_s=None):
    return None


def _source_snapshot(generation: int, pending: bool) -> ConfigSnapshot:
    return ConfigSnapshot(
        offset=10 + generation,
        connector_configs={"src": {"name": "src", "connector.class": "x.Source", "topic": "t"}},
        task_configs={ConnectorTaskId("src", 0): {"generation": str(generation)}},
        task_counts={"src": 1},
        target_states={"src": "STARTED"},
        task_generations={"src": generation},
        pending_fencing=frozenset({"src"} if pending else ()),
    )


def test_an_exactly_once_source_task_starts_once_its_connectors_round_of_fencing_is_done(worker_config):
    """KIP-618: task configs committed after the connector's last tasks-fencing record wait for the
    leader's round; the task starts after it, not under the herder's lock meanwhile."""
    herder, started = _exactly_once_herder(worker_config, [_source_snapshot(0, True), _source_snapshot(0, False)])
    herder.member = SimpleNamespace(is_leader=True)

    async def scenario() -> None:
        await herder._start_owned_task(ConnectorTaskId("src", 0))
        assert started == [] and len(herder.later) == 1  # deferred to its round
        await herder.later.pop()

    asyncio.run(scenario())
    assert herder.rounds == ["src"]
    assert started == [(0, 1)]


def test_an_exactly_once_task_superseded_during_its_round_is_left_to_the_new_generation(worker_config):
    herder, started = _exactly_once_herder(worker_config, [_source_snapshot(0, True), _source_snapshot(1, True)])
    herder.member = SimpleNamespace(is_leader=True)

    async def scenario() -> None:
        await herder._start_owned_task(ConnectorTaskId("src", 0))
        await herder.later.pop()

    asyncio.run(scenario())
    assert herder.rounds == ["src"] and started == []  # the new commit's restart starts it


def test_an_exactly_once_task_whose_round_keeps_failing_fails_with_the_reason(worker_config):
    herder, started = _exactly_once_herder(worker_config, [_source_snapshot(0, True)])
    herder.member = SimpleNamespace(is_leader=True)
    herder.rebalance_wait_s = 1.0  # the retries' bound
    attempts = []

    async def refused(name):
        attempts.append(name)
        raise ConnectorError("the leader at http://w2:8083 refused a round of zombie fencing of src: 500 …")

    herder.fence_zombies = refused

    async def scenario() -> None:
        await herder._start_owned_task(ConnectorTaskId("src", 0))
        await herder.later.pop()

    asyncio.run(scenario())
    assert started == [] and len(attempts) >= 2
    status = herder.status.task("src", 0)
    assert status.state == "FAILED"
    assert status.trace.startswith("Failed to perform round of zombie fencing: the leader at http://w2:8083 refused")


def test_a_follower_asks_the_leader_for_the_round(worker_config, monkeypatch):
    herder, started = _exactly_once_herder(worker_config, [_source_snapshot(0, True), _source_snapshot(0, False)])
    herder.member = SimpleNamespace(is_leader=False)
    leaders_round = herder.fence_zombies  # what the leader does, recorded: here, through its REST API
    monkeypatch.setattr("connectd.cluster.herder.request_fencing", lambda _herder, name: leaders_round(name))

    async def scenario() -> None:
        await herder._start_owned_task(ConnectorTaskId("src", 0))
        await herder.later.pop()

    asyncio.run(scenario())
    assert herder.rounds == ["src"] and started == [(0, 1)]


def test_without_exactly_once_a_source_task_starts_at_once(worker_config):
    herder, started = _exactly_once_herder(worker_config, [_source_snapshot(0, True)], enabled="disabled")

    asyncio.run(herder._start_owned_task(ConnectorTaskId("src", 0)))

    assert started == [(0, 1)] and herder.later == [] and herder.rounds == []


def test_the_leader_claims_the_config_topics_write_privileges_and_again_after_losing_them(
        worker_config, monkeypatch):
    """exactly.once.source.support preparing or enabled (KIP-618): an assignment that makes this worker
    the leader claims the leader's transactional id before anything of the round is written; one that
    makes it a follower relinquishes it; a leader whose claim failed (or whose write lost it) claims
    again, while it leads."""
    from connectd.cluster import herder as herder_module
    from connectd.cluster.protocol import COMPATIBLE

    monkeypatch.setattr(herder_module, "_CLAIM_RETRY_S", 0.01)
    herder, _ = _herder(lambda mode: worker_config(mode, **{"exactly.once.source.support": "preparing"}),
                        _snapshot("c", 0))
    calls, refusals = [], [ConnectorError("the cluster is away")]
    writer = SimpleNamespace(claimed=False)

    async def claim():
        calls.append("claim")
        if refusals:
            raise refusals.pop()
        writer.claimed = True

    async def relinquish():
        calls.append("relinquish")
        writer.claimed = False

    herder.config_store.writer = writer
    herder.config_store.claim_write_privileges = claim
    herder.config_store.relinquish_write_privileges = relinquish
    herder.config_store.refresh = _no_wait
    herder.member = SimpleNamespace(is_leader=True, protocol=COMPATIBLE)
    herder._clean_deleted_statuses = lambda: None  # the leader's, after each round: not this test's
    herder.later = []
    herder._later = lambda work, connector=None: herder.later.append(work)

    async def scenario():
        await herder.on_assigned(ConnectAssignment(0, "me", "http://me", 10), 1, "me", COMPATIBLE)
        assert calls == ["claim"] and not writer.claimed  # refused: tried again, later
        retry = next(work for work in herder.later if work.__name__ == "_reclaim_write_privileges")
        await retry
        assert calls == ["claim", "claim"] and writer.claimed
        herder.member.is_leader = False
        await herder.on_assigned(ConnectAssignment(0, "other", "http://other", 10), 2, "me", COMPATIBLE)
        assert calls[-1] == "relinquish" and not writer.claimed
        await herder._reclaim_write_privileges()  # a follower never claims
        assert calls[-1] == "relinquish"
        for work in herder.later:
            work.close()  # the rounds' starts: not this test's

    asyncio.run(scenario())


@pytest.mark.integration
def test_the_leader_tombstones_statuses_of_deleted_connectors_and_of_tasks_no_longer_configured(
        broker, topic_name, worker_config):
    """Kafka's leader, after every rebalance (updateDeletedConnectorStatus, updateDeletedTaskStatus):
    a deleted connector's statuses, tasks above a lowered task count and a STOPPED connector's
    tasks get tombstones, so no worker's /status shows tasks that no longer exist."""
    create_topic(broker, topic_name, partitions=1)
    running = Status("RUNNING", "gone:8083", generation=3)
    snapshot = ConfigSnapshot(
        offset=10,
        connector_configs={"kept": {"name": "kept"}, "stopped": {"name": "stopped"}},
        task_configs={ConnectorTaskId("kept", i): {} for i in range(2)},
        task_counts={"kept": 2, "stopped": 0},
        target_states={"kept": "STARTED", "stopped": "STOPPED"},
    )
    herder, _ = _herder(worker_config, snapshot)
    settings = {"bootstrap_servers": broker.bootstrap_servers}

    async def scenario() -> None:
        async with KafkaStatusStore(topic_name, settings, settings, timeout_s=10) as store:
            store.put_connector("deleted", running)
            store.put_task("deleted", 0, running)
            store.put_task("orphan", 0, running)  # a task status whose connector has none
            store.put_connector("kept", running)
            for task in range(4):  # tasks.max was 4, is 2: tasks 2 and 3 are ghosts
                store.put_task("kept", task, running)
            store.put_connector("stopped", Status("STOPPED", "w2:8083", generation=3))
            store.put_task("stopped", 0, Status("UNASSIGNED", "gone:8083", generation=3))
            await store.flush()
            herder.status = store
            herder._clean_deleted_statuses()
            await store.flush()

    asyncio.run(scenario())
    read = fresh(broker, topic_name, lambda s: (s.statused_connectors(), s.connector("deleted"), s.tasks("kept"),
                                                 s.tasks("stopped"), s.connector("stopped")))
    connectors, deleted, kept, stopped_tasks, stopped = read
    assert connectors == {"kept", "stopped"}
    assert deleted is None
    assert sorted(kept) == [0, 1]
    assert stopped_tasks == {}
    assert stopped.state == "STOPPED"


@pytest.mark.parametrize("backoff", [None, "4000"])
def test_a_worker_behind_the_config_topic_leaves_the_group_only_with_unsync_backoff_set(worker_config, backoff):
    """Kafka's worker leaves for worker.unsync.backoff.ms when it cannot read the config topic in
    worker.sync.timeout.ms; connectd's keeps its work and reads on unless the key is set, and then
    starts nothing of the assignment it is about to give up."""
    extra = {"worker.unsync.backoff.ms": backoff} if backoff is not None else {}
    herder = DistributedHerder(worker_config("distributed", **extra), "w1:8083", _NO_SPARK, "http://w1:8083")
    snapshot = _snapshot("behind", 1)
    herder.config_store = SimpleNamespace(snapshot=lambda: snapshot, refresh=_times_out)
    left = []
    herder.member.leave_for = lambda seconds, reason: left.append((seconds, reason))
    started = []

    async def start(task_id):
        started.append(task_id)

    herder._start_owned_task = start
    task = ConnectorTaskId("behind", 0)
    herder._assigned = WorkerLoad.of([], [task])

    asyncio.run(herder._start_assigned(ConnectAssignment(0, "leader", "http://leader", 20, (), (task,)), 3))

    assert left == ([] if backoff is None else [(4.0, "config_topic_behind")])
    assert started == ([task] if backoff is None else [])


async def _times_out(timeout_s):
    raise ConnectdError(f"the config topic was not read to its end within {timeout_s} s")


class _Initialized(SinkConnector):
    """Records the order of its set-up, as a connector ported from Java would see it."""

    def initialize(self, context):
        self.steps = [("initialize", context is self.context)]

    def start(self, config):
        self.steps.append(("start", config["topics"]))

    def task_class(self):
        return SinkTask

    def task_configs(self, max_tasks):
        return [{"topics": "t"}]


def test_a_connector_is_initialized_with_its_context_before_it_starts(worker_config):
    """Kafka's WorkerConnector: initialize(context), then start(config)."""
    herder, _started = _herder(worker_config, _snapshot("init", 1, **{"tasks.max": "1"}))
    run = herder._connectors["init"]
    run.cls = _Initialized

    written = asyncio.run(herder._start_connector_instance(run))

    assert run.instance.steps == [("initialize", True), ("start", "t")]
    assert written == [{"topics": "t"}]


def test_an_eager_group_has_all_work_assigned_afresh_and_requests_unsigned(worker_config):
    """connect.protocol=eager somewhere in the group: the leader deals everything round-robin (Kafka's
    EagerAssignor), a rebalance stops all this worker runs (gracefully, UNASSIGNED written), and no
    request between workers is signed or checked, as Kafka checks them only under sessioned."""
    from connectd.cluster.membership import EAGER_REBALANCE
    from connectd.cluster.protocol import EAGER, SESSIONED, WorkerMetadata

    herder, started = _herder(worker_config, _snapshot("eager", 3))
    assert herder.signs_requests  # sessioned by default, before any join
    herder.member._protocol = EAGER
    assert not herder.signs_requests
    herder.member._protocol = SESSIONED
    assert herder.signs_requests
    # Spark warm: a rejoin says so to a cooperative leader; an eager group would only stop everything
    rejoins = []
    herder.member.request_rejoin = lambda: rejoins.append(herder.member.protocol)
    herder._started = True
    for protocol in (SESSIONED, EAGER):
        herder.member._protocol = protocol
        herder.attach_spark(_NO_SPARK)
    assert rejoins == [SESSIONED]

    async def scenario():
        herder.config_store.refresh = _refreshed
        members = {m: WorkerMetadata(f"http://{m}", 10) for m in ("a", "b")}
        return await herder.assign("a", 4, EAGER, members)

    async def _refreshed(timeout):
        return None

    assignments = asyncio.run(scenario())
    assert {m: (a.connectors, [t.task for t in a.tasks]) for m, a in assignments.items()} \
        == {"a": (("eager",), [1]), "b": ((), [0, 2])}
    assert herder._assignor_state is None  # the next cooperative round trusts what members report

    run = herder._connectors["eager"]
    run.tasks = [TaskRun(0, {"topics": "t"}), TaskRun(2, {"topics": "t"})]
    herder._assigned = WorkerLoad.of([], [ConnectorTaskId("eager", 0), ConnectorTaskId("eager", 2)])
    stops = []

    async def stop(run, task, timeout_s=None):
        stops.append((task.id, timeout_s))

    herder.supervisor._stop = stop
    herder.status.put_task_safe = herder.status.put_task  # KafkaStatusStore's, no other worker here
    asyncio.run(herder.on_revoked_all(EAGER_REBALANCE))
    assert sorted(stops) == [(0, None), (2, None)]  # graceful: task.shutdown.graceful.timeout.ms
    assert herder.assignment() == WorkerLoad()
    assert {herder.status.task("eager", n).state for n in (0, 2)} == {"UNASSIGNED"}


def test_a_group_turning_eager_stops_what_this_worker_runs_and_is_not_given_keeping_the_rest(
        worker_config, wait_until_async):
    """A worker that joined expecting a cooperative round (it stopped nothing) gets an eager assignment:
    that is all it may run, so work given to others stops before anything starts; work it keeps runs on."""
    from connectd.cluster.protocol import EAGER

    herder, started = _herder(worker_config, _snapshot("turn", 3, **{"tasks.max": "3"}))
    run = herder._connectors["turn"]
    run.tasks = [TaskRun(0, {"topics": "t"}), TaskRun(1, {"topics": "t"})]
    herder._assigned = WorkerLoad.of([], [ConnectorTaskId("turn", 0), ConnectorTaskId("turn", 1)])
    herder.status.put_task_safe = herder.status.put_task
    stops = []

    async def stop(run, task, timeout_s=None):
        stops.append(task.id)

    herder.supervisor._stop = stop
    assignment = ConnectAssignment(0, "l", "http://l", 10, tasks=(ConnectorTaskId("turn", 1), ConnectorTaskId("turn", 2)))

    async def refreshed(timeout):
        return None

    herder.config_store.refresh = refreshed

    async def scenario():
        await herder.on_assigned(assignment, 7, "m", EAGER)
        await wait_until_async(lambda: started, "the start, after on_assigned returned", timeout=10)

    asyncio.run(scenario())
    assert stops == [0]
    assert herder.assignment() == WorkerLoad.of([], [ConnectorTaskId("turn", 1), ConnectorTaskId("turn", 2)])
    assert [task for task, _ in started] == [2]  # task 1 runs on, not started again
