"""`connectd distributed` as users run it: several worker processes, one group, the real broker and Spark.

Each worker is its own process group (its Spark JVM in it), so SIGKILL of the
group is a machine dying and SIGTERM of the worker alone is systemd stopping
it (KillMode=mixed). What the cluster did is read back from where Kafka
Connect keeps it: the REST API of any worker, the status topic's history,
and the data the connectors moved.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

DELAY_MS = 4000  # scheduled.rebalance.max.delay.ms: how long lost work waits for its worker
SESSION_MS = 2000  # session.timeout.ms of the shared distributed worker config


class Cluster:
    """Worker processes sharing one group and its internal topics."""

    def __init__(self, directory: Path, worker_config, wait_until, **overrides: str) -> None:
        self.directory = directory
        self.wait_until = wait_until
        # One group for every worker: the settings are made once, then each worker gets a port.
        self.settings = worker_config.settings(
            "distributed", **{"scheduled.rebalance.max.delay.ms": str(DELAY_MS), "spark.master": "local[1]",
                              "spark.sql.shuffle.partitions": "1", "rest.advertised.host.name": "127.0.0.1",
                              "task.shutdown.graceful.timeout.ms": "10000", **overrides})
        self.settings.pop("listeners")
        self.workers: dict[str, subprocess.Popen] = {}
        self.urls: dict[str, str] = {}

    def start(self, name: str) -> str:
        """Start worker *name* (again, with the same port, if it ran before); its REST URL."""
        from connectd.broker import free_port

        url = self.urls.get(name) or f"http://127.0.0.1:{free_port()}"
        self.urls[name] = url
        path = self.directory / f"{name}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in {**self.settings, "listeners": url}.items()))
        log = open(self.directory / f"{name}.log", "ab")
        self.workers[name] = subprocess.Popen([sys.executable, "-m", "connectd.cli", "distributed", str(path)],
                                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return url

    def wait_up(self, *names: str) -> None:
        for name in names:
            self.wait_until(lambda n=name: self._rebound(n) or self.health(n) == 200, f"worker {name} to be healthy",
                            timeout=120)

    def _rebound(self, name: str) -> bool:
        """A free port picked for a worker may be taken by another process before the worker binds
        it: the worker then exits saying so, and starts again on another port. Always false."""
        process = self.workers[name]
        log = self.directory / f"{name}.log"
        if process.poll() is not None and "address already in use" in log.read_text(errors="replace"):
            log.rename(log.with_suffix(f".{process.pid}.log"))
            del self.urls[name]
            self.start(name)
        return False

    def health(self, name: str) -> int | None:
        self._check_alive(name)
        try:
            return self.call(name, "GET", "/health")[0]
        except OSError:
            return None

    def call(self, name: str, method: str, path: str, body: object = None) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.urls[name] + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=90) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            text = exc.read()
            return exc.code, json.loads(text) if text else None

    def status(self, name: str, connector: str) -> dict:
        code, body = self.call(name, "GET", f"/connectors/{connector}/status")
        return body if code == 200 else {}

    def kill(self, name: str) -> None:
        """SIGKILL the worker with its Spark JVM: a machine dying."""
        process = self.workers.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)

    def terminate(self, name: str) -> int:
        """SIGTERM the worker alone: it stops its tasks and Spark, and leaves the group."""
        process = self.workers.pop(name)
        process.send_signal(signal.SIGTERM)
        code = process.wait(120)
        _kill_group(process)
        return code

    def stop_all(self, settle: bool = False) -> None:
        """Stop every worker. With *settle*, one at a time, each once the others form a settled
        group: the dev broker (tansu) keeps a leader that leaves while another member's
        JoinGroup is held as the leader of the next generation, and every later SyncGroup of
        the group then fails with REBALANCE_IN_PROGRESS — a restarted cluster would never
        form. Kafka elects another leader. Without *settle*, all stop at once."""
        if not settle:
            stopping = list(self.workers.values())
            self.workers.clear()
            for process in stopping:
                process.send_signal(signal.SIGTERM)
            for process in stopping:
                try:
                    process.wait(120)
                except subprocess.TimeoutExpired:
                    pass
                _kill_group(process)
            return
        for name in list(self.workers):
            self.wait_until(self.group_events, "the group to settle", until=_settled, timeout=60)
            try:
                self.terminate(name)
            except subprocess.TimeoutExpired:
                self.kill(name)

    def group_events(self) -> dict[str, tuple[str, int]]:
        """Each running worker's last group event and the generation it names."""
        last = {}
        for name in self.workers:
            for line in (self.directory / f"{name}.log").read_text(errors="replace").splitlines():
                if '"event": "group_' in line:
                    event = json.loads(line)
                    last[name] = (event["event"], event.get("generation", -1))
        return last

    def leader(self) -> str:
        """The worker whose log says it leads the latest generation it joined."""
        leaders = {}
        for name in self.workers:
            for line in (self.directory / f"{name}.log").read_text(errors="replace").splitlines():
                if '"event": "group_assigned"' in line:
                    event = json.loads(line)
                    leaders[name] = (event["generation"], event["leader"])
        generation, member = max(leaders.values())
        return next(name for name in self.workers if f"-{self.urls[name].removeprefix('http://')}-" in member)

    def _check_alive(self, name: str) -> None:
        process = self.workers[name]
        if process.poll() is not None:
            log = (self.directory / f"{name}.log").read_text(errors="replace")[-3000:]
            raise AssertionError(f"worker {name} exited with {process.returncode}:\n{log}")


