"""WorkerConfig on real files, client and Spark settings, and the connector config rules."""

from __future__ import annotations

import os
import ssl
import sys
from pathlib import Path

import pytest

from connectd import secrets
from connectd.config.connector import COMMON_DEF, SINK_DEF, SOURCE_DEF, connector_problems
from connectd.config.definitions import ConfigProblem, ValidationContext
from connectd.config.properties import Origin, parse_properties
from connectd.config.worker import WorkerConfig
from connectd.config.worker_keys import DISTRIBUTED_DEF, STANDALONE_DEF, definition_for, detect_mode
from connectd.errors import ConfigError
from connectd.plugins import get_registry
from connectd.secrets import HIDDEN

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"

DISTRIBUTED = [
    "# connect-distributed.properties",  # 1
    "bootstrap.servers=localhost:9092,broker-2:9093",  # 2
    "group.id=connect-cluster",  # 3
    "",  # 4
    "config.storage.topic=connect-configs",  # 5
    "offset.storage.topic=connect-offsets",  # 6
    "status.storage.topic=connect-status",  # 7
    f"key.converter={STRING_CONVERTER}",  # 8
    f"value.converter={STRING_CONVERTER}",  # 9
]


@pytest.fixture(autouse=True)
def _forget_secrets():
    secrets.forget_all()
    yield
    secrets.forget_all()


def _write(tmp_path: Path, lines: list[str], name: str = "worker.properties") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _config(tmp_path: Path, *extra: str, base: list[str] = DISTRIBUTED, mode: str | None = None) -> WorkerConfig:
    return WorkerConfig.from_file(_write(tmp_path, [*base, *extra]), mode)


def _errors(config: WorkerConfig) -> list[ConfigProblem]:
    return [p for p in config.problems(check_classes=False) if p.is_error]


# --- a valid file -----------------------------------------------------------------


def test_valid_distributed_file_has_no_problems(tmp_path) -> None:
    config = _config(tmp_path)
    assert config.mode == "distributed"
    assert config.definition is DISTRIBUTED_DEF
    assert config.problems(check_classes=False) == []
    assert config.source == str(tmp_path / "worker.properties")


def test_valid_file_typed_values(tmp_path) -> None:
    config = _config(tmp_path)
    assert config.get("bootstrap.servers") == ["localhost:9092", "broker-2:9093"]
    assert config["group.id"] == "connect-cluster"
    assert config.get("key.converter") == STRING_CONVERTER
    assert config.raw("group.id") == "connect-cluster"
    assert config.raw("absent") is None
    assert config.origin("config.storage.topic") == Origin(str(tmp_path / "worker.properties"), 5)
    assert config.origin("never.written") == Origin(str(tmp_path / "worker.properties"))


def test_check_classes_with_a_registered_converter(tmp_path) -> None:
    assert get_registry().has("converter", STRING_CONVERTER)
    config = _config(tmp_path)
    assert config.problems(check_classes=True) == []
    config.check()


def test_check_classes_flags_a_converter_that_is_not_installed(tmp_path) -> None:
    config = _config(tmp_path, "header.converter=com.example.NoSuchHeaderConverter")
    problems = [p for p in config.problems(check_classes=True) if p.key == "header.converter"]
    assert [str(p) for p in problems] == [
        f"{tmp_path / 'worker.properties'}:10: header.converter='com.example.NoSuchHeaderConverter': "
        "expected a converter class or alias; no such plugin is installed"
    ]


def test_file_with_three_mistakes_gives_exactly_three_errors(tmp_path) -> None:
    path = _write(
        tmp_path,
        [
            "bootstrap.servers=localhost:9092",  # 1
            "group.id=connect-cluster",  # 2
            "config.storage.topic=connect-configs",  # 3
            "offset.storage.topic=connect-offsets",  # 4
            "# a comment",  # 5
            "status.storage.topic=connect-status",  # 6
            f"key.converter={STRING_CONVERTER}",  # 7
            f"value.converter={STRING_CONVERTER}",  # 8
            "session.timeout.ms=abc",  # 9: not a number
            "listeners=ftp://:8083",  # 10: bad scheme
            "offset.storage.replication.factor=\\",  # 11: continued...
            "    0",  # 12: ...replication factor 0
            "rest.advertised.host.name=worker-1",  # 13: fine
        ],
    )
    errors = _errors(WorkerConfig.from_file(path))
    assert len(errors) == 3
    assert [(p.origin.line, p.key, p.value) for p in errors] == [
        (9, "session.timeout.ms", "abc"),
        (10, "listeners", "ftp://:8083"),
        (11, "offset.storage.replication.factor", "0"),
    ]
    assert str(errors[0]) == f"{path}:9: session.timeout.ms='abc': expected a 32-bit integer"
    # check() raises every error (it also looks classes up, so converters may add to them).
    with pytest.raises(ConfigError) as info:
        WorkerConfig.from_file(path).check()
    assert all(p.is_error for p in info.value.problems)
    assert {p.key for p in errors} <= {p.key for p in info.value.problems}


