"""Struct: put/get, validation errors, equality."""

from __future__ import annotations

import pickle

import pytest

from connectd.data import DataError, Schema, SchemaBuilder, Struct

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