def _settled(events: dict[str, tuple[str, int]]) -> bool:
    """Whether every worker's last group event is its assignment, all of one generation."""
    return all(event == "group_assigned" for event, _ in events.values()) and \
        len({generation for _, generation in events.values()}) <= 1


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever it left behind (Spark's JVM) goes with it
    except ProcessLookupError:
        pass


@pytest.fixture
def cluster(request, tmp_path, worker_config, wait_until, broker):
    clusters: list[Cluster] = []

    def make(**overrides: str) -> Cluster:
        made = Cluster(tmp_path, worker_config, wait_until, **overrides)
        clusters.append(made)
        return made

    yield make
    for made in clusters:
        made.stop_all()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:  # what each worker did last, for the failure's report
        for log in sorted(tmp_path.glob("*.log")):
            events = [line for line in log.read_text(errors="replace").splitlines() if _TELLING.search(line)]
            print(f"--- {log.name}: its last {min(len(events), 60)} telling events", *events[-60:], sep="\n")


_TELLING = re.compile(r'"event": "(status_changed|assignment_applied|group_assigned|[a-z_]*(failed|error|lost)[a-z_]*)"'
                      r'|"level": "(error|warning)"')


def _produce(broker, topic: str, start: int, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, value=f"line {i:06d}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def _connector_in(state: str) -> Callable[[dict], bool]:
    """For a wait on a connector's status: a timeout then shows the whole status last seen."""
    return lambda status: status.get("connector", {}).get("state") == state


def _status_history(broker, topic: str, consume_records) -> list[dict]:
    """Every task status record of the status topic, oldest first per key."""
    history = []
    for message in consume_records(topic, partitions=None, timeout=30):
        key = message.key().decode()
        if key.startswith("status-task-") and message.value() is not None:
            history.append({"task": key.removeprefix("status-task-"), **json.loads(message.value())})
    return history


def _placement(cluster: Cluster, name: str, connectors: list[str], tasks_each: int = 4) -> dict[str, str]:
    """task → worker_id once every connector has its *tasks_each* tasks RUNNING; empty until then."""
    placed = {}
    for connector in connectors:
        status = cluster.status(name, connector)
        tasks = status.get("tasks", [])
        if len(tasks) != tasks_each or any(t["state"] != "RUNNING" for t in tasks):
            return {}
        placed.update({f"{connector}-{t['id']}": t["worker_id"] for t in tasks})
    return placed


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
    placed = wait_until(lambda: _placement(workers, "w1", connectors), "8 tasks RUNNING", timeout=180)
    assert len(placed) == 8
    load = Counter(placed.values())
    assert len(load) == 3 and max(load.values()) - min(load.values()) <= 1, load
    # w3 reads the status topic on its own: it answers the same once it has read up to the others
    wait_until(lambda: _placement(workers, "w3", connectors), "w3 to see the same placement",
               until=lambda seen: seen == placed, timeout=30)
    for connector in connectors:
        wait_until(lambda c=connector: (out / f"{c}.txt").exists() and len((out / f"{c}.txt").read_text().splitlines()) >= 400,
                   f"sink {connector} to write 400 lines", timeout=120)

    # A fourth worker joins: it takes 2 tasks; only the tasks that move restart.
    status_topic = workers.settings["status.storage.topic"]
    before = Counter(r["task"] for r in _status_history(broker, status_topic, consume_records) if r["state"] == "RUNNING")
    workers.start("w4")
    workers.wait_up("w4")
    # The second task moving to w4 starts a moment after the first: until then the placement shows
    # 4 workers but 1 + 2 + 2 + 3, so the wait is for the balance itself.
    placed_4 = wait_until(lambda: _placement(workers, "w4", connectors), "the 8 tasks spread 2 a worker over 4",
                          until=lambda p: bool(p) and sorted(Counter(p.values()).values()) == [2, 2, 2, 2],
                          timeout=180)
    moved = {task for task, worker in placed_4.items() if placed[task] != worker}
    after = Counter(r["task"] for r in _status_history(broker, status_topic, consume_records) if r["state"] == "RUNNING")
    restarted = {task for task in placed if after[task] > before[task]}
    assert restarted == moved and len(moved) == 2, (restarted, moved)
    w4_log = (workers.directory / "w4.log").read_text(errors="replace")  # warm before it took work:
    assert w4_log.index('"event": "spark_warmed_up"') < w4_log.index('"event": "group_joining"')

    # SIGKILL a worker: its tasks run elsewhere once the delay has passed.
    victim_id = placed_4[min(placed_4)]
    victim = next(n for n, url in workers.urls.items() if url == f"http://{victim_id}")
    orphans = {task for task, worker in placed_4.items() if worker == victim_id}
    workers.kill(victim)
    survivor = next(n for n in workers.workers)
    placed_3 = wait_until(lambda: (p := _placement(workers, survivor, connectors)) and victim_id not in p.values() and p,
                          "the dead worker's tasks to run elsewhere",
                          timeout=(DELAY_MS + SESSION_MS) / 1000 + 10)  # the delay + 10 s, from its session's end
    assert set(placed_3) == set(placed_4) and orphans
    for topic in topics:
        _produce(broker, topic, 400, 400, 4)
    for connector in connectors:
        wait_until(lambda c=connector: {line for line in (out / f"{c}.txt").read_text().splitlines()}
                   >= {f"line {i:06d}" for i in range(800)}, f"sink {connector} to have every line", timeout=120)

    # Never two workers for one task in one generation: the status history says who ran what when.
    owners: dict[tuple[str, int], set[str]] = defaultdict(set)
    for record in _status_history(broker, status_topic, consume_records):
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
    wait_until(lambda: _placement(workers, "w2", ["sink"], 2), "the sink's 2 tasks RUNNING", timeout=180)

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
    wait_until(lambda: set(_placement(workers, follower, ["sink"], 2).values()) == {follower_id},
               "the leaver's tasks RUNNING on the other worker, without the delay", timeout=60)

    # Writes through either worker of a cluster, the leader answering for the follower.
    workers.start(leader)
    workers.wait_up(leader)
    assert workers.call(leader, "PUT", "/connectors/sink/config", {**sink, "tasks.max": "1"})[0] == 200
    wait_until(lambda: _placement(workers, follower, ["sink"], 1), "the sink reconfigured to 1 task", timeout=120)
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
    workers.wait_until(workers.group_events, "the group to settle with w2 in it",
                       until=lambda events: _settled(events) and len(events) == 2, timeout=60)
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
    wait_until(lambda: _placement(workers, leader, ["sink"], 1), "the sink's task RUNNING on the leader", timeout=60)


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
