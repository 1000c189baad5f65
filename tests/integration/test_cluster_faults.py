"""A Connect cluster under faults: real worker processes, the real broker, real Spark.

Each scenario runs a FileStreamSource (1 task) into a 6-partition topic and a
sink with 6 tasks whose instances write down who wrote each record and when
(``tests/support/ledger_sink.py``), under a steady load of lines appended to
the source's file, and checks the three things a Connect runtime owes its
users whatever the fault:

- nothing is lost: every line appended reaches the sink;
- nothing runs twice at once: the workers that wrote each partition, in
  turn, are workers its task was RUNNING on, in that order (the status
  topic's history) — two workers writing one partition at once would show
  as turns that go back and forth;
- the status is true at the end: every task RUNNING, on a live worker, and
  moving data (lines appended at the end arrive).

What each fault does, and what a user may see meanwhile, is in
docs/cluster.md ("Faults").
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from ledger_sink import read_ledger, writer_changes

from connectd.connector import TopicPartition
from connectd.runtime.sink.task import assign_partitions

pytestmark = pytest.mark.integration

PARTITIONS = 6
LINES_PER_APPEND = 200
APPEND_EVERY_S = 0.1


class Appender:
    """Appends numbered lines to the source's file on a thread of its own, until stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="appender", daemon=True)

    def __enter__(self) -> Appender:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> int:
        """Stop appending; how many lines were written."""
        self._stop.set()
        self._thread.join()
        return self.written

    def append(self, count: int) -> None:
        with open(self.path, "a", encoding="utf-8") as out:
            out.write("".join(f"line {i:07d}\n" for i in range(self.written, self.written + count)))
        self.written += count

    def _run(self) -> None:
        while not self._stop.is_set():
            self.append(LINES_PER_APPEND)
            self._stop.wait(APPEND_EVERY_S)


@pytest.fixture
def pipeline(cluster, tmp_path, topic_name) -> Iterator[Callable[..., Pipeline]]:
    made: list[Pipeline] = []

    def make(workers, **sink_extra: str) -> Pipeline:
        made.append(Pipeline(workers, tmp_path, topic_name, **sink_extra))
        return made[-1]

    yield make


