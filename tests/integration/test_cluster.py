"""`connectd distributed` as users run it: several worker processes, one group, the real broker and Spark.

The workers are the ``cluster`` fixture's (tests/conftest.py). What the
cluster did is read back from where Kafka Connect keeps it: the REST API of
any worker, the status topic's history, and the data the connectors moved.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

DELAY_MS = 4000  # scheduled.rebalance.max.delay.ms: how long lost work waits for its worker
SESSION_MS = 3000  # session.timeout.ms of the cluster fixture (tests/conftest.py)


def _produce(broker, topic: str, start: int, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, value=f"line {i:06d}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def _connector_in(state: str) -> Callable[[dict], bool]:
    """For a wait on a connector's status: a timeout then shows the whole status last seen."""
    return lambda status: status.get("connector", {}).get("state") == state


def test_three_workers_share_the_work_a_fourth_takes_its_share_and_a_dead_ones_work_moves(
        cluster, broker, topic_name, consume_records, wait_until):
    topics = [f"{topic_name}-{c}" for c in "ab"]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for topic in topics:
        admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(timeout=30)
        _produce(broker, topic, 0, 400, 4)
    workers = cluster()
    for name in ("w1", "w2", "w3"):
        workers.start(name)
    workers.wait_up("w1", "w2", "w3")

    out = workers.directory / "out"
    out.mkdir()
    connectors = ["a", "b"]
    for connector, topic, via in zip(connectors, topics, ("w2", "w3")):  # created on followers too
        code, body = workers.call(via, "POST", "/connectors", {"name": connector, "config": {
            "connector.class": "FileStreamSink", "topics": topic, "tasks.max": "4",
            "file": str(out / f"{connector}.txt")}})
        assert code == 201, body

    # Every task on exactly one worker, ±1 task per worker; any worker answers for all of them.
    placed = wait_until(lambda: workers.placement("w1", connectors), "8 tasks RUNNING", timeout=180)
    assert len(placed) == 8
    load = Counter(placed.values())
    assert len(load) == 3 and max(load.values()) - min(load.values()) <= 1, load
    # w3 reads the status topic on its own: it answers the same once it has read up to the others
    wait_until(lambda: workers.placement("w3", connectors), "w3 to see the same placement",
               until=lambda seen: seen == placed, timeout=30)
    for connector in connectors:
        wait_until(lambda c=connector: (out / f"{c}.txt").exists() and len((out / f"{c}.txt").read_text().splitlines()) >= 400,
                   f"sink {connector} to write 400 lines", timeout=120)

    # A fourth worker joins: it takes 2 tasks; only the tasks that move restart.
    before = Counter(r["task"] for r in workers.status_history(consume_records) if r["state"] == "RUNNING")
    workers.start("w4")
    workers.wait_up("w4")
    # The second task moving to w4 starts a moment after the first: until then the placement shows
    # 4 workers but 1 + 2 + 2 + 3, so the wait is for the balance itself.
    placed_4 = wait_until(lambda: workers.placement("w4", connectors), "the 8 tasks spread 2 a worker over 4",
                          until=lambda p: bool(p) and sorted(Counter(p.values()).values()) == [2, 2, 2, 2],
                          timeout=180)
    moved = {task for task, worker in placed_4.items() if placed[task] != worker}
    after = Counter(r["task"] for r in workers.status_history(consume_records) if r["state"] == "RUNNING")
    restarted = {task for task in placed if after[task] > before[task]}
    assert restarted == moved and len(moved) == 2, (restarted, moved)
    # w4 joined before its Spark was warm, and took work only once it was.
    w4_log = (workers.directory / "w4.log").read_text(errors="replace")
    assert w4_log.index('"event": "group_joining"') < w4_log.index('"event": "spark_warmed_up"')
    assert w4_log.index('"event": "spark_warmed_up"') < w4_log.index('"state": "RUNNING"')

    # SIGKILL a worker: its tasks run elsewhere once the delay has passed.
    victim_id = placed_4[min(placed_4)]
    victim = next(n for n, url in workers.urls.items() if url == f"http://{victim_id}")
    orphans = {task for task, worker in placed_4.items() if worker == victim_id}
    workers.kill(victim)
    survivor = next(n for n in workers.workers)
    placed_3 = wait_until(lambda: (p := workers.placement(survivor, connectors)) and victim_id not in p.values() and p,
                          "the dead worker's tasks to run elsewhere",
                          # the session's end and the delay, then two group rounds and a Spark query's start on each
                          # survivor: 10 s of those were once not enough on CI's loaded 2 cores, 20 s leave room
                          timeout=(DELAY_MS + SESSION_MS) / 1000 + 20)
    assert set(placed_3) == set(placed_4) and orphans
    for topic in topics:
        _produce(broker, topic, 400, 400, 4)
    for connector in connectors:
        wait_until(lambda c=connector: {line for line in (out / f"{c}.txt").read_text().splitlines()}
                   >= {f"line {i:06d}" for i in range(800)}, f"sink {connector} to have every line", timeout=120)

    # Never two workers for one task in one generation: the status history says who ran what when.
    owners: dict[tuple[str, int], set[str]] = defaultdict(set)
    for record in workers.status_history(consume_records):
        if record["state"] == "RUNNING":
            owners[(record["task"], record["generation"])].add(record["worker_id"])
    assert all(len(ids) == 1 for ids in owners.values()), {k: v for k, v in owners.items() if len(v) > 1}


