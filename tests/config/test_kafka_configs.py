"""connectd's worker and connector keys against Kafka Connect's ConfigDefs.

Cases ported from Kafka's tests (ConfigDefTest, DistributedConfigTest,
RestServerConfigTest, ConnectorConfigTest, SourceConnectorConfigTest) and
from reading WorkerConfig, DistributedConfig, RestServerConfig,
ConnectorConfig and SinkConnectorConfig key by key: inputs and what Kafka
accepts or refuses. Deliberate differences are listed in
docs/configuration.md, "Where connectd differs from Kafka Connect".
"""

from __future__ import annotations

import pytest

from connectd import secrets
from connectd.config.clients import client_settings
from connectd.config.connector import COMMON_DEF, SINK_DEF, SOURCE_DEF, connector_problems
from connectd.config.definitions import ConfigProblem, Type, display_value, parse_value
from connectd.config.worker import WorkerConfig
from connectd.config.worker_keys import COMMON_WORKER_DEF, DISTRIBUTED_DEF, STANDALONE_DEF
from connectd.errors import ConfigError
from connectd.secrets import HIDDEN

BASE = {
    "bootstrap.servers": "localhost:9092",
    "group.id": "connect-cluster",
    "config.storage.topic": "connect-configs",
    "offset.storage.topic": "connect-offsets",
    "status.storage.topic": "connect-status",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
}


@pytest.fixture(autouse=True)
def _forget_secrets():
    secrets.forget_all()
    yield
    secrets.forget_all()


def _problems(values: dict[str, str], mode: str = "distributed") -> list[ConfigProblem]:
    return WorkerConfig({**BASE, **values} if mode == "distributed" else values, mode).problems(check_classes=False)


def _errors(values: dict[str, str], mode: str = "distributed") -> list[tuple[str | None, str]]:
    return [(p.key, p.message) for p in _problems(values, mode) if p.is_error]


def _warnings(values: dict[str, str]) -> list[tuple[str | None, str]]:
    return [(p.key, p.message) for p in _problems(values) if not p.is_error]


def _refuses(definition, key: str, raw: str) -> bool:
    try:
        definition[key].parse(raw)
    except ValueError:
        return True
    return False


# --- ConfigDef.parseType --------------------------------------------------------


@pytest.mark.parametrize("raw, expected", [
    ("a,b", ["a", "b"]), (" a , b ", ["a", "b"]), ("a, b,c", ["a", "b", "c"]),
    ("", []), ("  ", []),
    # Kafka splits with \s*,\s* keeping empty items, for validators to refuse.
    ("a,,b", ["a", "", "b"]), ("a,", ["a", ""]), (",,,", ["", "", "", ""]),
])
def test_list_is_split_on_commas_with_blanks_around_them(raw: str, expected: list[str]) -> None:
    assert parse_value(Type.LIST, raw) == expected


@pytest.mark.parametrize("raw, expected", [("true", True), ("TRUE", True), (" False ", False), ("fAlSe", False)])
def test_boolean_in_any_case_and_trimmed(raw: str, expected: bool) -> None:
    assert parse_value(Type.BOOLEAN, raw) is expected


@pytest.mark.parametrize("raw", ["yes", "1", "t", "", "truee"])
def test_boolean_refuses_anything_else(raw: str) -> None:
    with pytest.raises(ValueError, match="expected true or false"):
        parse_value(Type.BOOLEAN, raw)


@pytest.mark.parametrize("type_, low, high", [
    (Type.SHORT, -32768, 32767), (Type.INT, -2147483648, 2147483647),
    (Type.LONG, -9223372036854775808, 9223372036854775807),
])
def test_integers_have_javas_ranges(type_: Type, low: int, high: int) -> None:
    assert parse_value(type_, str(low)) == low and parse_value(type_, f" {high} ") == high
    assert parse_value(type_, "+5") == 5  # Integer.parseInt takes a plus sign
    for outside in (low - 1, high + 1):
        with pytest.raises(ValueError, match="expected a .*-bit integer"):
            parse_value(type_, str(outside))
    for not_a_number in ("1.0", "1e3", "0x10", "1_000", "", "ten"):
        with pytest.raises(ValueError):
            parse_value(type_, not_a_number)


