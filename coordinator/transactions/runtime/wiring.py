"""The transaction coordinator of a node, built from the config and wired to where markers go."""

from __future__ import annotations

from typing import Any

from coordinator.transactions.runtime.markers import MarkerWriter
from coordinator.transactions.runtime.orphans import OrphanedOffsets
from coordinator.transactions.runtime.settings import TxnRuntimeSettings
from coordinator.transactions.runtime.state_log import TxnStateLog
from coordinator.transactions.runtime.txn_coordinator import TransactionCoordinator


def build_transaction_coordinator(config: Any, data: Any, groups: Any) -> TransactionCoordinator:
    """`data`: the DataPlane (topic markers, producer ids); `groups`: the GroupCoordinator (offsets markers)."""
    state_log = TxnStateLog(config.log_dirs, flush_policy=config.transaction_state_log_flush_policy,
                            flush_interval_ms=config.log_flush_interval_ms,
                            segment_bytes=config.transaction_state_log_segment_bytes)
    markers = MarkerWriter(data.write_marker, groups.complete_transaction)
    txn = TransactionCoordinator(TxnRuntimeSettings.from_config(config), state_log, markers, data.producer_ids)
    data.txn_verifier = txn.verify  # KIP-890: transactional batches only in partitions added to their transaction
    txn.listener = OrphanedOffsets(txn, groups)  # pending offsets of transactions that are over: aborted
    return txn
