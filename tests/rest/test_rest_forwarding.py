"""A write a follower cannot make: forwarded to the leader, unless ``?forward=false`` (Kafka's hidden parameter)."""

from __future__ import annotations

from connectd.cluster.forwarding import Forwarded
from connectd.errors import NotLeaderError


def test_forward_false_answers_409_instead_of_forwarding(rest, monkeypatch):
    sent = []

    async def forward(herder, url, method, path_qs, body, headers):
        sent.append((url, method, path_qs))
        return Forwarded(202, b"", {})

    monkeypatch.setattr("connectd.rest.forwarding.forward", forward)

    async def scenario(http, herder):
        async def follower(name):
            raise NotLeaderError("only the leader may pause a connector", "http://leader:8083")

        herder.pause = follower
        answers = []
        for query in ("?forward=false", "?forward=FALSE", "", "?forward=true"):
            async with http.put(f"/connectors/c/pause{query}") as r:
                answers.append((r.status, await r.json() if r.status == 409 else None))
        return answers

    refused, refused_upper, forwarded, forwarded_true = rest(scenario)
    assert refused == refused_upper == (409, {
        "error_code": 409,
        "message": "Cannot complete request because of a conflicting operation (e.g. worker rebalance): this worker "
                   "is not the leader, and the request asks not to be forwarded (forward=false)"})
    assert forwarded == forwarded_true == (202, None)
    assert sent == [("http://leader:8083", "PUT", "/connectors/c/pause"),
                    ("http://leader:8083", "PUT", "/connectors/c/pause?forward=true")]
