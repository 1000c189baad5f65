"""The errors raised for data that does not fit its schema, cannot be converted or projected."""

from __future__ import annotations

from connectd.errors import ConnectdError

__all__ = ["DataError", "SchemaProjectorException"]


class DataError(ConnectdError):
    """Data is invalid for its schema, or bytes cannot be converted (Kafka's ``DataException``).

    As the error travels out of nested structs, arrays and maps, each level
    adds where it was (:meth:`at`), so the message names the exact place::

        address.lines[2]: expected str for schema type string, got int

    :param message: what is wrong.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self._path: list[str] = []

    def at(self, segment: str | int) -> DataError:
        """Prefix the location with a field name (``str``) or list index (``int``); returns ``self``."""
        self._path.insert(0, f"[{segment}]" if isinstance(segment, int) else segment)
        return self

    @property
    def path(self) -> str:
        """Where the bad value is, e.g. ``address.lines[2]``; empty at the top level."""
        out = ""
        for segment in self._path:
            out += segment if not out or segment.startswith("[") else "." + segment
        return out

    def __str__(self) -> str:
        path = self.path
        return f"{path}: {self.message}" if path else self.message

    def __reduce__(self):  # keep the class and path when pickled between Spark processes
        return (_rebuild, (self.message, list(self._path), type(self)))


class SchemaProjectorException(DataError):
    """A value cannot be projected from its schema to another (Kafka's ``SchemaProjectorException``).

    Raised by :func:`connectd.data.schema_projector.project` for incompatible schemas and for
    required target fields the source lacks; catch :class:`DataError` to catch it too.
    """


def _rebuild(message: str, path: list[str], cls: type[DataError] = DataError) -> DataError:
    error = cls(message)
    error._path = path
    return error
