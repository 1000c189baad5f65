"""Source rows as one Arrow batch (what the source reader hands Spark)."""

from __future__ import annotations

from connectd.runtime.kafka.producing import write_arrow_batch


def test_rows_round_trip_through_an_arrow_batch_in_write_schema_order():
    rows = [
        ("t", None, b"k", b"v", 1_700_000_000_000, [("h", b"x"), ("n", None)], '{"f": "a"}', '{"p": 1}'),
        (None, None, None, None, None, None, '{"f": "a"}', '{"p": 2}'),  # offset-only: its record was dropped
        ("u", 3, None, None, None, [], None, None),
    ]
    batch = write_arrow_batch(rows)
    assert batch.schema.names == ["topic", "partition", "key", "value", "timestamp", "headers",
                                  "source_partition", "source_offset"]
    back = list(zip(*(column.to_pylist() for column in batch.columns), strict=True))
    assert back[1] == rows[1] and back[2] == rows[2]
    assert back[0][:5] == rows[0][:5] and back[0][6:] == rows[0][6:]
    assert back[0][5] == [{"key": "h", "value": b"x"}, {"key": "n", "value": None}]


def test_no_rows_make_an_empty_batch():
    assert write_arrow_batch([]).num_rows == 0
