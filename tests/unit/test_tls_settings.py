"""TLS of SSL listeners: the context from Kafka's ssl.* settings (real handshakes with Python's client), the
start-up errors, and the principal of a client certificate (RFC 2253 as Java prints it, Kafka's mapping rules)."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from coordinator.config_values import ConfigError
from coordinator.security.principal import dn_of, map_principal, parse_mapping_rules
from coordinator.security.tls import principal_of, server_context, tls_settings
from tests.support.certs import ENCRYPTED_KEY_PASSWORD


def handshake(context: ssl.SSLContext, certs, client_cert=None, client_key=None, version=None) -> dict | None:
    """A TLS handshake against `context` over a socket pair; the server's view of the client certificate."""
    server_sock, client_sock = socket.socketpair()
    seen: dict = {}

    def serve() -> None:
        try:
            with context.wrap_socket(server_sock, server_side=True) as tls:
                seen["cert"] = tls.getpeercert()
                tls.recv(1)
        except (ssl.SSLError, OSError) as exc:
            seen["error"] = exc

    thread = threading.Thread(target=serve)
    thread.start()
    client = ssl.create_default_context(cafile=str(certs.ca))
    if version is not None:
        client.minimum_version = client.maximum_version = version
    if client_cert:
        client.load_cert_chain(str(client_cert), str(client_key))
    try:
        with client.wrap_socket(client_sock, server_hostname="localhost") as tls:
            tls.sendall(b"x")
            tls.recv(1)
    except (ssl.SSLError, OSError):
        pass
    thread.join(10)
    if "error" in seen:
        raise seen["error"]
    return seen.get("cert")


def settings(certs, **props: str):
    return tls_settings({"ssl.keystore.location": str(certs.server), **props})


def test_a_pem_keystore_serves_tls_and_asks_no_certificate_by_default(certs):
    assert handshake(server_context(settings(certs)), certs) is None


def test_inline_pem_works_as_the_file_does(certs):
    inline = tls_settings({"ssl.keystore.key": certs.server_key.read_text(),
                           "ssl.keystore.certificate.chain": certs.server_cert.read_text()})
    assert handshake(server_context(inline), certs) is None
    assert "BEGIN" not in repr(inline.keystore_key) or "keystore_key" not in repr(inline)


def test_required_client_auth_takes_a_trusted_certificate_and_refuses_others(certs):
    context = server_context(settings(certs, **{"ssl.client.auth": "required",
                                                "ssl.truststore.location": str(certs.ca)}))
    cert = handshake(context, certs, certs.client_cert, certs.client_key)
    assert principal_of(cert, parse_mapping_rules("DEFAULT")) == "User:CN=alice,OU=eng,O=Example,C=US"
    with pytest.raises(ssl.SSLError):
        handshake(context, certs, certs.untrusted_client_cert, certs.untrusted_client_key)
    with pytest.raises(ssl.SSLError):
        handshake(context, certs)


def test_requested_client_auth_makes_a_certificate_optional(certs):
    context = server_context(settings(certs, **{"ssl.client.auth": "requested",
                                                "ssl.truststore.certificates": certs.ca.read_text()}))
    assert principal_of(handshake(context, certs), ()) == "User:ANONYMOUS"
    assert handshake(context, certs, certs.client_cert, certs.client_key)["subject"]


@pytest.mark.parametrize("enabled, refused", [("TLSv1.2", ssl.TLSVersion.TLSv1_3), ("TLSv1.3", ssl.TLSVersion.TLSv1_2)])
def test_only_the_enabled_protocols_are_spoken(certs, enabled, refused):
    context = server_context(settings(certs, **{"ssl.enabled.protocols": enabled}))
    with pytest.raises(ssl.SSLError):
        handshake(context, certs, version=refused)
    handshake(context, certs, version=ssl.TLSVersion[enabled.replace(".", "_")])


def test_java_cipher_suite_names_are_understood(certs):
    tls = settings(certs, **{"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256"})
    assert tls.ciphers == "ECDHE-RSA-AES128-GCM-SHA256"
    handshake(server_context(tls), certs, version=ssl.TLSVersion.TLSv1_2)