@pytest.mark.parametrize("raw, expected", [
    ("1.5", 1.5), (" -2 ", -2.0), ("1e3", 1000.0), (".5", 0.5), ("5.", 5.0), ("2f", 2.0), ("1.0d", 1.0),
    ("Infinity", float("inf")), ("-Infinity", float("-inf")),
])
def test_double_takes_javas_syntax(raw: str, expected: float) -> None:
    assert parse_value(Type.DOUBLE, raw) == expected


def test_double_nan_is_a_number_as_in_java() -> None:
    value = parse_value(Type.DOUBLE, "NaN")
    assert value != value


@pytest.mark.parametrize("raw", ["1_000", "inf", "nan", "infinity", "", "1e", "abc"])
def test_double_refuses_what_double_parse_double_refuses(raw: str) -> None:
    # Python's float() takes the first four; Java's Double.parseDouble does not.
    with pytest.raises(ValueError, match="expected a number"):
        parse_value(Type.DOUBLE, raw)


def test_strings_are_trimmed_as_javas_trim_does() -> None:
    # String.trim(): every character up to U+0020, and no other.
    assert parse_value(Type.STRING, "\x01 abc\x1f") == "abc"
    assert parse_value(Type.STRING, "\u00a0abc\x85") == "\u00a0abc\x85"
    assert parse_value(Type.BOOLEAN, "\x00true\x00") is True
    with pytest.raises(ValueError):
        parse_value(Type.INT, "\u00a05")


def test_list_items_are_trimmed_of_ascii_white_space_only() -> None:
    # Split on \s*,\s*: Java's \s is [ \t\n\x0B\f\r].
    assert parse_value(Type.LIST, "a \t,\n b") == ["a", "b"]
    assert parse_value(Type.LIST, "a,\u00a0b") == ["a", "\u00a0b"]


def test_string_and_class_are_trimmed() -> None:
    assert parse_value(Type.STRING, "  x y  ") == "x y"
    assert parse_value(Type.CLASS, " org.example.C ") == "org.example.C"
    with pytest.raises(ValueError, match="expected a class name"):
        parse_value(Type.CLASS, "  ")


def test_password_is_trimmed_like_every_string() -> None:
    assert parse_value(Type.PASSWORD, "  s3cret \t").value() == "s3cret"


def test_password_is_hidden_in_problems_and_listings() -> None:
    problems = _problems({"ssl.keystore.password": "hunter2", "sasl.login.refresh.window.factor": "2"})
    assert all("hunter2" not in str(p) for p in problems)
    assert WorkerConfig({**BASE, "ssl.keystore.password": "hunter2"}).display()["ssl.keystore.password"] == HIDDEN
    assert display_value(DISTRIBUTED_DEF["ssl.keystore.password"], "${file:/s:pw}") == "${file:/s:pw}"


# --- WorkerConfig / DistributedConfig / StandaloneConfig -----------------------


