"""TLS for connectd's servers: key and trust stores loaded into an :class:`ssl.SSLContext`.

Key stores are PKCS12 stores or PEM files (certificate chain and private
key), or the PEM values ``ssl.keystore.certificate.chain`` and
``ssl.keystore.key``; trust stores are PKCS12 stores or PEM certificates.
The content of a file tells its format. JKS stores (Kafka's default type)
are converted to PKCS12 by Java's keytool, which is there wherever Spark's
Java is: no well-kept Python library reads them.

It reads the worker config's ``ssl.*`` keys (or their
``<listeners>.https.ssl.*`` copies) and names the file, line and key of
anything wrong, so it lives in ``connectd.config``, not in
``connectd.rest``: the REST listeners (:mod:`connectd.rest.security`) are
one user; requests between workers and the Kafka clients (:func:`client_tls`:
librdkafka's PEM settings and aiokafka's context) are others.
"""

from __future__ import annotations

import os
import re
import shutil
import ssl
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from secrets import token_urlsafe
from typing import TYPE_CHECKING, Any

from connectd.config.definitions import ConfigProblem, display_value, without_value
from connectd.config.providers import has_placeholder
from connectd.errors import ConfigError
from connectd.logging import get_logger
from connectd.secrets import Secret

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.serialization.pkcs12 import PKCS12KeyAndCertificates

    from connectd.config.worker import WorkerConfig

__all__ = ["ClientTls", "client_tls", "server_ssl_context"]

log = get_logger(__name__)


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

    def resolved(self, name: str) -> str:
        return self.config.resolved(self.key(name))

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
    converted to PKCS12 with Java's keytool.

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
        data, kind = _read_kind(settings, "ssl.keystore", location)
        if kind == "PKCS12":
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
    # lazy: cryptography (~60 ms) only for PKCS12 stores; every worker and command reads this module
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
    if location is not None:
        data, kind = _read_kind(settings, "ssl.truststore", location)
        if kind == "PKCS12":
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
    from cryptography.hazmat.primitives.serialization import Encoding  # lazy: as in _load_pkcs12_key_store

    store = _open_pkcs12(settings, "ssl.truststore.location", data, "ssl.truststore.password")
    if store.key is not None:
        # Java would trust only the certificate of the key, not the CA that
        # signed it; guessing which certificates are meant is no job for a trust store.
        source = settings.resolved("ssl.truststore.location")
        raise settings.error("ssl.truststore.location", "holds a private key: it is a key store, and a trust store "
                             "holds only the certificates of the CAs that client certificates are signed by "
                             f"(openssl pkcs12 -in {source} -nokeys -cacerts -out ca.pem writes them out)")
    certificates = [c.certificate for c in (store.cert, *store.additional_certs) if c is not None]
    if not certificates:
        raise settings.error("ssl.truststore.location", "is a PKCS12 store without certificates")
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certificates)


