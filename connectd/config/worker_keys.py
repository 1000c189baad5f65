"""Every key of ``connect-distributed.properties`` and ``connect-standalone.properties``, declared.

Keys follow Kafka Connect's ``WorkerConfig``, ``DistributedConfig`` and
``StandaloneConfig`` (names, types, defaults), so an existing file works
unchanged. connectd's own additions are marked ``extension`` and listed as
such in the generated reference: ``spark.*`` is passed to Spark. Kafka's
client keys that the Python clients have no use for are declared and ignored
with the reason (``_IGNORED_KAFKA_KEYS``). The values themselves, read and
checked, are a :class:`~connectd.config.worker.WorkerConfig`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectd.config.definitions import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigKey,
    HostPortList,
    Importance,
    ListenerList,
    NonEmptyString,
    OneOf,
    Range,
    TopicName,
    Type,
    Validator,
    ValidList,
)
from connectd.config.response_headers import parse_header_config

__all__ = [
    "BASIC_AUTH_EXTENSION",
    "BASIC_AUTH_EXTENSIONS",
    "COMMON_WORKER_DEF",
    "DISTRIBUTED_DEF",
    "DRIVER_JAVA_OPTIONS",
    "MCU_COUNTS",
    "MODES",
    "STANDALONE_DEF",
    "definition_for",
    "detect_mode",
]

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW

#: The sizes of a worker MSK Connect offers (``mcuCount``); one MCU is 1 vCPU and 4 GiB of memory.
MCU_COUNTS = (1, 2, 4, 8)

#: Kafka's HTTP Basic authentication REST extension, which connectd has built in.
BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
BASIC_AUTH_EXTENSIONS = (BASIC_AUTH_EXTENSION, "BasicAuthSecurityRestExtension")
#: ``spark.driver.extraJavaOptions`` unless the worker properties set it: the C1 compiler alone, one
#: thread; the serial collector (G1's own structures and eager heap are ≈55 MiB more, for a heap that
#: holds only plans and batches' counts: BENCHMARKS.md, "Four source tasks' memory").
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:+UseSerialGC"


class _PortRange(Validator):
    """``first-last``, two ports, first not above last."""

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        first, dash, last = str(value).partition("-")
        if not (dash and first.strip().isdigit() and last.strip().isdigit()
                and 1 <= int(first) <= int(last) <= 65535):
            raise ValueError("expected a port range first-last, e.g. 8083-8099")

    def describe(self) -> str:
        return "first-last"


class _McuCount(Validator):
    """MSK Connect's MCU counts."""

    def __call__(self, value: Any) -> None:
        if value is not None and value not in MCU_COUNTS:
            raise ValueError(f"expected one of {self.describe()}")

    def describe(self) -> str:
        return "[" + ", ".join(map(str, MCU_COUNTS)) + "]"


class _ReplicationFactor(Range):
    # -1 asks the broker for its default, as Kafka allows for internal topics.
    def __call__(self, value: Any) -> None:
        super().__call__(value)
        if value == 0 or value < -1:
            raise ValueError("expected a replication factor of at least 1, or -1 for the broker's default")

    def describe(self) -> str:
        return "-1 (broker default) or [1,...,32767]"


class _Partitions(Range):
    def __call__(self, value: Any) -> None:
        super().__call__(value)
        if value == 0 or value < -1:
            raise ValueError("expected a partition count of at least 1, or -1 for the broker's default")

    def describe(self) -> str:
        return "-1 (broker default) or [1,...]"


class _AdminListeners(ListenerList):
    # Empty is allowed: it turns the /admin endpoints off (KIP-495).
    def __call__(self, value: Any) -> None:
        if value:
            super().__call__(value)

    def describe(self) -> str:
        return f"{super().describe()}, or empty"


class _ResponseHeaders(Validator):
    def __call__(self, value: Any) -> None:
        if not value.strip():
            return
        parse_header_config(value)

    def describe(self) -> str:
        return "[action] [header name]:[header value], comma-separated; action: set, add, setDate or addDate"


