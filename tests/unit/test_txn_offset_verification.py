"""TxnOffsetCommit's KIP-890 verification (handlers/txn_offset_commit.py) against this node's real transaction
coordinator (a __transaction_state log in a tmp dir) and group coordinator (MemoryLog): offsets for a group whose
offsets partition the transaction never added are refused with Kafka's error for the request version, and
nothing is left pending; with AddOffsetsToTxn they are pending until EndTxn's marker."""

from __future__ import annotations

import asyncio

from kio.schema.errors import ErrorCode

from coordinator.handlers.txn_offset_commit import TxnOffsetCommitHandler
from tests.support.txn_node import OFFSETS, TxnNode, commit, stable_fetch

E = ErrorCode
GROUP = "g"  # the group of txn_node.request


async def test_offsets_of_a_partition_not_in_the_transaction_are_refused_per_version(tmp_path):
    async with TxnNode(tmp_path) as node:
        handler = node.txn_offset_handler()
        pid, epoch = await node.begin("tx", [("t", 0)])  # AddPartitionsToTxn, no AddOffsetsToTxn
        for version in (0, 1, 2, 3):
            assert await commit(handler, version, "tx", pid, epoch) is E.invalid_txn_state, version
        assert await commit(handler, 4, "tx", pid, epoch) is E.transaction_abortable
        assert not node.pending(GROUP)
        assert await node.txn.end_txn("tx", pid, epoch, True) is E.none
        assert stable_fetch(node.groups, GROUP) == [(0, -1, E.none)]  # nothing wedged


async def test_the_coordinators_other_refusals_are_answered_as_kafka_maps_them(tmp_path):
    async with TxnNode(tmp_path) as node:
        handler = node.txn_offset_handler()
        pid, epoch = await node.begin("tx", [OFFSETS(GROUP)])
        assert await commit(handler, 4, "tx", pid, epoch - 1 if epoch else epoch + 1) is E.invalid_producer_epoch
        assert await commit(handler, 4, "tx", pid + 1, epoch) is E.invalid_producer_id_mapping
        assert await commit(handler, 4, "never-initialized", pid, epoch) is E.invalid_producer_id_mapping
        assert await commit(handler, 4, "", pid, epoch) is E.invalid_request
        assert not node.pending(GROUP)


async def test_with_add_offsets_to_txn_the_offsets_are_pending_until_the_marker(tmp_path):
    async with TxnNode(tmp_path) as node:
        handler = node.txn_offset_handler()
        pid, epoch = await node.begin("tx", [OFFSETS(GROUP)])
        assert await commit(handler, 4, "tx", pid, epoch, offset=9) is E.none
        assert stable_fetch(node.groups, GROUP) == [(0, -1, E.unstable_offset_commit)]
        assert await node.txn.end_txn("tx", pid, epoch, True) is E.none
        assert stable_fetch(node.groups, GROUP) == [(0, 9, E.none)]


class Coordinator:
    """A transaction coordinator stub: its verification answers `code`, counts its calls; no other node."""

    remote_verification = None

    def __init__(self, code: ErrorCode | None) -> None:
        self.code = code
        self.calls = 0

    def verification(self, *_args) -> ErrorCode | None:
        self.calls += 1
        return self.code


async def test_an_ongoing_transaction_in_the_partition_is_not_verified_again_and_errors_pass_through(tmp_path):
    async with TxnNode(tmp_path) as node:
        stub = Coordinator(E.none)
        handler = TxnOffsetCommitHandler(node.groups, {"t": 1}, None, stub)
        assert await commit(handler, 4, "tx", 77, 0) is E.none and stub.calls == 1
        stub.code = E.transaction_abortable  # UnifiedLog.hasOngoingTransaction: the coordinator is not asked
        assert await commit(handler, 4, "tx", 77, 0) is E.none and stub.calls == 1
        for code, version, answered in ((E.concurrent_transactions, 4, E.concurrent_transactions),
                                        (E.coordinator_load_in_progress, 2, E.coordinator_load_in_progress),
                                        (E.coordinator_load_in_progress, 1, E.coordinator_not_available),
                                        (E.not_coordinator, 4, E.not_coordinator)):
            stub.code = code
            assert await commit(handler, version, "tx", 78, 0) is answered, (code, version)
        stub.code = None  # not coordinated here, and no other node to ask (remote_verification: cluster mode)
        assert await commit(handler, 4, "tx", 78, 0) is E.none
        await asyncio.sleep(0)
