"""AWS MSK Connect's rules for custom worker configurations (msk_problems).

Two versions of AWS's "Supported worker configuration properties" page are
in circulation; connectd allows a producer./consumer. key either allows and
flags a key either forbids. The lists below are copied from both versions.
"""

from __future__ import annotations

import pytest

from connectd.config.msk import (
    ALLOWED_CONSUMER,
    ALLOWED_PRODUCER,
    FORBIDDEN_KEYS,
    FORBIDDEN_PREFIXES,
    msk_problems,
)
from connectd.config.properties import Origin, parse_properties

CONVERTERS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}

# Version A of the page (full lists).
PRODUCER_A = (
    "producer.acks producer.batch.size producer.buffer.memory producer.compression.type "
    "producer.enable.idempotence producer.key.serializer producer.max.request.size producer.metadata.max.age.ms "
    "producer.metadata.max.idle.ms producer.reconnect.backoff.max.ms producer.reconnect.backoff.ms "
    "producer.request.timeout.ms producer.retry.backoff.ms producer.value.serializer"
).split()
CONSUMER_A = (
    "consumer.allow.auto.create.topics consumer.auto.offset.reset consumer.check.crcs consumer.fetch.max.bytes "
    "consumer.fetch.max.wait.ms consumer.fetch.min.bytes consumer.heartbeat.interval.ms consumer.key.deserializer "
    "consumer.max.partition.fetch.bytes consumer.max.poll.records consumer.metadata.max.age.ms "
    "consumer.partition.assignment.strategy consumer.reconnect.backoff.max.ms consumer.reconnect.backoff.ms "
    "consumer.request.timeout.ms consumer.retry.backoff.ms consumer.session.timeout.ms consumer.value.deserializer"
).split()
FORBIDDEN_A = (
    "access.control. admin. admin.listeners.https. client. connect. inter.worker. internal. listeners.https. "
    "metrics. metrics.context. rest. sasl. security. socket. ssl. topic.tracking. worker. bootstrap.servers "
    "config.storage.topic connections.max.idle.ms connector.client.config.override.policy group.id listeners "
    "metric.reporters plugin.path receive.buffer.bytes response.http.headers.config "
    "scheduled.rebalance.max.delay.ms send.buffer.bytes status.storage.topic"
).split()

# Version B (some words lost in conversion, one addition: producer.partitioner.class).
PRODUCER_B = (
    "producer.acks producer.batch.size producer.buffer.memory producer.compression.type "
    "producer.enable.idempotence producer.key.serializer producer.max.request.size producer.partitioner.class "
    "producer.value.serializer"
).split()
CONSUMER_B = (
    "consumer.check.crcs consumer.fetch.max.bytes consumer.fetch.min.bytes consumer.key.deserializer "
    "consumer.max.partition.fetch.bytes consumer.max.poll.records consumer.partition.assignment.strategy "
    "consumer.value.deserializer"
).split()
FORBIDDEN_B = (
    "access.control. admin. admin.listeners.https. client. connect. inter.worker. internal. listeners.https. "
    "metrics. metrics.context. rest. sasl. security. socket. ssl. topic.tracking. worker. bootstrap.servers "
    "connector.client.config.override.policy listeners metric.reporters plugin.path receive.buffer.bytes "
    "response.http.headers.config send.buffer.bytes"
).split()


def _rules(values: dict[str, str]) -> dict[str | None, str | None]:
    return {p.key: p.rule for p in msk_problems(values)}


# --- allow-lists ----------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(set(PRODUCER_A) | set(PRODUCER_B) | set(CONSUMER_A) | set(CONSUMER_B)))
def test_keys_allowed_by_either_version_pass(key: str) -> None:
    assert msk_problems({**CONVERTERS, key: "1"}) == []


def test_allow_lists_are_the_union_of_both_versions() -> None:
    assert ALLOWED_PRODUCER == frozenset(PRODUCER_A) | frozenset(PRODUCER_B)
    assert ALLOWED_CONSUMER == frozenset(CONSUMER_A) | frozenset(CONSUMER_B)


def test_keys_only_one_version_allows() -> None:
    # partitioner.class only in version B, fetch.max.wait.ms only in version A.
    assert "producer.partitioner.class" not in PRODUCER_A
    assert "consumer.fetch.max.wait.ms" not in CONSUMER_B
    values = {**CONVERTERS, "producer.partitioner.class": "x", "consumer.fetch.max.wait.ms": "500"}
    assert msk_problems(values) == []


