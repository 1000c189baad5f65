"""Signed requests between workers: what passes and what is refused."""

from __future__ import annotations

import pytest

from connectd.cluster.signing import SessionKey, new_session_key, sign, verify

ACCEPTED = ["HmacSHA256"]


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
    assert verify([new], ACCEPTED, **_request(old)) == "the request signature does not match the session key"


@pytest.mark.parametrize("change", ["method", "path_qs", "body"])
def test_a_signature_does_not_carry_over_to_another_request(change):
    key = new_session_key()
    request = _request(key)
    request[change] = {"method": "DELETE", "path_qs": "/connectors/x", "body": b'{"a":"c"}'}[change]
    assert verify([key], ACCEPTED, **request) == "the request signature does not match the session key"


def test_unsigned_unknown_algorithm_and_no_key_are_refused_with_the_reason():
    key = new_session_key()
    unsigned = {**_request(key), "signature": None}
    assert verify([key], ACCEPTED, **unsigned) == "the request is not signed"
    other = _request(key, "HmacSHA512")
    assert "HmacSHA512 is not accepted" in verify([key], ACCEPTED, **other)
    assert verify([], ACCEPTED, **_request(key)) == "this worker has no session key yet"


def test_key_sizes_and_expiry():
    assert len(new_session_key("HmacSHA512").key) == 64
    assert len(new_session_key("HmacSHA256", 128).key) == 16
    with pytest.raises(ValueError, match="unsupported key algorithm"):
        new_session_key("MD5")
    key = SessionKey(b"k", "HmacSHA256", creation_timestamp_ms=1_000)
    assert not key.expired(ttl_ms=500, now_ms=1_499) and key.expired(ttl_ms=500, now_ms=1_500)
