"""The group's partition -> owner epoch map (Kafka's ConsumerGroup.currentPartitionEpoch; ConsumerGroupTest's
partition-epoch cases, plus the O(changed) update and the all-or-nothing failures)."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from coordinator.groups.consumer.model import ConsumerGroupMember
from coordinator.groups.consumer.partition_epochs import IllegalStateError, PartitionEpochs

FOO, BAR, ZAR = (uuid.UUID(int=i) for i in (1, 2, 3))


def member(member_id: str = "member", epoch: int = 10, assigned=None, revoking=None) -> ConsumerGroupMember:
    return ConsumerGroupMember(member_id, member_epoch=epoch, assigned_partitions=assigned or {},
                               partitions_pending_revocation=revoking or {})


def test_updating_member_updates_partition_epoch():
    epochs = PartitionEpochs()
    m1 = member(epoch=10, assigned={FOO: frozenset({1, 2, 3})}, revoking={BAR: frozenset({4, 5, 6})})
    epochs.update_member(None, m1)
    assert [epochs.partition_epoch(FOO, p) for p in (1, 2, 3)] == [10, 10, 10]
    assert [epochs.partition_epoch(BAR, p) for p in (4, 5, 6)] == [10, 10, 10]
    assert [epochs.partition_epoch(ZAR, p) for p in (7, 8, 9)] == [-1, -1, -1]

    m2 = replace(m1, member_epoch=11, assigned_partitions={BAR: frozenset({1, 2, 3})},
                 partitions_pending_revocation={ZAR: frozenset({4, 5, 6})})
    epochs.update_member(m1, m2)
    assert epochs.snapshot() == {BAR: {1: 11, 2: 11, 3: 11}, ZAR: {4: 11, 5: 11, 6: 11}}
    assert epochs.partition_epoch(FOO, 1) == -1


def test_partition_reassigned_before_being_revoked():
    epochs = PartitionEpochs()
    m1 = member(epoch=10, revoking={FOO: frozenset({1})})
    epochs.add_member(m1)
    assert epochs(FOO, 1) == 10
    m2 = replace(m1, member_epoch=11, assigned_partitions={FOO: frozenset({1})}, partitions_pending_revocation={})
    epochs.update_member(m1, m2)
    assert epochs(FOO, 1) == 11


def test_partition_not_released_cannot_be_taken():
    epochs = PartitionEpochs()
    epochs.add_member(member("m1", 10, {FOO: frozenset({1})}))
    with pytest.raises(IllegalStateError):
        epochs.add_member(member("m2", 10, {FOO: frozenset({1}), BAR: frozenset({1})}))
    # nothing of m2 went in
    assert epochs.snapshot() == {FOO: {1: 10}}


def test_same_epoch_update_that_takes_an_owned_partition_fails_and_changes_nothing():
    epochs = PartitionEpochs()
    other = member("m1", 10, {FOO: frozenset({1})})
    mine = member("m2", 10, {FOO: frozenset({2})})
    epochs.add_member(other)
    epochs.add_member(mine)
    with pytest.raises(IllegalStateError):
        epochs.update_member(mine, replace(mine, assigned_partitions={FOO: frozenset({1}), BAR: frozenset({5})}))
    assert epochs.snapshot() == {FOO: {1: 10, 2: 10}}


def test_remove_partition_epochs():
    epochs = PartitionEpochs()
    with pytest.raises(IllegalStateError):  # no epoch set
        epochs.remove_partition_epochs({FOO: frozenset({1})}, 10)
    epochs.add_member(member("m1", 10, {FOO: frozenset({1})}))
    with pytest.raises(IllegalStateError):  # wrong expected epoch
        epochs.remove_partition_epochs({FOO: frozenset({1})}, 11)
    epochs.remove_partition_epochs({FOO: frozenset({1})}, 10)
    assert epochs.snapshot() == {}


def test_add_partition_epochs():
    epochs = PartitionEpochs()
    epochs.add_partition_epochs({FOO: frozenset({1})}, 10)
    with pytest.raises(IllegalStateError):  # the owner must remove it first
        epochs.add_partition_epochs({FOO: frozenset({1})}, 11)
    assert epochs(FOO, 1) == 10


def test_deleting_member_removes_partition_epoch():
    epochs = PartitionEpochs()
    m1 = member(epoch=10, assigned={FOO: frozenset({1, 2, 3})}, revoking={BAR: frozenset({4, 5, 6})})
    epochs.add_member(m1)
    epochs.remove_member(m1)
    assert epochs.snapshot() == {}
    assert epochs(FOO, 1) == -1 and epochs(BAR, 4) == -1


def test_removing_a_member_at_a_stale_epoch_fails():
    epochs = PartitionEpochs()
    m1 = member(epoch=10, assigned={FOO: frozenset({1})})
    epochs.add_member(m1)
    with pytest.raises(IllegalStateError):
        epochs.remove_member(replace(m1, member_epoch=9))
    with pytest.raises(IllegalStateError):
        epochs.update_member(replace(m1, member_epoch=9), replace(m1, member_epoch=11))
    assert epochs.snapshot() == {FOO: {1: 10}}


def test_a_member_holding_a_partition_both_assigned_and_revoking_is_refused():
    epochs = PartitionEpochs()
    with pytest.raises(IllegalStateError):
        epochs.add_member(member(assigned={FOO: frozenset({1, 2})}, revoking={FOO: frozenset({2})}))
    assert epochs.snapshot() == {}


def test_revoking_within_the_same_epoch_moves_nothing_else():
    """assigned -> pending revocation keeps the partition owned; a revoked one is freed."""
    epochs = PartitionEpochs()
    m1 = member(epoch=10, assigned={FOO: frozenset({1, 2, 3})})
    epochs.add_member(m1)
    m2 = replace(m1, assigned_partitions={FOO: frozenset({3})}, partitions_pending_revocation={FOO: frozenset({1, 2})})
    epochs.update_member(m1, m2)
    assert epochs.snapshot() == {FOO: {1: 10, 2: 10, 3: 10}}
    m3 = replace(m2, member_epoch=11, partitions_pending_revocation={})
    epochs.update_member(m2, m3)
    assert epochs.snapshot() == {FOO: {3: 11}}


class _Spy(PartitionEpochs):
    """Records which topics an update looks at."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[uuid.UUID] = set()

    def _check_free(self, topic_id, partitions, epoch, released):
        self.seen.add(topic_id)
        super()._check_free(topic_id, partitions, epoch, released)


def test_same_epoch_update_only_looks_at_changed_topics():
    epochs = _Spy()
    big = {uuid.UUID(int=100 + i): frozenset(range(50)) for i in range(20)}
    m1 = member(epoch=10, assigned={**big, FOO: frozenset({1, 2})})
    epochs.add_member(m1)
    epochs.seen.clear()
    m2 = replace(m1, assigned_partitions={**big, FOO: frozenset({1})}, partitions_pending_revocation={})
    epochs.update_member(m1, m2)
    assert epochs.seen == {FOO}
    assert epochs(FOO, 2) == -1 and epochs(FOO, 1) == 10
    # an epoch move touches everything, as it must
    epochs.seen.clear()
    epochs.update_member(m2, replace(m2, member_epoch=11))
    assert epochs.seen == set(big) | {FOO}
    assert all(e == 11 for ps in epochs.snapshot().values() for e in ps.values())
