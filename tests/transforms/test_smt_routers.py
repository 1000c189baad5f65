"""RegexRouter, TimestampRouter, and Java regex / replacement / date-format translation."""

from __future__ import annotations

import datetime
import re

import pytest

from connectd.data import DataError, SinkRecord, SourceRecord
from connectd.errors import ConfigError
from connectd.transforms import RegexRouter, TimestampRouter
from connectd.transforms._dateformat import JavaDateFormat
from connectd.transforms._regex import JavaReplacement, compile_java

from ._support import configured

UTC = datetime.timezone.utc


def record(topic, timestamp=None):
    return SinkRecord(topic=topic, kafka_partition=0, kafka_offset=5, timestamp=timestamp, value="v")


# --- RegexRouter ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "regex, replacement, topic, expected",
    [
        ("(.*)-raw", "$1-clean", "orders-raw", "orders-clean"),
        ("(.*)-raw", "$1-clean", "orders-raw-x", "orders-raw-x"),  # the whole topic must match
        (r"(?<db>\w+)\.(?<table>\w+)", "${table}_from_${db}", "shop.orders", "orders_from_shop"),
        ("(a)(b)?", "[$1$2]", "a", "[a]"),  # a group that did not take part adds nothing
        ("prefix-(.*)", r"\$1-$1", "prefix-x", "$1-x"),  # \$ is a literal dollar
        ("(.*)", "all", "anything", "all"),
        ("a|ab", "X", "ab", "Xb"),  # matches as a whole, then the first match is replaced, as in Java
        (r"\Qa.b\E(.*)", "$1", "a.bc", "c"),
    ],
)
def test_regex_router(regex, replacement, topic, expected):
    out = configured(RegexRouter, regex=regex, replacement=replacement).apply(record(topic))
    assert out.topic == expected
    assert out.kafka_offset == 5 and out.original_topic == topic


def test_unmatched_record_is_returned_as_is():
    original = record("other")
    assert configured(RegexRouter, regex="x(.*)", replacement="$1").apply(original) is original


def test_regex_router_config_problems():
    with pytest.raises(ConfigError) as caught:
        configured(RegexRouter, regex="(unclosed")
    assert str(caught.value).splitlines() == [
        "regex='(unclosed': expected a valid regular expression (missing ), unterminated subpattern at position 0)",
        "replacement is required (the new topic name: the replacement for the first match of regex, where $1, $2, "
        "… and ${name} stand for groups of the match and \\ makes the next character literal)",
    ]


@pytest.mark.parametrize(
    "replacement, message",
    [
        ("$2", "has no group 2 (it has 1)"),
        ("${name}", "has no group named 'name'"),
        ("cost$", "after the final '$'"),
        ("$x", "expected a group number or ${name} after '$' at position 0"),
        ("end\\", "expected a character after the final '\\'"),
    ],
)
def test_bad_replacements_are_config_problems(replacement, message):
    with pytest.raises(ConfigError) as caught:
        configured(RegexRouter, regex="(.*)", replacement=replacement)
    assert str(caught.value).startswith(f"replacement={replacement!r}: expected")
    assert message in str(caught.value)


def test_java_group_numbers_take_as_many_digits_as_there_are_groups():
    pattern = compile_java("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)")
    assert pattern.sub(JavaReplacement("$11|$10|$1", pattern), "abcdefghijk") == "k|j|a"
    single = compile_java("(a)")
    assert single.sub(JavaReplacement("$10", single), "a") == "a0"


@pytest.mark.parametrize(
    "java, python",
    [
        ("(?<name>x)\\k<name>", "(?P<name>x)(?P=name)"),
        ("(?<=a)b(?<!c)", "(?<=a)b(?<!c)"),
        ("a\\z", "a\\Z"),
        ("[]a]", "[\\]a]"),
        ("[(?<x>)]", "[(?<x>)]"),
    ],
)
def test_java_regex_translation(java, python):
    assert compile_java(java).pattern == python


# --- TimestampRouter --------------------------------------------------------------------

MAY_7 = int(datetime.datetime(2024, 5, 7, 13, 5, 9, 42000, tzinfo=UTC).timestamp() * 1000)


def test_timestamp_router_defaults():
    out = configured(TimestampRouter).apply(record("orders", MAY_7))
    assert out.topic == "orders-20240507"


@pytest.mark.parametrize(
    "topic_format, timestamp_format, expected",
    [
        ("${topic}_${timestamp}", "yyyy-MM", "orders_2024-05"),
        ("${timestamp}.${topic}.${topic}", "yyyyMMddHHmmssSSS", "20240507130509042.orders.orders"),
        ("archive", "yyyy", "archive"),
        ("${topic}-${timestamp}", "yy-'w'D", "orders-24-w128"),
        ("${topic}-${timestamp}", "MMM-EEE-a", "orders-May-Tue-PM"),
    ],
)
def test_timestamp_router_formats(topic_format, timestamp_format, expected):
    transform = configured(TimestampRouter, **{"topic.format": topic_format, "timestamp.format": timestamp_format})
    assert transform.apply(record("orders", MAY_7)).topic == expected


def test_timestamp_router_needs_a_timestamp():
    with pytest.raises(DataError, match="Timestamp missing on record"):
        configured(TimestampRouter).apply(SourceRecord(topic="t", value=1))


def test_timestamp_router_bad_pattern():
    with pytest.raises(ConfigError, match=r"timestamp.format='yyyy-bb': expected a SimpleDateFormat pattern, but 'b'"):
        configured(TimestampRouter, **{"timestamp.format": "yyyy-bb"})


# --- SimpleDateFormat -------------------------------------------------------------------

