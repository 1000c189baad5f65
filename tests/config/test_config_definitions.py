"""Typed declarations: parse_value, the validators, ConfigDef and ConfigProblem."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectd import secrets
from connectd.config.definitions import (
    NO_DEFAULT,
    And,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigKey,
    ConfigProblem,
    HostPortList,
    Importance,
    ListenerList,
    NonEmptyString,
    OneOf,
    Range,
    RegexValid,
    TopicName,
    Type,
    ValidationContext,
    ValidList,
    Validator,
    display_value,
    parse_value,
)
from connectd.config.properties import Origin, parse_properties
from connectd.errors import ConfigError
from connectd.secrets import HIDDEN, Secret


@pytest.fixture(autouse=True)
def _forget_secrets():
    secrets.forget_all()
    yield
    secrets.forget_all()


# --- parse_value: BOOLEAN -------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("true", True), ("TRUE", True), ("True", True), ("tRuE", True), ("  true \t", True),
        ("false", False), ("FALSE", False), ("False", False), (" fAlSe ", False),
        (True, True), (False, False),
    ],
)
def test_boolean_good(raw, expected) -> None:
    assert parse_value(Type.BOOLEAN, raw) is expected


@pytest.mark.parametrize("raw", ["yes", "no", "1", "0", "", "t", "truee", "on", 1, 0])
def test_boolean_bad(raw) -> None:
    with pytest.raises(ValueError, match="^expected true or false$"):
        parse_value(Type.BOOLEAN, raw)


def test_none_is_none_for_every_type() -> None:
    for type_ in Type:
        assert parse_value(type_, None) is None


# --- parse_value: integers ------------------------------------------------------

_BOUNDS = {
    Type.SHORT: (-32768, 32767, "a 16-bit integer"),
    Type.INT: (-2147483648, 2147483647, "a 32-bit integer"),
    Type.LONG: (-9223372036854775808, 9223372036854775807, "a 64-bit integer"),
}


@pytest.mark.parametrize("type_", list(_BOUNDS))
def test_integer_exactly_at_the_limits(type_: Type) -> None:
    low, high, _ = _BOUNDS[type_]
    assert parse_value(type_, str(low)) == low
    assert parse_value(type_, str(high)) == high
    assert parse_value(type_, low) == low
    assert parse_value(type_, high) == high


@pytest.mark.parametrize("type_", list(_BOUNDS))
def test_integer_one_past_the_limits(type_: Type) -> None:
    low, high, words = _BOUNDS[type_]
    for value in (low - 1, high + 1, str(low - 1), str(high + 1)):
        with pytest.raises(ValueError) as info:
            parse_value(type_, value)
        assert str(info.value) == f"expected {words} (between {low} and {high})"


@pytest.mark.parametrize("type_", list(_BOUNDS))
@pytest.mark.parametrize("raw", ["abc", "", "  ", "1.5", "1e3", "0x10", "1_000", "12abc", "--1", "+-1", True, False])
def test_integer_not_a_number(type_: Type, raw) -> None:
    _, _, words = _BOUNDS[type_]
    with pytest.raises(ValueError) as info:
        parse_value(type_, raw)
    assert str(info.value) == f"expected {words}"


@pytest.mark.parametrize("raw, expected", [(" 42 ", 42), ("+7", 7), ("-7", -7), ("007", 7), ("0", 0)])
def test_integer_text_forms(raw: str, expected: int) -> None:
    assert parse_value(Type.INT, raw) == expected


@given(st.integers(min_value=-(2**64), max_value=2**64))
def test_int_accepts_exactly_its_range(value: int) -> None:
    inside = -(2**31) <= value <= 2**31 - 1
    if inside:
        assert parse_value(Type.INT, str(value)) == value
    else:
        with pytest.raises(ValueError, match="^expected a 32-bit integer"):
            parse_value(Type.INT, str(value))


# --- parse_value: DOUBLE --------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [("1.5", 1.5), (" -2.25 ", -2.25), ("3", 3.0), ("1e3", 1000.0), (".5", 0.5), (7, 7.0), (2.5, 2.5)],
)
def test_double_good(raw, expected: float) -> None:
    value = parse_value(Type.DOUBLE, raw)
    assert value == expected
    assert isinstance(value, float)


@pytest.mark.parametrize("raw", ["abc", "", "1,5", "1.2.3", True])
def test_double_bad(raw) -> None:
    with pytest.raises(ValueError, match="^expected a number$"):
        parse_value(Type.DOUBLE, raw)


# --- parse_value: LIST, STRING, CLASS -------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("a,b,c", ["a", "b", "c"]),
        (" a , b ,c ", ["a", "b", "c"]),
        ("single", ["single"]),
        ("", []),
        ("   ", []),
        ("a,,b", ["a", "", "b"]),  # Kafka keeps empty items
        (["x ", " y"], ["x", "y"]),
        (("p",), ["p"]),
        ([], []),
    ],
)
def test_list(raw, expected: list[str]) -> None:
    assert parse_value(Type.LIST, raw) == expected


def test_string_is_trimmed() -> None:
    assert parse_value(Type.STRING, "  value  ") == "value"
    assert parse_value(Type.STRING, "") == ""


def test_class_name_or_alias_or_type() -> None:
    assert parse_value(Type.CLASS, " org.example.Thing ") == "org.example.Thing"
    assert parse_value(Type.CLASS, "Alias") == "Alias"
    assert parse_value(Type.CLASS, dict) is dict


@pytest.mark.parametrize("raw", ["", "   "])
def test_class_empty_is_bad(raw: str) -> None:
    with pytest.raises(ValueError, match="^expected a class name or alias$"):
        parse_value(Type.CLASS, raw)


# --- parse_value: PASSWORD ------------------------------------------------------


def test_password_becomes_a_hidden_secret() -> None:
    value = parse_value(Type.PASSWORD, "p4ssw0rd-xyz")
    assert isinstance(value, Secret)
    assert value.value() == "p4ssw0rd-xyz"
    assert str(value) == HIDDEN
    assert repr(value) == HIDDEN
    assert format(value) == HIDDEN
    assert format(value, ">20") == HIDDEN
    assert f"{value}" == HIDDEN
    assert f"{value!r}" == HIDDEN
    assert f"{value!s}" == HIDDEN
    assert "%s" % value == HIDDEN
    assert "{}".format(value) == HIDDEN
    assert "p4ssw0rd" not in str([value]) and "p4ssw0rd" not in repr({"k": value})


def test_password_is_registered_for_redaction() -> None:
    parse_value(Type.PASSWORD, "p4ssw0rd-xyz")
    assert secrets.redact("login with p4ssw0rd-xyz now") == f"login with {HIDDEN} now"


def test_password_keeps_a_secret_as_is_and_compares_by_value() -> None:
    secret = Secret("abcd-1234")
    assert parse_value(Type.PASSWORD, secret) is secret
    assert Secret("abcd-1234") == secret
    assert Secret("other-1234") != secret
    assert hash(Secret("abcd-1234")) == hash(secret)


# --- validators -----------------------------------------------------------------


def _problem(validator, value) -> str:
    with pytest.raises(ValueError) as info:
        validator(value)
    return str(info.value)


def test_range_between() -> None:
    rng = Range.between(1, 10)
    for ok in (1, 5, 10, 1.0, None):
        rng(ok)
    assert _problem(rng, 0) == "expected a value in [1,...,10]"
    assert _problem(rng, 11) == "expected a value in [1,...,10]"
    assert _problem(rng, 10.5) == "expected a value in [1,...,10]"
    assert rng.describe() == "[1,...,10]"


def test_range_at_least() -> None:
    rng = Range.at_least(0)
    rng(0)
    rng(10**30)
    assert _problem(rng, -1) == "expected a value in [0,...]"
    assert rng.describe() == "[0,...]"


def test_range_at_most_and_fractional_bounds() -> None:
    assert Range(max=5).describe() == "[...,5]"
    Range(max=5)(5)
    assert _problem(Range(max=5), 6) == "expected a value in [...,5]"
    assert Range.between(0.5, 1.5).describe() == "[0.5,...,1.5]"
    assert Range.between(-1, 32767).describe() == "[-1,...,32767]"


def test_range_with_no_bounds_describes_itself() -> None:
    rng = Range()
    rng(123)  # accepts everything
    assert isinstance(rng.describe(), str)


def test_one_of_is_exact_case() -> None:
    one = OneOf("All", "None")
    one("All")
    one(None)
    assert _problem(one, "all") == "expected one of [All, None]"
    assert one.describe() == "[All, None]"


def test_case_insensitive_valid_string() -> None:
    valid = CaseInsensitiveValidString("PLAINTEXT", "SASL_SSL")
    for ok in ("PLAINTEXT", "plaintext", "Sasl_Ssl", None):
        valid(ok)
    assert _problem(valid, "SSL") == "expected one of [PLAINTEXT, SASL_SSL] (any case)"
    assert valid.describe() == "[PLAINTEXT, SASL_SSL]"


def test_valid_list_items() -> None:
    valid = ValidList("a", "b")
    valid(["a", "b", "a"])
    valid([])
    valid(None)
    assert _problem(valid, ["a", "c", "d"]) == "expected items from [a, b], got c, d"
    assert valid.describe() == "[a, b]"


def test_valid_list_not_empty() -> None:
    valid = ValidList("a", "b", allow_empty=False)
    valid(["b"])
    assert _problem(valid, []) == "expected a non-empty list"
    # Any items, but at least one.
    anything = ValidList(allow_empty=False)
    anything(["whatever"])
    assert _problem(anything, []) == "expected a non-empty list"
    assert anything.describe() == "non-empty list"
    assert ValidList().describe() == ""


@pytest.mark.parametrize("bad", ["", "   ", "\t\n"])
def test_non_empty_string(bad: str) -> None:
    NonEmptyString()("x")
    NonEmptyString()(None)
    assert _problem(NonEmptyString(), bad) == "expected a non-empty string"
    assert NonEmptyString().describe() == "non-empty string"


def test_regex_valid() -> None:
    RegexValid()("orders-.*")
    RegexValid()("")
    RegexValid()(None)
    assert _problem(RegexValid(), "(unclosed").startswith("expected a valid regular expression (")
    assert _problem(RegexValid(), "*bad").startswith("expected a valid regular expression (")
    assert RegexValid().describe() == "valid regex"


@pytest.mark.parametrize("name", ["a", "orders", "my.topic_v-2", "...", ".a", "_", "x" * 249, "A.B-C_D"])
def test_topic_name_good(name: str) -> None:
    TopicName()(name)


@pytest.mark.parametrize("name", [".", "..", "", "x" * 250, "has space", "slash/name", "colon:name", "ümlaut", "a,b"])
def test_topic_name_bad(name: str) -> None:
    assert _problem(TopicName(), name) == "expected a topic name of 1 to 249 characters from [a-zA-Z0-9._-]"


def test_topic_name_describe() -> None:
    assert TopicName().describe() == "topic name"
    TopicName()(None)


@pytest.mark.parametrize(
    "servers",
    [
        ["localhost:9092"],
        ["b-1.example.com:9092", "b-2.example.com:9094"],
        ["10.0.0.1:1"],
        ["[::1]:9092"],
        ["[2001:db8::7]:65535"],
        ["[::ffff:10.0.0.1]:9092"],
    ],
)
def test_host_port_list_good(servers: list[str]) -> None:
    HostPortList()(servers)


@pytest.mark.parametrize(
    "item",
    ["localhost", "localhost:", ":9092", "localhost:0", "localhost:65536", "localhost:99999", "localhost:port",
     "::1:9092", "http://h:1", "h:1:2", "a b:1", ""],
)
def test_host_port_list_bad(item: str) -> None:
    assert _problem(HostPortList(), ["ok:1", item]) == f"expected host:port entries, got {item!r}"


def test_host_port_list_empty_and_describe() -> None:
    assert _problem(HostPortList(), []) == "expected at least one host:port"
    HostPortList()(None)
    assert HostPortList().describe() == "host1:port1,host2:port2,..."


@pytest.mark.parametrize(
    "listeners",
    [
        ["http://:8083"],
        ["https://host:8443"],
        ["HTTP://0.0.0.0:8083", "https://[::1]:8443"],
        ["http://localhost:8083/"],
        ["http://:0"],
    ],
)
def test_listener_list_good(listeners: list[str]) -> None:
    ListenerList()(listeners)


@pytest.mark.parametrize(
    "item", ["ftp://host:21", "host:8083", "http://host", "http://host:65536", "http//host:1", "https://host:port", ""]
)
def test_listener_list_bad(item: str) -> None:
    assert _problem(ListenerList(), [item]) == (
        f"expected listeners like http://host:port or https://host:port, got {item!r}"
    )


def test_listener_list_empty() -> None:
    assert _problem(ListenerList(), []) == "expected at least one listener such as http://:8083"
    ListenerList()(None)


def test_and_runs_every_validator_in_order() -> None:
    both = And(NonEmptyString(), TopicName())
    both("orders")
    assert _problem(both, " ") == "expected a non-empty string"  # the first one fails first
    assert _problem(both, "bad name") == "expected a topic name of 1 to 249 characters from [a-zA-Z0-9._-]"
    assert both.describe() == "non-empty string, topic name"
    # Validators with nothing to say are left out of the description.
    assert And(ValidList(), Range.at_least(1)).describe() == "[1,...]"


# --- declarations ---------------------------------------------------------------


def _key(name: str = "k", type_: Type = Type.STRING, **kwargs) -> ConfigKey:
    return ConfigKey(name, type_, f"Documentation of {name}.", **kwargs)


def test_define_twice_is_an_error() -> None:
    definition = ConfigDef([_key("a")])
    with pytest.raises(ValueError, match="'a' declared twice"):
        definition.define(_key("a", Type.INT, default=1))
    with pytest.raises(ValueError, match="declared twice"):
        ConfigDef([_key("b"), _key("b")])


def test_merge_with_a_clash_is_an_error() -> None:
    with pytest.raises(ValueError, match="'a' declared twice"):
        ConfigDef([_key("a")]).merge(ConfigDef([_key("a")]))


def test_merge_keeps_keys_and_prefixes_and_leaves_originals_alone() -> None:
    left = ConfigDef([_key("a")], prefixes={"x.": "x"})
    right = ConfigDef([_key("b")], prefixes={"y.": "y"})
    merged = left.merge(right)
    assert merged.names() == ["a", "b"]
    assert set(merged.prefixes) == {"x.", "y."}
    assert left.names() == ["a"] and set(left.prefixes) == {"x."}
    assert right.names() == ["b"]


@pytest.mark.parametrize(
    "key",
    [
        _key("n", Type.INT, default="abc"),
        _key("n", Type.INT, default=2**31),
        _key("n", Type.INT, default=0, validator=Range.at_least(1)),
        _key("n", Type.BOOLEAN, default="maybe"),
        _key("n", Type.STRING, default="x", validator=OneOf("a", "b")),
        _key("n", Type.LIST, default="a,z", validator=ValidList("a", "b")),
    ],
)
def test_invalid_default_fails_at_define_time(key: ConfigKey) -> None:
    with pytest.raises(ValueError, match=r"^default of 'n' is invalid: expected"):
        ConfigDef().define(key)


def test_required_and_null_defaults_are_not_checked_at_define_time() -> None:
    definition = ConfigDef([
        _key("req", Type.INT, validator=Range.at_least(1)),
        _key("nul", Type.INT, default=None, validator=Range.at_least(1)),
    ])
    assert definition["req"].required and definition["req"].default is NO_DEFAULT
    assert not definition["nul"].required
    assert definition.defaults() == {"nul": None}


def test_key_defaults_and_their_text() -> None:
    assert _key(type_=Type.INT, default="5").default_value() == 5
    assert _key(type_=Type.LIST, default="a, b").default_value() == ["a", "b"]
    assert _key(type_=Type.INT).default_value() is None
    assert _key(type_=Type.BOOLEAN, default=True).default_text() == "true"
    assert _key(type_=Type.LIST, default=[]).default_text() == '""'
    assert _key(type_=Type.LIST, default=["a", "b"]).default_text() == "a,b"
    assert _key(default="").default_text() == '""'
    assert _key(default=None).default_text() == "null"
    assert _key().default_text() == ""
    assert _key(type_=Type.INT, default=300).default_text() == "300"


def test_def_lookup_api() -> None:
    definition = ConfigDef([_key("a"), _key("b")], prefixes={"p.": "anything"})
    assert len(definition) == 2
    assert "a" in definition and "z" not in definition
    assert definition.get("z") is None
    assert definition["b"].name == "b"
    assert [k.name for k in definition] == ["a", "b"]
    assert definition.is_known("a") and definition.is_known("p.x.y") and not definition.is_known("px")


# --- validate -------------------------------------------------------------------

_WORKER = ConfigDef(
    [
        ConfigKey("group.id", Type.STRING, "The cluster's group id. More words.", validator=NonEmptyString()),
        ConfigKey("bootstrap.servers", Type.LIST, "Brokers to connect to.", validator=HostPortList()),
        ConfigKey("session.timeout.ms", Type.INT, "Session timeout.", default=10000, validator=Range.at_least(1)),
        ConfigKey("heartbeat.interval.ms", Type.INT, "Heartbeat.", default=3000),
        ConfigKey("ssl.key.password", Type.PASSWORD, "Key password.", default=None),
        ConfigKey("key.converter", Type.CLASS, "Key converter.", default=None, plugin_kind="converter"),
        ConfigKey("enabled", Type.BOOLEAN, "On or off.", default=True),
    ],
    prefixes={"producer.": "Producer settings."},
)


def _check(text: str, context: ValidationContext | None = None) -> list[ConfigProblem]:
    props = parse_properties(text, "w.properties")
    return _WORKER.validate(props, props.origin, context)


def test_validate_reports_every_problem_at_once_with_origins() -> None:
    text = "\n".join(
        [
            "# worker",  # 1
            "bootstrap.servers=localhost",  # 2: no port
            "grup.id=typo",  # 3: unknown, close to group.id
            "producer.acks=all",  # 4: under a prefix: fine
            "enabled=maybe",  # 5: bad boolean
            "",  # 6
            "totally.unrelated=1",  # 7: unknown, nothing close
            "session.timeout.ms=abc",  # 8: bad int
        ]
    )
    problems = _check(text)
    required = problems[0]
    assert (required.origin, required.key, required.value) == (Origin("w.properties"), "group.id", None)
    assert required.message == "is required (the cluster's group id)"
    assert [str(p) for p in problems[1:]] == [
        "w.properties:2: bootstrap.servers='localhost': expected host:port entries, got 'localhost'",
        "w.properties:8: session.timeout.ms='abc': expected a 32-bit integer",
        "w.properties:5: enabled='maybe': expected true or false",
        "w.properties:3: warning: unknown key 'grup.id' (did you mean 'group.id'?)",
        "w.properties:7: warning: unknown key 'totally.unrelated'",
    ]
    assert [p.is_error for p in problems] == [True, True, True, True, False, False]
    assert required.origin.line is None  # a missing key has no line: the file alone


def test_validate_clean_config_has_no_problems() -> None:
    assert _check("group.id=g\nbootstrap.servers=a:1,b:2\nproducer.linger.ms=5\nproducer.anything.at.all=x\n") == []


def test_validate_required_missing_from_an_empty_file_still_names_the_file() -> None:
    problems = _check("")
    assert [(p.origin, p.key, p.message, p.is_error) for p in problems] == [
        (Origin("w.properties"), "group.id", "is required (the cluster's group id)", True),
        (Origin("w.properties"), "bootstrap.servers", "is required (brokers to connect to)", True),
    ]


def test_required_problem_reads_as_documented() -> None:
    problems = _check("bootstrap.servers=h:1\n")
    assert [str(p) for p in problems] == ["w.properties: group.id is required (the cluster's group id)"]


def test_validate_with_a_single_origin_or_none() -> None:
    values = {"group.id": "", "bootstrap.servers": "h:1"}
    problems = _WORKER.validate(values, Origin("rest"))
    assert [str(p) for p in problems] == ["rest: group.id='': expected a non-empty string"]
    problems = _WORKER.validate(values)
    assert [str(p) for p in problems] == ["group.id='': expected a non-empty string"]


def test_problem_str_format() -> None:
    assert str(ConfigProblem(Origin("w.properties", 8), "session.timeout.ms", "expected a 32-bit integer", "abc")) == (
        "w.properties:8: session.timeout.ms='abc': expected a 32-bit integer"
    )
    assert str(ConfigProblem(Origin("c.json", 2), "topics", "one of topics and topics.regex is required")) == (
        "c.json:2: topics: one of topics and topics.regex is required"
    )
    assert str(ConfigProblem(None, None, "plain")) == "plain"
    assert str(ConfigProblem(Origin("f", 3), None, "odd", severity="warning")) == "f:3: warning: odd"
    problem = ConfigProblem(None, "k", "m", "v", severity="warning", rule="r")
    assert not problem.is_error and problem.rule == "r"


def test_problem_from_a_real_file_at_line_8() -> None:
    text = "\n".join(["# 1", "# 2", "group.id=g", "bootstrap.servers=h:1", "", "# 6", "# 7", "session.timeout.ms=abc"])
    problems = _check(text)
    assert [str(p) for p in problems] == ["w.properties:8: session.timeout.ms='abc': expected a 32-bit integer"]


class _LongPassword(Validator):
    # Validators of PASSWORD keys receive the password itself, so they can check it.
    def __call__(self, value) -> None:
        assert isinstance(value, str)
        if len(value) < 12:
            raise ValueError("expected at least 12 characters")

    def describe(self) -> str:
        return "12 characters or more"


def test_password_value_is_hidden_in_problems() -> None:
    definition = ConfigDef([ConfigKey("pw", Type.PASSWORD, "A password.", validator=_LongPassword())])
    problems = definition.validate({"pw": "short-pw"}, Origin("f", 2))
    assert [str(p) for p in problems] == [f"f:2: pw={HIDDEN!r}: expected at least 12 characters"]
    assert problems[0].value == HIDDEN
    assert definition.validate({"pw": "long-enough-password"}, Origin("f", 2)) == []


def test_non_empty_password_rejects_blank() -> None:
    definition = ConfigDef([ConfigKey("pw", Type.PASSWORD, "A password.", validator=NonEmptyString())])
    problems = definition.validate({"pw": "   "}, Origin("f"))
    assert [p.message for p in problems] == ["expected a non-empty string"]


def test_password_secret_instance_is_hidden_in_problems() -> None:
    definition = ConfigDef([ConfigKey("n", Type.INT, "A number.")])
    problems = definition.validate({"n": Secret("not-a-number")}, Origin("f"))
    assert "not-a-number" not in str(problems[0])
    assert problems[0].value == HIDDEN


def test_display_value() -> None:
    pw = _WORKER["ssl.key.password"]
    assert display_value(pw, "hunter2") == HIDDEN
    assert display_value(pw, "${file:/s.properties:pw}") == "${file:/s.properties:pw}"
    assert display_value(_WORKER["group.id"], "g") == "g"
    assert display_value(None, "anything") == "anything"
    assert display_value(None, Secret("xyzw-secret")) == HIDDEN
    assert display_value(pw, None) is None


def test_placeholder_unchecked_without_a_resolver() -> None:
    # Without a resolver, a placeholder is not parsed: it is not a bad int.
    assert _check("group.id=g\nbootstrap.servers=h:1\nsession.timeout.ms=${env:TIMEOUT}\n") == []


def test_placeholder_shown_as_written_not_resolved() -> None:
    context = ValidationContext(resolve=lambda raw: "not-a-number-resolved")
    problems = _check("group.id=g\nbootstrap.servers=h:1\nsession.timeout.ms=${env:TIMEOUT}\n", context)
    assert [str(p) for p in problems] == [
        "w.properties:3: session.timeout.ms='${env:TIMEOUT}': expected a 32-bit integer"
    ]
    assert "not-a-number-resolved" not in str(problems[0])


def test_placeholder_that_resolves_to_a_good_value_is_fine() -> None:
    context = ValidationContext(resolve=lambda raw: "20000")
    assert _check("group.id=g\nbootstrap.servers=h:1\nsession.timeout.ms=${env:T}\n", context) == []


def test_placeholder_that_fails_to_resolve_is_reported() -> None:
    def resolve(raw: str) -> str:
        raise ConfigError(["${env:T}: provider 'env' has no value for 'T'"])

    problems = _check("group.id=g\nbootstrap.servers=h:1\nsession.timeout.ms=${env:T}\n", ValidationContext(resolve=resolve))
    assert [str(p) for p in problems] == [
        "w.properties:3: session.timeout.ms='${env:T}': ${env:T}: provider 'env' has no value for 'T'"
    ]


def test_password_placeholder_shown_as_written() -> None:
    def resolve(raw: str) -> str:
        raise ConfigError(["boom"])

    context = ValidationContext(resolve=resolve)
    problems = _check("group.id=g\nbootstrap.servers=h:1\nssl.key.password=${file:/s:pw}\n", context)
    assert [str(p) for p in problems] == ["w.properties:3: ssl.key.password='${file:/s:pw}': boom"]


def test_resolved_value_never_appears_in_a_problem() -> None:
    context = ValidationContext(resolve=lambda raw: "resolved-secret-host")
    problems = _check("group.id=g\nbootstrap.servers=${file:/s.properties:servers}\n", context)
    assert len(problems) == 1
    assert problems[0].value == "${file:/s.properties:servers}"
    assert "resolved-secret-host" not in str(problems[0])


def test_class_lookup_through_the_context() -> None:
    asked: list[tuple[str, str]] = []

    def has_class(kind: str, name: str) -> bool:
        asked.append((kind, name))
        return name == "JsonConverter"

    context = ValidationContext(has_class=has_class)
    assert _check("group.id=g\nbootstrap.servers=h:1\nkey.converter= JsonConverter \n", context) == []
    assert asked == [("converter", "JsonConverter")]
    problems = _check("group.id=g\nbootstrap.servers=h:1\nkey.converter=NoSuchConverter\n", context)
    assert [str(p) for p in problems] == [
        "w.properties:3: key.converter='NoSuchConverter': "
        "expected a converter class or alias; no such plugin is installed"
    ]
    # Without has_class nothing is looked up.
    assert _check("group.id=g\nbootstrap.servers=h:1\nkey.converter=NoSuchConverter\n") == []


def test_class_lookup_skipped_for_key_without_plugin_kind() -> None:
    definition = ConfigDef([ConfigKey("c", Type.CLASS, "Some class.")])
    context = ValidationContext(has_class=lambda kind, name: pytest.fail("looked up"))
    assert definition.validate({"c": "x.Y"}, None, context) == []


def test_explicit_null_value_for_nullable_key() -> None:
    assert _WORKER.validate({"group.id": "g", "bootstrap.servers": "h:1", "key.converter": None}) == []


def test_suggestion_only_for_close_names() -> None:
    problems = _check("group.id=g\nbootstrap.servers=h:1\nbootstrap.server=h:1\nxyz=1\n")
    assert [p.message for p in problems] == [
        "unknown key 'bootstrap.server' (did you mean 'bootstrap.servers'?)",
        "unknown key 'xyz'",
    ]
    assert all(p.severity == "warning" and p.key is None for p in problems)


def test_importance_enum_values() -> None:
    assert [i.value for i in Importance] == ["HIGH", "MEDIUM", "LOW"]
    assert Type("PASSWORD") is Type.PASSWORD


def test_parse_fills_defaults_and_names_every_bad_key():
    definition = ConfigDef([
        ConfigKey("size", Type.INT, "How many.", default=3, validator=Range.at_least(1)),
        ConfigKey("name", Type.STRING, "Who."),
        ConfigKey("secret", Type.PASSWORD, "Shh.", default=None),
    ])
    parsed = definition.parse({"name": "x", "secret": "s3"})
    assert parsed["size"] == 3 and parsed["name"] == "x" and parsed["secret"].value() == "s3"
    with pytest.raises(ConfigError) as raised:
        definition.parse({"size": "0"})
    assert [(p.key, p.message.split(" (")[0]) for p in raised.value.problems] == [
        ("size", "expected a value in [1,...]"), ("name", "is required")]
