"""The transaction coordinator's settings (Kafka's TransactionStateManagerConfig / TransactionLogConfig):
their table rows for coordinator/config.py."""

from __future__ import annotations

from typing import Any

from coordinator.config_values import _choice, _int

INT32_MAX = 2**31 - 1
INT16_MAX = 2**15 - 1

TXN_SETTINGS: dict[str, tuple[str, Any, str, str]] = {
    "transaction.state.log.num.partitions": (
        "transaction_state_log_num_partitions", _int(1, 100000), "50",
        "Partitions of __transaction_state (fixes where each transactional id is coordinated)."),
    "transaction.state.log.replication.factor": (
        "transaction_state_log_replication_factor", _int(1, INT16_MAX), "3",
        "Cluster mode: the replication factor __transaction_state is created with, i.e. how many live nodes "
        "Metadata names as each partition's replicas, at most (its data's copies are PostgreSQL's)."),
    "transaction.state.log.segment.bytes": (
        "transaction_state_log_segment_bytes", _int(1, INT32_MAX), "104857600",
        "Segment size of the __transaction_state logs."),
    "transaction.state.log.flush.policy": (
        "transaction_state_log_flush_policy", _choice("FSYNC", "NONE"), "fsync",
        "__transaction_state: fsync = a transaction's state change is answered after fsync; none = after the "
        "OS write."),
    "transaction.max.timeout.ms": (
        "transaction_max_timeout_ms", _int(1, INT32_MAX), "900000",
        "Largest transaction.timeout.ms a producer may ask for (else INVALID_TRANSACTION_TIMEOUT)."),
    "transactional.id.expiration.ms": (
        "transactional_id_expiration_ms", _int(1, INT32_MAX), "604800000",
        "A transactional id without a transaction for this long is expired."),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
        "transaction_abort_timed_out_transaction_cleanup_interval_ms", _int(1, INT32_MAX), "10000",
        "How often transactions past their timeout are aborted."),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (
        "transaction_remove_expired_transaction_cleanup_interval_ms", _int(1, INT32_MAX), "3600000",
        "How often expired transactional ids are removed."),
}
