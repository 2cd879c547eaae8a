"""Pending transactional offsets no marker will end (coordinator/transactions/runtime/orphans.py), on one node's real
transaction coordinator and group coordinator (tests/support/txn_node.py): aborted by an ABORT marker once the
producer's transaction is known over -- when it completes, when the transaction state loads, at a sweep -- and never
while
a marker may still come; the abort ends only what was pending before it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.transactions.descriptions import by_producer, markers_may_come
from coordinator.transactions.lifecycle import TxnState
from coordinator.transactions.txn_metadata import TxnMetadata
from tests.support.txn_node import OFFSETS, TxnNode, commit, request, stable_fetch

E = ErrorCode
GROUP = "g"
UNSTABLE = [(0, -1, E.unstable_offset_commit)]
STABLE_NONE = [(0, -1, E.none)]


def orphan(node: TxnNode, producer_id: int, epoch: int, offset: int = 5):
    """Offsets pending for `producer_id` written without the transaction coordinator knowing (as an unverified
    TxnOffsetCommit did, or one verified by no one: another node's transaction in cluster mode)."""
    record = OffsetCommitRecord(GROUP, "t", 0, OffsetValue(offset, "", 1, -1, -1))
    return node.groups.shard_for(GROUP).txn.write(producer_id, epoch, [record])


def markers(node: TxnNode) -> list[tuple[int, int, bool]]:
    """(producer id, epoch, commit) of the markers written into the group's offsets partition."""
    partition = node.groups.shard_for(GROUP).partition
    return [(w.marker.producer_id, w.marker.producer_epoch, w.marker.commit)
            for w in node.log.txn_writes.get(partition, []) if w.marker is not None]


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_offsets_left_pending_are_aborted_when_the_transaction_completes(tmp_path):
    async with TxnNode(tmp_path) as node:
        pid, epoch = await node.begin("tx", [("t", 0)])  # the group's offsets partition never added
        await orphan(node, pid, epoch)
        assert node.orphans.sweep() == 0  # the transaction is ongoing: it could still add the partition
        assert stable_fetch(node.groups, GROUP) == UNSTABLE
        assert await node.txn.end_txn("tx", pid, epoch, True) is E.none
        await settle()
        assert stable_fetch(node.groups, GROUP) == STABLE_NONE  # dropped, not committed: never part of it
        assert markers(node) == [(pid, epoch, False)]
        assert node.orphans.aborted == 1


async def test_offsets_of_a_transaction_still_open_are_never_touched(tmp_path):
    async with TxnNode(tmp_path) as node:
        handler = node.txn_offset_handler()
        pid, epoch = await node.begin("tx", [OFFSETS(GROUP)])
        assert await commit(handler, 4, "tx", pid, epoch, offset=9) is E.none
        assert node.orphans.sweep() == 0
        assert stable_fetch(node.groups, GROUP) == UNSTABLE
        assert await node.txn.end_txn("tx", pid, epoch, True) is E.none
        await settle()
        assert stable_fetch(node.groups, GROUP) == [(0, 9, E.none)]
        assert markers(node) == [(pid, epoch, True)]  # its own marker only


@pytest.mark.parametrize("hosted, aborted", [(None, True), ([0], False)], ids=["all-hosted", "one-of-two"])
async def test_a_producer_id_no_transaction_holds_is_over_only_if_every_transaction_is_coordinated_here(
        tmp_path, hosted, aborted):
    node = TxnNode(tmp_path, txn_partitions=2, hosted=hosted)
    await orphan(node, 4242, 7)  # found by the load: before the transaction state partitions are loaded
    async with node:
        await settle()
        assert (stable_fetch(node.groups, GROUP) == STABLE_NONE) is aborted
        assert markers(node) == ([(4242, 7, False)] if aborted else [])


async def test_the_abort_ends_only_what_was_pending_before_it(tmp_path):
    async with TxnNode(tmp_path) as node:
        handler = node.txn_offset_handler()
        pid, epoch = await node.begin("tx", [("t", 0)])
        assert await node.txn.end_txn("tx", pid, epoch, True) is E.none
        await orphan(node, pid, epoch, offset=5)  # after the completion: nothing will end it
        node.log.auto = False  # the abort marker is held in flight
        assert node.orphans.sweep() == 1
        assert node.orphans.sweep() == 0  # one abort at a time
        # the producer's next transaction adds the group and commits while the abort is in flight
        assert await node.txn.add_partitions("tx", pid, epoch, [OFFSETS(GROUP)]) is E.none
        written = handler.handle(SimpleNamespace(api_version=4), request(4, "tx", pid, epoch, offset=11))
        node.log.complete()
        node.log.auto = True
        assert [p.error_code for t in written.result().topics for p in t.partitions] == [E.none]
        assert stable_fetch(node.groups, GROUP) == UNSTABLE  # the new offset: still pending
        assert await node.txn.end_txn("tx", pid, epoch, True) is E.none
        await settle()
        assert stable_fetch(node.groups, GROUP) == [(0, 11, E.none)]
        assert markers(node) == [(pid, epoch, False), (pid, epoch, True)]


async def test_a_failed_abort_is_tried_again_by_the_next_sweep(tmp_path):
    async with TxnNode(tmp_path) as node:
        await orphan(node, 4242, 0)
        node.log.auto = False
        assert node.orphans.sweep() == 1
        node.log.fail(KafkaError("disk gone", E.kafka_storage_error))
        assert stable_fetch(node.groups, GROUP) == UNSTABLE
        node.log.auto = True
        assert node.orphans.sweep() == 1
        await settle()
        assert stable_fetch(node.groups, GROUP) == STABLE_NONE


def md(producer_id: int, state: TxnState, previous: int = -1, pending: TxnState | None = None) -> TxnMetadata:
    return TxnMetadata("tx", producer_id, previous_producer_id=previous, state=state, pending_state=pending)


def test_which_producer_ids_may_still_have_markers_to_come():
    assert markers_may_come(md(1, TxnState.ONGOING), 1)
    assert markers_may_come(md(1, TxnState.PREPARE_COMMIT), 1)
    assert markers_may_come(md(1, TxnState.PREPARE_ABORT), 1)
    assert not markers_may_come(md(1, TxnState.COMPLETE_COMMIT), 1)
    assert not markers_may_come(md(1, TxnState.COMPLETE_ABORT), 1)
    assert not markers_may_come(md(1, TxnState.EMPTY), 1)
    assert markers_may_come(md(1, TxnState.COMPLETE_COMMIT, pending=TxnState.ONGOING), 1)  # outcome unknown yet
    assert not markers_may_come(md(2, TxnState.ONGOING, previous=1), 1)  # the id moved on to producer id 2
    current, rotated = md(2, TxnState.ONGOING), md(3, TxnState.EMPTY, previous=2)
    assert by_producer([rotated, current]) == {2: current, 3: rotated}  # a current holder wins
    assert by_producer([current, rotated]) == {2: current, 3: rotated}
