"""WorkerGroupMember against the real (tansu) broker: joins, rebalances, leaves,
the session deadline and the metadata the leader sees.

tansu holds a JoinGroup about session.timeout/2, so the session timeouts are short.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka.client import AIOKafkaClient, CoordinationType
from aiokafka.protocol.group import LeaveGroupRequest

from connectd.cluster.membership import EAGER_REBALANCE, WorkerGroupMember
from connectd.cluster.protocol import (
    CONFIG_MISMATCH,
    EAGER,
    NO_ERROR,
    OFFERED,
    SESSIONED,
    ConnectAssignment,
    ConnectorTaskId,
    WorkerLoad,
    WorkerMetadata,
)
from connectd.errors import ConfigError

SESSION_MS = 3000
HEARTBEAT_MS = 300
CONNECTORS = ("c0", "c1", "c2", "c3")


class RoundRobinHandler:
    """A herder stand-in: runs connectors by name; as leader, deals CONNECTORS round-robin,
    cooperatively (work held by someone is only revoked, given out in the next round)."""

    def __init__(self, name: str, *, config_offset: int = 0, first_delay_ms: int = 0, first_error: int = NO_ERROR):
        self.name = name
        self.url = f"http://{name}:8083/"
        self.config_offset = config_offset
        self.running: set[str] = set()
        self.assigned: list[tuple[float, int, ConnectAssignment]] = []
        self.revoked_all: list[tuple[float, str]] = []
        self.rebalance_starts: list[float] = []
        self.seen_members: list[dict[str, WorkerMetadata]] = []
        self.joined_before = False
        self.first_delay_ms = first_delay_ms
        self.first_error = first_error
        self.extra_load: WorkerLoad | None = None

    def metadata(self) -> WorkerMetadata:
        if self.extra_load is not None and self.joined_before:
            return WorkerMetadata(self.url, self.config_offset, self.extra_load)
        load = WorkerLoad.of(self.running) if self.joined_before else None
        return WorkerMetadata(self.url, self.config_offset, load)

    async def assign(self, leader_id, generation, protocol, members):
        self.seen_members.append(dict(members))
        ids = sorted(members)
        target = {m: {c for i, c in enumerate(CONNECTORS) if ids[i % len(ids)] == m} for m in ids}
        # Unknown connectors (x in the metadata test) are ignored, not revoked.
        current = {m: set(members[m].assignment.connectors if members[m].assignment else ()) & set(CONNECTORS)
                   for m in ids}
        held = set().union(*current.values())
        result = {}
        for m in ids:
            revoked = current[m] - target[m]
            new = target[m] - held
            first = members[m].assignment is None
            result[m] = ConnectAssignment(
                error=self.first_error if first else NO_ERROR,
                leader=leader_id,
                leader_url=self.url,
                config_offset=max(w.config_offset for w in members.values()),
                connectors=tuple(sorted(new)),
                revoked=WorkerLoad.of(revoked),
                delay_ms=self.first_delay_ms if first else 0,
            )
        return result

    async def on_assigned(self, assignment, generation, member_id, protocol):
        self.joined_before = True
        self.running -= set(assignment.revoked.connectors)
        self.running |= set(assignment.connectors)
        self.assigned.append((time.monotonic(), generation, assignment))

    async def on_revoked_all(self, reason):
        self.running.clear()
        self.revoked_all.append((time.monotonic(), reason))

    async def on_rebalance_start(self):
        self.rebalance_starts.append(time.monotonic())


def _member(broker, group, handler, **kw) -> WorkerGroupMember:
    return WorkerGroupMember(
        {"bootstrap_servers": broker.bootstrap_servers, "retry_backoff_ms": 100},
        group,
        session_timeout_ms=kw.pop("session_timeout_ms", SESSION_MS),
        rebalance_timeout_ms=kw.pop("rebalance_timeout_ms", 10000),
        heartbeat_interval_ms=kw.pop("heartbeat_interval_ms", HEARTBEAT_MS),
        protocols=kw.pop("protocols", OFFERED["sessioned"]),
        handler=handler,
        **kw,
    )


def _settled(*pairs) -> bool:
    """Every member stable, same generation, and CONNECTORS split between them without overlap."""
    members = [m for m, _ in pairs]
    if any(m.rebalancing for m in members) or len({m.generation for m in members}) != 1:
        return False
    running = [h.running for _, h in pairs]
    return set().union(*running) == set(CONNECTORS) and sum(map(len, running)) == len(CONNECTORS)


@pytest.fixture
def group_id() -> str:
    return f"connect-test-{uuid.uuid4().hex[:12]}"


def test_a_lone_member_leads_and_gets_all_the_work(broker, group_id, wait_until_async):
    async def main():
        handler = RoundRobinHandler("a")
        member = _member(broker, group_id, handler)
        async with member:
            await wait_until_async(lambda: _settled((member, handler)), "the first assignment", timeout=15, interval=0.02)
            assert member.is_leader and member.leader_id == member.member_id
            assert member.protocol == SESSIONED  # the first of what it offers, as Kafka's coordinator picks
            assert member.generation >= 0  # Kafka starts at 1, tansu at 0
            assert member.leader_url == handler.url
            _, generation, assignment = handler.assigned[-1]
            assert generation == member.generation and assignment.leader == member.member_id
            assert handler.running == set(CONNECTORS)
            assert handler.revoked_all == []
        assert member.member_id == ""  # left the group

    asyncio.run(main())


def test_a_second_member_joins_cooperatively_and_the_leader_sees_its_metadata(broker, group_id, wait_until_async):
    async def main():
        a, b = RoundRobinHandler("a", config_offset=5), RoundRobinHandler("b", config_offset=9)
        # What b says it runs reaches the leader byte for byte (and b then runs nothing of CONNECTORS).
        b.extra_load = WorkerLoad.of(["x"], [ConnectorTaskId("x", 0), ConnectorTaskId("x", 3)])
        ma = _member(broker, group_id, a)
        mb = _member(broker, group_id, b, protocols=["sessioned", "compatible"])
        async with ma:
            await wait_until_async(lambda: _settled((ma, a)), "a alone", timeout=15, interval=0.02)
            first_generation = ma.generation
            async with mb:
                await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a and b sharing the work", timeout=15, interval=0.02)
                assert ma.generation > first_generation
                assert ma.is_leader and not mb.is_leader and mb.leader_id == ma.member_id
                assert mb.leader_url == a.url
                assert a.rebalance_starts, "the first member saw the rebalance in a heartbeat"
                # Cooperative: a gave up half of its work in one round, and b got it in a later one.
                revoking = [asg for _, _, asg in a.assigned if len(asg.revoked)]
                assert revoking and set(revoking[0].revoked.connectors) == set(b.running)
                assert all(not asg.revoked.connectors for _, _, asg in b.assigned)
                seen = [members[mb.member_id] for members in a.seen_members if mb.member_id in members]
                assert seen[0] == WorkerMetadata(b.url, 9, None)  # before b's first assignment
                # b asks for a rebalance; its next metadata reports what it runs.
                rounds = len(a.seen_members)
                mb.request_rejoin()
                await wait_until_async(lambda: len(a.seen_members) > rounds and not ma.rebalancing and not mb.rebalancing, "the rebalance b asked for", timeout=15, interval=0.02)
                assert a.seen_members[rounds][mb.member_id] == WorkerMetadata(b.url, 9, b.extra_load)
                assert a.seen_members[rounds][ma.member_id] == WorkerMetadata(a.url, 5, WorkerLoad.of(a.running))
                assert a.revoked_all == [] and b.revoked_all == []
                assert b.assigned[-1][2].config_offset == 9  # the highest offset any member reported

    asyncio.run(main())


def test_a_group_with_an_eager_member_runs_eager_and_every_member_stops_all_before_it_rejoins(
        broker, group_id, wait_until_async):
    """As Kafka Connect: every worker also offers ``default`` (eager), so a worker on
    connect.protocol=eager makes the whole group eager; each rebalance then starts with every member
    stopping all its work (WorkerCoordinator.onJoinPrepare), and each assignment is all it runs.
    (The eager member joins first: the dev broker keeps the first member's protocol for the group,
    where Kafka would switch a running group to the one every member offers.)"""
    async def main():
        a, b = RoundRobinHandler("a"), RoundRobinHandler("b")
        ma, mb = _member(broker, group_id, a), _member(broker, group_id, b, protocols=OFFERED["eager"])
        async with mb:
            await wait_until_async(lambda: _settled((mb, b)), "b alone", timeout=15, interval=0.02)
            assert mb.protocol == EAGER and b.revoked_all == []
            async with ma:
                await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a and b sharing the work, eagerly",
                                       timeout=15, interval=0.02)
                assert ma.protocol == mb.protocol == EAGER
                # b held all the work: it stopped all of it before its JoinGroup, and got half back.
                assert [reason for _, reason in b.revoked_all] == [EAGER_REBALANCE]
                revoked_at = b.revoked_all[0][0]
                eager_rounds = [asg for t, _, asg in b.assigned if t > revoked_at]
                assert eager_rounds and not any(len(asg.revoked) for asg in eager_rounds)
                assert set(eager_rounds[-1].connectors) == b.running
                # the leader saw version 0 metadata: no allocation
                assert all(m.assignment is None for m in b.seen_members[-1].values())
                # The leader asks for a round, a connector added (its config offset moved): again both
                # stop everything first.
                rounds = len(a.revoked_all), len(b.revoked_all)
                b.config_offset += 1
                mb.request_rejoin()
                await wait_until_async(lambda: (len(a.revoked_all), len(b.revoked_all)) > rounds
                                       and _settled((ma, a), (mb, b)), "another eager round", timeout=15,
                                       interval=0.02)
                assert len(a.revoked_all) > rounds[0] and len(b.revoked_all) > rounds[1], (a.revoked_all, b.revoked_all)
            await wait_until_async(lambda: _settled((mb, b)), "b alone again", timeout=15, interval=0.02)

    asyncio.run(main())


def test_a_member_that_stops_leaves_and_the_other_rebalances_at_once(broker, group_id, wait_until_async):
    async def main():
        a, b = RoundRobinHandler("a"), RoundRobinHandler("b")
        ma, mb = _member(broker, group_id, a), _member(broker, group_id, b)
        async with ma:
            async with mb:
                await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a and b sharing the work", timeout=15, interval=0.02)
                generation = ma.generation
            left = time.monotonic()
            await mb.stop()  # idempotent
            await wait_until_async(lambda: ma.generation > generation and _settled((ma, a)), "a taking all the work", timeout=15, interval=0.02)
            took = time.monotonic() - left
            assert took < SESSION_MS / 1000 * 0.9, f"rebalance took {took:.2f}s: the leave was not seen"
            assert a.running == set(CONNECTORS) and a.revoked_all == []

    asyncio.run(main())


def test_a_partitioned_member_revokes_all_before_its_work_goes_elsewhere(broker, group_id, wait_until_async):
    async def main():
        a, b = RoundRobinHandler("a"), RoundRobinHandler("b")
        ma, mb = _member(broker, group_id, a), _member(broker, group_id, b)
        async with ma, mb:
            await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a and b sharing the work", timeout=15, interval=0.02)
            a_work = set(a.running)
            assert a_work
            cut = time.monotonic()
            ma._network_gate.clear()  # nothing leaves a from now on
            await wait_until_async(lambda: b.running == set(CONNECTORS), "b taking a's work", timeout=20, interval=0.02)
            (revoked_at, reason), = a.revoked_all
            assert reason == "session_deadline" and a.running == set()
            given_at = next(t for t, _, asg in b.assigned if a_work & set(asg.connectors))
            assert cut < revoked_at < given_at, (revoked_at - cut, given_at - cut)
            assert revoked_at - cut < SESSION_MS / 1000
            ma._network_gate.set()
            # a comes back as a new member and gets a share again.
            await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a back in the group", timeout=20, interval=0.02)

    asyncio.run(main())


class SlowToStop(RoundRobinHandler):
    """Still stops its work when its member sets out to join again, as a herder stopping Spark
    queries may; *on_stopping* is called as it begins, :attr:`rejoining` is set by the test."""

    def __init__(self, name: str, on_stopping) -> None:
        super().__init__(name)
        self.on_stopping = on_stopping
        self.rejoining = asyncio.Event()
        self.metadata_after_loss: list[WorkerLoad | None] = []

    def metadata(self) -> WorkerMetadata:
        found = super().metadata()
        if self.revoked_all:
            self.metadata_after_loss.append(found.assignment)
        return found

    async def on_revoked_all(self, reason):
        self.rejoining.clear()
        self.on_stopping()
        await asyncio.wait_for(self.rejoining.wait(), timeout=15)  # the member's next JoinGroup round began
        await super().on_revoked_all(reason)


def test_a_member_back_while_it_still_stops_its_work_rejoins_owning_nothing(broker, group_id, wait_until_async):
    # Its heartbeats were late (a busy machine), it began stopping everything, and the network
    # was fine all along: had its JoinGroup claimed the work it was stopping, no one would run it.
    async def main():
        b = RoundRobinHandler("b")
        mb = _member(broker, group_id, b)
        a = SlowToStop("a", on_stopping=lambda: ma._network_gate.set())
        ma = _member(broker, group_id, a)
        join_and_sync = ma._join_and_sync

        async def rejoin():  # tells the handler that a JoinGroup round begins: it stops only then
            a.rejoining.set()
            return await join_and_sync()
        ma._join_and_sync = rejoin
        async with ma, mb:
            await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a and b sharing the work", timeout=15, interval=0.02)
            assert a.running
            ma._network_gate.clear()  # until a begins to stop its work
            await wait_until_async(lambda: a.revoked_all, "a's work stopped", timeout=15, interval=0.02)
            await wait_until_async(lambda: _settled((ma, a), (mb, b)), "every connector running once more",
                                   timeout=20, interval=0.02)
            assert a.metadata_after_loss and a.metadata_after_loss[0] == WorkerLoad.of(())

    asyncio.run(main())


def test_an_assignment_with_a_delay_makes_the_member_rejoin_after_it(broker, group_id, wait_until_async):
    async def main():
        handler = RoundRobinHandler("a", first_delay_ms=800)
        member = _member(broker, group_id, handler)
        async with member:
            await wait_until_async(lambda: len(handler.assigned) >= 2, "the delayed rejoin", timeout=15, interval=0.02)
            (t1, g1, first), (t2, g2, _) = handler.assigned[:2]
            assert first.delay_ms == 800 and g2 > g1
            assert t2 - t1 >= 0.8
            assert handler.revoked_all == []

    asyncio.run(main())


def test_config_mismatch_is_handed_over_and_the_member_rejoins(broker, group_id, wait_until_async):
    async def main():
        handler = RoundRobinHandler("a", first_error=CONFIG_MISMATCH)
        member = _member(broker, group_id, handler, protocols=["compatible"])
        async with member:
            await wait_until_async(lambda: len(handler.assigned) >= 2, "the rejoin after CONFIG_MISMATCH", timeout=15, interval=0.02)
            (_, g1, first), (_, g2, second) = handler.assigned[:2]
            assert first.failed and first.error == CONFIG_MISMATCH
            assert not second.failed and g2 > g1

    asyncio.run(main())


def test_leave_for_revokes_leaves_at_once_and_rejoins_after_the_backoff(broker, group_id, wait_until_async):
    """worker.unsync.backoff.ms: a worker behind the config topic stops its work, leaves (the
    other takes the work without waiting for a session timeout) and comes back after the backoff,
    long enough here for b's rebalance alone to end (tansu holds a JoinGroup ≈2 s)."""
    backoff_s = 5.0

    async def main():
        a, b = RoundRobinHandler("a"), RoundRobinHandler("b")
        ma, mb = _member(broker, group_id, a), _member(broker, group_id, b)
        async with ma, mb:
            await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a and b sharing the work", timeout=15, interval=0.02)
            left = time.monotonic()
            ma.leave_for(backoff_s, "config_topic_behind")
            await wait_until_async(lambda: b.running == set(CONNECTORS), "b taking all the work", timeout=15, interval=0.02)
            taken = time.monotonic() - left
            (revoked_at, reason), = a.revoked_all
            assert reason == "config_topic_behind" and a.running == set() and revoked_at - left < 1
            assert taken < SESSION_MS / 1000 * 0.9, f"b took {taken:.2f}s: the leave was not seen"
            assert ma.member_id == "" and ma.rebalancing
            await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a back in the group", timeout=20, interval=0.02)
            back = next(t for t, _, asg in reversed(a.assigned) if asg.connectors)
            assert back - left >= backoff_s

    asyncio.run(main())


