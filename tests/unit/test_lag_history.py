"""coordinator/ops/lag_history.py over a stand-in for GroupViews: what a sample keeps, the window, the bounds."""

from __future__ import annotations

from types import SimpleNamespace

from coordinator.ops import lag_history
from coordinator.ops.lag_history import LagHistory
from coordinator.runtime.shard import ShardState


class Views:
    """GroupViews' two reads the sampler uses: the coordinator's shards and a group's offsets with their lag."""

    def __init__(self) -> None:
        self.lags: dict[str, dict[tuple[str, int], int | None]] = {}
        shard = SimpleNamespace(state=ShardState.ACTIVE, groups={}, consumer_groups={},
                                offsets=SimpleNamespace(by_group=self.lags))
        self.coordinator = SimpleNamespace(all_shards=lambda: [shard])

    def offsets(self, _shard, group_id):
        return [{"topic": t, "partition": p, "lag": lag} for (t, p), lag in sorted(self.lags[group_id].items())]


def test_samples_per_partition_and_group_totals_within_the_window():
    views = Views()
    history = LagHistory(views, interval_ms=1000, history_ms=3000)  # keeps 4 samples
    views.lags["g"] = {("t", 0): 5, ("t", 1): 7, ("remote", 0): None}  # None: not hosted here, not sampled
    assert history.sample(1000) == 2
    views.lags["g"] = {("t", 0): 3, ("t", 1): 7, ("remote", 0): None}
    history.sample(2000)
    detail = history.group("g")
    assert detail["total"] == [(1000, 12), (2000, 10)]
    assert [(p["topic"], p["partition"], p["samples"]) for p in detail["partitions"]] == [
        ("t", 0, [(1000, 5), (2000, 3)]), ("t", 1, [(1000, 7), (2000, 7)])]
    for now in range(3000, 8000, 1000):
        history.sample(now)
    assert [t for t, _ in history.group("g")["total"]] == [4000, 5000, 6000, 7000]  # the ring keeps the window
    assert history.totals()["groups"] == {"g": history.group("g")["total"]}
    assert history.group("unknown") == {"group_id": "unknown", "interval_ms": 1000, "history_ms": 3000,
                                        "total": [], "partitions": []}


def test_a_partition_gone_for_a_window_is_dropped_and_series_are_bounded(monkeypatch):
    views = Views()
    history = LagHistory(views, interval_ms=1000, history_ms=2000)
    views.lags["g"] = {("t", 0): 1, ("t", 1): 1}
    history.sample(1000)
    views.lags["g"] = {("t", 0): 1}  # t-1's offset was deleted
    history.sample(2000)
    history.sample(3500)
    assert [p["partition"] for p in history.group("g")["partitions"]] == [0]
    monkeypatch.setattr(lag_history, "MAX_SERIES", 2)
    views.lags["h"] = {("t", 0): 4, ("t", 1): 6}
    history.sample(4000)
    assert len(history.partitions) == 2  # g's one and the first of h's
    assert history.group("h")["total"] == [(4000, 10)]  # the total counts every partition still
