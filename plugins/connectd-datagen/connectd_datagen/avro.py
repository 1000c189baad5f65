"""Avro schemas with ``arg.properties`` annotations: parsing, their Connect schemas, random values.

The annotations are those of Confluent's avro-random-generator, which
kafka-connect-datagen reads its schemas with: ``options`` (a list to pick
from), ``iteration`` (``start``, ``restart``, ``step``, ``initial``),
``range`` (``min`` inclusive, ``max`` exclusive), ``length`` (a number or
``min``/``max``, default 8…15), ``regex``, ``prefix``, ``suffix``, ``keys``
(of maps) and ``odds`` (of booleans). Values become Connect data as
Confluent's ``AvroData`` makes them: a record is a struct named by its full
name, a ``["null", T]`` union an optional T, an enum a string.

:class:`Generator` compiles a schema once into one function per node, its
annotations checked and its regexes turned into character tuples, so a
value costs only its random draws.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import re._constants as _sre
import re._parser as _sre_parse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connectd import ConfigError, Schema, SchemaBuilder, Struct

__all__ = ["AvroSchema", "Generator", "parse_schema"]

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_LIMITS = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_ENUM = "io.confluent.connect.avro.Enum"


@dataclass(eq=False)
class AvroSchema:
    """One node of a parsed Avro schema."""

    type: str
    props: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    fields: list[tuple[str, AvroSchema]] = field(default_factory=list)
    items: AvroSchema | None = None  # array items, map values
    branches: list[AvroSchema] = field(default_factory=list)  # union
    symbols: list[str] = field(default_factory=list)
    size: int = 0
    doc: str | None = None

    def field(self, name: str) -> AvroSchema | None:
        return next((s for n, s in self.fields if n == name), None)


def parse_schema(text: str | Any) -> AvroSchema:
    """Parse Avro schema JSON (text or already decoded).

    :raises ConfigError: ``Unable to parse the provided schema`` and why.
    """
    try:
        return _Parser().parse(json.loads(text) if isinstance(text, str) else text, None)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"Unable to parse the provided schema: {exc}") from exc


class _Parser:
    def __init__(self) -> None:
        self.named: dict[str, AvroSchema] = {}

    def _full(self, name: str, namespace: str | None) -> str:
        return name if "." in name or not namespace else f"{namespace}.{name}"

    def parse(self, node: Any, namespace: str | None) -> AvroSchema:
        if isinstance(node, str):
            if node in _PRIMITIVES:
                return AvroSchema(node)
            for candidate in (self._full(node, namespace), node):
                if candidate in self.named:
                    return self.named[candidate]
            raise ValueError(f"unknown type {node!r}")
        if isinstance(node, list):
            return AvroSchema("union", branches=[self.parse(branch, namespace) for branch in node])
        if not isinstance(node, dict) or "type" not in node:
            raise ValueError(f"not a schema: {json.dumps(node)[:80]}")
        kind, props = node["type"], node.get("arg.properties") or {}
        if kind in ("record", "error", "enum", "fixed"):
            full = self._full(node["name"], node.get("namespace", namespace))
            schema = AvroSchema("record" if kind == "error" else kind, props, full, doc=node.get("doc"))
            self.named[full] = schema
            inner = full.rpartition(".")[0] or None
            if kind in ("record", "error"):
                schema.fields = [(f["name"], self._field(f, inner)) for f in node["fields"]]
            elif kind == "enum":
                schema.symbols = list(node["symbols"])
            else:
                schema.size = int(node["size"])
            return schema
        if kind == "array":
            return AvroSchema("array", props, items=self.parse(node["items"], namespace))
        if kind == "map":
            return AvroSchema("map", props, items=self.parse(node["values"], namespace))
        if isinstance(kind, (dict, list)) or kind not in _PRIMITIVES:
            inner = self.parse(kind, namespace)
            return inner if not props else AvroSchema(inner.type, {**inner.props, **props}, inner.name, inner.fields,
                                                      inner.items, inner.branches, inner.symbols, inner.size)
        return AvroSchema(kind, props)

    def _field(self, spec: dict[str, Any], namespace: str | None) -> AvroSchema:
        schema = self.parse(spec["type"], namespace)
        if "arg.properties" in spec:  # annotations on the field itself apply to its type
            schema = AvroSchema(schema.type, {**schema.props, **spec["arg.properties"]}, schema.name, schema.fields,
                                schema.items, schema.branches, schema.symbols, schema.size)
        return schema


def connect_schema(schema: AvroSchema, cache: dict[int, Schema] | None = None) -> Schema:
    """The Connect schema Confluent's ``AvroData`` gives *schema*."""
    cache = {} if cache is None else cache
    if id(schema) in cache:
        return cache[id(schema)]
    builder = _builder(schema, cache)
    built = builder.build() if isinstance(builder, SchemaBuilder) else builder
    cache[id(schema)] = built
    return built


