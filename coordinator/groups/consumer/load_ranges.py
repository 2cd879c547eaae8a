"""Picks the least and the most loaded members of one topic's subscribers in constant time per pick
(Kafka's UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer).

The subscribers are sorted by load (partition count, then member number). Two ranges grow inwards: the least
loaded range from the left, the most loaded from the right. Within a range every member starts at the same
load ("level"); picks go round the range, and once each member of it has had one the level moves by one and
the range takes in the neighbours now at that level. The loads array is shared with the caller, who applies
each move; the ranges assume it does. Balanced once the two levels differ by at most one.
"""

from __future__ import annotations

NONE = -1


class LoadRanges:
    def __init__(self, loads: list[int]):
        self.loads = loads  # shared: the caller updates it as partitions move
        self.members: list[int] = []
        self.least_end = 0  # least loaded range: members[0:least_end]
        self.least_level = 0
        self.least_next = 0
        self.most_start = 0  # most loaded range: members[most_start:most_end]
        self.most_end = 0
        self.most_level = 0
        self.most_next = 0

    def reset(self, members: list[int]) -> int:
        """Starts over with these members (not empty); returns the spread of their loads."""
        loads = self.loads
        self.members = sorted(members, key=lambda m: (loads[m], m))
        lowest, highest = loads[self.members[0]], loads[self.members[-1]]
        count = len(self.members)
        self.least_end, self.least_level, self.least_next = 0, lowest - 1, 0
        self.most_start, self.most_end, self.most_level, self.most_next = count, count, highest + 1, count - 1
        return highest - lowest

    def next_least_loaded(self) -> int:
        """The member to give the next partition to, counted as having received it."""
        if self.least_next >= self.least_end:
            self.least_level += 1
            while (self.least_end < len(self.members)
                   and self.loads[self.members[self.least_end]] == self.least_level):
                self.least_end += 1
            self.least_next = 0
        member = self.members[self.least_next]
        self.least_next += 1
        return member

    def next_most_loaded(self) -> int:
        """The member to take the next partition from, counted as having given it; NONE when none is left."""
        if self.most_next < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # the range was emptied by exclusions: restart at the level of the next member down
                self.most_level = self.loads[self.members[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and self.loads[self.members[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.most_next = self.most_end - 1
        if self.most_next < 0:
            return NONE
        member = self.members[self.most_next]
        self.most_next -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drops the member next_most_loaded just returned from the most loaded range (it has nothing to give)."""
        members, position = self.members, self.most_next + 1
        last = self.most_end - 1
        members[position], members[last] = members[last], members[position]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_level - self.least_level <= 1
