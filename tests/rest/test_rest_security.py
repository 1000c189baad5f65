"""The REST API's security against a real server: TLS listeners, Basic authentication, CORS, config errors.

Certificates are made for the module with the ``openssl`` command: a CA, a
server certificate for 127.0.0.1 and localhost (its key also encrypted, and
in a PKCS12 key store), a client certificate signed by the same CA, a
self-signed one that nobody trusts, and the CA in a PKCS12 trust store.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import re
import shutil
import ssl
import stat
import subprocess
from pathlib import Path

import aiohttp
import pytest
import structlog
from pki import KEY_PASSWORD, STORE_PASSWORD, TRUST_PASSWORD

from connectd.config import tls
from connectd.config.worker import WorkerConfig
from connectd.config.worker_keys import BASIC_AUTH_EXTENSION
from connectd.errors import ConfigError
from connectd.logging import configure_logging
from connectd.rest.security import rest_listeners, rest_middlewares, server_ssl_context
from connectd.worker import Worker

ADMIN_PASSWORD = "admin-pass-8b27e0"
READER_PASSWORD = "reader-pass-51aa3f"
WRONG_PASSWORD = "guessed-pass-c0ffee"

ORIGIN = "https://ui.example.com"


def _client_ssl(pki, *, certificate: str | None = None) -> ssl.SSLContext:
    """A client that trusts the test CA, showing the ``client`` or ``rogue`` certificate if asked to."""
    context = ssl.create_default_context(cafile=str(pki["ca"]))
    if certificate:
        context.load_cert_chain(str(pki[f"{certificate}_cert"]), str(pki[f"{certificate}_key"]))
    return context


@pytest.fixture
def secrets_file(tmp_path) -> Path:
    """Where ${file:…} placeholders find the passwords."""
    path = tmp_path / "rest-secrets.properties"
    path.write_text(f"key.password={KEY_PASSWORD}\nadmin.password={ADMIN_PASSWORD}\n"
                    f"store.password={STORE_PASSWORD}\ntrust.password={TRUST_PASSWORD}\n", encoding="utf-8")
    return path


def _https(pki, secrets_file, **extra: str) -> dict[str, str]:
    return {
        "listeners": "https://127.0.0.1:0",
        "listeners.https.ssl.keystore.type": "PEM",
        "listeners.https.ssl.keystore.location": str(pki["encrypted_keystore"]),
        "listeners.https.ssl.key.password": f"${{file:{secrets_file}:key.password}}",
        **extra,
    }


def _worker_config(worker_config, **extra: str) -> WorkerConfig:
    return worker_config(source="worker.properties", **{
        "config.providers": "file",
        "config.providers.file.class": "file",
        **extra,
    })


@pytest.fixture
def log_output():
    """Every log line (DEBUG and up) as connectd writes it, JSON, in a string buffer."""
    root = logging.getLogger()
    level = root.level
    stream = io.StringIO()
    configure_logging("DEBUG", json=True, stream=stream)
    yield stream
    for handler in list(root.handlers):
        if getattr(handler, "_connectd_owned", False):
            root.removeHandler(handler)
    root.setLevel(level)
    structlog.reset_defaults()


def _events(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]


# --- TLS -----------------------------------------------------------------------


def test_https_listener_serves_the_api_with_an_encrypted_pem_key(rest, pki, secrets_file, log_output):
    async def scenario(http, herder):
        assert rest.server.url.startswith("https://127.0.0.1:")
        async with http.get("/") as r:
            assert r.status == 200
            assert (await r.json())["version"] == "9.9.9"
        # The certificate names 127.0.0.1 and localhost; both check out.
        async with http.get(rest.server.url.replace("127.0.0.1", "localhost") + "/health") as r:
            assert r.status == 200
        async with aiohttp.ClientSession() as plain:  # a client that does not trust the test CA
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await plain.get(f"{rest.server.url}/")

    rest(scenario, worker=_https(pki, secrets_file, **{"listeners.https.ssl.protocol": "TLSv1.3"}),
         ssl=_client_ssl(pki))
    output = log_output.getvalue()
    assert KEY_PASSWORD not in output
    ignored = [e for e in _events(log_output) if e["event"] == "rest_tls_setting_ignored"]
    assert [e["key"] for e in ignored] == ["listeners.https.ssl.protocol"]


def test_mixed_http_and_https_listeners_are_all_served(rest, pki, secrets_file):
    async def scenario(http, herder):
        listeners = rest.server.listeners
        assert [listener.scheme for listener in listeners] == ["http", "https"]
        assert listeners[0].port != listeners[1].port and all(listener.port > 0 for listener in listeners)
        assert rest.server.urls == [f"http://127.0.0.1:{listeners[0].port}", f"https://127.0.0.1:{listeners[1].port}"]
        for url in rest.server.urls:
            async with http.get(f"{url}/connectors") as r:
                assert r.status == 200 and await r.json() == []
        return listeners

    rest(scenario, worker=_https(pki, secrets_file, listeners="http://127.0.0.1:0,https://127.0.0.1:0"),
         ssl=_client_ssl(pki))


def test_unprefixed_ssl_keys_serve_https_only_when_no_listeners_https_key_is_set(rest, pki, tmp_path):
    async def scenario(http, herder):
        async with http.get("/") as r:
            return r.status

    unprefixed = {"listeners": "https://127.0.0.1:0", "ssl.keystore.type": "PEM",
                  "ssl.keystore.location": str(pki["keystore"])}
    assert rest(scenario, worker=unprefixed, ssl=_client_ssl(pki)) == 200
    # One listeners.https. key and the worker's ssl.* keys are not read at all, as in Kafka.
    prefixed = {**unprefixed, "ssl.keystore.location": str(tmp_path / "missing.pem"),
                "listeners.https.ssl.keystore.location": str(pki["keystore"])}
    assert rest(scenario, worker=prefixed, ssl=_client_ssl(pki)) == 200
    with pytest.raises(ConfigError, match="https listeners need a certificate"):
        rest(scenario, worker={"listeners": "https://127.0.0.1:0",
                               "listeners.https.ssl.truststore.location": str(pki["ca"])})


def test_key_store_given_as_pem_values_joined_on_one_line(rest, pki):
    # A value continued over lines with \\ in a properties file arrives without its line breaks.
    def one_line(path: Path) -> str:
        return "".join(line.strip() for line in path.read_text().splitlines())

    async def scenario(http, herder):
        async with http.get("/") as r:
            return r.status

    worker = {
        "listeners": "https://127.0.0.1:0",
        "listeners.https.ssl.keystore.type": "PEM",
        "listeners.https.ssl.keystore.certificate.chain": one_line(pki["cert"]),
        "listeners.https.ssl.keystore.key": one_line(pki["encrypted_key"]),
        "listeners.https.ssl.key.password": KEY_PASSWORD,
    }
    assert rest(scenario, worker=worker, ssl=_client_ssl(pki)) == 200


def test_client_certificate_required(rest, pki, secrets_file):
    async def scenario(http, herder):
        async with http.get("/") as r:  # the session's context carries the client certificate
            assert r.status == 200
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=_client_ssl(pki))) as anonymous:
            with pytest.raises((aiohttp.ClientError, ssl.SSLError, ConnectionError)):
                async with anonymous.get(f"{rest.server.url}/") as r:
                    await r.read()

    worker = _https(pki, secrets_file, **{"listeners.https.ssl.client.auth": "required",
                                          "listeners.https.ssl.truststore.type": "PEM",
                                          "listeners.https.ssl.truststore.location": str(pki["ca"])})
    rest(scenario, worker=worker, ssl=_client_ssl(pki, certificate="client"))


def test_client_certificate_requested_is_optional(rest, pki, secrets_file):
    async def scenario(http, herder):
        async with http.get("/") as r:
            return r.status

    worker = _https(pki, secrets_file, **{"listeners.https.ssl.client.auth": "requested",
                                          "listeners.https.ssl.truststore.location": str(pki["ca"])})
    assert rest(scenario, worker=worker, ssl=_client_ssl(pki)) == 200
    assert rest(scenario, worker=worker, ssl=_client_ssl(pki, certificate="client")) == 200


def test_protocols_and_cipher_suites(worker_config, pki):
    base = {"listeners": "https://127.0.0.1:0", "listeners.https.ssl.keystore.location": str(pki["keystore"])}
    context = server_ssl_context(_worker_config(worker_config, **base, **{
        "listeners.https.ssl.enabled.protocols": "TLSv1.2",
        "listeners.https.ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,ECDHE-ECDSA-CHACHA20-POLY1305",
    }))
    assert context.minimum_version == context.maximum_version == ssl.TLSVersion.TLSv1_2
    tls12 = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert tls12 == {"ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"}
    only13 = server_ssl_context(_worker_config(worker_config, **base, **{
        "listeners.https.ssl.cipher.suites": "TLS_AES_256_GCM_SHA384"}))
    assert only13.minimum_version == ssl.TLSVersion.TLSv1_3
    with pytest.raises(ConfigError, match=r"listeners\.https\.ssl\.cipher\.suites=.*unknown to this OpenSSL: TLS_NOPE"):
        server_ssl_context(_worker_config(worker_config, **base, **{"listeners.https.ssl.cipher.suites": "TLS_NOPE"}))
    with pytest.raises(ConfigError, match=r"ssl\.enabled\.protocols='SSLv3': expected items from"):
        server_ssl_context(_worker_config(worker_config, **base, **{"listeners.https.ssl.enabled.protocols": "SSLv3"}))


def _pkcs12(pki, secrets_file, **extra: str) -> dict[str, str]:
    """https with the PKCS12 key store, as a Kafka Connect properties file names it."""
    return {
        "listeners": "https://127.0.0.1:0",
        "listeners.https.ssl.keystore.type": "PKCS12",
        "listeners.https.ssl.keystore.location": str(pki["p12"]),
        "listeners.https.ssl.keystore.password": f"${{file:{secrets_file}:store.password}}",
        "listeners.https.ssl.key.password": f"${{file:{secrets_file}:store.password}}",
        **extra,
    }


def test_https_listener_serves_a_pkcs12_key_store(rest, pki, secrets_file, log_output):
    async def scenario(http, herder):
        async with http.get("/") as r:
            assert r.status == 200
        async with http.get(rest.server.url.replace("127.0.0.1", "localhost") + "/health") as r:
            assert r.status == 200

    rest(scenario, worker=_pkcs12(pki, secrets_file), ssl=_client_ssl(pki))
    assert STORE_PASSWORD not in log_output.getvalue()


def test_pkcs12_key_goes_to_ssl_in_a_private_file_encrypted_and_removed(worker_config, pki, monkeypatch):
    loaded = []
    load_chain = tls._load_chain

    def recording(context, settings, name, path, password):  # what ssl is given, while the file is there
        file = Path(path)
        loaded.append({"path": file, "mode": stat.S_IMODE(file.stat().st_mode),
                       "directory_mode": stat.S_IMODE(file.parent.stat().st_mode), "text": file.read_text()})
        return load_chain(context, settings, name, path, password)

    monkeypatch.setattr(tls, "_load_chain", recording)
    server_ssl_context(_worker_config(worker_config, **{"listeners": "https://127.0.0.1:0",
                                                        "listeners.https.ssl.keystore.location": str(pki["p12"]),
                                                        "listeners.https.ssl.keystore.password": STORE_PASSWORD}))
    [seen] = loaded
    assert (seen["mode"], seen["directory_mode"]) == (0o600, 0o700)
    labels = re.findall(r"-----BEGIN ([A-Z ]+)-----", seen["text"])
    assert labels == ["ENCRYPTED PRIVATE KEY", "CERTIFICATE", "CERTIFICATE"]  # never the key in the clear
    assert STORE_PASSWORD not in seen["text"]
    assert not seen["path"].exists() and not seen["path"].parent.exists()


def test_pkcs12_key_store_is_found_by_its_content(worker_config, pki):
    # No type, or Kafka's default JKS (Java reads PKCS12 through it too); the one password in ssl.key.password.
    for extra in ({}, {"listeners.https.ssl.keystore.type": "JKS"}, {"listeners.https.ssl.keystore.type": "PKCS12"}):
        context = server_ssl_context(_worker_config(worker_config, **{
            "listeners": "https://127.0.0.1:0", "listeners.https.ssl.keystore.location": str(pki["p12"]),
            "listeners.https.ssl.key.password": STORE_PASSWORD, **extra}))
        assert isinstance(context, ssl.SSLContext)
    # The worker's own ssl.* keys, when no listeners.https. key is set.
    context = server_ssl_context(_worker_config(worker_config, **{
        "listeners": "https://127.0.0.1:0", "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki["p12"]),
        "ssl.keystore.password": STORE_PASSWORD, "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(pki["trust_p12"]), "ssl.truststore.password": TRUST_PASSWORD}))
    assert [dict(c["subject"][0])["commonName"] for c in context.get_ca_certs()] == ["connectd test CA"]


def test_pkcs12_trust_store_checks_client_certificates(rest, pki, secrets_file):
    async def scenario(http, herder):
        async with http.get("/") as r:  # the session's context carries the client certificate
            assert r.status == 200
        for client in (_client_ssl(pki), _client_ssl(pki, certificate="rogue")):
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client)) as refused:
                with pytest.raises((aiohttp.ClientError, ssl.SSLError, ConnectionError)):
                    async with refused.get(f"{rest.server.url}/") as r:
                        await r.read()

    worker = _pkcs12(pki, secrets_file, **{
        "listeners.https.ssl.client.auth": "required",
        "listeners.https.ssl.truststore.type": "PKCS12",
        "listeners.https.ssl.truststore.location": str(pki["trust_p12"]),
        "listeners.https.ssl.truststore.password": f"${{file:{secrets_file}:trust.password}}",
    })
    rest(scenario, worker=worker, ssl=_client_ssl(pki, certificate="client"))


def test_stores_made_by_keytool(worker_config, tmp_path, pki):
    """As Java users make them: JKS key and trust stores (Kafka's default type), read as they are."""
    if shutil.which("keytool") is None:
        pytest.skip("the keytool command is needed to make Java's stores")

    def keytool(*args: str) -> None:
        subprocess.run(["keytool", *args], cwd=tmp_path, check=True, capture_output=True)

    jks = tmp_path / "rest.jks"
    keytool("-importkeystore", "-srckeystore", str(pki["p12"]), "-srcstoretype", "PKCS12", "-srcstorepass",
            STORE_PASSWORD, "-destkeystore", str(jks), "-deststoretype", "JKS", "-deststorepass", STORE_PASSWORD,
            "-noprompt")
    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(pki["ca"]), "-keystore", "truststore.jks",
            "-storetype", "JKS", "-storepass", TRUST_PASSWORD)
    context = server_ssl_context(_worker_config(worker_config, **{
        "listeners": "https://127.0.0.1:0",
        "listeners.https.ssl.keystore.location": str(jks),
        "listeners.https.ssl.keystore.password": STORE_PASSWORD,
        "listeners.https.ssl.truststore.location": str(tmp_path / "truststore.jks"),
        "listeners.https.ssl.truststore.password": TRUST_PASSWORD,
        "listeners.https.ssl.client.auth": "required",
    }))
    assert [dict(c["subject"][0])["commonName"] for c in context.get_ca_certs()] == ["connectd test CA"]
    message = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(jks),
                                           "listeners.https.ssl.keystore.password": WRONG_PASSWORD})
    assert f"listeners.https.ssl.keystore.location='{jks}': cannot read the JKS store with " \
           "listeners.https.ssl.keystore.password: " in message and WRONG_PASSWORD not in message


