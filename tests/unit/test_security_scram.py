"""SCRAM-SHA-256/512 server side as Kafka's ScramSaslServer: RFC 7677's exchange byte for byte, round trips with a
client written from the RFC (tests/support/scram_client.py), Kafka's grammar and messages, tampering of every
field, and fuzzing: whatever the bytes, the only failure is AuthenticationFailed."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time

import pytest
from hypothesis import given, strategies as st

from coordinator.security.errors import AuthenticationFailed
from coordinator.security.scram import (
    ScramCredential,
    ScramMechanism,
    ScramServer,
    credential_from_password,
    credential_from_salted_password,
    saslname_of,
    secure_random_string,
    username_of,
)
from tests.support.scram_client import ScramClient

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512

# RFC 7677, section 3: user "user", password "pencil"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CREDENTIAL = credential_from_password(SHA256, "pencil", RFC_SALT, 4096)
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def invalid(mechanism: ScramMechanism = SHA256) -> str:
    return ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
            f"{mechanism.mechanism_name}")


def rfc_server() -> ScramServer:
    return ScramServer(SHA256, {"user": RFC_CREDENTIAL}.get, server_nonce=RFC_SERVER_NONCE)


def test_kafkas_mechanisms():
    assert [(m.mechanism_name, m.type, m.hash_name, m.min_iterations, m.max_iterations) for m in ScramMechanism] == [
        ("SCRAM-SHA-256", 1, "sha256", 4096, 16384), ("SCRAM-SHA-512", 2, "sha512", 4096, 16384)]
    assert ScramMechanism.from_name("SCRAM-SHA-512") is SHA512 and ScramMechanism.from_type(1) is SHA256
    assert ScramMechanism.from_name("scram-sha-512") is None and ScramMechanism.from_name("PLAIN") is None
    assert ScramMechanism.from_type(0) is None and ScramMechanism.from_type(3) is None


def test_rfc7677_exchange_byte_for_byte():
    server = rfc_server()
    assert server.evaluate(CLIENT_FIRST) == SERVER_FIRST
    assert not server.complete and server.username == "user"
    assert server.evaluate(CLIENT_FINAL) == SERVER_FINAL
    assert server.complete and server.username == "user"


def test_credentials_from_a_password_and_from_a_salted_password_are_rfc5802s():
    salted = hashlib.pbkdf2_hmac("sha512", "pässword".encode(), b"salt", 8192)
    assert credential_from_salted_password(SHA512, salted, b"salt", 8192) == \
        credential_from_password(SHA512, "pässword", b"salt", 8192)
    credential = credential_from_salted_password(SHA512, salted, b"salt", 8192)
    assert credential.stored_key == hashlib.sha512(hmac.new(salted, b"Client Key", "sha512").digest()).digest()
    assert credential.server_key == hmac.new(salted, b"Server Key", "sha512").digest()
    assert (credential.salt, credential.iterations) == (b"salt", 8192)
    random_salted = credential_from_password(SHA256, "pw")
    assert len(random_salted.salt) == 32 and random_salted.iterations == 4096
    assert random_salted.salt != credential_from_password(SHA256, "pw").salt
    assert "hidden" in repr(credential) and credential.stored_key.hex() not in repr(credential)


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
@pytest.mark.parametrize("username, authzid", [
    ("alice", ""), ("alice", "alice"), ("a,b=c", ""), ("=2C", ""), ("~!#$%^&*()", "~!#$%^&*()"), ("x" * 300, ""),
])
def test_a_round_trip_with_an_rfc_client(mechanism, username, authzid):
    credential = credential_from_password(mechanism, "s3cret ✓", iterations=8192)
    server = ScramServer(mechanism, {username: credential}.get)
    client = ScramClient(mechanism.hash_name, username, "s3cret ✓", authzid=authzid)
    server_first = server.evaluate(client.first())
    assert server.username == username and not server.complete
    server_final = server.evaluate(client.final(server_first))
    assert server.complete and client.verify(server_final)


def test_the_server_nonce_is_kafkas_random_string():
    firsts = [ScramServer(SHA256, {"user": RFC_CREDENTIAL}.get).evaluate(b"n,,n=user,r=abc").decode()
              for _ in range(20)]
    nonces = [re.fullmatch(r"r=abc([0-9a-z]{1,26}),s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", first)[1] for first in firsts]
    assert len(set(nonces)) == 20
    assert all(len(secure_random_string()) <= 26 for _ in range(100))


def test_the_doubled_nonce_of_old_librdkafka_is_accepted_as_kafka_does():
    server = ScramServer(SHA512, {"u": credential_from_password(SHA512, "pw")}.get)
    client = ScramClient("sha512", "u", "pw", nonce="cnonce")
    server_first = server.evaluate(client.first())
    combined = server_first.decode().split(",")[0][2:]
    assert client.verify(server.evaluate(client.final(server_first, nonce="cnonce" + combined)))


def exchange_to_final(mechanism: ScramMechanism = SHA512) -> tuple[ScramServer, ScramClient, bytes]:
    server = ScramServer(mechanism, {"alice": credential_from_password(mechanism, "pw", b"salt")}.get, "snonce")
    client = ScramClient(mechanism.hash_name, "alice", "pw", nonce="cnonce")
    return server, client, client.final(server.evaluate(client.first()))


def _flip_proof(final: bytes) -> bytes:
    head, proof = final.split(b",p=")
    raw = bytearray(base64.b64decode(proof))
    raw[0] ^= 1
    return head + b",p=" + base64.b64encode(bytes(raw))


@pytest.mark.parametrize("tamper", [
    _flip_proof,
    lambda final: final.replace(b"c=biws", b"c=eSws"),  # the gs2 header of a client asking for channel binding
    lambda final: final.replace(b"c=biws", b"c=bixhPWFsaWNlLA=="),  # another gs2 header (n,a=alice,)
    lambda final: final.replace(b"c=biws", b"c="),
    lambda final: final.replace(b",p=", b"x,p="),  # the nonce changed at its end
    lambda final: final.replace(b",r=", b",r=x"),  # a nonce before the combined one changes the proof
    lambda final: final.split(b",p=")[0] + b",p=" + base64.b64encode(b"short"),  # a proof of the wrong length
    lambda final: final.split(b",p=")[0],  # no proof
    lambda final: final.replace(b",p=", b",p=!"),  # not base64
    lambda final: final.replace(b",p=", b",p=A"),  # badly padded base64
    lambda final: final.replace(b"c=", b"x=1,c="),
    lambda final: final + b",x=1",  # nothing may follow the proof
    lambda final: final.replace(b",p=", b",1x=2,p="),  # an extension name must be letters
    lambda final: b"",
])
def test_tampering_with_the_final_message_fails_with_kafkas_message_only(tamper):
    server, _client, final = exchange_to_final()
    tampered = tamper(final)
    assert tampered != final
    with pytest.raises(AuthenticationFailed) as raised:
        server.evaluate(tampered)
    assert str(raised.value) == invalid(SHA512) and not server.complete
    with pytest.raises(AuthenticationFailed):  # the exchange is over: the untampered message fails too
        server.evaluate(final)


@pytest.mark.parametrize("first, detail", [
    (b"n,,n=nobody,r=abc", "Invalid user credentials"),  # an unknown user: the same answer as a wrong password
    (b"y,,n=user,r=abc", "format"), (b"p=tls-unique,,n=user,r=abc", "format"),  # channel binding asked for
    (b"n,,n=us=er,r=abc", "format"), (b"n,,n=us=2c,r=abc", "format"),  # bad saslname escapes
    (b"n,,n=us\xc3\xa9r,r=abc", "format"),  # Kafka's grammar: ASCII names
    (b"n,,n=,r=abc", "format"), (b"n,,n=user,r=", "format"), (b"n,,n=user,r=a,b", "format"),
    (b"n,,n=user,r=abc,tokenauth=true", "Token Authentication failed"),  # delegation tokens are not on
    (b"n,,n=user,r=abc,tokenauth=TRUE", "Token Authentication failed"),
    (b"n,,n=user,r=abc,ext=1,tokenauth=false,tokenauth=true", "Token Authentication failed"),  # the last one wins
    (b"n,,r=abc", "format"), (b"n,n=user,r=abc", "format"), (b"n,,n=user", "format"),
    (b"n,,n=user,r=abc,", "format"), (b"n,,n=user,r=abc,1=x", "format"), (b"n,,n=user,r=abc,x=", "format"),
    (b"", "format"), (b"\xff\xfe", "format"), (b"n,,n=user,r=ab\x00c", "format"),
])
def test_a_bad_first_message_fails_as_invalid_credentials(first, detail):
    server = rfc_server()
    with pytest.raises(AuthenticationFailed) as raised:
        server.evaluate(first)
    assert str(raised.value) == invalid() and detail in raised.value.detail and not server.complete


@pytest.mark.parametrize("first", [
    b"n,,n=user,r=abc,tokenauth=false", b"n,,n=user,r=abc,foo=bar,Baz=a=b", b"n,,m=reserved,n=user,r=abc",
    b"n,a=user,n=user,r=abc",
])
def test_first_messages_kafkas_grammar_takes(first):
    assert rfc_server().evaluate(first).startswith(b"r=abc" + RFC_SERVER_NONCE.encode())


def test_an_authorization_id_other_than_the_user_is_refused_and_said_so():
    for first in (b"n,a=admin,n=user,r=abc", b"n,a=user=2C,n=user,r=abc"):
        with pytest.raises(AuthenticationFailed) as raised:
            rfc_server().evaluate(first)
        assert str(raised.value) == ("Authentication failed: Client requested an authorization id that is different "
                                     "from username")
    # the user is looked up first: an unknown user with another authzid is only "invalid credentials"
    with pytest.raises(AuthenticationFailed, match="invalid credentials"):
        rfc_server().evaluate(b"n,a=admin,n=nobody,r=abc")


def test_a_stored_credential_below_the_minimum_iterations_is_refused():
    weak = credential_from_password(SHA256, "pencil", RFC_SALT, 4095)
    with pytest.raises(AuthenticationFailed) as raised:
        ScramServer(SHA256, {"user": weak}.get).evaluate(CLIENT_FIRST)
    assert str(raised.value) == invalid() and "Iterations 4095 is less than the minimum 4096" in raised.value.detail


def test_a_failing_lookup_is_invalid_credentials_for_the_client():
    def lookup(user: str) -> ScramCredential | None:
        raise OSError("store down")

    with pytest.raises(AuthenticationFailed) as raised:
        ScramServer(SHA256, lookup).evaluate(CLIENT_FIRST)
    assert str(raised.value) == invalid() and "Credentials could not be obtained" in raised.value.detail


def test_no_message_after_completion():
    server = rfc_server()
    server.evaluate(CLIENT_FIRST)
    server.evaluate(CLIENT_FINAL)
    with pytest.raises(AuthenticationFailed) as raised:
        server.evaluate(CLIENT_FINAL)
    assert "Unexpected challenge in Sasl server state COMPLETE" in raised.value.detail and not server.complete


@pytest.mark.parametrize("name", ["alice", "a,b", "a=b", "=2C", ",=,=", "=3D=2C"])
def test_saslnames_round_trip(name):
    assert username_of(saslname_of(name)) == name


def test_no_failure_detail_carries_a_proof_or_key():
    server, _client, final = exchange_to_final()
    with pytest.raises(AuthenticationFailed) as raised:
        server.evaluate(_flip_proof(final))
    proof = _flip_proof(final).split(b",p=")[1].decode()
    assert proof not in raised.value.detail and proof not in str(raised.value)


@given(st.lists(st.binary(max_size=200), min_size=1, max_size=3))
def test_arbitrary_bytes_only_ever_fail_as_authentication(messages):
    server = rfc_server()
    for message in messages:
        try:
            server.evaluate(message)
        except AuthenticationFailed:
            return


@given(st.data())
def test_any_change_to_a_valid_final_message_fails(data):
    server, client, final = exchange_to_final()
    position = data.draw(st.integers(0, len(final) - 1))
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != final[position]))
    with pytest.raises(AuthenticationFailed):
        server.evaluate(final[:position] + bytes([byte]) + final[position + 1:])


@given(st.text(st.characters(codec="ascii", exclude_characters="\0"), min_size=1, max_size=40),
       st.text(max_size=30), st.sampled_from(list(ScramMechanism)))
def test_any_ascii_user_and_any_password_round_trip(username, password, mechanism):
    server = ScramServer(mechanism, {username: credential_from_password(mechanism, password, b"salt")}.get)
    client = ScramClient(mechanism.hash_name, username, password)
    assert client.verify(server.evaluate(client.final(server.evaluate(client.first()))))


@pytest.mark.parametrize("first, final", [
    (b"n,,n=" + b"a" * 500_000 + b",r=x", None),
    (b"n,,n=alice,r=x" + b",ab=c" * 100_000 + b",", None),
    (b"n,," + b"n=" * 250_000, None),
    (None, b"c=" + b"A" * 500_000 + b"="),
    (None, b"c=biws,r=x" + b",p=AAAA" * 70_000 + b"!"),
    (None, b"c=biws,r=cnoncesnonce" + b",ab=c" * 100_000 + b",p=" + b"A" * 7),
])
def test_a_message_of_half_a_megabyte_is_refused_in_linear_time(first, final):
    """The gate admits SASL frames up to 512 KiB (Kafka's sasl.server.max.receive.size): no backtracking blow-up."""
    server = exchange_to_final()[0] if final else rfc_server()
    started = time.perf_counter()
    with pytest.raises(AuthenticationFailed):
        server.evaluate(first if first is not None else final)
    assert time.perf_counter() - started < 3  # about 0.05 s
