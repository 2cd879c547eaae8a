"""What a group operation hands the shard to write: Kafka's CoordinatorResult for classic groups.

Group operations (JoinGroup, SyncGroup, LeaveGroup, and the timers' join completion, session and
sync expiry) change the live ClassicGroup themselves and return the records that describe the
change; they never write. The shard appends the records (runtime.shard.Shard.write_result) and,
once the write is settled, calls `on_written(None or the error)`: the effects that must wait for
durability (the Stable transition and the SyncGroup answers, a replaced static member's JoinGroup
answer, a WARN when a timer's write failed). What `on_written` returns is written the same way (a
failed assignment write can complete a join whose record must be written in turn).
"""

from __future__ import annotations

from collections.abc import Callable

from coordinator.groups.classic_group import ClassicGroup
from coordinator.records.types import GroupMetadataRecord, Record

OnWritten = Callable[[BaseException | None], "GroupResult | None"]


class GroupResult:
    """Records to write, and what runs once they are durable (or failed)."""

    __slots__ = ("on_written", "records")

    def __init__(self, records: list[Record], on_written: OnWritten | None = None) -> None:
        self.records = records
        self.on_written = on_written


def store_group(group: ClassicGroup, assignment: dict[str, bytes], on_written: OnWritten | None) -> GroupResult:
    """The group's GroupMetadata record with `assignment`, made now (it describes the group as it is now)."""
    return GroupResult([GroupMetadataRecord(group.group_id, group.metadata_value(assignment))], on_written)


def combined(first: GroupResult | None, second: GroupResult | None) -> GroupResult | None:
    """Both in one write, `first`'s records first, as Kafka gathers one operation's records in one
    CoordinatorResult; each `on_written` runs, in order, with the write's outcome."""
    if first is None:
        return second
    if second is None:
        return first
    callbacks = [c for c in (first.on_written, second.on_written) if c is not None]

    def on_written(error: BaseException | None) -> GroupResult | None:
        result = None
        for callback in callbacks:
            result = combined(result, callback(error))
        return result

    return GroupResult(first.records + second.records, on_written)