# --- TLS configuration errors --------------------------------------------------


def _tls_error(worker_config, **extra: str) -> str:
    properties = worker_config.file(**{
        "config.providers": "file",
        "config.providers.file.class": "file",
        "listeners": "https://127.0.0.1:0",
        **extra,
    })
    with pytest.raises(ConfigError) as caught:
        rest_listeners(WorkerConfig.from_file(properties))
    return str(caught.value)


def test_missing_key_store_file_names_key_file_and_line(worker_config, tmp_path):
    message = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": "/no/such/keystore.pem"})
    assert message == (f"{tmp_path / 'worker.properties'}:8: listeners.https.ssl.keystore.location='/no/such/keystore.pem': "
                       "cannot read the file: No such file or directory")


def test_no_key_store_at_all(worker_config):
    message = _tls_error(worker_config)
    assert message.endswith("worker.properties:7: listeners: https listeners need a certificate and its private key: "
                            "set listeners.https.ssl.keystore.location (or ssl.keystore.location) "
                            "to a PEM file or PKCS12 store holding both")


def test_a_jks_store_needs_its_password_and_keytool_must_read_it(worker_config, pki):
    message = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["jks"]),
                                           "listeners.https.ssl.keystore.type": "JKS"})
    assert (f"listeners.https.ssl.keystore.location='{pki['jks']}': is a JKS store, which is opened with its "
            "password: set listeners.https.ssl.keystore.password") in message
    # Found by its content too, whatever the type says; a damaged one is keytool's to refuse.
    damaged = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["jks"]),
                                           "listeners.https.ssl.keystore.type": "PKCS12",
                                           "listeners.https.ssl.keystore.password": STORE_PASSWORD})
    assert "cannot read the JKS store with listeners.https.ssl.keystore.password: " in damaged
    truststore = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["keystore"]),
                                              "listeners.https.ssl.truststore.location": str(pki["jks"])})
    assert "is a JKS store, which is opened with its password: set listeners.https.ssl.truststore.password" in truststore


