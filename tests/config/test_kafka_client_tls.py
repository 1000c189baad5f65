"""The Kafka clients' TLS from Java's ssl.* keys, for librdkafka and aiokafka (golden settings, and a
real handshake with Python's TLS server). The dev broker cannot serve TLS: tansu 0.6.0 refuses
--cert with --key, and with --cert alone it serves plaintext (docs/migrating.md)."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest
from pki import STORE_PASSWORD, TRUST_PASSWORD

from connectd.config.worker import WorkerConfig
from connectd.errors import ConfigError

WRONG = "not-the-password-93c1"


def keytool(*args: str, cwd: Path) -> None:
    subprocess.run(["keytool", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def stores(pki, tmp_path_factory) -> dict[str, Path]:
    """The CA in a JKS trust store and the server's key in a JKS key store, as keytool makes them."""
    if shutil.which("keytool") is None:
        pytest.skip("the keytool command is needed to make Java's stores")
    d = tmp_path_factory.mktemp("jks")
    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(pki["ca"]), "-keystore", "trust.jks",
            "-storetype", "JKS", "-storepass", TRUST_PASSWORD, cwd=d)
    keytool("-importkeystore", "-noprompt", "-srckeystore", str(pki["p12"]), "-srcstoretype", "PKCS12",
            "-srcstorepass", STORE_PASSWORD, "-destkeystore", "key.jks", "-deststoretype", "JKS",
            "-deststorepass", STORE_PASSWORD, cwd=d)
    return {"trust_jks": d / "trust.jks", "key_jks": d / "key.jks"}


def config(tmp_path: Path, **values: str) -> WorkerConfig:
    lines = ["bootstrap.servers=127.0.0.1:9093", "group.id=g", "config.storage.topic=c",
             "offset.storage.topic=o", "status.storage.topic=s",
             *(f"{k}={v}" for k, v in values.items())]
    path = tmp_path / "worker.properties"
    path.write_text("\n".join(lines) + "\n")
    return WorkerConfig.from_file(path)


def ca_pem(pki) -> str:
    return ssl.DER_cert_to_PEM_cert(ssl.PEM_cert_to_DER_cert(pki["ca"].read_text()))


@pytest.mark.parametrize("store", ["trust_jks", "trust_p12", "ca"])
def test_a_trust_store_of_any_kind_is_the_clients_ca_in_memory(pki, stores, tmp_path, store):
    path = {**pki, **stores}[store]
    worker = config(tmp_path, **{"security.protocol": "SSL", "ssl.truststore.location": str(path),
                                 "ssl.truststore.password": TRUST_PASSWORD})
    confluent = worker.client_config("producer", "confluent")
    assert {k: v for k, v in confluent.items() if k.startswith(("ssl.", "security."))} == {
        "security.protocol": "SSL", "ssl.ca.pem": confluent["ssl.ca.pem"]}
    assert ssl.PEM_cert_to_DER_cert(confluent["ssl.ca.pem"]) == ssl.PEM_cert_to_DER_cert(ca_pem(pki))
    context = worker.client_config("consumer", "aiokafka")["ssl_context"]
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert [dict(c["subject"][0])["commonName"] for c in context.get_ca_certs()] == ["connectd test CA"]


@pytest.mark.parametrize("store", ["key_jks", "p12"])
def test_a_key_store_is_the_clients_key_and_chain_in_memory_the_key_encrypted(pki, stores, tmp_path, store):
    path = {**pki, **stores}[store]
    worker = config(tmp_path, **{"security.protocol": "SSL", "ssl.keystore.location": str(path),
                                 "ssl.keystore.password": STORE_PASSWORD, "ssl.truststore.location": str(pki["ca"]),
                                 "ssl.endpoint.identification.algorithm": ""})
    confluent = worker.client_config("admin", "confluent")
    assert confluent["ssl.key.pem"].startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    assert confluent["ssl.key.password"] not in (STORE_PASSWORD, "")
    first = confluent["ssl.certificate.pem"].split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----\n"
    assert ssl.PEM_cert_to_DER_cert(first) == ssl.PEM_cert_to_DER_cert(pki["cert"].read_text())
    assert confluent["ssl.endpoint.identification.algorithm"] == "none"
    assert "ssl.keystore.location" not in confluent and "ssl.keystore.password" not in confluent
    assert not worker.client_config("admin", "aiokafka")["ssl_context"].check_hostname


def test_the_clients_context_trusts_the_ca_and_nothing_else(pki, stores, tmp_path):
    """A real handshake with a TLS server whose certificate the CA signed; another trust store fails
    it as a certificate the client cannot verify."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(str(pki["cert"]), str(pki["key"]))
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        for _ in range(2):
            connection, _ = listener.accept()
            try:
                with server.wrap_socket(connection, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    good = config(tmp_path, **{"security.protocol": "SSL", "ssl.truststore.location": str(stores["trust_jks"]),
                               "ssl.truststore.password": TRUST_PASSWORD}).client_config("consumer", "aiokafka")
    with socket.create_connection(("127.0.0.1", port)) as raw, \
            good["ssl_context"].wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.getpeercert()["subject"][0][0][1] == "localhost"
    (tmp_path / "rogue").mkdir()
    rogue = config(tmp_path / "rogue", **{"security.protocol": "SSL",
                                          "ssl.truststore.location": str(pki["rogue_cert"])})
    with socket.create_connection(("127.0.0.1", port)) as raw, pytest.raises(ssl.SSLCertVerificationError):
        rogue.client_config("consumer", "aiokafka")["ssl_context"].wrap_socket(raw, server_hostname="127.0.0.1")
    thread.join(10)
    listener.close()


def test_a_wrong_store_password_names_the_key_and_file_and_shows_no_password(pki, stores, tmp_path):
    worker = config(tmp_path, **{"security.protocol": "SSL", "ssl.truststore.location": str(stores["trust_jks"]),
                                 "ssl.truststore.password": WRONG})
    with pytest.raises(ConfigError) as caught:
        worker.client_config("producer", "confluent")
    message = str(caught.value)
    assert f"worker.properties:7: ssl.truststore.location='{stores['trust_jks']}': cannot read the JKS store " \
           "with ssl.truststore.password: " in message and "password was incorrect" in message
    assert WRONG not in message


def test_ssl_without_stores_trusts_the_systems_cas(tmp_path):
    worker = config(tmp_path, **{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                 "sasl.jaas.config": 'x required username="u" password="p";'})
    assert not any(k.startswith("ssl.") and k.endswith(".pem") for k in worker.client_config("producer", "confluent"))
    assert worker.client_config("admin", "aiokafka")["ssl_context"].verify_mode == ssl.CERT_REQUIRED