class Pipeline:
    """The source and the ledger sink of one scenario, over the cluster *workers*."""

    def __init__(self, workers, directory: Path, topic: str, **sink_extra: str) -> None:
        self.workers = workers
        self.topic = topic
        self.source_file = directory / "in.txt"
        self.source_file.write_text("")
        self.ledger = directory / "ledger"
        self.ledger.mkdir()
        self.source = {"connector.class": "FileStreamSource", "file": str(self.source_file), "topic": topic,
                       "topic.creation.default.partitions": str(PARTITIONS),
                       "topic.creation.default.replication.factor": "1"}
        self.sink = {"connector.class": "FileStreamSink", "topics": topic, "tasks.max": str(PARTITIONS),
                     "file": str(directory / "unused.txt"), "task.class": "ledger_sink.LedgerSinkTask",
                     "ledger.dir": str(self.ledger), **sink_extra}

    def create(self, via_source: str, via_sink: str) -> None:
        """Both connectors, the sink right after the source: before its topic exists."""
        for name, config, via in (("source", self.source, via_source), ("sink", self.sink, via_sink)):
            code, body = self.workers.call(via, "POST", "/connectors", {"name": name, "config": config})
            assert code == 201, body

    def delivered(self) -> set[str]:
        return {entry.value for entry in read_ledger(self.ledger)}

    def wait_delivered(self, lines: int, timeout: float = 240) -> None:
        """Wait for lines 0 … *lines* - 1 in the sink; a task FAILED meanwhile fails the test at once."""
        expected = {f"line {i:07d}" for i in range(lines)}
        looked = [0.0]

        def missing() -> set[str]:
            if time.monotonic() - looked[0] >= 5:
                looked[0] = time.monotonic()
                self.assert_no_task_failed()
            return expected - self.delivered()

        self.workers.wait_until(missing, f"all {lines} lines in the sink", until=lambda left: not left,
                                timeout=timeout)

    def assert_no_task_failed(self) -> None:
        """No task of either connector FAILED, as the first live worker answers (its trace if one did)."""
        asking = sorted(self.workers.workers)[0]
        for connector in ("source", "sink"):
            for task in self.workers.status(asking, connector).get("tasks", []):
                assert task["state"] != "FAILED", f"{connector}-{task['id']} FAILED: {task.get('trace', '')[:2000]}"

    def source_worker(self, asking: str) -> str:
        """The name of the worker the source's task is RUNNING on, as *asking* answers."""
        status = self.workers.wait_until(lambda: self.workers.status(asking, "source"), "the source's task RUNNING",
                                         until=lambda s: [t["state"] for t in s.get("tasks", [])] == ["RUNNING"],
                                         timeout=120)
        return self.workers.name_of(status["tasks"][0]["worker_id"])

    def all_running(self, asking: str) -> dict[str, str]:
        """task → worker name once every task of both connectors is RUNNING on a live worker; else {}."""
        placed = self.workers.placement(asking, ["sink"], PARTITIONS)
        source = self.workers.placement(asking, ["source"], 1)
        if not placed or not source:
            return {}
        live = {self.workers.urls[name].removeprefix("http://") for name in self.workers.workers}
        if not set(placed.values()) | set(source.values()) <= live:
            return {}
        return {task: self.workers.name_of(worker) for task, worker in {**placed, **source}.items()}

    def assert_true_at_the_end(self, appender: Appender) -> None:
        """Every task RUNNING on a live worker, every worker answering the same, and data moving."""
        asking = sorted(self.workers.workers)
        placed = self.workers.wait_until(lambda: self.all_running(asking[0]), "every task RUNNING on a live worker",
                                         timeout=120)
        for name in asking[1:]:
            self.workers.wait_until(lambda n=name: self.all_running(n), f"{name} to answer the same placement",
                                    until=lambda seen: seen == placed, timeout=60)
        appender.append(PARTITIONS * 100)  # RUNNING means moving data: these arrive too
        self.wait_delivered(appender.written, timeout=120)

    def assert_nothing_ran_twice_at_once(self, consume_records) -> None:
        """Each partition's writers, in turn, are workers its task was RUNNING on, in that order."""
        ran_on: dict[int, list[str]] = {}
        for record in self.workers.status_history(consume_records):
            if record["task"].startswith("sink-") and record["state"] == "RUNNING":
                turns = ran_on.setdefault(int(record["task"].removeprefix("sink-")), [])
                name = self.workers.name_of(record["worker_id"])
                if not turns or turns[-1] != name:
                    turns.append(name)
        partitions = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
        owner = {tp.partition: task for task in range(PARTITIONS) for tp in assign_partitions(partitions, task, PARTITIONS)}
        for (_, partition), writers in writer_changes(read_ledger(self.ledger)).items():
            assert _in_order_within(writers, ran_on.get(owner[partition], [])), (
                f"partition {partition} was written by {writers}, its task ran on {ran_on.get(owner[partition])}")


def _in_order_within(turns: list[str], sequence: list[str]) -> bool:
    """Whether *turns* is a subsequence of *sequence*."""
    remaining = iter(sequence)
    return all(any(turn == item for item in remaining) for turn in turns)