def test_wrong_or_missing_pkcs12_password(worker_config, tmp_path, pki, secrets_file):
    store = {"listeners.https.ssl.keystore.type": "PKCS12", "listeners.https.ssl.keystore.location": str(pki["p12"])}
    wrong = _tls_error(worker_config, **store, **{"listeners.https.ssl.keystore.password": WRONG_PASSWORD})
    assert wrong == (f"{tmp_path / 'worker.properties'}:9: listeners.https.ssl.keystore.location='{pki['p12']}': "
                     "cannot open the PKCS12 store with listeners.https.ssl.keystore.password: "
                     "wrong password, or a damaged file?")
    # Kafka opens the store with ssl.keystore.password, whatever ssl.key.password says.
    assert "with listeners.https.ssl.keystore.password:" in _tls_error(
        worker_config, **store, **{"listeners.https.ssl.keystore.password": WRONG_PASSWORD,
                                   "listeners.https.ssl.key.password": STORE_PASSWORD})
    only_key_password = _tls_error(worker_config, **store, **{"listeners.https.ssl.key.password": WRONG_PASSWORD})
    assert "cannot open the PKCS12 store with listeners.https.ssl.key.password: wrong password" in only_key_password
    missing = _tls_error(worker_config, **store)
    assert missing.endswith(f"listeners.https.ssl.keystore.location='{pki['p12']}': "
                            "is a PKCS12 store protected by a password: set listeners.https.ssl.keystore.password")
    placeholder = _tls_error(worker_config, **store, **{"listeners.https.ssl.keystore.password":
                                                        f"${{file:{secrets_file}:key.password}}"})
    assert "cannot open the PKCS12 store with listeners.https.ssl.keystore.password" in placeholder
    trust = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["keystore"]),
                                         "listeners.https.ssl.truststore.type": "PKCS12",
                                         "listeners.https.ssl.truststore.location": str(pki["trust_p12"]),
                                         "listeners.https.ssl.truststore.password": WRONG_PASSWORD})
    assert (f"listeners.https.ssl.truststore.location='{pki['trust_p12']}': cannot open the PKCS12 store with "
            "listeners.https.ssl.truststore.password: wrong password") in trust
    for message in (wrong, only_key_password, missing, placeholder, trust):
        for password in (WRONG_PASSWORD, STORE_PASSWORD, KEY_PASSWORD, TRUST_PASSWORD):
            assert password not in message


