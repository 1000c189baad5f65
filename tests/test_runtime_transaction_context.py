"""A source task's TransactionContext (Kafka's, KIP-618): what it asks, and how the runtime cuts a
poll's records at each request (connectd.connector.TransactionContext.split)."""

from __future__ import annotations

import pytest

from connectd import SourceRecord, TransactionContext


def records(n: int) -> list[SourceRecord]:
    return [SourceRecord(topic="t", value=f"n {i}") for i in range(n)]


def values(parts):
    return [([r.value for r in part], end) for part, end in parts]


def test_without_a_request_a_polls_records_are_one_part_whose_transaction_goes_on():
    assert values(TransactionContext().split(records(3))) == [(["n 0", "n 1", "n 2"], None)]


def test_a_request_through_a_record_cuts_after_it():
    context, polled = TransactionContext(), records(5)
    context.commit_transaction(polled[1])
    context.abort_transaction(polled[3])
    assert values(context.split(polled)) == [(["n 0", "n 1"], "commit"), (["n 2", "n 3"], "abort"), (["n 4"], None)]
    assert values(context.split(polled)) == [(["n 0", "n 1", "n 2", "n 3", "n 4"], None)]  # each request once


def test_a_request_for_the_batch_ends_the_next_poll_that_returns_records():
    context = TransactionContext()
    context.commit_transaction()
    assert context.split([]) == []  # nothing polled: the request waits
    assert values(context.split(records(2))) == [(["n 0", "n 1"], "commit")]
    context.abort_transaction()
    polled = records(2)
    context.commit_transaction(polled[1])
    # the record's request ends its part; the batch's ends what follows it, nothing here
    assert values(context.split(polled)) == [(["n 0", "n 1"], "commit"), ([], "abort")]


def test_a_commit_and_an_abort_for_the_same_records_is_an_error_as_in_kafka():
    context, polled = TransactionContext(), records(1)
    context.commit_transaction()
    with pytest.raises(ValueError, match="Both an abort and a commit were requested for the same batch"):
        context.abort_transaction()
    context.abort_transaction(polled[0])
    with pytest.raises(ValueError, match="Both an abort and a commit were requested for the same record"):
        context.commit_transaction(polled[0])
