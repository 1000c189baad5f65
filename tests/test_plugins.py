"""Plugin discovery, registration, look-up and the allow/deny variables.

Discovery runs against the real installed plugin packages under plugins/
(connectd-file, connectd-datagen, connectd-jdbc, connectd-mysql-cdc,
connectd-delta), installed by the README's commands.
"""

from __future__ import annotations

import inspect
from importlib import metadata
from pathlib import Path

import pytest

from connectd import ConnectorClientConfigOverridePolicy, SinkConnector, SourceConnector, hookimpl, hookspecs
from connectd.errors import PluginError
from connectd.plugins import GROUPS, build_plugin_manager, fill_registry, get_registry, reset_plugins

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "plugins_fixture"


def registry_for(env: dict[str, str], *extra_plugins: object):
    pm, packages = build_plugin_manager(env)
    for plugin in extra_plugins:
        name = getattr(plugin, "__name__", type(plugin).__name__)
        pm.register(plugin, name=name)
        packages[name] = (name, "9.9")
    return fill_registry(pm, packages)


def test_installed_plugin_packages_are_discovered():
    registry = get_registry()
    source = registry.find("connector", "org.apache.kafka.connect.file.FileStreamSourceConnector")
    assert source.package == "connectd-file"
    assert source.version == metadata.version("connectd-file")
    assert source.kind == "source"
    assert issubclass(source.cls, SourceConnector)
    sink = registry.find("connector", "FileStreamSink")
    assert sink.kind == "sink" and issubclass(sink.cls, SinkConnector)
    datagen = registry.find("connector", "io.confluent.kafka.connect.datagen.DatagenConnector")
    assert datagen.package == "connectd-datagen"


@pytest.mark.parametrize(("kind", "name", "package", "plugin_kind"), [
    ("connector", "io.confluent.connect.jdbc.JdbcSinkConnector", "connectd-jdbc", "sink"),
    ("connector", "io.debezium.connector.mysql.MySqlConnector", "connectd-mysql-cdc", "source"),
    ("connector", "io.debezium.connector.mariadb.MariaDbConnector", "connectd-mysql-cdc", "source"),
    ("connector", "DeltaSink", "connectd-delta", "sink"),
    ("transform", "io.debezium.transforms.ExtractNewRecordState", "connectd-mysql-cdc", "transformation"),
])
def test_the_shipped_connectors_are_found_by_the_names_their_users_write(kind, name, package, plugin_kind):
    found = get_registry().find(kind, name)
    assert (found.package, found.kind) == (package, plugin_kind)


def test_builtins_register_through_the_same_hooks():
    registry = get_registry()
    env = registry.find("config_provider", "env")
    assert env.package == "connectd"
    assert env.kind == "config_provider"


@pytest.mark.parametrize(
    "name",
    [
        "connectd_file.connectors.FileStreamSourceConnector",  # dotted path
        "FileStreamSource",  # short alias
        "FileStreamSourceConnector",
        "org.apache.kafka.connect.file.FileStreamSourceConnector",  # Kafka Connect's Java name
        "  FileStreamSource  ",  # as a hand-written file may have it
    ],
)
def test_a_class_is_found_by_every_name(name):
    assert get_registry().find_class("connector", name).__name__ == "FileStreamSourceConnector"


def test_unknown_name_suggests_close_ones():
    with pytest.raises(PluginError, match=r"no connector named 'FileStreamSorce' is installed; did you mean .*FileStreamSource"):
        get_registry().find("connector", "FileStreamSorce")


def test_names_are_per_group():
    registry = get_registry()
    assert registry.has("config_provider", "file")
    assert not registry.has("connector", "file")


class _Impostor(SourceConnector):
    pass


class _TakesAName:
    @hookimpl
    def register_connectors(self, register):
        register(_Impostor, aliases=("FileStreamSource",))


def test_duplicate_name_is_rejected_naming_both_packages():
    with pytest.raises(PluginError) as info:
        registry_for({}, _TakesAName())
    message = str(info.value)
    assert "'FileStreamSource' is registered twice" in message
    assert "connectd-file" in message and "_TakesAName" in message


class _RegistersTwice:
    @hookimpl
    def register_connectors(self, register):
        register(_Impostor)
        register(_Impostor)


def test_same_class_registered_twice_is_rejected():
    with pytest.raises(PluginError, match="the same class registered twice"):
        registry_for({}, _RegistersTwice())


class _RegistersAnInstance:
    @hookimpl
    def register_predicates(self, register):
        register(object())


def test_register_takes_classes_only():
    with pytest.raises(PluginError, match="register\\(\\) takes a class"):
        registry_for({}, _RegistersAnInstance())


class _Fails:
    @hookimpl
    def register_transforms(self, register):
        raise KeyError("boom")


def test_a_failing_hook_names_its_package():
    with pytest.raises(PluginError, match="_Fails: register_transforms failed: KeyError"):
        registry_for({}, _Fails())


def packages_of(registry) -> set[str]:
    return {info.package for info in registry}


def test_load_list_by_entry_point_name():
    assert packages_of(registry_for({"CONNECTD_LOAD_PLUGINS": "file"})) == {"connectd", "connectd-file"}


def test_load_list_by_package_name():
    assert packages_of(registry_for({"CONNECTD_LOAD_PLUGINS": "connectd-datagen"})) == {"connectd", "connectd-datagen"}


def test_empty_load_list_loads_only_builtins():
    assert packages_of(registry_for({"CONNECTD_LOAD_PLUGINS": ""})) == {"connectd"}


def test_disable_list():
    assert "connectd-datagen" not in packages_of(registry_for({"CONNECTD_DISABLE_PLUGINS": "datagen"}))
    assert "connectd-file" in packages_of(registry_for({"CONNECTD_DISABLE_PLUGINS": "datagen"}))


