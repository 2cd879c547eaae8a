"""SCRAM credentials as kept (JSON with base64 bytes, never a password) and AlterUserScramCredentials' checks as
Kafka's ScramControlManager makes them: one test per error, the bounds, the order of the results."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from hypothesis import given, strategies as st
from kio.schema.errors import ErrorCode

from coordinator.security.credentials import (
    Alteration,
    CredentialError,
    Deletion,
    Upsertion,
    UserScramCredential,
    plan_alteration,
)
from coordinator.security.scram import ScramCredential, ScramMechanism, credential_from_salted_password

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
SALT = b"0123456789abcdef"
TWICE = CredentialError(ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request")


def salted(password: str, mechanism: ScramMechanism = SHA512, iterations: int = 4096) -> bytes:
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), SALT, iterations)


def upsert(user: str, mechanism: int = 2, iterations: int = 4096, password: str = "pw") -> Upsertion:
    return Upsertion(user, mechanism, iterations, SALT, salted(password, ScramMechanism.from_type(mechanism) or SHA512))


def plan(deletions=(), upsertions=(), existing=()) -> Alteration:
    return plan_alteration([Deletion(*d) for d in deletions], upsertions,
                           lambda user, mechanism: (user, mechanism) in existing)


# --- kept as JSON -------------------------------------------------------------------------------------------------

def test_json_has_kafkas_record_fields_in_base64_and_no_password():
    credential = credential_from_salted_password(SHA512, salted("s3cret"), SALT, 8192)
    value = UserScramCredential("alice", SHA512, credential).to_json()
    assert value == {"user": "alice", "mechanism": 2, "salt": base64.b64encode(SALT).decode(),
                     "stored_key": base64.b64encode(credential.stored_key).decode(),
                     "server_key": base64.b64encode(credential.server_key).decode(), "iterations": 8192}
    text = json.dumps(value)
    assert "s3cret" not in text and base64.b64encode(salted("s3cret")).decode() not in text
    assert UserScramCredential.from_json(json.loads(text)) == UserScramCredential("alice", SHA512, credential)


@given(st.text(), st.sampled_from(list(ScramMechanism)), st.binary(max_size=64), st.integers(1, 2**31 - 1),
       st.data())
def test_any_credential_reads_back(user, mechanism, salt, iterations, data):
    size = hashlib.new(mechanism.hash_name).digest_size
    keys = data.draw(st.tuples(st.binary(min_size=size, max_size=size), st.binary(min_size=size, max_size=size)))
    row = UserScramCredential(user, mechanism, ScramCredential(salt, *keys, iterations))
    assert UserScramCredential.from_json(json.loads(json.dumps(row.to_json()))) == row


GOOD = UserScramCredential("alice", SHA256, credential_from_salted_password(SHA256, salted("pw", SHA256), SALT,
                                                                            4096)).to_json()


@pytest.mark.parametrize("change, message", [
    ({"user": None}, "user: missing or not a str"),
    ({"mechanism": "2"}, "mechanism: missing or not an int"),
    ({"mechanism": True}, "mechanism: missing or not an int"),
    ({"mechanism": 3}, "mechanism: unknown SCRAM mechanism type 3"),
    ({"iterations": 4096.0}, "iterations: missing or not an int"),
    ({"iterations": 0}, "iterations: must be positive"),
    ({"salt": "not base64!"}, "salt: not base64"),
    ({"stored_key": GOOD["stored_key"][:-4] + "!!!!"}, "stored_key: not base64"),
    ({"server_key": None}, "server_key: missing or not a str"),
    ({"stored_key": base64.b64encode(bytes(64)).decode()}, "stored_key: not a SCRAM-SHA-256 key (64 bytes, not 32)"),
    ({"mechanism": 2}, "stored_key: not a SCRAM-SHA-512 key (32 bytes, not 64)"),
])
def test_a_bad_row_names_its_field_never_its_value(change, message):
    with pytest.raises(ValueError) as raised:
        UserScramCredential.from_json({**GOOD, **change})
    assert str(raised.value) == message
    assert GOOD["stored_key"] not in message and GOOD["server_key"] not in message


def test_an_upsertion_does_not_show_its_salted_password():
    upsertion = upsert("alice", password="s3cret")
    assert upsertion.salted_password.hex() not in repr(upsertion) and repr(upsertion.salted_password) not in \
        repr(upsertion)


# --- AlterUserScramCredentials ------------------------------------------------------------------------------------

def test_valid_changes_and_the_keys_derived_from_the_salted_password():
    alteration = plan([("bob", 1)], [upsert("alice", 2, 8192, "s3cret"), upsert("carol", 1)],
                      existing={("bob", SHA256)})
    assert alteration.deletions == {"bob": SHA256}
    assert alteration.upsertions["alice"] == UserScramCredential(
        "alice", SHA512, credential_from_salted_password(SHA512, salted("s3cret"), SALT, 8192))
    assert alteration.upsertions["carol"].mechanism is SHA256
    assert alteration.errors == {}
    assert alteration.results() == [("bob", ErrorCode.none, None), ("alice", ErrorCode.none, None),
                                    ("carol", ErrorCode.none, None)]


@pytest.mark.parametrize("iterations, error", [
    (4095, CredentialError(ErrorCode.unacceptable_credential, "Too few iterations")),
    (4096, None), (16384, None),
    (16385, CredentialError(ErrorCode.unacceptable_credential, "Too many iterations")),
    (0, CredentialError(ErrorCode.unacceptable_credential, "Too few iterations")),
    (-1, CredentialError(ErrorCode.unacceptable_credential, "Too few iterations")),
])
@pytest.mark.parametrize("mechanism", [1, 2])
def test_iterations_between_kafkas_bounds(iterations, error, mechanism):
    alteration = plan(upsertions=[Upsertion("alice", mechanism, iterations, SALT, b"salted")])
    assert alteration.errors.get("alice") == error
    assert ("alice" in alteration.upsertions) == (error is None)


def test_an_empty_user_name_is_unacceptable():
    empty = CredentialError(ErrorCode.unacceptable_credential, "Username must not be empty")
    assert plan(deletions=[("", 1)]).errors == {"": empty}
    assert plan(upsertions=[upsert("")]).errors == {"": empty}
    assert plan(upsertions=[upsert("", mechanism=9)]).errors == {"": empty}  # the user is checked first


@pytest.mark.parametrize("mechanism", [0, 3, -1, 127])
def test_an_unknown_mechanism_is_unsupported(mechanism):
    unknown = CredentialError(ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
    assert plan(deletions=[("alice", mechanism)]).errors == {"alice": unknown}
    assert plan(upsertions=[upsert("bob", mechanism)]).errors == {"bob": unknown}


def test_deleting_a_credential_that_is_not_there_is_not_found():
    asked = []

    def exists(user: str, mechanism: ScramMechanism) -> bool:
        asked.append((user, mechanism))
        return (user, mechanism) == ("alice", SHA512)

    alteration = plan_alteration([Deletion("alice", 1), Deletion("bob", 2), Deletion("carol", 2)], [], exists)
    not_found = CredentialError(ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
    assert alteration.errors == {"alice": not_found, "bob": not_found, "carol": not_found}  # alice has a SHA-512 one
    assert asked == [("alice", SHA256), ("bob", SHA512), ("carol", SHA512)]
    assert plan_alteration([Deletion("alice", 2)], [], exists).deletions == {"alice": SHA512}


@pytest.mark.parametrize("deletions, upsertions", [
    ([("alice", 2)], [upsert("alice", 2)]),  # deleted and upserted
    ([("alice", 1)], [upsert("alice", 2)]),  # ... whatever the mechanisms: Kafka keys the request by user
    ([], [upsert("alice", 2), upsert("alice", 2)]),  # upserted twice
    ([], [upsert("alice", 1), upsert("alice", 2)]),
    ([("alice", 2), ("alice", 2)], []),  # deleted twice
    ([("alice", 1), ("alice", 2)], [upsert("alice", 1)]),  # thrice: one error
])
def test_a_user_named_twice_is_a_duplicate_and_nothing_of_theirs_changes(deletions, upsertions):
    existing = {("alice", SHA256), ("alice", SHA512)}
    alteration = plan(deletions, [*upsertions, upsert("bob")], existing)
    assert alteration.errors == {"alice": TWICE}
    assert "alice" not in alteration.deletions and "alice" not in alteration.upsertions
    assert alteration.results() == [("bob", ErrorCode.none, None), ("alice", *TWICE)]


def test_a_users_first_error_stands():
    alteration = plan(deletions=[("alice", 1)], upsertions=[upsert("alice", 2)])  # not found, then upserted
    assert alteration.errors["alice"].code is ErrorCode.resource_not_found and not alteration.upsertions
    alteration = plan(upsertions=[upsert("alice", 2, 99), upsert("alice", 2)])  # too few iterations, then fine
    assert alteration.errors["alice"].message == "Too few iterations" and not alteration.upsertions


def test_an_empty_salted_password_fails_as_kafkas_hmac_does():
    alteration = plan(upsertions=[Upsertion("alice", 2, 4096, SALT, b""), Upsertion("bob", 2, 4096, b"", b"x")])
    assert alteration.errors == {"alice": CredentialError(ErrorCode.unknown_server_error, None)}
    assert list(alteration.upsertions) == ["bob"]  # an empty salt is Kafka's business too: it is taken


def test_results_list_deletions_then_upsertions_then_errors():
    alteration = plan([("gone", 2), ("ghost", 2)], [upsert("new"), upsert("", 2)], existing={("gone", SHA512)})
    assert [user for user, _code, _message in alteration.results()] == ["gone", "new", "ghost", ""]
