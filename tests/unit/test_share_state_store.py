"""The share coordinator's fold of __share_group_state (Kafka's ShareCoordinatorShard): initialize / write /
read / summary / delete as records + answers, state only through replay, the snapshot every N updates,
fencing, and the offset below which the log is superseded. Each test also reloads the written records into a
fresh store and checks it ends in the same state (what a restart or an ownership move does)."""

from __future__ import annotations

import uuid

from hypothesis import given, settings, strategies as st
from kio.schema.errors import ErrorCode

from coordinator.share.state_store import Decision, ShareStateStore, WriteState
from storage import share_state_records as ss
from storage.share_state_records import StateBatch as B
from tests.support.examples import examples

T = uuid.UUID(int=7)


class Log:
    """A store and the log it writes: decisions' records are appended (serialized and read back) and replayed."""

    def __init__(self, updates_per_snapshot: int = 3) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []
        self.store = self._new(updates_per_snapshot)
        self.updates_per_snapshot = updates_per_snapshot

    @staticmethod
    def _new(n: int) -> ShareStateStore:
        return ShareStateStore(lambda topic, partition: topic == T and partition < 4, n)

    def apply(self, decision: Decision) -> Decision:
        for key, value in decision.records:
            raw = ss.encode(key, value)
            self.records.append(raw)
            self._replay(self.store, len(self.records) - 1, raw)
        return decision

    @staticmethod
    def _replay(store: ShareStateStore, offset: int, raw: tuple[bytes, bytes | None]) -> None:
        key = ss.decode_key(raw[0])
        decoded = ss.decode_value(key, raw[1])
        store.replay(offset, key, None if decoded is None else decoded[1])

    def reloaded(self, from_offset: int = 0) -> ShareStateStore:
        store = self._new(self.updates_per_snapshot)
        for offset, raw in enumerate(self.records):
            if offset >= from_offset:
                self._replay(store, offset, raw)
        return store


def write(log: Log, batches, start=-1, leader=1, state=0, now=10) -> Decision:
    return log.apply(log.store.write(WriteState("g", T, 0, state, leader, start, tuple(batches)), now))


def test_write_before_initialize_is_refused():
    log = Log()
    decision = write(log, [B(0, 0, 2, 1)])
    assert decision.answer.error == ErrorCode.invalid_request and decision.records == []


def test_initialize_then_updates_then_a_snapshot():
    log = Log(updates_per_snapshot=2)
    first = log.apply(log.store.initialize("g", T, 0, state_epoch=0, start_offset=10, now_ms=5))
    assert first.records == [(ss.ShareSnapshotKey("g", T, 0), ss.ShareSnapshotValue(0, 0, -1, 10, 5, 5, (), 0))]
    write(log, [B(10, 12, 1, 1)])  # ACQUIRED is whatever the share partition sends; here just a state byte
    write(log, [B(10, 11, 2, 1)], start=-1)
    write(log, [B(13, 14, 0, 1)], start=10)
    kinds = [ss.decode_key(k).__class__.__name__ for k, _ in log.records]
    # snapshot, update (count 0), update (1), update (2): Kafka counts the first update after a snapshot as 0
    assert kinds == ["ShareSnapshotKey", "ShareUpdateKey", "ShareUpdateKey", "ShareUpdateKey"]
    write(log, [B(15, 15, 4, 2)], start=12)
    snapshot_key, snapshot = ss.decode_key(log.records[-1][0]), ss.decode_value(
        ss.decode_key(log.records[-1][0]), log.records[-1][1])
    assert isinstance(snapshot_key, ss.ShareSnapshotKey)
    assert snapshot is not None and snapshot[1] == ss.ShareSnapshotValue(
        1, 0, 1, 12, 10, 10, (B(12, 12, 1, 1), B(13, 14, 0, 1), B(15, 15, 4, 2)), -1)
    state = log.store.states[("g", T, 0)]
    assert state.start_offset == 12 and state.snapshot_epoch == 1
    assert log.reloaded().states == log.store.states
    # the snapshot supersedes everything before it: a reload from it alone gives the same state
    assert log.store.redundant_offset() == len(log.records) - 1
    assert log.reloaded(log.store.redundant_offset()).states == log.store.states


def test_updates_merge_higher_delivery_counts_win():
    log = Log(updates_per_snapshot=100)
    log.apply(log.store.initialize("g", T, 0, 0, 0, 1))
    write(log, [B(0, 9, 0, 1)])
    write(log, [B(3, 4, 2, 2)])
    write(log, [B(0, 9, 0, 1)])  # an older view does not undo what a later delivery decided
    assert log.store.states[("g", T, 0)].state_batches == (B(0, 2, 0, 1), B(3, 4, 2, 2), B(5, 9, 0, 1))
    write(log, [], start=4)
    assert log.store.states[("g", T, 0)].state_batches == (B(4, 4, 2, 2), B(5, 9, 0, 1))


