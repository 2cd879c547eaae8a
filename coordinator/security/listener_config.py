"""The security settings, with Kafka's names, and what each listener gets from them.

A listener's name maps to its security protocol through `listener.security.protocol.map` (Kafka's default maps
PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL to themselves). Its TLS and SASL settings are the global ones
(`ssl.keystore.location`, `sasl.enabled.mechanisms`, ...) with `listener.name.<name>.<setting>` taking precedence
key by key, as Kafka's `valuesWithPrefixOverride`; the JAAS users of a SASL mechanism come only from
`listener.name.<name>.<mechanism>.sasl.jaas.config`, as on a Kafka broker. Everything is checked at start-up:
a certificate that does not load, a mechanism we do not have, a PLAIN listener without users is one ConfigError
line naming the setting.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from coordinator.config_values import ConfigError, _int
from coordinator.security.jaas import parse_jaas, plain_users, single_entry
from coordinator.security.tls import TlsSettings, server_context, tls_settings

PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL = "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
SECURITY_PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LISTENER_PREFIX = "listener.name."
JAAS_SUFFIX = ".sasl.jaas.config"

# name -> (default, doc, secret): the settings every listener may also set under listener.name.<name>.
SECURITY_SETTINGS: dict[str, tuple[str, str, bool]] = {
    "listener.security.protocol.map": (DEFAULT_PROTOCOL_MAP, "Listener name -> security protocol "
                                       "(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), NAME:PROTOCOL,...", False),
    "sasl.enabled.mechanisms": ("GSSAPI", "SASL mechanisms offered on SASL listeners: PLAIN, SCRAM-SHA-256, "
                                "SCRAM-SHA-512 (Kafka's default GSSAPI, Kerberos, is not supported)", False),
    "connections.max.reauth.ms": ("0", "KIP-368: a SASL session lasts this long (SaslAuthenticate v1+ says so); the "
                                  "client must re-authenticate on its connection before it ends, or the next "
                                  "request closes the connection. 0: sessions do not expire", False),
    "connection.failed.authentication.delay.ms": ("100", "How long a connection that failed to authenticate "
                                                  "stays open (its answer sent, nothing read) before it closes", False),
    "ssl.keystore.type": ("PEM", "PEM only (Kafka's JKS and PKCS12 stores: convert them with keytool/openssl)",
                          False),
    "ssl.keystore.location": ("", "A PEM file with the private key and the certificate chain", False),
    "ssl.keystore.password": ("", "Must stay unset: a PEM keystore has none (Kafka refuses it with PEM too)", True),
    "ssl.keystore.key": ("", "The private key, inline PEM (instead of ssl.keystore.location)", True),
    "ssl.keystore.certificate.chain": ("", "The certificate chain, inline PEM", False),
    "ssl.key.password": ("", "The password of an encrypted private key", True),
    "ssl.truststore.type": ("PEM", "PEM only", False),
    "ssl.truststore.location": ("", "A PEM file of the CA certificates that client certificates must chain to",
                                False),
    "ssl.truststore.password": ("", "Must stay unset: a PEM truststore has none (Kafka refuses it with PEM too)",
                                True),
    "ssl.truststore.certificates": ("", "The trusted CA certificates, inline PEM", False),
    "ssl.client.auth": ("none", "none, requested or required: whether clients present a certificate", False),
    "ssl.enabled.protocols": ("TLSv1.2,TLSv1.3", "TLS versions accepted", False),
    "ssl.cipher.suites": ("", "Cipher suites (empty: the TLS library's defaults)", False),
    "ssl.principal.mapping.rules": ("DEFAULT", "Rules from a client certificate's subject to a principal name",
                                    False),
}


def is_security_setting(name: str) -> bool:
    return name in SECURITY_SETTINGS or name.startswith(LISTENER_PREFIX)


def is_secret(name: str) -> bool:
    """Whether a setting's value must never be printed (passwords, keys, JAAS texts with passwords)."""
    base = listener_setting(name)[1] if name.startswith(LISTENER_PREFIX) else name
    return base.endswith(JAAS_SUFFIX) or SECURITY_SETTINGS.get(base, ("", "", False))[2]


def listener_setting(name: str) -> tuple[str, str]:
    """`listener.name.<listener>.<rest>` -> (LISTENER, rest)."""
    listener, _, rest = name[len(LISTENER_PREFIX):].partition(".")
    return listener.upper(), rest


def listener_env_names(listeners: Iterable[str]) -> dict[str, str]:
    """COORDINATOR_LISTENER_NAME_<L>_<SETTING> -> its property name, for every setting a listener can take
    (mechanism names have dashes, so the names are generated, not parsed back)."""
    suffixes = [*SECURITY_SETTINGS, *(mechanism.lower() + JAAS_SUFFIX for mechanism in SUPPORTED_MECHANISMS)]
    out = {}
    for listener in listeners:
        for suffix in suffixes:
            name = f"{LISTENER_PREFIX}{listener.lower()}.{suffix}"
            out["COORDINATOR_" + name.upper().replace(".", "_").replace("-", "_")] = name
    return out


