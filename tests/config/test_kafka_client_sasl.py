"""The Kafka clients' SASL from Kafka's keys, golden per mechanism for librdkafka and aiokafka, with a
real OAuth token endpoint on loopback and AWS's own MSK IAM signer. (The dev broker's
--authentication could not be made to check any of them: docs/migrating.md.)"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from connectd.config.worker import WorkerConfig
from connectd.errors import ConfigError

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr3t-pw";'


def config(tmp_path: Path, bootstrap: str = "127.0.0.1:9093", **values: str) -> WorkerConfig:
    lines = [f"bootstrap.servers={bootstrap}", "group.id=g", "config.storage.topic=c",
             "offset.storage.topic=o", "status.storage.topic=s", *(f"{k}={v}" for k, v in values.items())]
    path = tmp_path / "worker.properties"
    path.write_text("\n".join(lines) + "\n")
    return WorkerConfig.from_file(path)


def sasl_of(settings: dict) -> dict:
    return {k: v for k, v in settings.items() if k.startswith("sasl")}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_user_and_password_mechanisms(tmp_path, mechanism):
    worker = config(tmp_path, **{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                                 "sasl.jaas.config": PLAIN_JAAS})
    assert sasl_of(worker.client_config("producer", "confluent")) == {
        "sasl.mechanism": mechanism, "sasl.username": "alice", "sasl.password": "s3cr3t-pw"}
    assert sasl_of(worker.client_config("consumer", "aiokafka")) == {
        "sasl_mechanism": mechanism, "sasl_plain_username": "alice", "sasl_plain_password": "s3cr3t-pw"}


@pytest.mark.parametrize(("extra", "key", "line"), [
    ({}, "security.protocol", 6),
    ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism", 7),
])
def test_kerberos_is_refused_by_name(tmp_path, extra, key, line):
    worker = config(tmp_path, **{"security.protocol": "SASL_SSL", **extra})
    with pytest.raises(ConfigError, match=rf"worker.properties:{line}: {key}='[A-Z_]+': GSSAPI \(Kerberos, Kafka's "
                                          r"default mechanism\) is not supported: the librdkafka here is built "
                                          r"without it"):
        worker.client_config("producer", "confluent")


def test_a_user_and_password_mechanism_without_them_is_an_error(tmp_path):
    worker = config(tmp_path, **{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                 "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                                     "required;"})
    with pytest.raises(ConfigError, match="PLAIN needs the username and password options of its login module"):
        worker.client_config("admin", "aiokafka")


@pytest.fixture
def token_endpoint():
    """An OAuth 2 token endpoint on loopback: answers client-credentials requests, and records them."""
    asked: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            asked.append({"authorization": self.headers["Authorization"], **{k: v[0] for k, v in form.items()}})
            body = json.dumps({"access_token": f"token-{len(asked)}", "token_type": "bearer", "expires_in": 3600})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/oauth2/token", asked
    server.shutdown()
    server.server_close()


def oidc(tmp_path: Path, url: str) -> WorkerConfig:
    return config(tmp_path, **{
        "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": url,
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                            'clientId="connect" clientSecret="cl13nt-s3cret" scope="kafka" '
                            'extension_logicalCluster="lkc-1";'})


def test_oauthbearer_with_a_token_endpoint(tmp_path, token_endpoint):
    url, asked = token_endpoint
    worker = oidc(tmp_path, url)
    assert sasl_of(worker.client_config("producer", "confluent")) == {
        "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": url,
        "sasl.oauthbearer.client.id": "connect", "sasl.oauthbearer.client.secret": "cl13nt-s3cret",
        "sasl.oauthbearer.scope": "kafka", "sasl.oauthbearer.extensions": "logicalCluster=lkc-1"}
    settings = worker.client_config("consumer", "aiokafka")
    assert settings["sasl_mechanism"] == "OAUTHBEARER"
    provider = settings["sasl_oauth_token_provider"]
    tokens = [asyncio.run(provider.token()) for _ in range(2)]
    assert tokens == ["token-1", "token-1"]  # kept until it is about to expire
    assert provider.extensions() == {"logicalCluster": "lkc-1"}
    basic = base64.b64encode(b"connect:cl13nt-s3cret").decode()
    assert asked == [{"authorization": f"Basic {basic}", "grant_type": "client_credentials", "scope": "kafka"}]


@pytest.mark.parametrize(("extra", "key"), [
    ({"sasl.oauthbearer.token.endpoint.url": ""}, "sasl.oauthbearer.token.endpoint.url"),
    ({"sasl.login.callback.handler.class": "com.example.OwnHandler"}, "sasl.login.callback.handler.class"),
])
def test_oauthbearer_without_a_token_endpoint_or_with_another_handler_is_refused(tmp_path, extra, key):
    values = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
              "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/token",
              "sasl.jaas.config": 'x required clientId="a" clientSecret="b";', **extra}
    with pytest.raises(ConfigError, match=rf"{key}.*: OAUTHBEARER is supported with a token endpoint"):
        config(tmp_path, **values).client_config("producer", "confluent")


@pytest.mark.parametrize("values", [
    {"sasl.mechanism": "AWS_MSK_IAM", "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;"},
    {"sasl.mechanism": "OAUTHBEARER",
     "sasl.login.callback.handler.class": "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",
     "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"},
])
def test_aws_msk_iam_both_ways_are_oauthbearer_with_awss_signed_tokens(tmp_path, monkeypatch, values):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-key-not-real-0000000000000")
    worker = config(tmp_path, "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098",
                    **{"security.protocol": "SASL_SSL", **values})
    confluent = worker.client_config("producer", "confluent")
    assert confluent["sasl.mechanism"] == "OAUTHBEARER" and "sasl.username" not in confluent
    token, expiry = confluent["oauth_cb"]("")
    signed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    assert signed.startswith("https://kafka.eu-west-1.amazonaws.com/?Action=kafka-cluster%3AConnect")
    assert "X-Amz-Credential=AKIAEXAMPLEEXAMPLE00%2F" in signed and expiry > 0
    aiokafka = worker.client_config("admin", "aiokafka")
    assert aiokafka["sasl_mechanism"] == "OAUTHBEARER"
    assert asyncio.run(aiokafka["sasl_oauth_token_provider"].token()).startswith("aHR0cHM6Ly9rYWZrYS5ldS13ZXN0LTEu")
