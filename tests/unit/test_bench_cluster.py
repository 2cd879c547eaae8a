"""bench/bench_cluster.py's own logic: when a failover counts as recovered (every member committed again), and
the verdict its table prints against the issue's bound (session timeout + 3 s)."""

from __future__ import annotations

import time

from bench.bench_cluster import FAILOVER_TOPIC, _member_acks, _wait_all_commit_after, failover_text


class FakeMember:
    def __init__(self, committed: dict[int, int]) -> None:
        self.committed = {(FAILOVER_TOPIC, p): o for p, o in committed.items()}
        self.committed[("other-topic", 0)] = 99


def test_member_acks_keep_the_failover_topic_only():
    assert _member_acks([FakeMember({0: 5, 3: 7})]) == [{0: 5, 3: 7}]


def test_recovered_only_when_every_member_committed_past_its_before():
    moved, stuck = FakeMember({0: 6}), FakeMember({1: 4})
    before = [{0: 5}, {1: 4}]
    assert _wait_all_commit_after([moved, stuck], before, time.monotonic(), 0.2) is None
    stuck.committed[(FAILOVER_TOPIC, 2)] = 1  # a partition it did not have before counts as newer
    seconds = _wait_all_commit_after([moved, stuck], before, time.monotonic(), 5)
    assert seconds is not None and 0 <= seconds < 5


def test_failover_verdict_against_the_bound():
    assert "within" in failover_text([1.0, 5.9], 3000) and "max **5.90 s**" in failover_text([1.0, 5.9], 3000)
    assert "OVER" in failover_text([1.0, 6.1], 3000)
    assert "never recovered" in failover_text([1.0, None], 3000)
    assert failover_text([], 3000) == ""
