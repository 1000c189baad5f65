"""Names made file-name parts: never a path of their own."""

from __future__ import annotations

import pytest

from connectd.runtime.spark.queries import file_name_part


@pytest.mark.parametrize("name", ["orders-sink", "my_connector.v2", "a~b-0"])
def test_a_plain_name_stays_as_it_is(name):
    assert file_name_part(name) == name


@pytest.mark.parametrize("name", ["a/../../x", "../..", "/etc/passwd", "line\nbreak", "tab\there", "nul\x00"])
def test_separators_and_control_characters_are_encoded(name):
    part = file_name_part(name)
    assert "/" not in part and all(char.isprintable() for char in part) and "\x00" not in part
    assert part != name


def test_long_names_are_cut_and_still_told_apart():
    first, second = "n" * 5000, "n" * 4999 + "m"
    assert len(file_name_part(first)) == 100 == len(file_name_part(second))
    assert file_name_part(first) != file_name_part(second)