def test_damaged_or_unknown_key_store_files(worker_config, tmp_path, pki):
    data = pki["p12"].read_bytes()

    def error(content: bytes, **extra: str) -> str:
        path = tmp_path / "store.bin"
        path.write_bytes(content)
        return _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(path),
                                            "listeners.https.ssl.keystore.password": STORE_PASSWORD, **extra})

    cut = error(data[:len(data) // 2])
    assert cut.endswith(f"store.bin': is a PKCS12 store cut short: {len(data) // 2} of its {len(data)} bytes")
    # A damaged byte inside fails the store's integrity check, as a wrong password does.
    middle = len(data) // 2
    flipped = error(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:])
    assert ("cannot open the PKCS12 store with listeners.https.ssl.keystore.password: "
            "wrong password, or a damaged file?") in flipped
    assert error(b"\x00garbage" * 8, **{"listeners.https.ssl.keystore.type": "PKCS12"}).endswith(
        "store.bin': is not a PKCS12 store")
    assert error(b"\x00garbage" * 8).endswith("store.bin': is neither a PEM file nor a PKCS12 store")
    # DER is not enough: a DER certificate is not taken for a PKCS12 store.
    assert error(pki["der_cert"].read_bytes()).endswith("store.bin': is neither a PEM file nor a PKCS12 store")
    # Whatever follows a store is not read, as Java and OpenSSL do.
    (tmp_path / "tail.p12").write_bytes(data + b"\n")
    context = server_ssl_context(_worker_config(worker_config, **{
        "listeners": "https://127.0.0.1:0", "listeners.https.ssl.keystore.location": str(tmp_path / "tail.p12"),
        "listeners.https.ssl.keystore.password": STORE_PASSWORD}))
    assert isinstance(context, ssl.SSLContext)


def test_pkcs12_stores_holding_the_wrong_things(worker_config, pki):
    no_key = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["trust_p12"]),
                                          "listeners.https.ssl.keystore.password": TRUST_PASSWORD})
    assert no_key.endswith(f"listeners.https.ssl.keystore.location='{pki['trust_p12']}': "
                           "is a PKCS12 store without a private key")
    # A key store given as the trust store: Java would trust its certificate, not its CA. Refused.
    key_store = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["keystore"]),
                                             "listeners.https.ssl.truststore.location": str(pki["p12"]),
                                             "listeners.https.ssl.truststore.password": STORE_PASSWORD})
    assert f"listeners.https.ssl.truststore.location='{pki['p12']}': holds a private key: it is a key store" in key_store
    assert f"openssl pkcs12 -in {pki['p12']} -nokeys -cacerts -out ca.pem" in key_store


