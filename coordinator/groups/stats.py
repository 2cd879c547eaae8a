"""Counters of group events for the metrics endpoint, shared by every shard of a node (so that a shard
moving away does not take its counts with it): rebalances started, by cause, and offsets expired."""

from __future__ import annotations


class GroupStats:
    __slots__ = ("rebalances", "offsets_expired")

    def __init__(self) -> None:
        self.rebalances: dict[str, int] = {}  # cause -> rebalances started (groups/rebalance.py's causes)
        self.offsets_expired = 0  # committed offsets removed by retention (KIP-211)

    def rebalance_started(self, cause: str) -> None:
        self.rebalances[cause] = self.rebalances.get(cause, 0) + 1
