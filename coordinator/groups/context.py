"""What the group state machine of one shard may use: the narrow context Membership gets.

Not the shard itself: the groups dict, the settings, the clock and the shard's keyed timers.
No write function: group operations return the records to write (groups/result.py) and the
shard writes them, timer operations included (the shard's timers hand what an operation
returns to the shard). Keeping the context this small is what keeps groups/ from importing
runtime.shard (no import cycle shard -> membership -> shard); of runtime/ it knows only the
types of the timers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.groups.classic_group import ClassicGroup
from coordinator.groups.settings import GroupSettings
from coordinator.groups.stats import GroupStats

if TYPE_CHECKING:
    from coordinator.runtime.timers import KeyedTimers, Scheduler


class GroupContext:
    __slots__ = ("clock", "groups", "settings", "timers", "stats")

    def __init__(self, groups: dict[str, ClassicGroup], settings: GroupSettings, clock: Scheduler,
                 timers: KeyedTimers, stats: GroupStats | None = None) -> None:
        self.stats = stats if stats is not None else GroupStats()
        self.groups = groups
        self.settings = settings
        self.clock = clock
        self.timers = timers