def test_wrong_or_missing_key_password(worker_config, pki, secrets_file):
    wrong = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["encrypted_keystore"]),
                                         "listeners.https.ssl.key.password": WRONG_PASSWORD})
    assert "listeners.https.ssl.keystore.location=" in wrong and str(pki["encrypted_keystore"]) in wrong
    assert "cannot decrypt the private key with listeners.https.ssl.key.password: wrong password?" in wrong
    assert WRONG_PASSWORD not in wrong
    missing = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["encrypted_keystore"])})
    assert "the private key is encrypted: set listeners.https.ssl.key.password" in missing
    unresolved = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["encrypted_keystore"]),
                                              "listeners.https.ssl.key.password": f"${{file:{secrets_file}:nope}}"})
    assert "listeners.https.ssl.key.password" in unresolved and "has no value for 'nope'" in unresolved
    assert KEY_PASSWORD not in unresolved


def test_other_key_store_mistakes(worker_config, pki):
    mismatch = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["mismatched_keystore"])})
    assert "the private key does not belong to the first certificate" in mismatch
    no_key = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["cert"])})
    assert no_key.endswith(f"listeners.https.ssl.keystore.location='{pki['cert']}': holds no PEM private key")
    required = _tls_error(worker_config, **{"listeners.https.ssl.keystore.location": str(pki["keystore"]),
                                            "listeners.https.ssl.client.auth": "required"})
    assert "listeners.https.ssl.client.auth='required': client certificates are checked against a trust store" in required
    half = _tls_error(worker_config, **{"listeners.https.ssl.keystore.key": pki["key"].read_text()})
    assert "listeners.https.ssl.keystore.key: also set listeners.https.ssl.keystore.certificate.chain" in half
    assert "PRIVATE KEY" not in half


