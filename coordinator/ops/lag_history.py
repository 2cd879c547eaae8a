"""Consumer lag over time, for the console's charts: sampled on the server, a few minutes kept.

Every `http.lag.sample.interval.ms` the sampler reads the lag of every group coordinated here, per partition
hosted here (GroupViews.offsets: the high watermark minus the committed offset, what /metrics exports as
kafka_consumergroup_lag), and appends it to a ring per (group, topic, partition); `http.lag.history.ms` of samples
are kept. A group's total is the sum over its partitions at each sample. It runs only with the HTTP listener (the
console is its only reader), on the server's event loop between requests, as a metrics scrape does.

    GET /api/lag                  {"interval_ms", "history_ms", "groups": {group: [[wall ms, total lag], ...]}}
    GET /api/lag/{group}          {"group_id", "interval_ms", "history_ms", "total": [[ms, lag], ...],
                                   "partitions": [{"topic", "partition", "samples": [[ms, lag], ...]}]}

Bounded: at most MAX_SERIES partition series (further partitions count in their group's total only) and
MAX_GROUPS group totals; a series whose partition had no lag sample for a whole window is dropped.
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

import structlog
from aiohttp import web

from coordinator.ops.views import GroupViews, active_shards, group_ids

log = structlog.get_logger(__name__)

MAX_SERIES = 20_000
MAX_GROUPS = 5_000
Sample = tuple[int, int]  # (wall ms, lag)


class LagHistory:
    """The rings. `sample(now_ms)` reads the views once; `group(id)` and `totals()` answer the routes."""

    def __init__(self, views: GroupViews, interval_ms: int, history_ms: int) -> None:
        self.views = views
        self.interval_ms = interval_ms
        self.history_ms = history_ms
        self.keep = max(2, history_ms // max(interval_ms, 1) + 1)
        self.partitions: dict[tuple[str, str, int], collections.deque[Sample]] = {}
        self.groups: dict[str, collections.deque[Sample]] = {}
        self.last_seen: dict[tuple[str, str, int], int] = {}

    def sample(self, now_ms: int | None = None) -> int:
        """One sample of every group's lag; returns the number of partition lags read."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        read = 0
        for shard in active_shards(self.views.coordinator):
            for group_id in group_ids(shard):
                total, known = 0, False
                for entry in self.views.offsets(shard, group_id):
                    lag = entry["lag"]
                    if lag is None:
                        continue
                    total, known, read = total + lag, True, read + 1
                    key = (group_id, entry["topic"], entry["partition"])
                    ring = self.partitions.get(key)
                    if ring is None and len(self.partitions) < MAX_SERIES:
                        ring = self.partitions[key] = collections.deque(maxlen=self.keep)
                    if ring is not None:
                        ring.append((now, lag))
                        self.last_seen[key] = now
                if known:
                    ring = self.groups.get(group_id)
                    if ring is None and len(self.groups) < MAX_GROUPS:
                        ring = self.groups[group_id] = collections.deque(maxlen=self.keep)
                    if ring is not None:
                        ring.append((now, total))
        self._drop_older_than(now - self.history_ms)
        return read

    def _drop_older_than(self, horizon: int) -> None:
        for key in [k for k, seen in self.last_seen.items() if seen < horizon]:
            del self.partitions[key], self.last_seen[key]
        for group_id in [g for g, ring in self.groups.items() if not ring or ring[-1][0] < horizon]:
            del self.groups[group_id]

    def totals(self) -> dict[str, Any]:
        return {"interval_ms": self.interval_ms, "history_ms": self.history_ms,
                "groups": {group_id: list(ring) for group_id, ring in sorted(self.groups.items())}}

    def group(self, group_id: str) -> dict[str, Any]:
        partitions = [{"topic": topic, "partition": partition, "samples": list(ring)}
                      for (gid, topic, partition), ring in sorted(self.partitions.items()) if gid == group_id]
        return {"group_id": group_id, "interval_ms": self.interval_ms, "history_ms": self.history_ms,
                "total": list(self.groups.get(group_id, ())), "partitions": partitions}


class LagSampler:
    """The periodic task over a LagHistory, and its two routes."""

    def __init__(self, history: LagHistory) -> None:
        self.history = history
        self.task: asyncio.Task[None] | None = None

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/lag", self.all_groups), web.get("/api/lag/{group_id:.+}", self.one_group)]

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
            self.task = None

    async def _run(self) -> None:
        while True:
            try:
                self.history.sample()
            except Exception:  # a bug here must not end the sampling, nor the server
                log.exception("lag sample failed")
            await asyncio.sleep(self.history.interval_ms / 1000)

    async def all_groups(self, _request: web.Request) -> web.Response:
        return web.json_response(self.history.totals())

    async def one_group(self, request: web.Request) -> web.Response:
        return web.json_response(self.history.group(request.match_info["group_id"]))
