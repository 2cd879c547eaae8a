"""What the group state machine of one shard may use: the narrow context Membership gets.

Not the shard itself: the groups dict, the settings, the clock, the shard's keyed timers
and the shard's write function (records in, the pending write out: only the shard
appends to the log and replays). Keeping the context this small is what keeps groups/
from importing runtime.shard (no import cycle shard -> membership -> shard); of runtime/
it knows only the types of timers and writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from coordinator.groups.classic_group import ClassicGroup
from coordinator.groups.settings import GroupSettings
from coordinator.records import Record

if TYPE_CHECKING:
    from coordinator.runtime.timers import KeyedTimers, Scheduler
    from coordinator.runtime.writes import PendingWrite

WriteRecords = Callable[[list[Record]], "PendingWrite"]


class GroupContext:
    __slots__ = ("clock", "groups", "settings", "timers", "write")

    def __init__(self, groups: dict[str, ClassicGroup], settings: GroupSettings, clock: Scheduler,
                 timers: KeyedTimers, write: WriteRecords) -> None:
        self.groups = groups
        self.settings = settings
        self.clock = clock
        self.timers = timers
        self.write = write
