"""What every single message transform (SMT) and predicate is built on.

A :class:`Transformation` turns one record into another (or ``None`` to drop
it); a :class:`Predicate` tells whether a transform applies to a record. Both
declare their settings in a :class:`~connectd.config.definitions.ConfigDef`,
and :meth:`Transformation.configure` checks a whole configuration at once: a
:class:`~connectd.errors.ConfigError` lists every bad key with what was
expected, not only the first.

Transforms that work on the key or on the value of a record come in two
classes, ``…Key`` and ``…Value`` (Kafka's ``InsertField$Key`` and
``InsertField$Value``), built from the shared logic and :class:`KeySide` or
:class:`ValueSide`.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar

from connectd.config.definitions import ConfigDef, ConfigKey, ConfigProblem, Importance, Type, Validator
from connectd.data import DataError, Schema, SchemaBuilder, SinkRecord, Struct
from connectd.data.logical import LOGICAL_NAMES
from connectd.errors import ConfigError

if TYPE_CHECKING:
    from connectd.data import ConnectRecord, Headers

__all__ = [
    "KeyOrValue",
    "KeySide",
    "NonEmptyList",
    "Predicate",
    "SchemaUpdateCache",
    "Transformation",
    "ValueSide",
    "build_with_default",
    "copy_schema_basics",
    "is_logical",
    "parse_config",
    "replace_null_key",
    "require_map",
    "require_map_or_null",
    "require_schema",
    "require_sink_record",
    "require_struct",
    "require_struct_or_null",
]


# --- configuration ------------------------------------------------------------------


def parse_config(
    config_def: ConfigDef,
    configs: Mapping[str, Any],
    check: Callable[[dict[str, Any]], Iterable[ConfigProblem]] | None = None,
) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """Validate *configs* against *config_def* and parse them.

    Returns the parsed values of every declared key (defaults for absent
    ones) and the warnings (unknown keys). *check* gets those values and
    adds problems that span keys; keys whose own value is wrong are left out
    of what it sees, so every problem is found in one pass.

    :raises ConfigError: listing every error found.
    """
    problems = list(config_def.validate(configs))
    bad = {problem.key for problem in problems if problem.is_error}
    values: dict[str, Any] = {}
    for key in config_def:
        if key.name in bad:
            continue
        if key.name not in configs:
            values[key.name] = key.default_value()
            continue
        raw = configs[key.name]
        if raw is None and key.default is None:
            values[key.name] = None
            continue
        try:
            values[key.name] = key.parse(raw)
        except ValueError as exc:  # e.g. a placeholder nobody resolved
            problems.append(ConfigProblem(None, key.name, str(exc), str(raw)))
    if check is not None:
        problems.extend(check(values))
    errors = [problem for problem in problems if problem.is_error]
    if errors:
        raise ConfigError(errors)
    return values, [problem for problem in problems if not problem.is_error]


def replace_null_key() -> ConfigKey:
    """Kafka's ``replace.null.with.default`` setting (KIP-1040), shared by several transforms."""
    return ConfigKey(
        "replace.null.with.default",
        Type.BOOLEAN,
        "Whether a field that is null but has a default value in its schema is given that default. "
        "When false, the null is kept.",
        default=True,
        importance=Importance.MEDIUM,
    )


class NonEmptyList(Validator):
    """A list with at least one item (and, with *unique*, no item twice).

    As Kafka's ``NonEmptyListValidator``, blank items are allowed: ``a,`` is ``["a", ""]``.
    """

    def __init__(self, *, unique: bool = False) -> None:
        self.unique = unique

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        if not value:
            raise ValueError("expected a non-empty list")
        if self.unique:
            repeated = sorted({item for item in value if value.count(item) > 1})
            if repeated:
                raise ValueError(f"expected each name once, got {', '.join(repeated)} more than once")

    def describe(self) -> str:
        return "non-empty list without duplicates" if self.unique else "non-empty list"


