"""Transactional offsets in a shard (MemoryLog, fake clock): pending per producer, the marker commits or drops
them (Kafka's OffsetMetadataManager.replay / replayEndTransactionMarker), OffsetFetch require_stable, deletion
and expiry with open transactions."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.groups.settings import GroupSettings
from coordinator.offsets.manager import delete_offsets, fetch
from coordinator.offsets.txn_commit import producer_epoch_error, txn_commit_error
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog

E = ErrorCode
PID, OTHER = 1000, 2000


def value(offset: int) -> OffsetValue:
    return OffsetValue(offset, "", 1, -1, -1)


def rec(offset: int | None, partition: int = 0, group: str = "g") -> OffsetCommitRecord:
    return OffsetCommitRecord(group, "t", partition, None if offset is None else value(offset))


def make(auto: bool = False) -> tuple[GroupCoordinator, MemoryLog]:
    log = MemoryLog(auto=auto)
    return GroupCoordinator(GroupSettings(offsets_partitions=1), FakeScheduler(), log), log


def committed(coordinator: GroupCoordinator, partition: int = 0, group: str = "g") -> int | None:
    v = coordinator.shard_for(group).offsets.get(group, "t", partition)
    return None if v is None else v.offset


def stable_fetch(coordinator: GroupCoordinator, partitions=(0,), group: str = "g") -> list:
    topics = [SimpleNamespace(name="t", partition_indexes=list(partitions))]
    return [(i, o, code) for _t, rows in fetch(coordinator.shard_for(group), group, topics, True)
            for i, o, _e, _m, code in rows]


def txn_commit(coordinator: GroupCoordinator, log: MemoryLog, producer_id: int, *records, epoch: int = 0):
    write = coordinator.shard_for("g").txn.write(producer_id, epoch, list(records))
    log.complete()
    assert write.done() and write.exception() is None
    return write


def end(coordinator: GroupCoordinator, log: MemoryLog, producer_id: int, commit: bool, epoch: int = 0):
    write = coordinator.shard_for("g").txn.complete(producer_id, epoch, commit, 0)
    log.complete()
    assert write.done() and write.exception() is None


def test_pending_offsets_are_not_committed_until_the_commit_marker():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5), rec(7, 1))
    assert committed(coordinator) is None
    unstable = E.unstable_offset_commit
    assert stable_fetch(coordinator, (0, 1, 2)) == [(0, -1, unstable), (1, -1, unstable), (2, -1, E.none)]
    plain = fetch(coordinator.shard_for("g"), "g", [SimpleNamespace(name="t", partition_indexes=[0])], False)
    assert plain == [("t", [(0, -1, -1, "", E.none)])]  # without require_stable: the committed offset (none)
    assert "g" in coordinator.shard_for("g").groups  # the replay made the simple group
    end(coordinator, log, PID, True)
    assert (committed(coordinator), committed(coordinator, 1)) == (5, 7)
    assert stable_fetch(coordinator, (0, 1)) == [(0, 5, E.none), (1, 7, E.none)]
    assert len(coordinator.shard_for("g").offsets.txn) == 0


def test_the_batch_and_the_marker_carry_the_producer():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5), epoch=3)
    end(coordinator, log, PID, False, epoch=3)
    writes = log.txn_writes[0]
    assert writes[0].producer == (PID, 3) and writes[0].records == [rec(5)]
    assert writes[1].marker == (PID, 3, False, 0) and writes[1].records == []


def test_abort_drops_pending_offsets_and_keeps_the_committed_one():
    coordinator, log = make()
    coordinator.shard_for("g").write([rec(3)])
    log.complete()
    txn_commit(coordinator, log, PID, rec(5))
    assert stable_fetch(coordinator) == [(0, -1, E.unstable_offset_commit)]
    end(coordinator, log, PID, False)
    assert committed(coordinator) == 3
    assert stable_fetch(coordinator) == [(0, 3, E.none)]


def test_a_plain_commit_after_the_transactional_one_wins_at_the_commit_marker():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5), rec(6, 1))
    coordinator.shard_for("g").write([rec(9)])  # newer in the log than the pending offset of partition 0
    log.complete()
    assert stable_fetch(coordinator) == [(0, -1, E.unstable_offset_commit)]  # still pending until the marker
    end(coordinator, log, PID, True)
    assert (committed(coordinator), committed(coordinator, 1)) == (9, 6)


def test_a_plain_commit_that_fails_takes_back_its_stale_mark():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5))
    shard = coordinator.shard_for("g")
    failed = shard.write([rec(9)])
    held = shard.write([rec(10, 1)])  # another key: its write is durable
    failed.resolve(KafkaError("disk gone", E.kafka_storage_error))
    log.complete()
    assert failed.exception() is not None and held.exception() is None
    assert committed(coordinator) is None  # the plain commit was taken back
    end(coordinator, log, PID, True)
    assert committed(coordinator) == 5  # the pending offset is the newest in the log: the marker commits it


def test_of_two_plain_commits_in_flight_the_durable_one_keeps_the_pending_offset_stale():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5))
    shard = coordinator.shard_for("g")
    failed, durable = shard.write([rec(9)]), shard.write([rec(11)])
    failed.resolve(KafkaError("disk gone", E.kafka_storage_error))
    log.complete()
    assert durable.exception() is None and committed(coordinator) == 11
    end(coordinator, log, PID, True)
    assert committed(coordinator) == 11  # 11 is newer in the log than the pending 5


def test_a_plain_commit_before_the_transactional_one_is_replaced():
    coordinator, log = make()
    coordinator.shard_for("g").write([rec(9)])
    log.complete()
    txn_commit(coordinator, log, PID, rec(5))
    end(coordinator, log, PID, True)
    assert committed(coordinator) == 5


def test_two_producers_the_later_record_wins_whatever_the_marker_order():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5))
    txn_commit(coordinator, log, OTHER, rec(8))
    end(coordinator, log, OTHER, True)
    assert committed(coordinator) == 8
    end(coordinator, log, PID, True)  # its record is older than the committed one: not materialized
    assert committed(coordinator) == 8


def test_the_marker_ends_only_the_offsets_written_before_it():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5))
    marker = coordinator.shard_for("g").txn.complete(PID, 0, True, 0)
    write = coordinator.shard_for("g").txn.write(PID, 0, [rec(6, 1)])  # after the marker in the log
    log.complete()
    assert marker.exception() is None and write.exception() is None
    assert committed(coordinator) == 5 and committed(coordinator, 1) is None
    assert stable_fetch(coordinator, (1,)) == [(1, -1, E.unstable_offset_commit)]


def test_a_failed_transactional_write_is_taken_back_and_a_failed_marker_changes_nothing():
    coordinator, log = make()
    write = coordinator.shard_for("g").txn.write(PID, 0, [rec(5)])
    assert stable_fetch(coordinator) == [(0, -1, E.unstable_offset_commit)]  # applied at once
    log.fail(OSError("disk"))
    assert isinstance(write.exception(), OSError)
    assert stable_fetch(coordinator) == [(0, -1, E.none)]
    assert not coordinator.shard_for("g").offsets.txn.has_open("g")
    txn_commit(coordinator, log, PID, rec(6))
    marker = coordinator.shard_for("g").txn.complete(PID, 0, True, 0)
    log.fail(OSError("disk"))
    assert isinstance(marker.exception(), OSError)
    assert committed(coordinator) is None and stable_fetch(coordinator) == [(0, -1, E.unstable_offset_commit)]
    end(coordinator, log, PID, True)  # the coordinator sends it again
    assert committed(coordinator) == 6


def test_an_offset_tombstone_removes_pending_offsets():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5), rec(6, 1))
    coordinator.shard_for("g").write([rec(None)])
    log.complete()
    store = coordinator.shard_for("g").offsets
    assert stable_fetch(coordinator, (0, 1)) == [(0, -1, E.none), (1, -1, E.unstable_offset_commit)]
    assert store.txn.has_open("g")
    coordinator.shard_for("g").write([rec(None, 1)])
    log.complete()
    assert not store.txn.has_open("g")  # nothing of the producer left in the group
    end(coordinator, log, PID, True)
    assert committed(coordinator) is None and committed(coordinator, 1) is None


def test_delete_groups_writes_tombstones_for_pending_keys():
    coordinator, log = make()
    coordinator.shard_for("g").write([rec(1)])
    log.complete()
    txn_commit(coordinator, log, PID, rec(5), rec(6, 1))
    answers, write = coordinator.shard_for("g").delete_groups(["g"])
    assert answers == {"g": E.none}
    log.complete()
    assert log.records[0][-3:-1] == [rec(None), rec(None, 1)]  # the committed key once, the pending-only key
    assert "g" not in coordinator.shard_for("g").groups
    end(coordinator, log, PID, True)
    assert committed(coordinator) is None and committed(coordinator, 1) is None


def test_offset_delete_tombstones_a_pending_only_key():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5))
    topics = [SimpleNamespace(name="t", partitions=[SimpleNamespace(partition_index=0)])]
    code, records, _answer = delete_offsets(coordinator.shard_for("g"), "g", topics)
    assert code is E.none and records == [rec(None)]


def test_expiry_keeps_offsets_with_pending_ones_and_groups_with_open_transactions():
    coordinator, log = make()
    shard = coordinator.shard_for("g")
    shard.write([rec(1), rec(2, 1)])
    log.complete()
    txn_commit(coordinator, log, PID, rec(5))
    offsets, groups, write = shard.expire(10**12, 1000)
    assert (offsets, groups) == (1, 0)  # partition 1 expires; partition 0 has a pending offset; the group stays
    log.complete()
    end(coordinator, log, PID, False)
    offsets, groups, write = shard.expire(10**12, 1000)
    assert (offsets, groups) == (1, 1)


def test_txn_commit_validation_follows_kafka():
    coordinator, _log = make()
    shard = coordinator.shard_for("g")
    assert txn_commit_error(shard, "new", "", None, -1, 3) is None  # a simple group comes with the records
    assert txn_commit_error(shard, "new", "m", None, 1, 3) is E.illegal_generation
    assert txn_commit_error(shard, "new", "m", None, 1, 4) is E.illegal_generation  # not GROUP_ID_NOT_FOUND


def test_producer_epoch_and_marker_epoch_fencing():
    coordinator, log = make()
    txn_commit(coordinator, log, PID, rec(5), epoch=4)
    shard = coordinator.shard_for("g")
    assert producer_epoch_error(shard, PID, 3) is E.invalid_producer_epoch
    assert producer_epoch_error(shard, PID, 4) is None
    stale = shard.txn.complete(PID, 3, True, 0)
    assert isinstance(stale.exception(), KafkaError) and stale.exception().code is E.invalid_producer_epoch
    end(coordinator, log, PID, True, epoch=4)
    assert producer_epoch_error(shard, PID, 0) is None  # the transaction ended: nothing to fence here


def test_complete_transaction_not_coordinator_and_loading():
    coordinator, _log = make()
    shard = coordinator.shard_for("g")
    coordinator.unload(shard.partition)

    async def run() -> None:
        with pytest.raises(KafkaError) as info:
            await coordinator.complete_transaction(shard.partition, PID, 0, True, 0)
        assert info.value.code is E.not_coordinator
        with pytest.raises(KafkaError) as info:
            await coordinator.complete_transaction(7, PID, 0, True, 0)
        assert info.value.code is E.not_coordinator
        loading = coordinator.take(shard.partition)
        with pytest.raises(KafkaError) as info:
            await coordinator.complete_transaction(loading.partition, PID, 0, True, 0)
        assert info.value.code is E.coordinator_load_in_progress

    asyncio.run(run())


class _Access:
    """An authorizer's answers: the transactional id and group as given, topic "denied" refused."""

    enabled = True

    def __init__(self, txn: bool = True, group: bool = True) -> None:
        self.txn, self.read_group = txn, group

    def allows(self, _ctx, _op, _resource_type, _name) -> bool:
        return self.txn

    def group(self, _ctx, _op, _group) -> bool:
        return self.read_group

    def topic(self, _ctx, _op, name) -> bool:
        return name != "denied"


