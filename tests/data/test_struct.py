"""Struct: put/get, validation errors, equality."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectd.data import DataError, Schema, SchemaBuilder, Struct
from connectd.data.schema import validate_value

from ._strategies import json_like, logical_schemas, names, primitive_schemas, schemas, values

ADDRESS = SchemaBuilder.struct().field("street", Schema.STRING).field("zip", Schema.OPTIONAL_STRING).build()
PERSON = (
    SchemaBuilder.struct()
    .name("com.example.Person")
    .field("name", Schema.STRING)
    .field("age", SchemaBuilder.int32().default_value(0).build())
    .field("address", ADDRESS)
    .field("emails", SchemaBuilder.array(Schema.STRING).optional().build())
    .build()
)


def person(**values: object) -> Struct:
    return Struct(PERSON, {"name": "Ada", "address": Struct(ADDRESS, {"street": "Main"}), **values})


def test_put_get_and_defaults():
    p = person()
    assert p.get("name") == "Ada" and p["name"] == "Ada"
    assert p.get("age") == 0 and p.get_without_default("age") is None
    assert p.get(PERSON.field("age")) == 0
    p["age"] = 36
    assert p.put("emails", ["a@b"]) is p
    assert p.get("age") == 36 and p.get("emails") == ["a@b"]
    assert p.to_dict() == {"name": "Ada", "age": 36, "address": Struct(ADDRESS, {"street": "Main"}), "emails": ["a@b"]}
    p.validate()


def test_put_checks_each_value():
    with pytest.raises(DataError, match="^age: expected int for schema type int32, got str '36'"):
        person(age="36")
    with pytest.raises(DataError, match="^name: null used for required field, schema type string"):
        person().put("name", None)
    with pytest.raises(DataError, match=r"^emails\[1\]: expected str"):
        person(emails=["a", 2])
    with pytest.raises(DataError, match="nickname is not a valid field name"):
        person().put("nickname", "x")
    with pytest.raises(DataError, match="Struct schemas do not match"):
        person(address=Struct(SchemaBuilder.struct().field("street", Schema.STRING).name("other").build(), {"street": "x"}))
    with pytest.raises(DataError, match="^address.street: null used for required field"):
        person(address=Struct(ADDRESS))


def test_none_is_allowed_for_fields_with_defaults():
    person().put("age", None).validate()


def test_validate_reports_missing_required_fields():
    with pytest.raises(DataError, match="^name: null used for required field"):
        Struct(PERSON).validate()
    p = Struct(PERSON, {"name": "x"})
    with pytest.raises(DataError, match="^address: null used for required field, schema type struct"):
        p.validate()


def test_nested_validation_path():
    broken = Struct._unchecked(ADDRESS, [None, None])
    with pytest.raises(DataError, match="^address.street: null used for required field"):
        Struct._unchecked(PERSON, ["n", None, broken, None]).validate()


def test_a_struct_made_whole_is_trusted_and_one_filled_in_is_checked_on_every_use():
    # The checker is compiled at a schema's second use: three rounds cover both paths.
    whole = Struct.from_field_values(ADDRESS, ["Main", None])
    filled_in = Struct._unchecked(ADDRESS, [None, None])
    for _ in range(3):
        made = Struct.from_field_values(PERSON, ["n", None, whole, None])
        made.validate()
        assert made.get("address") is whole
        with pytest.raises(DataError, match="^address.street: null used for required field"):
            Struct.from_field_values(PERSON, ["n", None, filled_in, None])
    changed = Struct.from_field_values(ADDRESS, ["Main", None]).put("zip", "1")  # put() makes its values a list
    Struct.from_field_values(PERSON, ["n", None, changed, None]).validate()


def test_a_struct_made_whole_is_checked_again_where_a_list_inside_may_have_changed():
    wrapper = SchemaBuilder.struct().field("person", PERSON).build()
    for _ in range(3):
        emails = ["a@b"]
        whole = Struct.from_field_values(PERSON, ["n", None, Struct.from_field_values(ADDRESS, ["Main", None]), emails])
        emails.append(7)  # the struct holds this very list
        with pytest.raises(DataError, match=r"^emails\[1\]: expected str"):
            whole.validate()
        with pytest.raises(DataError, match=r"^person.emails\[1\]: expected str"):
            Struct.from_field_values(wrapper, [whole])


def test_fields_of_another_schema_are_rejected():
    other = SchemaBuilder.struct().field("x", Schema.INT8).build()
    with pytest.raises(DataError, match="x is not a field of this struct's schema"):
        person().put(other.field("x"), 1)


def test_not_a_struct_schema():
    with pytest.raises(DataError, match="Not a struct schema"):
        Struct(Schema.STRING)


def test_equality():
    assert person() == person()
    assert person() != person(age=1)
    assert person() != Struct(ADDRESS, {"street": "Main"})
    equal_schema = SchemaBuilder.struct().field("street", Schema.STRING).field("zip", Schema.OPTIONAL_STRING).build()
    assert Struct(ADDRESS, {"street": "a"}) == Struct(equal_schema, {"street": "a"})
    with pytest.raises(TypeError):
        hash(person())


def test_repr_is_javas_to_string():
    assert repr(person(age=3, emails=["a", "b"])) == "Struct{name=Ada,age=3,address=Struct{street=Main},emails=[a, b]}"


def test_pickles():
    p = person(emails=["x"])
    assert pickle.loads(pickle.dumps(p)) == p


# --- building from a list of values (the transforms' fast path) ---------------------------

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JUNK = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4) | st.binary(max_size=2) | json_like


@st.composite
def struct_and_values(draw) -> tuple[Schema, list[object]]:
    """A struct schema and one value per field: fitting, None, or junk."""
    field_schemas = st.one_of(primitive_schemas(), logical_schemas(), schemas(max_leaves=4))
    fields = draw(st.lists(st.tuples(names, field_schemas), max_size=5, unique_by=lambda f: f[0]))
    builder = SchemaBuilder.struct()
    for name, field_schema in fields:
        builder.field(name, field_schema)
    schema = builder.build()
    chosen = [draw(st.one_of(values(f.schema), values(f.schema), st.none(), JUNK)) for f in schema.fields]
    return schema, chosen


def put_one_by_one(schema: Schema, field_values: list[object]) -> Struct:
    struct = Struct(schema)
    for field, value in zip(schema.fields, field_values):
        struct.put(field, value)
    return struct


def outcome(call):
    try:
        return "ok", call()
    except DataError as exc:
        return "error", str(exc)


@PROPERTY
@given(struct_and_values())
def test_from_field_values_is_putting_them_one_by_one(case):
    schema, field_values = case
    expected = outcome(lambda: put_one_by_one(schema, field_values))
    got = outcome(lambda: Struct.from_field_values(schema, field_values))
    assert got[0] == expected[0] and got[1] == expected[1]
    if got[0] == "ok":
        assert [type(v) for v in got[1].field_values(defaults=False)] == [type(v) for v in field_values]


@PROPERTY
@given(struct_and_values())
def test_validate_decides_as_before(case):
    schema, field_values = case
    struct = Struct._unchecked(schema, list(field_values))

    def one_field_at_a_time() -> None:  # Struct.validate before its fast path
        for field, value in zip(schema.fields, field_values):
            try:
                validate_value(field.schema, value)
            except DataError as exc:
                raise exc.at(field.name) from None

    assert outcome(struct.validate) == outcome(one_field_at_a_time)


def test_from_field_values_checks_the_schema_and_the_count():
    with pytest.raises(DataError, match="Not a struct schema"):
        Struct.from_field_values(Schema.STRING, [])
    with pytest.raises(DataError, match="expected 2 field values, got 1"):
        Struct.from_field_values(ADDRESS, ["Main"])
    with pytest.raises(DataError, match="^zip: expected str for schema type string, got int 1"):
        Struct.from_field_values(ADDRESS, ["Main", 1])


def test_a_struct_from_values_keeps_its_own_copy_and_can_be_changed():
    given_values = ["Main", None]
    street = Struct.from_field_values(ADDRESS, given_values)
    given_values[0] = "Other"
    assert street.get("street") == "Main"
    street.put("zip", "N1").put("street", "High")
    assert street == Struct(ADDRESS, {"street": "High", "zip": "N1"})
    assert Struct.from_field_values(ADDRESS, ("Main", None)) == Struct(ADDRESS, {"street": "Main"})
    assert pickle.loads(pickle.dumps(street)) == street
    with pytest.raises(DataError, match="^street: null used for required field"):
        Struct.from_field_values(ADDRESS, ["Main", None]).put("street", None)


def test_field_values_with_and_without_defaults():
    p = person(age=None, emails=["a"])
    assert p.field_values() == [p.get(f) for f in PERSON.fields] == ["Ada", 0, p.get("address"), ["a"]]
    assert p.field_values(defaults=False) == [p.get_without_default(f) for f in PERSON.fields]
    copied = p.field_values()
    copied[0] = "changed"
    assert p.get("name") == "Ada"



def test_the_first_and_later_uses_of_a_schema_check_alike():
    for first in ("short", "long", "wrong", "right"):
        fresh = SchemaBuilder.struct().field("a", Schema.INT32).field("b", Schema.OPTIONAL_STRING).build()
        if first == "long":
            with pytest.raises(DataError, match="expected 2 field values, got 3"):
                Struct.from_field_values(fresh, [1, "x", "y"])
        elif first == "wrong":
            with pytest.raises(DataError, match="^a: expected int"):
                Struct.from_field_values(fresh, ["1", "x"])
        elif first == "right":
            Struct.from_field_values(fresh, [1, "x"]).validate()
        for _ in range(3):  # the first use checks field by field, later ones compiled
            with pytest.raises(DataError, match="expected 2 field values, got 1"):
                Struct.from_field_values(fresh, [1])
            with pytest.raises(DataError, match="expected 2 field values, got 3"):
                Struct.from_field_values(fresh, [1, "x", "y"])
            with pytest.raises(DataError, match="^a: expected int"):
                Struct.from_field_values(fresh, ["1", "x"])
            assert Struct.from_field_values(fresh, [1, None]) == Struct(fresh, {"a": 1})