@pytest.mark.parametrize("key, default", [
    ("bootstrap.servers", ["localhost:9092"]), ("client.id", ""), ("header.converter",
     "org.apache.kafka.connect.storage.SimpleHeaderConverter"),
    ("task.shutdown.graceful.timeout.ms", 5000), ("offset.flush.interval.ms", 60000),
    ("offset.flush.timeout.ms", 5000), ("plugin.path", None), ("metric.reporters", []), ("config.providers", []),
    ("connector.client.config.override.policy", "All"), ("topic.creation.enable", True),
    ("topic.tracking.enable", True), ("topic.tracking.allow.reset", True), ("listeners", ["http://:8083"]),
    ("rest.advertised.host.name", None), ("rest.advertised.port", None), ("rest.advertised.listener", None),
    ("access.control.allow.origin", ""), ("access.control.allow.methods", ""), ("rest.extension.classes", []),
    ("admin.listeners", None), ("response.http.headers.config", ""), ("ssl.client.auth", "none"),
    ("security.protocol", "PLAINTEXT"), ("sasl.mechanism", "GSSAPI"), ("ssl.truststore.type", "JKS"),
    ("ssl.keystore.type", "JKS"), ("ssl.endpoint.identification.algorithm", "https"),
    ("ssl.enabled.protocols", ["TLSv1.2", "TLSv1.3"]), ("metadata.max.age.ms", 300000),
    ("request.timeout.ms", 40000), ("retry.backoff.ms", 100), ("retry.backoff.max.ms", 1000),
    ("reconnect.backoff.ms", 50), ("reconnect.backoff.max.ms", 1000), ("connections.max.idle.ms", 540000),
    ("socket.connection.setup.timeout.ms", 10000), ("send.buffer.bytes", 131072),
    ("receive.buffer.bytes", 32768), ("client.dns.lookup", "use_all_dns_ips"),
    ("session.timeout.ms", 10000), ("heartbeat.interval.ms", 3000), ("rebalance.timeout.ms", 60000),
    ("worker.sync.timeout.ms", 3000), ("offset.storage.partitions", 25),
    ("status.storage.partitions", 5), ("config.storage.replication.factor", 3),
    ("offset.storage.replication.factor", 3), ("status.storage.replication.factor", 3),
    ("connect.protocol", "sessioned"), ("scheduled.rebalance.max.delay.ms", 300000),
    ("inter.worker.key.generation.algorithm", "HmacSHA256"), ("inter.worker.key.size", None),
    ("inter.worker.key.ttl.ms", 3600000), ("inter.worker.signature.algorithm", "HmacSHA256"),
    ("inter.worker.verification.algorithms", ["HmacSHA256"]), ("exactly.once.source.support", "disabled"),
])
def test_worker_defaults_are_kafkas(key: str, default: object) -> None:
    assert DISTRIBUTED_DEF[key].default_value() == default


def test_unsync_backoff_has_no_default_on_purpose() -> None:
    """Kafka's 300000 takes a worker out of the group for five minutes when the config topic is
    slow to read; connectd does that only when the key is set (docs/configuration.md)."""
    assert DISTRIBUTED_DEF["worker.unsync.backoff.ms"].default_value() is None


@pytest.mark.parametrize("key", ["key.converter", "value.converter", "group.id", "config.storage.topic",
                                 "offset.storage.topic", "status.storage.topic"])
def test_required_distributed_keys_are_kafkas(key: str) -> None:
    assert DISTRIBUTED_DEF[key].required


def test_standalone_requires_the_offsets_file() -> None:
    assert STANDALONE_DEF["offset.storage.file.filename"].required


def test_bootstrap_servers_defaults_to_localhost_as_in_kafka() -> None:
    values = {k: v for k, v in BASE.items() if k != "bootstrap.servers"}
    assert _errors(values) == []
    config = WorkerConfig(values)
    assert config.client_config("producer")["bootstrap.servers"] == "localhost:9092"
    assert config.client_config("admin", "aiokafka")["bootstrap_servers"] == ["localhost:9092"]


@pytest.mark.parametrize("key", ["offset.storage.partitions", "status.storage.partitions"])
def test_partitions_are_minus_one_or_positive(key: str) -> None:
    for ok in ("-1", "1", "2", "100"):
        assert not _refuses(DISTRIBUTED_DEF, key, ok)
    for bad in ("0", "-2", "-99"):
        assert _refuses(DISTRIBUTED_DEF, key, bad), bad


@pytest.mark.parametrize("key", ["config.storage.replication.factor", "offset.storage.replication.factor",
                                 "status.storage.replication.factor"])
def test_replication_factors_are_minus_one_or_positive(key: str) -> None:
    for ok in ("-1", "1", "3", "32767"):
        assert not _refuses(DISTRIBUTED_DEF, key, ok)
    for bad in ("0", "-2", "-99", "32768"):
        assert _refuses(DISTRIBUTED_DEF, key, bad), bad


def test_internal_topic_configs_are_passed_on_not_unknown() -> None:
    # DistributedConfig.configStorageTopicSettings(): config.storage.<topic config>.
    values = {"config.storage.min.insync.replicas": "2", "offset.storage.retention.ms": "-1",
              "status.storage.baz.bim": "100"}
    assert _warnings(values) == []


def test_security_protocol_in_any_case_and_nothing_else() -> None:
    assert _errors({"security.protocol": "sasl_ssl"}) == []
    assert [key for key, _ in _errors({"security.protocol": "abc"})] == ["security.protocol"]


