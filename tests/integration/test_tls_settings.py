"""TLS of SSL listeners: the server context from Kafka's ssl.* settings, driven through real handshakes with Python's
client (client auth, protocols, suites, inline PEM, encrypted keys), and the start-up errors (one line naming the
setting, never key material or a password)."""

from __future__ import annotations

import os
import ssl
import tempfile

import pytest

from coordinator.config_values import ConfigError
from coordinator.security.principal import parse_mapping_rules
from coordinator.security.tls import principal_of, server_context, tls_settings
from tests.support.certs import ENCRYPTED_KEY_PASSWORD, ODD_CLIENT_DN
from tests.support.tls_handshake import handshake


def settings(certs, **props: str):
    return tls_settings({"ssl.keystore.location": str(certs.server), **props})


def test_a_pem_keystore_serves_tls_and_asks_no_certificate_by_default(certs):
    seen = handshake(server_context(settings(certs)), certs.ca)
    assert seen.server_cert_der == ssl.PEM_cert_to_DER_cert(certs.server_cert.read_text())
    assert seen.peercert is None and seen.peercert_der is None
    assert principal_of(seen.peercert_der, parse_mapping_rules("DEFAULT")) == "User:ANONYMOUS"


def test_inline_pem_serves_the_same_certificate_as_the_file(certs, tmp_path):
    inline = tls_settings({"ssl.keystore.key": certs.server_key.read_text(),
                           "ssl.keystore.certificate.chain": certs.server_cert.read_text()})
    cert_first = tmp_path / "cert-then-key.pem"  # the order inside the file does not matter
    cert_first.write_text(certs.server_cert.read_text() + certs.server_key.read_text())
    served = {handshake(server_context(tls), certs.ca).server_cert_der
              for tls in (inline, settings(certs), tls_settings({"ssl.keystore.location": str(cert_first)}))}
    assert served == {ssl.PEM_cert_to_DER_cert(certs.server_cert.read_text())}
    assert "PRIVATE KEY" not in repr(inline)


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memfd is Linux's")
def test_inline_pem_never_touches_the_disk_where_memfd_exists(certs, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tempfile, "mkstemp", lambda *args, **kwargs: pytest.fail("a temporary file was made"))
    inline = tls_settings({"ssl.keystore.key": certs.server_key.read_text(),
                           "ssl.keystore.certificate.chain": certs.server_cert.read_text()})
    handshake(server_context(inline), certs.ca)


def test_inline_pem_without_memfd_goes_through_a_private_file_removed_at_once(certs, tmp_path, monkeypatch):
    monkeypatch.delattr(os, "memfd_create")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    modes = []
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        descriptor, path = real_mkstemp(*args, **kwargs)
        modes.append(os.stat(path).st_mode & 0o777)
        return descriptor, path

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    inline = tls_settings({"ssl.keystore.key": certs.server_key.read_text(),
                           "ssl.keystore.certificate.chain": certs.server_cert.read_text()})
    handshake(server_context(inline), certs.ca)
    assert modes == [0o600, 0o600] and list(tmp_path.iterdir()) == []


def test_required_client_auth_takes_a_trusted_certificate_and_refuses_others(certs):
    context = server_context(settings(certs, **{"ssl.client.auth": "required",
                                                "ssl.truststore.location": str(certs.ca)}))
    seen = handshake(context, certs.ca, certs.client_cert, certs.client_key)
    rules = parse_mapping_rules("DEFAULT")
    assert principal_of(seen.peercert_der, rules) == "User:CN=alice,OU=eng,O=Example,C=US"
    assert principal_of(seen.peercert, rules) == "User:CN=alice,OU=eng,O=Example,C=US"
    with pytest.raises(ssl.SSLError):
        handshake(context, certs.ca, certs.untrusted_client_cert, certs.untrusted_client_key)
    with pytest.raises(ssl.SSLError):
        handshake(context, certs.ca)


def test_requested_client_auth_makes_a_certificate_optional_but_still_verifies_it(certs):
    context = server_context(settings(certs, **{"ssl.client.auth": "requested",
                                                "ssl.truststore.certificates": certs.ca.read_text()}))
    rules = parse_mapping_rules("DEFAULT")
    assert principal_of(handshake(context, certs.ca).peercert_der, rules) == "User:ANONYMOUS"
    seen = handshake(context, certs.ca, certs.client_cert, certs.client_key)
    assert principal_of(seen.peercert_der, rules) == "User:CN=alice,OU=eng,O=Example,C=US"
    with pytest.raises(ssl.SSLError):
        handshake(context, certs.ca, certs.untrusted_client_cert, certs.untrusted_client_key)


