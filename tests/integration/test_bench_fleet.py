"""The steady-state load generator (bench/lib/fleet.py) against the real server, at a small scale.

The benchmark's figures are only as good as its generator: every heartbeat sent in the window must
be counted once, answered without error, and timed twice (arrival at the socket, then the read),
and the generator must leave its process as it found it (GC on, sockets read by their transports).
"""

from __future__ import annotations

import gc
import sys

from bench.lib.fleet import Fleet, Member, Pipe, _join, _seat

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


async def test_a_generation_completed_without_late_members_is_joined_again(server_factory):
    """The fleet's flake ("11 leaders for 6 groups"): with the server's initial delay at 0, a member whose join
    arrives first gets a generation of its own; the group's later members then wait for it to rejoin. Here that
    generation is made on purpose, then the whole group is seated: every member ends in one generation."""
    server = server_factory(overrides={"group.initial.rebalance.delay.ms": "0"})
    pipes = [await Pipe.open(server.host, server.port) for _ in range(SIZE)]
    group = [Member("fleet-late", pipe) for pipe in pipes]
    try:
        first = await _join(group[0], 45000)
        assert first.leader == first.member_id and len(first.members) == 1
        await _seat(group, 45000)
        assert len({m.generation for m in group}) == 1 and group[0].generation > first.generation_id
        assert sorted(p.member_id for p in next(m for m in group if m.member_id == m.leader).peers) == \
            sorted(m.member_id for m in group)
    finally:
        for pipe in pipes:
            pipe.transport.close()
