"""Two transforms and a predicate whose failures and drops the task runtimes' tests provoke by record."""

from __future__ import annotations

from typing import ClassVar

from connectd.transforms.chain import TransformationChain


class Upper:
    """Upper-cases a string value; the value "boom" fails it, "drop" drops the record."""

    def configure(self, settings):
        pass

    def apply(self, record):
        if record.value == "boom":
            raise ValueError("no boom")
        return None if record.value == "drop" else record.new_record(value=record.value.upper())


class Suffixed:
    """Appends "!" to the value (each value it is given kept in :attr:`calls`); the key "drop"
    drops the record, "bad" fails it."""

    calls: ClassVar[list] = []

    def configure(self, settings):
        pass

    def apply(self, record):
        Suffixed.calls.append(record.value)
        if record.key == "drop":
            return None
        if record.key == "bad":
            raise KeyError("bad key")
        return record.new_record(value=record.value + "!")


class KeyIs:
    """A predicate: the record's key is the ``key`` setting."""

    def configure(self, settings):
        self.key = settings["key"]

    def test(self, record):
        return record.key == self.key


def two_stages() -> TransformationChain:
    """``Upper`` on every record but those keyed "skip-up" (a negated predicate), then ``Suffixed``."""
    Suffixed.calls = []
    return TransformationChain({"transforms": "up,suffix", "transforms.up.type": Upper,
                                "transforms.up.predicate": "skipUp", "transforms.up.negate": "true",
                                "transforms.suffix.type": Suffixed, "predicates": "skipUp",
                                "predicates.skipUp.type": KeyIs, "predicates.skipUp.key": "skip-up"}, None)
