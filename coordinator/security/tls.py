"""TLS of SSL and SASL_SSL listeners: Kafka's ssl.* settings (PEM stores, as DefaultSslEngineFactory reads them)
made into a server SSLContext, and the principal of a client certificate (DefaultKafkaPrincipalBuilder:
`User:<subject DN>` as Java's X500Principal.getName() prints it, mapped by `ssl.principal.mapping.rules`).

Every setting that does not load stops start-up with one ConfigError line naming it (the `listener.name.<l>.`
key when that is where it came from), never quoting a key or a password. Kafka's combinations are refused as Kafka
refuses them (a key without its chain, a store password with PEM, a location and inline PEM together).
Inline PEM goes to OpenSSL through an anonymous in-memory file (memfd) where the system has them, else through a
private temporary file removed at once: Python's ssl loads a certificate chain only from a path.
"""

from __future__ import annotations

import contextlib
import os
import re
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from coordinator.config_values import ConfigError
from coordinator.security import cipher_suites
from coordinator.security.principal import DEFAULT_RULE, MappingRule, map_principal, parse_mapping_rules
from coordinator.security.x500 import name_of_peercert, rfc2253, subject_of_certificate

ANONYMOUS = "User:ANONYMOUS"
DEFAULT_PROTOCOLS = ("TLSv1.2", "TLSv1.3")
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_INSECURE = ("SSLv2", "SSLv2Hello", "SSLv3", "TLSv1", "TLSv1.1", "SSL", "TLS")
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_CERTIFICATE = re.compile(r"-----BEGIN (?:TRUSTED |X509 )?CERTIFICATE-----")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")


@dataclass(frozen=True)
class TlsSettings:
    """A listener's TLS settings, checked. `enabled_protocols` are those that can be negotiated (the enabled ones
    that `cipher_suites` leaves a suite for); `cipher_suites` are OpenSSL's names, () for the library's defaults."""

    keystore_type: str = "PEM"
    keystore_location: str = ""
    keystore_key: str = field(default="", repr=False)
    keystore_certificate_chain: str = field(default="", repr=False)
    key_password: str = field(default="", repr=False)
    truststore_type: str = "PEM"
    truststore_location: str = ""
    truststore_certificates: str = field(default="", repr=False)
    client_auth: str = "none"
    enabled_protocols: tuple[str, ...] = DEFAULT_PROTOCOLS
    cipher_suites: tuple[str, ...] = ()
    principal_rules: tuple[MappingRule, ...] = (DEFAULT_RULE,)
    # setting -> the key it was read from (listener.name.<l>.<setting> or <setting>), for messages
    origins: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def key(self, setting: str) -> str:
        return self.origins.get(setting, setting)


class _Props:
    """Kafka's valuesWithPrefixOverride for one listener: `<prefix><name>` over `<name>`; an empty value is unset."""

    def __init__(self, props: Mapping[str, str], prefix: str) -> None:
        self.props, self.prefix = props, prefix
        self.origins: dict[str, str] = {}

    def get(self, name: str, default: str = "") -> str:
        for key in ((self.prefix + name,) if self.prefix else ()) + (name,):
            value = self.props.get(key)
            if value:
                self.origins[name] = key
                return value
        return default

    def key(self, name: str) -> str:
        return self.origins.get(name, self.prefix + name if self.prefix else name)


def tls_settings(props: Mapping[str, str], prefix: str = "") -> TlsSettings:
    """The checked TLS settings from Kafka's property names; `prefix` (`listener.name.<listener>.`) marks one
    listener's overrides. ConfigError names the first wrong setting."""
    values = _Props(props, prefix)
    keystore_type = _store_type(values, "ssl.keystore.type")
    truststore_type = _store_type(values, "ssl.truststore.type")
    location, key = values.get("ssl.keystore.location").strip(), values.get("ssl.keystore.key")
    chain = values.get("ssl.keystore.certificate.chain")
    _check_keystore(values, location, key, chain)
    truststore_location = values.get("ssl.truststore.location").strip()
    trusted = values.get("ssl.truststore.certificates")
    if trusted and truststore_location:
        raise ConfigError(f"{values.key('ssl.truststore.certificates')}: set either it or ssl.truststore.location, "
                          "not both")
    if values.get("ssl.truststore.password"):
        raise ConfigError(f"{values.key('ssl.truststore.password')}: a PEM truststore has no password (unset it)")
    client_auth = values.get("ssl.client.auth", "none").strip().lower()
    if client_auth not in _CLIENT_AUTH:
        raise ConfigError(f"{values.key('ssl.client.auth')}: {client_auth!r} is not one of none, requested, required")
    protocols = _protocols(values)
    suites, protocols = _suites(values, protocols)
    try:
        rules = parse_mapping_rules(values.get("ssl.principal.mapping.rules", "DEFAULT"))
    except ValueError as exc:
        raise ConfigError(f"{values.key('ssl.principal.mapping.rules')}: {exc}") from None
    return TlsSettings(keystore_type, location, key, chain, values.get("ssl.key.password"), truststore_type,
                       truststore_location, trusted, client_auth, protocols, suites, rules, dict(values.origins))


