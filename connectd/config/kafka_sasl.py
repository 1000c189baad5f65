"""SASL for the Kafka clients from Kafka's keys: what librdkafka and aiokafka are given.

Kafka's clients authenticate with ``sasl.mechanism`` (GSSAPI by default) and a
JAAS line (``sasl.jaas.config``); OAUTHBEARER also reads
``sasl.login.callback.handler.class`` and ``sasl.oauthbearer.token.endpoint.url``.
Every option read from the JAAS line is secret: it is never logged or shown.

=================================  ==============================================================
Kafka's                            librdkafka / aiokafka
=================================  ==============================================================
PLAIN, SCRAM-SHA-256, -512         ``sasl.username``/``sasl.password`` / ``sasl_plain_username``/
                                   ``sasl_plain_password``, from the JAAS ``username``, ``password``
OAUTHBEARER with Kafka's           ``sasl.oauthbearer.method=oidc`` with the token endpoint, the
``OAuthBearerLoginCallbackHandler``  JAAS ``clientId``, ``clientSecret``, ``scope`` and
and a token endpoint               ``extension_<name>`` options / a token provider that asks the
                                   endpoint for client-credentials tokens, kept until they expire
AWS MSK IAM: ``AWS_MSK_IAM`` with  OAUTHBEARER with tokens of ``aws-msk-iam-sasl-signer-python``
``IAMLoginModule``, or OAUTHBEARER (the JAAS ``awsProfileName`` or ``awsRoleArn``, else the
with ``IAMOAuthBearerLoginCallback  default AWS credentials), for the region of ``AWS_REGION`` or
Handler``                          of the brokers' host names (MSK takes both on its IAM port)
GSSAPI (Kerberos)                  refused: this librdkafka is built without it
=================================  ==============================================================
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from connectd.config.definitions import ConfigProblem

if TYPE_CHECKING:
    from aiokafka.abc import AbstractTokenProvider

__all__ = ["SASL_KEYS", "parse_jaas", "sasl_settings"]

#: The keys read here (the others a client maps itself).
SASL_KEYS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.oauthbearer.token.endpoint.url")

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+?))(?=\s|;|$)')
_IAM_HANDLERS = ("software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",)
_OIDC_HANDLERS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                  "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler")
_MSK_HOST = re.compile(r"\.kafka(?:-serverless)?\.([a-z0-9-]+)\.amazonaws\.com(?::\d+)?$")
#: A token is asked again this long before it expires.
_EARLY_S = 60.0


def parse_jaas(text: str) -> dict[str, str]:
    """The options of a ``sasl.jaas.config`` line (``username``, ``password``, …)."""
    return {m.group(1): (m.group(2) if m.group(2) is not None else m.group(3)) for m in _JAAS_OPTION.finditer(text)}


def sasl_settings(merged: Mapping[str, tuple[str, str]], resolve: Callable[[str], str],
                  library: str) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """A client's SASL settings for *library* (``confluent`` or ``aiokafka``), and the problems.

    :param merged: Java key → (value as written, the key it was written under), as
        :func:`connectd.config.clients.client_settings` merged them.
    """
    def value(key: str) -> str | None:
        return resolve(merged[key][0]).strip() if key in merged else None

    def problem(key: str, message: str) -> ConfigProblem:
        shown = merged[key][0] if key in merged and key != "sasl.jaas.config" else None  # the JAAS line is secret
        return ConfigProblem(None, merged[key][1] if key in merged else key, message, shown)

    protocol = (value("security.protocol") or "PLAINTEXT").upper()
    jaas_text = resolve(merged["sasl.jaas.config"][0]) if "sasl.jaas.config" in merged else ""
    options = parse_jaas(jaas_text)
    if not protocol.startswith("SASL_"):
        return _credentials(options, library) if options else {}, []
    mechanism = (value("sasl.mechanism") or "GSSAPI").upper()
    if mechanism == "GSSAPI":
        key = "sasl.mechanism" if "sasl.mechanism" in merged else "security.protocol"
        return {}, [problem(key, "GSSAPI (Kerberos, Kafka's default mechanism) is not supported: the librdkafka "
                                 "here is built without it; expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
                                 "OAUTHBEARER or AWS_MSK_IAM")]
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        if "username" not in options or "password" not in options:
            return {}, [problem("sasl.jaas.config", f"{mechanism} needs the username and password options of its "
                                                    "login module")]
        return _credentials(options, library), []
    handler = value("sasl.login.callback.handler.class") or ""
    if mechanism == "AWS_MSK_IAM" or (mechanism == "OAUTHBEARER" and handler in _IAM_HANDLERS):
        try:
            provider: _Tokens = _MskIamTokens(options, _msk_region(value("bootstrap.servers") or ""))
        except ValueError as exc:
            return {}, [problem("sasl.mechanism", str(exc))]
    elif mechanism == "OAUTHBEARER":
        url = value("sasl.oauthbearer.token.endpoint.url")
        if not url or (handler and handler not in _OIDC_HANDLERS):
            key = "sasl.oauthbearer.token.endpoint.url" if not url else "sasl.login.callback.handler.class"
            return {}, [problem(key,
                                "OAUTHBEARER is supported with a token endpoint (sasl.oauthbearer.token.endpoint.url, "
                                "Kafka's OAuthBearerLoginCallbackHandler, clientId and clientSecret in the JAAS line) "
                                "or AWS MSK IAM's IAMOAuthBearerLoginCallbackHandler; Kafka's unsecured tokens and "
                                "other handlers are not")]
        if "clientId" not in options or "clientSecret" not in options:
            return {}, [problem("sasl.jaas.config", "OAUTHBEARER with a token endpoint needs the clientId and "
                                                    "clientSecret options of its login module")]
        if library == "confluent":
            settings = {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                        "sasl.oauthbearer.token.endpoint.url": url,
                        "sasl.oauthbearer.client.id": options["clientId"],
                        "sasl.oauthbearer.client.secret": options["clientSecret"]}
            if "scope" in options:
                settings["sasl.oauthbearer.scope"] = options["scope"]
            extensions = _extensions(options)
            if extensions:
                settings["sasl.oauthbearer.extensions"] = ",".join(f"{k}={v}" for k, v in extensions.items())
            return settings, []
        provider = _ClientCredentialsTokens(url, options)
    else:
        return {}, [problem("sasl.mechanism", f"unknown SASL mechanism {mechanism}; expected PLAIN, SCRAM-SHA-256, "
                                              "SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM")]
    if library == "confluent":
        return {"sasl.mechanism": "OAUTHBEARER", "oauth_cb": provider.confluent_callback}, []
    return {"sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": provider.aiokafka()}, []


def _credentials(options: Mapping[str, str], library: str) -> dict[str, Any]:
    if "username" not in options or "password" not in options:
        return {}
    if library == "confluent":
        return {"sasl.username": options["username"], "sasl.password": options["password"]}
    return {"sasl_plain_username": options["username"], "sasl_plain_password": options["password"]}


def _extensions(options: Mapping[str, str]) -> dict[str, str]:
    return {k.removeprefix("extension_"): v for k, v in options.items() if k.startswith("extension_")}


def _msk_region(bootstrap: str) -> str:
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        return region
    for server in bootstrap.split(","):
        match = _MSK_HOST.search(server.strip())
        if match:
            return match.group(1)
    raise ValueError("AWS MSK IAM signs for a region: set AWS_REGION, or bootstrap.servers to the cluster's "
                     "amazonaws.com names")


class _Tokens:
    """Tokens for OAUTHBEARER, asked for when the last is about to expire; for both libraries."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._token: tuple[str, float] | None = None  # token, expiry (epoch seconds)

    def get(self) -> tuple[str, float]:
        with self._lock:
            if self._token is None or self._token[1] - _EARLY_S <= time.time():
                self._token = self._fetch()
            return self._token

    def confluent_callback(self, _config: str) -> tuple[str, float]:
        """confluent-kafka's ``oauth_cb``: (token, expiry in epoch seconds)."""
        return self.get()

    def aiokafka(self) -> AbstractTokenProvider:
        # lazy: producers in Spark's processes (a source task's, a sink's) read these settings too
        from aiokafka.abc import AbstractTokenProvider

        tokens = self

        class Provider(AbstractTokenProvider):
            async def token(self) -> str:
                return (await asyncio.to_thread(tokens.get))[0]

            def extensions(self) -> dict[str, str]:
                return tokens.extensions()

        return Provider()

    def extensions(self) -> dict[str, str]:
        return {}

    def _fetch(self) -> tuple[str, float]:
        raise NotImplementedError