def test_builtins_cannot_be_disabled():
    assert "connectd" in packages_of(registry_for({"CONNECTD_DISABLE_PLUGINS": "connectd,builtins"}))


def fake_entry_point(monkeypatch, name: str, module: str) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    point = metadata.EntryPoint(name=name, value=module, group="connectd")
    monkeypatch.setattr("connectd.plugins._entry_points", lambda: [point])


def test_misspelled_hook_fails_at_start_up(monkeypatch):
    fake_entry_point(monkeypatch, "misspelled", "misspelled_hook")
    with pytest.raises(PluginError, match="register_conectors"):
        build_plugin_manager({})


def test_plugin_that_fails_to_import(monkeypatch):
    fake_entry_point(monkeypatch, "broken", "broken_import")
    with pytest.raises(PluginError, match="plugin 'broken' .* failed to load: this plugin is broken on purpose"):
        build_plugin_manager({})


def test_load_plugins_runs_once(monkeypatch):
    reset_plugins()
    first = get_registry()
    calls = []
    monkeypatch.setattr("connectd.plugins.build_plugin_manager", lambda *a: calls.append(a))
    assert get_registry() is first
    assert calls == []


def test_every_hook_is_documented_and_tested():
    specs = [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("register_")]
    assert sorted(specs) == sorted(GROUPS.values())
    docs = (ROOT / "docs" / "plugins.md").read_text()
    this_file = Path(__file__).read_text()
    for name in specs:
        assert getattr(hookspecs, name).__doc__ and ":param register:" in getattr(hookspecs, name).__doc__
        assert f"`{name}(register)`" in docs, f"{name} missing from docs/plugins.md"
        assert f"def {name}(" in this_file.replace(f"def {name}(self", f"def {name}("), f"no test implements {name}"


class _AllHooks:
    """Implements every hook once, so the meta-test above sees each exercised."""

    @hookimpl
    def register_connectors(self, register):
        register(type("ExtraSource", (SourceConnector,), {}), aliases=("ExtraSource",))

    @hookimpl
    def register_converters(self, register):
        register(type("ExtraConverter", (), {"to_connect_data": None}), aliases=("ExtraConverter",))

    @hookimpl
    def register_transforms(self, register):
        register(type("ExtraTransform", (), {}), aliases=("ExtraTransform",))

    @hookimpl
    def register_predicates(self, register):
        register(type("ExtraPredicate", (), {}), aliases=("ExtraPredicate",))

    @hookimpl
    def register_config_providers(self, register):
        register(type("ExtraProvider", (), {}), aliases=("extra",))

    @hookimpl
    def register_override_policies(self, register):
        register(type("ExtraPolicy", (), {}), aliases=("Extra",))

    @hookimpl
    def register_capacity_providers(self, register):
        register(type("ExtraCapacity", (), {}), aliases=("extra-capacity",))


def test_every_group_receives_its_registrations():
    registry = registry_for({"CONNECTD_LOAD_PLUGINS": ""}, _AllHooks())
    assert registry.find("connector", "ExtraSource").kind == "source"
    assert registry.find("converter", "ExtraConverter").kind == "converter"
    assert registry.find("transform", "ExtraTransform").kind == "transformation"
    assert registry.find("predicate", "ExtraPredicate").kind == "predicate"
    assert registry.find("config_provider", "extra").package == "_AllHooks"
    assert registry.find("override_policy", "Extra").kind == "override_policy"
    assert registry.find("capacity_provider", "extra-capacity").kind == "capacity_provider"


class _TenantPolicy(ConnectorClientConfigOverridePolicy):
    """Producers may tune batching; nothing else, and only for connectors named tenant-*."""

    def validate(self, request):
        allowed = request.connector_name.startswith("tenant-") and request.client_type == "producer"
        return {key: None if allowed and key == "linger.ms" else f"is not allowed for {request.connector_type} "
                f"connector {request.connector_name} ({request.connector_class})" for key in request.client_props}


class _TenantPolicies:
    @hookimpl
    def register_override_policies(self, register):
        register(_TenantPolicy, aliases=("Tenant",))


def test_a_plugin_override_policy_decides_which_overrides_a_connector_may_give():
    from connectd.herder import validate_connector

    registry = registry_for({}, _TenantPolicies())
    source = {"connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/in.txt",
              "producer.override.linger.ms": "5", "consumer.override.fetch.min.bytes": "1"}
    problems, _ = validate_connector({**source, "name": "tenant-a"}, registry, override_policy="Tenant")
    assert [(p.key, p.message) for p in problems if p.is_error] == [
        ("consumer.override.fetch.min.bytes", "is not allowed for source connector tenant-a (FileStreamSource)")]
    problems, _ = validate_connector({**source, "name": "other"}, registry, override_policy="Tenant")
    assert sorted(p.key for p in problems if p.is_error) == ["consumer.override.fetch.min.bytes",
                                                           "producer.override.linger.ms"]


def test_a_worker_naming_an_override_policy_nobody_registered_is_refused(tmp_path):
    from connectd.config.worker import WorkerConfig

    worker = WorkerConfig({"bootstrap.servers": "127.0.0.1:9092", "offset.storage.file.filename": str(tmp_path / "o"),
                           "key.converter": "StringConverter", "value.converter": "StringConverter",
                           "connector.client.config.override.policy": "Tenant"}, "standalone")
    problems = [p for p in worker.problems(get_registry()) if p.key == "connector.client.config.override.policy"]
    assert problems and "no such plugin is installed" in problems[0].message
    assert not [p for p in worker.problems(registry_for({}, _TenantPolicies()))
                if p.key == "connector.client.config.override.policy"]
