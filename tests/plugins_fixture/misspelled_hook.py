"""A plugin whose hook name is misspelled; loading it must fail at start-up."""

from connectd import hookimpl


@hookimpl
def register_conectors(register):  # sic
    raise AssertionError("never called")
