"""TransformationChain: building from a connector config, validation, predicates, batches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Type
from connectd.config.properties import Origin
from connectd.data import DataError, Headers, SinkRecord, SourceRecord
from connectd.errors import ConfigError, PluginError
from connectd.transforms import BUILTIN_PREDICATES, BUILTIN_TRANSFORMS, Transformation, TransformationChain

GROUPS = {"transform": BUILTIN_TRANSFORMS, "predicate": BUILTIN_PREDICATES}


class _Counting(Transformation):
    """Appends its tag to the topic; counts closes."""

    config_def = ConfigDef([ConfigKey("tag", Type.STRING, "Text appended to the topic.", default="x")])
    closed = 0

    def setup(self, config):
        self.tag = config["tag"]

    def apply(self, record):
        return record.new_record(topic=record.topic + self.tag)

    def close(self):
        type(self).closed += 1


class _DuckTyped:
    """A plugin that only has configure() and apply(), raising ConfigError with plain strings."""

    def configure(self, configs):
        if "bad" in configs:
            raise ConfigError(["bad is not allowed here"])

    def apply(self, record):
        return record.new_record(key="duck")


class _NotATransform:
    pass


EXTRA = {"Counting": _Counting, "Duck": _DuckTyped, "NotATransform": _NotATransform}


def find(group, name):
    for cls, aliases in GROUPS[group]:
        if name in aliases or name == f"{cls.__module__}.{cls.__qualname__}":
            return cls
    if group == "transform" and name in EXTRA:
        return EXTRA[name]
    raise PluginError(f"no {group} named {name!r} is installed")


def chain(**config):
    return TransformationChain(config, find)


def record(topic="orders", value=None, headers=None, key=None):
    return SinkRecord(topic=topic, kafka_partition=0, kafka_offset=1, key=key, value=value, timestamp=1_700_000_000_000,
                      headers=headers or Headers())


# --- building -----------------------------------------------------------------------------


def test_empty_config_gives_an_empty_chain():
    empty = chain()
    assert len(empty) == 0 and empty.aliases == []
    original = record(value={"a": 1})
    assert empty.apply(original) is original
    assert empty.apply_batch([original]) == [original]


def test_transforms_run_in_order_and_are_found_by_any_name():
    built = chain(**{
        "transforms": "route, insert",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)s",
        "transforms.route.replacement": "$1",
        "transforms.insert.type": "InsertField$Value",
        "transforms.insert.topic.field": "topic",
    })
    assert built.aliases == ["route", "insert"]
    out = built.apply(record(value={"a": 1}))
    assert out.topic == "order" and out.value == {"a": 1, "topic": "order"}


def test_every_problem_is_reported_at_once_under_its_full_key():
    with pytest.raises(ConfigError) as caught:
        chain(**{
            "transforms": "a,b,a,c,d,e,f,g",
            "transforms.a.type": "RegexRouter",
            "transforms.a.regex": "(",
            "transforms.b.type": "NoSuchTransform",
            # c has no type
            "transforms.d.type": "Filter",
            "transforms.d.predicate": "undefined",
            "transforms.e.type": "Filter",
            "transforms.e.negate": "true",
            "transforms.f.type": "NotATransform",
            "transforms.g.type": "Filter",
            "transforms.g.predicate": "p",
            "transforms.g.negate": "perhaps",
            "predicates": "p,q,q",
            "predicates.p.type": "TopicNameMatches",
            "predicates.p.pattern": "[",
            "predicates.q.type": "Nope",
        })
    lines = str(caught.value).splitlines()
    assert lines == [
        "predicates='p,q,q': alias 'q' is listed twice",
        "transforms='a,b,a,c,d,e,f,g': alias 'a' is listed twice",
        "predicates.p.pattern='[': expected a valid regular expression "
        "(unterminated character set at position 0)",
        "predicates.q.type='Nope': no predicate named 'Nope' is installed",
        "transforms.a.regex='(': expected a valid regular expression (missing ), unterminated subpattern at position 0)",
        "transforms.a.replacement is required (the new topic name: the replacement for the first match of regex, "
        "where $1, $2, … and ${name} stand for groups of the match and \\ makes the next character literal)",
        "transforms.b.type='NoSuchTransform': no transform named 'NoSuchTransform' is installed",
        "transforms.c.type is required (the class of transform 'c')",
        "transforms.d.predicate='undefined': expected the alias of a predicate listed in predicates (listed: p, q)",
        "transforms.e.negate='true': is only valid with transforms.e.predicate, which is not set",
        f"transforms.f.type='NotATransform': expected a transform class (with configure() and apply()), "
        f"got {__name__}._NotATransform",
        "transforms.g.negate='perhaps': expected true or false",
    ]
    assert all(isinstance(problem, ConfigProblem) and problem.is_error for problem in caught.value.problems)


def test_plain_string_problems_of_a_plugin_are_keyed_by_its_prefix():
    with pytest.raises(ConfigError) as caught:
        chain(transforms="duck", **{"transforms.duck.type": "Duck", "transforms.duck.bad": "1"})
    assert str(caught.value) == "transforms.duck: bad is not allowed here"


def test_problems_carry_origins():
    lines = {"transforms.r.type": 3, "transforms.r.regex": 4}
    with pytest.raises(ConfigError) as caught:
        TransformationChain(
            {"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "("},
            find,
            origin=lambda key: Origin("connector.properties", lines[key]) if key in lines else None,
        )
    assert str(caught.value.problems[0]).startswith("connector.properties:4: transforms.r.regex='('")


def test_warnings_for_unknown_and_unlisted_keys():
    built = chain(**{
        "transforms": "f",
        "transforms.f.type": "Flatten$Value",
        "transforms.f.delimitr": "_",
        "transforms.old.type": "Filter",
        "predicates.unused.type": "RecordIsTombstone",
    })
    assert [str(w) for w in built.warnings] == [
        "warning: unknown key 'transforms.f.delimitr' (did you mean 'transforms.f.delimiter'?)",
        "warning: transforms.old.type is ignored: 'old' is not listed in transforms",
        "warning: predicates.unused.type is ignored: 'unused' is not listed in predicates",
    ]


def test_settings_are_passed_without_the_prefix_and_reserved_keys():
    built = chain(**{"transforms": "c", "transforms.c.type": "Counting", "transforms.c.tag": "!"})
    assert built.apply(record()).topic == "orders!"
    assert built.warnings == []


def test_class_objects_are_accepted_as_type():
    built = TransformationChain({"transforms": "c", "transforms.c.type": _Counting}, find)
    assert built.apply(record()).topic == "ordersx"


# --- predicates -----------------------------------------------------------------------

CONDITIONAL = {
    "transforms": "dropTombstones,markEu,markOthers",
    "transforms.dropTombstones.type": "Filter",
    "transforms.dropTombstones.predicate": "isTombstone",
    "transforms.markEu.type": "InsertHeader",
    "transforms.markEu.header": "region",
    "transforms.markEu.value.literal": "eu",
    "transforms.markEu.predicate": "euTopic",
    "transforms.markOthers.type": "InsertHeader",
    "transforms.markOthers.header": "region",
    "transforms.markOthers.value.literal": "other",
    "transforms.markOthers.predicate": "euTopic",
    "transforms.markOthers.negate": "true",
    "predicates": "isTombstone,euTopic",
    "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
    "predicates.euTopic.type": "TopicNameMatches",
    "predicates.euTopic.pattern": "eu-.*",
}


def test_predicates_and_negate():
    built = chain(**CONDITIONAL)
    assert built.apply(record(value=None)) is None
    eu = built.apply(record(topic="eu-orders", value=1))
    other = built.apply(record(topic="us-orders", value=1))
    assert [h.value for h in eu.headers] == ["eu"]
    assert [h.value for h in other.headers] == ["other"]


def test_each_transform_gets_its_own_predicate_instance():
    built = chain(**CONDITIONAL)
    mark_eu, mark_others = built.stages[1], built.stages[2]
    assert mark_eu.predicate is not mark_others.predicate
    assert type(mark_eu.predicate) is type(mark_others.predicate)
    assert (mark_eu.negate, mark_others.negate) == (False, True)


def test_negate_false_with_predicate_and_filter_keeping_only_matches():
    built = chain(**{
        "transforms": "keepEu",
        "transforms.keepEu.type": "Filter",
        "transforms.keepEu.predicate": "euTopic",
        "transforms.keepEu.negate": "true",
        "predicates": "euTopic",
        "predicates.euTopic.type": "TopicNameMatches",
        "predicates.euTopic.pattern": "eu-.*",
    })
    records = [record(topic="eu-a"), record(topic="us-a"), record(topic="eu-b")]
    assert [r.topic for r in built.apply_batch(records)] == ["eu-a", "eu-b"]


# --- running --------------------------------------------------------------------------


def test_dropped_records_stop_going_down_the_chain():
    _Counting.closed = 0
    built = chain(**{"transforms": "drop,count", "transforms.drop.type": "Filter", "transforms.count.type": "Counting"})
    assert built.apply(record()) is None
    assert built.apply_batch([record(), record()]) == []


def test_errors_say_which_transform_failed():
    built = chain(**{"transforms": "extract", "transforms.extract.type": "ExtractField$Value", "transforms.extract.field": "a"})
    with pytest.raises(DataError) as caught:
        built.apply(record(value="not a map"))
    assert "in transform 'extract' (ExtractFieldValue)" in caught.value.__notes__
    with pytest.raises(DataError):
        built.apply_batch([record(value="not a map")])


def test_duck_typed_plugins_without_apply_batch():
    built = chain(transforms="duck", **{"transforms.duck.type": "Duck"})
    assert [r.key for r in built.apply_batch([record(), record()])] == ["duck", "duck"]


def test_close_closes_everything_once():
    _Counting.closed = 0
    built = chain(**{"transforms": "a,b", "transforms.a.type": "Counting", "transforms.b.type": "Counting"})
    built.close()
    built.close()
    assert _Counting.closed == 2


def test_transforms_are_closed_when_the_config_is_rejected():
    _Counting.closed = 0
    with pytest.raises(ConfigError):
        chain(**{"transforms": "a,b", "transforms.a.type": "Counting", "transforms.b.type": "Nope"})
    assert _Counting.closed == 1


# --- batch form equals per-record form ----------------------------------------------------

BATCH_CONFIG = {
    "transforms": "dropTombstones,route,cast,mark,dropUs,hoist",
    "transforms.dropTombstones.type": "Filter",
    "transforms.dropTombstones.predicate": "isTombstone",
    "transforms.route.type": "RegexRouter",
    "transforms.route.regex": "(eu|us)-(.*)",
    "transforms.route.replacement": "$2.$1",
    "transforms.cast.type": "Cast$Value",
    "transforms.cast.spec": "n:string",
    "transforms.cast.predicate": "hasTrace",
    "transforms.cast.negate": "true",
    "transforms.mark.type": "InsertHeader",
    "transforms.mark.header": "seen",
    "transforms.mark.value.literal": "yes",
    "transforms.mark.predicate": "hasTrace",
    "transforms.dropUs.type": "Filter",
    "transforms.dropUs.predicate": "usTopic",
    "transforms.hoist.type": "HoistField$Key",
    "transforms.hoist.field": "k",
    "predicates": "isTombstone,hasTrace,usTopic",
    "predicates.isTombstone.type": "RecordIsTombstone",
    "predicates.hasTrace.type": "HasHeaderKey",
    "predicates.hasTrace.name": "trace",
    "predicates.usTopic.type": "TopicNameMatches",
    "predicates.usTopic.pattern": ".*\\.us",
}

records_strategy = st.lists(
    st.builds(
        lambda topic, n, tombstone, trace, key: record(
            topic=topic,
            key=key,
            value=None if tombstone else {"n": n},
            headers=Headers().add("trace", "1") if trace else Headers(),
        ),
        st.sampled_from(["eu-orders", "us-orders", "orders", "eu-"]),
        st.integers(-1000, 1000),
        st.booleans(),
        st.booleans(),
        st.one_of(st.none(), st.text(max_size=3)),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(records_strategy)
def test_batch_form_equals_per_record_form(records):
    built = chain(**BATCH_CONFIG)
    per_record = [out for out in map(built.apply, records) if out is not None]
    assert built.apply_batch(records) == per_record


@settings(max_examples=50, deadline=None)
@given(records_strategy)
def test_transform_apply_batch_equals_apply(records):
    cls = find("transform", "InsertField$Value")
    transform = cls()
    transform.configure({"topic.field": "t", "timestamp.field": "ts"})
    assert transform.apply_batch(records) == [out for out in map(transform.apply, records) if out is not None]


def test_records_keep_their_kind_and_sink_offsets():
    built = chain(**BATCH_CONFIG)
    out = built.apply(record(topic="eu-orders", value={"n": 1}))
    assert isinstance(out, SinkRecord)
    assert out.topic == "orders.eu" and out.original_topic == "eu-orders" and out.kafka_offset == 1
    assert out.value == {"n": "1"} and out.key == {"k": None}
    source = SourceRecord(topic="eu-x", value={"n": 2}, value_schema=None, source_partition={"p": 1}, source_offset={"o": 2})
    moved = built.apply(source)
    assert isinstance(moved, SourceRecord) and moved.source_offset == {"o": 2}
