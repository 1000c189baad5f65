"""``Filter``: drop records (with a predicate: the records that match, or with negate those that don't)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from connectd.config.definitions import ConfigDef
from connectd.transforms.base import Transformation

if TYPE_CHECKING:
    from connectd.data import ConnectRecord

__all__ = ["Filter"]


class Filter(Transformation):
    """Drop every record it sees (Kafka's ``org.apache.kafka.connect.transforms.Filter``).

    Meant to be made conditional: ``transforms.<alias>.predicate`` drops only
    the records that match the predicate, ``transforms.<alias>.negate=true``
    only those that don't.
    """

    config_def = ConfigDef()

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        return None

    def apply_batch(self, records: list[ConnectRecord]) -> list[ConnectRecord]:
        return []
