"""Writing a transition and ending a transaction: Kafka's appendTransactionToLog callback, endTransaction
(EndTxn, the fence of an InitProducerId meeting an ongoing transaction, the abort of a timed-out one), the
marker job that follows a durable PrepareCommit/PrepareAbort, and its CompleteCommit/CompleteAbort write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kio.schema.errors import ErrorCode

from coordinator.transactions.lifecycle import TxnState
from coordinator.transactions.steps import MarkerJob, TopicPartition, TxnAnswer, TxnStep
from coordinator.transactions.txn_metadata import NO_PRODUCER_EPOCH, TxnMetadata, TxnStateError, TxnTransit

_E = ErrorCode
#: what follows a settled write: (the step, the mapped error) -> the answer
Then = Callable[[TxnStep, ErrorCode], TxnAnswer]


class TxnContext(Protocol):
    """What these functions need of TxnOps (operations.py)."""

    txns: dict[str, TxnMetadata]
    coordinator_epoch: int

    def clock_ms(self) -> int: ...


def immediate(txn_id: str, error: ErrorCode) -> TxnStep:
    return TxnStep(txn_id, error=error)


def transit_step(ctx: TxnContext, md: TxnMetadata, transit: TxnTransit, then: Then | None = None,
                 retry_unavailable: bool = False) -> TxnStep:
    """The step writing `transit`'s record; its `written` completes the transition (or drops it on a failed
    write, except COORDINATOR_NOT_AVAILABLE when `retry_unavailable`: the caller writes it again)."""

    def on_written(step: TxnStep, error: ErrorCode) -> TxnAnswer:
        current = ctx.txns.get(md.transactional_id) is md
        if error == _E.none:
            if not current:  # unloaded or reloaded meanwhile (Kafka: the coordinator epoch changed)
                error = _E.not_coordinator
            else:
                md.complete_transition(transit)
        elif current:
            if retry_unavailable and error == _E.coordinator_not_available:
                step.retry = True
            else:
                md.reset_pending()
        return then(step, error) if then is not None else TxnAnswer(error)

    return TxnStep(md.transactional_id, record=transit.to_value(), on_written=on_written)


def end_transaction(ctx: TxnContext, txn_id: str, producer_id: int, producer_epoch: int, commit: bool,
                    from_client: bool) -> TxnStep:
    """Kafka 3.9's TransactionCoordinator.endTransaction for transaction version 1 (no epoch bump per transaction)."""
    if not txn_id:
        return immediate(txn_id, _E.invalid_request)
    md = ctx.txns.get(txn_id)
    if md is None or md.producer_id != producer_id:
        return immediate(txn_id, _E.invalid_producer_id_mapping)
    # strict equality for clients: they never bump the epoch themselves
    if (from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
        return immediate(txn_id, _E.producer_fenced)
    if md.pending_state is not None and md.pending_state != TxnState.PREPARE_EPOCH_FENCE:
        return immediate(txn_id, _E.concurrent_transactions)
    state = md.state
    if state == TxnState.ONGOING:
        next_state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        is_epoch_fence = False
        if next_state == TxnState.PREPARE_ABORT and md.pending_state == TxnState.PREPARE_EPOCH_FENCE:
            # the fence's bumped epoch goes into the PrepareAbort record (and stays in memory if it fails)
            is_epoch_fence = True
            md.reset_pending()
            md.producer_epoch = producer_epoch
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        transit = md.prepare_abort_or_commit(next_state, ctx.clock_ms())
        then = _after_prepare(ctx, md, producer_id, producer_epoch, commit, is_epoch_fence)
        return transit_step(ctx, md, transit, then)
    if state == TxnState.COMPLETE_COMMIT:
        return immediate(txn_id, _E.none if commit else _E.invalid_txn_state)  # a retried EndTxn
    if state == TxnState.COMPLETE_ABORT:
        return immediate(txn_id, _E.invalid_txn_state if commit else _E.none)
    if state == TxnState.PREPARE_COMMIT:
        return immediate(txn_id, _E.concurrent_transactions if commit else _E.invalid_txn_state)
    if state == TxnState.PREPARE_ABORT:
        return immediate(txn_id, _E.invalid_txn_state if commit else _E.concurrent_transactions)
    if state == TxnState.EMPTY:
        return immediate(txn_id, _E.invalid_txn_state)
    raise TxnStateError(f"found transactional id {txn_id} in state {state.name}: it never transitions there")


def _after_prepare(ctx: TxnContext, md: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool,
                   is_epoch_fence: bool) -> Then:
    """Kafka's sendTxnMarkersCallback: once PrepareX is durable, answer and hand over the markers."""

    def then(step: TxnStep, error: ErrorCode) -> TxnAnswer:
        if error != _E.none:
            if is_epoch_fence and ctx.txns.get(md.transactional_id) is md:
                md.has_failed_epoch_fence = True  # the bumped epoch was never handed out: do not bump again
            return TxnAnswer(error)
        if md.producer_id != producer_id:
            return TxnAnswer(_E.invalid_producer_id_mapping)
        if md.producer_epoch != producer_epoch:
            return TxnAnswer(_E.producer_fenced)
        if md.pending_state is not None:
            return TxnAnswer(_E.concurrent_transactions)
        expected = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if md.state != expected:
            return TxnAnswer(_E.invalid_txn_state)
        step.markers = marker_job(ctx, md, commit, md.prepare_complete(ctx.clock_ms()))
        return TxnAnswer(_E.none)

    return then


def marker_job(ctx: TxnContext, md: TxnMetadata, commit: bool, complete: TxnTransit) -> MarkerJob:
    """Kafka's addTxnMarkersToSend: the markers of `md`'s partitions, then the write of `complete`."""

    def still_ours() -> bool:
        return ctx.txns.get(md.transactional_id) is md and md.pending_transit is complete

    def partition_done(tp: TopicPartition) -> None:
        if still_ours():
            md.remove_partition(tp)

    def finish(markers_done: bool) -> TxnStep | None:
        if not markers_done or not still_ours():
            return None
        for tp in list(md.partitions):
            md.remove_partition(tp)
        return transit_step(ctx, md, complete, retry_unavailable=True)

    return MarkerJob(md.transactional_id, md.producer_id, md.producer_epoch, commit, frozenset(md.partitions),
                     ctx.coordinator_epoch, partition_done, finish)


def abort_timed_out(ctx: TxnContext, now_ms: int) -> list[TxnStep]:
    """Kafka's abortTimedOutTransactions: each Ongoing transaction past its timeout (none pending) is fenced
    (epoch + 1) and aborted; the steps write PrepareAbort and carry the markers (answers go to no client)."""
    steps = []
    for md in list(ctx.txns.values()):
        if md.pending_state is not None or md.state != TxnState.ONGOING:
            continue
        if md.txn_start_ms + md.txn_timeout_ms >= now_ms:
            continue
        try:
            fence = md.prepare_fence_producer_epoch()
        except TxnStateError:
            continue  # epoch Short.MaxValue: cannot be fenced (Kafka's scheduler logs the exception)
        steps.append(end_transaction(ctx, md.transactional_id, fence.producer_id, fence.producer_epoch,
                                     commit=False, from_client=False))
    return steps


def recovering(ctx: TxnContext) -> list[MarkerJob]:
    """After a load: the markers of every PrepareCommit/PrepareAbort transaction are sent again (Kafka's
    loadTransactionsForTxnTopicPartition), followed by their completion."""
    jobs = []
    for md in list(ctx.txns.values()):
        if md.pending_state is None and md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            commit = md.state == TxnState.PREPARE_COMMIT
            jobs.append(marker_job(ctx, md, commit, md.prepare_complete(ctx.clock_ms())))
    return jobs
