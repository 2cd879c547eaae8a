"""TxnOffsetCommit's checks of its group and producer: Kafka's OffsetMetadataManager.validateTransactionalOffsetCommit
with ClassicGroup / ConsumerGroup.validateOffsetCommit(isTransactional=true), and the producer epoch check the
offsets partition's log makes of a transactional batch (ProducerAppendInfo.checkProducerEpoch).

Unlike OffsetCommit: a missing group with generation >= 0 is ILLEGAL_GENERATION (at every version), a commit
without member id and generation is accepted whatever the group's state (older TxnOffsetCommit versions carry
none), the group's state is not enforced (no REBALANCE_IN_PROGRESS), no session is touched, and a consumer
group's (KIP-848) stale member epoch is ILLEGAL_GENERATION.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.groups.classic_group import GroupState
from coordinator.groups.consumer import offset_rules as consumer_rules
from coordinator.offsets.manager import classic_commit_error

E = ErrorCode
S = GroupState


def txn_commit_error(shard: Any, group_id: str, member_id: str, instance_id: str | None, generation: int,
                     api_version: int) -> ErrorCode | None:
    """None when the transactional commit may go on (a missing group with generation < 0 is created, a simple
    group, by the replay of its records)."""
    consumer = shard.consumer_groups.get(group_id)
    if consumer is not None:
        code = consumer_rules.commit_error(consumer, member_id, generation, api_version, transactional=True)
        return E.illegal_generation if code is E.stale_member_epoch else code
    group = shard.groups.get(group_id)
    if group is None:
        return None if generation < 0 else E.illegal_generation
    return classic_commit_error(group, member_id, instance_id, generation, transactional=True)


def producer_epoch_error(shard: Any, producer_id: int, producer_epoch: int) -> ErrorCode | None:
    """INVALID_PRODUCER_EPOCH for an epoch older than the one of the producer's open transaction here."""
    known = shard.offsets.txn.epochs.get(producer_id)
    if known is not None and producer_epoch < known:
        return E.invalid_producer_epoch
    return None