def _open_pkcs12(settings: _TlsSettings, name: str, data: bytes, password_name: str) -> PKCS12KeyAndCertificates:
    # lazy: as in _load_pkcs12_key_store
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
    """``PEM``, ``PKCS12`` or ``JKS``, by the file's content; anything else is refused."""
    location = f"{store}.location"
    pkcs12_size = _pkcs12_size(data)
    if pkcs12_size is not None:
        if pkcs12_size > len(data):
            raise settings.error(location, f"is a PKCS12 store cut short: {len(data)} of its {pkcs12_size} bytes")
        return "PKCS12"
    if b"-----BEGIN " in data[:65536]:
        return "PEM"
    if data[:4] in (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce") or written_type == "JKS":
        return "JKS"
    if written_type == "PKCS12":
        raise settings.error(location, "is not a PKCS12 store")
    raise settings.error(location, "is neither a PEM file nor a PKCS12 store")


def _read_kind(settings: Any, store: str, location: str) -> tuple[bytes, str]:
    """The store *store* (``ssl.keystore``, ``ssl.truststore``) at *location*, and its kind, ``PEM`` or
    ``PKCS12`` (a JKS store comes converted to PKCS12)."""
    written_type = settings.get(f"{store}.type").upper() if settings.is_set(f"{store}.type") else None
    data = _read_store(settings, f"{store}.location", location)
    kind = _store_format(settings, store, data, written_type)
    if kind == "JKS":
        return _jks_as_pkcs12(settings, store, location), "PKCS12"
    return data, kind


def _jks_as_pkcs12(settings: Any, store: str, location: str) -> bytes:
    """The JKS store at *location* as a PKCS12 store with the same password, converted by Java's
    keytool (no well-kept Python library reads JKS; Spark's Java is there wherever connectd runs)
    into a private directory removed at once. The passwords go to keytool in its environment."""
    name, password_name = f"{store}.location", f"{store}.password"
    password = settings.get(password_name)
    if password is None:
        raise settings.error(name, "is a JKS store, which is opened with its password: set "
                             f"{settings.key(password_name)}")
    java_home = os.environ.get("JAVA_HOME")
    keytool = (shutil.which("keytool", path=os.path.join(java_home, "bin")) if java_home else None) \
        or shutil.which("keytool")
    if keytool is None:
        raise settings.error(name, "is a JKS store, which connectd converts with Java's keytool: none found in "
                             "$JAVA_HOME/bin or on PATH")
    env = {**os.environ, "CONNECTD_STORE_PASSWORD": password.value()}
    with tempfile.TemporaryDirectory(prefix="connectd-tls-") as directory:
        target = Path(directory) / "store.p12"
        command = [keytool, "-importkeystore", "-noprompt", "-srckeystore", location, "-srcstoretype", "JKS",
                   "-srcstorepass:env", "CONNECTD_STORE_PASSWORD", "-destkeystore", str(target),
                   "-deststoretype", "PKCS12", "-deststorepass:env", "CONNECTD_STORE_PASSWORD"]
        key_password = settings.get("ssl.key.password") if store == "ssl.keystore" else None
        if key_password is not None:
            env["CONNECTD_KEY_PASSWORD"] = key_password.value()
            command += ["-srckeypass:env", "CONNECTD_KEY_PASSWORD"]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise settings.error(name, f"is a JKS store, and keytool could not convert it: {exc}") from None
        if done.returncode != 0 or not target.exists():
            said = [line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()]
            errors = [line.removeprefix("keytool error: ") for line in said if line.startswith("keytool error: ")]
            reason = (errors or said or [f"exit code {done.returncode}"])[-1]
            raise settings.error(name, f"cannot read the JKS store with {settings.key(password_name)}: {reason}")
        return target.read_bytes()


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


def _pem_of(data: bytes, wanted: Callable[[str], bool]) -> str:
    """The PEM blocks of *data* whose label is *wanted*, each as written."""
    return "".join(f"-----BEGIN {label}-----{body}-----END {label}-----\n"
                   for label, body in _pem_blocks(data.decode("latin-1")) if wanted(label))


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


# --- the Kafka clients' TLS ---------------------------------------------------------------------

#: The ``ssl.*`` keys of a Kafka client that hold secrets (shown nowhere).
_CLIENT_SECRETS = frozenset({"ssl.truststore.password", "ssl.keystore.password", "ssl.key.password",
                             "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"})
_CLIENT_STORES = ("ssl.truststore.location", "ssl.truststore.certificates", "ssl.keystore.location",
                  "ssl.keystore.certificate.chain", "ssl.keystore.key")


class _ClientTlsSettings:
    """The ``ssl.*`` keys of one Kafka client as :func:`connectd.config.clients.client_settings` merged
    them (Java key → (value as written, the key it was written under)); the same questions as
    :class:`_TlsSettings` answers, so the store readers serve both."""

    def __init__(self, merged: Mapping[str, tuple[str, str]], resolve: Callable[[str], str]) -> None:
        self._merged = merged
        self._resolve = resolve

    def key(self, name: str) -> str:
        return self._merged[name][1] if name in self._merged else name

    def is_set(self, name: str) -> bool:
        return name in self._merged

    def resolved(self, name: str) -> str:
        return self._resolve(self._merged[name][0])

    def get(self, name: str) -> Any:
        if name not in self._merged:
            return None
        value = self.resolved(name)
        return Secret(value) if name in _CLIENT_SECRETS else value.strip()

    def error(self, name: str, message: str, *, with_value: bool = True) -> ConfigError:
        shown = self._merged[name][0] if with_value and name in self._merged and name not in _CLIENT_SECRETS else None
        return ConfigError([ConfigProblem(None, self.key(name), message, shown)])


@dataclass(frozen=True)
class ClientTls:
    """A Kafka client's TLS material from Java's ``ssl.*`` keys, for both libraries: librdkafka's
    settings (PEM in memory: ``ssl.ca.pem``, ``ssl.certificate.pem``, ``ssl.key.pem``) and
    aiokafka's :class:`ssl.SSLContext`."""

    confluent: dict[str, Any]
    context: ssl.SSLContext


_client_tls_made: dict[tuple, ClientTls | None] = {}


def client_tls(merged: Mapping[str, tuple[str, str]], resolve: Callable[[str], str]) -> ClientTls | None:
    """As :func:`_client_tls`, made once per process for the same settings and files (a JKS store
    costs a keytool run; every client of the worker, and of each Spark process, asks)."""
    ssl_keys = sorted((name, resolve(value)) for name, (value, _) in merged.items()
                      if name.startswith("ssl.") or name == "security.protocol")
    files = []
    for name, value in ssl_keys:
        if name.endswith(".location"):
            try:
                stat = os.stat(value)
            except OSError:
                continue  # _client_tls says so
            files.append((value, stat.st_mtime_ns, stat.st_size))
    cache_key = (tuple(ssl_keys), tuple(files))
    if cache_key not in _client_tls_made:
        _client_tls_made[cache_key] = _client_tls(merged, resolve)
    return _client_tls_made[cache_key]


def _client_tls(merged: Mapping[str, tuple[str, str]], resolve: Callable[[str], str]) -> ClientTls | None:
    """The TLS of a Kafka client over SSL or SASL_SSL, or whose trust or key store is set; else ``None``.
    Without a trust store the system's CAs are trusted, as Java trusts its own.

    Trust and key stores are PEM files, PKCS12 or JKS stores (Kafka's default type, converted with
    Java's keytool), or the PEM values ``ssl.truststore.certificates``, ``ssl.keystore.key`` and
    ``ssl.keystore.certificate.chain``; the file's content tells its format. Nothing is written
    anywhere but a private directory removed at once; a private key leaves it encrypted with a
    password made for it.

    :raises ConfigError: naming the key (as written) of anything missing, unreadable or wrong.
    """
    settings = _ClientTlsSettings(merged, resolve)
    over_tls = (settings.get("security.protocol") or "").upper() in ("SSL", "SASL_SSL")
    if not over_tls and not any(settings.is_set(name) for name in _CLIENT_STORES):
        return None
    confluent: dict[str, Any] = {}
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    trusted = _client_trusted(settings)
    if trusted is None:
        context.load_default_certs()
    else:
        try:
            context.load_verify_locations(cadata=trusted)
        except ssl.SSLError:
            name = ("ssl.truststore.location" if settings.is_set("ssl.truststore.location")
                    else "ssl.truststore.certificates")
            raise settings.error(name, "holds no PEM certificate", with_value=name.endswith(".location")) from None
        confluent["ssl.ca.pem"] = trusted
    own = _client_key(settings)
    if own is not None:
        key, chain, password, name = own
        with _private_file("keystore.pem", key + chain) as path:
            _load_chain(context, settings, name, path, password)
        confluent["ssl.key.pem"] = key.decode("ascii")
        confluent["ssl.certificate.pem"] = chain.decode("ascii")
        if password is not None:
            confluent["ssl.key.password"] = password.value()
    # Kafka's https (the default) checks that the broker's certificate names its host; empty does not.
    context.check_hostname = settings.get("ssl.endpoint.identification.algorithm") != ""
    return ClientTls(confluent, context)


def _client_trusted(settings: _ClientTlsSettings) -> str | None:
    """The trusted certificates in PEM, or ``None`` when no trust store is set."""
    location, certificates = settings.get("ssl.truststore.location"), settings.get("ssl.truststore.certificates")
    if location is not None and certificates is not None:
        raise settings.error("ssl.truststore.location", f"set it or {settings.key('ssl.truststore.certificates')}, "
                             "not both")
    if certificates is not None:
        return _pem_text(certificates.value())
    if location is None:
        return None
    data, kind = _read_kind(settings, "ssl.truststore", location)
    if kind == "PKCS12":
        return _pkcs12_trusted(settings, data)
    return _pem_of(data, lambda label: label == "CERTIFICATE")


def _client_key(settings: _ClientTlsSettings) -> tuple[bytes, bytes, Secret | None, str] | None:
    """The client's own private key and certificate chain in PEM, the key's password, and the key
    they came from; ``None`` when no key store is set."""
    location = settings.get("ssl.keystore.location")
    chain, key = settings.get("ssl.keystore.certificate.chain"), settings.get("ssl.keystore.key")
    if location is None:
        if chain is None and key is None:
            return None
        if chain is None or key is None:
            missing = "ssl.keystore.key" if key is None else "ssl.keystore.certificate.chain"
            present = "ssl.keystore.certificate.chain" if key is None else "ssl.keystore.key"
            raise settings.error(present, f"also set {settings.key(missing)}", with_value=False)
        return (_pem_text(key.value()).encode("ascii"), _pem_text(chain.value()).encode("ascii"),
                settings.get("ssl.key.password"), "ssl.keystore.key")
    data, kind = _read_kind(settings, "ssl.keystore", location)
    if kind == "PEM":
        keys = _pem_of(data, lambda label: label.endswith("PRIVATE KEY"))
        certificates = _pem_of(data, lambda label: label == "CERTIFICATE")
        if not keys or not certificates:
            missing = "private key" if not keys else "certificate"
            raise settings.error("ssl.keystore.location", f"holds no PEM {missing}")
        return keys.encode("ascii"), certificates.encode("ascii"), settings.get("ssl.key.password"), \
            "ssl.keystore.location"
    # lazy: cryptography (~60 ms) only for PKCS12 and JKS stores, as in _load_pkcs12_key_store
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, PrivateFormat

    only_key_password = settings.is_set("ssl.key.password") and not settings.is_set("ssl.keystore.password")
    store = _open_pkcs12(settings, "ssl.keystore.location", data,
                         "ssl.key.password" if only_key_password else "ssl.keystore.password")
    if store.key is None or store.cert is None:
        raise settings.error("ssl.keystore.location", "is a PKCS12 store without a private key and its certificate")
    once = token_urlsafe(32)
    key_pem = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(once.encode("ascii")))
    chain_pem = b"".join(c.certificate.public_bytes(Encoding.PEM) for c in (store.cert, *store.additional_certs))
    return key_pem, chain_pem, Secret(once), "ssl.keystore.location"
