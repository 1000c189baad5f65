"""The configuration reference, generated from the declarations.

``connectd config docs`` writes it to ``docs/configuration.md``; a test
fails when the committed file differs from what the declarations give, so
the reference cannot go stale.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from connectd.config.connector import COMMON_DEF, SINK_DEF, SOURCE_DEF
from connectd.config.definitions import ConfigDef, ConfigKey
from connectd.config.providers import BUILTIN_PROVIDERS
from connectd.config.worker_keys import COMMON_WORKER_DEF, DISTRIBUTED_DEF, STANDALONE_DEF
from connectd.plugins import BUILTIN_PACKAGE

if TYPE_CHECKING:
    from connectd.plugins import Registry

__all__ = ["DEFAULT_PATH", "PLUGINS_PATH", "render_plugin_reference", "render_reference", "undocumented_keys"]

DEFAULT_PATH = "docs/configuration.md"
PLUGINS_PATH = "docs/converters-transforms-predicates.md"

_SECTIONS: list[tuple[str, str, ConfigDef, ConfigDef | None]] = [
    ("Worker: every mode", "Keys of `connect-distributed.properties` and `connect-standalone.properties`.",
     COMMON_WORKER_DEF, None),
    ("Worker: distributed mode", "Keys only `connectd distributed` reads.", DISTRIBUTED_DEF, COMMON_WORKER_DEF),
    ("Worker: standalone mode", "Keys only `connectd standalone` reads.", STANDALONE_DEF, COMMON_WORKER_DEF),
    ("Connector: every connector", "Keys of every connector config.", COMMON_DEF, None),
    ("Connector: source connectors", "Keys only source connectors read.", SOURCE_DEF, COMMON_DEF),
    ("Connector: sink connectors", "Keys only sink connectors read.", SINK_DEF, COMMON_DEF),
]


#: Where connectd's checks of these keys knowingly differ from Kafka Connect's ConfigDefs, one line each
#: with why; the reference ends with them.
DIFFERENCES = [
    "Problems are worded connectd's way (`key='value': expected …`, naming file and line) rather than as Kafka's "
    "`Invalid value … for configuration …`: one style for every check, and the file and line say where to look.",
    "Some values Kafka Connect accepts and fails on later are refused when the config is checked: "
    "`bootstrap.servers`, `listeners` and `admin.listeners` must be `host:port` / `http(s)://host:port`; "
    "`session.timeout.ms`, `heartbeat.interval.ms`, `rebalance.timeout.ms` and `worker.sync.timeout.ms` must be "
    "at least 1 and the heartbeat under the session timeout; `rest.advertised.port` must be a port and "
    "`rest.advertised.listener` http or https; `ssl.keystore.type` and `ssl.truststore.type` must be JKS, PKCS12 "
    "or PEM; `offsets.storage.topic` must be a legal topic name: the worker or the broker would refuse them anyway.",
    "`errors.retry.timeout` and `errors.deadletterqueue.topic.replication.factor` below -1, and "
    "`errors.retry.delay.max.ms` below 0, are refused; Kafka Connect declares no bound for them.",
    "`inter.worker.key.generation.algorithm`, `inter.worker.signature.algorithm` and "
    "`inter.worker.verification.algorithms` accept HmacSHA256, HmacSHA384 and HmacSHA512 only, not every "
    "algorithm a JVM has (HmacSHA1, HmacMD5): workers sign with Python's hmac and these are the safe ones.",
    "`response.http.headers.config` accepts a header value that holds a colon or is empty (as Jetty serves it); "
    "Kafka Connect's validator refuses both, so a URL cannot be a header value there.",
    "Top-level client keys (`security.protocol`, `sasl.*`, `ssl.*`, timeouts) apply to the connectors' "
    "producers, consumers and admin clients too, under their `producer.`, `consumer.` and `admin.` settings; "
    "Kafka Connect gives connectors' clients only the prefixed keys, so a file written for it says the same "
    "thing twice, which works unchanged.",
    "The `config.storage.`, `offset.storage.` and `status.storage.` prefixes pass any other key on as a topic "
    "config, as in Kafka Connect, so a misspelt `offset.storage.topic` is not warned about as an unknown key.",
    "`topic.creation.default.partitions` and `.replication.factor` of 0 or below -1 are refused by the "
    "topic-creation check, which names the key in its message rather than as the problem's key.",
    "`worker.unsync.backoff.ms` has no default: a worker that cannot read the config topic to its end within "
    "`worker.sync.timeout.ms` keeps its work and reads on (the leader asks it to catch up again at the next "
    "round). Set, it does as Kafka Connect's worker does with its default of 300000: it leaves the group, its "
    "work going to the others, and rejoins after that long.",
]


def _all_definitions() -> list[ConfigDef]:
    return [definition for _, _, definition, _ in _SECTIONS] + [cls.config_def for cls, _ in BUILTIN_PROVIDERS]


def undocumented_keys() -> list[str]:
    """Declared keys whose documentation is empty (a test keeps this empty)."""
    return sorted({key.name for definition in _all_definitions() for key in definition if not key.documentation.strip()})


def render_reference() -> str:
    """The whole reference as Markdown."""
    lines = [
        "# Configuration reference",
        "",
        "Generated by `connectd config docs` from the declarations in `connectd/config/`; "
        "do not edit by hand. Keys marked *extension* are connectd's additions to Kafka Connect's.",
        "",
        "Values may hold `${provider:[path:]key}` placeholders (see `config.providers`); "
        "they are resolved when the value is used and never shown resolved.",
        "",
    ]
    for title, intro, definition, base in _SECTIONS:
        keys = [key for key in definition if base is None or key.name not in base]
        lines += [f"## {title}", "", intro, ""]
        lines += _table(keys)
        prefixes = {p: d for p, d in definition.prefixes.items() if base is None or p not in base.prefixes}
        if prefixes:
            lines += ["", "Prefixes under which any key is passed on:", "", "| prefix | meaning |", "|---|---|"]
            lines += [f"| `{p}*` | {_cell(d)} |" for p, d in prefixes.items()]
        lines.append("")
    lines += [
        "## Config providers",
        "",
        "Parameters of the built-in providers, written "
        "`config.providers.<name>.param.<key>=<value>`.",
        "",
    ]
    for cls, aliases in BUILTIN_PROVIDERS:
        lines += [f"### {aliases[0]}", "", f"`config.providers.{aliases[0]}.class={aliases[1]}` "
                  f"(or `{aliases[0]}`). {_cell((cls.__doc__ or '').strip().splitlines()[0])}", ""]
        lines += _table(list(cls.config_def))
        lines.append("")
    lines += ["## Where connectd differs from Kafka Connect", ""]
    lines += [f"- {difference}" for difference in DIFFERENCES]
    lines.append("")
    return "\n".join(lines)


def _table(keys: list[ConfigKey]) -> list[str]:
    rows = ["| key | type | default | valid values | importance | description |", "|---|---|---|---|---|---|"]
    for key in keys:
        default = "*required*" if key.required else f"`{key.default_text()}`"
        valid = key.validator.describe() if key.validator is not None else ""
        doc = key.documentation + (" *(extension)*" if key.extension else "")
        rows.append(
            f"| `{key.name}` | {key.type.value.lower()} | {default} | {_cell(valid)} | "
            f"{key.importance.value.lower()} | {_cell(doc)} |"
        )
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


_PLUGIN_SECTIONS = [
    ("Converters", "converter",
     "Set with `key.converter`, `value.converter` or `header.converter`, in the worker or a connector; "
     "settings go under that key as a prefix (`value.converter.schemas.enable=false`). "
     "The guide in [converters.md](converters.md) says how each writes its bytes."),
    ("Transforms", "transform",
     "Listed in a connector's `transforms=a,b`; each is set up by `transforms.<alias>.type` and "
     "`transforms.<alias>.<setting>`, and may run only on records a predicate matches: "
     "`transforms.<alias>.predicate=<predicate alias>`, `transforms.<alias>.negate=true`."),
    ("Predicates", "predicate",
     "Listed in a connector's `predicates=p`; each is set up by `predicates.<alias>.type` and "
     "`predicates.<alias>.<setting>`."),
]


def render_plugin_reference(registry: Registry) -> str:
    """The page listing every built-in converter, transform and predicate with its settings.

    :param registry: the loaded plugins; only connectd's built-in ones are listed.
    """
    lines = [
        "# Converters, transforms and predicates",
        "",
        "Generated by `connectd config docs` from the declarations of connectd's built-in classes; "
        "do not edit by hand. Each is found by any of its names: the Python class path, the short "
        "name, or Kafka Connect's Java class name, so existing Kafka Connect configs work unchanged.",
        "",
    ]
    for title, group, intro in _PLUGIN_SECTIONS:
        lines += [f"## {title}", "", intro, ""]
        infos = sorted((i for i in registry.in_group(group) if i.package == BUILTIN_PACKAGE), key=lambda i: i.aliases[0])
        for info in infos:
            lines += [f"### {info.aliases[0]}", "", "Names: " + ", ".join(f"`{n}`" for n in (*info.aliases, info.class_name)), ""]
            summary = _summary(info.cls)
            if summary:
                lines += [summary, ""]
            definition = getattr(info.cls, "config_def", None)
            keys = list(definition) if definition is not None else []
            lines += _table(keys) if keys else ["No settings."]
            lines.append("")
    return "\n".join(lines)


def _summary(cls: type) -> str:
    # A $Key/$Value variant says only which side it works on; its parent
    # in the same module says what the transform does.
    parts = []
    for klass in cls.__mro__[1:]:
        if klass.__module__ == cls.__module__ and klass.__doc__:
            parts.append(_first_paragraph(klass.__doc__))
            break
    parts.append(_first_paragraph(cls.__doc__ or ""))
    return " ".join(p for p in parts if p)


def _first_paragraph(doc: str) -> str:
    return " ".join(doc.strip().split("\n\n")[0].split())


def plugin_undocumented_keys(registry: Registry) -> list[str]:
    """Settings of built-in converters, transforms and predicates without documentation.

    :param registry: the loaded plugins.
    """
    missing = set()
    for info in registry:
        if info.package != BUILTIN_PACKAGE:
            continue
        for key in getattr(info.cls, "config_def", ()):
            if not key.documentation.strip():
                missing.add(f"{info.name}: {key.name}")
    return sorted(missing)