def test_an_encrypted_key_needs_its_password(certs):
    props = {"ssl.keystore.key": certs.server_key_encrypted.read_text(),
             "ssl.keystore.certificate.chain": certs.server_cert.read_text()}
    handshake(server_context(tls_settings({**props, "ssl.key.password": ENCRYPTED_KEY_PASSWORD})), certs)
    with pytest.raises(ConfigError, match="^ssl.key.password: ") as raised:
        server_context(tls_settings({**props, "ssl.key.password": "wrong-password"}))
    assert "wrong-password" not in str(raised.value)


@pytest.mark.parametrize("props, message", [
    ({"ssl.keystore.location": "/nonexistent.pem"}, "^ssl.keystore.location: no such file"),
    ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "x"}, "^ssl.keystore.type: JKS is not supported"),
    ({}, "^ssl.keystore.location: an SSL listener needs"),
    ({"ssl.keystore.location": "K", "ssl.enabled.protocols": "TLSv1.1"}, "^ssl.enabled.protocols: TLSv1.1 is not"),
    ({"ssl.keystore.location": "K", "ssl.client.auth": "maybe"}, "^ssl.client.auth: "),
    ({"ssl.keystore.location": "K", "ssl.cipher.suites": "TLS_NOPE_WITH_NOTHING"}, "^ssl.cipher.suites: "),
    ({"ssl.keystore.location": "K", "ssl.principal.mapping.rules": "RULE:broken"}, "^ssl.principal.mapping.rules"),
])
def test_bad_settings_name_themselves(certs, props, message):
    props = {name: str(certs.server) if value == "K" else value for name, value in props.items()}
    with pytest.raises(ConfigError, match=message):
        server_context(tls_settings(props))


def test_a_keystore_without_its_key_or_with_another_key(certs, tmp_path):
    only_cert = tmp_path / "cert-only.pem"
    only_cert.write_text(certs.server_cert.read_text())
    with pytest.raises(ConfigError, match="^ssl.keystore.location: cannot be loaded"):
        server_context(tls_settings({"ssl.keystore.location": str(only_cert)}))
    with pytest.raises(ConfigError, match="^ssl.keystore.key: the private key does not belong") as raised:
        server_context(tls_settings({"ssl.keystore.key": certs.client_key.read_text(),
                                     "ssl.keystore.certificate.chain": certs.server_cert.read_text()}))
    assert "PRIVATE KEY" not in str(raised.value)


def test_rfc2253_as_java_prints_it():
    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc."),),
               (("organizationalUnitName", "eng"), ("commonName", "a+b")), (("emailAddress", "a@x.io"),))
    assert dn_of(subject) == ("1.2.840.113549.1.9.1=#16066140782e696f,OU=eng+CN=a\\+b,O=Acme\\, Inc.,C=US")
    assert dn_of(((("commonName", " #lead"),),)) == "CN=\\ #lead"


@pytest.mark.parametrize("rules, dn, name", [  # cases of Kafka's SslPrincipalMapperTest
    ("DEFAULT", "CN=kafka,OU=ServiceUsers,O=Org,C=US", "CN=kafka,OU=ServiceUsers,O=Org,C=US"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=kafka,OU=ServiceUsers,O=Org,C=US", "kafka"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=adminUser,OU=Admin,O=Apache,C=US",
     "CN=adminUser,OU=Admin,O=Apache,C=US"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,DEFAULT",
     "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "duke@javasoft"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U,DEFAULT",
     "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "DUKE@JAVASOFT"),
    ("RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/,DEFAULT", "CN=Tkafka,OU=ServiceUsers", "CN=Tkafka,OU=ServiceUsers"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1\\/$2/,DEFAULT", "CN=a,OU=b,O=c", "a/b"),
])
def test_principal_mapping_rules(rules, dn, name):
    assert map_principal(dn, parse_mapping_rules(rules)) == name


def test_no_matching_rule_refuses_the_certificate():
    with pytest.raises(ValueError, match="no rule"):
        map_principal("CN=x", parse_mapping_rules("RULE:^CN=y$/y/"))
