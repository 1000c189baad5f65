"""How many records one put() gets: Kafka Connect's max.poll.records, the connector's override first."""

from __future__ import annotations

import pytest

from connectd.config.worker import WorkerConfig
from connectd.errors import ConfigError
from connectd.runtime.assembly import max_put_records

BASE = {"bootstrap.servers": "127.0.0.1:9092", "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": "/tmp/connectd-test.offsets"}


def worker(**settings: str) -> WorkerConfig:
    return WorkerConfig({**BASE, **settings}, "standalone", source="worker.properties")


@pytest.mark.parametrize(("worker_settings", "connector", "expected"), [
    ({}, {}, 500),
    ({"consumer.max.poll.records": "200"}, {}, 200),
    ({"consumer.max.poll.records": "200"}, {"consumer.override.max.poll.records": "7"}, 7),
    ({}, {"consumer.override.max.poll.records": " 50 "}, 50),
])
def test_the_connectors_override_wins_over_the_workers_setting(worker_settings, connector, expected):
    assert max_put_records(worker(**worker_settings), connector) == expected


@pytest.mark.parametrize(("worker_settings", "connector", "named"), [
    ({}, {"consumer.override.max.poll.records": "lots"}, "consumer.override.max.poll.records='lots'"),
    ({"consumer.max.poll.records": "0"}, {}, "consumer.max.poll.records='0'"),
])
def test_a_bad_bound_is_a_config_error_naming_the_key(worker_settings, connector, named):
    with pytest.raises(ConfigError, match=named + ": expected a positive integer"):
        max_put_records(worker(**worker_settings), connector)
