"""A sink connector's partitions shared among its tasks (``assign_partitions``): whole, balanced, stable."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from connectd.connector import TopicPartition
from connectd.runtime.sink.task import assign_partitions

topics = st.dictionaries(st.text("abcxyz-._", min_size=1, max_size=12), st.integers(1, 40), min_size=1, max_size=6)


def _partitions(sizes: dict[str, int]) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for topic, count in sizes.items() for p in range(count)}


@settings(max_examples=200)
@given(topics, st.integers(1, 12))
def test_every_partition_has_exactly_one_task_and_each_topic_is_spread_evenly(sizes, tasks):
    partitions = _partitions(sizes)
    shares = [assign_partitions(partitions, task, tasks) for task in range(tasks)]
    assert sorted(tp for share in shares for tp in share) == sorted(partitions)
    for topic in sizes:
        load = Counter(task for task, share in enumerate(shares) for tp in share if tp.topic == topic)
        counts = [load.get(task, 0) for task in range(tasks)]
        assert max(counts) - min(counts) <= 1, (topic, counts)


@settings(max_examples=200)
@given(topics, topics, st.integers(1, 12))
def test_partitions_that_appear_never_move_those_a_task_has(before, added, tasks):
    """A topic created late, grown, or a new match of topics.regex: no partition changes task, so
    tasks that learn of it at different moments never read one partition at once."""
    old = _partitions(before)
    grown = old | _partitions({topic: before.get(topic, 0) + more for topic, more in added.items()})
    for task in range(tasks):
        assert set(assign_partitions(old, task, tasks)) <= set(assign_partitions(grown, task, tasks))


def test_six_partitions_over_six_tasks_give_each_task_one():
    partitions = {TopicPartition("orders", p) for p in range(6)}
    assert [len(assign_partitions(partitions, task, 6)) for task in range(6)] == [1] * 6