def test_a_member_the_coordinator_no_longer_knows_revokes_all_at_once(broker, group_id, wait_until_async):
    async def main():
        a, b = RoundRobinHandler("a"), RoundRobinHandler("b")
        ma, mb = _member(broker, group_id, a), _member(broker, group_id, b)
        async with ma, mb:
            await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a and b sharing the work", timeout=15, interval=0.02)
            a_work = set(a.running)
            # An operator removes a from the group (as kafka-consumer-groups --delete-members would).
            admin = AIOKafkaClient(bootstrap_servers=broker.bootstrap_servers)
            await admin.bootstrap()
            try:
                coordinator = await admin.coordinator_lookup(CoordinationType.GROUP, group_id)
                response = await admin.send(coordinator, LeaveGroupRequest(group_id, ma.member_id))
                assert response.error_code == 0
            finally:
                await admin.close()
            await wait_until_async(lambda: a.revoked_all, "a revoking its work", timeout=15, interval=0.02)
            (revoked_at, reason), = a.revoked_all
            assert reason == "unknown_member_id"
            await wait_until_async(lambda: _settled((ma, a), (mb, b)), "a back in the group", timeout=20, interval=0.02)
            given_at = [t for t, _, asg in b.assigned if a_work & set(asg.connectors)]
            assert all(revoked_at < t for t in given_at)

    asyncio.run(main())