def _builder(schema: AvroSchema, cache: dict[int, Schema]) -> SchemaBuilder | Schema:
    simple = {"boolean": SchemaBuilder.boolean, "int": SchemaBuilder.int32, "long": SchemaBuilder.int64,
              "float": SchemaBuilder.float32, "double": SchemaBuilder.float64, "bytes": SchemaBuilder.bytes,
              "string": SchemaBuilder.string}
    if schema.type in simple:
        return simple[schema.type]()
    if schema.type == "record":
        builder = SchemaBuilder.struct().name(schema.name)
        if schema.doc:
            builder.doc(schema.doc)
        for name, field_schema in schema.fields:
            builder.field(name, connect_schema(field_schema, cache))
        return builder
    if schema.type == "enum":
        builder = SchemaBuilder.string().parameter(_ENUM, schema.name)
        for symbol in schema.symbols:
            builder.parameter(f"{_ENUM}.{symbol}", symbol)
        return builder
    if schema.type == "fixed":
        return SchemaBuilder.bytes().name(schema.name).parameter("connect.fixed.size", str(schema.size))
    if schema.type == "array":
        return SchemaBuilder.array(connect_schema(schema.items, cache))
    if schema.type == "map":
        return SchemaBuilder.map(Schema.STRING, connect_schema(schema.items, cache))
    if schema.type == "union":
        others = [b for b in schema.branches if b.type != "null"]
        if len(others) == 1 and len(schema.branches) == 2:
            return SchemaBuilder.from_schema(connect_schema(others[0], cache)).optional()
    raise ConfigError(f"Avro type {schema.type} ({schema.name or 'unnamed'}) has no Connect form here: "
                      "connectd's datagen takes records, primitives, enums, fixed, arrays, maps and [\"null\", T] unions")



def connect_value(schema: AvroSchema, connect: Schema, value: Any) -> Any:
    """*value* (as :class:`Generator` makes it without a Connect schema) as Connect data of *connect*."""
    if value is None:
        return None
    if schema.type == "record":
        return Struct.from_field_values(connect, [connect_value(s, f.schema, value[name])
                                                  for (name, s), f in zip(schema.fields, connect.fields)])
    if schema.type == "array":
        return [connect_value(schema.items, connect.value_schema, v) for v in value]
    if schema.type == "map":
        return {k: connect_value(schema.items, connect.value_schema, v) for k, v in value.items()}
    if schema.type == "union":
        return connect_value(next(b for b in schema.branches if b.type != "null"), connect, value)
    return value


_Make = Callable[[], Any]


class Generator:
    """Random values of an Avro schema, following its ``arg.properties``.

    The annotations are checked here, once; :meth:`generate` then only draws.

    :param rng: the source of randomness (datagen re-seeds it for every batch of records).
    :param generation: records generated before this one, so ``iteration``
        values continue where a restarted task left off.
    :param connect: the schema's Connect schema (:func:`connect_schema`): when
        given, :meth:`generate` makes Connect data of it (structs for records)
        straight away, as :func:`connect_value` would convert the plain value.
    :raises ConfigError: for an annotation that cannot be followed.
    """

    def __init__(self, schema: AvroSchema, rng: random.Random, generation: int = 0,
                 connect: Schema | None = None) -> None:
        self._make = _Compiler(rng, generation).compile(schema, connect)

    def generate(self) -> Any:
        """The next value: dicts for records, or Connect data when the generator has a Connect schema."""
        return self._make()


