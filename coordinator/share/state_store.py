"""The share coordinator's state of one __share_group_state partition (Kafka's ShareCoordinatorShard), pure.

State changes only by `replay` of ShareSnapshot / ShareUpdate records (live writes and loading alike). The
requests of the "persister" interface (Write/Read/Initialize/Delete/ReadSummary share-group state, one share
partition each, as Kafka's ShareCoordinatorService splits them) are decisions: `write`, `read`,
`initialize`, `delete` return the records to append and the answer to give once they are durable; `summary`
only reads. Kafka's rules:

* the first state of a share partition is a ShareSnapshot written by `initialize` (snapshot epoch 0, or the
  old one + 1 when it re-initializes); a `write` on a share partition with no state is INVALID_REQUEST;
* a `write` appends a ShareUpdate carrying the request's batches (combined among themselves) and, once
  `snapshot_updates_per_snapshot` (share.coordinator.snapshot.update.records.per.snapshot, default 500)
  updates followed the last snapshot, a new ShareSnapshot (snapshot epoch + 1) with the whole state;
* a leader epoch or state epoch below the highest seen is fenced (FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH);
  a `read` with a newer leader epoch records it (a ShareUpdate with no batches);
* `delete` writes a ShareSnapshot tombstone.

__share_group_state is not compacted: Kafka gives it cleanup.policy=delete with infinite retention and prunes
it with DeleteRecords up to `redundant_offset()` (ShareCoordinatorOffsetsManager): every record below the
oldest of the share partitions' latest snapshots is superseded (a share partition's updates follow its
snapshot). A share partition whose state was deleted no longer holds the offset back.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kio.schema.errors import ErrorCode

from storage.share_state_records import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateKey,
    ShareStateValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatch,
)

from .state_batches import combine

SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT = 500  # share.coordinator.snapshot.update.records.per.snapshot
UNINITIALIZED_START_OFFSET = -1  # PartitionFactory.UNINITIALIZED_START_OFFSET
DEFAULT_STATE_EPOCH = 0
DEFAULT_LEADER_EPOCH = -1

Key = tuple[str, uuid.UUID, int]  # SharePartitionKey: (group, topic id, partition)
StateRecord = tuple[ShareStateKey, ShareStateValue | None]
PartitionExists = Callable[[uuid.UUID, int], bool]


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """The state of one share partition (Kafka's ShareGroupOffset)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    create_timestamp: int = 0
    write_timestamp: int = 0
    delivery_complete_count: int = -1


@dataclass(frozen=True, slots=True)
class WriteState:
    """One share partition of WriteShareGroupState."""

    group: str
    topic_id: uuid.UUID
    partition: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1


@dataclass(frozen=True, slots=True)
class Answer:
    """What a request gets: an error (0: none) with a message, and for reads the state."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None
    state: ShareGroupOffset | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """Records to append (in order) and the answer to give once they are durable."""

    records: list[StateRecord] = field(default_factory=list)
    answer: Answer = field(default_factory=Answer)


def _fail(error: ErrorCode, message: str | None = None) -> Decision:
    return Decision([], Answer(error, message))


class ShareStateStore:
    """The share partitions' state of one __share_group_state partition."""

    def __init__(self, partition_exists: PartitionExists | None = None,
                 updates_per_snapshot: int = SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT) -> None:
        self.partition_exists = partition_exists  # the metadata image's view; None: not known yet
        self.updates_per_snapshot = updates_per_snapshot
        self.states: dict[Key, ShareGroupOffset] = {}
        self.leader_epochs: dict[Key, int] = {}
        self.state_epochs: dict[Key, int] = {}
        self.update_counts: dict[Key, int] = {}
        self.snapshot_offsets: dict[Key, int] = {}  # the log offset of each share partition's latest snapshot
        self._redundant = 0

    # --- replay ----------------------------------------------------------------------------------

    def replay(self, offset: int, key: ShareStateKey, value: ShareStateValue | None) -> None:
        """Apply one record of the log at `offset` (live writes and loading alike)."""
        k = (key.group, key.topic_id, key.partition)
        if isinstance(key, ShareSnapshotKey):
            if value is None:
                self._forget(k, offset)
            else:
                assert isinstance(value, ShareSnapshotValue)
                self._replay_snapshot(k, offset, value)
        elif value is not None:  # Kafka writes no ShareUpdate tombstone
            assert isinstance(value, ShareUpdateValue)
            self._replay_update(k, value)

    def _replay_snapshot(self, k: Key, offset: int, value: ShareSnapshotValue) -> None:
        self._raise(self.leader_epochs, k, value.leader_epoch)
        self._raise(self.state_epochs, k, value.state_epoch)
        self.states[k] = ShareGroupOffset(value.snapshot_epoch, value.state_epoch, value.leader_epoch,
                                          value.start_offset, value.state_batches, value.create_timestamp,
                                          value.write_timestamp, value.delivery_complete_count)
        if self.update_counts.get(k, 0) >= self.updates_per_snapshot:
            self.update_counts[k] = 0
        self.snapshot_offsets[k] = offset
        self._redundant = min(self.snapshot_offsets.values())

    def _replay_update(self, k: Key, value: ShareUpdateValue) -> None:
        self._raise(self.leader_epochs, k, value.leader_epoch)
        current = self.states.get(k)
        if current is None:  # an update without its snapshot (pruned log): what it says is all there is
            self.states[k] = ShareGroupOffset(value.snapshot_epoch, DEFAULT_STATE_EPOCH, value.leader_epoch,
                                              value.start_offset, value.state_batches,
                                              delivery_complete_count=value.delivery_complete_count)
        else:
            start = current.start_offset if value.start_offset == -1 else value.start_offset
            self.states[k] = replace(
                current, start_offset=start,
                leader_epoch=current.leader_epoch if value.leader_epoch == -1 else value.leader_epoch,
                state_batches=combine(current.state_batches, value.state_batches, start),
                delivery_complete_count=(current.delivery_complete_count if value.delivery_complete_count == -1
                                         else value.delivery_complete_count))
        self.update_counts[k] = 0 if k not in self.update_counts else self.update_counts[k] + 1

    def _forget(self, k: Key, offset: int) -> None:
        self.states.pop(k, None)
        for table in (self.leader_epochs, self.state_epochs, self.update_counts, self.snapshot_offsets):
            table.pop(k, None)
        # with no state left, everything up to the tombstone is superseded, the tombstone too
        self._redundant = min(self.snapshot_offsets.values()) if self.snapshot_offsets else offset + 1

    @staticmethod
    def _raise(table: dict[Key, int], k: Key, epoch: int) -> None:
        table[k] = max(epoch, table.get(k, epoch))

    def redundant_offset(self) -> int:
        """Records below this log offset are superseded (what DeleteRecords may remove)."""
        return self._redundant

    # --- checks ----------------------------------------------------------------------------------

    def _check_partition(self, topic_id: uuid.UUID, partition: int) -> Decision | None:
        if partition < 0:
            return _fail(ErrorCode.invalid_request, "The partition id cannot be a negative number.")
        if self.partition_exists is None or not self.partition_exists(topic_id, partition):
            return _fail(ErrorCode.unknown_topic_or_partition, "Topic/TopicPartition not found in metadata image.")
        return None

    def _fenced(self, k: Key, leader_epoch: int, state_epoch: int | None) -> Decision | None:
        if leader_epoch != -1 and self.leader_epochs.get(k, leader_epoch) > leader_epoch:
            return _fail(ErrorCode.fenced_leader_epoch, "Request leader epoch is smaller than last recorded.")
        if state_epoch is not None and state_epoch != -1 and self.state_epochs.get(k, state_epoch) > state_epoch:
            return _fail(ErrorCode.fenced_state_epoch, "Request state epoch is smaller than last recorded.")
        return None

    # --- requests --------------------------------------------------------------------------------

    def write(self, request: WriteState, now_ms: int) -> Decision:
        """WriteShareGroupState for one share partition."""
        k = (request.group, request.topic_id, request.partition)
        if request.partition < 0:
            return _fail(ErrorCode.invalid_request, "The partition id cannot be a negative number.")
        if k not in self.states:
            return _fail(ErrorCode.invalid_request, "Write operation on uninitialized share partition not allowed.")
        refused = self._fenced(k, request.leader_epoch, request.state_epoch) or self._check_partition(
            request.topic_id, request.partition)
        if refused is not None:
            return refused
        return Decision([self._state_record(k, request.start_offset, request.leader_epoch, request.state_batches,
                                            request.delivery_complete_count, now_ms)])

    def _state_record(self, k: Key, start_offset: int, leader_epoch: int, batches: tuple[StateBatch, ...],
                      delivery_complete_count: int, now_ms: int) -> StateRecord:
        """A ShareUpdate, or a ShareSnapshot once enough updates followed the last one (generateShareStateRecord)."""
        current = self.states[k]
        leader = current.leader_epoch if leader_epoch == -1 else leader_epoch
        group, topic_id, partition = k
        if self.update_counts.get(k, 0) >= self.updates_per_snapshot:
            start = current.start_offset if start_offset == -1 else start_offset
            return ShareSnapshotKey(group, topic_id, partition), ShareSnapshotValue(
                current.snapshot_epoch + 1, current.state_epoch, leader, start, now_ms, now_ms,
                combine(current.state_batches, batches, start), delivery_complete_count)
        return ShareUpdateKey(group, topic_id, partition), ShareUpdateValue(
            current.snapshot_epoch, leader, start_offset, combine((), batches, start_offset), delivery_complete_count)

    def read(self, group: str, topic_id: uuid.UUID, partition: int, leader_epoch: int, now_ms: int) -> Decision:
        """ReadShareGroupState for one share partition: its state (start offset -1 and no batches when it has
        none); a newer leader epoch is recorded first (a ShareUpdate without batches)."""
        k = (group, topic_id, partition)
        refused = self._check_partition(topic_id, partition) or self._fenced(k, leader_epoch, None)
        if refused is not None:
            return refused
        current = self.states.get(k)
        if current is None:
            return Decision([], Answer(state=ShareGroupOffset(0, DEFAULT_STATE_EPOCH, DEFAULT_LEADER_EPOCH,
                                                              UNINITIALIZED_START_OFFSET)))
        records = []
        if leader_epoch != -1 and leader_epoch > self.leader_epochs.get(k, -1):
            records.append(self._state_record(k, -1, leader_epoch, (), -1, now_ms))
            current = replace(current, leader_epoch=leader_epoch)
        return Decision(records, Answer(state=current))

    def summary(self, group: str, topic_id: uuid.UUID, partition: int) -> Answer:
        """ReadShareGroupStateSummary: start offset, state epoch, leader epoch, delivery-complete count."""
        refused = self._check_partition(topic_id, partition)
        if refused is not None:
            return refused.answer
        current = self.states.get((group, topic_id, partition))
        if current is None:
            return Answer(state=ShareGroupOffset(0, DEFAULT_STATE_EPOCH, DEFAULT_LEADER_EPOCH,
                                                 UNINITIALIZED_START_OFFSET))
        return Answer(state=replace(current, state_batches=()))

    def initialize(self, group: str, topic_id: uuid.UUID, partition: int, state_epoch: int, start_offset: int,
                   now_ms: int) -> Decision:
        """InitializeShareGroupState: a new snapshot at `start_offset` with no batches (the group coordinator
        does it when a topic's partitions join a share group's assignment, or on an offsets reset)."""
        k = (group, topic_id, partition)
        refused = self._check_partition(topic_id, partition) or self._fenced(k, -1, state_epoch)
        if refused is not None:
            return refused
        current = self.states.get(k)
        epoch = 0 if current is None else current.snapshot_epoch + 1
        return Decision([(ShareSnapshotKey(group, topic_id, partition), ShareSnapshotValue(
            epoch, state_epoch, DEFAULT_LEADER_EPOCH, start_offset, now_ms, now_ms, (), 0))])

    def delete(self, group: str, topic_id: uuid.UUID, partition: int) -> Decision:
        """DeleteShareGroupState: a ShareSnapshot tombstone (nothing when there is no state)."""
        if partition < 0:
            return _fail(ErrorCode.invalid_request, "The partition id cannot be a negative number.")
        if (group, topic_id, partition) not in self.states:
            return Decision()
        return Decision([(ShareSnapshotKey(group, topic_id, partition), None)])
