"""The worker's configuration: the values of ``connect-distributed.properties``, read and checked.

The keys, as Kafka Connect declares them, are :mod:`connectd.config.worker_keys`.
A :class:`WorkerConfig` keeps the values as written and resolves
``${provider:…}`` placeholders only when a value is read.
"""

from __future__ import annotations

import difflib
import os
import re
import socket
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectd.config.clients import client_settings
from connectd.config.definitions import ConfigProblem, ValidationContext, display_value, without_value
from connectd.config.properties import Origin, PropertiesFile, load_properties
from connectd.config.providers import ConfigProviders, has_placeholder
from connectd.config.worker_keys import (
    BASIC_AUTH_EXTENSION,
    BASIC_AUTH_EXTENSIONS,
    DRIVER_JAVA_OPTIONS,
    definition_for,
    detect_mode,
)
from connectd.errors import ConfigError, PluginError
from connectd.plugins import get_registry

if TYPE_CHECKING:
    from connectd.plugins import Registry

__all__ = ["WorkerConfig"]


class WorkerConfig:
    """A worker's settings: as written, checked, and typed on access.

    :param values: key → value as written (placeholders unresolved).
    :param mode: ``distributed`` or ``standalone``.
    :param source: names the values in messages (a file path).
    :param origins: where each key was written, for messages.
    """

    def __init__(
        self,
        values: Mapping[str, str],
        mode: str = "distributed",
        *,
        source: str = "<worker config>",
        origins: Mapping[str, Origin] | None = None,
        duplicates: list[tuple[str, Origin]] | None = None,
    ) -> None:
        self.mode = mode
        self._duplicates = list(duplicates or [])
        self.definition = definition_for(mode)
        self.source = source
        self._raw = dict(values)
        self._origins = dict(origins or {})
        self._providers: ConfigProviders | None = None

    @classmethod
    def from_file(cls, path: str | Path, mode: str | None = None) -> WorkerConfig:
        """Read a worker properties file (*mode* ``None`` detects it).

        :raises ConfigError: if the file cannot be read or parsed.
        """
        properties: PropertiesFile = load_properties(path)
        origins = {key: properties.origin(key) for key in properties}
        return cls(
            dict(properties),
            mode or detect_mode(properties),
            source=str(path),
            origins=origins,
            duplicates=properties.duplicates,
        )

    # --- where things came from ---

    def origin(self, key: str) -> Origin:
        return self._origins.get(key, Origin(self.source))

    def raw(self, key: str) -> str | None:
        """The value of *key* as written, placeholders and all."""
        return self._raw.get(key)

    def originals(self) -> dict[str, str]:
        """Every value as written. Safe to store; show it with :meth:`display`."""
        return dict(self._raw)

    def with_prefix(self, prefix: str, *, strip: bool = True) -> dict[str, str]:
        """Values as written whose keys start with *prefix*."""
        return {(k[len(prefix):] if strip else k): v for k, v in self._raw.items() if k.startswith(prefix)}

    def display(self) -> dict[str, str | None]:
        """Every value as it may be shown: placeholders as written, passwords hidden."""
        return {k: display_value(self.definition.get(k) or k, v) for k, v in self._raw.items()}

    def __repr__(self) -> str:
        return f"WorkerConfig({self.source!r}, mode={self.mode!r}, {self.display()!r})"

    # --- providers and typed access ---

    @property
    def providers(self) -> ConfigProviders:
        """The config providers this file sets up (built on first use).

        :raises ConfigError: if a provider cannot be set up.
        """
        if self._providers is None:
            # A config checked by the worker has its providers already, built
            # with the worker's registry (see problems()); configs rebuilt in
            # Spark's Python processes from a spec have no worker to pass one.
            self._build_providers(get_registry())
        assert self._providers is not None
        return self._providers

    def _build_providers(self, registry: Registry) -> None:
        self._providers = ConfigProviders.from_config(
            self._raw, lambda name: registry.find_class("config_provider", name), self.origin
        )

    def resolved(self, key: str) -> str | None:
        """The value of *key* with placeholders resolved (``None`` if unset)."""
        raw = self._raw.get(key)
        if raw is None or not has_placeholder(raw):
            return raw
        try:
            return self.providers.resolve(raw)
        except ConfigError as exc:
            raise ConfigError([f"{self.origin(key)}: {key}: {p}" for p in exc.problems]) from None

    def get(self, key: str) -> Any:
        """The typed value of a declared *key*: resolved, parsed, or its default.

        :raises ConfigError: if the value does not parse (naming file, line and key).
        """
        declared = self.definition[key]
        raw = self.resolved(key)
        if raw is None:
            return declared.default_value()
        try:
            return declared.parse(raw)
        except ValueError as exc:
            written = self._raw[key]
            message = without_value(str(exc)) if has_placeholder(written) else str(exc)
            raise ConfigError([ConfigProblem(self.origin(key), key, message, display_value(declared, written))]) from None

    __getitem__ = get

    # --- settings for the parts ---

    def spark_conf(self) -> dict[str, str]:
        """Settings for the worker's SparkSession: ``spark.*`` as written (resolved), plus defaults.

        Local masters bind to 127.0.0.1 unless told otherwise; Spark's FIFO scheduler (jobs in the
        order they came: every task's next micro-batch waits behind the others', none for ever) is
        the default, not FAIR: FAIR gives a core that frees to the waiting pool whose name sorts
        first, and with more busy tasks than cores the last-named ones never got one. The web UI is
        off unless ``spark.ui.enabled=true``, and so are the console's stage progress bars.
        """
        conf = {key: self.resolved(key) or "" for key in self._raw if key.startswith("spark.")}
        conf.setdefault("spark.master", "local[*]")
        conf.setdefault("spark.app.name", f"connectd-{self._raw.get('group.id', 'standalone')}")
        conf.setdefault("spark.scheduler.mode", "FIFO")
        conf.setdefault("spark.ui.enabled", "false")
        # Spark draws stage progress bars on the console, which is the worker's log.
        conf.setdefault("spark.ui.showConsoleProgress", "false")
        # Spark's Python processes must be this interpreter, which has connectd and its plugins: through
        # connectd-spark-python, which has them import pyspark's installed, compiled modules rather
        # than compile its archive again in each new process (connectd/runtime/spark/python.py).
        conf.setdefault("spark.pyspark.python", spark_python())
        # A task's checkpoint is scratch, written twice per micro-batch. Hadoop's default local file
        # system forks chmod and readlink for each file without its native library (pip's pyspark has
        # none): ≈100 ms of a batch. The FileSystem API on the raw local file system forks nothing.
        conf.setdefault("spark.sql.streaming.checkpointFileManagerClass",
                        "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager")
        conf.setdefault("spark.hadoop.fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        # The driver JVM plans and schedules micro-batches (and, on a local master, is the executor
        # beside the Python workers): HotSpot's C2 compiler threads compete with that work for the
        # cores. C1 alone, on one thread, moves a worker's first record ≈1 s sooner on 2 cores and
        # its sources no slower (BENCHMARKS.md, "Start-up"); the serial collector takes ≈55 MiB less
        # than G1 (BENCHMARKS.md, "Four source tasks' memory"). Setting the key replaces these.
        conf.setdefault("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
        if self.mode == "distributed" and str(self._raw.get("capacity.provider", "")).strip() == "spark":
            # The spark capacity provider's executors are mcuCount units: 1 core and 4 GiB each.
            mcu = self.get("capacity.mcu.count")
            conf.setdefault("spark.executor.cores", str(mcu))
            conf.setdefault("spark.executor.memory", f"{4 * mcu}g")
        if conf["spark.master"].startswith("local"):
            conf.setdefault("spark.driver.host", "127.0.0.1")
            conf.setdefault("spark.driver.bindAddress", "127.0.0.1")
            # Spark keeps every idle Python worker it ever started, per kind: the planners of
            # queries started together stay (≈60 MiB each). A local master runs at most as many
            # executor Python workers at once as it has cores, so that many idle ones are kept.
            conf.setdefault("spark.python.factory.idleWorkerMaxPoolSize", str(_local_cores(conf["spark.master"])))
        return conf

    @property
    def advertised_id(self) -> str:
        """How a Connect cluster knows this worker, as Kafka Connect's: its advertised ``host:port``
        (``rest.advertised.host.name`` or the machine's name, ``rest.advertised.port`` or the port
        of the advertised listener)."""
        host = self.raw("rest.advertised.host.name") or socket.gethostname()
        port = self.raw("rest.advertised.port")
        if port is None:
            listeners = [item.strip() for item in (self.raw("listeners") or "http://:8083").split(",")]
            scheme = (self.raw("rest.advertised.listener") or "").strip().lower()
            listener = next((item for item in listeners if item.lower().startswith(f"{scheme}://")), listeners[0])
            port = listener.rsplit(":", 1)[-1].strip("/") or "8083"
        return f"{host}:{port}"

    @property
    def spark_cores(self) -> int:
        """The cores this worker's Spark runs tasks on: N of a ``local[N]`` master, else the machine's."""
        return _local_cores(self.spark_conf()["spark.master"])

    @property
    def transactional_leader(self) -> bool:
        """Whether the leader writes the config topic through a transactional producer
        (``exactly.once.source.support`` preparing or enabled, distributed mode)."""
        return self.mode == "distributed" and str(self.get("exactly.once.source.support")).lower() in (
            "preparing", "enabled")

    @property
    def exactly_once_source(self) -> bool:
        """Whether this worker runs source tasks exactly once (``exactly.once.source.support=enabled``,
        distributed mode)."""
        return self.mode == "distributed" and str(self.get("exactly.once.source.support")).lower() == "enabled"

    def client_config(self, client: str, library: str = "confluent", overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Settings for a producer, consumer or admin client of confluent-kafka or aiokafka.

        :raises ConfigError: if a setting cannot be converted.
        """
        found = client_settings(self._raw, client, library, resolve=self._resolve_value, overrides=overrides)
        errors = [p for p in found.problems if p.is_error]
        if errors:
            raise ConfigError([ConfigProblem(self.origin(p.key or ""), p.key, p.message, p.value) for p in errors])
        return found.settings

    def _resolve_value(self, value: str) -> str:
        return self.providers.resolve(value) if has_placeholder(value) else value

    # --- checking ---

    def problems(self, registry: Registry | None = None, *, check_classes: bool = True) -> list[ConfigProblem]:
        """Every error and warning in these values, in file order where known.

        :param registry: the plugins that class names (converters, config
            providers) are looked up in; ``None`` loads this process's plugins,
            a failure to load them being one of the problems.
        :param check_classes: ``False`` skips checking class names.
        """
        found: list[ConfigProblem] = []
        if registry is None and check_classes:
            try:
                registry = get_registry()
            except PluginError as exc:
                found.append(ConfigProblem(None, None, f"plugins could not be loaded: {exc}"))
        try:
            if self._providers is None and registry is not None:
                self._build_providers(registry)
            providers: ConfigProviders | None = self.providers
        except ConfigError as exc:
            providers = None
            found.extend(ConfigProblem(None, None, str(p)) for p in exc.problems)
        has_class = registry.has if check_classes and registry is not None else None
        context = ValidationContext(resolve=providers.resolve if providers else None, has_class=has_class)
        found.extend(self.definition.validate(self._raw, self.origin, context))
        found.extend(self._cross_checks())
        if providers is not None:
            found.extend(self._check_placeholders_outside_declared(providers))
            found.extend(self._client_problems(providers))
        if check_classes and registry is not None:
            found.extend(self._converter_problems(context, registry))
        return sorted(found, key=_file_order)

    def check(self, registry: Registry | None = None) -> None:
        """Raise :class:`ConfigError` listing every error; warnings are not raised.

        :param registry: as for :meth:`problems`.
        """
        errors = [p for p in self.problems(registry) if p.is_error]
        if errors:
            raise ConfigError(errors)

    def _cross_checks(self) -> list[ConfigProblem]:
        found: list[ConfigProblem] = []
        support = (self._raw.get("exactly.once.source.support") or "").strip()
        if support.lower() in ("preparing", "enabled") and self.mode != "distributed":
            found.append(ConfigProblem(self.origin("exactly.once.source.support"), "exactly.once.source.support",
                                       "exactly-once source delivery runs in distributed mode only, as in Kafka "
                                       "Connect; expected disabled", support))
        if self.mode == "distributed":
            topics: dict[str, str] = {}
            for key in ("config.storage.topic", "offset.storage.topic", "status.storage.topic"):
                name = self._raw.get(key)
                if name is None:
                    continue
                if name in topics:
                    found.append(ConfigProblem(self.origin(key), key, f"expected a topic different from {topics[name]}'s", name))
                topics.setdefault(name, key)
            if "offset.storage.file.filename" in self._raw:
                # Under the offset.storage. prefix it would be a config of the offset topic, as in Kafka Connect.
                found.append(ConfigProblem(self.origin("offset.storage.file.filename"), "offset.storage.file.filename",
                                           "is a standalone worker's key: a distributed worker keeps offsets in "
                                           "offset.storage.topic and would give file.filename to the broker as a "
                                           "config of that topic, which the broker refuses when it creates the topic; "
                                           "remove the key", self._raw["offset.storage.file.filename"],
                                           severity="warning"))
            signature = self._safe_get("inter.worker.signature.algorithm")
            verification = self._safe_get("inter.worker.verification.algorithms")
            if signature is not None and verification and signature not in verification:
                found.append(ConfigProblem(self.origin("inter.worker.signature.algorithm"), "inter.worker.signature.algorithm",
                                           f"expected one of inter.worker.verification.algorithms ({', '.join(verification)}), "
                                           "or workers would refuse each other's requests", signature))
            for low, high in (("capacity.min.worker.count", "capacity.max.worker.count"),
                              ("capacity.scale.in.cpu.utilization.percentage",
                               "capacity.scale.out.cpu.utilization.percentage")):
                below, above = self._safe_int(low), self._safe_int(high)
                strict = "cpu" in low
                if below is not None and above is not None and (below >= above if strict else below > above):
                    expected = "less than" if strict else "at most"
                    found.append(ConfigProblem(self.origin(low), low, f"expected {expected} {high} ({above})",
                                               str(below)))
            heartbeat, session = self._safe_int("heartbeat.interval.ms"), self._safe_int("session.timeout.ms")
            if heartbeat is not None and session is not None and heartbeat >= session:
                found.append(ConfigProblem(self.origin("heartbeat.interval.ms"), "heartbeat.interval.ms",
                                           f"expected less than session.timeout.ms ({session})", str(heartbeat)))
        for key, earlier in self._duplicates:
            found.append(ConfigProblem(earlier, None, f"{key} is set again at line {self.origin(key).line}, which wins", severity="warning"))
        found.extend(self._basic_auth_problems())
        return found

    def _basic_auth_problems(self) -> list[ConfigProblem]:
        # A credentials file without the extension would leave the REST API
        # open while its owner believes it closed: refuse rather than warn.
        extensions = self._safe_get("rest.extension.classes") or []
        enabled = any(name in BASIC_AUTH_EXTENSIONS for name in extensions)
        files = [key for key in ("rest.basic.auth.credentials.file", "rest.basic.auth.jaas.file") if self._raw.get(key)]
        if enabled and not files:
            return [ConfigProblem(self.origin("rest.extension.classes"), "rest.extension.classes",
                                  "BasicAuthSecurityRestExtension needs rest.basic.auth.credentials.file "
                                  "(or rest.basic.auth.jaas.file) to name the users and their passwords")]
        if files and not enabled:
            return [ConfigProblem(self.origin(files[0]), files[0],
                                  "is set but rest.extension.classes does not list "
                                  f"{BASIC_AUTH_EXTENSION}, so the REST API would not ask for credentials")]
        if len(files) > 1:
            return [ConfigProblem(self.origin(files[1]), files[1],
                                  "set rest.basic.auth.credentials.file or rest.basic.auth.jaas.file, not both")]
        return []

    def _safe_get(self, key: str) -> Any:
        # None when the value does not parse: its own check reports it.
        try:
            return self.get(key)
        except ConfigError:
            return None

    def _check_placeholders_outside_declared(self, providers: ConfigProviders) -> list[ConfigProblem]:
        # Declared keys were resolved while validating; prefixed keys
        # (producer.*, spark.*, …) hold placeholders too and must resolve.
        found = []
        for key, raw in self._raw.items():
            if key in self.definition or key.startswith("config.providers.") or not has_placeholder(raw):
                continue
            try:
                providers.resolve(raw)
            except ConfigError as exc:
                found.extend(ConfigProblem(self.origin(key), key, str(p), raw) for p in exc.problems)
        return found

    def _converter_problems(self, context: ValidationContext, registry: Registry) -> list[ConfigProblem]:
        # key.converter.schemas.enable and friends belong to the converter
        # class named: check them against its declarations.
        found: list[ConfigProblem] = []
        for key in ("key.converter", "value.converter", "header.converter"):
            declared = self.definition[key]
            name = self.raw(key) or (None if declared.required else declared.default)
            if not name or has_placeholder(name) or not registry.has("converter", name):
                continue  # a missing or unknown class is reported by its own key
            definition = getattr(registry.find_class("converter", name), "config_def", None)
            if definition is None:
                continue
            prefix = f"{key}."
            settings = self.with_prefix(prefix)
            for problem in definition.validate(settings, lambda k: self.origin(prefix + k), context):
                if problem.key is not None:  # unknown settings are worded below, with the class
                    found.append(ConfigProblem(problem.origin, prefix + problem.key, problem.message, problem.value, problem.severity))
            for unknown in (k for k in settings if not definition.is_known(k)):
                close = difflib.get_close_matches(unknown, definition.names(), n=1, cutoff=0.8)
                hint = f" (did you mean {prefix}{close[0]}?)" if close else ""
                found.append(ConfigProblem(self.origin(prefix + unknown), None,
                                           f"unknown setting {prefix}{unknown} for {name}{hint}", severity="warning"))
        return found

    def _client_problems(self, providers: ConfigProviders) -> list[ConfigProblem]:
        # The data plane's library (confluent-kafka) decides what is usable;
        # a setting it lacks is ignored there, which the user should hear of.
        from connectd.config.clients import CLIENTS, client_settings

        def resolve(value: str) -> str:
            try:
                return providers.resolve(value) if has_placeholder(value) else value
            except ConfigError:
                return value  # already reported by the placeholder check

        found: dict[tuple[str | None, str], ConfigProblem] = {}
        for client in CLIENTS:
            for problem in client_settings(self._raw, client, "confluent", resolve=resolve).problems:
                if problem.key in self.definition or (problem.key or "").startswith("admin.listeners."):
                    continue  # top-level keys are checked by their declarations; admin.listeners.https.* is TLS
                found.setdefault(
                    (problem.key, problem.message),
                    ConfigProblem(self.origin(problem.key or ""), problem.key, problem.message, problem.value, problem.severity),
                )
        return list(found.values())

    def _safe_int(self, key: str) -> int | None:
        try:
            value = self.get(key)
        except ConfigError:
            return None
        return value if isinstance(value, int) else None


#: The console script of connectd/runtime/spark/python.py.
SPARK_PYTHON = "connectd-spark-python"


def spark_python() -> str:
    """``spark.pyspark.python`` unless the worker properties set it: this interpreter through
    ``connectd-spark-python`` where it is installed beside it, else this interpreter."""
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        launcher = os.path.join(directory, SPARK_PYTHON)
        if os.access(launcher, os.X_OK):
            return launcher
    return sys.executable


def _file_order(problem: ConfigProblem) -> tuple[int, int]:
    line = problem.origin.line if problem.origin is not None and problem.origin.line is not None else 0
    return (0 if problem.is_error else 1, line)


def _local_cores(master: str) -> int:
    """The cores a ``local``, ``local[N]``, ``local[*]`` or ``local[N, F]`` master runs tasks on
    (the machine's for anything else)."""
    match = re.fullmatch(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?", master.strip())
    if match is not None and match.group(1) is None:
        return 1
    if match is not None and match.group(1) != "*":
        return max(int(match.group(1)), 1)
    return os.cpu_count() or 1