def test_a_sink_before_its_topic_the_source_worker_killed_a_worker_joining_the_leader_killed_one_frozen(
        cluster, pipeline, consume_records):
    """Faults one after another under one steady load (one cluster: each costs three Spark JVMs' start):

    1. issue 11's case: the sink's tasks start with no partition and pick the topic up once the source
       creates it; the source's worker dies mid-stream (SIGKILL); a fourth worker joins under load;
    2. the leader dies (SIGKILL);
    3. a worker is frozen (SIGSTOP) for longer than its session and the rebalance delay, its work
       starting elsewhere meanwhile, then woken (SIGCONT). It plans no batch when it wakes: its lease
       ended (connectd.runtime.fencing). At most its batch in flight when it froze is finished: none
       of the records appended while it was frozen is written by it.
    """
    workers = cluster()
    for name in ("w1", "w2", "w3"):
        workers.start(name)
    workers.wait_up("w1", "w2", "w3")
    flow = pipeline(workers)
    with Appender(flow.source_file) as appender:
        flow.create("w1", "w2")
        workers.wait_until(lambda: len(flow.delivered()) >= 2000, "lines flowing through the sink", timeout=180)
        victim = flow.source_worker("w1")
        workers.kill(victim)
        survivor = next(iter(workers.workers))
        workers.start("w4")
        workers.wait_up("w4")
        workers.wait_until(lambda: flow.source_worker(survivor) != victim, "the source running elsewhere",
                           timeout=120)
        workers.wait_until(lambda: flow.all_running(survivor), "every task RUNNING with w4 in", timeout=120)

        leader = workers.leader()
        workers.kill(leader)
        survivors = sorted(workers.workers)
        placed = workers.wait_until(lambda: flow.all_running(survivors[0]), "the leader's work on the two others",
                                    timeout=120)
        frozen = max(survivors, key=lambda name: list(placed.values()).count(name))  # the busier one
        awake = next(name for name in survivors if name != frozen)
        placed_at = time.time_ns()
        workers.wait_until(lambda: any(e.worker == frozen and e.time_ns > placed_at for e in read_ledger(flow.ledger)),
                           f"{frozen} writing records", timeout=60)
        workers.freeze(frozen)
        frozen_at, lines_at_freeze = time.time_ns(), appender.written
        try:
            workers.wait_until(lambda: set(flow.all_running(awake).values()) == {awake},
                               "the frozen worker's work RUNNING on the other", timeout=120)
        finally:
            workers.thaw(frozen)
        workers.wait_until(lambda: workers.settled(members=2), "the woken worker back in the group", timeout=120)
    flow.wait_delivered(appender.written)
    flow.assert_true_at_the_end(appender)
    flow.assert_nothing_ran_twice_at_once(consume_records)
    # The frozen worker's task instances from before the freeze (it gets work again once back in the
    # group: new instances, rightly given what arrived meanwhile).
    entries = read_ledger(flow.ledger)
    first_write: dict[str, int] = {}
    for entry in entries:
        first_write.setdefault(entry.instance, entry.time_ns)
    assert any(e.worker == frozen and e.time_ns < frozen_at for e in entries)  # it was writing when it froze
    zombie = [e for e in entries if e.worker == frozen and first_write[e.instance] < frozen_at and e.time_ns > frozen_at]
    late = sorted({e.value for e in zombie if int(e.value.split()[1]) >= lines_at_freeze})
    assert not late, f"the frozen worker wrote {len(late)} lines appended while it was frozen: {late[:5]}"
    log = (workers.directory / f"{frozen}.log").read_text(errors="replace")
    assert '"event": "group_membership_lost"' in log and '"reason": "session_deadline"' in log


#: How long the broker stays away in the broker test (issue 11's figure).
BROKER_AWAY_S = 20.0


def test_the_broker_away_for_20_seconds(lasting_broker, cluster, pipeline, consume_records):
    """The Kafka cluster stops for 20 s and starts again: each worker's membership ends (its tasks
    stop before their session could), and everything comes back. (The broker is set up before the
    cluster, so that the workers stop, at the end, while it still runs.)"""
    workers = cluster(on=lasting_broker)
    for name in ("w1", "w2"):
        workers.start(name)
    workers.wait_up("w1", "w2")
    flow = pipeline(workers)
    with Appender(flow.source_file) as appender:
        flow.create("w1", "w2")
        workers.wait_until(lambda: len(flow.delivered()) >= 1000, "lines flowing through the sink", timeout=180)
        lasting_broker.stop()
        stopped = time.monotonic()
        for name in ("w1", "w2"):
            workers.wait_until(lambda n=name: '"event": "group_membership_lost"' in
                               (workers.directory / f"{n}.log").read_text(errors="replace"),
                               f"{name} to stop its work, its membership lost", timeout=60)
        time.sleep(max(BROKER_AWAY_S - (time.monotonic() - stopped), 0))  # the outage under test lasts 20 s
        lasting_broker.start()
        workers.wait_until(lambda: workers.settled(members=2), "the group formed again", timeout=120)
    flow.wait_delivered(appender.written)
    flow.assert_true_at_the_end(appender)
    flow.assert_nothing_ran_twice_at_once(lambda topic, **kw: consume_records(
        topic, bootstrap_servers=lasting_broker.bootstrap_servers, **kw))


