"""Security of the REST API: TLS listeners, HTTP Basic authentication, CORS.

Each is off until the worker config asks for it:

- every ``https://`` entry of ``listeners`` is served with the
  :class:`ssl.SSLContext` of :func:`server_ssl_context`, built from the
  ``listeners.https.ssl.*`` keys or, when no ``listeners.https.`` key is set
  at all, from the worker's own ``ssl.*`` keys (Kafka Connect's
  all-or-nothing rule); the ``https://`` entries of ``admin.listeners``
  (:func:`admin_listeners`) likewise from ``admin.listeners.https.ssl.*``;
- ``rest.extension.classes`` naming Kafka's ``BasicAuthSecurityRestExtension``
  turns on :func:`basic_auth_middleware`, with the users of
  ``rest.basic.auth.credentials.file`` (or of the file a JAAS file's
  ``PropertyFileLoginModule`` names), read once at start;
- ``access.control.allow.origin`` turns on :func:`cors_middleware`, which
  answers as Jetty's ``CrossOriginFilter`` does for Kafka Connect;
- ``response.http.headers.config`` adds headers to every response
  (:mod:`connectd.rest.headers`).

Passwords — of key stores, keys and users — may be ``${provider:…}``
placeholders; they are resolved through the worker's config providers, which
register them for redaction, and no message or log line ever quotes one.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import re
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from secrets import token_bytes, token_urlsafe
from typing import TYPE_CHECKING, Any

from aiohttp import hdrs, web

from connectd.config.clients import parse_jaas
from connectd.config.definitions import ConfigProblem, display_value, without_value
from connectd.config.properties import load_properties
from connectd.config.providers import has_placeholder
from connectd.config.worker import BASIC_AUTH_EXTENSIONS
from connectd.errors import ConfigError
from connectd.logging import get_logger
from connectd.rest.app import Listener
from connectd.rest.errors import error_response
from connectd.rest.headers import response_headers_middleware
from connectd.secrets import Secret

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.serialization.pkcs12 import PKCS12KeyAndCertificates

    from connectd.config.worker import WorkerConfig

__all__ = [
    "PUBLIC_PATHS",
    "admin_listeners",
    "basic_auth_middleware",
    "cors_middleware",
    "load_credentials",
    "rest_listeners",
    "rest_middlewares",
    "server_ssl_context",
]

log = get_logger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Middleware = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]


def rest_listeners(config: WorkerConfig) -> list[Listener]:
    """Every entry of ``listeners``, the https ones with their TLS context (one context for all).

    :raises ConfigError: if a listener is malformed or the TLS settings are wrong.
    """
    return _listeners(config, "listeners")


def admin_listeners(config: WorkerConfig) -> list[Listener] | None:
    """Every entry of ``admin.listeners`` (KIP-495), as :func:`rest_listeners` does for ``listeners``.

    https ones take their TLS settings from ``admin.listeners.https.ssl.*``, or
    from the worker's ``ssl.*`` keys when no ``admin.listeners.https.`` key is set.

    :returns: ``None`` when unset (the /admin endpoints are served on
        ``listeners``); empty when set empty (they are not served at all).
    :raises ConfigError: if a listener is malformed or the TLS settings are wrong.
    """
    if config.get("admin.listeners") is None:
        return None
    return _listeners(config, "admin.listeners")


def _listeners(config: WorkerConfig, key: str) -> list[Listener]:
    listeners = [Listener.parse(text) for text in config.get(key)]
    if any(listener.scheme == "https" for listener in listeners):
        context = server_ssl_context(config, listeners_key=key)
        listeners = [Listener(lst.scheme, lst.host, lst.port, context if lst.scheme == "https" else None)
                     for lst in listeners]
    return listeners


def rest_middlewares(config: WorkerConfig) -> list[Middleware]:
    """The configured response headers (outermost, so that every answer carries them), CORS (so that
    refusals carry its headers too) and Basic authentication, as configured.

    :raises ConfigError: if the credentials cannot be read or the response headers are malformed.
    """
    middlewares: list[Middleware] = []
    headers = response_headers_middleware(config)
    if headers is not None:
        middlewares.append(headers)
    origins = (config.get("access.control.allow.origin") or "").strip()
    if origins:
        middlewares.append(cors_middleware(origins, config.get("access.control.allow.methods") or ""))
    credentials = load_credentials(config)
    if credentials is not None:
        middlewares.append(basic_auth_middleware(credentials))
    return middlewares


# --- TLS ---------------------------------------------------------------------

# What the https listeners read, by un-prefixed name; declared in connectd.config.worker.
_TLS_KEYS = frozenset({
    "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type", "ssl.truststore.certificates",
    "ssl.client.auth", "ssl.enabled.protocols", "ssl.cipher.suites",
})

_TLS_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}

# OpenSSL always enables these; Python's ssl module cannot choose among them.
_TLS13_SUITES = frozenset({
    "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256",
})

_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


class _TlsSettings:
    """The ``ssl.*`` keys the https listeners of *listeners_key* read: all under ``<listeners_key>.https.``,
    or all un-prefixed."""

    def __init__(self, config: WorkerConfig, listeners_key: str = "listeners") -> None:
        self.config = config
        self.listeners_key = listeners_key
        self.https_prefix = f"{listeners_key}.https."
        self.prefix = self.https_prefix if config.with_prefix(self.https_prefix) else ""

    def key(self, name: str) -> str:
        return self.prefix + name

    def is_set(self, name: str) -> bool:
        return self.config.raw(self.key(name)) is not None

    def get(self, name: str) -> Any:
        """The typed value (passwords as :class:`Secret`), resolved; the declared default if unset."""
        declared = self.config.definition[name]
        key = self.key(name)
        written = self.config.raw(key)
        if written is None:
            return declared.default_value()
        resolved = self.config.resolved(key)
        try:
            return declared.parse(resolved)
        except ValueError as exc:
            message = without_value(str(exc)) if has_placeholder(written) else str(exc)
            raise self.error(name, message) from None

    def error(self, name: str, message: str, *, with_value: bool = True) -> ConfigError:
        """A problem with *name* (prefixed as written), naming the file and line and the value unless secret."""
        key = self.key(name)
        written = self.config.raw(key)
        shown = display_value(self.config.definition.get(name), written) if with_value else None
        return ConfigError([ConfigProblem(self.config.origin(key), key, message, shown)])

    def warn_ignored(self) -> None:
        if not self.prefix:
            return  # the un-prefixed ssl.* keys also serve the Kafka clients, which read the rest
        for name in self.config.with_prefix(self.prefix):
            if name not in _TLS_KEYS:
                log.warning("rest_tls_setting_ignored", key=self.prefix + name,
                            reason="Python's ssl module has no such setting")


def server_ssl_context(config: WorkerConfig, *, listeners_key: str = "listeners") -> ssl.SSLContext:
    """The TLS context of the https listeners of *listeners_key* (``listeners`` or ``admin.listeners``).

    The key store is a PKCS12 store or a PEM file (certificate chain and
    private key), or the PEM values ``ssl.keystore.certificate.chain`` and
    ``ssl.keystore.key``; the trust store is a PKCS12 store or PEM
    certificates. The content of a file tells its format; JKS stores are
    refused with the command that converts them to PKCS12.

    :raises ConfigError: naming the key and file for anything missing, unreadable or wrong.
    """
    settings = _TlsSettings(config, listeners_key)
    settings.warn_ignored()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_key_store(context, settings)
    trusted = _load_trust_store(context, settings)
    client_auth = settings.get("ssl.client.auth").lower()
    if client_auth != "none":
        if not trusted:
            raise settings.error("ssl.client.auth", f"client certificates are checked against a trust store: set "
                                 f"{settings.key('ssl.truststore.location')} to a PEM file or PKCS12 store of the "
                                 "CA certificates")
        context.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
    versions = sorted(_TLS_VERSIONS[name] for name in settings.get("ssl.enabled.protocols"))
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    _set_cipher_suites(context, settings)
    return context


def _load_key_store(context: ssl.SSLContext, settings: _TlsSettings) -> None:
    location = settings.get("ssl.keystore.location")
    chain = settings.get("ssl.keystore.certificate.chain")
    key = settings.get("ssl.keystore.key")
    written_type = settings.get("ssl.keystore.type").upper() if settings.is_set("ssl.keystore.type") else None
    # Kafka takes ssl.key.password for PEM keys; a store converted from
    # PKCS12 often keeps its one password in ssl.keystore.password.
    password = settings.get("ssl.key.password") or settings.get("ssl.keystore.password")
    if location is None and chain is None and key is None:
        where = f"{settings.https_prefix}ssl.keystore.location" + ("" if settings.prefix else " (or ssl.keystore.location)")
        raise ConfigError([ConfigProblem(
            settings.config.origin(settings.listeners_key), settings.listeners_key,
            f"https listeners need a certificate and its private key: set {where} to a PEM file or PKCS12 store "
            "holding both")])
    if location is not None:
        if chain is not None or key is not None:
            raise settings.error("ssl.keystore.location", f"set it or {settings.key('ssl.keystore.certificate.chain')} "
                                 f"and {settings.key('ssl.keystore.key')}, not both")
        data = _read_store(settings, "ssl.keystore.location", location)
        if _store_format(settings, "ssl.keystore", data, written_type) == "PKCS12":
            _load_pkcs12_key_store(context, settings, data)
            return
        labels = {label for label, _ in _pem_blocks(data.decode("latin-1"))}
        if "CERTIFICATE" not in labels:
            raise settings.error("ssl.keystore.location", "holds no PEM certificate")
        if not any(label.endswith("PRIVATE KEY") for label in labels):
            raise settings.error("ssl.keystore.location", "holds no PEM private key")
        _load_chain(context, settings, "ssl.keystore.location", location, password)
        return
    if written_type not in (None, "PEM"):
        raise settings.error("ssl.keystore.type", f"{settings.key('ssl.keystore.key')} and "
                             f"{settings.key('ssl.keystore.certificate.chain')} are PEM: set it to PEM")
    if chain is None or key is None:
        missing = "ssl.keystore.key" if key is None else "ssl.keystore.certificate.chain"
        present = "ssl.keystore.certificate.chain" if key is None else "ssl.keystore.key"
        raise settings.error(present, f"also set {settings.key(missing)}", with_value=False)
    with _private_file("keystore.pem", (_pem_text(key.value()) + _pem_text(chain.value())).encode("ascii")) as path:
        _load_chain(context, settings, "ssl.keystore.key", path, password)


def _load_pkcs12_key_store(context: ssl.SSLContext, settings: _TlsSettings, data: bytes) -> None:
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, PrivateFormat

    # A PKCS12 store has one password, for the store and its key: Kafka opens
    # it with ssl.keystore.password; ssl.key.password stands in when that is unset.
    only_key_password = settings.is_set("ssl.key.password") and not settings.is_set("ssl.keystore.password")
    name = "ssl.key.password" if only_key_password else "ssl.keystore.password"
    store = _open_pkcs12(settings, "ssl.keystore.location", data, name)
    if store.key is None:
        raise settings.error("ssl.keystore.location", "is a PKCS12 store without a private key")
    if store.cert is None:
        raise settings.error("ssl.keystore.location", "is a PKCS12 store without the certificate of its private key")
    # load_cert_chain reads files only. Encrypted with a password used once,
    # the key is never written out in the clear.
    once = token_urlsafe(32)
    key = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(once.encode("ascii")))
    chain = [store.cert, *store.additional_certs]
    with _private_file("keystore.pem", key + b"".join(c.certificate.public_bytes(Encoding.PEM) for c in chain)) as path:
        _load_chain(context, settings, "ssl.keystore.location", path, Secret(once))


def _load_chain(context: ssl.SSLContext, settings: _TlsSettings, name: str, path: str, password: Secret | None) -> None:
    asked = False

    def give_password() -> str:
        # Without this callback OpenSSL would prompt on the terminal for an encrypted key.
        nonlocal asked
        asked = True
        return password.value() if password is not None else ""

    try:
        context.load_cert_chain(path, password=give_password)
    except ssl.SSLError as exc:
        if asked and password is None:
            message = f"the private key is encrypted: set {settings.key('ssl.key.password')}"
        elif asked:
            written = settings.key("ssl.key.password") if settings.is_set("ssl.key.password") else settings.key("ssl.keystore.password")
            message = f"cannot decrypt the private key with {written}: wrong password?"
        elif exc.reason == "KEY_VALUES_MISMATCH":
            message = "the private key does not belong to the first certificate"
        else:
            message = f"cannot read a certificate chain and private key from it: {exc.reason or 'not PEM'}"
        raise settings.error(name, message, with_value=name.endswith(".location")) from None


def _load_trust_store(context: ssl.SSLContext, settings: _TlsSettings) -> bool:
    location = settings.get("ssl.truststore.location")
    certificates = settings.get("ssl.truststore.certificates")
    if location is not None and certificates is not None:
        raise settings.error("ssl.truststore.location",
                             f"set it or {settings.key('ssl.truststore.certificates')}, not both")
    written_type = settings.get("ssl.truststore.type").upper() if settings.is_set("ssl.truststore.type") else None
    if location is not None:
        data = _read_store(settings, "ssl.truststore.location", location)
        if _store_format(settings, "ssl.truststore", data, written_type) == "PKCS12":
            context.load_verify_locations(cadata=_pkcs12_trusted(settings, data))
            return True
    try:
        if location is not None:
            context.load_verify_locations(cafile=location)
        elif certificates is not None:
            context.load_verify_locations(cadata=_pem_text(certificates.value()))
        else:
            return False
    except ssl.SSLError:
        name = "ssl.truststore.location" if location is not None else "ssl.truststore.certificates"
        raise settings.error(name, "holds no PEM certificate", with_value=location is not None) from None
    return True


def _pkcs12_trusted(settings: _TlsSettings, data: bytes) -> str:
    """The certificates of a PKCS12 trust store, in PEM."""
    from cryptography.hazmat.primitives.serialization import Encoding

    store = _open_pkcs12(settings, "ssl.truststore.location", data, "ssl.truststore.password")
    if store.key is not None:
        # Java would trust only the certificate of the key, not the CA that
        # signed it; guessing which certificates are meant is no job for a trust store.
        source = settings.config.resolved(settings.key("ssl.truststore.location"))
        raise settings.error("ssl.truststore.location", "holds a private key: it is a key store, and a trust store "
                             "holds only the certificates of the CAs that client certificates are signed by "
                             f"(openssl pkcs12 -in {source} -nokeys -cacerts -out ca.pem writes them out)")
    certificates = [c.certificate for c in (store.cert, *store.additional_certs) if c is not None]
    if not certificates:
        raise settings.error("ssl.truststore.location", "is a PKCS12 store without certificates")
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certificates)


def _open_pkcs12(settings: _TlsSettings, name: str, data: bytes, password_name: str) -> PKCS12KeyAndCertificates:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.serialization import pkcs12

    password = settings.get(password_name)
    data = data[:_pkcs12_size(data)]  # as Java and OpenSSL do, whatever follows the store is not read
    try:
        return pkcs12.load_pkcs12(data, password.value().encode("utf-8") if password is not None else None)
    except UnsupportedAlgorithm as exc:
        raise settings.error(name, "is a PKCS12 store encrypted with an algorithm the cryptography package "
                             f"cannot read: {exc}") from None
    except ValueError:
        # cryptography cannot tell the two apart: a damaged store fails the
        # same integrity check as a wrong password.
        if password is None:
            message = f"is a PKCS12 store protected by a password: set {settings.key(password_name)}"
        else:
            message = (f"cannot open the PKCS12 store with {settings.key(password_name)}: "
                       "wrong password, or a damaged file?")
        raise settings.error(name, message) from None


@contextmanager
def _private_file(name: str, content: bytes) -> Iterator[str]:
    """*content* in a file only this user can read, in a private directory removed on exit."""
    with tempfile.TemporaryDirectory(prefix="connectd-tls-") as directory:
        path = Path(directory) / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(content)
        yield str(path)


def _read_store(settings: _TlsSettings, name: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise settings.error(name, f"cannot read the file: {exc.strerror or exc}") from None


def _store_format(settings: _TlsSettings, store: str, data: bytes, written_type: str | None) -> str:
    """``PEM`` or ``PKCS12``, by the file's content; JKS stores and anything else are refused."""
    location = f"{store}.location"
    pkcs12_size = _pkcs12_size(data)
    if pkcs12_size is not None:
        if pkcs12_size > len(data):
            raise settings.error(location, f"is a PKCS12 store cut short: {len(data)} of its {pkcs12_size} bytes")
        return "PKCS12"
    if b"-----BEGIN " in data[:65536]:
        return "PEM"
    if data[:4] in (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce") or written_type == "JKS":
        # No well-kept Python library reads JKS; Java's keytool converts it to PKCS12.
        source = settings.config.resolved(settings.key(location))
        target = Path(source).with_suffix(".p12")
        target = str(target) if str(target) != source else source + ".p12"
        password = "ssl.keystore.password" if store == "ssl.keystore" else "ssl.truststore.password"
        raise settings.error(location, "is a JKS store, which only Java reads; convert it to PKCS12 with keytool "
                             f"-importkeystore -srckeystore {source} -destkeystore {target} -deststoretype PKCS12, "
                             f"then set {settings.key(location)}={target}, {settings.key(store + '.type')}=PKCS12 "
                             f"and {settings.key(password)} to the new store's password (keytool asks for it)")
    if written_type == "PKCS12":
        raise settings.error(location, "is not a PKCS12 store")
    raise settings.error(location, "is neither a PEM file nor a PKCS12 store")


def _pkcs12_size(data: bytes) -> int | None:
    """The size a PKCS12 store at the start of *data* declares, or ``None`` if *data* is not one.

    A PKCS12 store is DER: ``SEQUENCE { INTEGER 3, ... }`` — unlike a DER
    certificate (a SEQUENCE first inside) or private key (version 0 or 1).
    """
    if len(data) < 5 or data[0] != 0x30:
        return None
    if data[1] < 0x80:
        header, length = 2, data[1]
    elif data[1] == 0x80:  # BER's indefinite length: the end is found by reading it all
        header, length = 2, None
    elif data[1] <= 0x84:
        header = 2 + (data[1] & 0x7F)
        length = int.from_bytes(data[2:header], "big")
    else:
        return None
    if data[header:header + 3] != b"\x02\x01\x03":
        return None
    return len(data) if length is None else header + length


def _pem_blocks(text: str) -> list[tuple[str, str]]:
    return [(match.group(1), match.group(2)) for match in _PEM_BLOCK.finditer(text)]


def _pem_text(value: str) -> str:
    """PEM blocks of a config value, one line each when the properties file joined them, rewrapped."""
    blocks = []
    for label, body in _pem_blocks(value):
        if ":" in body:  # headers of a traditionally encrypted key: keep the lines as written
            blocks.append(f"-----BEGIN {label}-----{body}-----END {label}-----\n")
            continue
        compact = "".join(body.split())
        lines = [compact[i:i + 64] for i in range(0, len(compact), 64)]
        blocks.append("\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]) + "\n")
    return "".join(blocks)


def _set_cipher_suites(context: ssl.SSLContext, settings: _TlsSettings) -> None:
    suites = settings.get("ssl.cipher.suites")
    if not suites:
        return
    tls12: list[str] = []
    tls13: list[str] = []
    unknown: list[str] = []
    for name in suites:
        if name in _TLS13_SUITES:
            tls13.append(name)
        elif _cipher_known(openssl_name := _openssl_cipher_name(name)):
            tls12.append(openssl_name)
        else:
            unknown.append(name)
    if unknown:
        raise settings.error("ssl.cipher.suites", f"unknown to this OpenSSL: {', '.join(unknown)} "
                             "(write standard names such as TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, or OpenSSL's)")
    if tls12:
        context.set_ciphers(":".join(tls12))
    elif tls13:
        if context.maximum_version < ssl.TLSVersion.TLSv1_3:
            raise settings.error("ssl.cipher.suites", "lists only TLS 1.3 suites, but TLSv1.3 is not among "
                                 f"{settings.key('ssl.enabled.protocols')}")
        context.minimum_version = ssl.TLSVersion.TLSv1_3


_IANA_CIPHER = re.compile(
    r"TLS_(ECDHE_RSA|ECDHE_ECDSA|DHE_RSA|DHE_DSS|RSA)_WITH_"
    r"(?:(AES_(?:128|256))_(GCM|CBC|CCM(?:_8)?)|(CHACHA20_POLY1305))(?:_(SHA384|SHA256|SHA))?"
)


def _openssl_cipher_name(name: str) -> str:
    # Java's names are the standard (IANA) ones; OpenSSL has its own.
    match = _IANA_CIPHER.fullmatch(name)
    if match is None:
        return name
    exchange, aes, mode, chacha, mac = match.groups()
    prefix = "" if exchange == "RSA" else exchange.replace("_", "-") + "-"
    if chacha:
        return f"{prefix}CHACHA20-POLY1305"
    cipher = aes.replace("_", "")
    if mode == "CBC":
        return f"{prefix}{cipher}-{mac}"
    return f"{prefix}{cipher}-{mode}-{mac}" if mode == "GCM" else f"{prefix}{cipher}-{mode.replace('_', '')}"


def _cipher_known(name: str) -> bool:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(name)
    except ssl.SSLError:
        return False
    return True


# --- HTTP Basic authentication -------------------------------------------------

#: Answered without credentials: load balancers and orchestrators probe it, and it tells nothing.
PUBLIC_PATHS = frozenset({"/health"})

_REALM = "connectd"
_UNAUTHORIZED = "User cannot access the resource."  # Kafka's BasicAuthSecurityRestExtension's words


def load_credentials(config: WorkerConfig) -> dict[str, Secret] | None:
    """The users and passwords Basic authentication accepts, or ``None`` when it is off.

    :raises ConfigError: if the files cannot be read, a placeholder does not
        resolve, or a user has no password (naming file and line).
    """
    extensions = config.get("rest.extension.classes") or []
    if not any(name in BASIC_AUTH_EXTENSIONS for name in extensions):
        for key in ("rest.basic.auth.credentials.file", "rest.basic.auth.jaas.file"):
            if config.raw(key):
                raise ConfigError([ConfigProblem(config.origin(key), key, "is set but rest.extension.classes does not "
                                                 "list BasicAuthSecurityRestExtension")])
        return None
    path = config.get("rest.basic.auth.credentials.file")
    jaas = config.get("rest.basic.auth.jaas.file")
    if path and jaas:
        raise ConfigError([ConfigProblem(config.origin("rest.basic.auth.jaas.file"), "rest.basic.auth.jaas.file",
                                         "set rest.basic.auth.credentials.file or rest.basic.auth.jaas.file, not both")])
    if jaas:
        path = _jaas_credentials_file(config, jaas)
    elif not path:
        raise ConfigError([ConfigProblem(config.origin("rest.extension.classes"), "rest.extension.classes",
                                         "BasicAuthSecurityRestExtension needs rest.basic.auth.credentials.file "
                                         "(or rest.basic.auth.jaas.file) to name the users and their passwords")])
    key = "rest.basic.auth.jaas.file" if jaas else "rest.basic.auth.credentials.file"
    if not Path(path).is_file():
        raise ConfigError([f"{config.origin(key)}: {key}: {path}: no such file"])
    properties = load_properties(path)
    users: dict[str, Secret] = {}
    problems: list[str] = []
    for user in properties:
        written = properties[user]
        try:
            password = config.providers.resolve(written) if has_placeholder(written) else written
        except ConfigError as exc:
            problems.extend(f"{properties.origin(user)}: user {user}: {p}" for p in exc.problems)
            continue
        if not password:
            problems.append(f"{properties.origin(user)}: user {user} has an empty password")
            continue
        users[user] = Secret(password)
    if not properties:
        problems.append(f"{path}: lists no users (expected user=password lines)")
    if problems:
        raise ConfigError(problems)
    log.info("rest_basic_auth_enabled", credentials_file=str(path), users=len(users))
    return users


_JAAS_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*|#[^\n]*", re.DOTALL)
_JAAS_ENTRY = re.compile(r"([\w.-]+)\s*\{(.*?)\}\s*;", re.DOTALL)
_JAAS_MODULE = re.compile(r"([\w.$]+)\s+(?:required|requisite|sufficient|optional)\b(.*?);", re.DOTALL)


def _jaas_credentials_file(config: WorkerConfig, jaas: str) -> str:
    """The ``file=`` option of the ``PropertyFileLoginModule`` in the ``KafkaConnect`` entry of a JAAS file."""
    where = f"{config.origin('rest.basic.auth.jaas.file')}: rest.basic.auth.jaas.file: {jaas}"
    try:
        text = Path(jaas).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{where}: cannot read the file: {exc.strerror or exc}"]) from None
    entries = {name: body for name, body in _JAAS_ENTRY.findall(_JAAS_COMMENTS.sub("", text))}
    if "KafkaConnect" not in entries:
        raise ConfigError([f"{where}: has no KafkaConnect {{ … }}; entry"])
    for module, options in _JAAS_MODULE.findall(entries["KafkaConnect"]):
        if module.rsplit(".", 1)[-1] == "PropertyFileLoginModule":
            file = parse_jaas(options).get("file")
            if not file:
                raise ConfigError([f"{where}: PropertyFileLoginModule has no file= option"])
            return file
    known = "PropertyFileLoginModule, the only login module connectd knows"
    raise ConfigError([f"{where}: the KafkaConnect entry has no {known}"])


def basic_auth_middleware(credentials: Mapping[str, Secret | str], *, realm: str = _REALM) -> Middleware:
    """Answer 401 to requests without a valid ``Authorization: Basic`` header.

    ``GET /health`` is answered without credentials (:data:`PUBLIC_PATHS`).
    Neither the header nor a password is ever logged.

    :param credentials: user → password.
    """
    users = {user: (p.value() if isinstance(p, Secret) else p).encode("utf-8") for user, p in credentials.items()}
    # Unknown users are compared against this, so that they take as long as known ones.
    decoy = token_bytes(32)
    challenge = f'Basic realm="{realm}", charset="UTF-8"'

    @web.middleware
    async def basic_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in ("GET", "HEAD") and request.path in PUBLIC_PATHS:
            return await handler(request)
        user, password = _basic_credentials(request.headers.get(hdrs.AUTHORIZATION))
        expected = users.get(user) if user is not None else None
        matches = hmac.compare_digest(password or b"", expected if expected is not None else decoy)
        if expected is None or not matches:
            # Debug, as Kafka does: a mistyped password is not worth a log line each time.
            log.debug("rest_authentication_failed", method=request.method, path=request.path, remote=request.remote,
                      reason="no credentials" if user is None else "unknown user" if expected is None else "wrong password")
            response = error_response(401, _UNAUTHORIZED)
            response.headers[hdrs.WWW_AUTHENTICATE] = challenge
            return response
        return await handler(request)

    return basic_auth


def _basic_credentials(header: str | None) -> tuple[str | None, bytes | None]:
    if not header:
        return None, None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None, None
    try:
        decoded = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None, None
    user, colon, password = decoded.partition(b":")
    if not colon or not user:
        return None, None
    try:
        return user.decode("utf-8"), password
    except UnicodeDecodeError:
        return None, None


# --- CORS --------------------------------------------------------------------

# Jetty CrossOriginFilter's defaults, which Kafka Connect keeps, plus
# Authorization so that a browser may send Basic credentials.
_ALLOWED_HEADERS = ("X-Requested-With", "Content-Type", "Accept", "Origin", "Authorization")
_DEFAULT_METHODS = ("GET", "POST", "HEAD")
_PREFLIGHT_MAX_AGE = "1800"


def cors_middleware(allow_origin: str, allow_methods: str = "") -> Middleware:
    """Cross-origin requests as Kafka Connect's ``access.control.allow.*`` settings allow them.

    A preflight (``OPTIONS`` with ``Access-Control-Request-Method``) from an
    allowed origin for an allowed method is answered 200 with the
    ``Access-Control-Allow-*`` headers, before authentication (browsers send
    no credentials with it); from any other origin, or for another method or
    header, 403. Other requests from an allowed origin get
    ``Access-Control-Allow-Origin``; from other origins they are served
    without it, so the browser hides the answer.

    :param allow_origin: origins, comma-separated; ``*`` in one matches any
        characters; ``*`` alone allows every origin, without credentials.
    :param allow_methods: methods, comma-separated; empty means GET, POST, HEAD.
    """
    patterns = [item.strip() for item in allow_origin.split(",") if item.strip()]
    any_origin = "*" in patterns
    matchers = [re.compile(".*".join(re.escape(part) for part in p.lower().split("*"))) for p in patterns]
    methods = tuple(m.strip().upper() for m in allow_methods.split(",") if m.strip()) or _DEFAULT_METHODS
    allowed_headers = {h.lower() for h in _ALLOWED_HEADERS}

    def allows(origin: str) -> bool:
        return any_origin or any(m.fullmatch(origin.lower()) for m in matchers)

    def origin_headers(origin: str) -> dict[str, str]:
        if any_origin:
            # Echoing any origin with credentials allowed would let every web
            # page use a browser's cached Basic credentials: "*" never does.
            return {"Access-Control-Allow-Origin": "*"}
        return {"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Credentials": "true", "Vary": "Origin"}

    @web.middleware
    async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is None:
            return await handler(request)
        method = request.headers.get(hdrs.ACCESS_CONTROL_REQUEST_METHOD)
        if request.method == "OPTIONS" and method is not None:
            requested = [h.strip() for h in request.headers.get(hdrs.ACCESS_CONTROL_REQUEST_HEADERS, "").split(",") if h.strip()]
            if not allows(origin):
                return error_response(403, "Cross-origin requests from this origin are not allowed")
            if method.upper() not in methods:
                return error_response(403, f"Cross-origin {method} requests are not allowed")
            if any(h.lower() not in allowed_headers for h in requested):
                return error_response(403, "Cross-origin requests with these headers are not allowed")
            return web.Response(status=200, headers={
                **origin_headers(origin),
                "Access-Control-Allow-Methods": ",".join(methods),
                "Access-Control-Allow-Headers": ",".join(_ALLOWED_HEADERS),
                "Access-Control-Max-Age": _PREFLIGHT_MAX_AGE,
            })
        if not allows(origin):
            return await handler(request)
        try:
            response = await handler(request)
        except web.HTTPException as exc:  # redirects pass through the error middleware as exceptions
            exc.headers.update(origin_headers(origin))
            raise
        if not response.prepared:
            for name, value in origin_headers(origin).items():
                if name == "Vary":
                    response.headers.add(name, value)
                else:
                    response.headers[name] = value
        return response

    return cors
