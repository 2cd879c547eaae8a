"""The records of `__transaction_state`: TransactionLogKey and TransactionLogValue, in Kafka's bytes.

Key: int16 version (0) + TransactionLogKey v0 (TransactionalId). Value: int16 version + TransactionLogValue
v0 (classic) or v1 (flexible, tagged PreviousProducerId/NextProducerId/ClientTransactionVersion); a null
value is the tombstone of an expired transactional id. TransactionStatus carries Kafka's TransactionState
ids (coordinator/transactions/state.py names them).
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    extra: dict = field(default_factory=dict, compare=False)  # unknown tagged fields read, kept for dumps
