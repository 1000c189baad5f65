"""A source connector's exactly-once keys against the worker's exactly.once.source.support and what the
connector declares (connectd.config.connector.exactly_once_problems; the delivery itself is in
tests/integration/test_source_query.py and test_exactly_once_cluster.py)."""

from __future__ import annotations

import pytest

from connectd import ConnectorTransactionBoundaries, ExactlyOnceSupport
from connectd.config.connector import exactly_once_problems
from connectd.herder import validate_connector
from connectd.plugins import get_registry


def problems(values, enabled, answer=ExactlyOnceSupport.SUPPORTED):
    asked = []

    def support():
        asked.append(True)
        if isinstance(answer, Exception):
            raise answer
        return answer

    found = [(p.key, p.message, p.is_error) for p in exactly_once_problems(values, enabled=enabled, support=support)]
    return found, bool(asked)


def test_required_with_the_worker_enabled_asks_the_connector_and_a_supported_one_passes():
    assert problems({"exactly.once.support": "required"}, enabled=True) == ([], True)


@pytest.mark.parametrize(("answer", "said"), [(ExactlyOnceSupport.UNSUPPORTED, "UNSUPPORTED"), (None, "None"),
                                              (RuntimeError("no"), "an error (RuntimeError('no'))")])
def test_required_against_a_connector_that_does_not_declare_support_is_refused(answer, said):
    found, asked = problems({"exactly.once.support": "REQUIRED"}, enabled=True, answer=answer)
    assert asked and found == [("exactly.once.support", "exactly-once delivery is required, and the connector does "
                                f"not declare it with this config (exactly_once_support() answered {said})", True)]


def test_required_on_a_worker_without_exactly_once_is_refused_without_asking_the_connector():
    found, asked = problems({"exactly.once.support": "required"}, enabled=False)
    assert not asked and [key for key, _, error in found if error] == ["exactly.once.support"]


def test_requested_asks_nothing_of_the_connector_either_way():
    for enabled in (True, False):
        assert problems({"exactly.once.support": "requested"}, enabled=enabled) == ([], False)


@pytest.mark.parametrize(("answer", "said"), [
    (ConnectorTransactionBoundaries.SUPPORTED, None),
    (ConnectorTransactionBoundaries.UNSUPPORTED, "UNSUPPORTED"),
    (RuntimeError("no"), "an error (RuntimeError('no'))"),
])
def test_connector_defined_boundaries_need_the_connector_to_say_it_defines_them(answer, said):
    def boundaries():
        if isinstance(answer, Exception):
            raise answer
        return answer

    found = [(p.key, p.message, p.is_error) for p in exactly_once_problems(
        {"transaction.boundary": "Connector"}, enabled=True, boundaries=boundaries)]
    assert found == ([] if said is None else [(
        "transaction.boundary", "the connector does not define its own transaction boundaries with this config "
        f"(can_define_transaction_boundaries() answered {said}); expected poll or interval", True)])
    without = [(p.key, p.is_error) for p in exactly_once_problems({"transaction.boundary": "connector"},
                                                                   enabled=False, boundaries=boundaries)]
    assert without == [("transaction.boundary", False)]  # no effect without exactly-once: a warning


def test_an_interval_boundary_is_accepted_and_its_interval_has_no_effect_with_another_boundary():
    assert problems({"transaction.boundary": "interval", "transaction.boundary.interval.ms": "100"},
                    enabled=True) == ([], False)
    assert problems({"transaction.boundary": "interval"}, enabled=True) == ([], False)  # offset.flush.interval.ms
    found, _ = problems({"transaction.boundary.interval.ms": "100"}, enabled=True)
    assert found == [("transaction.boundary.interval.ms", "has no effect: transaction.boundary is not interval",
                      False)]


def test_transaction_boundary_poll_is_what_an_enabled_worker_does_and_has_no_effect_on_another():
    assert problems({"transaction.boundary": "poll"}, enabled=True) == ([], False)
    found, _ = problems({"transaction.boundary": "poll"}, enabled=False)
    assert found == [("transaction.boundary", "has no effect: this worker's exactly.once.source.support is not "
                      "enabled", False)]


@pytest.mark.parametrize(("extra", "refused"), [({"file": "/tmp/in.txt"}, False), ({}, True)])
def test_file_stream_source_declares_support_for_a_file_not_for_standard_input(extra, refused):
    config = {"name": "eos", "connector.class": "FileStreamSource", "topic": "t", "exactly.once.support": "required",
              **extra}
    found, _ = validate_connector(config, get_registry(), exactly_once=True)
    assert [p.key for p in found if p.is_error] == (["exactly.once.support"] if refused else [])


@pytest.mark.parametrize("connector", ["DatagenConnector", "io.debezium.connector.mysql.MySqlConnector"])
def test_the_built_in_datagen_and_cdc_sources_declare_support(connector):

    cls = get_registry().find_class("connector", connector)
    assert cls().exactly_once_support({}) is ExactlyOnceSupport.SUPPORTED