def test_worker_refuses_bad_tls_before_touching_kafka(worker_config, tmp_path):
    config = _worker_config(worker_config, **{"listeners": "http://127.0.0.1:0,https://127.0.0.1:0",
                                              "listeners.https.ssl.keystore.location": str(tmp_path / "nope.pem")})
    worker = Worker(config)
    with pytest.raises(ConfigError, match="listeners.https.ssl.keystore.location=.*cannot read the file"):
        asyncio.run(worker.start())
    assert worker.state == "STOPPED"


# --- Basic authentication --------------------------------------------------------


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture
def credentials(tmp_path, secrets_file) -> Path:
    path = tmp_path / "rest-users.properties"
    path.write_text(f"admin=${{file:{secrets_file}:admin.password}}\nreader: {READER_PASSWORD}\n", encoding="utf-8")
    return path


def test_basic_auth_refuses_without_valid_credentials(rest, credentials, log_output, caplog):
    async def scenario(http, herder):
        refused = [
            {},
            _basic("admin", WRONG_PASSWORD),
            _basic("nobody", ADMIN_PASSWORD),
            _basic("admin", ""),
            {"Authorization": "Basic !!not-base64!!"},
            {"Authorization": "Bearer " + ADMIN_PASSWORD},
        ]
        for headers in refused:
            async with http.get("/connectors", headers=headers) as r:
                assert r.status == 401, headers
                assert r.headers["WWW-Authenticate"] == 'Basic realm="connectd", charset="UTF-8"'
                assert await r.json() == {"error_code": 401, "message": "User cannot access the resource."}
        async with http.get("/no/such/route") as r:  # routes are not revealed either
            assert r.status == 401
        async with http.get("/connectors", headers=_basic("admin", ADMIN_PASSWORD)) as r:
            assert r.status == 200 and await r.json() == []
        async with http.get("/", headers=_basic("reader", READER_PASSWORD)) as r:
            assert r.status == 200
        async with http.post("/connectors", headers=_basic("reader", READER_PASSWORD), json={"name": "x"}) as r:
            assert r.status == 400  # past authentication, refused by validation
        async with http.get("/health") as r:  # for load balancers: no credentials needed
            assert r.status == 200
        async with http.post("/health") as r:  # only reading it is public
            assert r.status == 401

    rest(scenario, worker={"rest.extension.classes": BASIC_AUTH_EXTENSION,
                           "rest.basic.auth.credentials.file": str(credentials)})
    failures = [e for e in _events(log_output) if e["event"] == "rest_authentication_failed"]
    assert {e["reason"] for e in failures} == {"no credentials", "unknown user", "wrong password"}
    enabled = next(e for e in _events(log_output) if e["event"] == "rest_basic_auth_enabled")
    assert enabled["users"] == 2
    # Neither the passwords, nor the wrong one tried, nor any Authorization header is logged.
    written = log_output.getvalue() + "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    for text in (ADMIN_PASSWORD, READER_PASSWORD, WRONG_PASSWORD, _basic("admin", WRONG_PASSWORD)["Authorization"][6:]):
        assert text not in written


