"""Online migration between classic and consumer groups on one shard: Kafka's validateOnlineUpgrade +
convertToConsumerGroup, and validateOnlineDowngradeWithFencedMembers + convertToClassicGroup
(group.consumer.migration.policy decides which are allowed).

Upgrade: a consumer-protocol member (ConsumerGroupHeartbeat, epoch 0) joins a classic group that has members and
uses the consumer protocol. Its waiting JoinGroup / SyncGroup requests are answered REBALANCE_IN_PROGRESS, the
write starts with the classic group's GroupMetadata tombstone (its replay removes it) and the consumer group's
records (their replay makes it), then the joining member's records as for any heartbeat. Each converted member's
session runs with its classic session timeout.

Downgrade: the last consumer-protocol member leaves or is fenced and only classic-protocol members remain. The
write holds the consumer group's tombstones and the classic group's GroupMetadata record; as in Kafka, the classic
group itself is put in place at once (its record describes it, live classic groups are not replayed), its members'
sessions start, and a rebalance begins (the members learn it from their next Heartbeat). If that write fails, the
classic group goes again (the consumer group comes back through the consumer groups' own restore).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.groups.classic_group import ClassicGroup
from coordinator.groups.classic_member import JoinResult, SyncResult
from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.records import consumer_group_tombstones
from coordinator.groups.kind_conversion import (
    classic_group_from_consumer,
    classic_group_record,
    consumer_group_from_classic,
    consumer_group_records,
    uses_consumer_protocol,
)
from coordinator.records.types import GroupMetadataRecord, Record
from rules.consumer_protocol import SubscriptionError

if TYPE_CHECKING:
    from coordinator.groups.membership import Membership
    from coordinator.groups.settings import GroupSettings
    from coordinator.runtime.writes import PendingWrite

log = structlog.get_logger("coordinator.groups")


class Shard(Protocol):
    """What the migration uses of its runtime.shard.Shard (a Protocol: the shard imports this module)."""

    groups: dict[str, ClassicGroup]
    settings: GroupSettings
    membership: Membership
    consumer: Any  # runtime.consumer_shard.ConsumerGroups


def _not_found(message: str) -> KafkaError:
    return KafkaError(message, ErrorCode.group_id_not_found)


class ShardMigration:
    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self.undo: list[Callable[[BaseException | None], None]] = []  # for the write that comes next

    def attach(self, pending: PendingWrite) -> None:
        """Give the write the shard is making the undo of the downgrades its records hold."""
        for undo in self.undo:
            pending.add_callback(undo)
        self.undo.clear()

    # --- upgrade -------------------------------------------------------------------------------------------

    def upgrade(self, group_id: str, records: list[Record]) -> ConsumerGroup:
        shard = self.shard
        classic = shard.groups[group_id]
        settings = shard.settings.consumer
        if not settings.upgrade_enabled:
            raise _not_found(f"Cannot upgrade classic group {group_id} to consumer group because online upgrade is "
                             "disabled.")
        if not uses_consumer_protocol(classic):
            raise _not_found(f"Cannot upgrade classic group {group_id} to consumer group because the group does not "
                             "use the consumer embedded protocol.")
        if len(classic.members) > settings.max_size:
            raise _not_found(f"Cannot upgrade classic group {group_id} to consumer group because the group size "
                             "exceeds the consumer group maximum size.")
        _answer_waiters(classic, ErrorCode.rebalance_in_progress)
        try:
            group = consumer_group_from_classic(classic, shard.consumer.ops.topics)
        except SubscriptionError as exc:
            log.warning("cannot upgrade the classic group: malformed consumer protocol", group=group_id,
                        error=str(exc))
            raise _not_found(f"Cannot upgrade classic group {group_id} to consumer group because the embedded "
                             "consumer protocol is malformed.") from exc
        records.append(GroupMetadataRecord(group_id, None))
        records += consumer_group_records(group)
        ops = shard.consumer.ops
        for member in group.members.values():
            assert member.classic is not None
            ops.touch_session(group_id, member.member_id, member.classic.session_timeout_ms)
        log.info("converted the classic group to a consumer group", group=group_id, members=len(group.members),
                 epoch=group.group_epoch)
        return group

    # --- downgrade -----------------------------------------------------------------------------------------

    def downgrade(self, group: ConsumerGroup, leaving: set[str], records: list[Record]) -> bool:
        shard = self.shard
        group_id = group.group_id
        if not group.all_classic_except(leaving):
            return False
        remaining = sum(1 for member_id in group.members if member_id not in leaving)
        if remaining <= 0:
            return False
        if not shard.settings.consumer.downgrade_enabled:
            log.info("cannot downgrade the consumer group: online downgrade is disabled", group=group_id)
            return False
        if remaining > shard.settings.max_size:
            log.info("cannot downgrade the consumer group: larger than group.max.size", group=group_id)
            return False
        membership = shard.membership
        try:
            classic = classic_group_from_consumer(group, leaving, shard.consumer.ops.topics, membership.clock.wall_ms())
        except SubscriptionError as exc:
            raise _not_found(f"Cannot downgrade the classic group {group_id}: {exc}.") from exc
        records += consumer_group_tombstones(group)
        records.append(classic_group_record(classic))
        shard.groups[group_id] = classic
        for member in classic.members.values():
            membership.touch_session(classic, member)
        result = membership.prepare_rebalance(classic, "downgrade",
                                              f"Downgrade group {group_id} from consumer to classic for member "
                                              "leaving.")
        if result is not None:
            records += result.records
        self.undo.append(self._undo(classic))
        log.info("converted the consumer group to a classic group", group=group_id, members=len(classic.members))
        return True

    def _undo(self, classic: ClassicGroup) -> Callable[[BaseException | None], None]:
        def undo(error: BaseException | None) -> None:
            shard = self.shard
            if error is not None and shard.groups.get(classic.group_id) is classic:
                shard.membership.remove_group(classic)
                log.info("group downgrade not written; classic group removed", group=classic.group_id)

        return undo


def _answer_waiters(classic: ClassicGroup, code: ErrorCode) -> None:
    """completeAllJoinFutures / completeAllSyncFutures."""
    for member in list(classic.members.values()):
        classic.complete_join(member, JoinResult(code, member.member_id))
        classic.complete_sync(member, SyncResult(code))
