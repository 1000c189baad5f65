"""``admin.listeners`` (KIP-495) and ``response.http.headers.config`` against a real server.

Certificates are made for the module with the ``openssl`` command, as in
test_rest_security.py: a CA and a server certificate for 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import ssl
import subprocess
import time
from email.utils import parsedate_to_datetime
from pathlib import Path

import aiohttp
import pytest

from connectd.config.response_headers import HeaderAction, parse_header_config
from connectd.config.worker import WorkerConfig
from connectd.config.worker_keys import BASIC_AUTH_EXTENSION
from connectd.errors import ConfigError
from connectd.rest.security import admin_listeners, rest_middlewares
from connectd.worker import Worker

ADMIN_PASSWORD = "admin-listener-pass-3c9e1a"


# --- certificates --------------------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    d = tmp_path_factory.mktemp("admin-pki")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=connectd admin test CA", cwd=d)
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost", cwd=d)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "server.ext", cwd=d)
    keystore = d / "keystore.pem"
    keystore.write_text((d / "server.key").read_text() + (d / "server.pem").read_text())
    return {"ca": d / "ca.pem", "keystore": keystore}


def _client_ssl(pki) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(pki["ca"]))


async def _status(http: aiohttp.ClientSession, url: str, **kwargs) -> int:
    async with http.get(url, **kwargs) as r:
        return r.status


# --- admin.listeners -------------------------------------------------------------


def test_admin_endpoints_are_served_only_on_the_admin_listeners(rest):
    async def scenario(http, herder):
        admin = rest.admin_server.url
        assert admin != rest.server.url and rest.admin_server.urls == [admin]
        async with http.get("/admin/loggers") as r:
            assert r.status == 404
            assert await r.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
        assert await _status(http, "/admin/loggers/root") == 404
        assert await _status(http, "/connectors") == 200
        async with http.get(f"{admin}/admin/loggers") as r:
            assert r.status == 200 and "root" in await r.json()
        async with http.put(f"{admin}/admin/loggers/connectd.test.admin", json={"level": "DEBUG"}) as r:
            assert r.status == 200 and "connectd.test.admin" in await r.json()
        async with http.put("/admin/loggers/connectd.test.admin", json={"level": "DEBUG"}) as r:
            assert r.status in (404, 405)
        for path in ("/", "/connectors", "/connector-plugins", "/openapi.json", "/health"):
            assert await _status(http, f"{admin}{path}") == 404, path
        return {r.resource.canonical for r in rest.admin_server.app.router.routes()}

    served = rest(scenario, worker={"admin.listeners": "http://127.0.0.1:0"})
    assert served == {"/admin/loggers", "/admin/loggers/{logger}"}


def test_empty_admin_listeners_serve_the_admin_endpoints_nowhere(rest):
    async def scenario(http, herder):
        assert rest.admin_server is None
        assert await _status(http, "/connectors") == 200
        return [await _status(http, path) for path in ("/admin/loggers", "/admin/loggers/root")]

    assert rest(scenario, worker={"admin.listeners": ""}) == [404, 404]


def test_unset_admin_listeners_serve_the_admin_endpoints_on_listeners(rest):
    async def scenario(http, herder):
        assert rest.admin_server is None
        return await _status(http, "/admin/loggers")

    assert rest(scenario, worker={}) == 200
    assert rest(scenario) == 200


def _config(worker_config, **extra: str) -> WorkerConfig:
    return WorkerConfig.from_file(worker_config.file(**extra))


def test_admin_listeners_as_parsed(worker_config, tmp_path):
    assert admin_listeners(_config(worker_config)) is None
    assert admin_listeners(_config(worker_config, **{"admin.listeners": ""})) == []
    parsed = admin_listeners(_config(worker_config, **{"admin.listeners": "http://127.0.0.1:9093, http://[::1]:0"}))
    assert [(lst.scheme, lst.host, lst.port, lst.ssl_context) for lst in parsed] == [
        ("http", "127.0.0.1", 9093, None), ("http", "::1", 0, None)]
    config = _config(worker_config, **{"admin.listeners": "ftp://127.0.0.1:1"})
    [problem] = [p for p in config.problems(check_classes=False) if p.is_error]
    assert str(problem).startswith(f"{tmp_path / 'worker.properties'}:5: admin.listeners='ftp://127.0.0.1:1': expected")
    # Its TLS keys are not settings of the admin client, whose prefix they share.
    config = _config(worker_config, **{"admin.listeners": "https://127.0.0.1:0",
                                       "admin.listeners.https.ssl.keystore.location": "/x.pem"})
    assert [str(p) for p in config.problems(check_classes=False)] == []


def test_https_admin_listener_with_its_own_tls_settings(rest, pki):
    async def scenario(http, herder):
        assert rest.server.url.startswith("http://")
        admin = rest.admin_server.url
        assert admin.startswith("https://127.0.0.1:")
        async with http.get(f"{admin}/admin/loggers") as r:
            assert r.status == 200
        async with aiohttp.ClientSession() as plain:  # does not trust the test CA
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await plain.get(f"{admin}/admin/loggers")
        return await _status(http, "/admin/loggers")

    worker = {"admin.listeners": "https://127.0.0.1:0",
              "admin.listeners.https.ssl.keystore.type": "PEM",
              "admin.listeners.https.ssl.keystore.location": str(pki["keystore"])}
    assert rest(scenario, worker=worker, ssl=_client_ssl(pki)) == 404


def test_https_admin_listener_tls_keys_all_or_nothing(rest, pki, tmp_path):
    async def scenario(http, herder):
        return await _status(http, f"{rest.admin_server.url}/admin/loggers")

    # No admin.listeners.https.* key: the worker's ssl.* keys serve.
    unprefixed = {"admin.listeners": "https://127.0.0.1:0", "ssl.keystore.location": str(pki["keystore"])}
    assert rest(scenario, worker=unprefixed, ssl=_client_ssl(pki)) == 200
    # One admin.listeners.https. key, and the worker's ssl.* keys are not read at all.
    prefixed = {**unprefixed, "ssl.keystore.location": str(tmp_path / "missing.pem"),
                "admin.listeners.https.ssl.keystore.location": str(pki["keystore"])}
    assert rest(scenario, worker=prefixed, ssl=_client_ssl(pki)) == 200
    with pytest.raises(ConfigError, match=r"admin.listeners: https listeners need a certificate .* set "
                                          r"admin.listeners.https.ssl.keystore.location"):
        rest(scenario, worker={"admin.listeners": "https://127.0.0.1:0",
                               "admin.listeners.https.ssl.truststore.location": str(pki["ca"])})
    # listeners.https.* is the main listeners' alone.
    with pytest.raises(ConfigError, match=r"admin.listeners: https listeners need a certificate"):
        rest(scenario, worker={"admin.listeners": "https://127.0.0.1:0",
                               "listeners.https.ssl.keystore.location": str(pki["keystore"])})
    message = str(pytest.raises(ConfigError, rest, scenario, worker={
        "admin.listeners": "https://127.0.0.1:0",
        "admin.listeners.https.ssl.keystore.location": str(tmp_path / "nope.pem")}).value)
    assert "admin.listeners.https.ssl.keystore.location=" in message and "cannot read the file" in message


def test_admin_listeners_ask_for_credentials_and_carry_the_headers(rest, tmp_path):
    users = tmp_path / "users.properties"
    users.write_text(f"admin={ADMIN_PASSWORD}\n", encoding="utf-8")
    basic = {"Authorization": "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()}

    async def scenario(http, herder):
        answers = []
        for headers in ({}, basic):
            async with http.get(f"{rest.admin_server.url}/admin/loggers", headers=headers) as r:
                answers.append((r.status, r.headers.get("X-Frame-Options")))
        return answers

    worker = {"admin.listeners": "http://127.0.0.1:0", "rest.extension.classes": BASIC_AUTH_EXTENSION,
              "rest.basic.auth.credentials.file": str(users),
              "response.http.headers.config": "set X-Frame-Options: DENY"}
    assert rest(scenario, worker=worker) == [(401, "DENY"), (200, "DENY")]


def test_worker_refuses_bad_admin_tls_before_touching_kafka(worker_config, tmp_path):
    config = _config(worker_config, **{"admin.listeners": "https://127.0.0.1:0",
                                       "admin.listeners.https.ssl.keystore.location": str(tmp_path / "nope.pem")})
    worker = Worker(config)
    with pytest.raises(ConfigError, match="admin.listeners.https.ssl.keystore.location=.*cannot read the file"):
        asyncio.run(worker.start())
    assert worker.state == "STOPPED"


# --- response.http.headers.config --------------------------------------------------

HEADERS = ('set X-Frame-Options: DENY, add Cache-Control: no-store, add Cache-Control: no-cache, '
           'setDate Expires: 3600000, "set Content-Security-Policy: default-src \'self\', frame-ancestors \'none\'", '
           'set Content-Type: application/json; charset=utf-8')


def _check_headers(headers) -> None:
    assert headers["X-Frame-Options"] == "DENY"
    assert headers.getall("Cache-Control") == ["no-store", "no-cache"]
    assert headers["Content-Security-Policy"] == "default-src 'self', frame-ancestors 'none'"
    assert headers["Content-Type"] == "application/json; charset=utf-8"  # set replaces the handler's
    expires = parsedate_to_datetime(headers["Expires"]).timestamp()
    assert abs(expires - (time.time() + 3600)) < 60
    assert headers["Expires"].endswith(" GMT")


def test_response_headers_on_answers_and_errors_on_every_listener(rest):
    async def scenario(http, herder):
        admin = rest.admin_server.url
        seen = []
        for method, url, body in (("GET", "/", None), ("GET", "/connectors", None), ("GET", "/no/such/path", None),
                                  ("POST", "/connectors", "{not json"), ("DELETE", "/", None),
                                  ("GET", f"{admin}/admin/loggers", None), ("GET", f"{admin}/connectors", None),
                                  ("PUT", f"{admin}/admin/loggers/x", "[")):
            async with http.request(method, url, data=body, headers={"Content-Type": "application/json"}) as r:
                _check_headers(r.headers)
                seen.append(r.status)
        return seen

    worker = {"admin.listeners": "http://127.0.0.1:0", "response.http.headers.config": HEADERS}
    assert rest(scenario, worker=worker) == [200, 200, 404, 400, 405, 200, 404, 400]


def test_add_date_and_case_of_actions():
    assert parse_header_config(" , SET  X-A:1 ,addDate Date: -1000,") == [
        HeaderAction("set", "X-A", "1"), HeaderAction("addDate", "Date", "-1000")]
    assert parse_header_config('"add X-B: a \\" b"') == [HeaderAction("add", "X-B", 'a " b')]
    assert parse_header_config("") == []


@pytest.mark.parametrize(("entry", "reason"), [
    ("bogus X-Frame-Options: DENY", "'bogus X-Frame-Options: DENY' has unknown action 'bogus'"),
    ("set", "'set' has no header after the action"),
    ("set X-Frame-Options DENY", "'set X-Frame-Options DENY' has no ':' between the header name and its value"),
    ("set : DENY", "'set : DENY' has an invalid header name ''"),
    ("add X Frame: DENY", "'add X Frame: DENY' has an invalid header name 'X Frame'"),
    ("setDate Expires: soon", "'setDate Expires: soon': setDate takes a number of milliseconds from now, not 'soon'"),
    ('"set X-A: b', "a double quote is not closed"),
])
def test_malformed_response_headers_are_a_config_error_naming_the_entry(worker_config, tmp_path, entry, reason):
    value = f"set X-Content-Type-Options: nosniff, {entry}"
    config = _config(worker_config, **{"response.http.headers.config": value})
    expected = (f"{tmp_path / 'worker.properties'}:5: response.http.headers.config={value!r}: "
                "expected comma-separated [action] [header name]:[header value] entries, "
                f"the action one of set, add, setDate, addDate: {reason}")
    with pytest.raises(ConfigError) as caught:
        rest_middlewares(config)
    assert str(caught.value) == expected
    # connectd config check (and the worker's start) report it the same way.
    assert [str(p) for p in config.problems(check_classes=False) if p.is_error] == [expected]


# --- through the worker ------------------------------------------------------------


@pytest.mark.integration
def test_worker_serves_admin_endpoints_on_admin_listeners(broker, spark, worker_config):
    config = _config(worker_config, **{"listeners": "http://127.0.0.1:0", "admin.listeners": "http://127.0.0.1:0",
                                       "response.http.headers.config": "set X-Frame-Options: DENY"})

    async def scenario():
        async with Worker(config) as worker:
            await worker.start_herder(spark)  # the suite's session: the worker must not stop it
            assert worker.admin_rest is not None and worker.admin_urls != worker.rest_urls
            async with aiohttp.ClientSession() as http:
                statuses = []
                for url in (*worker.rest_urls, *worker.admin_urls):
                    async with http.get(f"{url}/admin/loggers") as r:
                        statuses.append((r.status, r.headers.get("X-Frame-Options")))
            admin = worker.admin_rest
        return statuses, admin

    statuses, admin = asyncio.run(scenario())
    assert statuses == [(404, "DENY"), (200, "DENY")]
    assert admin.listeners and admin._runner is None  # stopped with the worker