def test_client_auth_none_asks_for_no_certificate(certs):
    context = server_context(settings(certs, **{"ssl.client.auth": "none", "ssl.truststore.location": str(certs.ca)}))
    assert handshake(context, certs.ca, certs.client_cert, certs.client_key).peercert_der is None


def test_the_principal_of_a_certificate_full_of_specials_is_javas_string_mapped(certs):
    tls = settings(certs, **{"ssl.client.auth": "required", "ssl.truststore.location": str(certs.ca),
                             "ssl.principal.mapping.rules": r"RULE:^.*?,CN=(a\\\+b)\+.*$/$1/U"})
    seen = handshake(server_context(tls), certs.ca, certs.odd_client_cert, certs.odd_client_key)
    assert principal_of(seen.peercert_der, parse_mapping_rules("DEFAULT")) == "User:" + ODD_CLIENT_DN
    assert principal_of(seen.peercert, parse_mapping_rules("DEFAULT")) == "User:" + ODD_CLIENT_DN
    assert principal_of(seen.peercert_der, tls.principal_rules) == r"User:A\+B"


@pytest.mark.parametrize("enabled, refused", [("TLSv1.2", ssl.TLSVersion.TLSv1_3), ("TLSv1.3", ssl.TLSVersion.TLSv1_2)])
def test_only_the_enabled_protocols_are_spoken(certs, enabled, refused):
    context = server_context(settings(certs, **{"ssl.enabled.protocols": enabled}))
    with pytest.raises(ssl.SSLError):
        handshake(context, certs.ca, version=refused)
    assert handshake(context, certs.ca, version=ssl.TLSVersion[enabled.replace(".", "_")]).version == enabled


def test_the_default_protocols_are_tls12_and_tls13(certs):
    tls = settings(certs, **{"ssl.enabled.protocols": " "})  # empty: the defaults, as Kafka
    assert tls.enabled_protocols == ("TLSv1.2", "TLSv1.3")
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        handshake(server_context(tls), certs.ca, version=version)


def test_java_cipher_suite_names_are_understood(certs):
    tls = settings(certs, **{"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ECDHE-RSA-AES256-GCM-SHA384,"
                                                  "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"})
    assert tls.cipher_suites == ("ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384")
    assert tls.enabled_protocols == ("TLSv1.2",)  # no TLS 1.3 suite listed: TLS 1.3 is off, as in Java
    context = server_context(tls)
    assert handshake(context, certs.ca).cipher in tls.cipher_suites
    with pytest.raises(ssl.SSLError):
        handshake(context, certs.ca, version=ssl.TLSVersion.TLSv1_3)


def test_only_tls13_suites_turn_tls12_off(certs):
    tls = settings(certs, **{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,"
                                                  "TLS_CHACHA20_POLY1305_SHA256"})
    assert tls.enabled_protocols == ("TLSv1.3",)
    with pytest.raises(ssl.SSLError):
        handshake(server_context(tls), certs.ca, version=ssl.TLSVersion.TLSv1_2)
    assert handshake(server_context(tls), certs.ca).version == "TLSv1.3"


def test_every_default_suite_of_java_17_has_an_openssl_name(certs):
    java17 = ("TLS_AES_256_GCM_SHA384 TLS_AES_128_GCM_SHA256 TLS_CHACHA20_POLY1305_SHA256 "
              "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 "
              "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 "
              "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 "
              "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384 TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256 "
              "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384 TLS_DHE_RSA_WITH_AES_128_GCM_SHA256 "
              "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256 TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384 "
              "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384 TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256 "
              "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256 TLS_DHE_RSA_WITH_AES_256_CBC_SHA256 "
              "TLS_DHE_DSS_WITH_AES_256_CBC_SHA256 TLS_DHE_RSA_WITH_AES_128_CBC_SHA256 "
              "TLS_DHE_DSS_WITH_AES_128_CBC_SHA256 TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA "
              "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA "
              "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA TLS_DHE_RSA_WITH_AES_256_CBC_SHA TLS_DHE_DSS_WITH_AES_256_CBC_SHA "
              "TLS_DHE_RSA_WITH_AES_128_CBC_SHA TLS_DHE_DSS_WITH_AES_128_CBC_SHA TLS_RSA_WITH_AES_256_GCM_SHA384 "
              "TLS_RSA_WITH_AES_128_GCM_SHA256 TLS_RSA_WITH_AES_256_CBC_SHA256 TLS_RSA_WITH_AES_128_CBC_SHA256 "
              "TLS_RSA_WITH_AES_256_CBC_SHA TLS_RSA_WITH_AES_128_CBC_SHA TLS_EMPTY_RENEGOTIATION_INFO_SCSV").split()
    tls = settings(certs, **{"ssl.cipher.suites": ",".join(java17)})
    assert len(tls.cipher_suites) == len(java17) - 1 and tls.enabled_protocols == ("TLSv1.2", "TLSv1.3")
    assert {"ECDHE-ECDSA-CHACHA20-POLY1305", "DHE-DSS-AES128-SHA256", "AES128-SHA"} <= set(tls.cipher_suites)
    handshake(server_context(tls), certs.ca, version=ssl.TLSVersion.TLSv1_2)