_POSITIVE_MS = Range.at_least(0)
_SECURITY_PROTOCOLS = CaseInsensitiveValidString("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_CLIENT_KEYS = [
    ConfigKey("bootstrap.servers", Type.LIST,
              "The Kafka brokers to connect to first, host:port pairs separated by commas. "
              "Only used to discover the whole cluster, so a few brokers are enough.",
              default="localhost:9092", importance=H, validator=HostPortList(), group="Kafka"),
    ConfigKey("client.id", Type.STRING,
              "Prefix of the client ids of this worker's Kafka clients, shown in broker logs and quotas.",
              default="", importance=L, group="Kafka"),
    ConfigKey("security.protocol", Type.STRING,
              "How the worker's clients talk to the brokers: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
              default="PLAINTEXT", importance=M, validator=_SECURITY_PROTOCOLS, group="Kafka security"),
    ConfigKey("sasl.mechanism", Type.STRING,
              "SASL mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM; GSSAPI (Kafka's "
              "default) is refused with a SASL security.protocol: the librdkafka here has no Kerberos.",
              default="GSSAPI", importance=M, validator=NonEmptyString(), group="Kafka security"),
    ConfigKey("sasl.jaas.config", Type.PASSWORD,
              "JAAS login module line, e.g. org.apache.kafka.common.security.plain.PlainLoginModule "
              "required username=\"u\" password=\"p\"; — connectd reads username and password (PLAIN, SCRAM), "
              "clientId, clientSecret, scope and extension_* (OAUTHBEARER), awsProfileName or awsRoleArn (MSK "
              "IAM) from it. Write secrets as config provider placeholders.",
              default=None, importance=M, group="Kafka security"),
    ConfigKey("sasl.login.callback.handler.class", Type.STRING,
              "With OAUTHBEARER: Kafka's org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler "
              "(tokens from sasl.oauthbearer.token.endpoint.url, clientId and clientSecret in the JAAS line) or AWS "
              "MSK IAM's software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler; others are refused.",
              default=None, importance=M, group="Kafka security"),
    ConfigKey("sasl.oauthbearer.token.endpoint.url", Type.STRING,
              "With OAUTHBEARER: the OAuth 2 token endpoint asked for client-credentials tokens.",
              default=None, importance=M, group="Kafka security"),
    ConfigKey("ssl.truststore.location", Type.STRING,
              "File of the CA certificates that sign the brokers' certificates: a JKS or PKCS12 store, or PEM "
              "(the file's content tells; JKS is converted with Java's keytool). https REST listeners check "
              "client certificates against it unless listeners.https.* keys are set.",
              default=None, importance=H, group="Kafka security"),
    ConfigKey("ssl.truststore.password", Type.PASSWORD,
              "Password of the trust store, if it has one.", default=None, importance=H, group="Kafka security"),
    ConfigKey("ssl.truststore.type", Type.STRING,
              "Format of the trust store: JKS, PKCS12 or PEM; the file's content tells, this only names "
              "the kind of a store that cannot be told.",
              default="JKS", importance=M, validator=CaseInsensitiveValidString("JKS", "PKCS12", "PEM"),
              group="Kafka security"),
    ConfigKey("ssl.keystore.location", Type.STRING,
              "The worker's own key store for mutual TLS with the brokers: JKS, PKCS12 or PEM (key and "
              "certificate chain). https REST listeners serve its certificate unless listeners.https.* keys "
              "are set.", default=None, importance=H,
              group="Kafka security"),
    ConfigKey("ssl.keystore.password", Type.PASSWORD,
              "Password of the key store.", default=None, importance=H, group="Kafka security"),
    ConfigKey("ssl.key.password", Type.PASSWORD,
              "Password of the private key in the key store.", default=None, importance=H, group="Kafka security"),
    ConfigKey("ssl.keystore.type", Type.STRING,
              "Format of the key store.", default="JKS", importance=M,
              validator=CaseInsensitiveValidString("JKS", "PKCS12", "PEM"), group="Kafka security"),
    ConfigKey("ssl.endpoint.identification.algorithm", Type.STRING,
              "https checks that the broker's certificate names its host; empty turns the check off.",
              default="https", importance=L, group="Kafka security"),
    ConfigKey("metadata.max.age.ms", Type.LONG,
              "How often clients refresh cluster metadata even without a reason to.",
              default=300000, importance=L, validator=_POSITIVE_MS, group="Kafka"),
    ConfigKey("request.timeout.ms", Type.INT,
              "How long a client waits for a broker's answer before retrying or failing.",
              default=40000, importance=M, validator=_POSITIVE_MS, group="Kafka"),
    ConfigKey("retry.backoff.ms", Type.LONG,
              "Wait before retrying a failed request.", default=100, importance=L, validator=_POSITIVE_MS,
              group="Kafka"),
    ConfigKey("client.dns.lookup", Type.STRING,
              "How clients use the addresses a broker's name resolves to: use_all_dns_ips tries each in turn; "
              "resolve_canonical_bootstrap_servers_only also resolves bootstrap servers to their canonical names. "
              "Given to the data plane's clients (librdkafka).",
              default="use_all_dns_ips", importance=M,
              validator=OneOf("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"), group="Kafka"),
    ConfigKey("retry.backoff.max.ms", Type.LONG,
              "Longest wait before retrying a failed request; the wait grows from retry.backoff.ms up to it.",
              default=1000, importance=L, validator=_POSITIVE_MS, group="Kafka"),
    ConfigKey("socket.connection.setup.timeout.ms", Type.LONG,
              "How long a client waits for a connection to a broker to be set up.", default=10000, importance=L,
              validator=_POSITIVE_MS, group="Kafka"),
    ConfigKey("reconnect.backoff.ms", Type.LONG,
              "Wait before reconnecting to a broker.", default=50, importance=L, validator=_POSITIVE_MS,
              group="Kafka"),
    ConfigKey("reconnect.backoff.max.ms", Type.LONG,
              "Longest wait between reconnections; the wait doubles up to it.", default=1000, importance=L,
              validator=_POSITIVE_MS, group="Kafka"),
    ConfigKey("connections.max.idle.ms", Type.LONG,
              "Close connections idle for longer than this.", default=540000, importance=M, group="Kafka"),
    ConfigKey("receive.buffer.bytes", Type.INT,
              "TCP receive buffer (SO_RCVBUF); -1 uses the operating system's default.",
              default=32768, importance=M, validator=Range.at_least(-1), group="Kafka"),
    ConfigKey("send.buffer.bytes", Type.INT,
              "TCP send buffer (SO_SNDBUF); -1 uses the operating system's default.",
              default=131072, importance=M, validator=Range.at_least(-1), group="Kafka"),
    ConfigKey("metric.reporters", Type.LIST,
              "Accepted for compatibility and ignored: connectd loads no Java metric reporters.",
              default="", importance=L, group="Metrics", ignored="connectd loads no Java metric reporters"),
]