def test_errors_come_before_warnings_each_in_file_order(tmp_path) -> None:
    config = _config(tmp_path, "grup.id=x", "rebalance.timeout.ms=0", "offset.storage.partitions=0")
    problems = config.problems(check_classes=False)
    assert [(p.severity, p.origin.line) for p in problems] == [("error", 11), ("error", 12), ("warning", 10)]
    assert "did you mean 'group.id'?" in problems[-1].message


def test_unreadable_file_is_a_config_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        WorkerConfig.from_file(tmp_path / "missing.properties")


# --- mode -----------------------------------------------------------------------


def test_mode_detection() -> None:
    assert detect_mode({"offset.storage.file.filename": "/tmp/o"}) == "standalone"
    assert detect_mode({"offset.storage.file.filename": "/tmp/o", "group.id": "g"}) == "distributed"
    assert detect_mode({"group.id": "g"}) == "distributed"
    assert detect_mode({}) == "distributed"


def test_standalone_file_is_detected_and_valid(tmp_path) -> None:
    config = _config(
        tmp_path,
        "bootstrap.servers=localhost:9092",
        f"key.converter={STRING_CONVERTER}",
        f"value.converter={STRING_CONVERTER}",
        "offset.storage.file.filename=/tmp/connect.offsets",
        base=[],
    )
    assert config.mode == "standalone"
    assert config.definition is STANDALONE_DEF
    assert config.problems(check_classes=False) == []


def test_standalone_requires_the_offsets_file(tmp_path) -> None:
    config = _config(
        tmp_path,
        "bootstrap.servers=localhost:9092",
        f"key.converter={STRING_CONVERTER}",
        f"value.converter={STRING_CONVERTER}",
        base=[],
        mode="standalone",
    )
    errors = _errors(config)
    assert [(p.key, p.origin) for p in errors] == [
        ("offset.storage.file.filename", Origin(str(tmp_path / "worker.properties")))
    ]
    assert errors[0].message.startswith("is required (file holding source connectors' offsets")


def test_standalone_keys_are_unknown_to_distributed(tmp_path) -> None:
    config = _config(tmp_path, "offset.storage.file.filename=/tmp/o")
    assert config.mode == "distributed"  # group.id is there
    warnings = [p for p in config.problems(check_classes=False) if not p.is_error]
    assert [p.message for p in warnings] == [
        "is a standalone worker's key: a distributed worker keeps offsets in offset.storage.topic and would "
        "give file.filename to the broker as a config of that topic, which the broker refuses when it creates "
        "the topic; remove the key"]


def test_definition_for() -> None:
    assert definition_for("distributed") is DISTRIBUTED_DEF
    assert definition_for("standalone") is STANDALONE_DEF
    with pytest.raises(ValueError, match="unknown worker mode 'cluster'"):
        definition_for("cluster")


def test_distributed_requires_group_and_topics(tmp_path) -> None:
    config = _config(tmp_path, "bootstrap.servers=h:1", "key.converter=a", "value.converter=b", base=[],
                     mode="distributed")
    assert sorted(p.key for p in _errors(config)) == [
        "config.storage.topic", "group.id", "offset.storage.topic", "status.storage.topic"
    ]


# --- cross-key checks -----------------------------------------------------------


def test_same_topic_used_twice(tmp_path) -> None:
    lines = [line.replace("connect-status", "connect-configs") for line in DISTRIBUTED]
    config = _config(tmp_path, base=lines)
    errors = _errors(config)
    assert [(p.origin.line, p.key, p.value) for p in errors] == [(7, "status.storage.topic", "connect-configs")]
    assert errors[0].message == "expected a topic different from config.storage.topic's"


@pytest.mark.parametrize("protocol", ["EAGER", "compatible", "sessioned"])
def test_each_of_kafkas_rebalance_protocols_is_taken(tmp_path, protocol) -> None:
    assert _errors(_config(tmp_path, f"connect.protocol={protocol}", base=DISTRIBUTED)) == []
    assert _errors(_config(tmp_path, "connect.protocol=lazy", base=DISTRIBUTED))[0].key == "connect.protocol"


def test_all_three_topics_the_same(tmp_path) -> None:
    lines = [line.replace("connect-status", "t").replace("connect-offsets", "t").replace("connect-configs", "t")
             for line in DISTRIBUTED]
    errors = _errors(_config(tmp_path, base=lines))
    assert [p.key for p in errors] == ["offset.storage.topic", "status.storage.topic"]


