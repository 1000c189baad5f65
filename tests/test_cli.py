"""The command line: verbs, output and exit codes (0, 2, 78)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connectd.cli import EXIT_CONFIG, EXIT_OK, EXIT_USAGE, main

ROOT = Path(__file__).resolve().parents[1]

VALID = """\
bootstrap.servers=127.0.0.1:9092
group.id=g
key.converter={converter}
value.converter={converter}
config.storage.topic=c
offset.storage.topic=o
status.storage.topic=s
"""

CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


@pytest.fixture
def valid_file(tmp_path: Path) -> Path:
    path = tmp_path / "worker.properties"
    path.write_text(VALID.format(converter=CONVERTER))
    return path


def test_check_valid_file_exits_0(valid_file, capsys):
    assert main(["config", "check", str(valid_file)]) == EXIT_OK
    assert capsys.readouterr().out.strip().endswith("distributed worker config: ok")


def test_check_three_mistakes_prints_three_lines_and_exits_78(tmp_path, capsys):
    path = tmp_path / "bad.properties"
    path.write_text(
        VALID.format(converter=CONVERTER)
        + "session.timeout.ms=ten\n"  # line 8
        + "listeners=ftp://x:1\n"  # line 9
        + "offset.storage.partitions=0\n"  # line 10
    )
    assert main(["config", "check", str(path)]) == EXIT_CONFIG
    lines = capsys.readouterr().out.splitlines()
    errors = [line for line in lines if line.startswith(f"{path}:") and "warning" not in line and line.count(":") >= 2 and line.split(":")[1].isdigit()]
    assert [line.split(":")[1] for line in errors] == ["8", "9", "10"]
    assert "session.timeout.ms='ten': expected a 32-bit integer" in errors[0]
    assert lines[-1].endswith("3 errors, 0 warnings")


def test_unknown_key_is_only_a_warning(valid_file, capsys):
    valid_file.write_text(valid_file.read_text() + "grup.id=x\n")
    assert main(["config", "check", str(valid_file)]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"{valid_file}:8: warning: unknown key 'grup.id' (did you mean 'group.id'?)" in out


def test_missing_file_is_a_config_error(tmp_path, capsys):
    assert main(["config", "check", str(tmp_path / "nope.properties")]) == EXIT_CONFIG
    assert "nope.properties: cannot read" in capsys.readouterr().err


def test_msk_policy_flags_and_names_the_rule(valid_file, capsys):
    valid_file.write_text(valid_file.read_text() + "producer.linger.ms=5\n")
    assert main(["config", "check", "--policy", "msk", str(valid_file)]) == EXIT_CONFIG
    out = capsys.readouterr().out
    assert f"{valid_file}:2: group.id: MSK Connect refuses it (forbidden property group.id)" in out
    assert "producer.linger.ms: MSK Connect refuses it (not on the allow-list of producer. properties)" in out


def test_mode_flag_selects_standalone_keys(valid_file, capsys):
    assert main(["config", "check", "--mode", "standalone", str(valid_file)]) == EXIT_CONFIG
    assert "offset.storage.file.filename is required" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["connect-distributed.properties", "connect-standalone.properties"])
def test_shipped_example_configs_pass(name, capsys):
    assert main(["config", "check", str(ROOT / "etc" / name)]) == EXIT_OK, capsys.readouterr().out


def test_plugins_json_lists_builtins_and_plugin_packages(capsys):
    assert main(["plugins", "--json"]) == EXIT_OK
    listed = json.loads(capsys.readouterr().out)
    by_package = {p["package"] for p in listed}
    assert {"connectd", "connectd-file", "connectd-datagen"} <= by_package
    source = next(p for p in listed if p["name"] == "FileStreamSourceConnector")
    assert source["kind"] == "source"
    assert "org.apache.kafka.connect.file.FileStreamSourceConnector" in source["aliases"]


def test_plugins_table(capsys):
    assert main(["plugins"]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "KIND", "VERSION", "PACKAGE", "ALIASES"]
    assert any(line.startswith("FileStreamSinkConnector") and " sink " in line for line in out)


def test_config_docs_writes_the_reference(tmp_path, capsys):
    target = tmp_path / "ref.md"
    assert main(["config", "docs", "-o", str(target)]) == EXIT_OK
    assert target.read_text().startswith("# Configuration reference")


def test_standalone_reports_every_bad_connector_file_before_starting(tmp_path, capsys):
    worker = tmp_path / "w.properties"
    worker.write_text(VALID.format(converter=CONVERTER) + f"offset.storage.file.filename={tmp_path}/o\n")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    good = tmp_path / "good.properties"
    good.write_text(f"name=good\nconnector.class=FileStreamSink\ntopics=t\nfile={tmp_path}/out\n")
    unknown = tmp_path / "unknown.properties"
    unknown.write_text("name=unknown\nconnector.class=NoSuchConnector\n")
    again = tmp_path / "again.json"
    again.write_text(json.dumps({"name": "good", "config": {"connector.class": "FileStreamSink", "topics": "t",
                                                            "file": f"{tmp_path}/out2"}}))
    assert main(["standalone", str(worker), str(good), str(broken), str(unknown), str(again)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"{broken}: not JSON" in err
    assert f"{unknown}:2: connector.class" in err and "NoSuchConnector" in err
    assert f"{again}: connector good is also defined in {good}" in err


def test_standalone_refuses_a_connector_file_whose_overrides_the_worker_policy_forbids(tmp_path, capsys):
    worker = tmp_path / "w.properties"
    worker.write_text(VALID.format(converter=CONVERTER) + f"offset.storage.file.filename={tmp_path}/o\n"
                      "connector.client.config.override.policy=None\n")
    sink = tmp_path / "sink.properties"
    sink.write_text(f"name=s\nconnector.class=FileStreamSink\ntopics=t\nfile={tmp_path}/out\n"
                    "consumer.override.max.poll.records=10\n")
    assert main(["standalone", str(worker), str(sink)]) == EXIT_CONFIG
    assert (f"{sink}:5: consumer.override.max.poll.records: is not allowed: the worker's "
            "connector.client.config.override.policy is None, which allows no client override") in capsys.readouterr().err


def test_not_landed_verb_still_reports_config_errors_first(tmp_path, capsys):
    path = tmp_path / "w.properties"
    path.write_text("bootstrap.servers=x\n")
    assert main(["distributed", str(path)]) == EXIT_CONFIG
    assert "group.id is required" in capsys.readouterr().err


def test_bad_log_level_is_a_config_error(valid_file, capsys):
    assert main(["--log-level", "LOUD", "plugins"]) == EXIT_CONFIG
    assert "'LOUD' is not a log level" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == EXIT_USAGE
    with pytest.raises(SystemExit) as info:
        main(["config", "frobnicate"])
    assert info.value.code == EXIT_USAGE
