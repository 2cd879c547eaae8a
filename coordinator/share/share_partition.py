"""A share partition: the in-flight records of one topic partition for one share group (Kafka's SharePartition).

The in-flight window is [start_offset, end_offset): every offset in it has an `InFlight` (contiguous, as
Kafka acquires whole ranges of the fetched batches: an offset with no record, a control record or one
compacted away, is acknowledged by the client as a GAP). Below the start offset everything is done; at and
above the end offset nothing was acquired yet. Transitions (Kafka's):

    AVAILABLE --acquire (count + 1, lock)--> ACQUIRED
    ACQUIRED --accept--> ACKNOWLEDGED          ACQUIRED --reject / gap--> ARCHIVED
    ACQUIRED --release, lock expiry, member gone--> AVAILABLE, or ARCHIVED once count >= the delivery limit
    ACQUIRED --renew--> ACQUIRED with a new lock

The start offset moves over ACKNOWLEDGED / ARCHIVED records; the window never holds more than
`max_in_flight` (group.share.partition.max.record.locks) records past the start offset, though AVAILABLE
ones inside it can always be acquired again.

Every change is applied at once and returned as a `Change`: the `PersistWrite` to send to the share
coordinator, and what `rollback` needs to undo it if that write fails (Kafka's rollback of an
acknowledgement whose persist failed). The answer to an acknowledgement is given once the write is durable.
Locks: `next_lock_deadline()` says when `expire_locks(now_ms)` is due (the runtime arms one timer for it).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from storage.share_state_records import StateBatch

from .acquiring import acquire_records
from .record_states import (
    AckBatch,
    AckType,
    AcquiredRecords,
    AcquireMode,
    InFlight,
    LogBatch,
    PersistWrite,
    RecordState,
)

MAX_RECORD_LOCKS = 2000  # group.share.partition.max.record.locks
DELIVERY_COUNT_LIMIT = 5  # group.share.delivery.count.limit
RECORD_LOCK_DURATION_MS = 30_000  # group.share.record.lock.duration.ms


@dataclass
class Change:
    """An applied change: what to persist, and the previous entries to restore should that fail."""

    persist: PersistWrite | None
    previous: dict[int, InFlight | None] = field(default_factory=dict)  # offset -> entry before (None: new)
    previous_start: int = 0
    previous_end: int = 0


@dataclass(frozen=True, slots=True)
class AckResult:
    error: ErrorCode
    message: str | None = None
    change: Change | None = None


class SharePartition:
    """The in-flight records of one share partition (see the module docstring)."""

    def __init__(self, start_offset: int, state_batches: tuple[StateBatch, ...] = (), state_epoch: int = 0,
                 max_in_flight: int = MAX_RECORD_LOCKS, delivery_count_limit: int = DELIVERY_COUNT_LIMIT,
                 lock_duration_ms: int = RECORD_LOCK_DURATION_MS) -> None:
        """A share partition initialized from its persisted state (ReadShareGroupState's answer, with the
        start offset already decided by share.auto.offset.reset when it was -1)."""
        self.state_epoch = state_epoch
        self.max_in_flight = max_in_flight
        self.delivery_count_limit = delivery_count_limit
        self.lock_duration_ms = lock_duration_ms
        self.start_offset = start_offset
        self.records: dict[int, InFlight] = {}
        self._locks: list[tuple[float, int]] = []  # (deadline, offset), checked against the record when due
        end = start_offset
        for batch in sorted(state_batches, key=lambda b: b.first_offset):
            for offset in range(max(batch.first_offset, end), batch.last_offset + 1):
                self.records[offset] = InFlight(RecordState(batch.delivery_state), batch.delivery_count)
            end = max(end, batch.last_offset + 1)
        for offset in range(start_offset, end):  # never persisted: never delivered as far as we know
            self.records.setdefault(offset, InFlight(RecordState.AVAILABLE, 0))
        self.records = dict(sorted(self.records.items()))
        self.end_offset = end
        self._advance_start(None)

    # --- reading ------------------------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        """Where the next fetch of the log starts: the first AVAILABLE record, else the end offset."""
        for offset, record in self.records.items():
            if record.state is RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def can_acquire(self) -> bool:
        """Whether an acquire may find anything: AVAILABLE records in the window, or room for new ones."""
        return self.next_fetch_offset() < self.end_offset or self.in_flight() < self.max_in_flight

    def delivery_complete_count(self) -> int:
        return sum(1 for r in self.records.values() if r.state.terminal)

    def next_lock_deadline(self) -> float | None:
        while self._locks:
            deadline, offset = self._locks[0]
            record = self.records.get(offset)
            if record is not None and record.state is RecordState.ACQUIRED and record.lock_deadline_ms == deadline:
                return deadline
            heapq.heappop(self._locks)
        return None

    # --- changes ------------------------------------------------------------------------------------

    def _begin(self) -> Change:
        return Change(None, {}, self.start_offset, self.end_offset)

    def set_record(self, change: Change, offset: int, record: InFlight) -> None:
        """Change one record within `change` (acquiring.py uses it too)."""
        if offset not in change.previous:
            change.previous[offset] = self.records.get(offset)
        self.records[offset] = record
        if record.state is RecordState.ACQUIRED:
            heapq.heappush(self._locks, (record.lock_deadline_ms, offset))

    def _finish(self, change: Change, persist: bool = True) -> Change:
        """Move the start offset and say what to persist: the changed records from the start offset on."""
        self._advance_start(change)
        if persist:
            batches: list[StateBatch] = []
            for offset in sorted(change.previous):
                record = self.records.get(offset)
                if offset < self.start_offset or record is None or record.state is RecordState.ACQUIRED:
                    continue
                last = batches[-1] if batches else None
                if (last is not None and last.last_offset + 1 == offset and last.delivery_state == record.state
                        and last.delivery_count == record.delivery_count):
                    batches[-1] = StateBatch(last.first_offset, offset, last.delivery_state, last.delivery_count)
                else:
                    batches.append(StateBatch(offset, offset, int(record.state), record.delivery_count))
            if batches or self.start_offset != change.previous_start:
                change.persist = PersistWrite(self.start_offset, tuple(batches), self.delivery_complete_count())
        return change

    def _advance_start(self, change: Change | None) -> None:
        for offset in list(self.records):
            if offset >= self.start_offset and not self.records[offset].state.terminal:
                break
            record = self.records.pop(offset)
            if change is not None and offset not in change.previous:
                change.previous[offset] = record
            self.start_offset = max(self.start_offset, offset + 1)
        if not self.records:
            self.start_offset = max(self.start_offset, self.end_offset)
            self.end_offset = max(self.end_offset, self.start_offset)

    def rollback(self, change: Change) -> None:
        """Undo `change` (its persist failed): its records go back to what they were, unless changed since."""
        for offset, before in change.previous.items():
            if before is None:
                self.records.pop(offset, None)
            else:
                self.records[offset] = before
                if before.state is RecordState.ACQUIRED:
                    heapq.heappush(self._locks, (before.lock_deadline_ms, offset))
        self.start_offset = min(self.start_offset, change.previous_start)
        self.end_offset = max(change.previous_end, max(self.records, default=change.previous_end - 1) + 1)
        self.records = dict(sorted(self.records.items()))

    def _released(self, record: InFlight) -> InFlight:
        """An ACQUIRED record given back: AVAILABLE, or ARCHIVED once it was delivered often enough."""
        if record.delivery_count >= self.delivery_count_limit:
            return InFlight(RecordState.ARCHIVED, record.delivery_count)
        return InFlight(RecordState.AVAILABLE, record.delivery_count)

    # --- operations ---------------------------------------------------------------------------------

    def acquire(self, member_id: str, log_batches: list[LogBatch], max_records: int, batch_size: int,
                now_ms: float, mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED, read_committed: bool = False,
                aborted: tuple[tuple[int, int], ...] = ()) -> tuple[list[AcquiredRecords], Change]:
        """Acquire records of `log_batches` (read from `next_fetch_offset()`) for `member_id`: see acquiring.py.
        `aborted`: the fetch's aborted transactions (producer id, first offset), for read_committed."""
        change = self._begin()
        acquired = acquire_records(self, change, member_id, log_batches, max_records, batch_size, now_ms, mode,
                                   read_committed, list(aborted))
        return acquired, self._finish(change)

    def acknowledge(self, member_id: str, batches: list[AckBatch], now_ms: float) -> AckResult:
        """Apply a member's acknowledgements, all or none (Kafka rolls back the whole call on an error):
        INVALID_RECORD_STATE for an offset that is not ACQUIRED by this member (or outside the window)."""
        plan: list[tuple[int, AckType]] = []
        for batch in batches:
            for offset in range(batch.first_offset, batch.last_offset + 1):
                record = self.records.get(offset)
                if record is None or record.state is not RecordState.ACQUIRED or record.member_id != member_id:
                    return AckResult(ErrorCode.invalid_record_state,
                                     f"The record at offset {offset} is not acquired by the member")
                kind = batch.types[0] if len(batch.types) == 1 else batch.types[offset - batch.first_offset]
                plan.append((offset, AckType(kind)))
        change = self._begin()
        renewed_until = now_ms + self.lock_duration_ms
        for offset, kind in plan:
            record = self.records[offset]
            if kind is AckType.ACCEPT:
                self.set_record(change, offset, InFlight(RecordState.ACKNOWLEDGED, record.delivery_count))
            elif kind in (AckType.REJECT, AckType.GAP):
                self.set_record(change, offset, InFlight(RecordState.ARCHIVED, record.delivery_count))
            elif kind is AckType.RELEASE:
                self.set_record(change, offset, self._released(record))
            else:  # RENEW: the same member keeps it, under a new lock
                self.set_record(change, offset, InFlight(RecordState.ACQUIRED, record.delivery_count, member_id,
                                                   renewed_until))
        return AckResult(ErrorCode.none, None, self._finish(change))

    def expire_locks(self, now_ms: float) -> Change | None:
        """Records whose lock ran out go back (AVAILABLE, or ARCHIVED at the delivery count limit)."""
        change = self._begin()
        while self._locks and self._locks[0][0] <= now_ms:
            deadline, offset = heapq.heappop(self._locks)
            record = self.records.get(offset)
            if record is not None and record.state is RecordState.ACQUIRED and record.lock_deadline_ms == deadline:
                self.set_record(change, offset, self._released(record))
        return self._finish(change) if change.previous else None

    def release_member(self, member_id: str) -> Change | None:
        """A member's session closed or it left the group: what it holds goes back as on lock expiry."""
        change = self._begin()
        for offset, record in list(self.records.items()):
            if record.state is RecordState.ACQUIRED and record.member_id == member_id:
                self.set_record(change, offset, self._released(record))
        return self._finish(change) if change.previous else None

    def move_log_start(self, log_start_offset: int) -> Change | None:
        """The log's start offset passed the share partition's (retention, DeleteRecords): what is below it
        can never be delivered, so the start offset follows it."""
        if log_start_offset <= self.start_offset:
            return None
        change = self._begin()
        for offset in [o for o in self.records if o < log_start_offset]:
            change.previous[offset] = self.records.pop(offset)
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        return self._finish(change)
