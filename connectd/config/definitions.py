"""Typed configuration declarations, Kafka's ``ConfigDef`` in Python.

Every key connectd reads — worker, connector, converter, transform — is
declared once here or next to the class that reads it: type, default,
importance, documentation, validator. From the declarations come parsing,
validation with one precise line per problem, and the generated reference in
``docs/``.

A problem line names where, what and what was expected::

    worker.properties:17: session.timeout.ms='abc': expected an integer
    worker.properties: group.id is required (the cluster's group id)
    worker.properties:3: warning: unknown key 'grup.id' (did you mean 'group.id'?)
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from connectd.config.properties import Origin
from connectd.errors import ConfigError
from connectd.secrets import HIDDEN, Secret, looks_secret, redact

__all__ = [
    "NO_DEFAULT",
    "And",
    "ConfigDef",
    "ConfigKey",
    "ConfigProblem",
    "Importance",
    "Type",
    "Validator",
    "ValidationContext",
    "CaseInsensitiveValidString",
    "HostPortList",
    "ListenerList",
    "NonEmptyString",
    "NonEmptyStringWithoutControlChars",
    "OneOf",
    "Range",
    "RegexValid",
    "TopicName",
    "ValidList",
    "display_value",
    "parse_value",
    "without_value",
]


class Type(enum.Enum):
    """Kafka's ``ConfigDef.Type``; values are what the docs and REST API show."""

    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(enum.Enum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: The default of a required key.
NO_DEFAULT: Any = _NoDefault()

_INT_BOUNDS = {Type.SHORT: (-(2**15), 2**15 - 1), Type.INT: (-(2**31), 2**31 - 1), Type.LONG: (-(2**63), 2**63 - 1)}
_JAVA_DOUBLE = re.compile(r"([+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?))[fFdD]?")
_INT_WORDS = {Type.SHORT: "a 16-bit integer", Type.INT: "a 32-bit integer", Type.LONG: "a 64-bit integer"}


# Java's String.trim() removes every character up to U+0020, control characters included, and no
# other: Python's strip() would also remove U+0085 and U+00A0 and keep U+0001.
_JAVA_TRIMMED = "".join(chr(code) for code in range(0x21))
# Kafka splits a list on \s*,\s*, Java's \s being ASCII white space only.
_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")


def _trim(text: str) -> str:
    return text.strip(_JAVA_TRIMMED)


def parse_value(type_: Type, raw: Any) -> Any:
    """Turn *raw* (normally the string from a file) into a value of *type_*.

    Already-typed values (from code or JSON) are accepted when they fit.

    :raises ValueError: with the text "expected …" when *raw* does not fit.
    """
    if raw is None:
        return None
    if type_ is Type.BOOLEAN:
        if isinstance(raw, bool):
            return raw
        text = _trim(str(raw)).lower()
        if text in ("true", "false"):
            return text == "true"
        raise ValueError("expected true or false")
    if type_ in _INT_BOUNDS:
        if isinstance(raw, bool):
            raise ValueError(f"expected {_INT_WORDS[type_]}")
        if isinstance(raw, int):
            value = raw
        else:
            text = _trim(str(raw))
            if not re.fullmatch(r"[+-]?\d+", text):
                raise ValueError(f"expected {_INT_WORDS[type_]}")
            value = int(text)
        low, high = _INT_BOUNDS[type_]
        if not low <= value <= high:
            raise ValueError(f"expected {_INT_WORDS[type_]} (between {low} and {high})")
        return value
    if type_ is Type.DOUBLE:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return float(raw)
        # Java's Double.parseDouble syntax: Python's float() would also take 1_000, inf and nan.
        match = _JAVA_DOUBLE.fullmatch(_trim(str(raw)))
        if match is None:
            raise ValueError("expected a number")
        return float(match.group(1))
    if type_ is Type.LIST:
        if isinstance(raw, (list, tuple)):
            return [_trim(str(item)) for item in raw]
        text = _trim(str(raw))
        return _LIST_SEPARATOR.split(text) if text else []
    if type_ is Type.CLASS:
        if isinstance(raw, type):
            return raw
        text = _trim(str(raw))
        if not text:
            raise ValueError("expected a class name or alias")
        return text
    if type_ is Type.PASSWORD:
        # Trimmed like every other string, as Kafka's ConfigDef does.
        return raw if isinstance(raw, Secret) else Secret(_trim(str(raw)))
    return _trim(str(raw)) if type_ is Type.STRING else raw


# --- validators -------------------------------------------------------------


class Validator:
    """Checks a parsed value; raises ``ValueError("expected …")`` when it is wrong.

    :meth:`describe` is the "valid values" column of the reference docs.
    """

    def __call__(self, value: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Range(Validator):
    """A number between *min* and *max*, both included; either may be open."""

    min: float | None = None
    max: float | None = None

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
            raise ValueError(f"expected a value in {self.describe()}")

    def describe(self) -> str:
        if self.min is not None and self.max is not None:
            return f"[{_num(self.min)},...,{_num(self.max)}]"
        if self.min is not None:
            return f"[{_num(self.min)},...]"
        if self.max is not None:
            return f"[...,{_num(self.max)}]"
        return ""

    @classmethod
    def at_least(cls, minimum: float) -> Range:
        return cls(min=minimum)

    @classmethod
    def between(cls, minimum: float, maximum: float) -> Range:
        return cls(min=minimum, max=maximum)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class OneOf(Validator):
    """One of a fixed set of strings (Kafka's ``ValidString``), exact case."""

    def __init__(self, *allowed: str) -> None:
        self.allowed = tuple(allowed)

    def __call__(self, value: Any) -> None:
        if value is not None and value not in self.allowed:
            raise ValueError(f"expected one of {self.describe()}")

    def describe(self) -> str:
        return "[" + ", ".join(self.allowed) + "]"


class CaseInsensitiveValidString(OneOf):
    """One of a fixed set of strings, in any case."""

    def __call__(self, value: Any) -> None:
        if value is not None and str(value).lower() not in {a.lower() for a in self.allowed}:
            raise ValueError(f"expected one of {self.describe()} (any case)")


class ValidList(Validator):
    """A list whose every item is one of *allowed* (and, unless *allow_empty*, not empty)."""

    def __init__(self, *allowed: str, allow_empty: bool = True) -> None:
        self.allowed = tuple(allowed)
        self.allow_empty = allow_empty

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        if not value and not self.allow_empty:
            raise ValueError("expected a non-empty list")
        bad = [item for item in value if self.allowed and item not in self.allowed]
        if bad:
            raise ValueError(f"expected items from {self.describe()}, got {', '.join(bad)}")

    def describe(self) -> str:
        if not self.allowed:
            return "non-empty list" if not self.allow_empty else ""
        return "[" + ", ".join(self.allowed) + "]"


class NonEmptyString(Validator):
    """A string with something in it."""

    def __call__(self, value: Any) -> None:
        if value is not None and not _trim(str(value)):
            raise ValueError("expected a non-empty string")

    def describe(self) -> str:
        return "non-empty string"


class NonEmptyStringWithoutControlChars(NonEmptyString):
    """A non-empty string without ISO control characters (U+0000–U+001F, U+007F–U+009F), as a connector's name."""

    def __call__(self, value: Any) -> None:
        super().__call__(value)
        if value is None:
            return
        found = [str(ord(c)) for c in str(value) if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F]
        if found:
            raise ValueError(f"expected a string without control characters, got the characters {', '.join(found)}")

    def describe(self) -> str:
        return "non-empty string without control characters"


class RegexValid(Validator):
    """A string that is itself a valid regular expression."""

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"expected a valid regular expression ({exc})") from None

    def describe(self) -> str:
        return "valid regex"


_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class TopicName(Validator):
    """A legal Kafka topic name: 1–249 of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``."""

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        if value in (".", "..") or not _TOPIC_RE.fullmatch(str(value)):
            raise ValueError("expected a topic name of 1 to 249 characters from [a-zA-Z0-9._-]")

    def describe(self) -> str:
        return "topic name"


_HOST_PORT_RE = re.compile(r"(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):(\d{1,5})")


class HostPortList(Validator):
    """``host:port[,host:port…]``, as in ``bootstrap.servers``."""

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        if not value:
            raise ValueError("expected at least one host:port")
        for item in value:
            match = _HOST_PORT_RE.fullmatch(item)
            if not match or not 0 < int(match.group(2)) < 65536:
                raise ValueError(f"expected host:port entries, got {item!r}")

    def describe(self) -> str:
        return "host1:port1,host2:port2,..."


_LISTENER_RE = re.compile(r"(?i)(https?)://(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]*):(\d{1,5})/?")


class ListenerList(Validator):
    """REST listeners: ``http://host:port`` or ``https://host:port``; empty host = all interfaces."""

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        if not value:
            raise ValueError("expected at least one listener such as http://:8083")
        for item in value:
            match = _LISTENER_RE.fullmatch(item)
            if not match or not 0 <= int(match.group(3)) < 65536:
                raise ValueError(f"expected listeners like http://host:port or https://host:port, got {item!r}")

    def describe(self) -> str:
        return "http://host:port or https://host:port, comma-separated"


class And(Validator):
    """Every one of *validators*."""

    def __init__(self, *validators: Validator) -> None:
        self.validators = validators

    def __call__(self, value: Any) -> None:
        for validator in self.validators:
            validator(value)

    def describe(self) -> str:
        return ", ".join(filter(None, (v.describe() for v in self.validators)))


# --- declarations -----------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    """One declared key.

    :param name: the key as written in a file.
    :param type: how its string is parsed.
    :param documentation: one or more sentences for the reference docs.
    :param default: the value when absent; :data:`NO_DEFAULT` makes the key required.
    :param importance: as in Kafka's docs.
    :param validator: checks the parsed value.
    :param group: heading in the docs and in REST validation results.
    :param plugin_kind: for ``CLASS`` keys, the kind of plugin the class must be
        (``converter``, ``connector``, …), so a checker can look it up.
    :param extension: ``True`` for keys connectd adds to Kafka Connect's.
    :param ignored: for a key connectd accepts (a Kafka Connect file may have it)
        and does nothing with: why, in a sentence. Setting it is a warning in
        every check; its documentation says it is ignored.
    :param nullable: an explicit default of ``None`` is allowed (Kafka's ``null``).
    """

    name: str
    type: Type
    documentation: str
    default: Any = NO_DEFAULT
    importance: Importance = Importance.MEDIUM
    validator: Validator | None = None
    group: str | None = None
    plugin_kind: str | None = None
    extension: bool = False
    ignored: str | None = None

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    def parse(self, raw: Any) -> Any:
        """Parse and validate *raw*; ``ValueError("expected …")`` if wrong."""
        value = parse_value(self.type, raw)
        if self.validator is not None and value is not None:
            self.validator(value.value() if isinstance(value, Secret) else value)
        return value

    def default_value(self) -> Any:
        """The parsed default (``None`` for a required key)."""
        if self.default is NO_DEFAULT or self.default is None:
            return None
        return parse_value(self.type, self.default)

    def default_text(self) -> str:
        """The default as the reference docs show it."""
        if self.default is NO_DEFAULT:
            return ""
        if self.default is None:
            return "null"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, (list, tuple)):
            return ",".join(self.default) if self.default else '""'
        return str(self.default) if self.default != "" else '""'


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong (or, with ``severity="warning"``, dubious) in a config."""

    origin: Origin | None
    key: str | None
    message: str
    value: str | None = None
    severity: str = "error"
    rule: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        where = f"{self.origin}: " if self.origin is not None else ""
        level = "warning: " if self.severity == "warning" else ""
        if self.key is None:
            subject = ""
        elif self.value is None and self.message.startswith("is required"):
            subject = f"{self.key} "
        elif self.value is None:
            subject = f"{self.key}: "
        else:
            subject = f"{self.key}={self.value!r}: "
        return f"{where}{level}{subject}{self.message}"


@dataclass
class ValidationContext:
    """What a check needs beyond the declarations.

    :param resolve: turns a value with ``${provider:…}`` placeholders into the
        resolved value; ``None`` leaves placeholders unchecked.
    :param has_class: ``has_class(kind, name)`` tells whether a plugin class
        exists; ``None`` skips class look-ups.
    """

    resolve: Callable[[str], str] | None = None
    has_placeholder: Callable[[str], bool] = lambda value: "${" in value
    has_class: Callable[[str, str], bool] | None = None


class ConfigDef:
    """A set of declared keys, plus prefixes under which any key is accepted.

    :param keys: the declarations.
    :param prefixes: prefix → documentation, e.g. ``{"spark.": "passed to Spark"}``;
        keys under a prefix are not warned about as unknown.
    """

    def __init__(self, keys: Iterable[ConfigKey] = (), *, prefixes: Mapping[str, str] | None = None) -> None:
        self._keys: dict[str, ConfigKey] = {}
        self.prefixes: dict[str, str] = dict(prefixes or {})
        for key in keys:
            self.define(key)

    def define(self, key: ConfigKey) -> ConfigDef:
        if key.name in self._keys:
            raise ValueError(f"config key {key.name!r} declared twice")
        if key.default is not NO_DEFAULT and key.default is not None:
            # A declaration whose own default is invalid is a bug: fail on import.
            try:
                key.parse(key.default)
            except ValueError as exc:
                raise ValueError(f"default of {key.name!r} is invalid: {exc}") from None
        self._keys[key.name] = key
        return self

    def merge(self, *others: ConfigDef) -> ConfigDef:
        """A new definition with this one's keys and prefixes and then *others*'."""
        merged = ConfigDef(self._keys.values(), prefixes=self.prefixes)
        for other in others:
            for key in other:
                merged.define(key)
            merged.prefixes.update(other.prefixes)
        return merged

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self._keys.values())

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __getitem__(self, name: str) -> ConfigKey:
        return self._keys[name]

    def get(self, name: str) -> ConfigKey | None:
        return self._keys.get(name)

    def names(self) -> list[str]:
        return list(self._keys)

    def is_known(self, name: str) -> bool:
        return name in self._keys or any(name.startswith(p) for p in self.prefixes)

    def defaults(self) -> dict[str, Any]:
        """Parsed defaults of every key that has one."""
        return {k.name: k.default_value() for k in self if not k.required}

    def parse(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Every declared key of *values* parsed, defaults for the rest: what a task reads its settings with.

        :raises ConfigError: naming every key that is missing or wrong, not only the first.
        """
        problems = [problem for problem in self.validate(values) if problem.is_error]
        if problems:
            raise ConfigError(problems)
        return {key.name: key.parse(values[key.name]) if values.get(key.name) is not None else key.default_value()
                for key in self}

    def validate(
        self,
        values: Mapping[str, Any],
        origin: Callable[[str], Origin | None] | Origin | None = None,
        context: ValidationContext | None = None,
    ) -> list[ConfigProblem]:
        """Check *values* against the declarations; every problem, not only the first.

        Required keys missing, values that don't parse or validate, classes
        that don't exist (when the context can look them up), placeholders
        that don't resolve: errors. Unknown keys: warnings, with a suggestion;
        keys connectd ignores (:attr:`ConfigKey.ignored`): warnings saying why.
        """
        context = context or ValidationContext()
        origin_of = origin if callable(origin) else (lambda _key, _o=origin: _o)
        file_origin = _file_only(origin_of, values)
        problems: list[ConfigProblem] = []
        for key in self:
            if key.name not in values:
                if key.required:
                    problems.append(ConfigProblem(file_origin, key.name, f"is required ({_first_sentence(key.documentation)})"))
                continue
            raw = values[key.name]
            problems.extend(self.check_value(key, raw, origin_of(key.name), context))
            if key.ignored:
                problems.append(ConfigProblem(origin_of(key.name), key.name,
                                              f"is accepted for compatibility and ignored: {key.ignored}",
                                              display_value(key, raw), severity="warning"))
        for name in values:
            if not self.is_known(name):
                problems.append(
                    ConfigProblem(origin_of(name), None, f"unknown key {name!r}{self._suggestion(name)}", severity="warning")
                )
        return problems

    def check_value(
        self, key: ConfigKey, raw: Any, where: Origin | None, context: ValidationContext | None = None
    ) -> list[ConfigProblem]:
        """Problems with one value of *key* (resolving placeholders through *context*)."""
        context = context or ValidationContext()
        shown = display_value(key, raw)
        resolved = False
        if isinstance(raw, str) and context.has_placeholder(raw):
            if context.resolve is None:
                return []
            try:
                raw = context.resolve(raw)
            except ConfigError as exc:
                return [ConfigProblem(where, key.name, str(exc), shown)]
            resolved = True
        if raw is None and key.default is None:
            return []
        try:
            value = key.parse(raw)
        except ValueError as exc:
            message = without_value(str(exc)) if resolved else str(exc)
            return [ConfigProblem(where, key.name, message, shown)]
        if key.type is Type.CLASS and key.plugin_kind and context.has_class and isinstance(value, str):
            if not context.has_class(key.plugin_kind, value):
                return [ConfigProblem(where, key.name, f"expected a {key.plugin_kind} class or alias; no such plugin is installed", shown)]
        return []

    def _suggestion(self, name: str) -> str:
        close = difflib.get_close_matches(name, self.names(), n=1, cutoff=0.8)
        return f" (did you mean {close[0]!r}?)" if close else ""


_ONLY_PLACEHOLDERS = re.compile(r"(?:\$\{[^}]*\})+")


def display_value(key: ConfigKey | str | None, raw: Any) -> str | None:
    """How a value may be shown in a message or a listing.

    Placeholders are shown as written. A secret — a ``PASSWORD`` key, or an
    undeclared key whose name says secret (``producer.ssl.key.password``) —
    is hidden unless it is nothing but placeholders.
    """
    if raw is None:
        return None
    if isinstance(raw, Secret):
        return HIDDEN
    name = key.name if isinstance(key, ConfigKey) else key
    secret = (isinstance(key, ConfigKey) and key.type is Type.PASSWORD) or (name is not None and looks_secret(name))
    if secret and not _ONLY_PLACEHOLDERS.fullmatch(str(raw).strip()):
        return HIDDEN
    return str(raw)


def without_value(message: str) -> str:
    """A validator's message without the part quoting the offending value.

    Validators put what they quote after ``, got``; for a value that came
    from a config provider that part could be a secret.
    """
    return redact(message.split(", got ")[0])


def _first_sentence(text: str) -> str:
    sentence = text.strip().split(". ")[0].rstrip(".")
    return sentence[:1].lower() + sentence[1:] if sentence else sentence


def _file_only(origin_of: Callable[[str], Origin | None], values: Mapping[str, Any]) -> Origin | None:
    # A missing key has no line: point at the file (any key's origin gives it).
    for name in values:
        where = origin_of(name)
        if where is not None:
            return Origin(where.source)
    probe = origin_of("")
    return Origin(probe.source) if probe is not None else None

