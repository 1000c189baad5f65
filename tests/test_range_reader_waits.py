"""RangeReader's longer fetch waits when a broker answers short ones empty (pure logic: a fake
consumer stands for librdkafka's; tests/integration/test_range_reader.py reads a real slow broker)."""

from __future__ import annotations

import pytest

from connectd.runtime.kafka import consumers
from connectd.runtime.kafka.consumers import RangeReader


class Message:
    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self._where = (topic, partition, offset)

    def error(self): return None
    def topic(self): return self._where[0]
    def partition(self): return self._where[1]
    def offset(self): return self._where[2]
    def timestamp(self): return (1, 1000 + self._where[2])
    def headers(self): return None
    def key(self): return None
    def value(self): return f"v{self._where[2]}".encode()


class SlowBroker:
    """Partitions of *size* records whose fetches answer empty unless they wait *answers_at* ms."""

    def __init__(self, size: int, answers_at: int) -> None:
        self.size, self.answers_at = size, answers_at
        self.made: list[FakeConsumer] = []


class FakeConsumer:
    def __init__(self, broker: SlowBroker, settings: dict) -> None:
        self.broker, self.wait = broker, int(settings["fetch.wait.max.ms"])
        self.positions: dict[tuple[str, int], int] = {}
        self.closed = False
        broker.made.append(self)

    def assign(self, partitions) -> None:
        self.positions = {(tp.topic, tp.partition): tp.offset for tp in partitions}

    def unassign(self) -> None:
        self.positions = {}

    def close(self) -> None:
        self.closed = True

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        assert not self.closed
        if self.wait < self.broker.answers_at:
            return []
        out = []
        for tp, offset in self.positions.items():
            while offset < self.broker.size and len(out) < num_messages:
                out.append(Message(*tp, offset))
                offset += 1
            self.positions[tp] = offset
        return out


@pytest.fixture
def broker(monkeypatch):
    broker = SlowBroker(size=50, answers_at=1000)
    monkeypatch.setattr(consumers, "Consumer", lambda settings: FakeConsumer(broker, settings))
    # Each wait tried for 20 ms instead of seconds.
    monkeypatch.setattr(consumers, "FETCH_WAITS_FIRST_S", 0.02)
    monkeypatch.setattr(consumers, "FETCH_WAITS", ((10, 0.02), (100, 0.02), (1000, 0.02), (5000, None)))
    return broker


def offsets(reader: RangeReader, ranges) -> list[tuple[int, int]]:
    return [(row[1], row[2]) for chunk in reader.read(ranges) for row in chunk]


def test_a_read_answered_empty_goes_on_from_where_it_was_with_longer_waits(broker):
    settings = {"fetch.wait.max.ms": 10}
    own = consumers.Consumer(settings)
    reader = RangeReader(own, timeout=5, settings=settings)
    read = offsets(reader, [("t", 0, 0, 30), ("t", 1, 5, 10)])
    assert read == [(0, o) for o in range(30)] + [(1, o) for o in range(5, 10)]
    assert [c.wait for c in broker.made] == [10, 100, 1000]
    assert broker.made[1].closed and not own.closed and own.positions == {}  # its own stops fetching
    assert reader.consumer is broker.made[2]
    # The next range goes on with the longer wait while it is recent.
    assert offsets(reader, [("t", 0, 30, 40)]) == [(0, o) for o in range(30, 40)]
    reader.close()
    assert broker.made[2].closed and reader.consumer is own


def test_the_reader_goes_back_to_its_own_consumer_a_while_after_it_lengthened_the_wait(broker, monkeypatch):
    settings = {"fetch.wait.max.ms": 10}
    own = consumers.Consumer(settings)
    reader = RangeReader(own, timeout=5, settings=settings)
    assert offsets(reader, [("t", 0, 0, 20)]) == [(0, o) for o in range(20)]
    lengthened = reader.consumer
    monkeypatch.setattr(consumers, "LENGTHENED_FOR_S", 0.0)
    broker.answers_at = 10  # the broker is quick again
    assert offsets(reader, [("t", 0, 20, 30)]) == [(0, o) for o in range(20, 30)]
    assert reader.consumer is own and lengthened.closed and own.positions == {("t", 0): 30}


def test_a_reader_without_settings_or_with_long_waits_already_never_lengthens_them(broker):
    broker.answers_at = 5000
    for settings in (None, {"fetch.wait.max.ms": 5000}):
        own = FakeConsumer(broker, {"fetch.wait.max.ms": 10 if settings is None else 5000})
        reader = RangeReader(own, timeout=0.2, settings=settings)
        if settings is None:
            with pytest.raises(TimeoutError, match=r"t\[0\] up to 9"):
                offsets(reader, [("t", 0, 0, 10)])
        else:
            assert offsets(reader, [("t", 0, 0, 10)]) == [(0, o) for o in range(10)]
        assert reader.consumer is own
    assert len(broker.made) == 2