@pytest.mark.parametrize(
    "extra, session",
    [
        (["heartbeat.interval.ms=10000"], 10000),  # equal to the default session timeout
        (["heartbeat.interval.ms=20000", "session.timeout.ms=15000"], 15000),
        (["session.timeout.ms=3000"], 3000),  # the default heartbeat (3000) is not less
    ],
)
def test_heartbeat_must_be_less_than_session_timeout(tmp_path, extra, session) -> None:
    errors = _errors(_config(tmp_path, *extra))
    assert [(p.key, p.message) for p in errors] == [
        ("heartbeat.interval.ms", f"expected less than session.timeout.ms ({session})")
    ]


@pytest.mark.parametrize("extra, expected", [
    (["capacity.min.worker.count=3", "capacity.max.worker.count=2"],
     ("capacity.min.worker.count", "expected at most capacity.max.worker.count (2)")),
    (["capacity.scale.in.cpu.utilization.percentage=80"],  # the scale-out default is 80
     ("capacity.scale.in.cpu.utilization.percentage",
      "expected less than capacity.scale.out.cpu.utilization.percentage (80)")),
    (["capacity.mcu.count=3"], ("capacity.mcu.count", "expected one of [1, 2, 4, 8]")),
    (["capacity.processes.rest.ports=9000-8000"],
     ("capacity.processes.rest.ports", "expected a port range first-last, e.g. 8083-8099")),
])
def test_capacity_keys_that_make_no_policy_are_refused(tmp_path, extra, expected) -> None:
    assert [(p.key, p.message) for p in _errors(_config(tmp_path, *extra))] == [expected]


def test_heartbeat_below_session_timeout_is_fine(tmp_path) -> None:
    assert _errors(_config(tmp_path, "heartbeat.interval.ms=2999", "session.timeout.ms=3000")) == []


def test_heartbeat_check_skips_unparsable_values(tmp_path) -> None:
    errors = _errors(_config(tmp_path, "heartbeat.interval.ms=abc"))
    assert [(p.key, p.message) for p in errors] == [("heartbeat.interval.ms", "expected a 32-bit integer")]


def test_duplicate_key_warning(tmp_path) -> None:
    path = _write(tmp_path, [*DISTRIBUTED, "group.id=other-cluster"])
    config = WorkerConfig.from_file(path)
    assert config.get("group.id") == "other-cluster"
    warnings = [p for p in config.problems(check_classes=False) if not p.is_error]
    assert [str(p) for p in warnings] == [f"{path}:3: warning: group.id is set again at line 10, which wins"]


# --- typed get() ----------------------------------------------------------------


def test_get_defaults(tmp_path) -> None:
    config = _config(tmp_path)
    assert config.get("session.timeout.ms") == 10000
    assert config.get("heartbeat.interval.ms") == 3000
    assert config.get("listeners") == ["http://:8083"]
    assert config.get("topic.creation.enable") is True
    assert config.get("config.storage.replication.factor") == 3
    assert config.get("offset.storage.partitions") == 25
    assert config.get("metric.reporters") == []
    assert config.get("rest.advertised.port") is None
    assert config.get("ssl.key.password") is None
    assert config.get("header.converter") == "org.apache.kafka.connect.storage.SimpleHeaderConverter"


def test_get_parses_written_values(tmp_path) -> None:
    config = _config(tmp_path, "session.timeout.ms= 45000 ", "topic.creation.enable=FALSE",
                     "listeners=http://:8083, https://host:8443", "ssl.key.password=key-pw-1234")
    assert config.get("session.timeout.ms") == 45000
    assert config.get("topic.creation.enable") is False
    assert config.get("listeners") == ["http://:8083", "https://host:8443"]
    password = config.get("ssl.key.password")
    assert password.value() == "key-pw-1234" and str(password) == HIDDEN


def test_get_undeclared_key_is_a_key_error(tmp_path) -> None:
    with pytest.raises(KeyError):
        _config(tmp_path, "producer.linger.ms=5").get("producer.linger.ms")


def test_get_bad_value_names_file_line_and_key(tmp_path) -> None:
    config = _config(tmp_path, "session.timeout.ms=abc")
    with pytest.raises(ConfigError) as info:
        config.get("session.timeout.ms")
    assert str(info.value) == f"{tmp_path / 'worker.properties'}:10: session.timeout.ms='abc': expected a 32-bit integer"
    assert isinstance(info.value.problems[0], ConfigProblem)


def test_get_bad_password_is_hidden(tmp_path) -> None:
    # A PASSWORD that fails to parse cannot happen; a bad value of a key that
    # is shown must still never print a password of another key.
    config = _config(tmp_path, "ssl.key.password=key-pw-1234", "request.timeout.ms=-5")
    with pytest.raises(ConfigError) as info:
        config.get("request.timeout.ms")
    assert "key-pw-1234" not in str(info.value)
    assert str(info.value).endswith("request.timeout.ms='-5': expected a value in [0,...]")


_ENV_PROVIDER = ("config.providers=env", "config.providers.env.class=env")