def parse_protocol_map(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise ConfigError(f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(f"listener.security.protocol.map: {protocol!r} is not one of "
                              f"{', '.join(SECURITY_PROTOCOLS)}")
        if name in out:
            raise ConfigError(f"listener.security.protocol.map: {name} is mapped twice")
        out[name] = protocol
    return out


@dataclass(frozen=True)
class ListenerSecurity:
    """What one listener asks of its connections."""

    name: str
    protocol: str
    tls: TlsSettings | None = None  # SSL and SASL_SSL listeners
    mechanisms: tuple[str, ...] = ()  # SASL listeners
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)  # PLAIN's JAAS users
    failed_authentication_delay_ms: int = 100
    reauth_ms: int = 0  # connections.max.reauth.ms
    context: ssl.SSLContext | None = field(default=None, repr=False, compare=False)  # built from `tls`, once

    @property
    def uses_tls(self) -> bool:
        return self.protocol in (SSL, SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in (SASL_PLAINTEXT, SASL_SSL)


def effective(props: Mapping[str, str], listener: str) -> dict[str, str]:
    """The settings as `listener` sees them: the defaults, the global values, then its own prefixed ones."""
    values = {name: default for name, (default, _doc, _secret) in SECURITY_SETTINGS.items()}
    prefix = f"{LISTENER_PREFIX}{listener.lower()}."
    for name, value in props.items():
        if not name.startswith(LISTENER_PREFIX):
            values[name] = value
    for name, value in props.items():
        if name.lower().startswith(prefix):
            values[name[len(prefix):]] = value
    return values


def _mechanisms(text: str, listener: str) -> tuple[str, ...]:
    mechanisms = tuple(dict.fromkeys(m.strip().upper() for m in text.split(",") if m.strip()))
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise ConfigError(f"sasl.enabled.mechanisms: {', '.join(unsupported)} not supported on listener {listener} "
                          f"(supported: {', '.join(SUPPORTED_MECHANISMS)}; GSSAPI/Kerberos and OAUTHBEARER are not)")
    if not mechanisms:
        raise ConfigError(f"sasl.enabled.mechanisms: listener {listener} is {SASL_PLAINTEXT} or {SASL_SSL} and "
                          "enables no mechanism")
    return mechanisms


def _milliseconds(text: str, name: str) -> int:
    try:
        return _int(0)(text)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def failed_authentication_delay_ms(props: Mapping[str, str], listener: str) -> int:
    """`connection.failed.authentication.delay.ms` as `listener` sees it (the http.listener's: "http")."""
    return _milliseconds(effective(props, listener)["connection.failed.authentication.delay.ms"],
                         "connection.failed.authentication.delay.ms")


def _plain_users(props: Mapping[str, str], listener: str) -> dict[str, str]:
    name = f"{LISTENER_PREFIX}{listener.lower()}.plain{JAAS_SUFFIX}"
    text = next((value for key, value in props.items() if key.lower() == name), "")
    if not text.strip():
        raise ConfigError(f"{name}: listener {listener} enables PLAIN but has no JAAS users "
                          "(org.apache.kafka.common.security.plain.PlainLoginModule required user_<name>=\"...\";)")
    try:
        users = plain_users([single_entry(parse_jaas(text))])  # Kafka: one login module per listener's config
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    if not users:
        raise ConfigError(f"{name}: no user_<name>=\"<password>\" option in the PlainLoginModule entry")
    return users


def listener_security(props: Mapping[str, str], listener: str) -> ListenerSecurity:
    """The checked security of one listener (ConfigError names the setting that is wrong)."""
    protocols = parse_protocol_map(props.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP))
    protocol = protocols.get(listener.upper())
    if protocol is None:
        raise ConfigError(f"listener.security.protocol.map: listener {listener} has no security protocol")
    values = effective(props, listener)
    tls = context = None
    if protocol in (SSL, SASL_SSL):
        tls = tls_settings(props, prefix=f"{LISTENER_PREFIX}{listener.lower()}.")  # errors name the key given
        context = server_context(tls)  # a certificate that does not load stops start-up here
    mechanisms: tuple[str, ...] = ()
    plain: dict[str, str] = {}
    if protocol in (SASL_PLAINTEXT, SASL_SSL):
        mechanisms = _mechanisms(values["sasl.enabled.mechanisms"], listener)
        if "PLAIN" in mechanisms:
            plain = _plain_users(props, listener)
    return ListenerSecurity(listener.upper(), protocol, tls, mechanisms, plain,
                            _milliseconds(values["connection.failed.authentication.delay.ms"],
                                          "connection.failed.authentication.delay.ms"),
                            _milliseconds(values["connections.max.reauth.ms"], "connections.max.reauth.ms"), context)


def check_listener_names(props: Mapping[str, str], listeners: Iterable[str]) -> None:
    """A `listener.name.<x>.` setting for a listener that does not exist is a typo worth a start-up error."""
    names = {name.upper() for name in listeners}
    for key in props:
        if key.startswith(LISTENER_PREFIX):
            listener, rest = listener_setting(key)
            if listener not in names:
                raise ConfigError(f"{key}: there is no listener {listener} (listeners: {', '.join(sorted(names))})")
            if rest not in SECURITY_SETTINGS and not rest.endswith(JAAS_SUFFIX):
                raise ConfigError(f"{key}: unknown setting {rest!r} for a listener")