def test_os_default_socket_buffer_sizes() -> None:
    assert _errors({"send.buffer.bytes": "-1", "receive.buffer.bytes": "-1"}) == []
    assert {key for key, _ in _errors({"send.buffer.bytes": "-2", "receive.buffer.bytes": "-2"})} == {
        "send.buffer.bytes", "receive.buffer.bytes"}


def test_empty_list_of_verification_algorithms_is_refused() -> None:
    assert [key for key, _ in _errors({"inter.worker.verification.algorithms": ""})] == [
        "inter.worker.verification.algorithms"]


def test_signature_algorithm_must_be_a_verification_algorithm() -> None:
    errors = _errors({"inter.worker.signature.algorithm": "HmacSHA512",
                      "inter.worker.verification.algorithms": "HmacSHA256"})
    assert errors == [("inter.worker.signature.algorithm",
                       "expected one of inter.worker.verification.algorithms (HmacSHA256), "
                       "or workers would refuse each other's requests")]


def test_key_generation_algorithm_need_not_be_a_verification_algorithm() -> None:
    assert _errors({"inter.worker.key.generation.algorithm": "HmacSHA512",
                    "inter.worker.signature.algorithm": "HmacSHA256",
                    "inter.worker.verification.algorithms": "HmacSHA256,HmacSHA384"}) == []


def test_invalid_key_size_is_refused() -> None:
    assert [key for key, _ in _errors({"inter.worker.key.size": "0"})] == ["inter.worker.key.size"]


def test_exactly_once_source_support_is_case_insensitive() -> None:
    assert _errors({"exactly.once.source.support": "DISABLED"}) == []


def test_connect_protocol_is_case_insensitive() -> None:
    assert _errors({"connect.protocol": "Sessioned"}) == []
    assert [key for key, _ in _errors({"connect.protocol": "v2"})] == ["connect.protocol"]


def test_scheduled_rebalance_delay_is_between_0_and_max_int() -> None:
    assert _errors({"scheduled.rebalance.max.delay.ms": "0"}) == []
    assert _errors({"scheduled.rebalance.max.delay.ms": "-1"}) != []


# Keys of Kafka's WorkerConfig / DistributedConfig that connectd has no use for: accepted,
# and the check says why each is ignored instead of calling it unknown.
KAFKA_KEYS_IGNORED = [
    "plugin.path", "plugin.discovery", "metric.reporters", "metrics.sample.window.ms", "metrics.num.samples",
    "metrics.recording.level", "metadata.recovery.strategy", "socket.connection.setup.timeout.max.ms",
    "ssl.protocol", "ssl.provider", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation", "ssl.engine.factory.class", "sasl.kerberos.service.name",
    "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds", "sasl.client.callback.handler.class",
    "sasl.login.class", "sasl.login.connect.timeout.ms",
    "sasl.login.read.timeout.ms", "sasl.login.retry.backoff.max.ms", "sasl.login.retry.backoff.ms",
    "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms", "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "sasl.oauthbearer.clock.skew.seconds",
    "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.header.urlencode",
]


@pytest.mark.parametrize("key", KAFKA_KEYS_IGNORED)
def test_kafka_worker_keys_connectd_does_not_use_are_declared_ignored(key: str) -> None:
    declared = COMMON_WORKER_DEF[key]
    assert declared.ignored and "ignored" in declared.documentation
    value = declared.default_text() if declared.default is not None else {Type.INT: "1"}.get(declared.type, "x")
    problems = [p for p in _problems({key: value}) if p.key == key or key in p.message]
    assert [(p.severity, p.message.startswith("is accepted for compatibility and ignored")) for p in problems] == [
        ("warning", True)]


def test_ignored_keys_are_still_type_checked_as_kafka_does() -> None:
    assert {key for key, _ in _errors({"sasl.login.refresh.window.factor": "2",
                                       "metrics.num.samples": "0", "metrics.recording.level": "debug"})} == {
        "sasl.login.refresh.window.factor", "metrics.num.samples", "metrics.recording.level"}


