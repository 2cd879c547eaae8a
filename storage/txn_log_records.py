"""The records of `__transaction_state`: TransactionLogKey and TransactionLogValue, in Kafka's bytes.

Key: int16 version (0) + TransactionLogKey v0 (TransactionalId). Value: int16 version + TransactionLogValue
v0 (classic) or v1 (flexible, tagged PreviousProducerId/NextProducerId/ClientTransactionVersion); a null
value is the tombstone of an expired transactional id. TransactionStatus carries Kafka's TransactionState
ids (coordinator/transactions/lifecycle.py names them; TXN_STATUS_NAMES here is the same table for storage).

Which value version Kafka writes depends on the cluster's finalized `transaction.version` feature, not on
the client: TransactionVersion.transactionLogValueVersion() is 1 from TV_1 up, else 0 (Kafka 3.9 in
production is TV_0: v0; a Kafka 4.0 cluster formatted at 4.0 finalizes TV_2: v1, for every client, with
ClientTransactionVersion 0 - not written - for clients on EndTxn v0-v4). DEFAULT_VALUE_VERSION is 1.
Field order and tags follow transaction-coordinator/src/main/resources/common/message/TransactionLog*.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidRecordError
from .record_schema import I16, Field, Schema, read_struct, to_json, write_struct


class UnknownTxnRecordVersion(InvalidRecordError):
    """A TransactionLogKey/TransactionLogValue version Kafka does not define (Kafka: UnknownKey /
    IllegalStateException "Unknown version ... from the transaction log message value")."""


@dataclass(frozen=True, slots=True)
class TxnPartitions:
    topic: str
    partition_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TxnLogKey:
    transactional_id: str


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    transaction_partitions: tuple[TxnPartitions, ...] | None = ()
    transaction_last_update_timestamp_ms: int = -1
    transaction_start_timestamp_ms: int = -1
    previous_producer_id: int = -1  # tagged, v1+
    next_producer_id: int = -1  # tagged, v1+
    client_transaction_version: int = 0  # tagged, v1+
    extra: dict[int, bytes] = field(default_factory=dict, compare=False)  # unknown tagged fields, kept (v1+)


# Kafka's TransactionState ids (TransactionStatus) and names (TransactionState.name, as Describe/ListTransactions
# and the tools print them).
TXN_STATUS_NAMES: dict[int, str] = {
    0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit", 5: "CompleteAbort",
    6: "Dead", 7: "PrepareEpochFence",
}

KEY_VERSION = 0
VALUE_VERSIONS = range(0, 2)
DEFAULT_VALUE_VERSION = 1
_NOT_FLEXIBLE = 32767

PARTITIONS = Schema(TxnPartitions, VALUE_VERSIONS, 1, (
    Field("topic", "string", 0),
    Field("partition_ids", "[]int32", 0),
))
KEY = Schema(TxnLogKey, range(0, 1), _NOT_FLEXIBLE, (Field("transactional_id", "string", 0),))
VALUE = Schema(TxnLogValue, VALUE_VERSIONS, 1, (  # schema order: the JSON order Kafka's converter prints
    Field("producer_id", "int64", 0),
    Field("previous_producer_id", "int64", 1, tag=0, default=-1),
    Field("next_producer_id", "int64", 1, tag=1, default=-1),
    Field("producer_epoch", "int16", 0),
    Field("transaction_timeout_ms", "int32", 0),
    Field("transaction_status", "int8", 0),
    Field("transaction_partitions", "[]", 0, nested=PARTITIONS, nullable=True),
    Field("transaction_last_update_timestamp_ms", "int64", 0),
    Field("transaction_start_timestamp_ms", "int64", 0),
    Field("client_transaction_version", "int16", 1, tag=2, default=0),
), unknown_tags="extra")


def value_version_for(transaction_version: int) -> int:
    """Kafka's TransactionVersion.transactionLogValueVersion: v1 from transaction.version 1 up."""
    return 1 if transaction_version >= 1 else 0


def status_name(status: int) -> str:
    """Kafka's TransactionState name of a TransactionStatus id ("Unknown(9)" for an id Kafka lacks)."""
    return TXN_STATUS_NAMES.get(status, f"Unknown({status})")


def encode_txn_key(key: TxnLogKey) -> bytes:
    out = bytearray(I16.pack(KEY_VERSION))
    write_struct(out, KEY, key, KEY_VERSION)
    return bytes(out)


def decode_txn_key(data: bytes) -> TxnLogKey:
    """The key; UnknownTxnRecordVersion for a key version other than 0."""
    version = _version(data, "TransactionLogKey")
    if version != KEY_VERSION:
        raise UnknownTxnRecordVersion(f"unknown TransactionLogKey version {version}")
    key, end = read_struct(data, 2, KEY, version)
    if end != len(data):
        raise InvalidRecordError(f"TransactionLogKey v{version} has {len(data) - end} trailing bytes")
    return key


def encode_txn_value(value: TxnLogValue | None, version: int | None = None) -> bytes | None:
    """The value bytes at `version` (DEFAULT_VALUE_VERSION when None); None (a tombstone) for None.
    v0 has no tagged fields: as Kafka's generated writer, v0 refuses a v1 field away from its default and
    unknown tagged fields (ValueError) rather than lose them."""
    if value is None:
        return None
    version = DEFAULT_VALUE_VERSION if version is None else version
    if version not in VALUE_VERSIONS:
        raise UnknownTxnRecordVersion(f"unknown TransactionLogValue version {version}")
    if version == 0 and (value.previous_producer_id != -1 or value.next_producer_id != -1
                         or value.client_transaction_version != 0 or value.extra):
        raise ValueError("TransactionLogValue v0 cannot carry the tagged fields of v1")
    out = bytearray(I16.pack(version))
    write_struct(out, VALUE, value, version)
    return bytes(out)


def decode_txn_value(data: bytes) -> tuple[int, TxnLogValue]:
    """(version, value) of value bytes (not a tombstone: callers see a null value as one). Unknown tagged
    fields land in `extra`; a version other than 0-1 raises UnknownTxnRecordVersion; trailing bytes are
    ignored, as Kafka's reader does."""
    version = _version(data, "TransactionLogValue")
    if version not in VALUE_VERSIONS:
        raise UnknownTxnRecordVersion(f"unknown TransactionLogValue version {version}")
    value, _end = read_struct(data, 2, VALUE, version)
    return version, value


def key_json(key: TxnLogKey) -> dict[str, Any]:
    """The key as Kafka's TransactionLogKeyJsonConverter writes it ({"transactionalId": ...})."""
    return to_json(KEY, key, KEY_VERSION)


def value_json(value: TxnLogValue, version: int) -> dict[str, Any]:
    """The value as Kafka's TransactionLogValueJsonConverter writes it, in schema order (tagged fields only
    when not at their default); unknown tagged fields, which Kafka's converter drops, follow as
    "unknownTaggedFields" {tag: hex} when there are any."""
    flat = to_json(VALUE, value, version)
    out = {spec.json_name: flat[spec.json_name] for spec in VALUE.fields if spec.json_name in flat}
    if value.extra:
        out["unknownTaggedFields"] = {str(tag): raw.hex() for tag, raw in sorted(value.extra.items())}
    return out


def _version(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise InvalidRecordError(f"{what} is shorter than its version")
    return I16.unpack_from(data, 0)[0]