def _ignored(name: str, type_: Type, default: Any, reason: str, validator: Validator | None = None,
             group: str = "Kafka") -> ConfigKey:
    """A key of Kafka Connect's worker config that connectd accepts and does nothing with."""
    return ConfigKey(name, type_, f"Accepted for compatibility and ignored: {reason}.", default=default,
                     importance=L, validator=validator, group=group, ignored=reason)


_JAVA_SSL = "the Java TLS stack's setting; the Python clients use OpenSSL's"
_JAVA_SASL = "a setting of Java's SASL login, which the Python clients do not have"
_NO_JAVA_METRICS = "connectd's metrics are Prometheus metrics, not Java client metrics"

#: Keys of Kafka Connect's WorkerConfig and DistributedConfig (its Kafka client keys) that connectd
#: has no use for. Declared so that a file brought from Kafka Connect is checked and told why each is
#: ignored, instead of being warned about as unknown.
_IGNORED_KAFKA_KEYS = [
    _ignored("metadata.recovery.strategy", Type.STRING, "none",
             "the Python clients recover from stale metadata their own way",
             CaseInsensitiveValidString("none", "rebootstrap")),
    _ignored("socket.connection.setup.timeout.max.ms", Type.LONG, 30000,
             "the Python clients have no growing connection set-up timeout", _POSITIVE_MS),
    _ignored("plugin.discovery", Type.STRING, "hybrid_warn",
             "connectd finds plugins through Python entry points of installed packages",
             CaseInsensitiveValidString("only_scan", "hybrid_warn", "hybrid_fail", "service_load"), group="Plugins"),
    _ignored("metrics.sample.window.ms", Type.LONG, 30000, _NO_JAVA_METRICS, _POSITIVE_MS, group="Metrics"),
    _ignored("metrics.num.samples", Type.INT, 2, _NO_JAVA_METRICS, Range.at_least(1), group="Metrics"),
    _ignored("metrics.recording.level", Type.STRING, "INFO", _NO_JAVA_METRICS, OneOf("INFO", "DEBUG"),
             group="Metrics"),
    _ignored("ssl.protocol", Type.STRING, "TLSv1.3", _JAVA_SSL, group="Kafka security"),
    _ignored("ssl.provider", Type.STRING, None, _JAVA_SSL, group="Kafka security"),
    _ignored("ssl.keymanager.algorithm", Type.STRING, "SunX509", _JAVA_SSL, group="Kafka security"),
    _ignored("ssl.trustmanager.algorithm", Type.STRING, "PKIX", _JAVA_SSL, group="Kafka security"),
    _ignored("ssl.secure.random.implementation", Type.STRING, None, _JAVA_SSL, group="Kafka security"),
    _ignored("ssl.engine.factory.class", Type.CLASS, None, _JAVA_SSL, group="Kafka security"),
    _ignored("sasl.kerberos.service.name", Type.STRING, None, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.kerberos.kinit.cmd", Type.STRING, "/usr/bin/kinit", _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.kerberos.ticket.renew.window.factor", Type.DOUBLE, 0.8, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.kerberos.ticket.renew.jitter", Type.DOUBLE, 0.05, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.kerberos.min.time.before.relogin", Type.LONG, 60000, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.login.refresh.window.factor", Type.DOUBLE, 0.8, _JAVA_SASL, Range.between(0.5, 1.0),
             group="Kafka security"),
    _ignored("sasl.login.refresh.window.jitter", Type.DOUBLE, 0.05, _JAVA_SASL, Range.between(0.0, 0.25),
             group="Kafka security"),
    _ignored("sasl.login.refresh.min.period.seconds", Type.SHORT, 60, _JAVA_SASL, Range.between(0, 900),
             group="Kafka security"),
    _ignored("sasl.login.refresh.buffer.seconds", Type.SHORT, 300, _JAVA_SASL, Range.between(0, 3600),
             group="Kafka security"),
    _ignored("sasl.client.callback.handler.class", Type.CLASS, None, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.login.class", Type.CLASS, None, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.login.connect.timeout.ms", Type.INT, None, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.login.read.timeout.ms", Type.INT, None, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.login.retry.backoff.max.ms", Type.LONG, 10000, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.login.retry.backoff.ms", Type.LONG, 100, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.oauthbearer.scope.claim.name", Type.STRING, "scope", _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.oauthbearer.sub.claim.name", Type.STRING, "sub", _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.oauthbearer.jwks.endpoint.url", Type.STRING, None, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.oauthbearer.jwks.endpoint.refresh.ms", Type.LONG, 3600000, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Type.LONG, 10000, _JAVA_SASL,
             group="Kafka security"),
    _ignored("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Type.LONG, 100, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.oauthbearer.clock.skew.seconds", Type.INT, 30, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.oauthbearer.expected.audience", Type.LIST, None, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.oauthbearer.expected.issuer", Type.STRING, None, _JAVA_SASL, group="Kafka security"),
    _ignored("sasl.oauthbearer.header.urlencode", Type.BOOLEAN, False, _JAVA_SASL, group="Kafka security"),
]

