"""Registration lists, declared settings and their documentation, the shared base classes."""

from __future__ import annotations

import pickle

import pytest

from connectd.config.definitions import ConfigDef, ConfigKey, Type
from connectd.data import DataError, Schema, SchemaBuilder, SinkRecord, SourceRecord, Struct
from connectd.errors import ConfigError, PluginError
from connectd.plugins import PluginInfo, Registry
from connectd.transforms import (
    BUILTIN_PREDICATES,
    BUILTIN_TRANSFORMS,
    Predicate,
    SchemaUpdateCache,
    Transformation,
    TransformationChain,
)
from connectd.transforms.base import (
    KeySide,
    ValueSide,
    copy_schema_basics,
    parse_config,
    require_map,
    require_schema,
    require_sink_record,
    require_struct,
)

KAFKA_TRANSFORMS = {
    "Cast$Key", "Cast$Value", "DropHeaders", "ExtractField$Key", "ExtractField$Value", "Filter",
    "Flatten$Key", "Flatten$Value", "HeaderFrom$Key", "HeaderFrom$Value", "HoistField$Key", "HoistField$Value",
    "InsertField$Key", "InsertField$Value", "InsertHeader", "MaskField$Key", "MaskField$Value", "RegexRouter",
    "ReplaceField$Key", "ReplaceField$Value", "SetSchemaMetadata$Key", "SetSchemaMetadata$Value",
    "TimestampConverter$Key", "TimestampConverter$Value", "TimestampRouter", "ValueToKey",
}
KAFKA_PREDICATES = {"HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"}


def test_every_kafka_transform_is_registered_under_its_short_and_java_names():
    assert {aliases[0] for _, aliases in BUILTIN_TRANSFORMS} == KAFKA_TRANSFORMS
    for cls, (short, java) in BUILTIN_TRANSFORMS:
        assert java == f"org.apache.kafka.connect.transforms.{short}"
        assert issubclass(cls, Transformation)
        if short.endswith("$Key"):
            assert issubclass(cls, KeySide) and cls.side == "key"
        elif short.endswith("$Value"):
            assert issubclass(cls, ValueSide) and cls.side == "value"


def test_every_kafka_predicate_is_registered():
    assert {aliases[0] for _, aliases in BUILTIN_PREDICATES} == KAFKA_PREDICATES
    for cls, (short, java) in BUILTIN_PREDICATES:
        assert java == f"org.apache.kafka.connect.transforms.predicates.{short}"
        assert issubclass(cls, Predicate)


@pytest.mark.parametrize("group, entries", [("transform", BUILTIN_TRANSFORMS), ("predicate", BUILTIN_PREDICATES)])
def test_the_lists_register_without_clashes_and_are_found_by_every_name(group, entries):
    registry = Registry()
    for cls, aliases in entries:
        registry.add(PluginInfo(cls=cls, group=group, aliases=aliases, package="connectd", version="0"))
    for cls, aliases in entries:
        for name in (*aliases, f"{cls.__module__}.{cls.__qualname__}"):
            assert registry.find_class(group, name) is cls
    with pytest.raises(PluginError):
        registry.find_class(group, "InsertField")


def test_the_registry_works_as_the_chains_finder():
    registry = Registry()
    for group, entries in (("transform", BUILTIN_TRANSFORMS), ("predicate", BUILTIN_PREDICATES)):
        for cls, aliases in entries:
            registry.add(PluginInfo(cls=cls, group=group, aliases=aliases, package="connectd", version="0"))
    chain = TransformationChain({
        "transforms": "drop",
        "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.drop.predicate": "tomb",
        "predicates": "tomb",
        "predicates.tomb.type": "RecordIsTombstone",
    }, registry.find_class)
    assert chain.apply(SourceRecord(topic="t", value=None)) is None
    with pytest.raises(ConfigError, match=r"transforms.x.type='InsertFeld\$Value': no transform named 'InsertFeld\$Value' is installed; did you mean InsertField\$Value"):
        TransformationChain({"transforms": "x", "transforms.x.type": "InsertFeld$Value"}, registry.find_class)


def _all_classes():
    return [cls for cls, _ in BUILTIN_TRANSFORMS + BUILTIN_PREDICATES]


@pytest.mark.parametrize("cls", _all_classes(), ids=lambda cls: cls.__name__)
def test_every_setting_is_documented_in_sentences(cls):
    for key in cls.config_def:
        text = key.documentation.strip()
        assert text and text[0].isupper() and text.endswith("."), (cls.__name__, key.name, text)
        assert len(text.split()) >= 3, (cls.__name__, key.name)
    assert cls.__doc__ and cls.__doc__.strip()


