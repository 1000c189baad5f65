"""The built-in quickstarts: kafka-connect-datagen's quickstart names, each an annotated Avro schema and a key field.

The schemas describe the same records as Confluent's (record namespace
``ksql``, the same fields, types, value ranges, patterns and key fields), so
ksqlDB tutorials written against them work unchanged. connectd ships three of
Confluent's quickstarts; for another, point ``schema.filename`` at its
``.avro`` file from kafka-connect-datagen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["QUICKSTARTS", "Quickstart"]

# 2017-02-21 … 2018-02-22 in ms, the span Confluent's time fields are drawn from.
_TIMES = {"range": {"min": 1487715775521, "max": 1519273364600}}


def _string(**props: Any) -> dict[str, Any]:
    return {"type": "string", "arg.properties": props}


USERS = {
    "type": "record", "namespace": "ksql", "name": "users",
    "fields": [
        {"name": "registertime", "type": {"type": "long", "arg.properties": _TIMES}},
        {"name": "userid", "type": _string(regex="User_[1-9]")},
        {"name": "regionid", "type": _string(regex="Region_[1-9]")},
        {"name": "gender", "type": _string(options=["MALE", "FEMALE", "OTHER"])},
    ],
}

PAGEVIEWS = {
    "type": "record", "namespace": "ksql", "name": "pageviews",
    "fields": [
        # Not a clock: 1, 11, 21, … (and the record key).
        {"name": "viewtime", "type": {"type": "long", "arg.properties": {"iteration": {"start": 1, "step": 10}}}},
        {"name": "userid", "type": _string(regex="User_[1-9]")},
        {"name": "pageid", "type": _string(regex="Page_[1-9][0-9]")},
    ],
}

ORDERS = {
    "type": "record", "namespace": "ksql", "name": "orders",
    "fields": [
        {"name": "ordertime", "type": {"type": "long", "arg.properties": _TIMES}},
        {"name": "orderid", "type": {"type": "int", "arg.properties": {"iteration": {"start": 0}}}},
        {"name": "itemid", "type": _string(regex="Item_[1-9][0-9]{0,2}")},
        {"name": "orderunits", "type": {"type": "double", "arg.properties": {"range": {"min": 0.1, "max": 10.0}}}},
        {"name": "address", "type": {
            "type": "record", "name": "address",
            "fields": [
                {"name": "city", "type": _string(regex="City_[1-9]{0,2}")},
                {"name": "state", "type": _string(regex="State_[1-9]{0,2}")},
                {"name": "zipcode", "type": {"type": "long", "arg.properties": {"range": {"min": 10000, "max": 99999}}}},
            ],
        }},
    ],
}


@dataclass(frozen=True)
class Quickstart:
    """One built-in schema.

    :param name: the ``quickstart`` setting that selects it (any case).
    :param schema: the annotated Avro schema, as decoded JSON.
    :param key_field: the field whose value is the record key unless ``schema.keyfield`` says otherwise.
    """

    name: str
    schema: dict[str, Any]
    key_field: str


QUICKSTARTS: dict[str, Quickstart] = {
    q.name: q
    for q in (
        Quickstart("users", USERS, "userid"),
        Quickstart("pageviews", PAGEVIEWS, "viewtime"),
        Quickstart("orders", ORDERS, "orderid"),
    )
}

#: Confluent's other quickstart names: known, so a config naming one gets a precise answer.
NOT_SHIPPED = (
    "clickstream_codes", "clickstream", "clickstream_users", "ratings", "users_", "stock_trades", "inventory",
    "product", "purchases", "transactions", "stores", "credit_cards", "campaign_finance", "fleet_mgmt_description",
    "fleet_mgmt_location", "fleet_mgmt_sensors", "pizza_orders", "pizza_orders_completed", "pizza_orders_cancelled",
    "insurance_offers", "insurance_customers", "insurance_customer_activity", "gaming_games", "gaming_players",
    "gaming_player_activity", "payroll_employee", "payroll_employee_location", "payroll_bonus", "syslog_logs",
    "device_information", "siem_logs", "shoes", "shoe_customers", "shoe_orders", "shoe_clickstream",
)