_WORKER_KEYS = [
    ConfigKey("key.converter", Type.CLASS,
              "Converter between Kafka record keys and Connect data, by class name or alias, "
              "e.g. org.apache.kafka.connect.json.JsonConverter. Settings go under key.converter.*.",
              importance=H, plugin_kind="converter", group="Converters"),
    ConfigKey("value.converter", Type.CLASS,
              "Converter between Kafka record values and Connect data. Settings go under value.converter.*.",
              importance=H, plugin_kind="converter", group="Converters"),
    ConfigKey("header.converter", Type.CLASS,
              "Converter between Kafka record headers and Connect data.",
              default="org.apache.kafka.connect.storage.SimpleHeaderConverter", importance=L,
              plugin_kind="converter", group="Converters"),
    ConfigKey("offset.flush.interval.ms", Type.LONG,
              "How long a sink task may go without pre_commit: one that received no record for this long "
              "gets put([]) and pre_commit, so it can flush what it holds on time. Offsets are otherwise "
              "written after each micro-batch, once it is durable (sources: acknowledged by Kafka; sinks: "
              "what pre_commit returned), which under load is far more often.",
              default=60000, importance=L, validator=_POSITIVE_MS, group="Offsets"),
    ConfigKey("offset.flush.timeout.ms", Type.LONG,
              "Accepted for compatibility and ignored: a source micro-batch whose records Kafka has not all "
              "acknowledged within 60 s fails the task and is replayed when it restarts, and nothing else "
              "waits on a flush.",
              default=5000, importance=L, validator=_POSITIVE_MS, group="Offsets",
              ignored="a source batch's records must be acknowledged within 60 s; no flush is abandoned"),
    ConfigKey("task.shutdown.graceful.timeout.ms", Type.LONG,
              "How long a stopping task may take to finish its batch in flight before it is cancelled "
              "(the batch is then replayed).", default=5000, importance=L, validator=_POSITIVE_MS, group="Tasks"),
    ConfigKey("task.stall.timeout.ms", Type.LONG,
              "connectd extension: the longest one trigger of a task's Spark query (planning and running one "
              "micro-batch, a put() retried included) may take before the task counts as stalled: its query is "
              "stopped (the batch in flight is replayed) and started again at once, as for a query that died; "
              "more than 3 such restarts in 10 minutes make the task FAILED with what happened (docs/cluster.md, "
              "\"Task states\"). 0: a long trigger is never a stall (a query that died, or whose trigger stopped "
              "firing, is still restarted).",
              default=300000, importance=L, validator=Range.at_least(0), group="Tasks"),
    ConfigKey("sink.batch.max.records", Type.INT,
              "connectd extension: the most records one micro-batch of a sink task reads, all its partitions "
              "together (shared fairly among partitions with a backlog). A batch ends at the partitions' high "
              "watermarks, or earlier at this bound; consumer.max.poll.records bounds each put() within it.",
              default=100000, importance=L, validator=Range.at_least(1), group="Tasks"),
    ConfigKey("sink.batch.linger.ms", Type.LONG,
              "connectd extension: how long a record-level sink task's micro-batch that had records goes on "
              "putting the records that arrive, as they arrive (each put() followed by pre_commit), counted "
              "from the batch's start. A record then waits for a fetch instead of the next micro-batch (its "
              "offset is committed when the batch ends): end-to-end latency falls to tens of milliseconds at "
              "low rates, and Spark runs fewer jobs. A lingering batch holds one Spark executor core for its "
              "whole time, so the worker gives this to as many of its sink tasks as Spark has cores less one, "
              "first started first; the others' batches do not linger (docs/running.md, \"Sink latency\"). "
              "0: no batch lingers. Tasks run in the worker process (SinkTask.pinned) and Spark-level sinks "
              "do not linger.",
              default=500, importance=L, validator=Range.between(0, 60000), group="Tasks"),
    ConfigKey("source.batch.max.records", Type.INT,
              "connectd extension: the most records one micro-batch of a record-level source task produces, "
              "and the most its poll thread buffers ahead (polling waits while this many, or 8 MiB of converted "
              "records, are waiting to be produced). A batch also ends after 1 s, or once nothing more was "
              "polled for 50 ms; its offsets are stored when it ends.",
              default=500000, importance=L, validator=Range.at_least(1), group="Tasks"),
    ConfigKey("executor.check.timeout.ms", Type.LONG,
              "connectd extension: with a cluster master (spark.master not local), how long Spark's executors "
              "may take at start-up to import connectd and the plugins, their own start included. A cluster "
              "that grants no executor in that time (no free cores or memory) stops the worker with an error "
              "saying so, instead of a worker that starts for ever.",
              default=120000, importance=L, validator=_POSITIVE_MS, group="Tasks"),
    ConfigKey("class.archive.dir", Type.STRING,
              "connectd extension: a directory where workers keep a class-data archive of Spark's driver JVM "
              "(HotSpot AppCDS), so a worker's JVM maps Spark's classes instead of loading them: its first "
              "record moves ≈3 s sooner. The first worker to start without an archive for its java, pyspark "
              "and driver options writes one as it stops (its stop takes ≈25 s longer on 2 cores, once; ≈170 MB). "
              "Made private (0700); an archive another user could have written is not used. Unset: "
              "$CACHE_DIRECTORY (systemd's CacheDirectory=), else $XDG_CACHE_HOME/connectd, else "
              "~/.cache/connectd. Empty: no archive. A directory that cannot be made, or that others can write, "
              "is logged as a warning and the worker starts without an archive (it only saves time). Java "
              "options naming -Xshare or an archive in spark.driver.extraJavaOptions turn this off "
              "(docs/running.md, \"Start-up\").",
              default=None, importance=L, group="Tasks"),
    ConfigKey("listeners", Type.LIST,
              "Where the REST API listens: http://host:port or https://host:port, comma-separated, every one "
              "served; an empty host listens on all interfaces. https listeners take their TLS settings from "
              "listeners.https.ssl.*, or from the worker's ssl.* keys when no listeners.https.* key is set.",
              default="http://:8083", importance=L, validator=ListenerList(), group="REST"),
    ConfigKey("rest.advertised.host.name", Type.STRING,
              "Host name other workers use to reach this one's REST API; defaults to the listener's.",
              default=None, importance=L, group="REST"),
    ConfigKey("rest.advertised.port", Type.INT,
              "Port other workers use to reach this one's REST API; defaults to the listener's.",
              default=None, importance=L, validator=Range.between(0, 65535), group="REST"),
    ConfigKey("rest.advertised.listener", Type.STRING,
              "Which listener (http or https) to advertise to other workers.",
              default=None, importance=L, validator=CaseInsensitiveValidString("http", "https"), group="REST"),
    ConfigKey("access.control.allow.origin", Type.STRING,
              "Origins allowed to make cross-origin (CORS) requests, comma-separated, e.g. https://ui.example.com; "
              "* in an origin matches any characters, * alone allows any origin (without credentials); "
              "empty disables CORS.",
              default="", importance=L, group="REST"),
    ConfigKey("access.control.allow.methods", Type.STRING,
              "Methods allowed for CORS requests, comma-separated; empty means GET, POST and HEAD.",
              default="", importance=L, group="REST"),
    ConfigKey("rest.extension.classes", Type.LIST,
              "REST extensions, comma-separated. connectd has Kafka's "
              f"{BASIC_AUTH_EXTENSION} (or BasicAuthSecurityRestExtension), which asks every request "
              "but GET /health for HTTP Basic credentials checked against rest.basic.auth.credentials.file.",
              default="", importance=L, validator=ValidList(*BASIC_AUTH_EXTENSIONS), group="REST security"),
    ConfigKey("rest.basic.auth.credentials.file", Type.STRING,
              "Properties file of user=password lines (or user: password, as Kafka's PropertyFileLoginModule "
              "reads) that BasicAuthSecurityRestExtension accepts; a password may be a ${provider:...} "
              "placeholder. Read when the worker starts.",
              default=None, importance=M, extension=True, group="REST security"),
    ConfigKey("rest.basic.auth.jaas.file", Type.STRING,
              "Instead of rest.basic.auth.credentials.file: the JAAS file Kafka Connect reads "
              "(-Djava.security.auth.login.config), whose KafkaConnect entry's PropertyFileLoginModule "
              "file= option names the credentials file.",
              default=None, importance=L, extension=True, group="REST security"),
    ConfigKey("ssl.client.auth", Type.STRING,
              "Whether https REST listeners ask clients for a certificate signed by the trust store: "
              "none, requested (checked if given) or required.",
              default="none", importance=M, validator=OneOf("none", "requested", "required"),
              group="REST security"),
    ConfigKey("ssl.enabled.protocols", Type.LIST,
              "TLS versions https REST listeners accept.", default="TLSv1.2,TLSv1.3", importance=M,
              validator=ValidList("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3", allow_empty=False),
              group="REST security"),
    ConfigKey("ssl.cipher.suites", Type.LIST,
              "TLS 1.2 cipher suites of https REST listeners, by standard name "
              "(TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384) or OpenSSL name; empty uses OpenSSL's defaults. "
              "TLS 1.3 suites are always OpenSSL's; listing only TLS 1.3 suites turns TLS 1.2 off.",
              default="", importance=L, group="REST security"),
    ConfigKey("ssl.keystore.certificate.chain", Type.PASSWORD,
              "With ssl.keystore.type=PEM and no ssl.keystore.location: the certificate chain itself, in PEM.",
              default=None, importance=H, group="REST security"),
    ConfigKey("ssl.keystore.key", Type.PASSWORD,
              "With ssl.keystore.type=PEM and no ssl.keystore.location: the private key itself, in PEM "
              "(encrypted with ssl.key.password if that is set).",
              default=None, importance=H, group="REST security"),
    ConfigKey("ssl.truststore.certificates", Type.PASSWORD,
              "With ssl.truststore.type=PEM and no ssl.truststore.location: the trusted certificates themselves, "
              "in PEM.",
              default=None, importance=H, group="REST security"),
    ConfigKey("admin.listeners", Type.LIST,
              "Where the /admin endpoints (log levels) are served instead of on listeners: http://host:port "
              "or https://host:port, comma-separated; there the other endpoints answer 404, and on listeners "
              "/admin does. Unset serves them on listeners; empty serves them nowhere. https admin listeners "
              "take their TLS settings from admin.listeners.https.ssl.*, or from the worker's ssl.* keys when "
              "no admin.listeners.https.* key is set. Authentication and CORS apply as on listeners.",
              default=None, importance=L, validator=_AdminListeners(), group="REST"),
    ConfigKey("response.http.headers.config", Type.STRING,
              "Headers added to every REST response, errors included, on every listener: comma-separated "
              "[action] [header name]:[header value] entries (Jetty's HeaderFilter syntax), the action one "
              "of set, add, setDate and addDate (whose value is milliseconds from now, sent as an HTTP date); "
              "an entry whose value holds a comma goes in double quotes. "
              "E.g. set X-Frame-Options: DENY, setDate Expires: 3600000.",
              default="", importance=L, validator=_ResponseHeaders(), group="REST"),
    ConfigKey("plugin.path", Type.LIST,
              "Accepted for compatibility and ignored: connectd finds plugins through Python entry points, "
              "so install plugin packages into connectd's environment instead.",
              default=None, importance=L, group="Plugins",
              ignored="connectd finds plugins through Python entry points of installed packages"),
    ConfigKey("config.providers", Type.LIST,
              "Names of config providers; each is set up by config.providers.<name>.class and "
              "config.providers.<name>.param.<key>, and resolves ${<name>:[path:]key} placeholders.",
              default="", importance=L, group="Plugins"),
    ConfigKey("connector.client.config.override.policy", Type.CLASS,
              "Which producer.override.*, consumer.override.* and admin.override.* settings a connector may "
              "give: All, None, Principal (only sasl.jaas.config, sasl.mechanism and security.protocol), Kafka "
              "Connect's class names for these, or a policy class a plugin registers. A connector giving one "
              "the policy forbids is refused (config check, REST 400).",
              default="All", importance=M, plugin_kind="override_policy", group="Connectors"),
    ConfigKey("topic.creation.enable", Type.BOOLEAN,
              "Let source connectors create the topics they write to, as their topic.creation.* settings say.",
              default=True, importance=L, group="Connectors"),
    ConfigKey("topic.tracking.enable", Type.BOOLEAN,
              "Record which topics each connector uses (GET /connectors/{name}/topics).",
              default=True, importance=L, group="Connectors"),
    ConfigKey("topic.tracking.allow.reset", Type.BOOLEAN,
              "Allow PUT /connectors/{name}/topics/reset.", default=True, importance=L, group="Connectors"),
    ConfigKey("exactly.once.source.support", Type.STRING,
              "Exactly-once delivery for source connectors (distributed mode): disabled; preparing: the leader "
              "writes the config topic in transactions (Kafka Connect's rolling step towards enabled); "
              "enabled: that, and each source task writes its records and their offsets in Kafka transactions, "
              "its zombies fenced (docs/exactly-once.md).",
              default="disabled", importance=H,
              validator=CaseInsensitiveValidString("disabled", "preparing", "enabled"), group="Connectors"),
]

