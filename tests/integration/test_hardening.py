"""`connectd standalone` tried as a hostile or unlucky user would: real process, real broker, real Spark."""

from __future__ import annotations

import datetime
import json
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectd.broker import free_port

pytestmark = pytest.mark.integration

ENV_PROVIDER = {"config.providers": "env",
                "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider"}


def call(url: str, method: str, path: str, body: object = None) -> tuple[int, str]:
    """A REST call; its status and body as text (whatever it is)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_secret_in_failing_connectors_configs_never_leaves_the_process(broker, topic_name, tmp_path, worker_config,
                                                                        wait_until, consume_records,
                                                                        connectd_processes):
    secret = f"pw-{uuid.uuid4().hex}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(5):
        producer.produce(topic_name, value=f"not a date {i}".encode())
    assert producer.flush(30) == 0
    url = f"http://127.0.0.1:{free_port()}"
    worker = worker_config.file(listeners=url, **ENV_PROVIDER)
    process = connectd_processes.start("standalone", worker, env={"DB_PW": secret})
    wait_until(lambda: _up(url, process, connectd_processes), "the worker's REST API", timeout=120)
    # A sink whose file lies in a directory that does not exist: its task fails, quoting the path.
    missing = {"connector.class": "FileStreamSink", "topics": topic_name,
               "file": str(tmp_path / "no-such-dir" / "${env:DB_PW}" / "out.txt")}
    assert call(url, "POST", "/connectors", {"name": "bad-file", "config": missing})[0] == 201
    # A transform whose error quotes its pattern, which holds the secret: every record to the DLQ.
    dlq = f"{topic_name}-dlq"
    converting = {"connector.class": "FileStreamSink", "topics": topic_name, "file": str(tmp_path / "ok.txt"),
                  "transforms": "ts", "transforms.ts.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
                  "transforms.ts.target.type": "unix", "transforms.ts.format": "yyyy'${env:DB_PW}'",
                  "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                  "errors.deadletterqueue.topic.replication.factor": "1",
                  "errors.deadletterqueue.context.headers.enable": "true"}
    assert call(url, "POST", "/connectors", {"name": "bad-pattern", "config": converting})[0] == 201
    # A config refused at create, quoting the secret: the REST error must not.
    refused = {**converting, "transforms.ts.target.type": "${env:DB_PW}"}
    code, error = call(url, "POST", "/connectors", {"name": "refused", "config": refused})
    assert code == 400, error

    status = wait_until(lambda: json.loads(call(url, "GET", "/connectors/bad-file/status")[1]),
                        "the bad-file sink's task FAILED",
                        until=lambda s: [t["state"] for t in s.get("tasks", [])] == ["FAILED"], timeout=180)
    assert "[hidden]" in status["tasks"][0]["trace"]  # the path was quoted: the secret was there
    dead = consume_records(dlq, 5, timeout=180)
    headers = [dict(message.headers()) for message in dead]
    assert all(b"[hidden]" in h["__connect.errors.exception.message"] for h in headers), headers[0]

    answers = [error] + [call(url, "GET", path)[1] for path in (
        "/connectors?expand=status&expand=info", "/connectors/bad-file/status", "/connectors/bad-file/tasks",
        "/connectors/bad-file/tasks/0/status", "/connectors/bad-pattern/status", "/connectors/bad-file/config")]
    assert connectd_processes.terminate(process) is not None
    output = connectd_processes.output()
    assert "Traceback" in output or "ERROR" in output  # Spark and the task did report the failure
    for where, text in [("REST", "\n".join(answers)), ("stdout/stderr", output),
                        ("DLQ headers", repr([message.headers() for message in dead]))]:
        assert secret not in text, f"the secret appears in {where}"


def _up(url: str, process, processes) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"connectd exited with {process.returncode}:\n{processes.output()[-4000:]}")
    try:
        urllib.request.urlopen(url + "/", timeout=2).close()
        return True
    except OSError:
        return False


def test_a_bad_connector_file_among_good_ones_exits_78_before_spark_starts(broker, tmp_path, worker_config,
                                                                         connectd_processes):
    worker = worker_config.file()
    good = tmp_path / "good.properties"
    good.write_text(f"name=good\nconnector.class=FileStreamSink\ntopics=t\nfile={tmp_path / 'out.txt'}\n")
    bad = tmp_path / "bad.properties"
    bad.write_text("name=bad\nconnector.class=NoSuchConnector\n")
    code, output = connectd_processes.run("standalone", worker, good, bad, timeout=60)
    assert code == 78, output
    assert f"{bad}:2: connector.class" in output and "NoSuchConnector" in output, output
    assert "Spark" not in output and "log4j" not in output, output  # its JVM never started


def test_with_the_broker_away_health_and_pause_answer_at_once_and_the_source_runs_again_on_its_return(
        tmp_path, worker_config_in, wait_until, consume_records, connectd_processes):
    import time

    from connectd.broker import EmbeddedBroker

    port = free_port()
    own = EmbeddedBroker(port=port)  # this test's own: it goes away and comes back (empty: tansu keeps memory only)
    own.start()
    try:
        admin = AdminClient({"bootstrap.servers": own.bootstrap_servers})
        admin.create_topics([NewTopic("lines", 1, 1)])["lines"].result(timeout=30)
        source_file = tmp_path / "in.txt"
        source_file.write_text("".join(f"before {i}\n" for i in range(100)))
        url = f"http://127.0.0.1:{free_port()}"
        worker = worker_config_in(tmp_path, own).file(listeners=url)
        (tmp_path / "source.properties").write_text(
            f"name=lines\nconnector.class=FileStreamSource\nfile={source_file}\ntopic=lines\n"
            "errors.restart.enable=true\nerrors.restart.backoff.max.ms=60000\n"
            "producer.override.delivery.timeout.ms=5000\nproducer.override.request.timeout.ms=2000\n")
        process = connectd_processes.start("standalone", worker, tmp_path / "source.properties")
        wait_until(lambda: _up(url, process, connectd_processes), "the worker's REST API", timeout=120)
        consume_records("lines", 100, bootstrap_servers=own.bootstrap_servers, timeout=120)

        own.stop()
        with open(source_file, "a") as f:  # lines the task cannot deliver while the broker is away
            f.write("".join(f"during {i}\n" for i in range(100)))
        for method, path, expected in [("GET", "/health", 200), ("PUT", "/connectors/lines/pause", 202),
                                       ("PUT", "/connectors/lines/resume", 202), ("GET", "/health", 200),
                                       ("GET", "/connectors/lines/status", 200)]:
            asked = time.monotonic()
            code, body = call(url, method, path)
            assert (code, path) == (expected, path), body
            assert time.monotonic() - asked < 2, f"{method} {path} took {time.monotonic() - asked:.1f} s"
        # Long enough for the task's producer to give up (delivery.timeout.ms) and the task to fail.
        wait_until(lambda: json.loads(call(url, "GET", "/connectors/lines/status")[1]), "the task to fail",
                   until=lambda s: s["tasks"][0]["state"] in ("FAILED", "RESTARTING"), timeout=120)

        own.start()  # the same port, empty
        returned = time.monotonic()
        admin = AdminClient({"bootstrap.servers": own.bootstrap_servers})  # held until the future resolved
        admin.create_topics([NewTopic("lines", 1, 1)])["lines"].result(timeout=30)
        with open(source_file, "a") as f:
            f.write("".join(f"after {i}\n" for i in range(100)))
        # Nothing lost: what could not be delivered while it was away comes too.
        records = consume_records("lines", 200, bootstrap_servers=own.bootstrap_servers, timeout=90)
        assert time.monotonic() - returned < 60
        expected = {f"{when} {i}" for when in ("during", "after") for i in range(100)}
        assert {r.value().decode() for r in records} >= expected
        status = json.loads(call(url, "GET", "/connectors/lines/status")[1])
        assert status["tasks"][0]["state"] == "RUNNING"
    finally:
        own.stop()


def test_a_producer_the_cluster_refuses_fails_its_task_at_once_and_quietly(broker, topic_name, tmp_path, worker_config,
                                                                          wait_until, connectd_processes):
    import time

    source_file = tmp_path / "in.txt"
    source_file.write_text("".join(f"line {i}\n" for i in range(10)))
    url = f"http://127.0.0.1:{free_port()}"
    worker = worker_config.file(listeners=url)
    # The dev broker speaks no SASL: every authentication is refused, as a wrong password would be.
    (tmp_path / "source.properties").write_text(
        f"name=refused\nconnector.class=FileStreamSource\nfile={source_file}\ntopic={topic_name}\n"
        "producer.override.security.protocol=SASL_PLAINTEXT\nproducer.override.sasl.mechanism=PLAIN\n"
        "producer.override.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="connect" password="not-the-password";\n')
    process = connectd_processes.start("standalone", worker, tmp_path / "source.properties")
    wait_until(lambda: _up(url, process, connectd_processes), "the worker's REST API", timeout=120)
    started = time.monotonic()
    status = wait_until(lambda: json.loads(call(url, "GET", "/connectors/refused/status")[1]), "the task FAILED",
                        until=lambda s: [t["state"] for t in s.get("tasks", [])] == ["FAILED"], timeout=120)
    assert "the Kafka cluster refused the producer" in status["tasks"][0]["trace"]
    assert "AUTHENTICATION" in status["tasks"][0]["trace"]
    # Timed in the worker's own log from the task's RUNNING (its query started) to its FAILED: the
    # start of Spark and of the query's first Python worker are not the refusal's to answer for
    # (they took 23 s here, more on a busy machine), waiting for the batch's 60 s flush timeout is.
    changes = {event["state"]: datetime.datetime.fromisoformat(event["timestamp"])
               for event in connectd_processes.events()
               if event.get("event") == "status_changed" and event.get("task") == 0}
    failed_after = (changes["FAILED"] - changes["RUNNING"]).total_seconds()
    assert failed_after < 45, f"FAILED {failed_after:.0f} s after RUNNING (the batch's flush timeout is 60 s)"
    seconds = time.monotonic() - started
    connectd_processes.terminate(process)
    lines = [line for line in connectd_processes.output().splitlines() if "SASL" in line and "FAIL" in line]
    assert len(lines) <= 2 + seconds / 10, f"{len(lines)} client log lines in {seconds:.0f} s"
