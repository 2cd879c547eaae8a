"""The values a share partition is made of (Kafka's RecordState, AcknowledgeType, InFlightState,
ShareFetch's AcquiredRecords and ShareAcquireMode), as immutable Python values."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from storage.share_state_records import StateBatch


class RecordState(IntEnum):
    """A record's delivery state; the value is the byte persisted in a state batch (ACQUIRED never is)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AckType(IntEnum):
    """ShareAcknowledge / ShareFetch AcknowledgeTypes (RENEW: ShareFetch v2 / ShareAcknowledge v2, KIP-1222)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class AcquireMode(IntEnum):
    """ShareFetch v2's ShareAcquireMode: MaxRecords is a soft limit aligned to log batches, or a hard one."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


@dataclass(frozen=True, slots=True)
class InFlight:
    """One in-flight record: state, delivery count, the member holding its lock and the lock's deadline."""

    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """A range handed to a member (ShareFetchResponse.AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class LogBatch:
    """A batch of the partition's log as the data plane read it: its offsets and transaction header bits."""

    base_offset: int
    last_offset: int
    producer_id: int = -1
    transactional: bool = False
    control: bool = False


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatch: a range and one type for all of it, or one type per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PersistWrite:
    """What to send to the share coordinator (WriteShareGroupState) after a change: the start offset, the
    changed records' batches (ACQUIRED ones are not persisted), the delivery-complete count (KIP-1226)."""

    start_offset: int
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int
