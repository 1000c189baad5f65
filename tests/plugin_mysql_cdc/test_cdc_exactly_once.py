"""The MariaDB CDC source delivering exactly once (issue 13): a distributed worker with
``exactly.once.source.support=enabled`` SIGKILLed (with its Spark JVM and the task's process) while
rows are inserted, then started again: a read_committed consumer sees every row's change once —
the binlog position is stored in the same transaction as the events it follows."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ETC = Path(__file__).resolve().parents[2] / "etc" / "connectors"
ROWS = 1500


class Inserter(threading.Thread):
    """Inserts rows n = 0 … ROWS - 1 into ``events``, each its own transaction."""

    def __init__(self, server, database: str) -> None:
        super().__init__(name="mariadb-inserter", daemon=True)
        self.server, self.database = server, database
        self.done = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            connection = self.server.connect(self.database)
            with connection.cursor() as cursor:
                for n in range(ROWS):
                    cursor.execute("INSERT INTO events (n) VALUES (%s)", (n,))
                    self.done = n + 1
                    time.sleep(0.005)
            connection.close()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            self.error = error


def test_a_worker_killed_mid_stream_and_started_again_every_change_is_seen_once(
        binlog_mariadb, database, cluster, consume_records):
    binlog_mariadb.execute(f"CREATE TABLE {database}.events (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL)")
    workers = cluster(**{"exactly.once.source.support": "enabled"})
    workers.start("w1")
    workers.wait_up("w1")
    source = json.loads((ETC / "mariadb-cdc.json").read_text())
    source["config"].update({"database.port": str(binlog_mariadb.port), "database.include.list": database,
                             "database.server.id": "5402", "poll.interval.ms": "200",
                             "exactly.once.support": "required"})
    code, answer = workers.call("w1", "POST", "/connectors", source)
    assert code == 201, answer
    topic = f"cdc.{database}.events"
    inserter = Inserter(binlog_mariadb, database)
    inserter.start()
    consume_records(topic, 300, partitions=1, timeout=180)  # streaming
    workers.kill("w1")
    workers.start("w1")
    workers.wait_up("w1")
    inserter.join(120)
    assert inserter.error is None and inserter.done == ROWS, inserter.error
    changes = consume_records(topic, ROWS, partitions=1, timeout=240, linger=3.0)
    seen = Counter(json.loads(m.value())["payload"]["after"]["n"] for m in changes)
    assert set(seen) == set(range(ROWS))
    assert [n for n, times in seen.items() if times > 1] == []
