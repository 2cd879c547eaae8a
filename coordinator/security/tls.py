"""TLS of SSL and SASL_SSL listeners: Kafka's ssl.* settings (PEM stores, as DefaultSslEngineFactory reads them)
made into a server SSLContext, and the principal of a client certificate (DefaultKafkaPrincipalBuilder:
`User:<subject DN>` as Java's X500Principal.getName() prints it, mapped by `ssl.principal.mapping.rules`).

Any setting that does not load stops start-up with one ConfigError line naming it, never quoting a key or a
password. Inline PEM (`ssl.keystore.key`, `ssl.keystore.certificate.chain`) goes through a private temporary
file, removed at once: Python's ssl loads a certificate chain only from a file.
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
from coordinator.security.principal import MappingRule, dn_of, map_principal, parse_mapping_rules

ANONYMOUS = "User:ANONYMOUS"
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_INSECURE = ("SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLS")
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class TlsSettings:
    keystore_location: str = ""
    keystore_key: str = field(default="", repr=False)
    keystore_certificate_chain: str = ""
    key_password: str = field(default="", repr=False)
    truststore_location: str = ""
    truststore_certificates: str = ""
    client_auth: str = "none"
    versions: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    ciphers: str = ""  # OpenSSL's cipher list; empty: the library's defaults
    principal_rules: tuple[MappingRule, ...] = ()


def _store_type(props: Mapping[str, str], name: str) -> None:
    value = props.get(name, "PEM").strip().upper() or "PEM"
    if value != "PEM":
        raise ConfigError(f"{name}: {value} is not supported, only PEM (convert a JKS or PKCS12 store with "
                          "`keytool -importkeystore -deststoretype PKCS12` and `openssl pkcs12 -nodes`)")


def tls_settings(props: Mapping[str, str]) -> TlsSettings:
    """The settings from Kafka's property names (a listener's view of them: listener.name.* applied)."""
    _store_type(props, "ssl.keystore.type")
    _store_type(props, "ssl.truststore.type")
    client_auth = props.get("ssl.client.auth", "none").strip().lower() or "none"
    if client_auth not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth: {client_auth!r} is not one of none, requested, required")
    versions = tuple(v.strip() for v in props.get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3").split(",") if v.strip())
    for version in versions:
        if version in _INSECURE:
            raise ConfigError(f"ssl.enabled.protocols: {version} is not accepted (insecure); use TLSv1.2, TLSv1.3")
        if version not in _VERSIONS:
            raise ConfigError(f"ssl.enabled.protocols: {version!r} is not one of TLSv1.2, TLSv1.3")
    if not versions:
        raise ConfigError("ssl.enabled.protocols: no protocol enabled")
    location = props.get("ssl.keystore.location", "").strip()
    key, chain = props.get("ssl.keystore.key", ""), props.get("ssl.keystore.certificate.chain", "")
    if location and (key.strip() or chain.strip()):
        raise ConfigError("ssl.keystore.location: set either it or ssl.keystore.key with "
                          "ssl.keystore.certificate.chain, not both")
    if not location and not (key.strip() and chain.strip()):
        raise ConfigError("ssl.keystore.location: an SSL listener needs its certificate and key (a PEM file, or "
                          "ssl.keystore.key with ssl.keystore.certificate.chain)")
    try:
        rules = parse_mapping_rules(props.get("ssl.principal.mapping.rules", "DEFAULT"))
    except ValueError as exc:
        raise ConfigError(f"ssl.principal.mapping.rules: {exc}") from None
    return TlsSettings(location, key, chain, props.get("ssl.key.password", ""),
                       props.get("ssl.truststore.location", "").strip(), props.get("ssl.truststore.certificates", ""),
                       client_auth, versions, _openssl_ciphers(props.get("ssl.cipher.suites", "")), rules)


def _openssl_cipher(name: str) -> str:
    """Java's (IANA) TLS 1.2 suite name to OpenSSL's, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 ->
    ECDHE-RSA-AES128-GCM-SHA256; an OpenSSL name as it is."""
    match = re.fullmatch(r"TLS_(?:(?P<kx>[A-Z0-9_]+?)_)?WITH_(?P<cipher>[A-Z0-9_]+)", name)
    if match is None:
        return name
    kx = "" if match["kx"] in (None, "RSA") else match["kx"].replace("_", "-") + "-"
    cipher = match["cipher"]
    cipher = re.sub(r"AES_(\d+)_GCM_", r"AES\1-GCM-", cipher)
    cipher = re.sub(r"AES_(\d+)_CBC_", r"AES\1-", cipher)
    cipher = cipher.replace("CHACHA20_POLY1305_SHA256", "CHACHA20-POLY1305")
    return kx + cipher.replace("_", "-")


def _openssl_ciphers(text: str) -> str:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        return ""
    known = {c["name"] for c in ssl.create_default_context().get_ciphers()}
    out = []
    for name in names:
        if name.startswith("TLS_") and "_WITH_" not in name:
            continue  # a TLS 1.3 suite: OpenSSL enables those itself
        openssl_name = _openssl_cipher(name)
        if openssl_name not in known:
            raise ConfigError(f"ssl.cipher.suites: {name} is not a cipher suite this TLS library has")
        out.append(openssl_name)
    return ":".join(out)


@contextlib.contextmanager
def _private_file(text: str) -> Iterator[str]:
    descriptor, path = tempfile.mkstemp(prefix="kcoord-tls-", suffix=".pem")  # created 0600
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        yield path
    finally:
        os.unlink(path)


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = min((_VERSIONS[v] for v in settings.versions), key=lambda v: v.value)
    context.maximum_version = max((_VERSIONS[v] for v in settings.versions), key=lambda v: v.value)
    if settings.ciphers:
        try:
            context.set_ciphers(settings.ciphers)
        except ssl.SSLError:
            raise ConfigError("ssl.cipher.suites: none of the suites can be used") from None
    _load_keystore(context, settings)
    context.verify_mode = _CLIENT_AUTH[settings.client_auth]
    if settings.client_auth != "none":
        _load_truststore(context, settings)
    return context


def _load_keystore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    name = "ssl.keystore.location" if settings.keystore_location else "ssl.keystore.key"
    password = settings.key_password or None
    try:
        if settings.keystore_location:
            context.load_cert_chain(settings.keystore_location, password=password)
        else:
            with _private_file(settings.keystore_certificate_chain) as chain, \
                    _private_file(settings.keystore_key) as key:
                context.load_cert_chain(chain, key, password=password)
    except FileNotFoundError:
        raise ConfigError(f"{name}: no such file") from None
    except PermissionError:
        raise ConfigError(f"{name}: not readable by this process") from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or "not a PEM certificate chain with its private key"
        if _encrypted_key(settings):
            raise ConfigError("ssl.key.password: the private key cannot be decrypted with it" if password else
                              "ssl.key.password: the private key is encrypted and no password is set") from None
        if reason == "KEY_VALUES_MISMATCH":
            raise ConfigError(f"{name}: the private key does not belong to the certificate") from None
        raise ConfigError(f"{name}: cannot be loaded ({reason})") from None


def _encrypted_key(settings: TlsSettings) -> bool:
    """Whether the PEM key is encrypted (OpenSSL reports a wrong password only as a "PEM lib" error)."""
    text = settings.keystore_key
    if settings.keystore_location:
        try:
            with open(settings.keystore_location, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            return False
    return "ENCRYPTED PRIVATE KEY" in text or "Proc-Type: 4,ENCRYPTED" in text


def _load_truststore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    try:
        if settings.truststore_location:
            context.load_verify_locations(cafile=settings.truststore_location)
        elif settings.truststore_certificates.strip():
            context.load_verify_locations(cadata=settings.truststore_certificates)
        else:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)  # Java's default truststore, as Kafka
    except FileNotFoundError:
        raise ConfigError("ssl.truststore.location: no such file") from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        name = "ssl.truststore.location" if settings.truststore_location else "ssl.truststore.certificates"
        raise ConfigError(f"{name}: cannot be loaded ({getattr(exc, 'reason', None) or 'not PEM certificates'})") \
            from None


def principal_of(peercert: dict | None, rules: tuple[MappingRule, ...]) -> str:
    """`User:<mapped subject>` of a verified client certificate, User:ANONYMOUS without one. A subject no rule
    maps raises ValueError (Kafka's NoMatchingRule: the connection is refused)."""
    if not peercert or not peercert.get("subject"):
        return ANONYMOUS
    return "User:" + map_principal(dn_of(peercert["subject"]), rules)