class _Configurable:
    config_def: ClassVar[ConfigDef] = ConfigDef()

    #: Warnings from the last :meth:`configure` (unknown keys, deprecated keys).
    config_warnings: list[ConfigProblem] = []

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Check *configs* against :attr:`config_def` and :meth:`validate`, then :meth:`setup`.

        :param configs: the settings, as strings (from a file) or typed values (from code or JSON).
        :raises ConfigError: naming every bad key and what was expected.
        """
        values, warnings = parse_config(self.config_def, configs, self.validate)
        self.config_warnings = warnings
        self.setup(values)

    def validate(self, config: dict[str, Any]) -> list[ConfigProblem]:
        """Problems that span keys; *config* holds the parsed values of the keys that are right."""
        return []

    def setup(self, config: dict[str, Any]) -> None:
        """Take the checked, parsed settings (every declared key, defaults filled in)."""

    def close(self) -> None:
        """Release what :meth:`setup` acquired."""

    def version(self) -> str:
        """The version of the package that holds the class."""
        top = type(self).__module__.split(".")[0]
        for dist in metadata.packages_distributions().get(top, []) or [top]:
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
        return "unknown"


class Transformation(_Configurable):
    """A single message transform: one record in, one record (or ``None``, to drop it) out.

    Subclasses declare :attr:`config_def`, take their settings in :meth:`setup`
    (after :meth:`configure` has checked them) and implement :meth:`apply`.
    Records are never changed in place: a changed record is a copy made with
    ``record.new_record(...)``.
    """

    @functools.cached_property
    def schema_cache(self) -> SchemaUpdateCache:
        """Schemas this transform derived from input schemas, reused for the next record of the same
        schema (as Kafka's SMTs keep one). Made at first use, new at each :meth:`configure`, emptied
        at :meth:`close`."""
        return SchemaUpdateCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.__dict__.pop("schema_cache", None)  # schemas derived under the old settings
        super().configure(configs)

    def close(self) -> None:
        """Release what :meth:`setup` acquired; a subclass that overrides it calls this one too."""
        cache = self.__dict__.get("schema_cache")
        if cache is not None:
            cache.clear()

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """The transformed record, or ``None`` to drop it.

        :raises DataError: if the record cannot be transformed.
        """
        raise NotImplementedError

    def apply_batch(self, records: list[ConnectRecord]) -> list[ConnectRecord]:
        """:meth:`apply` to each of *records*, in order, leaving out the dropped ones."""
        apply = self.apply
        return [out for out in map(apply, records) if out is not None]


class Predicate(_Configurable):
    """A condition on a record; ``transforms.<alias>.predicate`` makes a transform conditional."""

    def test(self, record: ConnectRecord) -> bool:
        """Whether *record* satisfies the condition."""
        raise NotImplementedError


# --- key or value --------------------------------------------------------------------


class KeySide:
    """Makes a key-or-value transform work on the record's key."""

    side = "key"

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.key_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.key

    @staticmethod
    def new_record(record: ConnectRecord, schema: Schema | None, value: Any, headers: Headers | None = None) -> ConnectRecord:
        if headers is None:
            return record.new_record(key_schema=schema, key=value)
        return record.new_record(key_schema=schema, key=value, headers=headers)


class ValueSide:
    """Makes a key-or-value transform work on the record's value."""

    side = "value"

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.value_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.value

    @staticmethod
    def new_record(record: ConnectRecord, schema: Schema | None, value: Any, headers: Headers | None = None) -> ConnectRecord:
        if headers is None:
            return record.new_record(value_schema=schema, value=value)
        return record.new_record(value_schema=schema, value=value, headers=headers)


class KeyOrValue(Transformation):
    """Shared logic of a transform with ``Key`` and ``Value`` variants (see :class:`KeySide`)."""

    side: ClassVar[str]
    Key: ClassVar[type[KeyOrValue]]
    Value: ClassVar[type[KeyOrValue]]
    operating_schema: Callable[[ConnectRecord], Schema | None]
    operating_value: Callable[[ConnectRecord], Any]
    new_record: Callable[..., ConnectRecord]

    def __new__(cls, *args: Any, **kwargs: Any) -> KeyOrValue:
        if not hasattr(cls, "side"):
            raise TypeError(f"{cls.__name__} works on the key or the value: use {cls.__name__}.Key or {cls.__name__}.Value")
        return super().__new__(cls)


# --- requirements (Kafka's Requirements) ---------------------------------------------


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def require_schema(schema: Schema | None, purpose: str) -> Schema:
    if schema is None:
        raise DataError(f"Schema required for [{purpose}]")
    return schema


def require_map(value: Any, purpose: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DataError(f"Only Map objects supported in absence of schema for [{purpose}], found: {_type_name(value)}")
    return value


def require_map_or_null(value: Any, purpose: str) -> Mapping[str, Any] | None:
    return None if value is None else require_map(value, purpose)


def require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {_type_name(value)}")
    return value


def require_struct_or_null(value: Any, purpose: str) -> Struct | None:
    return None if value is None else require_struct(value, purpose)


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataError(f"Only SinkRecord supported for [{purpose}], found: {type(record).__name__}")
    return record


# --- schemas ---------------------------------------------------------------------------


def copy_schema_basics(source: Schema, builder: SchemaBuilder | None = None) -> SchemaBuilder:
    """*builder* (by default a new one of *source*'s type) with *source*'s name, version, doc and parameters.

    As Kafka's ``SchemaUtil.copySchemaBasics``: optionality and default are not copied.
    """
    if builder is None:
        if source.type is Schema.Type.ARRAY:
            builder = SchemaBuilder.array(source.value_schema)
        elif source.type is Schema.Type.MAP:
            builder = SchemaBuilder.map(source.key_schema, source.value_schema)
        else:
            builder = SchemaBuilder(source.type)
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters:
        builder.parameters(source.parameters)
    return builder


def is_logical(schema: Schema) -> bool:
    """Whether *schema* is one of Connect's logical types (Decimal, Date, Time, Timestamp)."""
    return schema.name in LOGICAL_NAMES


def build_with_default(builder: SchemaBuilder, make_default: Callable[[Schema], Any] | None) -> Schema:
    """Build *builder*, then give the schema the default ``make_default(schema)`` (if not ``None``).

    A struct default must be a struct of the schema it is the default of; this
    builds that schema first so the default can be made from it.
    """
    plain = builder.build()
    default = make_default(plain) if make_default is not None else None
    if default is None:
        return plain
    return SchemaBuilder.from_schema(plain).default_value(default).build()


class SchemaUpdateCache:
    """Input schema → derived schema, keeping the most recent *size* entries (Kafka keeps 16).

    The records of a batch mostly share one schema object: asked for the same
    object as last time, :meth:`get` answers without hashing it.
    """

    __slots__ = ("_entries", "_last", "_size")

    def __init__(self, size: int = 16) -> None:
        self._entries: OrderedDict[Schema, Any] = OrderedDict()
        self._size = size
        self._last: tuple[Schema | None, Any] = (None, None)

    def get(self, schema: Schema, build: Callable[[Schema], Any]) -> Any:
        """The derived schema of *schema*, from *build* the first time."""
        last_schema, updated = self._last
        if schema is last_schema:  # the most recent entry: already last in the order
            return updated
        entries = self._entries
        try:
            updated = entries[schema]
        except KeyError:
            updated = build(schema)
            entries[schema] = updated
            if len(entries) > self._size:
                entries.popitem(last=False)
        else:
            entries.move_to_end(schema)
        self._last = (schema, updated)
        return updated

    def clear(self) -> None:
        self._entries.clear()
        self._last = (None, None)

    def __len__(self) -> int:
        return len(self._entries)
