"""Config providers set up the Kafka way, placeholder resolution, and keeping secrets out of sight."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
import structlog

import connectd.logging as connectd_logging
from connectd import secrets
from connectd.config.definitions import ConfigKey, Type, display_value
from connectd.config.properties import Origin
from connectd.config.providers import (
    ConfigProvider,
    ConfigProviders,
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
    has_placeholder,
)
from connectd.config.worker import WorkerConfig
from connectd.errors import ConfigError
from connectd.logging import configure_logging, get_logger
from connectd.plugins import get_registry
from connectd.secrets import HIDDEN

FILE_SECRET = "file-s3cret-Passw0rd"
DIR_SECRET = "dir-s3cret-T0ken"
ENV_SECRET = "env-s3cret-K3y"


def _find_class(name: str) -> type:
    return get_registry().find_class("config_provider", name)


@pytest.fixture(autouse=True)
def _forget_secrets():
    secrets.forget_all()
    yield
    secrets.forget_all()


@pytest.fixture
def secret_files(tmp_path: Path) -> dict[str, Path]:
    """A properties file of secrets, and a directory of one-file-per-key secrets."""
    props = tmp_path / "secrets" / "db.properties"
    props.parent.mkdir()
    props.write_text(f"# db credentials\nuser=alice\npassword={FILE_SECRET}\nport=5432\n", encoding="utf-8")
    directory = tmp_path / "run" / "secrets"
    directory.mkdir(parents=True)
    (directory / "token").write_text(DIR_SECRET, encoding="utf-8")
    (directory / "with-newline").write_text("line\n", encoding="utf-8")
    (directory / "sub").mkdir()
    (tmp_path / "run" / "outside").write_text("outside-value", encoding="utf-8")
    return {"props": props, "dir": directory, "root": tmp_path}


def _providers(**extra: str) -> ConfigProviders:
    values = {
        "config.providers": "file,dir,env",
        "config.providers.file.class": "file",
        "config.providers.dir.class": "directory",
        "config.providers.env.class": "env",
        **extra,
    }
    return ConfigProviders.from_config(values, _find_class)


def _error(providers: ConfigProviders, value: str) -> str:
    with pytest.raises(ConfigError) as info:
        providers.resolve(value)
    return str(info.value)


# --- setting providers up -------------------------------------------------------


def test_providers_by_alias() -> None:
    providers = _providers()
    assert providers.names == ["file", "dir", "env"]


def test_providers_by_java_class_name(secret_files, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_VAR", ENV_SECRET)
    providers = ConfigProviders.from_config(
        {
            "config.providers": " file , directory,env ",
            "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
            "config.providers.directory.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
            "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        },
        _find_class,
    )
    assert providers.names == ["file", "directory", "env"]
    assert providers.resolve(f"${{file:{secret_files['props']}:user}}") == "alice"
    assert providers.resolve(f"${{directory:{secret_files['dir']}:token}}") == DIR_SECRET
    assert providers.resolve("${env:CONNECTD_TEST_VAR}") == ENV_SECRET


def test_providers_by_python_dotted_path() -> None:
    providers = ConfigProviders.from_config(
        {"config.providers": "f", "config.providers.f.class": "connectd.config.providers.FileConfigProvider"},
        _find_class,
    )
    assert providers.names == ["f"]


def test_any_name_may_be_chosen_for_a_provider(secret_files) -> None:
    providers = ConfigProviders.from_config(
        {"config.providers": "vault", "config.providers.vault.class": "file"}, _find_class
    )
    assert providers.resolve(f"${{vault:{secret_files['props']}:port}}") == "5432"


def test_no_providers() -> None:
    providers = ConfigProviders.from_config({}, _find_class)
    assert providers.names == []
    assert providers.resolve("no placeholder") == "no placeholder"
    assert "no config provider named 'env' (config.providers: none)" in _error(providers, "${env:X}")


def test_missing_class_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        ConfigProviders.from_config({"config.providers": "file"}, _find_class)
    assert str(info.value) == "config.providers.file.class is required (config.providers names 'file')"


def test_missing_class_names_file_and_line() -> None:
    origins = {"config.providers": Origin("w.properties", 4)}
    with pytest.raises(ConfigError) as info:
        ConfigProviders.from_config({"config.providers": "file"}, _find_class, origins.get)
    assert str(info.value) == "w.properties:4: config.providers.file.class is required (config.providers names 'file')"


def test_unknown_class_names_the_key() -> None:
    origins = {"config.providers.vault.class": Origin("w.properties", 7)}
    with pytest.raises(ConfigError) as info:
        ConfigProviders.from_config(
            {"config.providers": "vault", "config.providers.vault.class": "com.example.VaultConfigProvider"},
            _find_class,
            origins.get,
        )
    message = str(info.value)
    assert message.startswith("w.properties:7: config.providers.vault.class='com.example.VaultConfigProvider': ")
    assert "no config provider named 'com.example.VaultConfigProvider' is installed" in message


def test_every_broken_provider_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        ConfigProviders.from_config(
            {
                "config.providers": "a,b,ok",
                "config.providers.b.class": "nope",
                "config.providers.ok.class": "env",
            },
            _find_class,
        )
    assert len(info.value.problems) == 2
    assert info.value.problems[0].startswith("config.providers.a.class is required")
    assert info.value.problems[1].startswith("config.providers.b.class='nope'")


def test_relative_allowed_paths_is_an_error() -> None:
    with pytest.raises(ConfigError) as info:
        _providers(**{"config.providers.file.param.allowed.paths": "/etc/ok,relative/dir"})
    assert str(info.value) == "config.providers.file: allowed.paths: expected absolute paths, got relative/dir"


def test_bad_allowlist_pattern_is_an_error() -> None:
    origins = {"config.providers.env.param.allowlist.pattern": Origin("w.properties", 9)}
    with pytest.raises(ConfigError) as info:
        ConfigProviders.from_config(
            {
                "config.providers": "env",
                "config.providers.env.class": "env",
                "config.providers.env.param.allowlist.pattern": "(unclosed",
            },
            _find_class,
            origins.get,
        )
    message = str(info.value)
    assert message.startswith(
        "w.properties:9: config.providers.env.param.allowlist.pattern='(unclosed': expected a valid regular expression"
    )


def test_bad_parameter_without_origin_has_no_dangling_separator() -> None:
    with pytest.raises(ConfigError) as info:
        ConfigProviders.from_config(
            {
                "config.providers": "env",
                "config.providers.env.class": "env",
                "config.providers.env.param.allowlist.pattern": "(unclosed",
            },
            _find_class,
        )
    assert str(info.value).startswith("config.providers.env.param.allowlist.pattern='(unclosed': ")


def test_close_closes_every_provider() -> None:
    closed: list[str] = []

    class Tracking(ConfigProvider):
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append(self.name)

    ConfigProviders({"a": Tracking("a"), "b": Tracking("b")}).close()
    assert closed == ["a", "b"]


# --- resolution -----------------------------------------------------------------


def test_resolve_file_placeholder(secret_files) -> None:
    providers = _providers()
    assert providers.resolve(f"${{file:{secret_files['props']}:password}}") == FILE_SECRET


def test_resolve_directory_placeholder(secret_files) -> None:
    providers = _providers()
    assert providers.resolve(f"${{dir:{secret_files['dir']}:token}}") == DIR_SECRET
    # The file's whole content, trailing newline included (as Kafka).
    assert providers.resolve(f"${{dir:{secret_files['dir']}:with-newline}}") == "line\n"
    # A trailing slash on the directory makes no difference.
    assert providers.resolve(f"${{dir:{secret_files['dir']}/:token}}") == DIR_SECRET


def test_resolve_env_placeholder(monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_PASSWORD", ENV_SECRET)
    assert _providers().resolve("${env:CONNECTD_TEST_PASSWORD}") == ENV_SECRET


def test_env_is_read_at_resolution_time(monkeypatch) -> None:
    providers = _providers()
    monkeypatch.setenv("CONNECTD_TEST_LATE", "first")
    assert providers.resolve("${env:CONNECTD_TEST_LATE}") == "first"
    monkeypatch.setenv("CONNECTD_TEST_LATE", "second")
    assert providers.resolve("${env:CONNECTD_TEST_LATE}") == "second"


def test_several_placeholders_and_text_around(secret_files, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_USER", "bob")
    providers = _providers()
    value = (
        f"user=${{env:CONNECTD_TEST_USER}};pass=${{file:{secret_files['props']}:password}}"
        f";token=${{dir:{secret_files['dir']}:token}}!"
    )
    assert providers.resolve(value) == f"user=bob;pass={FILE_SECRET};token={DIR_SECRET}!"


def test_jaas_line_with_placeholder(secret_files) -> None:
    providers = _providers()
    jaas = (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
        f'password="${{file:{secret_files["props"]}:password}}";'
    )
    assert providers.resolve(jaas).endswith(f'password="{FILE_SECRET}";')


@pytest.mark.parametrize("value", ["plain", "", "$notaplaceholder", "${}", "${novalue}", "price: $5 {x}"])
def test_values_without_placeholders_pass_through(value: str) -> None:
    assert _providers().resolve(value) == value


def test_non_string_values_pass_through() -> None:
    assert _providers().resolve(42) == 42  # type: ignore[arg-type]
    assert _providers().resolve(None) is None  # type: ignore[arg-type]


def test_has_placeholder() -> None:
    assert has_placeholder("${env:X}")
    assert has_placeholder("a ${file:/p:k} b")
    assert not has_placeholder("${novalue}")
    assert not has_placeholder("plain")
    assert not has_placeholder(None)
    assert not has_placeholder(5)


def test_resolve_all_resolves_every_value(secret_files, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_A", "aaaa")
    resolved = _providers().resolve_all({"a": "${env:CONNECTD_TEST_A}", "b": "plain"})
    assert resolved == {"a": "aaaa", "b": "plain"}


# --- resolution errors ----------------------------------------------------------


def test_unknown_provider_name() -> None:
    assert _error(_providers(), "${vault:/p:k}") == (
        "${vault:/p:k}: no config provider named 'vault' (config.providers: file, dir, env)"
    )


def test_missing_key_in_file(secret_files) -> None:
    path = secret_files["props"]
    assert _error(_providers(), f"${{file:{path}:nokey}}") == (
        f"${{file:{path}:nokey}}: provider 'file' has no value for 'nokey' in {path}"
    )


def test_missing_file(secret_files) -> None:
    path = secret_files["root"] / "missing.properties"
    message = _error(_providers(), f"${{file:{path}:k}}")
    assert message.startswith(f"${{file:{path}:k}}: {path}: cannot read")


def test_file_placeholder_without_path() -> None:
    assert _error(_providers(), "${file::k}") == "${file::k}: expected a path before the key"


def test_missing_key_in_directory(secret_files) -> None:
    directory = secret_files["dir"]
    assert _error(_providers(), f"${{dir:{directory}:nope}}") == (
        f"${{dir:{directory}:nope}}: provider 'dir' has no value for 'nope' in {directory}"
    )


@pytest.mark.parametrize("key", ["../outside", "sub/../token", "sub", ".", ".."])
def test_directory_key_escaping_or_not_a_file_has_no_value(secret_files, key: str) -> None:
    directory = secret_files["dir"]
    message = _error(_providers(), f"${{dir:{directory}:{key}}}")
    assert f"provider 'dir' has no value for {key!r}" in message
    assert "outside-value" not in message


def test_directory_path_that_is_not_a_directory(secret_files) -> None:
    path = secret_files["props"]
    assert _error(_providers(), f"${{dir:{path}:token}}") == f"${{dir:{path}:token}}: {path} is not a directory"


def test_allowed_paths_permits_inside_and_refuses_outside(secret_files) -> None:
    root = secret_files["root"]
    providers = _providers(
        **{
            "config.providers.file.param.allowed.paths": str(root / "secrets"),
            "config.providers.dir.param.allowed.paths": str(secret_files["dir"]),
        }
    )
    assert providers.resolve(f"${{file:{secret_files['props']}:user}}") == "alice"
    assert providers.resolve(f"${{dir:{secret_files['dir']}:token}}") == DIR_SECRET
    other = root / "other.properties"
    other.write_text("user=mallory\n", encoding="utf-8")
    assert _error(providers, f"${{file:{other}:user}}") == f"${{file:{other}:user}}: path {other} is outside allowed.paths"
    # .. is normalised before the check.
    sneaky = f"{root / 'secrets'}/../other.properties"
    assert _error(providers, f"${{file:{sneaky}:user}}").endswith(f"path {sneaky} is outside allowed.paths")
    # A sibling whose name merely starts with the allowed directory's is outside.
    sibling = root / "secrets-evil"
    sibling.mkdir()
    (sibling / "x.properties").write_text("user=eve\n", encoding="utf-8")
    assert "outside allowed.paths" in _error(providers, f"${{file:{sibling / 'x.properties'}:user}}")
    # The directory provider: the parent of the allowed directory is refused.
    assert "outside allowed.paths" in _error(providers, f"${{dir:{secret_files['dir'].parent}:outside}}")


def test_allowed_paths_refuses_relative_placeholder_path(secret_files, monkeypatch) -> None:
    monkeypatch.chdir(secret_files["root"])
    providers = _providers(**{"config.providers.file.param.allowed.paths": str(secret_files["root"])})
    assert "outside allowed.paths" in _error(providers, "${file:secrets/db.properties:user}")


def test_allowed_paths_several_directories(secret_files) -> None:
    root = secret_files["root"]
    providers = _providers(**{"config.providers.dir.param.allowed.paths": f"/nonexistent, {secret_files['dir']}"})
    assert providers.resolve(f"${{dir:{secret_files['dir']}:token}}") == DIR_SECRET
    assert "outside allowed.paths" in _error(providers, f"${{dir:{root}:run}}")


def test_env_with_a_path_is_an_error(monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_X", ENV_SECRET)
    assert _error(_providers(), "${env:/some/path:CONNECTD_TEST_X}") == (
        "${env:/some/path:CONNECTD_TEST_X}: the env provider takes no path: write ${env:NAME}"
    )


def test_env_missing_variable(monkeypatch) -> None:
    monkeypatch.delenv("CONNECTD_TEST_UNSET", raising=False)
    assert _error(_providers(), "${env:CONNECTD_TEST_UNSET}") == (
        "${env:CONNECTD_TEST_UNSET}: provider 'env' has no value for 'CONNECTD_TEST_UNSET'"
    )


def test_env_allowlist_pattern(monkeypatch) -> None:
    monkeypatch.setenv("APP_DB_PASSWORD", "app-secret-value")
    monkeypatch.setenv("HOME_SECRET_XX", "not-for-you")
    providers = _providers(**{"config.providers.env.param.allowlist.pattern": "APP_.*"})
    assert providers.resolve("${env:APP_DB_PASSWORD}") == "app-secret-value"
    message = _error(providers, "${env:HOME_SECRET_XX}")
    assert message == "${env:HOME_SECRET_XX}: provider 'env' has no value for 'HOME_SECRET_XX'"
    # The whole name must match, not a part of it.
    monkeypatch.setenv("XAPP_Y", "v")
    assert "no value" in _error(providers, "${env:XAPP_Y}")


def test_env_provider_with_an_explicit_environment() -> None:
    provider = EnvVarConfigProvider({"A": "1"})
    assert provider.get("", ["A", "B"]) == {"A": "1"}


def test_provider_classes_can_be_used_directly(secret_files) -> None:
    file_provider = FileConfigProvider()
    file_provider.configure({})
    assert file_provider.get(str(secret_files["props"]), ["user", "port", "nope"]) == {"user": "alice", "port": "5432"}
    dir_provider = DirectoryConfigProvider()
    dir_provider.configure({"allowed.paths": str(secret_files["dir"])})
    assert dir_provider.get(str(secret_files["dir"]), ["token", "nope", "../outside"]) == {"token": DIR_SECRET}


def test_a_provider_raising_anything_is_reported_without_its_message() -> None:
    class Broken(ConfigProvider):
        def get(self, path, keys):
            raise RuntimeError("internal detail with hunter2-leak")

    message = _error(ConfigProviders({"vault": Broken()}), "${vault:p:k}")
    assert message == "${vault:p:k}: provider 'vault' failed: RuntimeError"


def test_resolve_all_collects_every_problem(monkeypatch) -> None:
    monkeypatch.delenv("CONNECTD_TEST_NOPE1", raising=False)
    with pytest.raises(ConfigError) as info:
        _providers().resolve_all({"a": "${env:CONNECTD_TEST_NOPE1}", "b": "ok", "c": "${zzz:x}"})
    assert [p.split(":")[0] for p in info.value.problems] == ["a", "c"]
    assert info.value.problems[0] == "a: ${env:CONNECTD_TEST_NOPE1}: provider 'env' has no value for 'CONNECTD_TEST_NOPE1'"


# --- redaction ------------------------------------------------------------------


def test_resolved_values_are_registered_and_redacted(secret_files, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_PASSWORD", ENV_SECRET)
    providers = _providers()
    providers.resolve(f"${{file:{secret_files['props']}:password}}")
    providers.resolve(f"${{dir:{secret_files['dir']}:token}}")
    providers.resolve("${env:CONNECTD_TEST_PASSWORD}")
    text = f"connect failed: auth {FILE_SECRET} / {DIR_SECRET} / {ENV_SECRET}"
    assert secrets.redact(text) == f"connect failed: auth {HIDDEN} / {HIDDEN} / {HIDDEN}"


def test_unresolved_values_are_not_registered(secret_files) -> None:
    providers = _providers()
    # Only the value that was asked for is registered, not the whole file.
    providers.resolve(f"${{file:{secret_files['props']}:user}}")
    assert secrets.redact(f"x {FILE_SECRET} x") == f"x {FILE_SECRET} x"


def test_errors_never_contain_an_already_resolved_secret(secret_files, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_PASSWORD", ENV_SECRET)
    monkeypatch.delenv("CONNECTD_TEST_MISSING", raising=False)
    providers = _providers(**{"config.providers.dir.param.allowed.paths": str(secret_files["dir"])})
    good = f"${{file:{secret_files['props']}:password}}"
    env_good = "${env:CONNECTD_TEST_PASSWORD}"
    assert providers.resolve(good) == FILE_SECRET
    bad_values = [
        f"{good}:${{env:CONNECTD_TEST_MISSING}}",
        f"{env_good}${{vault:p:k}}",
        f"{good}${{file:{secret_files['props']}:nokey}}",
        f"{good}${{dir:{secret_files['dir']}:../outside}}",
        f"{env_good}${{dir:{secret_files['root']}:x}}",
        f"{good}${{env:/p:CONNECTD_TEST_PASSWORD}}",
        f"{good}${{file:{secret_files['root']}/missing:k}}",
    ]
    for value in bad_values:
        with pytest.raises(ConfigError) as info:
            providers.resolve(value)
        message = str(info.value)
        assert FILE_SECRET not in message and ENV_SECRET not in message, message
        assert all(FILE_SECRET not in str(p) and ENV_SECRET not in str(p) for p in info.value.problems)
    with pytest.raises(ConfigError) as info:
        providers.resolve_all({"ok": good, "ok2": env_good, "bad": "${env:CONNECTD_TEST_MISSING}"})
    assert FILE_SECRET not in str(info.value) and ENV_SECRET not in str(info.value)


def test_display_value_hides_passwords_and_shows_placeholders() -> None:
    key = ConfigKey("ssl.key.password", Type.PASSWORD, "Key password.", default=None)
    assert display_value(key, "literal-password") == HIDDEN
    assert display_value(key, "${env:PW}") == "${env:PW}"
    plain = ConfigKey("user", Type.STRING, "User.", default=None)
    assert display_value(plain, "alice") == "alice"


def test_display_value_hides_literal_password_beside_a_placeholder() -> None:
    key = ConfigKey("sasl.jaas.config", Type.PASSWORD, "JAAS.", default=None)
    raw = 'PlainLoginModule required username="${env:USER}" password="literal-jaas-pw";'
    assert "literal-jaas-pw" not in (display_value(key, raw) or "")


def _worker_file(tmp_path: Path, secret_files, extra: str = "") -> Path:
    path = tmp_path / "worker.properties"
    path.write_text(
        "\n".join(
            [
                "bootstrap.servers=localhost:9092",
                "group.id=connect",
                "config.storage.topic=c",
                "offset.storage.topic=o",
                "status.storage.topic=s",
                "key.converter=k",
                "value.converter=v",
                "config.providers=file,env",
                "config.providers.file.class=file",
                "config.providers.env.class=env",
                f"ssl.key.password=${{file:{secret_files['props']}:password}}",
                f"producer.ssl.keystore.password=${{file:{secret_files['props']}:password}}",
                "ssl.truststore.password=literal-truststore-pw",
                f"spark.custom.secret=${{file:{secret_files['props']}:password}}",
                extra,
            ]
        ),
        encoding="utf-8",
    )
    return path


def test_worker_config_repr_and_display_never_show_resolved_secret(tmp_path, secret_files) -> None:
    config = WorkerConfig.from_file(_worker_file(tmp_path, secret_files))
    # Resolve everything there is to resolve first.
    assert config.resolved("ssl.key.password") == FILE_SECRET
    assert config.get("ssl.key.password").value() == FILE_SECRET
    assert config.spark_conf()["spark.custom.secret"] == FILE_SECRET
    shown = config.display()
    assert shown["ssl.key.password"] == f"${{file:{secret_files['props']}:password}}"
    assert shown["ssl.truststore.password"] == HIDDEN
    for text in (repr(config), str(config), json.dumps(shown)):
        assert FILE_SECRET not in text
        assert "literal-truststore-pw" not in text
    # Originals are values as written: placeholders, never resolved values.
    assert FILE_SECRET not in repr(config.originals())


def test_worker_config_display_hides_prefixed_passwords(tmp_path, secret_files) -> None:
    config = WorkerConfig.from_file(
        _worker_file(tmp_path, secret_files, "producer.ssl.key.password=literal-producer-pw")
    )
    assert "literal-producer-pw" not in repr(config)
    assert "literal-producer-pw" not in str(config.display())


def test_worker_config_errors_never_show_resolved_value(tmp_path, secret_files, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_LISTENERS", "ftp://env-s3cret-listener:1")
    config = WorkerConfig.from_file(_worker_file(tmp_path, secret_files, "listeners=${env:CONNECTD_TEST_LISTENERS}"))
    with pytest.raises(ConfigError) as info:
        config.get("listeners")
    assert "env-s3cret-listener" not in str(info.value)
    problems = config.problems(check_classes=False)
    assert any(p.key == "listeners" for p in problems)
    assert all("env-s3cret-listener" not in str(p) for p in problems)


def test_worker_config_errors_after_resolution_hide_the_secret(tmp_path, secret_files, monkeypatch) -> None:
    monkeypatch.delenv("CONNECTD_TEST_MISSING", raising=False)
    config = WorkerConfig.from_file(
        _worker_file(tmp_path, secret_files, "consumer.sasl.mechanism=${env:CONNECTD_TEST_MISSING}")
    )
    assert config.resolved("ssl.key.password") == FILE_SECRET
    problems = config.problems(check_classes=False)
    assert [p.key for p in problems if p.is_error] == ["consumer.sasl.mechanism"]
    assert all(FILE_SECRET not in str(p) for p in problems)


@pytest.fixture
def json_log() -> io.StringIO:
    """JSON log lines into a string; everything configure_logging changes is undone after."""
    root = logging.getLogger()
    levels = {
        name: logger.level
        for name, logger in dict(logging.root.manager.loggerDict).items()
        if isinstance(logger, logging.Logger)
    }
    root_level = root.level
    stream = io.StringIO()
    configure_logging("INFO", json=True, stream=stream)
    yield stream
    for handler in list(root.handlers):
        if getattr(handler, "_connectd_owned", False):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(root_level)
    for name, logger in dict(logging.root.manager.loggerDict).items():
        if isinstance(logger, logging.Logger):
            logger.setLevel(levels.get(name, logging.NOTSET))
    connectd_logging._last_modified.clear()
    structlog.contextvars.clear_contextvars()
    structlog.reset_defaults()


def test_log_lines_hide_resolved_secrets(json_log, secret_files, monkeypatch) -> None:
    monkeypatch.setenv("CONNECTD_TEST_PASSWORD", ENV_SECRET)
    providers = _providers()
    providers.resolve(f"${{file:{secret_files['props']}:password}}")
    providers.resolve("${env:CONNECTD_TEST_PASSWORD}")
    log = get_logger("connectd.test.providers")
    log.info("client_failed", error=f"SASL auth failed for password {FILE_SECRET}", detail={"pw": ENV_SECRET})
    logging.getLogger("aiokafka.test").warning("library says %s", FILE_SECRET)
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    assert len(lines) == 2
    assert lines[0]["event"] == "client_failed"
    assert lines[0]["error"] == f"SASL auth failed for password {HIDDEN}"
    assert lines[0]["detail"] == {"pw": HIDDEN}
    assert lines[1]["event"] == f"library says {HIDDEN}"
    assert FILE_SECRET not in json_log.getvalue() and ENV_SECRET not in json_log.getvalue()