MOMENT = datetime.datetime(2024, 5, 7, 13, 5, 9, 42000, tzinfo=UTC)


@pytest.mark.parametrize(
    "pattern, text",
    [
        ("yyyy-MM-dd", "2024-05-07"),
        ("yyyyMMdd", "20240507"),
        ("yy/M/d", "24/5/7"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2024-05-07T13:05:09.042+0000"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-05-07T13:05:09.042Z"),
        ("EEEE, MMMM d, yyyy h:mm a z", "Tuesday, May 7, 2024 1:05 PM UTC"),
        ("EEE MMM dd HH:mm:ss zzz yyyy", "Tue May 07 13:05:09 UTC 2024"),
        ("HH 'o''clock' ''", "13 o'clock '"),
        ("S SS SSSS", "42 42 0042"),
        ("k K h H", "13 1 1 13"),
        ("D u F G", "128 2 1 AD"),
    ],
)
def test_date_format_writes_like_java(pattern, text):
    assert JavaDateFormat(pattern).format(MOMENT) == text


@pytest.mark.parametrize(
    "pattern, text, expected",
    [
        ("yyyy-MM-dd", "2024-05-07", datetime.datetime(2024, 5, 7, tzinfo=UTC)),
        ("yyyy-MM-dd", "2024-5-7", datetime.datetime(2024, 5, 7, tzinfo=UTC)),
        ("yyyy-MM-dd", "2024-05-07T10:00:00Z", datetime.datetime(2024, 5, 7, tzinfo=UTC)),  # the rest is ignored
        ("yyyyMMddHHmm", "202405071305", datetime.datetime(2024, 5, 7, 13, 5, tzinfo=UTC)),
        ("yyyy-MM-dd HH:mm:ss.SSS Z", "2024-05-07 15:05:09.042 +0200", MOMENT),
        ("yyyy-MM-dd HH:mm:ss.SSSXXX", "2024-05-07 08:05:09.042-05:00", MOMENT),
        ("dd MMM yyyy hh:mm a", "07 may 2024 01:05 pm", datetime.datetime(2024, 5, 7, 13, 5, tzinfo=UTC)),
        ("dd MMMM yyyy", "07 September 2024", datetime.datetime(2024, 9, 7, tzinfo=UTC)),
        ("HH:mm", "13:05", datetime.datetime(1970, 1, 1, 13, 5, tzinfo=UTC)),
        ("yyyy DDD", "2024 128", datetime.datetime(2024, 5, 7, tzinfo=UTC)),
    ],
)
def test_date_format_reads_like_java(pattern, text, expected):
    assert JavaDateFormat(pattern).parse(text) == expected


def test_two_digit_years_land_in_the_century_window():
    this_year = datetime.datetime.now(UTC).year
    parsed = JavaDateFormat("yy").parse(f"{(this_year + 1) % 100:02d}").year
    assert parsed == this_year + 1
    parsed = JavaDateFormat("yy").parse(f"{(this_year - 79) % 100:02d}").year
    assert parsed == this_year - 79


@pytest.mark.parametrize("text", ["2024-13-01", "2024-02-30", "yesterday", ""])
def test_date_format_rejects(text):
    with pytest.raises(ValueError):
        JavaDateFormat("yyyy-MM-dd").parse(text)


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("yyyy-MM-dd'T", "quote at position 10 is not closed"),
        ("YYYY", "week-based"),
        ("ww", "week-based"),
        ("XXXX", "X, XX or XXX"),
        ("yyyy-MM-dd T", "'T' is not a pattern letter"),
    ],
)
def test_bad_patterns(pattern, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        JavaDateFormat(pattern)


def test_routes_are_remembered_per_topic_and_still_right():
    router = configured(RegexRouter, regex="(.*)-raw", replacement="$1-clean")
    for topic in ["a-raw", "b", "a-raw", "c-raw-x", "b", "x-raw"] * 2:
        out = router.apply(record(topic))
        direct = re.fullmatch("(.*)-raw", topic)
        assert out.topic == (topic[:-4] + "-clean" if direct else topic)
    untouched = record("b")
    assert router.apply(untouched) is untouched


def test_a_replaced_regex_or_replacement_is_used_at_once():
    router = configured(RegexRouter, regex="(.*)-raw", replacement="$1-clean")
    assert router.apply(record("a-raw")).topic == "a-clean"
    router.replacement = JavaReplacement("$1-new", router.regex)
    assert router.apply(record("a-raw")).topic == "a-new"
    router.regex = compile_java("a-(.*)")
    router.replacement = JavaReplacement("$1", router.regex)
    assert router.apply(record("a-raw")).topic == "raw"
    router.configure({"regex": "(.*)", "replacement": "x"})
    assert router.apply(record("a-raw")).topic == "x"


def test_many_topics_keep_working_past_the_memo_size():
    router = configured(RegexRouter, regex="t(\\d+)", replacement="u$1")
    for n in range(2500):
        assert router.apply(record(f"t{n}")).topic == f"u{n}"


def test_a_topic_that_is_not_a_string_fails_as_before():
    router = configured(RegexRouter, regex="(.*)", replacement="x")
    with pytest.raises(TypeError, match="expected string or bytes-like object"):
        router.apply(SinkRecord(topic=5, kafka_partition=0, kafka_offset=0))  # type: ignore[arg-type]


def test_a_subclass_that_sets_its_own_regex_is_routed_without_the_memo():
    class Fixed(RegexRouter):
        def setup(self, config):
            self.regex = compile_java("(.*)-in")
            self.replacement = JavaReplacement("$1-out", self.regex)

    router = configured(Fixed, regex="x", replacement="y")
    assert router.apply(record("a-in")).topic == "a-out"
    assert RegexRouter._routes == {}