@pytest.mark.parametrize(
    "key, rule",
    [
        ("producer.linger.ms", "msk:producer-allow-list"),
        ("producer.transactional.id", "msk:producer-allow-list"),
        ("producer.override.acks", "msk:producer-allow-list"),
        ("consumer.max.poll.interval.ms", "msk:consumer-allow-list"),
        ("consumer.group.id", "msk:consumer-allow-list"),
        # A producer key is not allowed under consumer. and vice versa.
        ("consumer.acks", "msk:consumer-allow-list"),
        ("producer.fetch.max.bytes", "msk:producer-allow-list"),
    ],
)
def test_keys_off_the_allow_lists_are_refused(key: str, rule: str) -> None:
    problems = msk_problems({**CONVERTERS, key: "1"})
    assert len(problems) == 1
    problem = problems[0]
    assert (problem.key, problem.rule, problem.is_error) == (key, rule, True)
    client = key.split(".")[0]
    assert problem.message == f"MSK Connect refuses it (not on the allow-list of {client}. properties)"


def test_producer_linger_ms_names_file_and_line() -> None:
    props = parse_properties(
        "key.converter=a\nvalue.converter=b\n# tuning\nproducer.linger.ms=5\n", "msk-worker.properties"
    )
    problems = msk_problems(props, props.origin, props.source)
    assert [str(p) for p in problems] == [
        "msk-worker.properties:4: producer.linger.ms: MSK Connect refuses it "
        "(not on the allow-list of producer. properties)"
    ]
    assert problems[0].rule == "msk:producer-allow-list"


# --- forbidden prefixes and keys --------------------------------------------------


@pytest.mark.parametrize(
    "key, prefix",
    [
        ("ssl.truststore.location", "ssl."),
        ("sasl.jaas.config", "sasl."),
        ("sasl.mechanism", "sasl."),
        ("security.protocol", "security."),
        ("rest.advertised.host.name", "rest."),
        ("admin.client.id", "admin."),
        ("admin.listeners.https.ssl.keystore.location", "admin.listeners.https."),
        ("worker.sync.timeout.ms", "worker."),
        ("worker.unsync.backoff.ms", "worker."),
        ("metrics.num.samples", "metrics."),
        ("metrics.context.connect.kafka.cluster.id", "metrics.context."),
        ("listeners.https.ssl.key.password", "listeners.https."),
        ("access.control.allow.origin", "access.control."),
        ("client.id", "client."),
        ("connect.protocol", "connect."),
        ("inter.worker.key.size", "inter.worker."),
        ("internal.key.converter", "internal."),
        ("socket.connection.setup.timeout.ms", "socket."),
        ("topic.tracking.enable", "topic.tracking."),
    ],
)
def test_forbidden_prefix_names_the_longest_prefix(key: str, prefix: str) -> None:
    problems = msk_problems({**CONVERTERS, key: "x"})
    assert [(p.key, p.rule, p.message) for p in problems] == [
        (key, f"msk:forbidden-prefix:{prefix}", f"MSK Connect refuses it (forbidden prefix {prefix})")
    ]


@pytest.mark.parametrize(
    "key",
    [
        "group.id",
        "bootstrap.servers",
        "config.storage.topic",
        "status.storage.topic",
        "scheduled.rebalance.max.delay.ms",
        "listeners",
        "connections.max.idle.ms",
        "connector.client.config.override.policy",
        "metric.reporters",
        "plugin.path",
        "receive.buffer.bytes",
        "send.buffer.bytes",
        "response.http.headers.config",
    ],
)
def test_forbidden_keys_name_their_rule(key: str) -> None:
    problems = msk_problems({**CONVERTERS, key: "x"})
    assert [(p.key, p.rule, p.message) for p in problems] == [
        (key, f"msk:forbidden-key:{key}", f"MSK Connect refuses it (forbidden property {key})")
    ]


def test_forbidden_lists_are_the_union_of_both_versions() -> None:
    written = set(FORBIDDEN_PREFIXES) | set(FORBIDDEN_KEYS)
    assert written == set(FORBIDDEN_A) | set(FORBIDDEN_B)
    assert all(p.endswith(".") for p in FORBIDDEN_PREFIXES)
    assert not any(k.endswith(".") for k in FORBIDDEN_KEYS)


