"""No inert surface: every declared worker and connector key is read by connectd, or declared ignored.

A key connectd accepts must do what its documentation says. This test
cannot prove that, but it finds the key nothing reads: each declared key
must be named in connectd's code outside its own declaration (read, or
checked and refused), be read under a name the code computes (listed in
:data:`COMPUTED`, each checked to be still there), or carry
:attr:`~connectd.config.definitions.ConfigKey.ignored`, which makes every
check warn that it is ignored and whose documentation must say so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from connectd.config.connector import COMMON_DEF, SINK_DEF, SOURCE_DEF
from connectd.config.definitions import ConfigKey
from connectd.config.worker_keys import COMMON_WORKER_DEF, DISTRIBUTED_DEF, STANDALONE_DEF

PACKAGE = Path(__file__).resolve().parents[2] / "connectd"
#: Lists of key names that read nothing: the reference's renderer and MSK Connect's allowed keys.
NOT_READERS = {"config/docs.py", "config/msk.py"}
CODE = "\n".join(path.read_text(encoding="utf-8") for path in sorted(PACKAGE.rglob("*.py"))
                 if path.relative_to(PACKAGE).as_posix() not in NOT_READERS)

#: Keys read under a name the code computes: the module and the expression that reads them.
COMPUTED = {
    "config.storage.replication.factor": ("cluster/kafka_log.py", 'config.get(f"{prefix}.replication.factor")'),
    "status.storage.partitions": ("cluster/kafka_log.py", 'config.get(f"{prefix}.partitions")'),
    "status.storage.replication.factor": ("cluster/kafka_log.py", 'config.get(f"{prefix}.replication.factor")'),
    "topic.creation.groups": ("runtime/source/topic_creation.py", 'config.get(f"{_PREFIX}groups"'),
    "topic.creation.default.replication.factor": ("runtime/source/topic_creation.py",
                                                  'config.get(f"{_PREFIX}default.replication.factor")'),
}


def _declared() -> list[ConfigKey]:
    keys: dict[str, ConfigKey] = {}
    for definition in (COMMON_WORKER_DEF, DISTRIBUTED_DEF, STANDALONE_DEF, COMMON_DEF, SOURCE_DEF, SINK_DEF):
        for key in definition:
            keys.setdefault(key.name, key)
    return sorted(keys.values(), key=lambda k: k.name)


DECLARED = _declared()


def _named_outside_its_declaration(name: str) -> bool:
    pattern = re.compile(r'(ConfigKey\(\s*)?"' + re.escape(name) + '"')
    return any(match.group(1) is None for match in pattern.finditer(CODE))


@pytest.mark.parametrize("key", DECLARED, ids=[k.name for k in DECLARED])
def test_every_declared_key_is_read_or_declared_ignored(key: ConfigKey) -> None:
    if key.ignored:
        assert "ignored" in key.documentation, f"{key.name} is ignored but its documentation does not say so"
    elif key.name in COMPUTED:
        module, expression = COMPUTED[key.name]
        assert expression in (PACKAGE / module).read_text(encoding="utf-8"), (
            f"{key.name}: connectd/{module} no longer reads it as {expression}; update COMPUTED")
    else:
        assert _named_outside_its_declaration(key.name), (
            f"{key.name} is declared and nothing in connectd reads it: make it work, refuse it, "
            "or declare it ignored (ConfigKey.ignored) and say so in its documentation")


def test_computed_names_are_declared_keys() -> None:
    assert set(COMPUTED) <= {key.name for key in DECLARED}


def test_a_key_documented_as_ignored_is_declared_ignored() -> None:
    assert [key.name for key in DECLARED if "ignored" in key.documentation.lower() and not key.ignored] == []