@pytest.mark.parametrize("key, value, setting, expected", [
    ("client.dns.lookup", "resolve_canonical_bootstrap_servers_only", "client.dns.lookup",
     "resolve_canonical_bootstrap_servers_only"),
    ("retry.backoff.max.ms", "5000", "retry.backoff.max.ms", 5000),
    ("socket.connection.setup.timeout.ms", "7000", "socket.connection.setup.timeout.ms", 7000),
])
def test_kafka_client_keys_librdkafka_has_reach_the_clients(key: str, value: str, setting: str,
                                                            expected: object) -> None:
    assert _problems({key: value}) == []
    for client in ("producer", "consumer", "admin"):
        assert WorkerConfig({**BASE, key: value}).client_config(client)[setting] == expected


def test_client_dns_lookup_takes_kafkas_values_only() -> None:
    assert [key for key, _ in _errors({"client.dns.lookup": "default"})] == ["client.dns.lookup"]


def test_unknown_worker_keys_warn_as_kafka_logs_them() -> None:
    assert _warnings({"totally.unknown": "x"}) == [(None, "unknown key 'totally.unknown'")]


def test_removed_internal_converters_are_unknown_as_in_kafka() -> None:
    # Kafka 3.0 removed them and warns that they have no effect.
    assert [message for _, message in _warnings({"internal.key.converter": "x"})] == [
        "unknown key 'internal.key.converter'"]


def test_an_offsets_file_in_a_distributed_worker_is_warned_about() -> None:
    # Kafka would pass it on as the offset topic's config "file.filename".
    assert [key for key, _ in _warnings({"offset.storage.file.filename": "/tmp/o"})] == [
        "offset.storage.file.filename"]


# --- RestServerConfig -------------------------------------------------------------


@pytest.mark.parametrize("raw, expected", [
    ("http://a.b:9999", ["http://a.b:9999"]),
    ("http://a.b:9999, https://a.b:7812", ["http://a.b:9999", "https://a.b:7812"]),
    ("HTTP://myhost:8083,HTTPS://myhost:8084", ["HTTP://myhost:8083", "HTTPS://myhost:8084"]),
])
def test_listeners_allowed(raw: str, expected: list[str]) -> None:
    assert DISTRIBUTED_DEF["listeners"].parse(raw) == expected


@pytest.mark.parametrize("raw", ["", ",,,", "http://a.b:9999,", "http://a.b:9999, ,https://a.b:9999"])
def test_listeners_not_allowed(raw: str) -> None:
    assert [key for key, _ in _errors({"listeners": raw})] == ["listeners"]


def test_admin_listeners_allowed() -> None:
    assert DISTRIBUTED_DEF["admin.listeners"].default_value() is None
    assert DISTRIBUTED_DEF["admin.listeners"].parse("") == []
    assert DISTRIBUTED_DEF["admin.listeners"].parse("http://a.b:9999, https://a.b:7812") == [
        "http://a.b:9999", "https://a.b:7812"]


@pytest.mark.parametrize("raw", ["http://a.b:9999,", "http://a.b:9999, ,https://a.b:9999"])
def test_admin_listeners_refuse_empty_and_blank_items(raw: str) -> None:
    assert [key for key, _ in _errors({"admin.listeners": raw})] == ["admin.listeners"]


@pytest.mark.parametrize("rule", [
    "add \t Cache-Control: no-cache, no-store, must-revalidate",
    "add \r X-XSS-Protection: 1; mode=block",
    "\n add Strict-Transport-Security: max-age=31536000; includeSubDomains",
    "AdD   Strict-Transport-Security:  \r  max-age=31536000;  includeSubDomains",
    "AdD \t Strict-Transport-Security : \n   max-age=31536000;  includeSubDomains",
    "add X-Content-Type-Options: \r nosniff",
    "Set \t X-Frame-Options: \t Deny\n ",
    "seT \t X-Cache-Info: \t not cacheable\n ",
    "seTDate \t Expires: \r 31540000000",
    "adDdate \n Last-Modified: \t 0",
])
def test_valid_response_header_rules(rule: str) -> None:
    # Quoted, so that a comma in a value does not start another rule.
    assert _errors({"response.http.headers.config": f'"{rule}"'}) == []


@pytest.mark.parametrize("rule", [
    "set \t",
    "badaction \t X-Frame-Options:DENY",
    "set add X-XSS-Protection:1",
    "addX-XSS-Protection",
    "X-XSS-Protection:",
    "add set X-XSS-Protection: 1",
    "add X-XSS-Protection",
    "set X-Frame-Options:DENY, add  :no-cache, no-store, must-revalidate",
])
def test_invalid_response_header_rules(rule: str) -> None:
    assert [key for key, _ in _errors({"response.http.headers.config": rule})] == ["response.http.headers.config"]