class _ClientCredentialsTokens(_Tokens):
    """OAuth 2 client-credentials tokens from *url*, as Kafka's OAuthBearerLoginCallbackHandler asks."""

    def __init__(self, url: str, options: Mapping[str, str]) -> None:
        super().__init__()
        self._url, self._options = url, dict(options)

    def extensions(self) -> dict[str, str]:
        return _extensions(self._options)

    def _fetch(self) -> tuple[str, float]:
        form = {"grant_type": "client_credentials"}
        if "scope" in self._options:
            form["scope"] = self._options["scope"]
        basic = base64.b64encode(f"{urllib.parse.quote(self._options['clientId'])}:"
                                 f"{urllib.parse.quote(self._options['clientSecret'])}".encode()).decode("ascii")
        request = urllib.request.Request(self._url, data=urllib.parse.urlencode(form).encode("ascii"), method="POST",
                                         headers={"Authorization": f"Basic {basic}",
                                                  "Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        return answer["access_token"], time.time() + float(answer.get("expires_in", 3600))


class _MskIamTokens(_Tokens):
    """AWS MSK IAM tokens, signed by aws-msk-iam-sasl-signer-python for *region*."""

    def __init__(self, options: Mapping[str, str], region: str) -> None:
        super().__init__()
        try:
            # lazy: an optional dependency (connectd[msk-iam]), only for clusters that use it
            from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
        except ImportError:
            raise ValueError("AWS MSK IAM needs the aws-msk-iam-sasl-signer-python package: install "
                             "connectd[msk-iam]") from None
        profile, role = options.get("awsProfileName"), options.get("awsRoleArn")
        if role:
            self._sign = lambda: MSKAuthTokenProvider.generate_auth_token_from_role_arn(region, role)
        elif profile:
            self._sign = lambda: MSKAuthTokenProvider.generate_auth_token_from_profile(region, profile)
        else:
            self._sign = lambda: MSKAuthTokenProvider.generate_auth_token(region)

    def _fetch(self) -> tuple[str, float]:
        token, expiry_ms = self._sign()
        return token, expiry_ms / 1000