def test_handler_acls_unknown_topics_and_the_pending_write():
    from coordinator.handlers.txn_offset_commit import TxnOffsetCommitHandler
    from tests.support.offsets import schema

    m = schema("txn_offset_commit", 4)

    def request(*topics: str):
        part = m.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=4, committed_leader_epoch=-1,
                                                 committed_metadata="")
        return m.TxnOffsetCommitRequest(transactional_id="x", group_id="g", producer_id=PID, producer_epoch=1,
                                        generation_id=-1, member_id="", group_instance_id=None,
                                        topics=tuple(m.TxnOffsetCommitRequestTopic(name=t, partitions=(part,))
                                                     for t in topics))

    def answer(result) -> dict:
        return {(t.name, p.partition_index): p.error_code for t in result.topics for p in t.partitions}

    ctx = SimpleNamespace(api_version=4)
    counts = {"t": 1, "denied": 1}
    for access, code in ((_Access(txn=False), E.transactional_id_authorization_failed),
                         (_Access(group=False), E.group_authorization_failed)):
        coordinator, _log = make()
        handler = TxnOffsetCommitHandler(coordinator, counts, access)  # type: ignore[arg-type]
        assert answer(handler.handle(ctx, request("t"))) == {("t", 0): code}
    coordinator, log = make()
    handler = TxnOffsetCommitHandler(coordinator, counts, _Access())  # type: ignore[arg-type]
    result = handler.handle(ctx, request("denied", "unknown", "t"))
    assert stable_fetch(coordinator) == [(0, -1, E.unstable_offset_commit)]  # pending before it is durable
    log.complete()
    assert answer(result.result()) == {("denied", 0): E.topic_authorization_failed,
                                       ("unknown", 0): E.unknown_topic_or_partition, ("t", 0): E.none}
    assert log.txn_writes[0][0].producer == (PID, 1)
