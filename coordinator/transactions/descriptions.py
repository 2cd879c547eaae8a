"""DescribeTransactions and ListTransactions over the coordinator's transactions (Kafka's
TransactionCoordinator.handleDescribeTransactions and TransactionStateManager.listTransactionStates), and
whether a producer id may still have markers to come (for pending transactional offsets:
runtime/orphans.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from coordinator.transactions.lifecycle import TxnState
from coordinator.transactions.txn_metadata import TxnMetadata


@dataclass(frozen=True, slots=True)
class TxnDescription:
    """One DescribeTransactions TransactionState entry."""

    transactional_id: str
    error: ErrorCode
    state: str = ""
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    topics: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class TxnListed:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class TxnListing:
    """The ListTransactions answer (error ErrorCode.none; loading/ownership errors are the runtime's)."""

    states: tuple[TxnListed, ...]
    unknown_state_filters: tuple[str, ...] = ()
    error: ErrorCode = field(default=ErrorCode.none)


def describe(txns: dict[str, TxnMetadata], txn_id: str) -> TxnDescription:
    if not txn_id:
        return TxnDescription(txn_id, ErrorCode.invalid_request)
    md = txns.get(txn_id)
    if md is None or md.state == TxnState.DEAD:
        return TxnDescription(txn_id, ErrorCode.transactional_id_not_found)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(md.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return TxnDescription(txn_id, ErrorCode.none, md.state.name, md.txn_timeout_ms, md.txn_start_ms,
                          md.producer_id, md.producer_epoch,
                          tuple((topic, tuple(ids)) for topic, ids in by_topic.items()))


def list_transactions(txns: dict[str, TxnMetadata], now_ms: int, states_filter: Iterable[str] = (),
                      producer_ids_filter: Iterable[int] = (), duration_filter_ms: int = -1) -> TxnListing:
    """Kafka 3.8+: Dead is never listed; an empty filter matches all; duration_filter_ms >= 0 keeps only
    transactions running longer than it (now - start > duration)."""
    state_names = list(states_filter)
    producer_ids = set(producer_ids_filter)
    wanted: set[TxnState] = set()
    unknown: list[str] = []
    for name in state_names:
        state = TxnState.from_kafka_name(name)
        if state is None:
            unknown.append(name)
        else:
            wanted.add(state)
    listed = []
    for md in txns.values():
        if md.state == TxnState.DEAD:
            continue
        if producer_ids and md.producer_id not in producer_ids:
            continue
        if state_names and md.state not in wanted:
            continue
        if duration_filter_ms >= 0 and now_ms - md.txn_start_ms <= duration_filter_ms:
            continue
        listed.append(TxnListed(md.transactional_id, md.producer_id, md.state.name))
    return TxnListing(tuple(listed), tuple(unknown))


#: the states of a transaction whose markers are still to be written (PrepareEpochFence is a pending state only)
_MARKERS_TO_COME = frozenset({TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                              TxnState.PREPARE_EPOCH_FENCE})


def by_producer(txns: Iterable[TxnMetadata]) -> dict[int, TxnMetadata]:
    """Producer id -> the metadata of the transactional id that holds it now or held it last (KIP-360's previous
    producer id, in memory only); a current holder wins over a previous one."""
    out: dict[int, TxnMetadata] = {}
    for md in txns:
        if md.previous_producer_id >= 0:
            out.setdefault(md.previous_producer_id, md)
        out[md.producer_id] = md
    return out


def markers_may_come(md: TxnMetadata, producer_id: int) -> bool:
    """Whether a transaction marker of `producer_id` may still be written by `md`'s transactional id: a
    transaction of that producer id ongoing or ending, or any transition in flight (its outcome unknown yet).
    False means no marker of `producer_id` is on its way: its transaction completed or was aborted, or the
    transactional id moved on to a new producer id (which it does only between transactions)."""
    if md.pending:
        return True
    return md.producer_id == producer_id and md.state in _MARKERS_TO_COME
