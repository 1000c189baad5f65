"""Records per second per core: JSON in → three SMTs → JSON out, in batch form.

The work a sink or source task does on every record inside Spark, without
the Kafka I/O: JsonConverter (schemas on) decodes a batch of record values,
InsertField$Value adds the topic, ReplaceField$Value drops and renames
fields, RegexRouter renames the topic, and JsonConverter encodes the batch
again. One process, one thread, so the figure is per core.

``--layout python`` writes the input envelopes as Python's ``json.dumps``
does (a space after each separator) instead of Kafka's compact layout.

Run:  .venv/bin/python bench/transform_pipeline.py [--records 200000] [--batch 1000] [--layout compact|python]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import datetime, timezone

from connectd.data import JsonConverter, SinkRecord
from connectd.plugins import get_registry
from connectd.transforms.chain import TransformationChain

CONNECTOR = {
    "transforms": "insert,replace,route",
    "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.insert.topic.field": "source_topic",
    "transforms.replace.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
    "transforms.replace.exclude": "internal_note",
    "transforms.replace.renames": "user_id:userId",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "orders-(.*)",
    "transforms.route.replacement": "processed-$1",
}


def sample_payloads(count: int, layout: str = "compact") -> list[bytes]:
    """Kafka Connect JSON records whose payload is about 200 bytes, laid out as Kafka (or json.dumps) writes them."""
    separators = (",", ":") if layout == "compact" else None
    encoder = JsonConverter()
    encoder.configure({"schemas.enable": "false"}, False)
    envelope_schema = {
        "type": "struct",
        "fields": [
            {"type": "int64", "optional": False, "field": "order_id"},
            {"type": "string", "optional": False, "field": "user_id"},
            {"type": "string", "optional": False, "field": "item"},
            {"type": "int32", "optional": False, "field": "quantity"},
            {"type": "double", "optional": False, "field": "price"},
            {"type": "string", "optional": True, "field": "internal_note"},
            {"type": "string", "optional": False, "field": "address"},
        ],
        "optional": False,
        "name": "bench.Order",
    }
    payloads = []
    for i in range(count):
        payload = {
            "order_id": 1_000_000 + i,
            "user_id": f"user-{i % 5000:05d}",
            "item": f"item-{i % 977}-deluxe-edition",
            "quantity": i % 7 + 1,
            "price": round(3.5 + (i % 100) * 0.25, 2),
            "internal_note": "fragile; handle with care",
            "address": f"{i % 900 + 100} Main Street, Springfield, Apt {i % 40}",
        }
        payloads.append(json.dumps({"schema": envelope_schema, "payload": payload}, separators=separators).encode())
    return payloads


def run(records: int, batch: int, rounds: int, layout: str = "compact") -> dict:
    registry = get_registry()
    decoder, encoder = JsonConverter(), JsonConverter()
    decoder.configure({"schemas.enable": "true"}, False)
    encoder.configure({"schemas.enable": "true"}, False)
    chain = TransformationChain(CONNECTOR, registry.find_class)
    # A tuple, not a list: a tuple of bytes leaves the garbage collector's lists at its
    # first collection, so full collections do not walk every input of the whole run and
    # the per-record figure does not depend on --records.
    payloads = tuple(sample_payloads(records, layout))
    payload_bytes = statistics.mean(len(json.dumps(json.loads(p)["payload"], separators=(",", ":"))) for p in payloads[:1000])
    topic = "orders-eu"

    def one_pass() -> tuple[float, int, int]:
        produced = 0
        out_bytes = 0
        start = time.perf_counter()
        for first in range(0, records, batch):
            chunk = payloads[first:first + batch]
            decoded = decoder.to_connect_batch(topic, chunk)
            sink_records = [
                SinkRecord(topic=topic, kafka_partition=0, key_schema=None, key=None,
                           value_schema=sv.schema, value=sv.value, kafka_offset=first + n, timestamp=None)
                for n, sv in enumerate(decoded)
            ]
            transformed = chain.apply_batch(sink_records)
            by_topic: dict[str, list] = {}
            for record in transformed:
                by_topic.setdefault(record.topic, []).append((record.value_schema, record.value))
            for out_topic, pairs in by_topic.items():
                encoded = encoder.from_connect_batch(out_topic, pairs)
                produced += len(encoded)
                out_bytes += sum(len(b) for b in encoded if b is not None)
        return time.perf_counter() - start, produced, out_bytes

    one_pass()  # warm caches (schema cache, SMT schema-update cache)
    timings = []
    for _ in range(rounds):
        seconds, produced, out_bytes = one_pass()
        assert produced == records
        timings.append(seconds)
    best = min(timings)
    return {
        "records": records,
        "batch": batch,
        "rounds": rounds,
        "layout": layout,
        "payload_bytes_mean": round(payload_bytes),
        "input_bytes_mean": round(statistics.mean(len(p) for p in payloads)),
        "records_per_second_best": round(records / best),
        "records_per_second_median": round(records / statistics.median(timings)),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layout", choices=("compact", "python"), default="compact")
    args = parser.parse_args()
    print(json.dumps(run(args.records, args.batch, args.rounds, args.layout), indent=2))


if __name__ == "__main__":
    main()
