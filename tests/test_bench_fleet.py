"""The steady-state load generator (bench/fleet.py) against the real server, at a small scale.

The benchmark's figures are only as good as its generator: every heartbeat sent in the window must
be counted once, answered without error, and timed twice (arrival at the socket, then the read),
and the generator must leave its process as it found it (GC on, sockets read by their transports).
"""

from __future__ import annotations

import gc
import sys

from bench.fleet import Fleet

GROUPS, SIZE, CONNECTIONS = 6, 3, 4


async def test_fleet_heartbeats_are_all_answered_and_timed_at_the_socket(server_factory):
    server = server_factory(overrides={"group.initial.rebalance.delay.ms": "0"})
    fleet = await Fleet.join(server.host, server.port, GROUPS, SIZE, CONNECTIONS, prefix="fleet-test")
    marks: list[str] = []
    try:
        stats = await fleet.heartbeat(interval=0.2, seconds=0.6, warmup=0.2, report=marks.append)
        assert marks == ["start", "stop"]
        assert gc.isenabled()
        # 18 members every 0.2 s for 0.6 s: about 54 heartbeats in the window (a late tick on a
        # busy machine moves a few across its edges)
        assert 27 <= stats["sent"] <= 81, stats["sent"]
        assert stats["answered"] == stats["sent"]
        assert stats["errors"] == {}
        arrived, read = stats["arrived_ns"], stats["latencies_ns"]
        assert len(arrived) == len(read) == stats["answered"]
        assert arrived[0] > 0
        # each answer reached the socket no later than it was read, so the sorted lists compare
        # element by element too
        assert all(a <= r for a, r in zip(arrived, read))
        if sys.platform == "linux":  # read through the tapped duplicates, with kernel timestamps
            assert any(a < r for a, r in zip(arrived, read))
        assert stats["loop_late_s"] and min(stats["loop_late_s"]) >= 0.0
        # the transports read again afterwards: every member can leave
        await fleet.leave()
    finally:
        fleet.close()
