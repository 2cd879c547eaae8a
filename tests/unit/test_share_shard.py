"""Share groups on a shard (runtime/share_shard.py) with a fake clock and MemoryLog: ShareGroupHeartbeat writes
records that change the group only by their replay; share state is initialized after the join's write and the
partitions are assigned after `initialized`'s records; a session that runs out fences the member and tells the
share partitions; a failed write takes the group back; the records reload (log codec round trip) into the same
group; DeleteGroups of an Empty share group; an id of another kind of group is GROUP_ID_NOT_FOUND."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from coordinator.groups.settings import GroupSettings
from coordinator.groups.share.config_settings import ShareGroupSettings
from coordinator.groups.share.heartbeat import HeartbeatRequest
from coordinator.records import log_codec
from coordinator.records.types import ShareGroupRecord
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog

T = uuid.UUID(int=42)
TOPICS = {"t": (T, 2)}


class Members:
    """The share partitions' side, recorded."""

    def __init__(self) -> None:
        self.gone: list[tuple[str, str]] = []
        self.initialize: list[tuple[str, int, dict]] = []
        self.deleted: list[tuple[str, dict]] = []
        self.done = None

    def member_gone(self, group_id, member_id):
        self.gone.append((group_id, member_id))

    def initialize_state(self, group_id, state_epoch, partitions, done):
        self.initialize.append((group_id, state_epoch, dict(partitions)))
        self.done = done

    def delete_state(self, group_id, partitions):
        self.deleted.append((group_id, dict(partitions)))


def _shard(settings: ShareGroupSettings | None = None):
    scheduler = FakeScheduler()
    log = MemoryLog(auto=False)
    coordinator = GroupCoordinator(GroupSettings(offsets_partitions=1, share=settings or ShareGroupSettings(
        session_timeout_ms=10_000, heartbeat_interval_ms=1000)), scheduler, log)
    members = Members()

    def wire(shard):
        shard.share.members = members
        shard.share.topics = TOPICS

    coordinator.share_wiring = wire
    return coordinator.shard_for("sg"), log, scheduler, members


def _beat(shard, member: str = "m1", epoch: int = 0, topics=("t",)):
    return shard.share.heartbeat(HeartbeatRequest("sg", member, epoch, None, topics if epoch == 0 else None))


def test_join_initialize_assign_expire():
    shard, log, scheduler, members = _shard()
    result, write = _beat(shard)
    assert result.error is ErrorCode.none and result.member_epoch == 1 and result.assignment == {}
    assert "m1" in shard.share.groups["sg"].members  # replayed at once
    assert members.initialize == []  # only once the join's records are durable
    log.complete()
    assert members.initialize == [("sg", 1, {T: frozenset({0, 1})})]
    members.done({T: frozenset({0, 1})})  # InitializeShareGroupState succeeded
    log.complete()
    group = shard.share.groups["sg"]
    assert group.initialized() == {T: frozenset({0, 1})} and group.group_epoch == 2
    result, _ = _beat(shard, epoch=1)
    assert result.member_epoch == 2 and result.assignment == {T: frozenset({0, 1})}
    log.complete()
    scheduler.advance(9_000)
    _beat(shard, epoch=2)  # the session starts again
    log.complete()
    scheduler.advance(9_000)
    assert "m1" in shard.share.groups["sg"].members and members.gone == []
    scheduler.advance(2_000)  # 10 s without a heartbeat
    log.complete()
    assert "m1" not in shard.share.groups["sg"].members and members.gone == [("sg", "m1")]


def test_a_failed_write_takes_the_group_back_and_the_log_reloads_it():
    shard, log, scheduler, members = _shard()
    _beat(shard)
    log.complete()
    before = shard.share.groups["sg"]
    epoch = before.group_epoch
    result, write = _beat(shard, "m2")
    assert "m2" in shard.share.groups["sg"].members
    log.fail(OSError("disk full"))
    assert write.exception() is not None
    group = shard.share.groups["sg"]
    assert set(group.members) == {"m1"} and group.group_epoch == epoch
    # what was durable reloads into the same group (the loader's decode of the bytes, then replay_all)
    written = [r for r in log.all_records() if isinstance(r, ShareGroupRecord)]
    durable = written[:-len(result.records)]  # the failed write's records are the last ones
    fresh, _, _, _ = _shard()
    fresh.replay_all(log_codec.decode(*log_codec.encode(r)) for r in durable)
    again = fresh.share.groups["sg"]
    assert (set(again.members), again.group_epoch, again.partition_state) == (
        {"m1"}, group.group_epoch, group.partition_state)


def test_delete_groups_and_the_namespace():
    shard, log, scheduler, members = _shard()
    _beat(shard)
    log.complete()
    members.done({T: frozenset({0, 1})})
    log.complete()
    answers, write = shard.delete_groups(["sg"])
    assert answers == {"sg": ErrorCode.non_empty_group} and write is None
    _beat(shard, epoch=-1)  # leaves
    log.complete()
    assert members.gone == [("sg", "m1")]
    answers, write = shard.delete_groups(["sg"])
    assert answers == {"sg": ErrorCode.none} and "sg" not in shard.share.groups
    assert members.deleted == []
    log.complete()
    assert members.deleted == [("sg", {T: frozenset({0, 1})})]
    # a consumer group's id is not a share group's
    shard.consumer_groups["cg"] = object()  # type: ignore[assignment]
    result, write = shard.share.heartbeat(HeartbeatRequest("cg", "m", 0, None, ("t",)))
    assert (result.error, result.message, write) == (ErrorCode.group_id_not_found, "Group cg is not a share group.",
                                                     None)
