"""http.auth=basic (coordinator/ops/http_auth.py): the Authorization header, the check against SCRAM credentials
and PLAIN users, a matching password remembered only while its credential is unchanged, and who counts as loopback."""

from __future__ import annotations

import base64

import pytest

from coordinator.ops import http_auth
from coordinator.ops.http_auth import BasicAuth, basic_credentials, only_loopback
from coordinator.security.authorizer import Authorizer
from coordinator.security.scram import ScramMechanism, credential_from_password

SHA512 = ScramMechanism.SCRAM_SHA_512


def header(text: str) -> str:
    return "Basic " + base64.b64encode(text.encode()).decode()


def test_the_basic_header_is_read_as_rfc_7617_says():
    assert basic_credentials(header("alice:pa:ss")) == ("alice", "pa:ss")  # the password may hold ':'
    assert basic_credentials("basic " + base64.b64encode(b"bob:").decode()) == ("bob", "")
    for bad in (None, "", "Bearer abc", "Basic", "Basic !!!", header("no-colon"),
                "Basic " + base64.b64encode(b"\xff:x").decode()):
        assert basic_credentials(bad) is None, bad


async def test_scram_and_plain_users_are_checked_and_a_match_is_remembered_while_its_credential_stays(monkeypatch):
    credentials = {("carol", SHA512.mechanism_name): credential_from_password(SHA512, "carol-pw", b"salt", 4096)}
    derived: list[str] = []
    real = http_auth.credential_from_password

    def counting(mechanism, password, salt, iterations):
        derived.append(password)
        return real(mechanism, password, salt, iterations)

    monkeypatch.setattr(http_auth, "credential_from_password", counting)
    auth = BasicAuth(lambda user, mechanism: credentials.get((user, mechanism)), [{"bob": "bob-pw"}], None, 0)
    assert await auth.verify("bob", "bob-pw") and not await auth.verify("bob", "other")
    assert derived == []  # PLAIN compares, no key derivation
    assert await auth.verify("carol", "carol-pw") and await auth.verify("carol", "carol-pw")
    assert derived == ["carol-pw"]  # derived once, then remembered
    assert not await auth.verify("carol", "wrong") and not await auth.verify("carol", "wrong")
    assert derived == ["carol-pw", "wrong", "wrong"]  # a wrong password is never remembered
    credentials[("carol", SHA512.mechanism_name)] = credential_from_password(SHA512, "new-pw", b"salt2", 4096)
    assert not await auth.verify("carol", "carol-pw")  # the old password no longer passes
    assert await auth.verify("carol", "new-pw")
    assert not await auth.verify("nobody", "x")


def test_with_an_authorizer_the_user_needs_describe_on_the_cluster():
    authorizer = Authorizer(super_users=frozenset({"User:admin"}))
    auth = BasicAuth(lambda _u, _m: None, [], authorizer, 0)
    assert auth.authorized("admin", "10.0.0.1") and not auth.authorized("bob", "10.0.0.1")
    assert BasicAuth(lambda _u, _m: None, [], None, 0).authorized("bob", "10.0.0.1")


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                                ("", False), ("0.0.0.0", False), ("::", False),
                                                ("no-such-host.invalid", False)])
def test_only_loopback_hosts_are_loopback(host, loopback):
    assert only_loopback(host) is loopback