# Below 2**40, int(random() * span) is uniform to within span / 2**53 at a
# fraction of the cost of randrange(); wider spans use randrange().
_FLOAT_SPAN = 2**40
_ASCII = bytes(b & 0x7F for b in range(256))


def _below(rng: random.Random, base: int, span: int) -> _Make:
    """A function drawing base + 0…span-1."""
    if span == 1:
        return lambda: base
    if span <= _FLOAT_SPAN:
        draw = rng.random
        return lambda: base + int(draw() * span)
    randrange = rng.randrange
    return lambda: base + randrange(span)


def _picker(rng: random.Random, items: Any) -> _Make:
    """A function choosing one of *items* (an empty sequence raises IndexError when drawn, as choice() does)."""
    items = tuple(items)
    count, draw = len(items), rng.random
    return lambda: items[int(draw() * count)]


class _Compiler:
    """Turns schema nodes into functions making their values."""

    def __init__(self, rng: random.Random, generation: int) -> None:
        self.random, self.generation = rng, generation
        # A named type used twice is one node: its iterations count across both uses.
        self.iterations: dict[int, _Iteration] = {}
        self.records: dict[tuple[int, int], _Make] = {}

    def compile(self, schema: AvroSchema, connect: Schema | None) -> _Make:
        props = schema.props
        options = props.get("options")
        if isinstance(options, list):
            if not options:
                raise ConfigError("options property cannot be empty")
            pick = _picker(self.random, options)
            if connect is not None and schema.type in ("record", "array", "map", "union"):
                return lambda: connect_value(schema, connect, pick())
            return pick
        if "iteration" in props and schema.type in ("int", "long", "float", "double", "boolean"):
            if id(schema) not in self.iterations:
                self.iterations[id(schema)] = _Iteration(schema.type, props["iteration"], self.generation)
            return self.iterations[id(schema)].next
        return getattr(self, f"_{schema.type}")(schema, props, connect)

    def _null(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        return lambda: None

    def _boolean(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        odds = props.get("odds")
        if odds is None:
            odds = 0.5
        elif not 0.0 <= odds <= 1.0:
            raise ConfigError("odds property must be in the range [0.0, 1.0]")
        draw = self.random.random
        return lambda: draw() < odds

    def _integral(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        low, high = _LIMITS[schema.type]
        bounds = props.get("range")
        if not isinstance(bounds, dict):
            bits, getrandbits = (high - low).bit_length(), self.random.getrandbits
            return lambda: low + getrandbits(bits)
        minimum, maximum = int(bounds.get("min", low)), int(bounds.get("max", high))
        if minimum >= maximum:
            raise ConfigError("'min' field must be strictly less than 'max' field in range property")
        return _below(self.random, minimum, maximum - minimum)

    _int = _long = _integral

    def _decimal(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        bounds, draw = props.get("range"), self.random.random
        if not isinstance(bounds, dict):
            return draw  # Java's nextFloat/nextDouble: [0, 1)
        minimum, maximum = float(bounds.get("min", -sys.float_info.max)), float(bounds.get("max", sys.float_info.max))
        if minimum >= maximum:
            raise ConfigError("'min' field must be strictly less than 'max' field in range property")
        span = maximum - minimum
        return lambda: minimum + draw() * span

    _float = _double = _decimal

    def _count(self, props: dict) -> _Make:
        low, high = _length(props)
        return _below(self.random, low, high - low)

    def _string(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        regex = props.get("regex")
        if regex is not None:
            text = self._regex(regex, props)
        else:
            count, randbytes = self._count(props), self.random.randbytes
            text = lambda: randbytes(count()).translate(_ASCII).decode("ascii")
        prefix, suffix = f"{props.get('prefix', '')}", f"{props.get('suffix', '')}"
        if not prefix and not suffix:
            return text
        return lambda: f"{prefix}{text()}{suffix}"

    def _regex(self, regex: str, props: dict) -> _Make:
        pattern = _pattern(regex)
        if "length" not in props:
            return _compile_regex(pattern, self.random, 0)
        low, high = _length(props)
        make = _compile_regex(pattern, self.random, low)

        def text() -> str:
            value = ""
            for _ in range(50):  # aim within the length bounds, as the generator's length hint does
                value = make()
                if low <= len(value) < high:
                    break
            return value

        return text

    def _bytes(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        count, randbytes = self._count(props), self.random.randbytes
        return lambda: randbytes(count())

    def _fixed(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        size, randbytes = schema.size, self.random.randbytes
        return lambda: randbytes(size)

    def _enum(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        return _picker(self.random, schema.symbols)

    def _record(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        key = (id(schema), id(connect))
        if key in self.records:
            return self.records[key]
        compiled: list[_Make] = []
        self.records[key] = lambda: compiled[0]()  # a recursive type reaches itself through this
        names = [name for name, _ in schema.fields]
        makers = [self.compile(field_schema, None if connect is None else connect.field(name).schema)
                  for name, field_schema in schema.fields]
        # One call per field, unrolled: a comprehension would add a call per record.
        calls = ", ".join(f"m{i}()" for i in range(len(makers)))
        namespace: dict[str, Any] = {f"m{i}": maker for i, maker in enumerate(makers)}
        if connect is None:
            namespace.update(names=names)
            body = f"return dict(zip(names, ({calls}{',' if len(makers) == 1 else ''})))"
        else:
            namespace.update(struct=Struct.from_field_values, schema=connect)
            body = f"return struct(schema, [{calls}])"
        exec(f"def make():\n    {body}\n", namespace)  # noqa: S102
        compiled.append(namespace["make"])
        self.records[key] = namespace["make"]
        return namespace["make"]

    def _array(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        count = self._count(props)
        item = self.compile(schema.items, None if connect is None else connect.value_schema)
        return lambda: [item() for _ in range(count())]

    def _map(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        count = self._count(props)
        keys = AvroSchema("string", props.get("keys") or {})
        key = self._string(keys, keys.props, None)
        value = self.compile(schema.items, None if connect is None else connect.value_schema)
        return lambda: {key(): value() for _ in range(count())}

    def _union(self, schema: AvroSchema, props: dict, connect: Schema | None) -> _Make:
        # With a Connect schema the union is ["null", T]: T's values are made with the optional schema.
        pick = _picker(self.random, [self.compile(branch, connect) for branch in schema.branches])
        return lambda: pick()()


def _length(props: dict) -> tuple[int, int]:
    length = props.get("length")
    if length is None:
        return 8, 16
    if isinstance(length, int):
        if length < 0:
            raise ConfigError("when given as integral number, length property cannot be negative")
        return length, length + 1
    if isinstance(length, dict) and ("min" in length or "max" in length):
        minimum, maximum = int(length.get("min", 0)), int(length.get("max", 2**31 - 1))
        if minimum < 0:
            raise ConfigError("min field of length property cannot be negative")
        if maximum <= minimum:
            raise ConfigError("max field must be strictly greater than min field for length property")
        return minimum, maximum
    raise ConfigError("length property must either be an integral number or an object with min and/or max")


class _Iteration:
    """``iteration``: start (or initial), then step by step, wrapping at restart back to start."""

    def __init__(self, kind: str, spec: dict, count: int) -> None:
        if not isinstance(spec, dict) or "start" not in spec:
            raise ConfigError("iteration property must contain start field")
        if kind == "boolean":
            self.current = bool(spec["start"]) ^ (count % 2 == 1)
            self.next = self._flip
            return
        integral = kind in _LIMITS
        number = int if integral else float
        start, step, restart = number(spec["start"]), spec.get("step"), spec.get("restart")
        low, high = _LIMITS.get(kind, (-sys.float_info.max, sys.float_info.max))
        if restart is None and step is None:
            restart, step = high, 1
        elif restart is None:
            if step == 0:
                raise ConfigError("step field of iteration property cannot be zero")
            restart = high if step > 0 else -low
        elif step is None:
            if restart == start:
                raise ConfigError("iteration property's restart field cannot equal its start field")
            step = 1 if restart > start else -1
        self.start, self.step, self.span = start, number(step), abs(number(restart) - start)
        self.sign = 1 if self.step > 0 else -1
        self.offset = number(spec.get("initial", start)) - start
        if count > 0:
            self.offset = self._wrap(self.offset + count * self.step)

    def _wrap(self, value: float) -> float:
        return (abs(value) % self.span) * self.sign

    def next(self) -> Any:
        value = self.start + self.offset
        self.offset = (abs(self.offset + self.step) % self.span) * self.sign
        return value

    def _flip(self) -> bool:
        value, self.current = self.current, not self.current
        return value


_PATTERNS: dict[str, Any] = {}


def _pattern(regex: str) -> Any:
    if regex not in _PATTERNS:
        try:
            _PATTERNS[regex] = _sre_parse.parse(regex)
        except re.error as exc:
            raise ConfigError(f"regex property {regex!r} is not a valid regular expression: {exc}") from exc
    return _PATTERNS[regex]


_PRINTABLE = tuple(chr(c) for c in range(32, 127))
_CATEGORIES = {
    _sre.CATEGORY_DIGIT: "0123456789",
    _sre.CATEGORY_SPACE: " \t",
    _sre.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
}
# Repeats of one character with at most this many strings in all are drawn from a list of them.
_TABLE = 4096
_REPEATS = tuple(op for op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", None)) if op)


def _compile_regex(parsed: Any, rng: random.Random, min_length: int) -> Callable[[], str]:
    """A function making random strings that match a parsed regex; unbounded repeats stay short (or reach
    *min_length*)."""
    compiler = _RegexCompiler(rng, min_length)
    text = compiler.sequence(parsed)
    if isinstance(text, str):
        return lambda: text
    if compiler.referenced:
        groups = compiler.groups

        def fresh() -> str:  # a back-reference sees only the groups of this string
            groups.clear()
            return text()

        return fresh
    return text


class _RegexCompiler:
    """Compiles parsed regex items into constant strings (literals) or functions (everything random)."""

    def __init__(self, rng: random.Random, min_length: int) -> None:
        self.random, self.min_length = rng, min_length
        self.groups: dict[int, str] = {}
        self.referenced = False

    def sequence(self, parsed: Any) -> str | Callable[[], str]:
        parts: list[str | Callable[[], str]] = []
        for op, arg in parsed:
            part = self._item(op, arg)
            if isinstance(part, str):
                if not part:
                    continue
                if parts and isinstance(parts[-1], str):
                    parts[-1] += part
                    continue
            parts.append(part)
        if not parts:
            return ""
        if len(parts) == 1:
            return parts[0]
        if len(parts) == 2:
            first, second = parts
            if isinstance(first, str):
                return lambda: first + second()
            if isinstance(second, str):
                return lambda: first() + second
            return lambda: first() + second()
        # Unrolled, as records are: a join over a comprehension costs a call more.
        namespace = {f"p{i}": part for i, part in enumerate(parts)}
        terms = ", ".join(f"p{i}" if isinstance(part, str) else f"p{i}()" for i, part in enumerate(parts))
        exec(f"def text():\n    return ''.join(({terms}))\n", namespace)  # noqa: S102
        return namespace["text"]

    def _item(self, op: Any, arg: Any) -> str | Callable[[], str]:
        if op is _sre.LITERAL:
            return chr(arg)
        if op is _sre.NOT_LITERAL:
            return self._pick([c for c in _PRINTABLE if ord(c) != arg])
        if op is _sre.ANY:
            return self._pick(_PRINTABLE)
        if op is _sre.IN:
            return self._pick(self._set(arg))
        if op is _sre.BRANCH:
            branches = [self.sequence(branch) for branch in arg[1]]
            if all(isinstance(b, str) for b in branches):
                return self._pick(branches)
            pick = _picker(self.random, [_constant(b) if isinstance(b, str) else b for b in branches])
            return lambda: pick()()
        if op is _sre.SUBPATTERN:
            group, inner = arg[0], self.sequence(arg[-1])
            if group is None:
                return inner
            return self._capture(group, inner)
        if op is _sre.GROUPREF:
            self.referenced = True
            groups = self.groups
            return lambda: groups.get(arg, "")
        if op in _REPEATS:
            return self._repeat(*arg)
        if op is _sre.CATEGORY:
            return self._pick(_CATEGORIES.get(arg, "x"))
        return ""  # anchors (^, $, \b) and lookarounds add no characters

    def _pick(self, chars: Any) -> str | Callable[[], str]:
        if len(chars) == 1:
            return chars[0]
        return _picker(self.random, chars)

    def _capture(self, group: int, inner: str | Callable[[], str]) -> Callable[[], str]:
        groups = self.groups

        def capture() -> str:
            text = groups[group] = inner if isinstance(inner, str) else inner()
            return text

        return capture

    def _repeat(self, low: int, high: Any, item: Any) -> str | Callable[[], str]:
        inner, draw = self.sequence(item), self.random.random
        chars = self._chars(item)
        if chars and high is not _sre.MAXREPEAT and sum(len(chars) ** n for n in range(low, high + 1)) <= _TABLE:
            # Few enough strings (as [0-9]{0,2}) to list them all: a count, then one of its strings.
            tables = tuple(tuple(map("".join, itertools.product(chars, repeat=n))) for n in range(low, high + 1))
            if len(tables) == 1:
                return _picker(self.random, tables[0])
            sized, span = tuple((table, len(table)) for table in tables), len(tables)

            def pick() -> str:
                table, size = sized[int(draw() * span)]
                return table[int(draw() * size)]

            return pick
        if high is _sre.MAXREPEAT:
            floor = self.min_length

            def count() -> int:
                return low + int(draw() * (max(int(draw() * 4), floor) + 1))
        elif high == low:
            if isinstance(inner, str):
                return inner * low
            count = _constant(low)
        else:
            span = high - low + 1

            def count() -> int:
                return low + int(draw() * span)
        if isinstance(inner, str):
            return lambda: inner * count()
        if chars:
            size = len(chars)
            return lambda: "".join([chars[int(draw() * size)] for _ in range(count())])
        return lambda: "".join([inner() for _ in range(count())])

    def _chars(self, parsed: Any) -> tuple[str, ...] | None:
        """The characters a one-character item (a set, ., a class) draws from, or None."""
        if len(parsed) != 1:
            return None
        op, arg = parsed[0]
        if op is _sre.IN:
            return self._set(arg) or None
        if op is _sre.ANY:
            return _PRINTABLE
        if op is _sre.CATEGORY:
            return tuple(_CATEGORIES.get(arg, "x"))
        if op is _sre.NOT_LITERAL:
            return tuple(c for c in _PRINTABLE if ord(c) != arg)
        return None

    def _set(self, items: list) -> tuple[str, ...]:
        negate = bool(items) and items[0][0] is _sre.NEGATE
        chars: set[str] = set()
        for op, arg in items[1:] if negate else items:
            if op is _sre.LITERAL:
                chars.add(chr(arg))
            elif op is _sre.RANGE:
                chars.update(chr(c) for c in range(arg[0], arg[1] + 1))
            elif op is _sre.CATEGORY:
                chars.update(_CATEGORIES.get(arg, ""))
        if negate:
            chars = set(_PRINTABLE) - chars
        return tuple(sorted(chars))


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value