def test_settings_that_leave_no_time_between_heartbeats_and_the_deadline_are_refused():
    with pytest.raises(ConfigError, match="heartbeat.interval.ms"):
        WorkerGroupMember({}, "g", session_timeout_ms=3000, rebalance_timeout_ms=10000, heartbeat_interval_ms=2000,
                          protocols=["compatible"], handler=RoundRobinHandler("a"))
    with pytest.raises(ConfigError, match="connect protocols must be among"):
        WorkerGroupMember({}, "g", session_timeout_ms=3000, rebalance_timeout_ms=10000, heartbeat_interval_ms=300,
                          protocols=["eager"], handler=RoundRobinHandler("a"))  # its protocol's name is "default"


def test_the_wait_between_failed_joins_doubles_up_to_retry_backoff_max_ms_with_jitter():
    member = WorkerGroupMember({"retry_backoff_ms": 100}, "g", session_timeout_ms=3000, rebalance_timeout_ms=10000,
                               heartbeat_interval_ms=300, protocols=["compatible"], handler=RoundRobinHandler("a"),
                               retry_backoff_max_ms=1000)
    for failures, expected in [(0, 0.1), (1, 0.2), (2, 0.4), (3, 0.8), (4, 1.0), (40, 1.0)]:
        waits = [member.backoff_s(failures) for _ in range(200)]
        assert expected * 0.8 <= min(waits) and max(waits) <= expected * 1.2, (failures, min(waits), max(waits))
        assert max(waits) - min(waits) > expected * 0.1  # jittered, so members do not retry in step
    # Without retry.backoff.max.ms (or one below retry.backoff.ms) the wait stays at retry.backoff.ms.
    fixed = WorkerGroupMember({"retry_backoff_ms": 100}, "g", session_timeout_ms=3000, rebalance_timeout_ms=10000,
                              heartbeat_interval_ms=300, protocols=["compatible"], handler=RoundRobinHandler("a"))
    assert max(fixed.backoff_s(5) for _ in range(50)) <= 0.12