def test_an_encrypted_key_needs_its_password(certs):
    props = {"ssl.keystore.key": certs.server_key_encrypted.read_text(),
             "ssl.keystore.certificate.chain": certs.server_cert.read_text()}
    handshake(server_context(tls_settings({**props, "ssl.key.password": ENCRYPTED_KEY_PASSWORD})), certs.ca)
    with pytest.raises(ConfigError, match="^ssl.key.password: the private key in ssl.keystore.key cannot be "
                                          "decrypted with it$") as raised:
        server_context(tls_settings({**props, "ssl.key.password": "wrong-password"}))
    assert "wrong-password" not in str(raised.value) and "ENCRYPTED" not in str(raised.value)
    # no password: an error, never OpenSSL's passphrase prompt on the terminal
    with pytest.raises(ConfigError, match="^ssl.key.password: the private key in ssl.keystore.key is encrypted and "
                                          "no password is set$"):
        server_context(tls_settings(props))


def test_an_encrypted_key_in_the_keystore_file(certs, tmp_path):
    store = tmp_path / "store.pem"
    store.write_text(certs.server_key_encrypted.read_text() + certs.server_cert.read_text())
    tls = tls_settings({"ssl.keystore.location": str(store), "ssl.key.password": ENCRYPTED_KEY_PASSWORD})
    handshake(server_context(tls), certs.ca)
    with pytest.raises(ConfigError, match="^ssl.key.password: the private key in ssl.keystore.location cannot"):
        server_context(tls_settings({"ssl.keystore.location": str(store), "ssl.key.password": "nope"}))


K = "<the server keystore>"


@pytest.mark.parametrize("props, message", [
    ({"ssl.keystore.location": "/nonexistent.pem"}, "ssl.keystore.location: /nonexistent.pem: no such file"),
    ({"ssl.keystore.location": "/"}, "ssl.keystore.location: /: cannot be read (Is a directory)"),
    ({"ssl.keystore.type": "JKS", "ssl.keystore.location": K}, "ssl.keystore.type: JKS is not supported, only PEM; "
     "convert the store with `keytool"),
    ({"ssl.truststore.type": "PKCS12", "ssl.keystore.location": K}, "ssl.truststore.type: PKCS12 is not supported"),
    ({}, "ssl.keystore.location: a TLS listener needs its certificate and key"),
    ({"ssl.keystore.key": "k"}, "ssl.keystore.key: set, but ssl.keystore.certificate.chain is not"),
    ({"ssl.keystore.certificate.chain": "c"}, "ssl.keystore.certificate.chain: set, but ssl.keystore.key is not"),
    ({"ssl.keystore.location": K, "ssl.keystore.key": "k", "ssl.keystore.certificate.chain": "c"},
     "ssl.keystore.location: set either it or ssl.keystore.key"),
    ({"ssl.keystore.location": K, "ssl.keystore.password": "store-secret"}, "ssl.keystore.password: a PEM keystore "
     "has no store password"),
    ({"ssl.keystore.location": K, "ssl.truststore.password": "trust-secret"}, "ssl.truststore.password: a PEM "
     "truststore has no password"),
    ({"ssl.keystore.location": K, "ssl.truststore.location": "/t.pem", "ssl.truststore.certificates": "c"},
     "ssl.truststore.certificates: set either it or ssl.truststore.location"),
    ({"ssl.keystore.location": K, "ssl.truststore.location": "/nonexistent-ca.pem"},
     "ssl.truststore.location: /nonexistent-ca.pem: no such file"),
    ({"ssl.keystore.location": K, "ssl.truststore.certificates": "not pem"},
     "ssl.truststore.certificates: no certificate"),
    ({"ssl.keystore.location": K, "ssl.enabled.protocols": "TLSv1.2,TLSv1.1"},
     "ssl.enabled.protocols: TLSv1.1 is refused as insecure"),
    ({"ssl.keystore.location": K, "ssl.enabled.protocols": "TLSv1.4"}, "ssl.enabled.protocols: 'TLSv1.4' is not"),
    ({"ssl.keystore.location": K, "ssl.client.auth": "maybe"}, "ssl.client.auth: 'maybe' is not one of"),
    ({"ssl.keystore.location": K, "ssl.cipher.suites": "TLS_NOPE_WITH_NOTHING_SHA"},
     "ssl.cipher.suites: TLS_NOPE_WITH_NOTHING_SHA is not a cipher suite of OpenSSL"),
    ({"ssl.keystore.location": K, "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"},
     "ssl.cipher.suites: TLS 1.3 suites cannot be narrowed here"),
    ({"ssl.keystore.location": K, "ssl.cipher.suites": "AES128-SHA", "ssl.enabled.protocols": "TLSv1.3"},
     "ssl.cipher.suites: no suite listed is usable with ssl.enabled.protocols=TLSv1.3"),
    ({"ssl.keystore.location": K, "ssl.cipher.suites": "ADH-AES128-SHA"},
     "ssl.cipher.suites: ADH-AES128-SHA is refused: anonymous, unencrypted"),
    ({"ssl.keystore.location": K, "ssl.cipher.suites": "TLS_RSA_WITH_NULL_SHA256"},
     "ssl.cipher.suites: TLS_RSA_WITH_NULL_SHA256 is refused"),
    ({"ssl.keystore.location": K, "ssl.principal.mapping.rules": "RULE:broken"},
     "ssl.principal.mapping.rules: invalid rule `RULE:broken`"),
])
def test_bad_settings_name_themselves(certs, props, message):
    props = {name: str(certs.server) if value == K else value for name, value in props.items()}
    with pytest.raises(ConfigError) as raised:
        server_context(tls_settings(props))
    assert str(raised.value).startswith(message)
    assert "secret" not in str(raised.value)