@pytest.mark.parametrize(
    "cls_name, key, default",
    [
        ("TimestampRouter", "topic.format", "${topic}-${timestamp}"),
        ("TimestampRouter", "timestamp.format", "yyyyMMdd"),
        ("Flatten$Value", "delimiter", "."),
        ("TimestampConverter$Value", "unix.precision", "milliseconds"),
        ("TimestampConverter$Value", "field", ""),
        ("ExtractField$Value", "field.syntax.version", "V1"),
        ("InsertField$Value", "topic.field", None),
        ("ReplaceField$Value", "replace.null.with.default", True),
    ],
)
def test_kafka_defaults(cls_name, key, default):
    cls = next(cls for cls, aliases in BUILTIN_TRANSFORMS if aliases[0] == cls_name)
    assert cls.config_def[key].default == default


@pytest.mark.parametrize("cls", _all_classes(), ids=lambda cls: cls.__name__)
def test_configured_instances_pickle(cls):
    # Spark ships transforms to its executors.
    minimal = {
        "spec": "a:int8", "headers": "h", "field": "f", "fields": "f", "operation": "copy", "header": "h",
        "value.literal": "1", "regex": "(.*)", "replacement": "$1", "schema.name": "n", "target.type": "unix",
        "topic.field": "t", "name": "n", "pattern": ".*",
    }
    instance = cls()
    instance.configure({key.name: minimal[key.name] for key in cls.config_def if key.name in minimal})
    copy = pickle.loads(pickle.dumps(instance))
    assert type(copy) is cls


# --- base -----------------------------------------------------------------------------


def test_parse_config_fills_defaults_and_collects_everything():
    definition = ConfigDef([
        ConfigKey("a", Type.INT, "An int."),
        ConfigKey("b", Type.BOOLEAN, "A flag.", default=False),
        ConfigKey("c", Type.LIST, "A list.", default=""),
    ])
    values, warnings = parse_config(definition, {"a": "3", "extra": 1})
    assert values == {"a": 3, "b": False, "c": []}
    assert [str(w) for w in warnings] == ["warning: unknown key 'extra'"]
    seen = {}

    def check(config):
        seen.update(config)
        return []

    with pytest.raises(ConfigError) as caught:
        parse_config(definition, {"b": "no"}, check)
    assert str(caught.value).splitlines() == ["a is required (an int)", "b='no': expected true or false"]
    assert seen == {"c": []}  # the cross-key check sees only the keys that are right


def test_configure_keeps_warnings_and_calls_setup():
    class Echo(Transformation):
        config_def = ConfigDef([ConfigKey("x", Type.INT, "A number.", default=1)])

        def setup(self, config):
            self.x = config["x"]

        def apply(self, record):
            return record

    echo = Echo()
    echo.configure({"x": 5, "y": 1})
    assert echo.x == 5 and len(echo.config_warnings) == 1
    assert echo.apply_batch([1, 2]) == [1, 2]
    assert isinstance(echo.version(), str)


def test_schema_update_cache_keeps_the_most_recent():
    cache = SchemaUpdateCache(size=2)
    schemas = [SchemaBuilder.struct().field(f"f{i}", Schema.INT32).build() for i in range(3)]
    built = []
    for schema in schemas + schemas[2:]:
        cache.get(schema, lambda s: built.append(s) or s)
    assert len(cache) == 2 and built == schemas
    cache.get(schemas[0], lambda s: built.append(s) or s)
    assert built[-1] is schemas[0]


def test_requirements_messages():
    with pytest.raises(DataError, match=r"^Schema required for \[p\]$"):
        require_schema(None, "p")
    with pytest.raises(DataError, match=r"^Only Map objects supported in absence of schema for \[p\], found: null$"):
        require_map(None, "p")
    with pytest.raises(DataError, match=r"^Only Struct objects supported for \[p\], found: dict$"):
        require_struct({}, "p")
    with pytest.raises(DataError, match=r"^Only SinkRecord supported for \[p\], found: SourceRecord$"):
        require_sink_record(SourceRecord(topic="t"), "p")
    sink = SinkRecord(topic="t", kafka_offset=0)
    assert require_sink_record(sink, "p") is sink
    struct = Struct(SchemaBuilder.struct().field("a", Schema.INT32).build(), {"a": 1})
    assert require_struct(struct, "p") is struct


def test_copy_schema_basics():
    source = (SchemaBuilder.array(Schema.STRING).name("n").version(2).doc("d").parameter("k", "v").optional().build())
    copy = copy_schema_basics(source).build()
    assert (copy.name, copy.version, copy.doc, dict(copy.parameters)) == ("n", 2, "d", {"k": "v"})
    assert copy.value_schema == Schema.STRING and not copy.optional


def test_key_or_value_bases_cannot_be_used_directly():
    from connectd.transforms import Cast, InsertField

    with pytest.raises(TypeError, match=r"use InsertField.Key or InsertField.Value"):
        InsertField()
    assert Cast.Key().side == "key" and Cast.Value().side == "value"
