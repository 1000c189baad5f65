"""The generated configuration reference: complete, well-formed, and committed up to date."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from connectd.config.connector import COMMON_DEF, SINK_DEF, SOURCE_DEF
from connectd.config.definitions import ConfigDef, ConfigKey
from connectd.config.docs import DEFAULT_PATH, render_reference, undocumented_keys
from connectd.config.providers import BUILTIN_PROVIDERS
from connectd.config.worker_keys import COMMON_WORKER_DEF, DISTRIBUTED_DEF, STANDALONE_DEF
from connectd.plugins import get_registry

REPO = Path(__file__).resolve().parents[2]

DEFS: dict[str, ConfigDef] = {
    "COMMON_WORKER_DEF": COMMON_WORKER_DEF,
    "DISTRIBUTED_DEF": DISTRIBUTED_DEF,
    "STANDALONE_DEF": STANDALONE_DEF,
    "COMMON_DEF": COMMON_DEF,
    "SOURCE_DEF": SOURCE_DEF,
    "SINK_DEF": SINK_DEF,
    **{f"{cls.__name__}.config_def": cls.config_def for cls, _ in BUILTIN_PROVIDERS},
}

ALL_KEYS: list[tuple[str, ConfigKey]] = [(name, key) for name, d in DEFS.items() for key in d]

# A sentence ends with . ! or ?, possibly followed by a closing bracket or quote.
_SENTENCE_END = re.compile(r"[.!?][)\"'”]?$")


def test_undocumented_keys_is_empty() -> None:
    assert undocumented_keys() == []


@pytest.mark.parametrize("where, key", ALL_KEYS, ids=[f"{w}:{k.name}" for w, k in ALL_KEYS])
def test_documentation_is_full_sentences(where: str, key: ConfigKey) -> None:
    doc = key.documentation
    assert doc == doc.strip(), f"{key.name}: documentation has surrounding white space"
    assert len(doc.split()) >= 3, f"{key.name}: documentation {doc!r} is not a sentence"
    assert doc[0].isalnum(), f"{key.name}: documentation should start with a word, got {doc!r}"
    assert _SENTENCE_END.search(doc), f"{key.name}: documentation should end with a full sentence: {doc!r}"
    assert "  " not in doc, f"{key.name}: documentation has a double space"
    assert "\n" not in doc, f"{key.name}: documentation has a line break (it breaks the table)"


@pytest.mark.parametrize("where, key", ALL_KEYS, ids=[f"{w}:{k.name}" for w, k in ALL_KEYS])
def test_every_key_describes_itself(where: str, key: ConfigKey) -> None:
    # The reference calls these for every key; neither may raise.
    assert isinstance(key.default_text(), str)
    if key.validator is not None:
        assert isinstance(key.validator.describe(), str)


def test_prefixes_are_documented() -> None:
    for name, definition in DEFS.items():
        for prefix, doc in definition.prefixes.items():
            assert prefix.endswith("."), f"{name}: prefix {prefix!r} should end with a dot"
            assert _SENTENCE_END.search(doc.strip()), f"{name}: prefix {prefix!r} documentation {doc!r}"


def test_committed_reference_is_up_to_date() -> None:
    path = REPO / DEFAULT_PATH
    if not path.exists():
        pytest.fail(f"{DEFAULT_PATH} does not exist: run `connectd config docs` and commit it")
    committed = path.read_text(encoding="utf-8")
    assert committed == render_reference(), (
        f"{DEFAULT_PATH} is stale: run `connectd config docs` to regenerate it from the declarations"
    )


def test_render_is_deterministic() -> None:
    assert render_reference() == render_reference()


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _table_keys(section: str) -> list[str]:
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def test_each_section_lists_its_own_keys_once() -> None:
    sections = _sections(render_reference())
    expected = {
        "Worker: every mode": COMMON_WORKER_DEF.names(),
        "Worker: distributed mode": [k for k in DISTRIBUTED_DEF.names() if k not in COMMON_WORKER_DEF],
        "Worker: standalone mode": [k for k in STANDALONE_DEF.names() if k not in COMMON_WORKER_DEF],
        "Connector: every connector": COMMON_DEF.names(),
        "Connector: source connectors": [k for k in SOURCE_DEF.names() if k not in COMMON_DEF],
        "Connector: sink connectors": [k for k in SINK_DEF.names() if k not in COMMON_DEF],
        "Config providers": [key.name for cls, _ in BUILTIN_PROVIDERS for key in cls.config_def],
        "Where connectd differs from Kafka Connect": [],
    }
    assert list(sections) == list(expected)
    for title, names in expected.items():
        keys = [k for k in _table_keys(sections[title]) if not k.endswith("*")]
        assert keys == names, title


def test_table_rows_are_well_formed() -> None:
    for line in render_reference().splitlines():
        if not line.startswith("|"):
            continue
        cells = re.split(r"(?<!\\)\|", line)
        # A leading and trailing empty cell around the columns.
        assert cells[0] == "" and cells[-1] == "", line
        assert len(cells) - 2 in (2, 6), line


def test_rows_show_type_default_and_extension() -> None:
    text = render_reference()
    assert "| `group.id` | string | *required* |" in text
    assert "| `session.timeout.ms` | int | `10000` | [1,...] | high |" in text
    assert "| `sasl.jaas.config` | password | `null` |" in text
    assert "| `topic.creation.enable` | boolean | `true` |" in text
    assert "| `metric.reporters` | list | `\"\"` |" in text
    row = next(line for line in text.splitlines() if line.startswith("| `errors.restart.enable` |"))
    assert row.endswith("*(extension)* |")
    row = next(line for line in text.splitlines() if line.startswith("| `group.id` |"))
    assert "(extension)" not in row


def test_prefix_tables_in_reference() -> None:
    sections = _sections(render_reference())
    assert "| `spark.*` |" in sections["Worker: every mode"]
    assert "| `producer.override.*` |" in sections["Connector: every connector"]
    assert "| `topic.creation.*` |" in sections["Connector: source connectors"]
    # Prefixes of the base are not repeated in the sections built on it.
    assert "| `spark.*` |" not in sections["Worker: distributed mode"]


def test_reference_documents_config_provider_parameters() -> None:
    text = render_reference()
    for cls, _ in BUILTIN_PROVIDERS:
        for key in cls.config_def:
            assert f"`{key.name}`" in text, f"{cls.__name__}: {key.name} is not in the reference"


def test_plugin_reference_page_is_current() -> None:
    from connectd.config.docs import PLUGINS_PATH, render_plugin_reference

    path = REPO / PLUGINS_PATH
    assert path.exists(), f"{PLUGINS_PATH} is missing: run `connectd config docs`"
    assert path.read_text(encoding="utf-8") == render_plugin_reference(get_registry()), (
        f"{PLUGINS_PATH} is stale: run `connectd config docs` and commit the result"
    )


def test_plugin_reference_lists_every_builtin_converter_transform_and_predicate() -> None:
    from connectd.config.docs import render_plugin_reference
    from connectd.plugins import get_registry

    page = render_plugin_reference(get_registry())
    for info in get_registry():
        if info.package == "connectd" and info.group in ("converter", "transform", "predicate"):
            assert f"### {info.aliases[0]}\n" in page
            for key in getattr(info.cls, "config_def", ()):
                assert f"| `{key.name}` |" in page, f"{info.name}: {key.name}"


def test_every_builtin_plugin_setting_is_documented() -> None:
    from connectd.config.docs import plugin_undocumented_keys

    assert plugin_undocumented_keys(get_registry()) == []