_DISTRIBUTED_KEYS = [
    ConfigKey("group.id", Type.STRING,
              "The cluster's group id: workers with the same group.id form one Connect cluster.",
              importance=H, validator=NonEmptyString(), group="Cluster"),
    ConfigKey("config.storage.topic", Type.STRING,
              "Topic of connector and task configurations; one partition, compacted.",
              importance=H, validator=TopicName(), group="Internal topics"),
    ConfigKey("config.storage.replication.factor", Type.SHORT,
              "Replication factor of the config topic when the worker creates it.",
              default=3, importance=L, validator=_ReplicationFactor(-1, 32767), group="Internal topics"),
    ConfigKey("offset.storage.topic", Type.STRING,
              "Topic of source connectors' offsets; compacted.",
              importance=H, validator=TopicName(), group="Internal topics"),
    ConfigKey("offset.storage.partitions", Type.INT,
              "Partitions of the offset topic when the worker creates it.",
              default=25, importance=L, validator=_Partitions(-1, None), group="Internal topics"),
    ConfigKey("offset.storage.replication.factor", Type.SHORT,
              "Replication factor of the offset topic when the worker creates it.",
              default=3, importance=L, validator=_ReplicationFactor(-1, 32767), group="Internal topics"),
    ConfigKey("status.storage.topic", Type.STRING,
              "Topic of connector and task statuses; compacted.",
              importance=H, validator=TopicName(), group="Internal topics"),
    ConfigKey("status.storage.partitions", Type.INT,
              "Partitions of the status topic when the worker creates it.",
              default=5, importance=L, validator=_Partitions(-1, None), group="Internal topics"),
    ConfigKey("status.storage.replication.factor", Type.SHORT,
              "Replication factor of the status topic when the worker creates it.",
              default=3, importance=L, validator=_ReplicationFactor(-1, 32767), group="Internal topics"),
    ConfigKey("session.timeout.ms", Type.INT,
              "A worker that sends no heartbeat for this long leaves the group and its work is reassigned.",
              default=10000, importance=H, validator=Range.at_least(1), group="Cluster"),
    ConfigKey("heartbeat.interval.ms", Type.INT,
              "How often a worker heartbeats to the group coordinator; well under session.timeout.ms.",
              default=3000, importance=H, validator=Range.at_least(1), group="Cluster"),
    ConfigKey("rebalance.timeout.ms", Type.INT,
              "How long every worker has to rejoin the group during a rebalance.",
              default=60000, importance=H, validator=Range.at_least(1), group="Cluster"),
    ConfigKey("worker.sync.timeout.ms", Type.INT,
              "How long a worker waits at a rebalance to read the config topic to its end; what it does "
              "if it cannot, worker.unsync.backoff.ms says.",
              default=3000, importance=M, validator=Range.at_least(1), group="Cluster"),
    ConfigKey("worker.unsync.backoff.ms", Type.INT,
              "Set: a worker that cannot read the config topic to its end within worker.sync.timeout.ms "
              "leaves the group, its work going to the others, and rejoins after this long, as Kafka's "
              "worker does (Kafka's default is 300000). Unset: it keeps its work and reads on.",
              default=None, importance=M, validator=Range.at_least(0), group="Cluster"),
    ConfigKey("connect.protocol", Type.STRING,
              "Rebalance protocol: eager (every rebalance stops all work first; offered to join a Kafka "
              "Connect cluster on eager and roll it over), compatible (incremental cooperative) or "
              "sessioned (incremental cooperative with signed requests between workers). A worker also "
              "offers the protocols below its own, as Kafka's: the group runs the lowest any member speaks.",
              default="sessioned", importance=L, validator=CaseInsensitiveValidString("eager", "compatible", "sessioned"),
              group="Cluster"),
    ConfigKey("scheduled.rebalance.max.delay.ms", Type.INT,
              "How long the work of a departed worker waits for it to come back before it is reassigned.",
              default=300000, importance=L, validator=Range.between(0, 2**31 - 1), group="Cluster"),
    ConfigKey("capacity.mode", Type.STRING,
              "The cluster's capacity policy unless PUT /capacity gave one (a connectd extension, docs/capacity.md): "
              "none; provisioned: capacity.worker.count workers; autoscaling: between capacity.min.worker.count "
              "and capacity.max.worker.count workers on CPU utilisation, as MSK Connect's.",
              default="none", importance=M, validator=CaseInsensitiveValidString("none", "provisioned", "autoscaling"),
              group="Capacity"),
    ConfigKey("capacity.worker.count", Type.INT, "Provisioned capacity: the number of workers (MSK Connect's "
              "workerCount).", default=1, importance=M, validator=Range.between(1, 1000), group="Capacity"),
    ConfigKey("capacity.min.worker.count", Type.INT, "Autoscaling: the fewest workers (MSK Connect's "
              "minWorkerCount).", default=1, importance=M, validator=Range.between(1, 1000), group="Capacity"),
    ConfigKey("capacity.max.worker.count", Type.INT, "Autoscaling: the most workers (MSK Connect's "
              "maxWorkerCount).", default=2, importance=M, validator=Range.between(1, 1000), group="Capacity"),
    ConfigKey("capacity.mcu.count", Type.INT,
              "Each worker's size in MSK Connect units (1 vCPU and 4 GiB each): the Spark cores and driver memory "
              "of the workers a capacity provider starts (mcuCount).",
              default=1, importance=M, validator=_McuCount(), group="Capacity"),
    ConfigKey("capacity.scale.in.cpu.utilization.percentage", Type.INT,
              "Autoscaling: one worker fewer when the workers' average CPU over the evaluation window is below this "
              "(scaleInPolicy.cpuUtilizationPercentage).",
              default=20, importance=M, validator=Range.between(1, 100), group="Capacity"),
    ConfigKey("capacity.scale.out.cpu.utilization.percentage", Type.INT,
              "Autoscaling: one worker more when the workers' average CPU over the evaluation window is above this "
              "(scaleOutPolicy.cpuUtilizationPercentage).",
              default=80, importance=M, validator=Range.between(1, 100), group="Capacity"),
    ConfigKey("capacity.evaluation.window.ms", Type.LONG,
              "Autoscaling: the span the average CPU is taken over; a decision waits for a whole window after the "
              "leader starts watching and after each change.",
              default=120000, importance=L, validator=Range.at_least(1000), group="Capacity"),
    ConfigKey("capacity.cooldown.ms", Type.LONG,
              "Autoscaling: no change of the worker count for this long after the last one.",
              default=300000, importance=L, validator=Range.at_least(0), group="Capacity"),
    ConfigKey("capacity.evaluation.interval.ms", Type.LONG,
              "How often each worker reports its CPU and sink lag and the leader decides.",
              default=10000, importance=L, validator=Range.at_least(100), group="Capacity"),
    ConfigKey("capacity.provider", Type.STRING,
              "The capacity provider that acts on the leader's decisions (register_capacity_providers): processes "
              "(workers run by `connectd cluster run`), systemd (instances of connectd@.service), spark (each "
              "worker's Spark executors); empty: decisions are logged and exported only.",
              default="", importance=M, group="Capacity"),
    ConfigKey("capacity.systemd.instances", Type.LIST,
              "The instances of connectd@.service the systemd capacity provider may run on the leader's host, in "
              "the order it starts them (connectd@NAME.service reads NAME.properties of capacity.systemd.config.dir).",
              default="", importance=L, group="Capacity"),
    ConfigKey("capacity.systemd.config.dir", Type.STRING,
              "Where the systemd capacity provider reads each instance's properties file (NAME.properties), as "
              "connectd@.service does.", default="/etc/connectd", importance=L, group="Capacity"),
    ConfigKey("capacity.processes.rest.ports", Type.STRING,
              "The REST ports the workers of `connectd cluster run` listen on, first-last.",
              default="8083-8099", importance=L, validator=_PortRange(), group="Capacity"),
    ConfigKey("capacity.processes.log.dir", Type.STRING,
              "Where `connectd cluster run` keeps each worker's properties and log (worker-<port>.*); empty: a "
              "directory logs beside the worker file.", default="", importance=L, group="Capacity"),
    ConfigKey("rest.rebalance.wait.ms", Type.INT,
              "How long a REST write waits for a rebalance under way to end before answering 409 "
              "(a connectd extension: Kafka Connect answers 409 at once).",
              default=30000, importance=L, validator=Range.at_least(0), group="Cluster"),
    ConfigKey("inter.worker.key.generation.algorithm", Type.STRING,
              "Algorithm of the key that signs requests between workers.", default="HmacSHA256", importance=L,
              validator=OneOf("HmacSHA256", "HmacSHA384", "HmacSHA512"), group="Cluster"),
    ConfigKey("inter.worker.key.size", Type.INT,
              "Size in bits of that key; unset uses the algorithm's default.", default=None, importance=L,
              validator=Range.at_least(1), group="Cluster"),
    ConfigKey("inter.worker.key.ttl.ms", Type.INT,
              "How often the leader rotates that key.", default=3600000, importance=L,
              validator=Range.between(0, 2**31 - 1), group="Cluster"),
    ConfigKey("inter.worker.signature.algorithm", Type.STRING,
              "Algorithm that signs requests between workers.", default="HmacSHA256", importance=L,
              validator=OneOf("HmacSHA256", "HmacSHA384", "HmacSHA512"), group="Cluster"),
    ConfigKey("inter.worker.verification.algorithms", Type.LIST,
              "Algorithms accepted when checking a signed request.", default="HmacSHA256", importance=L,
              validator=ValidList("HmacSHA256", "HmacSHA384", "HmacSHA512", allow_empty=False), group="Cluster"),
]