def test_get_resolves_placeholder_lazily(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CONNECTD_TEST_TIMEOUT", raising=False)
    config = _config(tmp_path, *_ENV_PROVIDER, "session.timeout.ms=${env:CONNECTD_TEST_TIMEOUT}")
    assert config.raw("session.timeout.ms") == "${env:CONNECTD_TEST_TIMEOUT}"
    monkeypatch.setenv("CONNECTD_TEST_TIMEOUT", "25000")
    assert config.get("session.timeout.ms") == 25000
    assert config.resolved("session.timeout.ms") == "25000"
    # Still as written everywhere values are kept or shown.
    assert config.originals()["session.timeout.ms"] == "${env:CONNECTD_TEST_TIMEOUT}"
    assert config.display()["session.timeout.ms"] == "${env:CONNECTD_TEST_TIMEOUT}"


def test_get_unresolvable_placeholder_names_file_line_and_key(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CONNECTD_TEST_NOPE", raising=False)
    config = _config(tmp_path, *_ENV_PROVIDER, "session.timeout.ms=${env:CONNECTD_TEST_NOPE}")
    with pytest.raises(ConfigError) as info:
        config.get("session.timeout.ms")
    assert str(info.value) == (
        f"{tmp_path / 'worker.properties'}:12: session.timeout.ms: ${{env:CONNECTD_TEST_NOPE}}: "
        "provider 'env' has no value for 'CONNECTD_TEST_NOPE'"
    )


def test_placeholder_resolving_to_a_bad_value_shows_the_placeholder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_TIMEOUT", "soon")
    config = _config(tmp_path, *_ENV_PROVIDER, "session.timeout.ms=${env:CONNECTD_TEST_TIMEOUT}")
    with pytest.raises(ConfigError) as info:
        config.get("session.timeout.ms")
    assert str(info.value).endswith("session.timeout.ms='${env:CONNECTD_TEST_TIMEOUT}': expected a 32-bit integer")
    errors = _errors(config)
    assert [str(p) for p in errors] == [str(info.value)]


def test_problems_report_unresolvable_placeholders_of_prefixed_keys(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CONNECTD_TEST_NOPE", raising=False)
    config = _config(tmp_path, *_ENV_PROVIDER, "spark.executor.memory=${env:CONNECTD_TEST_NOPE}")
    errors = _errors(config)
    assert [(p.origin.line, p.key) for p in errors] == [(12, "spark.executor.memory")]
    assert "no value for 'CONNECTD_TEST_NOPE'" in errors[0].message


def test_problems_report_a_broken_provider_setup(tmp_path) -> None:
    config = _config(tmp_path, "config.providers=vault", "config.providers.env.class=nope")
    errors = _errors(config)
    assert len(errors) == 1
    assert str(errors[0]).startswith(f"{tmp_path / 'worker.properties'}")
    assert str(errors[0]).endswith("config.providers.vault.class is required (config.providers names 'vault')")
    with pytest.raises(ConfigError):
        config.providers


def test_provider_class_error_names_its_line(tmp_path) -> None:
    config = _config(tmp_path, "config.providers=env", "config.providers.env.class=nope")
    errors = _errors(config)
    assert len(errors) == 1
    assert str(errors[0]).startswith(f"{tmp_path / 'worker.properties'}:11: config.providers.env.class='nope': ")


def test_missing_provider_class_names_the_config_providers_line(tmp_path) -> None:
    errors = _errors(_config(tmp_path, "config.providers=vault"))
    assert [str(p) for p in errors] == [
        f"{tmp_path / 'worker.properties'}:10: config.providers.vault.class is required (config.providers names 'vault')"
    ]


# --- Spark ----------------------------------------------------------------------


def test_spark_conf_defaults(tmp_path) -> None:
    assert _config(tmp_path).spark_conf() == {
        "spark.master": "local[*]",
        "spark.app.name": "connectd-connect-cluster",
        "spark.scheduler.mode": "FIFO",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": str(Path(sys.executable).parent / "connectd-spark-python"),
        "spark.sql.streaming.checkpointFileManagerClass":
            "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
        "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:+UseSerialGC",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.python.factory.idleWorkerMaxPoolSize": str(os.cpu_count()),
    }


@pytest.mark.parametrize(("master", "kept"), [("local", "1"), ("local[3]", "3"), ("local[3, 2]", "3")])
def test_spark_conf_keeps_as_many_idle_python_workers_as_a_local_master_has_cores(tmp_path, master, kept) -> None:
    assert _config(tmp_path, f"spark.master={master}").spark_conf()["spark.python.factory.idleWorkerMaxPoolSize"] == kept


def test_spark_conf_leaves_python_workers_to_a_cluster_master(tmp_path) -> None:
    conf = _config(tmp_path, "spark.master=spark://127.0.0.1:7077").spark_conf()
    assert "spark.python.factory.idleWorkerMaxPoolSize" not in conf


def test_spark_conf_checkpoint_settings_can_be_overridden(tmp_path) -> None:
    conf = _config(tmp_path, "spark.hadoop.fs.file.impl=org.apache.hadoop.fs.LocalFileSystem").spark_conf()
    assert conf["spark.hadoop.fs.file.impl"] == "org.apache.hadoop.fs.LocalFileSystem"


def test_spark_conf_driver_java_options_set_replace_the_default(tmp_path) -> None:
    conf = _config(tmp_path, "spark.driver.extraJavaOptions=-Xmx2g").spark_conf()
    assert conf["spark.driver.extraJavaOptions"] == "-Xmx2g"


def test_spark_conf_passes_spark_keys_through_resolved(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_MEM", "4g")
    config = _config(tmp_path, *_ENV_PROVIDER, "spark.executor.memory=${env:CONNECTD_TEST_MEM}",
                     "spark.ui.enabled=true", "spark.scheduler.mode=FAIR", "spark.driver.host=10.1.2.3",
                     "producer.linger.ms=5")
    conf = config.spark_conf()
    assert conf["spark.executor.memory"] == "4g"
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.scheduler.mode"] == "FAIR"
    assert conf["spark.driver.host"] == "10.1.2.3"  # told otherwise
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert all(key.startswith("spark.") for key in conf)


def test_spark_conf_non_local_master_does_not_force_loopback(tmp_path) -> None:
    conf = _config(tmp_path, "spark.master=spark://spark-master:7077").spark_conf()
    assert conf["spark.master"] == "spark://spark-master:7077"
    assert "spark.driver.host" not in conf
    assert "spark.driver.bindAddress" not in conf
    assert conf["spark.scheduler.mode"] == "FIFO"


def test_spark_conf_local_n_binds_loopback_and_standalone_app_name(tmp_path) -> None:
    config = _config(tmp_path, "spark.master=local[2]", "offset.storage.file.filename=/tmp/o", base=[])
    conf = config.spark_conf()
    assert conf["spark.driver.host"] == "127.0.0.1"
    assert conf["spark.app.name"] == "connectd-standalone"


# --- Kafka clients --------------------------------------------------------------

_CLIENT_BASE = [
    *DISTRIBUTED,
    "client.id=worker-1",
    "security.protocol=sasl_ssl",
    "sasl.mechanism=PLAIN",
    'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
    'username="alice" password="jaas-pw-5678";',
    "request.timeout.ms=30000",
]


def test_confluent_producer_settings(tmp_path) -> None:
    config = _config(tmp_path, "producer.linger.ms=5", "producer.buffer.memory=33554432", "producer.client.id=prod-1",
                     "producer.acks=-1", "producer.enable.idempotence=TRUE", base=_CLIENT_BASE)
    settings = config.client_config("producer", "confluent")
    assert settings == {
        "bootstrap.servers": "localhost:9092,broker-2:9093",
        "client.id": "prod-1",  # producer.* overrides the top level
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "request.timeout.ms": 30000,
        "linger.ms": 5,
        "queue.buffering.max.kbytes": 32768,
        "acks": "all",
        "enable.idempotence": True,
        "sasl.username": "alice",
        "sasl.password": "jaas-pw-5678",
    }


def test_confluent_consumer_settings(tmp_path) -> None:
    config = _config(tmp_path, "consumer.fetch.max.wait.ms=250", "consumer.auto.offset.reset=earliest",
                     "consumer.partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor,"
                     "cooperative-sticky", "producer.linger.ms=5", base=_CLIENT_BASE)
    settings = config.client_config("consumer", "confluent")
    assert settings["fetch.wait.max.ms"] == 250
    assert "fetch.max.wait.ms" not in settings
    assert settings["auto.offset.reset"] == "earliest"
    assert settings["partition.assignment.strategy"] == "range,cooperative-sticky"
    assert settings["client.id"] == "worker-1"  # top level, not producer's
    assert settings["socket.timeout.ms"] == 30000  # request.timeout.ms, for every client
    assert "linger.ms" not in settings
    assert settings["sasl.username"] == "alice" and settings["sasl.password"] == "jaas-pw-5678"


def test_confluent_admin_settings_are_the_shared_ones(tmp_path) -> None:
    config = _config(tmp_path, "admin.client.id=admin-1", "producer.linger.ms=5", base=_CLIENT_BASE)
    assert config.client_config("admin", "confluent") == {
        "bootstrap.servers": "localhost:9092,broker-2:9093",
        "client.id": "admin-1",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "socket.timeout.ms": 30000,
        "sasl.username": "alice",
        "sasl.password": "jaas-pw-5678",
    }


def test_aiokafka_settings(tmp_path) -> None:
    config = _config(tmp_path, "producer.linger.ms=5", "producer.acks=1", "consumer.fetch.max.wait.ms=250",
                     "consumer.max.poll.records=100", base=_CLIENT_BASE)
    producer = config.client_config("producer", "aiokafka")
    assert producer["bootstrap_servers"] == ["localhost:9092", "broker-2:9093"]
    assert producer["client_id"] == "worker-1"
    assert producer["security_protocol"] == "SASL_SSL"
    assert producer["sasl_mechanism"] == "PLAIN"
    assert producer["request_timeout_ms"] == 30000
    assert producer["linger_ms"] == 5
    assert producer["acks"] == 1
    assert producer["sasl_plain_username"] == "alice"
    assert producer["sasl_plain_password"] == "jaas-pw-5678"
    consumer = config.client_config("consumer", "aiokafka")
    assert consumer["fetch_max_wait_ms"] == 250
    assert consumer["max_poll_records"] == 100
    assert "linger_ms" not in consumer
    admin = config.client_config("admin", "aiokafka")
    assert set(admin) == {"bootstrap_servers", "client_id", "security_protocol", "sasl_mechanism",
                          "request_timeout_ms", "sasl_plain_username", "sasl_plain_password", "ssl_context"}
    assert admin["ssl_context"].verify_mode == ssl.CERT_REQUIRED  # SASL_SSL: the system's CAs


def test_client_settings_resolve_placeholders(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_PW", "env-jaas-pw-999")
    config = _config(tmp_path, *_ENV_PROVIDER,
                     'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
                     'username="bob" password="${env:CONNECTD_TEST_PW}";')
    assert config.client_config("producer")["sasl.password"] == "env-jaas-pw-999"
    assert secrets.redact("pw env-jaas-pw-999") == f"pw {HIDDEN}"


def test_unknown_client_key_is_a_warning_in_problems(tmp_path) -> None:
    config = _config(tmp_path, "producer.bogus.setting=1", "consumer.fetch.max.wait.ms=250")
    problems = config.problems(check_classes=False)
    assert [(p.severity, p.origin.line, p.key) for p in problems] == [("warning", 10, "producer.bogus.setting")]
    assert problems[0].message == "ignored: librdkafka has no such setting for a producer"
    # And client_config does not fail on it: the setting is simply not passed.
    assert "bogus.setting" not in config.client_config("producer")


def test_bad_number_in_a_client_setting(tmp_path) -> None:
    config = _config(tmp_path, "producer.linger.ms=soon")
    with pytest.raises(ConfigError) as info:
        config.client_config("producer")
    assert str(info.value) == f"{tmp_path / 'worker.properties'}:10: producer.linger.ms='soon': expected a number"
    errors = _errors(config)
    assert [(p.key, p.origin.line, p.message) for p in errors] == [("producer.linger.ms", 10, "expected a number")]


def test_overrides_win_over_worker_settings(tmp_path) -> None:
    config = _config(tmp_path, "producer.linger.ms=5")
    settings = config.client_config("producer", overrides={"linger.ms": "50", "acks": "1"})
    assert settings["linger.ms"] == 50 and settings["acks"] == "1"


def test_jaas_without_credentials_is_a_warning_not_an_error(tmp_path) -> None:
    config = _config(tmp_path, "sasl.jaas.config=software.amazon.msk.auth.iam.IAMLoginModule required;")
    settings = config.client_config("producer")
    assert "sasl.username" not in settings and "sasl.password" not in settings


def test_unknown_client_or_library(tmp_path) -> None:
    config = _config(tmp_path)
    with pytest.raises(ValueError, match="unknown client 'streams'"):
        config.client_config("streams")
    with pytest.raises(ValueError, match="unknown client library 'kafka-python'"):
        config.client_config("producer", "kafka-python")


# --- connector configs ----------------------------------------------------------


def _connector(text: str, kind: str = "sink") -> list[str]:
    props = parse_properties(text, "c.properties")
    return [str(p) for p in connector_problems(props, kind, props.origin)]


def test_sink_with_topics_and_regex_is_an_error() -> None:
    # On both keys, as Kafka Connect reports it.
    assert _connector("topics=a,b\ntopics.regex=a.*\n") == [
        "c.properties:1: topics='a,b': expected only one of topics and topics.regex",
        "c.properties:2: topics.regex='a.*': expected only one of topics and topics.regex",
    ]


def test_sink_with_neither_topics_nor_regex_is_an_error() -> None:
    assert _connector("name=x\n") == ["c.properties: topics: one of topics and topics.regex is required",
                                       "c.properties: topics.regex: one of topics and topics.regex is required"]
    assert _connector("topics= , \ntopics.regex=  \n") == [
        "c.properties:1: topics: one of topics and topics.regex is required",
        "c.properties:2: topics.regex: one of topics and topics.regex is required",
    ]


def test_sink_with_one_of_them_is_fine() -> None:
    assert _connector("topics=a,b\n") == []
    assert _connector("topics.regex=orders-.*\n") == []


def test_source_needs_no_topics() -> None:
    assert _connector("name=x\n", kind="source") == []


def test_dead_letter_topic_among_topics() -> None:
    # On the key that consumes it, as Kafka Connect reports it.
    assert _connector("topics=a,dlq\nerrors.deadletterqueue.topic.name=dlq\n") == [
        "c.properties:1: topics='a,dlq': expected topics without the dead-letter topic 'dlq' "
        "(errors.deadletterqueue.topic.name): the connector would read its own failures"
    ]


def test_dead_letter_topic_matching_the_regex() -> None:
    problems = _connector("topics.regex=orders.*\nerrors.deadletterqueue.topic.name=orders-dlq\n")
    assert len(problems) == 1 and problems[0].startswith("c.properties:1: topics.regex='orders.*': expected a regex")


def test_dead_letter_topic_outside_topics_and_regex() -> None:
    assert _connector("topics=a\nerrors.deadletterqueue.topic.name=dlq\n") == []
    # The regex must match the whole name, as Java's matches().
    assert _connector("topics.regex=orders\nerrors.deadletterqueue.topic.name=orders-dlq\n") == []
    # A broken regex is the RegexValid validator's business, not a crash here.
    assert _connector("topics.regex=(bad\nerrors.deadletterqueue.topic.name=dlq\n") == []


def test_duplicate_transform_alias() -> None:
    problems = _connector("topics=a\ntransforms=mask,mask\ntransforms.mask.type=MaskField\n")
    assert problems == ["c.properties:2: transforms='mask,mask': alias 'mask' is listed twice"]


def test_duplicate_alias_problems_are_not_repeated() -> None:
    problems = _connector("topics=a\ntransforms=t,t\ntransforms.t.predicate=nope\n")
    assert len(problems) == len(set(problems))


def test_missing_transform_type() -> None:
    assert _connector("topics=a\ntransforms=route, mask\ntransforms.route.type=RegexRouter\n") == [
        "c.properties:2: transforms.mask.type is required (the class of transform 'mask')"
    ]


def test_missing_predicate_type() -> None:
    problems = _connector("topics=a\npredicates=isTombstone\n")
    assert len(problems) == 1
    assert "predicates.isTombstone.type" in problems[0] and "(the class of predicate 'isTombstone')" in problems[0]


def test_transform_naming_an_undefined_predicate() -> None:
    text = (
        "topics=a\ntransforms=drop\ntransforms.drop.type=Filter\ntransforms.drop.predicate=isTombstone\n"
        "predicates=isFoo\npredicates.isFoo.type=TopicNameMatches\n"
    )
    assert _connector(text) == [
        "c.properties:4: transforms.drop.predicate='isTombstone': expected the alias of a predicate listed in predicates"
    ]
    fixed = text.replace("predicates=isFoo", "predicates=isFoo, isTombstone") + "predicates.isTombstone.type=T\n"
    assert _connector(fixed) == []


def test_connector_problems_accept_parsed_lists() -> None:
    values = {"topics": ["a", "b"], "transforms": ["x"], "transforms.x.type": "T"}
    assert connector_problems(values, "sink") == []


FILE_SINK = """\
name=local-file-sink
connector.class=FileStreamSink
tasks.max=1
file=test.sink.txt
topics=connect-test
"""

FILE_SOURCE = """\
name=local-file-source
connector.class=FileStreamSource
tasks.max=1
file=test.txt
topic=connect-test
"""


def test_sink_def_validates_a_typical_file_sink() -> None:
    props = parse_properties(FILE_SINK, "sink.properties")
    problems = SINK_DEF.validate(props, props.origin)
    # `file` belongs to the connector's own definition, not to SINK_DEF.
    assert [str(p) for p in problems] == ["sink.properties:4: warning: unknown key 'file'"]
    assert connector_problems(props, "sink", props.origin) == []


def test_source_def_validates_a_typical_file_source() -> None:
    props = parse_properties(FILE_SOURCE, "source.properties")
    problems = SOURCE_DEF.validate(props, props.origin)
    assert [p.severity for p in problems] == ["warning", "warning"]
    assert [p.origin.line for p in problems] == [4, 5]
    assert connector_problems(props, "source", props.origin) == []


def test_connector_class_lookup_with_the_real_registry() -> None:
    registry = get_registry()
    context = ValidationContext(has_class=registry.has)
    props = parse_properties(FILE_SINK, "sink.properties")
    assert [p for p in SINK_DEF.validate(props, props.origin, context) if p.is_error] == []
    bad = parse_properties(FILE_SINK.replace("FileStreamSink", "FileStreamSync"), "sink.properties")
    errors = [str(p) for p in SINK_DEF.validate(bad, bad.origin, context) if p.is_error]
    assert errors == [
        "sink.properties:2: connector.class='FileStreamSync': expected a connector class or alias; "
        "no such plugin is installed"
    ]


def test_connector_defs_bad_values() -> None:
    props = parse_properties("name=\nconnector.class=X\ntasks.max=0\nerrors.tolerance=some\ntopics=a\n", "c.properties")
    errors = [str(p) for p in SINK_DEF.validate(props, props.origin)]
    assert errors == [
        "c.properties:1: name='': expected a non-empty string",
        "c.properties:3: tasks.max='0': expected a value in [1,...]",
        "c.properties:4: errors.tolerance='some': expected one of [none, all]",
    ]


def test_connector_prefixes_are_not_warned() -> None:
    props = parse_properties(
        "name=n\nconnector.class=X\ntopics=a\ntransforms.x.type=T\nproducer.override.linger.ms=5\n"
        "consumer.override.max.poll.records=10\nvalue.converter.schemas.enable=false\n",
        "c.properties",
    )
    assert SINK_DEF.validate(props, props.origin) == []
    assert "topics" not in COMMON_DEF and "topics" in SINK_DEF and "topic.creation.groups" in SOURCE_DEF


def test_converter_settings_are_checked_against_the_converter(tmp_path) -> None:
    path = tmp_path / "worker.properties"
    path.write_text(
        "bootstrap.servers=127.0.0.1:9092\n"
        "group.id=g\n"
        "config.storage.topic=c\n"
        "offset.storage.topic=o\n"
        "status.storage.topic=s\n"
        "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "value.converter=JsonConverter\n"
        "value.converter.schemas.enabled=false\n"  # line 8: typo
        "value.converter.decimal.format=FOO\n"  # line 9: bad value
        "key.converter.schemas.enable=maybe\n"  # line 10: bad boolean
    )
    problems = [str(p) for p in WorkerConfig.from_file(path).problems()]
    assert problems == [
        f"{path}:9: value.converter.decimal.format='FOO': expected one of [BASE64, NUMERIC] (any case)",
        f"{path}:10: key.converter.schemas.enable='maybe': expected true or false",
        f"{path}:8: warning: unknown setting value.converter.schemas.enabled for JsonConverter "
        "(did you mean value.converter.schemas.enable?)",
    ]


# --- exactly-once -----------------------------------------------------------------


_STANDALONE = [
    "bootstrap.servers=localhost:9092",
    f"key.converter={STRING_CONVERTER}",
    f"value.converter={STRING_CONVERTER}",
    "offset.storage.file.filename=/tmp/connect.offsets",
]


@pytest.mark.parametrize(("value", "leader", "sources"), [
    ("enabled", True, True), ("ENABLED", True, True), ("preparing", True, False), ("disabled", False, False)])
def test_exactly_once_source_support_is_a_distributed_workers_choice(tmp_path, value, leader, sources) -> None:
    """Kafka Connect's three steps: preparing has the leader write the config topic in transactions,
    enabled the source tasks too."""
    config = _config(tmp_path, f"exactly.once.source.support={value}", base=DISTRIBUTED, mode="distributed")
    assert _errors(config) == []
    assert (config.transactional_leader, config.exactly_once_source) == (leader, sources)


@pytest.mark.parametrize("value", ["enabled", "preparing"])
def test_exactly_once_source_support_is_refused_in_standalone_mode_as_kafka_connect(tmp_path, value) -> None:
    config = _config(tmp_path, f"exactly.once.source.support={value}", base=_STANDALONE, mode="standalone")
    assert [str(p) for p in _errors(config)] == [
        f"{tmp_path / 'worker.properties'}:{len(_STANDALONE) + 1}: exactly.once.source.support={value!r}: "
        "exactly-once source delivery runs in distributed mode only, as in Kafka Connect; expected disabled"
    ]
    assert config.exactly_once_source is False


def test_exactly_once_source_support_disabled_is_accepted(tmp_path) -> None:
    assert _errors(_config(tmp_path, "exactly.once.source.support=disabled")) == []


# --- keys accepted and ignored --------------------------------------------------


@pytest.mark.parametrize(("line", "why"), [
    ("metric.reporters=com.example.JmxReporter", "connectd loads no Java metric reporters"),
    ("plugin.path=/opt/connectors", "connectd finds plugins through Python entry points"),
])
def test_a_key_connectd_ignores_is_a_warning_saying_why(tmp_path, line, why) -> None:
    problems = _config(tmp_path, line).problems(check_classes=False)
    key = line.split("=")[0]
    warnings = [str(p) for p in problems if p.key == key]
    assert len(warnings) == 1 and not [p for p in problems if p.is_error]
    assert warnings[0].startswith(f"{tmp_path / 'worker.properties'}:10: warning: {key}={line.split('=')[1]!r}: ")
    assert f"is accepted for compatibility and ignored: {why}" in warnings[0]
