"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer: the message's three tokens, Kafka's failure messages in its
order of checks, the JAAS users' verifier, and no password in any failure."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from coordinator.security.errors import AuthenticationFailed
from coordinator.security.plain import PlainServer, jaas_user_verifier

USERS = {"alice": "alice-pw", "bob": "pässwörd ✓"}


def server() -> PlainServer:
    return PlainServer(jaas_user_verifier(USERS))


@pytest.mark.parametrize("message, user", [
    (b"\0alice\0alice-pw", "alice"),
    (b"alice\0alice\0alice-pw", "alice"),  # an authorization id that is the user itself
    ("\0bob\0pässwörd ✓".encode(), "bob"),
])
def test_a_right_password_authenticates_with_an_empty_challenge(message, user):
    plain = server()
    assert plain.evaluate(message) == b""
    assert plain.complete and plain.username == user


@pytest.mark.parametrize("message, error", [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0nobody\0alice-pw", "Authentication failed: Invalid username or password"),  # no hint the user is unknown
    (b"\0Alice\0alice-pw", "Authentication failed: Invalid username or password"),
    (b"\0alice\0alice-pw\xff", "Authentication failed: Invalid username or password"),  # U+FFFD, as Java decodes
    (b"bob\0alice\0alice-pw", "Authentication failed: Client requested an authorization id that is different from "
                              "username"),
    (b"\0\0pw", "Authentication failed: username not specified"),
    (b"\0\0", "Authentication failed: username not specified"),  # the user is checked before the password
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"alice-pw", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"alice\0alice-pw", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0alice\0alice-pw\0", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\0a\0b\0c\0d\0e\0f", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),  # Kafka stops counting at 4
])
def test_kafkas_failures_word_for_word(message, error):
    plain = server()
    with pytest.raises(AuthenticationFailed) as raised:
        plain.evaluate(message)
    assert str(raised.value) == error and not plain.complete


def test_a_wrong_password_is_checked_before_the_authorization_id():
    with pytest.raises(AuthenticationFailed, match="Invalid username or password"):
        server().evaluate(b"bob\0alice\0wrong")


def test_the_verifier_gets_the_user_and_password_and_its_failure_is_kafkas():
    seen = []

    def verify(username: str, password: str) -> bool:
        seen.append((username, password))
        raise RuntimeError(f"backend down while checking {password}")

    with pytest.raises(AuthenticationFailed) as raised:
        PlainServer(verify).evaluate(b"\0carol\0s3cret")
    assert str(raised.value) == "Authentication failed: credentials for user could not be verified"
    assert "s3cret" not in raised.value.detail
    assert seen == [("carol", "s3cret")]


def test_the_jaas_verifier():
    verify = jaas_user_verifier(USERS)
    assert verify("alice", "alice-pw") and verify("bob", "pässwörd ✓")
    assert not verify("alice", "alice-p") and not verify("alice", "alice-pw ") and not verify("alice", "")
    assert not verify("nobody", "alice-pw") and not verify("nobody", "\0")  # the unknown user's dummy never matches


def test_one_message_only():
    plain = server()
    plain.evaluate(b"\0alice\0alice-pw")
    with pytest.raises(AuthenticationFailed):
        plain.evaluate(b"\0alice\0alice-pw")


PASSWORD = st.text(max_size=20).map(lambda s: "s3cr3t" + s)  # a marker no message holds by chance


@given(st.text(max_size=20), st.text(max_size=20), PASSWORD, st.sampled_from(["", "\0", "\0extra"]))
def test_no_failure_shows_the_password(authorization_id, username, password, tail):
    plain = server()
    try:
        plain.evaluate(f"{authorization_id}\0{username}\0{password}{tail}".encode())
    except AuthenticationFailed as exc:
        assert password not in str(exc) and password not in exc.detail


@given(st.binary(max_size=100))
def test_arbitrary_bytes_only_ever_fail_as_authentication(message):
    try:
        server().evaluate(message)
    except AuthenticationFailed:
        pass
