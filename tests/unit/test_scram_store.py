"""SCRAM credentials as AlterUserScramCredentials stores them: Kafka's validation, keys derived from the
salted password (RFC 5802), the file store (survives a restart, 0600, no password), and the admin answers."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat

import pytest
from kio.schema.errors import ErrorCode

from coordinator.security.scram import ScramCredential, ScramMechanism, credential_from_salted_password
from coordinator.security.scram_store import FileCredentialStore, ScramCredentials, Upsertion

SALT = b"0123456789abcdef"


def salted(password: str, iterations: int = 4096, digest: str = "sha512") -> bytes:
    return hashlib.pbkdf2_hmac(digest, password.encode(), SALT, iterations)


def upsert(user: str, mechanism: int = 2, iterations: int = 4096, password: str = "pw") -> Upsertion:
    digest = "sha256" if mechanism == 1 else "sha512"
    return Upsertion(user, mechanism, iterations, SALT, salted(password, iterations, digest))


def test_the_keys_are_rfc5802s_and_no_password_is_kept():
    password = salted("pencil", digest="sha256")
    stored = credential_from_salted_password(ScramMechanism.SCRAM_SHA_256, password, SALT, 4096)
    client_key = hmac.new(password, b"Client Key", "sha256").digest()
    assert stored.stored_key == hashlib.sha256(client_key).digest()
    assert stored.server_key == hmac.new(password, b"Server Key", "sha256").digest()
    assert password.hex() not in repr(stored) and "keys=[hidden]" in repr(stored)


async def test_kafkas_validation_per_user(tmp_path):
    credentials = ScramCredentials(FileCredentialStore(str(tmp_path)))
    results = await credentials.alter(
        [("ghost", 2), ("", 1), ("odd", 9)],
        [upsert("few", iterations=4095), upsert("many", iterations=16385), upsert("alice"), upsert("alice", 1),
         upsert("", 2), upsert("bob", 1)])
    by_user = {user: (code, message) for user, code, message in results}
    assert by_user["ghost"] == (ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
    assert by_user[""] == (ErrorCode.unacceptable_credential, "Username must not be empty")
    assert by_user["odd"] == (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
    assert by_user["few"] == (ErrorCode.unacceptable_credential, "Too few iterations")
    assert by_user["many"] == (ErrorCode.unacceptable_credential, "Too many iterations")
    assert by_user["alice"] == (ErrorCode.duplicate_resource,
                                "A user credential cannot be altered twice in the same request")
    assert by_user["bob"] == (ErrorCode.none, None)
    assert credentials.users() == ["bob"] and credentials.lookup("bob", "SCRAM-SHA-256") is not None
    assert credentials.lookup("bob", "SCRAM-SHA-512") is None and credentials.lookup("alice", "SCRAM-SHA-512") is None


async def test_credentials_survive_a_restart_in_a_private_file_without_the_password(tmp_path):
    credentials = ScramCredentials(FileCredentialStore(str(tmp_path)))
    await credentials.alter([], [upsert("alice", 2, 8192, "s3cret-pass"), upsert("bob", 1)])
    await credentials.alter([("bob", 1)], [])
    path = tmp_path / FileCredentialStore.FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    body = path.read_bytes()
    assert b"s3cret-pass" not in body and salted("s3cret-pass", 8192) not in body
    again = ScramCredentials(FileCredentialStore(str(tmp_path)))
    assert again.users() == ["alice"] and again.of_user("alice") == [(2, 8192)]
    assert again.lookup("alice", "SCRAM-SHA-512") == credentials.lookup("alice", "SCRAM-SHA-512")
    assert isinstance(again.lookup("alice", "SCRAM-SHA-512"), ScramCredential)


class FailingStore(FileCredentialStore):
    async def write(self, upserts, deletes) -> None:
        raise OSError("disk full")


async def test_a_write_that_fails_changes_nothing_in_memory(tmp_path):
    credentials = ScramCredentials(FailingStore(str(tmp_path)))
    with pytest.raises(OSError):
        await credentials.alter([], [upsert("alice")])
    assert credentials.users() == []