def test_fencing():
    log = Log()
    log.apply(log.store.initialize("g", T, 0, state_epoch=3, start_offset=0, now_ms=1))
    write(log, [], leader=5, state=3)
    assert write(log, [], leader=4, state=3).answer.error == ErrorCode.fenced_leader_epoch
    assert write(log, [], leader=5, state=2).answer.error == ErrorCode.fenced_state_epoch
    assert log.store.initialize("g", T, 0, 2, 0, 1).answer.error == ErrorCode.fenced_state_epoch
    assert log.store.read("g", T, 0, 4, 1).answer.error == ErrorCode.fenced_leader_epoch
    assert write(log, [], leader=-1, state=-1).answer.error == ErrorCode.none  # -1: not given


def test_unknown_partitions_and_bad_input():
    log = Log()
    assert log.store.initialize("g", T, 9, 0, 0, 1).answer.error == ErrorCode.unknown_topic_or_partition
    assert log.store.initialize("g", uuid.UUID(int=1), 0, 0, 0, 1).answer.error == ErrorCode.unknown_topic_or_partition
    assert log.store.initialize("g", T, -1, 0, 0, 1).answer.error == ErrorCode.invalid_request
    assert log.store.delete("g", T, -1).answer.error == ErrorCode.invalid_request
    assert ShareStateStore().read("g", T, 0, 0, 1).answer.error == ErrorCode.unknown_topic_or_partition


def test_read_records_a_newer_leader_epoch():
    log = Log()
    uninitialized = log.store.read("g", T, 0, 0, 1)
    assert uninitialized.records == [] and uninitialized.answer.state is not None
    assert uninitialized.answer.state.start_offset == -1 and uninitialized.answer.state.state_epoch == 0
    log.apply(log.store.initialize("g", T, 0, 1, 42, 1))
    read = log.apply(log.store.read("g", T, 0, 7, 2))
    assert read.answer.state is not None and read.answer.state.start_offset == 42
    assert read.records == [(ss.ShareUpdateKey("g", T, 0), ss.ShareUpdateValue(0, 7, -1, (), -1))]
    assert log.store.leader_epochs[("g", T, 0)] == 7
    assert log.apply(log.store.read("g", T, 0, 7, 3)).records == []
    summary = log.store.summary("g", T, 0)
    assert summary.state is not None and (summary.state.start_offset, summary.state.leader_epoch) == (42, 7)


def test_delete_and_reinitialize():
    log = Log()
    assert log.store.delete("g", T, 0).records == []
    log.apply(log.store.initialize("g", T, 0, 0, 5, 1))
    write(log, [B(5, 6, 2, 1)])
    log.apply(log.store.delete("g", T, 0))
    assert ("g", T, 0) not in log.store.states and log.store.redundant_offset() == len(log.records)
    assert log.reloaded().states == {}
    again = log.apply(log.store.initialize("g", T, 0, 1, 9, 2))
    assert again.records[0][1] is not None and again.records[0][1].snapshot_epoch == 0
    assert log.reloaded().states == log.store.states


def test_redundant_offset_is_held_by_the_oldest_snapshot():
    log = Log(updates_per_snapshot=1)
    log.apply(log.store.initialize("g", T, 0, 0, 0, 1))  # offset 0
    log.apply(log.store.initialize("g", T, 1, 0, 0, 1))  # offset 1
    write(log, [B(0, 0, 2, 1)])  # update of partition 0 (offset 2)
    write(log, [B(1, 1, 2, 1)])  # update (count 1 >= 1: next is a snapshot) (offset 3)
    write(log, [B(2, 2, 2, 1)])  # snapshot of partition 0 (offset 4)
    assert log.store.redundant_offset() == 1  # partition 1's only snapshot
    assert log.reloaded(1).states == log.store.states


writes = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 3), st.sampled_from([0, 2, 4]), st.integers(1, 3),
                            st.one_of(st.just(-1), st.integers(0, 20))), max_size=12)


@settings(max_examples=examples(60))
@given(writes, st.integers(1, 4))
def test_any_history_reloads_to_the_same_state(history, per_snapshot):
    log = Log(per_snapshot)
    log.apply(log.store.initialize("g", T, 0, 0, 0, 1))
    for first, length, state, count, start in history:
        write(log, [B(first, first + length, state, count)], start=start)
    assert log.reloaded().states == log.store.states
    assert log.reloaded(log.store.redundant_offset()).states == log.store.states
