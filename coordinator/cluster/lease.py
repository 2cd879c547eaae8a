"""This node's own lease, as far as the local monotonic clock can tell.

PostgreSQL decides leases on its own clock (`expires_at` = its `now()` + session at the renew), and the nodes'
clocks may disagree, so a node cannot read its deadline from the row. What it can know for sure is when it *sent*
the last renew that succeeded: PostgreSQL's `now()` for that renew is no earlier than that moment, so the lease
lasts at least until sent + session timeout by the local monotonic clock (clock rates agree well enough over
seconds). Past that instant the node must assume another node may own its partitions. A renew whose answer
arrives after that instant does not heal the gap: the lease may have lapsed in between.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class LocalLease:
    """`valid_until` (seconds on `clock`) = last successful renew sent + session timeout; None: no lease."""

    def __init__(self, session_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.session_s = session_ms / 1000.0
        self.clock = clock
        self.valid_until: float | None = None

    def granted(self, sent_at: float) -> bool:
        """A register or renew sent at `sent_at` succeeded now. False (and the lease stays as it was) when the
        answer came too late: the previous lease had already lapsed, or this one took longer than the session."""
        now = self.clock()
        if self.valid_until is not None and now >= self.valid_until:
            return False
        if now >= sent_at + self.session_s:
            return False
        self.valid_until = sent_at + self.session_s
        return True

    def lapsed(self) -> bool:
        return self.valid_until is None or self.clock() >= self.valid_until

    def remaining_s(self) -> float:
        """Seconds until the lease may lapse (0 when it may already have)."""
        return 0.0 if self.valid_until is None else max(0.0, self.valid_until - self.clock())

    def drop(self) -> None:
        self.valid_until = None