def _store_type(values: _Props, name: str) -> str:
    store = values.get(name, "PEM").strip()
    if store.upper() != "PEM":
        raise ConfigError(f"{values.key(name)}: {store} is not supported, only PEM; convert the store with `keytool "
                          "-importkeystore -srckeystore <store> -destkeystore store.p12 -deststoretype PKCS12`, then "
                          "`openssl pkcs12 -in store.p12 -nodes` (key and certificates) or `-nokeys` (a truststore)")
    return "PEM"


def _check_keystore(values: _Props, location: str, key: str, chain: str) -> None:
    """Kafka's rules (DefaultSslEngineFactory.createKeystore), and a server needs a keystore."""
    if key and not chain:
        raise ConfigError(f"{values.key('ssl.keystore.key')}: set, but ssl.keystore.certificate.chain is not")
    if chain and not key:
        raise ConfigError(f"{values.key('ssl.keystore.certificate.chain')}: set, but ssl.keystore.key is not")
    if key and location:
        raise ConfigError(f"{values.key('ssl.keystore.location')}: set either it or ssl.keystore.key with "
                          "ssl.keystore.certificate.chain, not both")
    if values.get("ssl.keystore.password"):
        raise ConfigError(f"{values.key('ssl.keystore.password')}: a PEM keystore has no store password (unset it; "
                          "the password of an encrypted key is ssl.key.password)")
    if not (location or key):
        raise ConfigError(f"{values.key('ssl.keystore.location')}: a TLS listener needs its certificate and key (a "
                          "PEM file, or ssl.keystore.key with ssl.keystore.certificate.chain)")


def _protocols(values: _Props) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(p.strip() for p in values.get("ssl.enabled.protocols").split(",") if p.strip()))
    for name in names:
        if name in _INSECURE:
            raise ConfigError(f"{values.key('ssl.enabled.protocols')}: {name} is refused as insecure; use TLSv1.2, "
                              "TLSv1.3")
        if name not in _VERSIONS:
            raise ConfigError(f"{values.key('ssl.enabled.protocols')}: {name!r} is not one of TLSv1.2, TLSv1.3")
    return tuple(p for p in DEFAULT_PROTOCOLS if p in names) or DEFAULT_PROTOCOLS  # empty: the defaults, as Kafka


