"""SCRAM credentials as they are kept, and the checks of a change to them, whatever the store.

Kept is what Kafka's UserScramCredentialRecord holds per (user, mechanism): salt, StoredKey, ServerKey, iterations;
never a password (AlterUserScramCredentials sends a salted password, from which the keys are derived, and which is
then forgotten). `to_json`/`from_json` write the bytes as base64.

`plan_alteration` is Kafka's ScramControlManager.alterCredentials without its store: it checks every deletion and
upsertion of one AlterUserScramCredentials request, per user, with Kafka's error codes and messages, and says
what to write: the request's valid changes, all together.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode

from coordinator.security.scram import ScramCredential, ScramMechanism, credential_from_salted_password

ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
DOES_NOT_EXIST = "Attempt to delete a user credential that does not exist"
EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
TOO_FEW_ITERATIONS = "Too few iterations"
TOO_MANY_ITERATIONS = "Too many iterations"


@dataclass(frozen=True)
class UserScramCredential:
    """One user's credential for one mechanism, as stored."""

    user: str
    mechanism: ScramMechanism
    credential: ScramCredential

    def to_json(self) -> dict[str, Any]:
        credential = self.credential
        return {"user": self.user, "mechanism": self.mechanism.type, "salt": _b64(credential.salt),
                "stored_key": _b64(credential.stored_key), "server_key": _b64(credential.server_key),
                "iterations": credential.iterations}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> UserScramCredential:
        """The credential `to_json` wrote; ValueError names the field that is wrong (never its value)."""
        user = _field(value, "user", str)
        mechanism_type = _field(value, "mechanism", int)
        mechanism = ScramMechanism.from_type(mechanism_type)
        if mechanism is None:
            raise ValueError(f"mechanism: unknown SCRAM mechanism type {mechanism_type}")
        iterations = _field(value, "iterations", int)
        if iterations < 1:
            raise ValueError("iterations: must be positive")
        salt, stored_key, server_key = (_bytes(value, name) for name in ("salt", "stored_key", "server_key"))
        size = hashlib.new(mechanism.hash_name).digest_size
        for name, key in (("stored_key", stored_key), ("server_key", server_key)):
            if len(key) != size:
                raise ValueError(f"{name}: not a {mechanism.mechanism_name} key ({len(key)} bytes, not {size})")
        return cls(user, mechanism, ScramCredential(salt, stored_key, server_key, iterations))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _field(value: Mapping[str, Any], name: str, kind: type) -> Any:
    item = value.get(name)
    if not isinstance(item, kind) or isinstance(item, bool):
        raise ValueError(f"{name}: missing or not a{'n' if kind is int else ''} {kind.__name__}")
    return item


def _bytes(value: Mapping[str, Any], name: str) -> bytes:
    text = _field(value, name, str)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{name}: not base64") from None


class Deletion(NamedTuple):
    user: str
    mechanism: int  # Kafka's mechanism type, as the request has it (maybe unknown)


@dataclass(frozen=True)
class Upsertion:
    user: str
    mechanism: int  # Kafka's mechanism type, as the request has it (maybe unknown)
    iterations: int
    salt: bytes = field(repr=False)
    salted_password: bytes = field(repr=False)


class CredentialError(NamedTuple):
    code: ErrorCode
    message: str | None


@dataclass(frozen=True)
class Alteration:
    """What one AlterUserScramCredentials request does, per user: a deletion, an upsertion, or an error."""

    deletions: dict[str, ScramMechanism]
    upsertions: dict[str, UserScramCredential]
    errors: dict[str, CredentialError]

    def results(self) -> list[tuple[str, ErrorCode, str | None]]:
        """(user, error code, message) per user, in Kafka's order: deletions, upsertions, then errors."""
        done = [*self.deletions, *self.upsertions]
        return [(user, ErrorCode.none, None) for user in done] + \
            [(user, error.code, error.message) for user, error in self.errors.items()]


def plan_alteration(deletions: Iterable[Deletion], upsertions: Iterable[Upsertion],
                    exists: Callable[[str, ScramMechanism], bool]) -> Alteration:
    """Kafka's checks, user by user: a user named twice in the request (twice deleted, or deleted and upserted,
    or upserted twice, whatever the mechanisms) is DUPLICATE_RESOURCE and nothing of theirs changes; an empty user
    name or too few or too many iterations UNACCEPTABLE_CREDENTIAL; an unknown mechanism
    UNSUPPORTED_SASL_MECHANISM; deleting a credential that is not there (`exists`) RESOURCE_NOT_FOUND."""
    deleted: dict[str, ScramMechanism] = {}
    upserted: dict[str, Upsertion] = {}
    errors: dict[str, CredentialError] = {}
    twice = CredentialError(ErrorCode.duplicate_resource, ALTERED_TWICE)
    for deletion in deletions:
        user = deletion.user
        if user in errors:
            continue
        if deleted.pop(user, None) is not None:
            errors[user] = twice
            continue
        checked = _mechanism(user, deletion.mechanism)
        if isinstance(checked, ScramMechanism) and not exists(user, checked):
            checked = CredentialError(ErrorCode.resource_not_found, DOES_NOT_EXIST)
        if isinstance(checked, CredentialError):
            errors[user] = checked
        else:
            deleted[user] = checked
    for upsertion in upsertions:
        user = upsertion.user
        if user in errors:
            continue
        if deleted.pop(user, None) is not None or upserted.pop(user, None) is not None:
            errors[user] = twice
            continue
        error = _upsertion_error(upsertion)
        if error is None:
            upserted[user] = upsertion
        else:
            errors[user] = error
    credentials: dict[str, UserScramCredential] = {}
    for user, upsertion in upserted.items():
        if not upsertion.salted_password:  # Kafka's HMAC key: SecretKeySpec refuses an empty one
            errors[user] = CredentialError(ErrorCode.unknown_server_error, None)
            continue
        mechanism = ScramMechanism(upsertion.mechanism)
        credentials[user] = UserScramCredential(user, mechanism, credential_from_salted_password(
            mechanism, upsertion.salted_password, upsertion.salt, upsertion.iterations))
    return Alteration(deleted, credentials, errors)


def _mechanism(user: str, mechanism_type: int) -> ScramMechanism | CredentialError:
    """Kafka's validateScramUsernameAndMechanism."""
    if not user:
        return CredentialError(ErrorCode.unacceptable_credential, EMPTY_USER)
    mechanism = ScramMechanism.from_type(mechanism_type)
    if mechanism is None:
        return CredentialError(ErrorCode.unsupported_sasl_mechanism, UNKNOWN_MECHANISM)
    return mechanism


def _upsertion_error(upsertion: Upsertion) -> CredentialError | None:
    mechanism = _mechanism(upsertion.user, upsertion.mechanism)
    if isinstance(mechanism, CredentialError):
        return mechanism
    if upsertion.iterations < mechanism.min_iterations:
        return CredentialError(ErrorCode.unacceptable_credential, TOO_FEW_ITERATIONS)
    if upsertion.iterations > mechanism.max_iterations:
        return CredentialError(ErrorCode.unacceptable_credential, TOO_MANY_ITERATIONS)
    return None