_STANDALONE_KEYS = [
    ConfigKey("offset.storage.file.filename", Type.STRING,
              "File holding source connectors' offsets in standalone mode; written atomically. A file Kafka "
              "Connect's standalone worker wrote (a Java-serialized map) is read, and kept in that format.",
              importance=H, validator=NonEmptyString(), group="Offsets"),
]

_PREFIXES = {
    "producer.": "Settings of the worker's producers (source tasks, internal topics).",
    "consumer.": "Settings of the worker's consumers (sink tasks, internal topics).",
    "admin.": "Settings of the worker's admin clients.",
    "config.providers.": "Classes and parameters of config providers: config.providers.<name>.class, "
    "config.providers.<name>.param.<key>.",
    "spark.": "connectd extension: passed to Spark as they are (spark.master, spark.executor.memory, …).",
    "listeners.https.": "TLS settings of https REST listeners (listeners.https.ssl.keystore.location, …); "
    "when any is set, the worker's own ssl.* keys are not used for the listeners.",
    "admin.listeners.https.": "TLS settings of https admin listeners (admin.listeners.https.ssl.keystore.location, "
    "…); when any is set, the worker's own ssl.* keys are not used for the admin listeners.",
    "key.converter.": "Settings of the key converter.",
    "value.converter.": "Settings of the value converter.",
    "header.converter.": "Settings of the header converter.",
}

