"""Server-side CPU of one classic-group rebalance through the dispatcher (in-process, no sockets).

    .venv/bin/python -m bench.profile.rebalance_cpu [--sizes 100,500] [--reps 7]

What bench/bench_groups.py times over the network, minus the clients and the kernel: a Stable group
of N members (JoinGroup v5, SyncGroup v3, as that bench sends) rebalances once: the leader's
JoinGroup, then every other member's (the join completes at the last one and answers all N), then
the followers' SyncGroups and the leader's with N assignments, its GroupMetadata write completed at
once (MemoryLog, no disk) and all N SyncGroups answered. Each request is a pre-encoded frame; its
cost is the dispatcher's (header, kio decode, handler, domain) plus encoding its answer. Also
prints the cost of encoding the GroupMetadata record of N members (the log does it once per
sync). Prints process CPU (median over --reps). To measure another tree, run it from each tree in
turn (bench/profile/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from kio.schema.join_group.v5.response import JoinGroupResponse
from kio.serial import entity_reader

from bench.lib.inprocess import DispatcherRig
from bench.lib.members import join_request, sync_request
from bench.lib.wire import request_frame
from coordinator.log_setup import configure_logging
from coordinator.records import log_codec
from coordinator.records.types import GroupMetadataRecord


def join_frame(group: str, member_id: str) -> bytes:
    return request_frame(join_request(group, member_id))[4:]


def sync_frame(group: str, generation: int, member_id: str, members: list[str] | None = None) -> bytes:
    return request_frame(sync_request(group, generation, member_id, members or ()))[4:]


def join_answer(frame: bytes) -> JoinGroupResponse:
    return entity_reader(JoinGroupResponse)(frame, 8)[0]


async def one_rebalance(size: int, group: str) -> tuple[float, float, float]:
    """(join phase, sync phase, GroupMetadata record encode) CPU seconds for one rebalance of `size`."""
    rig = DispatcherRig()
    ids = [join_answer((await rig.answers(rig.send([join_frame(group, "")])))[0]).member_id for _ in range(size)]
    sent = rig.send([join_frame(group, m) for m in ids])
    rig.clock.advance(0)  # the (zero) initial delay of the new group
    joined = [join_answer(a) for a in await rig.answers(sent)]
    leader, generation = joined[0].leader, joined[0].generation_id
    followers = [m for m in ids if m != leader]
    sent = rig.send([sync_frame(group, generation, m) for m in followers])
    sent += rig.send([sync_frame(group, generation, leader, ids)])
    rig.log.complete()
    await rig.answers(sent)

    joins = [join_frame(group, m) for m in [leader, *followers]]
    syncs = [sync_frame(group, generation + 1, m) for m in followers]
    leader_sync = sync_frame(group, generation + 1, leader, ids)
    started = time.process_time()
    rejoined = await rig.answers(rig.send(joins))
    join_cpu = time.process_time() - started
    if join_answer(rejoined[0]).generation_id != generation + 1 or len(join_answer(rejoined[0]).members) != size:
        raise RuntimeError("the rebalance did not complete as expected")
    started = time.process_time()
    sent = rig.send(syncs) + rig.send([leader_sync])
    rig.log.complete()
    await rig.answers(sent)
    sync_cpu = time.process_time() - started
    group_record = next(r for r in reversed(rig.log.all_records()) if isinstance(r, GroupMetadataRecord))
    started = time.process_time()
    log_codec.encode(group_record)
    return join_cpu, sync_cpu, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,500")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    configure_logging("WARNING")  # one INFO line per rebalance would interleave with the figures
    for size in map(int, args.sizes.split(",")):
        runs = [asyncio.run(one_rebalance(size, f"bench-{size}-{rep}")) for rep in range(args.reps)]
        join, sync, record = (statistics.median(r[i] for r in runs) * 1e3 for i in range(3))
        print(f"{size} members: join phase {join:.1f} ms, sync phase {sync:.1f} ms (server CPU, median of "
              f"{args.reps}); GroupMetadata record encode {record:.2f} ms")


if __name__ == "__main__":
    main()
