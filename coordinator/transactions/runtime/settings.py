"""The transaction coordinator's settings, by Kafka's names (coordinator/config.py defines them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rules.placement import DEFAULT_TXN_PARTITIONS


@dataclass(frozen=True)
class TxnRuntimeSettings:
    num_partitions: int = DEFAULT_TXN_PARTITIONS  # transaction.state.log.num.partitions
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    abort_interval_ms: int = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    expire_interval_ms: int = 3_600_000  # transaction.remove.expired.transaction.cleanup.interval.ms

    @classmethod
    def from_config(cls, config: Any) -> TxnRuntimeSettings:
        return cls(num_partitions=config.transaction_state_log_num_partitions,
                   max_timeout_ms=config.transaction_max_timeout_ms,
                   id_expiration_ms=config.transactional_id_expiration_ms,
                   abort_interval_ms=config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                   expire_interval_ms=config.transaction_remove_expired_transaction_cleanup_interval_ms)