@pytest.mark.parametrize(
    "key",
    [
        "offset.storage.topic",
        "offset.storage.partitions",
        "status.storage.partitions",
        "offset.flush.interval.ms",
        "config.providers",
        "config.providers.secretManager.class",
        "key.converter.schemas.enable",
        "value.converter.schemas.enable",
        "header.converter",
        "errors.tolerance",
        # Close to forbidden names, but not them.
        "listenersx",
        "group.id.suffix",
        "sslx.enabled",
        "restful",
        "workers",
    ],
)
def test_other_keys_are_allowed(key: str) -> None:
    assert msk_problems({**CONVERTERS, key: "x"}) == []


# --- required converters ----------------------------------------------------------


def test_missing_converters_are_required() -> None:
    problems = msk_problems({"offset.storage.topic": "t"}, source="msk.properties")
    assert [(p.key, p.rule, p.origin, p.message) for p in problems] == [
        ("key.converter", "msk:required", Origin("msk.properties"), "is required by MSK Connect"),
        ("value.converter", "msk:required", Origin("msk.properties"), "is required by MSK Connect"),
    ]


def test_missing_key_converter_alone() -> None:
    problems = msk_problems({"value.converter": "x"})
    assert [(p.key, p.rule, p.origin) for p in problems] == [("key.converter", "msk:required", None)]


def test_all_problems_reported_at_once() -> None:
    values = {"value.converter": "x", "group.id": "g", "producer.linger.ms": "5", "ssl.key.password": "p"}
    assert _rules(values) == {
        "key.converter": "msk:required",
        "group.id": "msk:forbidden-key:group.id",
        "producer.linger.ms": "msk:producer-allow-list",
        "ssl.key.password": "msk:forbidden-prefix:ssl.",
    }


# --- realistic configurations -------------------------------------------------------


def test_default_msk_worker_configuration_passes() -> None:
    assert msk_problems(dict(CONVERTERS)) == []


def test_aws_example_with_secrets_manager_provider_passes() -> None:
    # The example of AWS's page on offset.storage.topic.
    text = """\
config.providers.secretManager.param.aws.region=us-east-1
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
config.providers.secretManager.class=com.github.jcustenborder.kafka.config.aws.SecretsManagerConfigProvider
config.providers=secretManager
offset.storage.topic=__amazon_msk_connect_offsets_my-mskc-connector_12345678-09e7-4abc-8be8-c657f7e4ff32-2
"""
    props = parse_properties(text, "msk-worker.properties")
    assert msk_problems(props, props.origin, props.source) == []


def test_realistic_tuned_msk_worker_passes() -> None:
    values = {
        **CONVERTERS,
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
        "offset.storage.topic": "__my_offsets",
        "offset.flush.interval.ms": "10000",
        "producer.acks": "all",
        "producer.compression.type": "lz4",
        "producer.enable.idempotence": "true",
        "producer.max.request.size": "10485760",
        "consumer.auto.offset.reset": "earliest",
        "consumer.max.poll.records": "500",
        "consumer.fetch.max.wait.ms": "500",
    }
    assert msk_problems(values) == []


def test_a_self_managed_worker_file_is_mostly_refused() -> None:
    text = """\
bootstrap.servers=b-1.msk.example.com:9098
group.id=connect-cluster
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
config.storage.topic=connect-configs
offset.storage.topic=connect-offsets
status.storage.topic=connect-status
security.protocol=SASL_SSL
sasl.mechanism=AWS_MSK_IAM
listeners=http://:8083
"""
    props = parse_properties(text, "w.properties")
    problems = msk_problems(props, props.origin, props.source)
    assert [(p.origin.line, p.rule) for p in problems] == [
        (1, "msk:forbidden-key:bootstrap.servers"),
        (2, "msk:forbidden-key:group.id"),
        (5, "msk:forbidden-key:config.storage.topic"),
        (7, "msk:forbidden-key:status.storage.topic"),
        (8, "msk:forbidden-prefix:security."),
        (9, "msk:forbidden-prefix:sasl."),
        (10, "msk:forbidden-key:listeners"),
    ]
    assert all(p.is_error for p in problems)