def test_exactly_once_a_frozen_then_a_killed_source_worker_every_line_is_seen_once_zombies_fenced(
        cluster, tmp_path, topic_name, consume_records):
    """Issue 13, with ``exactly.once.source.support=enabled``:

    1. each connector's first generation of tasks starts after the leader's round of fencing,
       asked for by the follower's tasks too (``PUT /connectors/{c}/fence``, signed);
    2. the source's worker is frozen (SIGSTOP) between two transactions for longer than its session:
       the task starts on the other worker, whose producer fences the frozen one's; lines appended
       meanwhile arrive from there; the frozen worker wakes (SIGCONT) and rejoins, writing nothing
       of its own (its lease ended; its producer is fenced);
    3. the source's worker dies (SIGKILL) while lines stream in; its task starts again on the other
       worker from the offsets committed with its last transaction. A read_committed consumer sees
       every line once: none lost, none twice (at least once, the lines of the batch in flight
       would come again);
    4. a connector goes from 2 tasks to 1: before the new one starts, the leader fences the
       transactional ids of both old ones; a zombie of old task 1 (a producer of its id from
       before) can no longer commit.

    Every leader writes the config topic in transactions (its write privileges claimed).
    """
    workers = cluster(**{"exactly.once.source.support": "enabled"})
    for name in ("w1", "w2"):
        workers.start(name)
    workers.wait_up("w1", "w2")
    source_file = tmp_path / "in.txt"
    source_file.write_text("")
    one_partition = {"exactly.once.support": "required", "topic.creation.default.partitions": "1",
                     "topic.creation.default.replication.factor": "1"}
    config = {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic_name, **one_partition}
    generated = f"{topic_name}-gen"
    # A transaction a record: every 250 ms on average a task, so that its partition holds a few thousand
    # transactions at the end, not tens of thousands (the dev broker reads a partition of ten thousand
    # transactions slower and slower: docs/exactly-once.md, "On the dev broker").
    datagen = {"connector.class": "io.confluent.kafka.connect.datagen.DatagenConnector", "kafka.topic": generated,
               "quickstart": "users", "max.interval": "500", "tasks.max": "2", **one_partition}
    for name, body in (("source", config), ("gen", datagen)):
        code, answer = workers.call("w1", "POST", "/connectors", {"name": name, "config": body})
        assert code == 201, answer
    leader = workers.leader()
    follower = next(name for name in ("w1", "w2") if name != leader)
    appender = Appender(source_file)
    appender.append(1000)
    consume_records(topic_name, 1000, partitions=1, timeout=180)

    def on_follower() -> list[str]:
        placed = {**workers.placement("w1", ["gen"], 2), **workers.placement("w1", ["source"], 1)}
        return [task for task, worker in placed.items() if worker == workers.urls[follower].removeprefix("http://")]

    # Balanced once both workers are in the group's assignment (a worker that joined late gets its
    # share in the rebalance after, as in Kafka Connect).
    workers.wait_until(on_follower, "three tasks on two workers: the follower runs one", timeout=120)
    # The leader logs a round after it has read its own task-count record back, which may be after a
    # task elsewhere has read it and started: its log is awaited, not read at once.
    rounds = workers.wait_until(
        lambda: (workers.directory / f"{leader}.log").read_text(errors="replace").count(
            '"event": "zombie_fencing_recorded"'),
        "the leader's two rounds of fencing, one per connector", until=lambda count: count >= 2, timeout=60)
    assert rounds == 2
    leader_log = (workers.directory / f"{leader}.log").read_text(errors="replace")
    follower_log = (workers.directory / f"{follower}.log").read_text(errors="replace")
    assert '"event": "zombie_fencing_recorded"' not in follower_log  # it asked the leader
    assert '"event": "config_topic_write_privileges_claimed"' in leader_log  # it writes in transactions

    # 2. Frozen between transactions: every line so far is in, the file has no new line.
    frozen = workers.name_of(workers.status("w1", "source")["tasks"][0]["worker_id"])
    awake = next(name for name in ("w1", "w2") if name != frozen)
    workers.freeze(frozen)
    try:
        appender.append(1000)
        workers.wait_until(lambda: workers.status(awake, "source"), "the source RUNNING on the awake worker",
                           until=lambda s: [(t["state"], t["worker_id"]) for t in s.get("tasks", [])]
                           == [("RUNNING", workers.urls[awake].removeprefix("http://"))], timeout=120)
        consume_records(topic_name, 2000, partitions=1, timeout=120)
    finally:
        workers.thaw(frozen)
    workers.wait_until(lambda: workers.settled(members=2), "the woken worker back in the group", timeout=120)

    # 3. Killed mid-stream.
    with appender:
        consume_records(topic_name, appender.written + 1000, partitions=1, timeout=120)
        status = workers.status("w1", "source")
        victim = workers.name_of(status["tasks"][0]["worker_id"])
        survivor = next(name for name in ("w1", "w2") if name != victim)
        workers.kill(victim)
        workers.wait_until(lambda: workers.status(survivor, "source"), "the source RUNNING on the survivor",
                           until=lambda s: [(t["state"], t["worker_id"]) for t in s.get("tasks", [])]
                           == [("RUNNING", workers.urls[survivor].removeprefix("http://"))], timeout=120)
        consume_records(topic_name, appender.written + 2000, partitions=1, timeout=120)  # streaming there
    lines = appender.written
    seen = Counter(m.value().decode() for m in consume_records(topic_name, lines, partitions=1, timeout=120,
                                                                linger=3.0))
    assert set(seen) == {f"line {i:07d}" for i in range(lines)}
    assert [line for line, times in seen.items() if times > 1] == []
    frozen_log = (workers.directory / f"{frozen}.log").read_text(errors="replace")
    assert '"event": "group_membership_lost"' in frozen_log

    # 4. A zombie of gen's task 1 (paused first, so that its own task does not fail meanwhile).
    assert workers.call(survivor, "PUT", "/connectors/gen/pause")[0] == 202
    workers.wait_until(lambda: workers.status(survivor, "gen"), "gen PAUSED",
                       until=lambda s: [t["state"] for t in s.get("tasks", [])] == ["PAUSED", "PAUSED"], timeout=120)
    zombie = Producer({"bootstrap.servers": workers.settings["bootstrap.servers"],
                       "transactional.id": f"{workers.settings['group.id']}-gen-1"})
    zombie.init_transactions(30)
    code, answer = workers.call(survivor, "PUT", "/connectors/gen/config", {**datagen, "tasks.max": "1"})
    assert code == 200, answer
    assert workers.call(survivor, "PUT", "/connectors/gen/resume")[0] == 202
    workers.wait_until(lambda: workers.status(survivor, "gen"), "gen's one task RUNNING",
                       until=lambda s: [t["state"] for t in s.get("tasks", [])] == ["RUNNING"], timeout=120)
    survivor_log = (workers.directory / f"{survivor}.log").read_text(errors="replace")
    assert '"event": "config_topic_write_privileges_claimed"' in survivor_log  # the leader now, if not before
    fencing = [json.loads(line) for line in survivor_log.splitlines() if '"event": "zombie_fencing"' in line]
    assert [(e["connector"], e["transactional_ids"], e["tasks_now"]) for e in fencing] == [("gen", 2, 1)]
    zombie.begin_transaction()
    zombie.produce(generated, b"from a zombie")
    with pytest.raises(KafkaException):
        zombie.commit_transaction(30)
    counts = [json.loads(m.value()) for m in consume_records(workers.settings["config.storage.topic"], timeout=30)
              if m.key() == b"tasks-fencing-gen"]
    assert counts == [{"task-count": 2}, {"task-count": 1}]
    generated_before = len(consume_records(generated, timeout=30))
    records = consume_records(generated, generated_before + 50, timeout=60)  # the new task produces
    assert b"from a zombie" not in {m.value() for m in records}