def _suites(values: _Props, protocols: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """OpenSSL's names of ssl.cipher.suites, and the protocols left with a suite (as Java: a protocol none of whose
    suites is enabled is not negotiated)."""
    key = values.key("ssl.cipher.suites")
    names = [s.strip() for s in values.get("ssl.cipher.suites").split(",") if s.strip()]
    names = [s for s in names if s != cipher_suites.RENEGOTIATION_SCSV]
    if not names:
        return (), protocols
    try:
        suites = tuple(dict.fromkeys(cipher_suites.openssl_name(name) for name in names))
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    tls12 = tuple(s for s in suites if not cipher_suites.is_tls13(s))
    tls13 = {s for s in suites if cipher_suites.is_tls13(s)}
    offered = cipher_suites.default_tls13_suites()
    if tls13 and offered - tls13 and "TLSv1.3" in protocols:
        raise ConfigError(f"{key}: TLS 1.3 suites cannot be narrowed here (Python's ssl); list all of "
                          f"{', '.join(sorted(offered))} or none (then TLS 1.3 is off, as in Kafka)")
    usable = tuple(p for p in protocols if (tls12 if p == "TLSv1.2" else tls13))
    if not usable:
        raise ConfigError(f"{key}: no suite listed is usable with ssl.enabled.protocols={','.join(protocols)}")
    return suites, usable


@contextlib.contextmanager
def _pem_path(text: str) -> Iterator[str]:
    """A path OpenSSL can read `text` from, gone on exit: a memfd (never on disk) where /proc shows it, else a
    0600 temporary file."""
    data = text.encode("utf-8")
    if hasattr(os, "memfd_create"):
        descriptor = os.memfd_create("kcoord-tls", os.MFD_CLOEXEC)
        try:
            with open(descriptor, "wb", closefd=False) as handle:
                handle.write(data)
            path = f"/proc/self/fd/{descriptor}"
            if os.path.exists(path):
                yield path
                return
        finally:
            os.close(descriptor)
    descriptor, path = tempfile.mkstemp(prefix="kcoord-tls-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        yield path
    finally:
        os.unlink(path)


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The server SSLContext of a listener; ConfigError names the setting that does not load."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = [_VERSIONS[p] for p in settings.enabled_protocols]
    context.minimum_version, context.maximum_version = min(versions), max(versions)
    tls12 = [s for s in settings.cipher_suites if not cipher_suites.is_tls13(s)]
    if tls12:
        context.set_ciphers(":".join(tls12))  # checked by tls_settings
    _load_keystore(context, settings)
    context.verify_mode = _CLIENT_AUTH[settings.client_auth]
    _load_truststore(context, settings)
    return context


def _read_text(path: str, key: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except FileNotFoundError:
        raise ConfigError(f"{key}: {path}: no such file") from None
    except PermissionError:
        raise ConfigError(f"{key}: {path}: not readable by this process") from None
    except OSError as exc:
        raise ConfigError(f"{key}: {path}: cannot be read ({exc.strerror})") from None


def _load_keystore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    if settings.keystore_location:
        key_name = chain_name = settings.key("ssl.keystore.location")
        key_text = chain_text = _read_text(settings.keystore_location, key_name)
    else:
        key_name, key_text = settings.key("ssl.keystore.key"), settings.keystore_key
        chain_name, chain_text = settings.key("ssl.keystore.certificate.chain"), settings.keystore_certificate_chain
    keys = len(_PRIVATE_KEY.findall(key_text))
    if keys != 1:
        raise ConfigError(f"{key_name}: no private key (-----BEGIN PRIVATE KEY-----)" if not keys else
                          f"{key_name}: {keys} private keys, one is expected")
    if not _CERTIFICATE.search(chain_text):
        raise ConfigError(f"{chain_name}: no certificate (-----BEGIN CERTIFICATE-----)")
    encrypted = "ENCRYPTED PRIVATE KEY" in key_text or "Proc-Type: 4,ENCRYPTED" in key_text
    # Never None: OpenSSL would prompt for an encrypted key's passphrase on the terminal.
    password = settings.key_password
    try:
        if settings.keystore_location:
            context.load_cert_chain(settings.keystore_location, password=password)
        else:
            with _pem_path(chain_text) as chain, _pem_path(key_text) as key:
                context.load_cert_chain(chain, key, password=password)
    except (ssl.SSLError, OSError, ValueError) as exc:
        if encrypted:
            password_key = settings.key("ssl.key.password")
            raise ConfigError(f"{password_key}: the private key in {key_name} cannot be decrypted with it" if password
                              else f"{password_key}: the private key in {key_name} is encrypted and no password "
                              "is set") from None
        if getattr(exc, "reason", None) == "KEY_VALUES_MISMATCH":
            raise ConfigError(f"{key_name}: the private key does not belong to the certificate") from None
        reason = getattr(exc, "reason", None) or "not a PEM certificate chain and private key OpenSSL can read"
        raise ConfigError(f"{chain_name}: cannot be loaded ({reason})") from None


def _load_truststore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    """The CAs client certificates must chain to; without any, the system's (as Java's default truststore)."""
    if settings.truststore_location:
        name = settings.key("ssl.truststore.location")
        text = _read_text(settings.truststore_location, name)
    elif settings.truststore_certificates:
        name, text = settings.key("ssl.truststore.certificates"), settings.truststore_certificates
    else:
        if settings.client_auth != "none":
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        return
    if not _CERTIFICATE.search(text):
        raise ConfigError(f"{name}: no certificate (-----BEGIN CERTIFICATE-----)")
    try:
        context.load_verify_locations(cadata=text)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"{name}: cannot be loaded ({getattr(exc, 'reason', None) or 'not PEM certificates'})") \
            from None


def principal_of(peercert: bytes | dict | None, rules: tuple[MappingRule, ...]) -> str:
    """`User:<mapped subject>` of a verified client certificate, User:ANONYMOUS without one. `peercert` is the DER
    certificate (`getpeercert(binary_form=True)`, exact) or `getpeercert()`'s dict (the string type of attributes
    Java prints as `<oid>=#<hex>` is guessed). A subject no rule maps raises NoMatchingRule (a ValueError): Kafka
    refuses the connection."""
    if not peercert:
        return ANONYMOUS
    if isinstance(peercert, bytes):
        name = subject_of_certificate(peercert)
    elif peercert.get("subject"):
        name = name_of_peercert(peercert["subject"])
    else:
        return ANONYMOUS
    return "User:" + map_principal(rfc2253(name), rules)