def test_the_leader_leaves_writes_go_on_a_restarted_cluster_remembers_everything_a_follower_leaves(
        cluster, broker, topic_name, wait_until):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    _produce(broker, topic_name, 0, 200, 2)
    # Lost work would wait two minutes: a clean leave must not make anything wait for it.
    workers = cluster(**{"scheduled.rebalance.max.delay.ms": "120000"})
    for name in ("w1", "w2"):
        workers.start(name)
    workers.wait_up("w1", "w2")
    out = workers.directory / "out.txt"
    sink = {"connector.class": "FileStreamSink", "topics": topic_name, "tasks.max": "2", "file": str(out)}
    assert workers.call("w1", "POST", "/connectors", {"name": "sink", "config": sink})[0] == 201
    wait_until(lambda: workers.placement("w2", ["sink"], 2), "the sink's 2 tasks RUNNING", timeout=180)

    # SIGTERM the leader: the other worker leads, and takes writes at once.
    leader = workers.leader()
    follower = next(n for n in workers.workers if n != leader)
    assert workers.terminate(leader) == 0
    code, body = workers.call(follower, "POST", "/connectors", {"name": "paused-sink", "initial_state": "PAUSED",
                                                                "config": {**sink, "tasks.max": "1",
                                                                           "file": str(out) + ".2"}})
    assert code == 201, body
    assert workers.leader() == follower
    wait_until(lambda: workers.status(follower, "paused-sink"), "paused-sink PAUSED",
               until=_connector_in("PAUSED"), timeout=120)
    follower_id = workers.urls[follower].removeprefix("http://")
    wait_until(lambda: set(workers.placement(follower, ["sink"], 2).values()) == {follower_id},
               "the leaver's tasks RUNNING on the other worker, without the delay", timeout=60)

    # Writes through either worker of a cluster, the leader answering for the follower.
    workers.start(leader)
    workers.wait_up(leader)
    assert workers.call(leader, "PUT", "/connectors/sink/config", {**sink, "tasks.max": "1"})[0] == 200
    wait_until(lambda: workers.placement(follower, ["sink"], 1), "the sink reconfigured to 1 task", timeout=120)
    assert workers.call(follower, "PUT", "/connectors/sink/stop")[0] == 204
    wait_until(lambda: workers.status(leader, "sink"), "sink STOPPED",
               until=_connector_in("STOPPED"), timeout=120)

    # The whole cluster stops and starts again: everything comes back from the topics alone. w1
    # first, alone: it owns the stopped sink, and keeps owning it (nothing running) when w2 joins.
    workers.stop_all(settle=True)
    workers.start("w1")
    workers.wait_up("w1")
    wait_until(lambda: workers.status("w1", "sink"), "sink STOPPED again",
               until=_connector_in("STOPPED"), timeout=120)
    workers.start("w2")
    workers.wait_up("w2")
    code, listed = workers.call("w2", "GET", "/connectors?expand=info&expand=status")
    assert code == 200 and set(listed) == {"sink", "paused-sink"}
    assert listed["sink"]["info"]["config"]["tasks.max"] == "1"
    wait_until(lambda: workers.settled(members=2), "the group to settle with w2 in it", timeout=60)
    wait_until(lambda: workers.status("w1", "paused-sink"), "paused-sink PAUSED again",
               until=_connector_in("PAUSED"), timeout=120)
    assert workers.call("w1", "GET", "/connectors/paused-sink/tasks")[1][0]["config"]["file"] == str(out) + ".2"
    # A cluster-wide log level reaches every worker (KIP-976).
    assert workers.call("w2", "PUT", "/admin/loggers/connectd.cluster?scope=cluster", {"level": "DEBUG"})[0] == 204
    wait_until(lambda: workers.call("w1", "GET", "/admin/loggers/connectd.cluster")[1].get("level") == "DEBUG",
               "w1 to apply the cluster's log level", timeout=30)
    # Offsets too: resumed, the sink goes on from its committed offsets, not from the start.
    assert workers.call("w1", "PUT", "/connectors/sink/resume")[0] == 202
    _produce(broker, topic_name, 200, 100, 2)
    wait_until(lambda: len(out.read_text().splitlines()) >= 300, "300 lines in the sink's file", timeout=180)
    assert sorted(set(out.read_text().splitlines())) == [f"line {i:06d}" for i in range(300)]

    # A new config that changes only the transforms leaves the task configs as they were: the tasks
    # restart with it all the same (KAFKA-9228), rather than keep the transforms they started with.
    hoisted = {**sink, "tasks.max": "1", "transforms": "hoist", "transforms.hoist.field": "line",
               "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value"}
    assert workers.call("w1", "PUT", "/connectors/sink/config", hoisted)[0] == 200
    produced = iter(range(300, 10_000, 10))

    def hoisted_lines() -> list[str]:
        _produce(broker, topic_name, next(produced), 10, 2)  # until the restarted task reads some
        return [line for line in out.read_text().splitlines() if line.startswith("Struct{")]

    wait_until(hoisted_lines, "records written through the new transform", timeout=120)

    # A follower leaves cleanly: its work goes to the leader at once, not after the 2-minute delay.
    leader = workers.leader()
    follower = next(n for n in workers.workers if n != leader)
    leader_id, follower_id = (workers.urls[n].removeprefix("http://") for n in (leader, follower))

    def owners() -> set[str]:
        found = set()
        for connector in ("sink", "paused-sink"):
            status = workers.status(leader, connector)
            found |= {status.get("connector", {}).get("worker_id")} | {t["worker_id"] for t in status.get("tasks", [])}
        return found

    assert follower_id in wait_until(owners, "both workers holding work", until=lambda ids: ids == {leader_id, follower_id},
                                     timeout=60)
    assert workers.terminate(follower) == 0
    wait_until(owners, "the follower's work on the leader", until=lambda ids: ids == {leader_id}, timeout=60)
    wait_until(lambda: workers.placement(leader, ["sink"], 1), "the sink's task RUNNING on the leader", timeout=60)


