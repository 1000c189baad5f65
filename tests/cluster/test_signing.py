"""Signed requests between workers: what passes and what is refused, with Kafka Connect's statuses."""

from __future__ import annotations

import base64
from types import SimpleNamespace

import pytest

from connectd.cluster.forwarding import FORWARDED_HEADER, check_signature
from connectd.cluster.signing import (
    ALGORITHM_HEADER,
    CONNECTD_SIGNATURE_HEADER,
    SIGNATURE_HEADER,
    Refusal,
    SessionKey,
    new_session_key,
    sign,
    sign_body,
    verify,
)

ACCEPTED = ["HmacSHA256"]
MISMATCH = Refusal(403, "Internal request contained invalid signature.")


def _request(key: SessionKey, algorithm: str = "HmacSHA256", body: bytes = b'{"a":"b"}') -> dict:
    return {"algorithm": algorithm, "signature": sign(key, algorithm, "POST", "/connectors", body),
            "method": "POST", "path_qs": "/connectors", "body": body}


def test_a_request_signed_with_the_current_key_passes():
    key = new_session_key()
    assert len(key.key) == 32 and key.algorithm == "HmacSHA256"
    assert verify([key], ACCEPTED, **_request(key)) is None


def test_a_request_signed_with_the_previous_key_passes_during_a_rotation():
    old, new = new_session_key(), new_session_key()
    assert verify([new, old], ACCEPTED, **_request(old)) is None
    assert verify([new], ACCEPTED, **_request(old)) == MISMATCH


@pytest.mark.parametrize("change", ["method", "path_qs", "body"])
def test_connectds_signature_does_not_carry_over_to_another_request(change):
    key = new_session_key()
    request = _request(key)
    request[change] = {"method": "DELETE", "path_qs": "/connectors/x", "body": b'{"a":"c"}'}[change]
    assert verify([key], ACCEPTED, **request) == MISMATCH


def test_kafkas_signature_is_of_the_body_alone():
    key = new_session_key()
    signature = sign_body(key, "HmacSHA256", b"[]")
    assert verify([key], ACCEPTED, "HmacSHA256", signature, b"[]") is None
    assert verify([key], ACCEPTED, "HmacSHA256", signature, b"[{}]") == MISMATCH


def test_unsigned_unknown_algorithm_and_no_key_are_refused_as_kafka_refuses_them():
    key = new_session_key()
    assert verify([key], ACCEPTED, **{**_request(key), "signature": None}) == Refusal(
        400, "Internal request missing required signature")
    other = verify([key], ACCEPTED, **_request(key, "HmacSHA512"))
    assert other.status == 400 and "'HmacSHA512' signature algorithm" in other.message
    assert verify([], ACCEPTED, **_request(key)).status == 503


def test_key_sizes_and_expiry():
    assert len(new_session_key("HmacSHA512").key) == 64
    assert len(new_session_key("HmacSHA256", 128).key) == 16
    with pytest.raises(ValueError, match="unsupported key algorithm"):
        new_session_key("MD5")
    key = SessionKey(b"k", "HmacSHA256", creation_timestamp_ms=1_000)
    assert not key.expired(ttl_ms=500, now_ms=1_499) and key.expired(ttl_ms=500, now_ms=1_500)


def _herder(keys: list[SessionKey], protocol: str = "sessioned") -> SimpleNamespace:
    settings = {"connect.protocol": protocol, "inter.worker.verification.algorithms": ACCEPTED}
    # the group runs the protocol asked for (DistributedHerder.signs_requests: only sessioned signs)
    return SimpleNamespace(worker=SimpleNamespace(get=settings.__getitem__), session_keys=lambda: keys,
                           signs_requests=protocol == "sessioned")


def _kafka_signed(key: SessionKey, body: bytes) -> dict[str, str]:
    return {SIGNATURE_HEADER: sign_body(key, "HmacSHA256", body), ALGORITHM_HEADER: "HmacSHA256"}


def test_kafkas_internal_endpoints_require_kafkas_signature():
    key, body = new_session_key(), b'[{"task.class":"x"}]'
    herder = _herder([key])
    for method, path in (("POST", "/connectors/c/tasks"), ("PUT", "/connectors/c/fence")):
        assert check_signature(herder, method, path, path, body, _kafka_signed(key, body)) is None
        assert check_signature(herder, method, path, path, body, {}).status == 400
        assert check_signature(herder, method, path, path, b"[]", _kafka_signed(key, body)) == MISMATCH
    assert check_signature(_herder([]), "POST", "/connectors/c/tasks", "/connectors/c/tasks", body,
                           _kafka_signed(key, body)).status == 503
    # Not sessioned: nothing is signed or checked, as in Kafka Connect.
    assert check_signature(_herder([key], "compatible"), "POST", "/connectors/c/tasks", "/x", body, {}) is None
    # Users' requests pass; a user's request forwarded by a connectd worker needs connectd's signature too.
    assert check_signature(herder, "POST", "/connectors", "/connectors", body, {}) is None
    forwarded = {FORWARDED_HEADER: "w2", **_kafka_signed(key, body)}
    assert check_signature(herder, "POST", "/connectors", "/connectors", body, forwarded).status == 400
    forwarded[CONNECTD_SIGNATURE_HEADER] = sign(key, "HmacSHA256", "POST", "/connectors", body)
    assert check_signature(herder, "POST", "/connectors", "/connectors", body, forwarded) is None


@pytest.mark.integration
@pytest.mark.parametrize("algorithm", ["HmacSHA256", "HmacSHA512"])
def test_kafkas_signature_is_what_javas_mac_makes(java_program, algorithm):
    """Golden, from Java: InternalRequestSignature.addToRequest's Mac over the body, base64."""
    key = new_session_key(algorithm)
    body = '[{"connector.class":"FileStreamSource","tasks.max":"1","topic":"t-é"}]'
    java = java_program("KafkaRequestSignature")(algorithm, base64.b64encode(key.key).decode(), body).strip()
    assert sign_body(key, algorithm, body.encode()) == java