def test_a_keystore_without_a_key_or_certificate_or_with_another_key(certs, tmp_path):
    only_cert, only_key, two_keys = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "two.pem"
    only_cert.write_text(certs.server_cert.read_text())
    only_key.write_text(certs.server_key.read_text())
    two_keys.write_text(certs.server_key.read_text() + certs.client_key.read_text() + certs.server_cert.read_text())
    for path, message in ((only_cert, "no private key"), (only_key, "no certificate"),
                          (two_keys, "2 private keys, one is expected")):
        with pytest.raises(ConfigError, match=f"^ssl.keystore.location: {message}"):
            server_context(tls_settings({"ssl.keystore.location": str(path)}))
    with pytest.raises(ConfigError, match="^ssl.keystore.key: the private key does not belong to the certificate$"):
        server_context(tls_settings({"ssl.keystore.key": certs.client_key.read_text(),
                                     "ssl.keystore.certificate.chain": certs.server_cert.read_text()}))
    garbled = certs.server_key.read_text().replace("\n", "\n!", 3)
    with pytest.raises(ConfigError, match="^ssl.keystore.certificate.chain: cannot be loaded") as raised:
        server_context(tls_settings({"ssl.keystore.key": garbled,
                                     "ssl.keystore.certificate.chain": certs.server_cert.read_text()}))
    key_body = certs.server_key.read_text().splitlines()[1]
    assert key_body not in str(raised.value)


def test_a_listener_prefix_overrides_key_by_key_and_errors_name_the_key_used(certs):
    props = {"ssl.keystore.location": str(certs.server), "ssl.client.auth": "none",
             "listener.name.mtls.ssl.client.auth": "required",
             "listener.name.mtls.ssl.truststore.location": str(certs.ca)}
    mtls, other = tls_settings(props, "listener.name.mtls."), tls_settings(props, "listener.name.other.")
    assert (mtls.client_auth, mtls.truststore_location, mtls.keystore_location) == ("required", str(certs.ca),
                                                                                    str(certs.server))
    assert (other.client_auth, other.truststore_location) == ("none", "")
    handshake(server_context(mtls), certs.ca, certs.client_cert, certs.client_key)
    with pytest.raises(ConfigError, match="^listener.name.mtls.ssl.truststore.location: /missing.pem: no such file"):
        server_context(tls_settings({**props, "listener.name.mtls.ssl.truststore.location": "/missing.pem"},
                                    "listener.name.mtls."))
    with pytest.raises(ConfigError, match="^listener.name.mtls.ssl.client.auth: 'sometimes'"):
        tls_settings({**props, "listener.name.mtls.ssl.client.auth": "sometimes"}, "listener.name.mtls.")


def test_a_truststore_file_may_hold_several_cas(certs, tmp_path):
    both = tmp_path / "cas.pem"
    both.write_text(certs.untrusted_ca.read_text() + certs.ca.read_text())
    context = server_context(settings(certs, **{"ssl.client.auth": "required", "ssl.truststore.location": str(both)}))
    handshake(context, certs.ca, certs.client_cert, certs.client_key)
    handshake(context, certs.ca, certs.untrusted_client_cert, certs.untrusted_client_key)