def test_file_source_to_sink_under_load_while_workers_join_and_leave_and_offsets_live_in_the_topic(
        cluster, broker, topic_name, consume_records, wait_until):
    import threading

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 3, 1)])[topic_name].result(timeout=30)
    workers = cluster()
    for name in ("w1", "w2"):
        workers.start(name)
    workers.wait_up("w1", "w2")
    source_file, out = workers.directory / "in.txt", workers.directory / "out.txt"
    source_file.write_text("")
    source = {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic_name}
    code, body = workers.call("w1", "POST", "/connectors", {"name": "source", "config": source})
    assert code == 201, body
    code, body = workers.call("w2", "POST", "/connectors", {"name": "sink", "config": {
        "connector.class": "FileStreamSink", "topics": topic_name, "tasks.max": "2", "file": str(out)}})
    assert code == 201, body

    written = 0
    stop_writing = threading.Event()

    def write() -> None:  # a steady load while the cluster changes
        nonlocal written
        while not stop_writing.is_set():
            with open(source_file, "a") as f:
                f.write("".join(f"line {i:06d}\n" for i in range(written, written + 500)))
            written += 500
            stop_writing.wait(0.2)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 1000, "lines flowing", timeout=180)
        workers.start("w3")
        workers.wait_up("w3")
        wait_until(lambda: "127.0.0.1:" + workers.urls["w3"].rsplit(":", 1)[1] in json.dumps(
            [workers.status("w1", c) for c in ("source", "sink")]), "w3 to run something", timeout=120)
        assert workers.terminate("w1") == 0  # a clean leave, under load
    finally:
        stop_writing.set()
        writer.join()
    expected = {f"line {i:06d}" for i in range(written)}
    wait_until(lambda: set(out.read_text().splitlines()) >= expected, f"all {written} lines in the sink's file",
               timeout=240)

    # The source's offsets are in the offsets topic: any worker reads them; a follower's change reaches the leader.
    assert workers.call("w2", "PUT", "/connectors/source/stop")[0] == 204
    position = source_file.stat().st_size
    wait_until(lambda: workers.call("w3", "GET", "/connectors/source/offsets")[1],
               "the source's offsets", until=lambda body: body and body.get("offsets") and
               body["offsets"][0]["offset"] == {"position": position}, timeout=60)
    # Deleted and created again under the same name, it resumes from its offsets (the seeds' scenario).
    assert workers.call("w3", "DELETE", "/connectors/source")[0] == 204
    with open(source_file, "a") as f:
        f.write("".join(f"line {i:06d}\n" for i in range(written, written + 100)))
    # w2 answers 409 (exists) until it has read the deletion, as Kafka Connect's workers do.
    wait_until(lambda: "source" not in workers.call("w2", "GET", "/connectors")[1], "w2 to see the deletion")
    assert workers.call("w2", "POST", "/connectors", {"name": "source", "config": source})[0] == 201
    wait_until(lambda: set(out.read_text().splitlines()) >= {f"line {i:06d}" for i in range(written + 100)},
               "the lines written while the source was away", timeout=180)
    values = Counter(m.value().decode() for m in consume_records(topic_name))
    assert values["line 000000"] == 1  # not read again from the start