def test_ssl_client_auth_takes_kafkas_values_in_kafkas_case() -> None:
    for ok in ("none", "requested", "required"):
        assert _errors({"ssl.client.auth": ok}) == []
    for bad in ("abc", "REQUIRED", "None"):
        assert [key for key, _ in _errors({"ssl.client.auth": bad})] == ["ssl.client.auth"], bad


# --- ConnectorConfig / SinkConnectorConfig / SourceConnectorConfig -----------------


@pytest.mark.parametrize("key, default", [
    ("tasks.max", 1), ("tasks.max.enforce", True), ("key.converter", None), ("value.converter", None),
    ("header.converter", None), ("transforms", []), ("predicates", []), ("config.action.reload", "restart"),
    ("errors.retry.timeout", 0), ("errors.retry.delay.max.ms", 60000), ("errors.tolerance", "none"),
    ("errors.log.enable", False), ("errors.log.include.messages", False),
])
def test_connector_defaults_are_kafkas(key: str, default: object) -> None:
    assert COMMON_DEF[key].default_value() == default


@pytest.mark.parametrize("definition, key, default", [
    (SINK_DEF, "topics", []), (SINK_DEF, "topics.regex", ""), (SINK_DEF, "errors.deadletterqueue.topic.name", ""),
    (SINK_DEF, "errors.deadletterqueue.topic.replication.factor", 3),
    (SINK_DEF, "errors.deadletterqueue.context.headers.enable", False),
    (SOURCE_DEF, "topic.creation.groups", []), (SOURCE_DEF, "exactly.once.support", "requested"),
    (SOURCE_DEF, "transaction.boundary", "poll"), (SOURCE_DEF, "transaction.boundary.interval.ms", None),
    (SOURCE_DEF, "offsets.storage.topic", None),
])
def test_sink_and_source_defaults_are_kafkas(definition, key: str, default: object) -> None:
    assert definition[key].default_value() == default


def test_name_is_required_and_not_empty() -> None:
    assert COMMON_DEF["name"].required
    assert [p.message for p in COMMON_DEF.validate({"name": ""}) if p.key == "name"] == [
        "expected a non-empty string"]


@pytest.mark.parametrize("name, codes", [("a\nb", "10"), ("tab\there", "9"), ("be\x07ll", "7"),
                                         ("del\x7f", "127"), ("c1\x85", "133"), ("x\ty\nz", "9, 10")])
def test_name_refuses_control_characters(name: str, codes: str) -> None:
    assert [p.message for p in COMMON_DEF.validate({"name": name}) if p.key == "name"] == [
        f"expected a string without control characters, got the characters {codes}"]


def test_name_with_outer_white_space_or_unicode_is_fine() -> None:
    # Strings are trimmed (of everything up to U+0020) before they are checked, as in Kafka.
    assert [p for p in COMMON_DEF.validate({"name": "\n my connector ☃ \t\x07"}) if p.key == "name"] == []


@pytest.mark.parametrize("key, allowed, refused", [
    ("errors.tolerance", ["none", "all"], ["ALL", "None", "some"]),
    ("config.action.reload", ["none", "restart"], ["RESTART", "None", "reload"]),
])
def test_connector_strings_are_matched_in_kafkas_case(key: str, allowed: list[str], refused: list[str]) -> None:
    for value in allowed:
        assert not _refuses(COMMON_DEF, key, value)
    for value in refused:
        assert _refuses(COMMON_DEF, key, value), value


def test_exactly_once_and_transaction_boundary_are_case_insensitive() -> None:
    assert not _refuses(SOURCE_DEF, "exactly.once.support", "REQUIRED")
    assert not _refuses(SOURCE_DEF, "transaction.boundary", "Interval")
    assert _refuses(SOURCE_DEF, "transaction.boundary.interval.ms", "-1")


def test_retry_delay_of_zero_retries_at_once_as_in_kafka() -> None:
    assert not _refuses(COMMON_DEF, "errors.retry.delay.max.ms", "0")
    assert not _refuses(COMMON_DEF, "errors.retry.timeout", "-1")


