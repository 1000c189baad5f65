"""The built-in quickstarts — users, pageviews, orders — as Connect schemas and value generators.

Field names, types and value ranges follow kafka-connect-datagen's Avro
quickstart schemas (``users.avro``, ``pageviews.avro``,
``orders_schema.avro``, record namespace ``ksql``), so ksqlDB tutorials
written against them work unchanged. One deliberate difference: the time
field (``registertime``, ``viewtime``, ``ordertime``) holds the time the
record was generated, not a random instant in 2017–2018, because it is also
the record's timestamp and years-old timestamps would fall straight out of a
topic's retention.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from connectd import Schema, SchemaBuilder, Struct

__all__ = ["QUICKSTARTS", "Quickstart"]

_INT32_SPAN = 2**31

USERS = (
    SchemaBuilder.struct().name("ksql.users")
    .field("registertime", Schema.INT64)
    .field("userid", Schema.STRING)
    .field("regionid", Schema.STRING)
    .field("gender", Schema.STRING)
    .build()
)

PAGEVIEWS = (
    SchemaBuilder.struct().name("ksql.pageviews")
    .field("viewtime", Schema.INT64)
    .field("userid", Schema.STRING)
    .field("pageid", Schema.STRING)
    .build()
)

ADDRESS = (
    SchemaBuilder.struct().name("ksql.address")
    .field("city", Schema.STRING)
    .field("state", Schema.STRING)
    .field("zipcode", Schema.INT64)
    .build()
)

ORDERS = (
    SchemaBuilder.struct().name("ksql.orders")
    .field("ordertime", Schema.INT64)
    .field("orderid", Schema.INT32)
    .field("itemid", Schema.STRING)
    .field("orderunits", Schema.FLOAT64)
    .field("address", ADDRESS)
    .build()
)

_GENDERS = ("MALE", "FEMALE", "OTHER")


def _digits(rng: random.Random) -> str:
    # Confluent's regex [1-9]{0,2}: "", "7", "42", …
    return "".join(rng.choice("123456789") for _ in range(rng.randint(0, 2)))


def _user(rng: random.Random, iteration: int, time_ms: int) -> Struct:
    return Struct.from_field_values(
        USERS, [time_ms, f"User_{rng.randint(1, 9)}", f"Region_{rng.randint(1, 9)}", rng.choice(_GENDERS)]
    )


def _pageview(rng: random.Random, iteration: int, time_ms: int) -> Struct:
    return Struct.from_field_values(PAGEVIEWS, [time_ms, f"User_{rng.randint(1, 9)}", f"Page_{rng.randint(1, 99)}"])


def _order(rng: random.Random, iteration: int, time_ms: int) -> Struct:
    address = Struct.from_field_values(ADDRESS, [f"City_{_digits(rng)}", f"State_{_digits(rng)}", rng.randint(10000, 99999)])
    return Struct.from_field_values(
        # orderid is an int32: wrap rather than fail after 2^31 orders.
        ORDERS, [time_ms, iteration % _INT32_SPAN, f"Item_{rng.randint(1, 999)}", rng.uniform(0.1, 10.0), address]
    )


@dataclass(frozen=True)
class Quickstart:
    """One built-in schema and how to fill it.

    :param name: the ``quickstart`` setting that selects it.
    :param schema: the value schema.
    :param key_field: the field whose value, as a string, is the record key.
    :param generate: ``generate(rng, iteration, time_ms)`` → a value of *schema*;
        *iteration* counts the task's records from 0.
    """

    name: str
    schema: Schema
    key_field: str
    generate: Callable[[random.Random, int, int], Struct]

    def key(self, value: Struct) -> str:
        return str(value.get(self.key_field))


QUICKSTARTS: dict[str, Quickstart] = {
    q.name: q
    for q in (
        Quickstart("users", USERS, "userid", _user),
        Quickstart("pageviews", PAGEVIEWS, "viewtime", _pageview),
        Quickstart("orders", ORDERS, "orderid", _order),
    )
}