def test_basic_auth_with_kafkas_jaas_file(worker_config, rest, tmp_path, credentials):
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text(
        "// as Kafka Connect reads it with -Djava.security.auth.login.config\n"
        "KafkaConnect {\n"
        "  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required\n"
        f'  file="{credentials}";\n'
        "};\n",
        encoding="utf-8",
    )

    async def scenario(http, herder):
        async with http.get("/connectors") as r:
            assert r.status == 401
        async with http.get("/connectors", headers=_basic("admin", ADMIN_PASSWORD)) as r:
            assert r.status == 200

    rest(scenario, worker={"rest.extension.classes": "BasicAuthSecurityRestExtension",
                           "rest.basic.auth.jaas.file": str(jaas)})
    jaas.write_text("KafkaConnect {\n  org.example.OtherLoginModule required;\n};\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="the KafkaConnect entry has no PropertyFileLoginModule"):
        rest_middlewares(_worker_config(worker_config, **{"rest.extension.classes": "BasicAuthSecurityRestExtension",
                                                          "rest.basic.auth.jaas.file": str(jaas)}))


def test_basic_auth_config_errors(worker_config, tmp_path, secrets_file):
    on = {"rest.extension.classes": BASIC_AUTH_EXTENSION}

    def error(**extra: str) -> str:
        with pytest.raises(ConfigError) as caught:
            rest_middlewares(_worker_config(worker_config, **extra))
        return str(caught.value)

    assert "BasicAuthSecurityRestExtension needs rest.basic.auth.credentials.file" in error(**on)
    users = tmp_path / "users.properties"
    assert error(**on, **{"rest.basic.auth.credentials.file": str(users)}) == (
        f"worker.properties: rest.basic.auth.credentials.file: {users}: no such file")
    users.write_text(f"admin=${{file:{secrets_file}:missing}}\nreader=\nok={READER_PASSWORD}\n", encoding="utf-8")
    message = error(**on, **{"rest.basic.auth.credentials.file": str(users)})
    assert message.splitlines() == [
        f"{users}:1: user admin: ${{file:{secrets_file}:missing}}: provider 'file' has no value for 'missing' in {secrets_file}",
        f"{users}:2: user reader has an empty password",
    ]
    assert "is set but rest.extension.classes does not list" in error(**{"rest.basic.auth.credentials.file": str(users)})
    # `connectd config check` says so too, without reading any file.
    problems = _worker_config(worker_config, **{"rest.basic.auth.credentials.file": str(users)}).problems(check_classes=False)
    assert any("so the REST API would not ask for credentials" in str(p) for p in problems if p.is_error)
    problems = _worker_config(worker_config, **{"rest.extension.classes": "com.example.MyRestExtension"}).problems(check_classes=False)
    assert any("rest.extension.classes='com.example.MyRestExtension': expected items from" in str(p) for p in problems)


# --- CORS ----------------------------------------------------------------------


def _preflight(origin: str, method: str = "POST", headers: str = "content-type") -> dict[str, str]:
    return {"Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers}


def test_cors_preflight_and_simple_requests(rest):
    async def scenario(http, herder):
        async with http.options("/connectors", headers=_preflight(ORIGIN)) as r:
            assert r.status == 200
            assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
            assert r.headers["Access-Control-Allow-Credentials"] == "true"
            assert r.headers["Access-Control-Allow-Methods"] == "GET,POST,HEAD"
            assert "Content-Type" in r.headers["Access-Control-Allow-Headers"].split(",")
        async with http.options("/connectors", headers=_preflight("https://a.trusted.example.org", "GET")) as r:
            assert r.status == 200  # matches https://*.trusted.example.org
        async with http.options("/connectors/x", headers=_preflight(ORIGIN, "DELETE")) as r:
            assert r.status == 403 and "Access-Control-Allow-Origin" not in r.headers
        async with http.options("/connectors", headers=_preflight("https://evil.example.net")) as r:
            assert r.status == 403 and "Access-Control-Allow-Origin" not in r.headers
        async with http.options("/connectors", headers=_preflight(ORIGIN, headers="x-custom")) as r:
            assert r.status == 403
        async with http.get("/connectors", headers={"Origin": ORIGIN}) as r:
            assert r.status == 200
            assert r.headers["Access-Control-Allow-Origin"] == ORIGIN and r.headers["Vary"] == "Origin"
        async with http.get("/connectors/nope", headers={"Origin": ORIGIN}) as r:  # errors too, so scripts can read them
            assert r.status == 404 and r.headers["Access-Control-Allow-Origin"] == ORIGIN
        async with http.get("/connectors", headers={"Origin": "https://evil.example.net"}) as r:
            assert r.status == 200 and "Access-Control-Allow-Origin" not in r.headers
        async with http.get("/connectors") as r:  # not cross-origin at all
            assert "Access-Control-Allow-Origin" not in r.headers

    rest(scenario, worker={"access.control.allow.origin": f"{ORIGIN}, https://*.trusted.example.org"})


def test_cors_any_origin_and_own_methods(rest):
    async def scenario(http, herder):
        async with http.options("/connectors/x/config", headers=_preflight("https://anywhere.example", "PUT")) as r:
            assert r.status == 200
            assert r.headers["Access-Control-Allow-Origin"] == "*"
            assert "Access-Control-Allow-Credentials" not in r.headers
            assert r.headers["Access-Control-Allow-Methods"] == "GET,PUT"
        async with http.options("/connectors", headers=_preflight("https://anywhere.example", "POST")) as r:
            assert r.status == 403
        async with http.get("/", headers={"Origin": "https://anywhere.example"}) as r:
            assert r.headers["Access-Control-Allow-Origin"] == "*"

    rest(scenario, worker={"access.control.allow.origin": "*", "access.control.allow.methods": "GET, PUT"})


def test_cors_preflight_needs_no_credentials_but_requests_do(rest, credentials):
    async def scenario(http, herder):
        async with http.options("/connectors", headers=_preflight(ORIGIN, headers="authorization,content-type")) as r:
            assert r.status == 200
        async with http.get("/connectors", headers={"Origin": ORIGIN}) as r:
            assert r.status == 401  # readable by the page: it carries the CORS headers
            assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
        async with http.get("/connectors", headers={"Origin": ORIGIN, **_basic("admin", ADMIN_PASSWORD)}) as r:
            assert r.status == 200 and r.headers["Access-Control-Allow-Origin"] == ORIGIN
        async with http.options("/connectors") as r:  # not a preflight: authenticated like anything else
            assert r.status == 401

    rest(scenario, worker={"access.control.allow.origin": ORIGIN, "rest.extension.classes": BASIC_AUTH_EXTENSION,
                           "rest.basic.auth.credentials.file": str(credentials)})


def test_security_is_off_by_default(rest):
    async def scenario(http, herder):
        async with http.get("/connectors", headers={"Origin": ORIGIN}) as r:
            assert r.status == 200 and "Access-Control-Allow-Origin" not in r.headers
        async with http.options("/connectors", headers=_preflight(ORIGIN)) as r:
            assert r.status == 405
        return rest.server.listeners

    listeners = rest(scenario, worker={})
    assert [(lst.scheme, lst.ssl_context) for lst in listeners] == [("http", None)]


@pytest.mark.integration
def test_worker_serves_every_listener_with_its_security(worker_config, broker, spark, pki, secrets_file, credentials):
    config = _worker_config(worker_config, **{
        **_https(pki, secrets_file, listeners="http://127.0.0.1:0,https://127.0.0.1:0"),
        "rest.advertised.listener": "https",
        "rest.extension.classes": BASIC_AUTH_EXTENSION,
        "rest.basic.auth.credentials.file": str(credentials),
    })

    async def scenario():
        async with Worker(config) as worker:
            await worker.start_herder(spark)  # the suite's session: the worker must not stop it
            connector = aiohttp.TCPConnector(ssl=_client_ssl(pki))
            async with aiohttp.ClientSession(connector=connector) as http:
                statuses = []
                for url in worker.rest_urls:
                    async with http.get(f"{url}/connectors") as r:
                        statuses.append(r.status)
                    async with http.get(f"{url}/connectors", headers=_basic("admin", ADMIN_PASSWORD)) as r:
                        statuses.append(r.status)
            return worker.rest_url, worker.rest_urls, statuses

    rest_url, rest_urls, statuses = asyncio.run(scenario())
    assert [url.split(":")[0] for url in rest_urls] == ["http", "https"]
    assert rest_url == rest_urls[1]
    assert statuses == [401, 200, 401, 200]
