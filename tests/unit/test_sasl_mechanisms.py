"""The SASL mechanisms, server side: SCRAM (RFC 7677's exchange byte for byte, tampering, the nonce old librdkafka
sends, arbitrary bytes); PLAIN is test_security_plain.py's, the JAAS text test_security_jaas.py's."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from hypothesis import given, strategies as st

from coordinator.security.errors import AuthenticationFailed
from coordinator.security.scram import ScramExchange
from coordinator.security.scram_store import from_salted_password

SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CREDENTIAL = from_salted_password(1, SALT, hashlib.pbkdf2_hmac("sha256", b"pencil", SALT, 4096), 4096)
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_exchange() -> ScramExchange:
    return ScramExchange("SCRAM-SHA-256", {"user": RFC_CREDENTIAL}.get, server_nonce=SERVER_NONCE)


def test_rfc7677_exchange_byte_for_byte():
    exchange = rfc_exchange()
    assert exchange.evaluate(CLIENT_FIRST) == SERVER_FIRST
    assert not exchange.complete
    assert exchange.evaluate(CLIENT_FINAL) == SERVER_FINAL
    assert exchange.complete and exchange.username == "user"


def client_final(first_bare: str, server_first: str, password: bytes, salt: bytes, nonce: str, header: bytes = b"n,,",
                 digest: str = "sha256") -> bytes:
    salted = hashlib.pbkdf2_hmac(digest, password, salt, 4096)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    without_proof = f"c={base64.b64encode(header).decode()},r={nonce}"
    signature = hmac.new(hashlib.new(digest, client_key).digest(),
                         f"{first_bare},{server_first},{without_proof}".encode(), digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def test_the_doubled_nonce_of_old_librdkafka_is_accepted_as_kafka_does():
    exchange = rfc_exchange()
    server_first = exchange.evaluate(CLIENT_FIRST).decode()
    nonce = "rOprNGfwEbeRWgbNEkqO" + server_first[2:server_first.index(",")]
    final = client_final("n=user,r=rOprNGfwEbeRWgbNEkqO", server_first, b"pencil", SALT, nonce)
    assert exchange.evaluate(final).startswith(b"v=") and exchange.complete


@pytest.mark.parametrize("final", [
    CLIENT_FINAL.replace(b"p=dHzb", b"p=dHzc"),  # a tampered proof
    CLIENT_FINAL.replace(b"c=biws", b"c=eSws"),  # another channel binding (y,,)
    CLIENT_FINAL.replace(b"hNlF$k0", b"hNlF$k1"),  # another nonce
    CLIENT_FINAL.replace(b",p=", b",x=1,p=").replace(b"p=dHzb", b"p=!!!!"),  # bad base64
    CLIENT_FINAL[:-10],  # a proof cut short
])
def test_tampering_fails_with_kafkas_message_only(final):
    exchange = rfc_exchange()
    exchange.evaluate(CLIENT_FIRST)
    with pytest.raises(AuthenticationFailed) as raised:
        exchange.evaluate(final)
    assert str(raised.value) == ("Authentication failed during authentication due to invalid credentials with SASL "
                                 "mechanism SCRAM-SHA-256")
    assert not exchange.complete


@pytest.mark.parametrize("first", [
    b"n,,n=nobody,r=abc",  # an unknown user: the same answer as a wrong password
    b"y,,n=user,r=abc", b"p=tls-unique,,n=user,r=abc",  # channel binding asked for
    b"n,,n=us=er,r=abc",  # a bad saslname escape
    b"n,,n=user,r=abc,tokenauth=true",  # delegation tokens are not on
    b"n,,r=abc", b"", b"\xff\xfe",
])
def test_a_bad_first_message_fails(first):
    with pytest.raises(AuthenticationFailed):
        rfc_exchange().evaluate(first)


def test_an_authorization_id_other_than_the_user_is_refused():
    with pytest.raises(AuthenticationFailed, match="authorization id that is different from username"):
        rfc_exchange().evaluate(b"n,a=admin,n=user,r=abc")
    assert rfc_exchange().evaluate(b"n,a=user,n=user,r=abc").startswith(b"r=abc")


@given(st.lists(st.binary(max_size=200), min_size=1, max_size=3))
def test_arbitrary_bytes_only_ever_fail_as_authentication(messages):
    exchange = rfc_exchange()
    for message in messages:
        try:
            exchange.evaluate(message)
        except AuthenticationFailed:
            return
