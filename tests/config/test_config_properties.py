"""java.util.Properties syntax through parse_properties / load_properties.

Each case is the behaviour of Java's ``Properties.load``; the line numbers are
what connectd adds, so every error message can name ``file:line``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connectd.config.properties import Origin, PropertiesFile, load_properties, parse_properties
from connectd.errors import ConfigError


def _lines(props: PropertiesFile) -> dict[str, int | None]:
    return {key: props.origin(key).line for key in props}


# --- separators ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text, key, value",
    [
        ("a=1", "a", "1"),
        ("a:1", "a", "1"),
        ("a 1", "a", "1"),
        ("a\t1", "a", "1"),
        ("a\f1", "a", "1"),
        ("a = 1", "a", "1"),
        ("a : 1", "a", "1"),
        ("a   1", "a", "1"),
        # Only the first separator counts; the rest belongs to the value.
        ("a=b=c", "a", "b=c"),
        ("a:b:c", "a", "b:c"),
        ("a = =b", "a", "=b"),
        # White space then '=' is one separator.
        ("a  =  b", "a", "b"),
        # Leading white space of the line is not part of the key.
        ("   a=1", "a", "1"),
        ("\t a=1", "a", "1"),
    ],
)
def test_separators(text: str, key: str, value: str) -> None:
    props = parse_properties(text)
    assert dict(props) == {key: value}


def test_trailing_whitespace_of_a_value_is_kept() -> None:
    # Java keeps it; so does Kafka (STRING values are trimmed later, by type).
    assert parse_properties("a = b  \n")["a"] == "b  "


def test_escaped_spaces_belong_to_the_key() -> None:
    props = parse_properties("key\\ with\\ spaces = value here\n")
    assert dict(props) == {"key with spaces": "value here"}


@pytest.mark.parametrize(
    "text, key, value",
    [
        ("a\\=b=c", "a=b", "c"),
        ("a\\:b=c", "a:b", "c"),
        ("a\\:b:c", "a:b", "c"),
        ("a\\=b\\=c=d", "a=b=c", "d"),
        ("a\\ b c", "a b", "c"),
    ],
)
def test_escaped_separators_belong_to_the_key(text: str, key: str, value: str) -> None:
    assert dict(parse_properties(text)) == {key: value}


@pytest.mark.parametrize("text", ["a=", "a:", "a", "a   ", "a =   "])
def test_empty_values(text: str) -> None:
    assert dict(parse_properties(text + "\n")) == {"a": ""}


def test_escapes_in_values() -> None:
    props = parse_properties("a=tab\\there\nb=new\\nline\nc=back\\\\slash\nd=\\q\n")
    assert props["a"] == "tab\there"
    assert props["b"] == "new\nline"
    assert props["c"] == "back\\slash"
    # An unknown escape drops the backslash, as Java does.
    assert props["d"] == "q"


# --- comments and blank lines ---------------------------------------------------


def test_comments_and_blank_lines_are_skipped_and_counted() -> None:
    text = "\n".join(
        [
            "# hash comment",  # 1
            "! bang comment",  # 2
            "   # indented hash",  # 3
            "\t! indented bang",  # 4
            "",  # 5
            "   ",  # 6
            "a=1",  # 7
            "#b=2",  # 8
            "c=3 # not a comment",  # 9
        ]
    )
    props = parse_properties(text)
    assert dict(props) == {"a": "1", "c": "3 # not a comment"}
    assert _lines(props) == {"a": 7, "c": 9}


def test_comment_ending_in_backslash_does_not_continue() -> None:
    # In Java a comment line is never continued: the next line is an entry.
    props = parse_properties("# comment \\\na=1\n")
    assert dict(props) == {"a": "1"}
    assert props.origin("a").line == 2


def test_empty_text() -> None:
    props = parse_properties("")
    assert len(props) == 0
    assert props.duplicates == []


# --- line continuations ---------------------------------------------------------


def test_continuation_drops_leading_whitespace_of_the_next_line() -> None:
    props = parse_properties("plugins=a,\\\n        b,\\\n\t  c\nafter=1\n")
    assert props["plugins"] == "a,b,c"
    assert _lines(props) == {"plugins": 1, "after": 4}


def test_continuation_keeps_whitespace_before_the_backslash() -> None:
    assert parse_properties("a=one \\\n   two\n")["a"] == "one two"


def test_continuation_inside_a_key() -> None:
    props = parse_properties("long\\\n   .key=v\nz=1\n")
    assert dict(props) == {"long.key": "v", "z": "1"}
    assert _lines(props) == {"long.key": 1, "z": 3}


def test_continuation_at_end_of_file() -> None:
    props = parse_properties("a=1\nb=last\\")
    assert dict(props) == {"a": "1", "b": "last"}
    assert props.origin("b").line == 2


def test_continuation_onto_a_blank_line_ends_the_value() -> None:
    props = parse_properties("a=x\\\n\nb=2\n")
    assert dict(props) == {"a": "x", "b": "2"}
    assert _lines(props) == {"a": 1, "b": 3}


def test_even_number_of_backslashes_is_not_a_continuation() -> None:
    props = parse_properties("a=x\\\\\nb=y\n")
    assert dict(props) == {"a": "x\\", "b": "y"}
    assert _lines(props) == {"a": 1, "b": 2}


def test_line_numbers_after_several_continuations() -> None:
    text = "a=1\\\n  2\\\n  3\\\n  4\n# c\nb=5\\\n 6\nc=7\n"
    props = parse_properties(text)
    assert dict(props) == {"a": "1234", "b": "56", "c": "7"}
    assert _lines(props) == {"a": 1, "b": 6, "c": 8}


# --- line endings ---------------------------------------------------------------


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_line_numbers_with_each_line_ending(eol: str) -> None:
    text = eol.join(["# head", "a=1", "", "b=x\\", "   y", "c=3", ""])
    props = parse_properties(text)
    assert dict(props) == {"a": "1", "b": "xy", "c": "3"}
    assert _lines(props) == {"a": 2, "b": 4, "c": 6}


def test_mixed_line_endings() -> None:
    props = parse_properties("a=1\r\nb=2\rc=3\nd=4\r\n\r\ne=5")
    assert dict(props) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}
    assert _lines(props) == {"a": 1, "b": 2, "c": 3, "d": 4, "e": 6}


def test_crlf_is_not_part_of_the_value() -> None:
    assert parse_properties("a=1\r\n")["a"] == "1"


def test_lf_then_cr_is_two_line_endings() -> None:
    props = parse_properties("a=1\n\rb=2")
    assert _lines(props) == {"a": 1, "b": 3}


def test_unicode_line_separators_do_not_end_a_line() -> None:
    # Java's LineReader ends lines only at \n and \r.
    props = parse_properties("a=x\u2028y\x85z\x0cw\nb=2\n")
    assert props["a"] == "x\u2028y\x85z\x0cw"
    assert props.origin("b").line == 2


# --- \uXXXX escapes -------------------------------------------------------------


def test_unicode_escapes_in_keys_and_values() -> None:
    props = parse_properties("caf\\u00e9=\\u0041\\u00DF\\u20ac\n")
    assert dict(props) == {"café": "Aß€"}


def test_surrogate_pair_escape_becomes_one_character() -> None:
    assert parse_properties("a=\\ud83d\\ude00")["a"] == "\U0001F600"


@pytest.mark.parametrize("bad", ["\\uZZZZ", "\\u12", "\\u", "\\u00g1"])
def test_invalid_unicode_escape_names_file_and_line(bad: str) -> None:
    text = f"# comment\n\nok=1\nbroken={bad}\nafter=2\n"
    with pytest.raises(ConfigError) as info:
        parse_properties(text, "w.properties")
    message = str(info.value)
    assert message.startswith("w.properties:4: invalid unicode escape")
    assert repr(bad) in message  # the escape as written, quoted
    assert message.endswith("expected \\u and four hex digits")
    assert len(info.value.problems) == 1


def test_invalid_unicode_escape_after_crlf_continuations_counts_lines() -> None:
    text = "a=1\\\r\n  2\r\nb=3\r\nc=\\uXYZW\r\n"
    with pytest.raises(ConfigError, match=r"^f\.properties:4: "):
        parse_properties(text, "f.properties")


def test_invalid_unicode_escape_on_a_continued_line_names_the_entrys_first_line() -> None:
    with pytest.raises(ConfigError, match=r"^f\.properties:2: "):
        parse_properties("z=0\na=1\\\n  \\uQQQQ\n", "f.properties")


# --- duplicates -----------------------------------------------------------------


def test_duplicate_keys_last_wins_and_earlier_ones_are_listed() -> None:
    props = parse_properties("a=1\nb=x\na=2\n\na=3\n", "d.properties")
    assert props["a"] == "3"
    assert props.origin("a") == Origin("d.properties", 5)
    assert props.duplicates == [("a", Origin("d.properties", 1)), ("a", Origin("d.properties", 3))]
    # File order is that of the first appearance, as in a dict update.
    assert list(props) == ["a", "b"]


def test_keys_differing_only_by_escape_are_duplicates() -> None:
    props = parse_properties("a\\u0062=1\nab=2\n")
    assert dict(props) == {"ab": "2"}
    assert [key for key, _ in props.duplicates] == ["ab"]


def test_no_duplicates_means_empty_list() -> None:
    assert parse_properties("a=1\nb=2\n").duplicates == []


# --- mapping and origins --------------------------------------------------------


def test_properties_file_is_a_read_only_mapping_in_file_order() -> None:
    props = parse_properties("z=1\na=2\nm=3\n", "o.properties")
    assert list(props) == ["z", "a", "m"]
    assert len(props) == 3
    assert "a" in props and "q" not in props
    assert props.get("q") is None
    with pytest.raises(KeyError):
        props["q"]
    assert props.source == "o.properties"


def test_origin_of_unknown_key_is_the_file_alone() -> None:
    props = parse_properties("a=1", "o.properties")
    assert props.origin("nope") == Origin("o.properties")
    assert str(props.origin("nope")) == "o.properties"
    assert str(props.origin("a")) == "o.properties:1"


def test_default_source_name() -> None:
    assert str(parse_properties("a=1").origin("a")) == "<string>:1"


def test_repr_lists_keys_but_hides_values() -> None:
    props = parse_properties("db.password=hunter2-hunter2\nuser=alice\n", "s.properties")
    text = repr(props)
    assert "hunter2-hunter2" not in text
    assert "alice" not in text
    assert "db.password" in text and "user" in text
    assert "s.properties" in text


# --- files ----------------------------------------------------------------------


def test_load_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "utf8.properties"
    path.write_bytes("name=café ☕\n# ünïcödé comment\ngreeting=こんにちは\n".encode())
    props = load_properties(path)
    assert dict(props) == {"name": "café ☕", "greeting": "こんにちは"}
    assert props.origin("greeting") == Origin(str(path), 3)


def test_load_latin1_file_falls_back(tmp_path: Path) -> None:
    path = tmp_path / "latin1.properties"
    data = "name=caf\u00e9\ncity=M\u00fcnchen\n".encode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    path.write_bytes(data)
    props = load_properties(path)
    assert dict(props) == {"name": "café", "city": "München"}
    assert props.origin("city").line == 2


def test_load_accepts_str_path_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "w.properties"
    path.write_text("a=1\r\nb=2\r\n", encoding="utf-8")
    props = load_properties(str(path))
    assert props.source == str(path)
    assert str(props.origin("b")) == f"{path}:2"


def test_load_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "missing.properties"
    with pytest.raises(ConfigError) as info:
        load_properties(path)
    message = str(info.value)
    assert message.startswith(f"{path}: cannot read")
    assert "No such file" in message


def test_load_unreadable_path_names_the_path(tmp_path: Path) -> None:
    # A directory cannot be read as a file, whoever runs the test (even root).
    with pytest.raises(ConfigError) as info:
        load_properties(tmp_path)
    assert str(info.value).startswith(f"{tmp_path}: cannot read")


def test_load_error_is_chained_from_os_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_properties(tmp_path / "nope")
    assert isinstance(info.value.__cause__, OSError)


def test_load_invalid_escape_names_the_real_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.properties"
    path.write_text("a=1\nb=\\u12G4\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}:2: invalid unicode escape"):
        load_properties(path)
