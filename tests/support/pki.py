"""Test certificates, made with the ``openssl`` command: a CA, a server certificate for 127.0.0.1
and localhost (its key also encrypted, and in a PKCS12 key store), a client certificate signed
by the same CA, a self-signed one that nobody trusts, and the CA in a PKCS12 trust store.
Shared by the REST listeners' tests and the Kafka clients' (``pki`` in conftest.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

KEY_PASSWORD = "tls-key-pass-4f1d9c"
STORE_PASSWORD = "p12-store-pass-7e3a90"
TRUST_PASSWORD = "p12-trust-pass-2d64b1"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _key_and_csr(name: str, subject: str, cwd: Path) -> None:
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=cwd)


def make_pki(d: Path) -> dict[str, Path]:
    """The test certificates and stores, made in directory *d*; name → file."""
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=connectd test CA", cwd=d)
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subject in (("server", "/CN=localhost"), ("client", "/CN=rest-client")):
        _key_and_csr(name, subject, d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=d)
    _openssl("pkcs8", "-topk8", "-in", "server.key", "-out", "server-encrypted.key",
             "-passout", f"pass:{KEY_PASSWORD}", cwd=d)
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "rogue.key", "-out", "rogue.pem", "-days", "2", "-subj", "/CN=rogue client", cwd=d)
    # As Kafka users hold them: the key with its chain, and the CA alone, each under a password.
    _openssl("pkcs12", "-export", "-in", "server.pem", "-inkey", "server.key", "-certfile", "ca.pem",
             "-name", "rest", "-out", "keystore.p12", "-passout", f"pass:{STORE_PASSWORD}", cwd=d)
    _openssl("pkcs12", "-export", "-nokeys", "-in", "ca.pem", "-name", "ca", "-out", "truststore.p12",
             "-passout", f"pass:{TRUST_PASSWORD}", cwd=d)
    _openssl("x509", "-in", "server.pem", "-outform", "DER", "-out", "server.der", cwd=d)
    files = {
        "ca": d / "ca.pem",
        "cert": d / "server.pem",
        "key": d / "server.key",
        "encrypted_key": d / "server-encrypted.key",
        "keystore": d / "keystore.pem",
        "encrypted_keystore": d / "keystore-encrypted.pem",
        "mismatched_keystore": d / "keystore-mismatched.pem",
        "client_cert": d / "client.pem",
        "client_key": d / "client.key",
        "rogue_cert": d / "rogue.pem",
        "rogue_key": d / "rogue.key",
        "p12": d / "keystore.p12",
        "trust_p12": d / "truststore.p12",
        "der_cert": d / "server.der",
        "jks": d / "keystore.jks",
    }
    files["keystore"].write_text(files["key"].read_text() + files["cert"].read_text())
    files["encrypted_keystore"].write_text(files["encrypted_key"].read_text() + files["cert"].read_text())
    files["mismatched_keystore"].write_text((d / "ca.key").read_text() + files["cert"].read_text())
    files["jks"].write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + bytes(64))  # a JKS store's header
    return files