def test_tasks_max_is_at_least_one() -> None:
    assert _refuses(COMMON_DEF, "tasks.max", "0") and not _refuses(COMMON_DEF, "tasks.max", "1")


def _sink(values: dict[str, str]) -> list[tuple[str | None, str]]:
    return [(p.key, p.message) for p in connector_problems(values, "sink")]


def test_topics_and_regex_together_are_an_error_on_both() -> None:
    both = "expected only one of topics and topics.regex"
    assert _sink({"topics": "a", "topics.regex": "b.*"}) == [("topics", both), ("topics.regex", both)]


def test_neither_topics_nor_regex_is_an_error_on_both() -> None:
    required = "one of topics and topics.regex is required"
    assert _sink({}) == [("topics", required), ("topics.regex", required)]
    assert _sink({"topics": " ", "topics.regex": ""}) == [("topics", required), ("topics.regex", required)]


def test_dead_letter_topic_consumed_is_an_error_on_the_consuming_key() -> None:
    assert [key for key, _ in _sink({"topics": "a, dlq", "errors.deadletterqueue.topic.name": " dlq "})] == [
        "topics"]
    assert [key for key, _ in _sink({"topics.regex": "d.*", "errors.deadletterqueue.topic.name": "dlq"})] == [
        "topics.regex"]
    # matches(): the whole name.
    assert _sink({"topics.regex": "d", "errors.deadletterqueue.topic.name": "dlq"}) == []


def test_duplicate_transform_and_predicate_aliases_are_refused() -> None:
    problems = _sink({"topics": "a", "transforms": "a,a", "transforms.a.type": "X",
                      "predicates": "p,p", "predicates.p.type": "Y"})
    assert problems == [("transforms", "alias 'a' is listed twice"), ("predicates", "alias 'p' is listed twice")]


def test_duplicate_topic_creation_groups_are_refused() -> None:
    problems = connector_problems({"topic.creation.groups": "g1, g2,g1"}, "source")
    assert [(p.key, p.message) for p in problems] == [("topic.creation.groups", "group 'g1' is listed twice")]


def test_default_topic_creation_group_may_be_listed() -> None:
    from connectd.runtime.source.topic_creation import TopicCreationRules

    values = {"topic.creation.groups": "default,group1,group2", "topic.creation.default.replication.factor": "1",
              "topic.creation.default.partitions": "1"}
    assert connector_problems(values, "source") == []
    assert TopicCreationRules.from_config(values).enabled


@pytest.mark.parametrize("key", ["topic.creation.default.partitions", "topic.creation.default.replication.factor"])
def test_topic_creation_counts_are_minus_one_or_positive(key: str) -> None:
    from connectd.runtime.source.topic_creation import TopicCreationRules

    values = {"topic.creation.default.partitions": "-1", "topic.creation.default.replication.factor": "-1"}
    assert TopicCreationRules.from_config(values).enabled
    for ok in ("1", "100"):
        assert TopicCreationRules.from_config({**values, key: ok}).enabled
    for bad in ("0", "-2", "-99"):
        with pytest.raises(ConfigError, match=key):
            TopicCreationRules.from_config({**values, key: bad})


def test_client_settings_keep_prefixed_and_override_values_last() -> None:
    found = client_settings({**BASE, "producer.bootstrap.servers": "p:1"}, "producer", "confluent",
                            overrides={"bootstrap.servers": "o:1"})
    assert found.settings["bootstrap.servers"] == "o:1"


def test_override_keys_are_carried_out_refused_or_warned_of_by_name() -> None:
    from connectd.config.connector import override_support_problems

    found = {p.key: p for p in override_support_problems({
        "consumer.override.group.id": "legacy", "consumer.override.max.poll.records": "10",
        "consumer.override.fetch.min.bytes": "1", "producer.override.linger.ms": "${env:LINGER}",
        "consumer.override.session.timeout.ms": "30000", "admin.override.retries": "3",
    }, resolve=lambda v: "7" if v == "${env:LINGER}" else v)}
    assert set(found) == {"consumer.override.session.timeout.ms", "admin.override.retries"}
    assert not found["consumer.override.session.timeout.ms"].is_error
    assert "never join the group" in found["consumer.override.session.timeout.ms"].message
    assert found["admin.override.retries"].is_error