def _protocols(workers, name: str) -> list[str]:
    """The group protocol of each JoinGroup in worker *name*'s log, oldest first."""
    log = (workers.directory / f"{name}.log").read_text(errors="replace")
    return [json.loads(line)["protocol"] for line in log.splitlines() if '"event": "group_joined"' in line]


def test_a_cluster_on_eager_is_rolled_over_to_sessioned_one_worker_at_a_time(
        cluster, broker, topic_name, wait_until):
    """Kafka Connect's way from eager to cooperative rebalancing, with connectd's workers: all on
    connect.protocol=eager, then restarted one at a time on sessioned. While any worker speaks only
    eager the group runs it (every rebalance stops all work and deals it out again); the sink goes on
    writing every line through each step."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=30)
    workers = cluster(**{"connect.protocol": "eager"})
    for name in ("w1", "w2"):
        workers.start(name)
    workers.wait_up("w1", "w2")
    out = workers.directory / "out.txt"
    code, body = workers.call("w1", "POST", "/connectors", {"name": "s", "config": {
        "connector.class": "FileStreamSink", "topics": topic_name, "tasks.max": "2", "file": str(out)}})
    assert code == 201, body

    def written(count: int) -> bool:
        return out.exists() and {line for line in out.read_text().splitlines()} >= {
            f"line {i:06d}" for i in range(count)}

    def running_on_both() -> dict[str, str]:
        placed = workers.placement("w1", ["s"], tasks_each=2)
        return placed if len(set(placed.values())) == 2 else {}

    sent = 0
    for step, rolled in enumerate([None, "w1", "w2"]):
        if rolled is not None:
            workers.terminate(rolled)
            workers.start(rolled, **{"connect.protocol": "sessioned"})
            workers.wait_up(rolled)
        # eager deals round-robin over the 2 members: the connector and a task on one, a task on the other
        wait_until(running_on_both, f"step {step}: both tasks RUNNING, one a worker", timeout=180)
        _produce(broker, topic_name, sent, 200, 2)
        sent += 200
        wait_until(lambda n=sent: written(n), f"step {step}: the sink to write {sent} lines", timeout=120)
        # the group's protocol: eager while a worker speaks only it, whichever worker was the first
        if rolled != "w2":
            assert {_protocols(workers, n)[-1] for n in ("w1", "w2")} == {"default"}
    # Every worker offers sessioned now. Kafka's coordinator moves the group to it at the next rebalance;
    # the dev broker keeps the protocol a group was first formed with for as long as it knows the group
    # (tests/cluster/test_membership.py shows what each worker offers).