_DISTRIBUTED_PREFIXES = {
    f"{topic}.storage.": f"Topic configs of the {topic} topic when the worker creates it ({topic}.storage.<config>, "
    f"e.g. {topic}.storage.min.insync.replicas=2); cleanup.policy is always compact"
    + ("; the config topic always has 1 partition." if topic == "config" else ".")
    for topic in ("config", "offset", "status")
}

COMMON_WORKER_DEF = ConfigDef(_CLIENT_KEYS + _IGNORED_KAFKA_KEYS + _WORKER_KEYS, prefixes=_PREFIXES)
DISTRIBUTED_DEF = COMMON_WORKER_DEF.merge(ConfigDef(_DISTRIBUTED_KEYS, prefixes=_DISTRIBUTED_PREFIXES))
STANDALONE_DEF = COMMON_WORKER_DEF.merge(ConfigDef(_STANDALONE_KEYS))

MODES = ("distributed", "standalone")


def definition_for(mode: str) -> ConfigDef:
    """The declarations of a worker in *mode* (``distributed`` or ``standalone``)."""
    if mode == "distributed":
        return DISTRIBUTED_DEF
    if mode == "standalone":
        return STANDALONE_DEF
    raise ValueError(f"unknown worker mode {mode!r}; expected one of {MODES}")


def detect_mode(values: Mapping[str, str]) -> str:
    """Standalone when the file names an offsets file and no group, else distributed."""
    if "offset.storage.file.filename" in values and "group.id" not in values:
        return "standalone"
    return "distributed"
