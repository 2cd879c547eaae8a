"""Server-side CPU of one classic-group rebalance through the dispatcher (in-process, no sockets).

    .venv/bin/python -m bench.bench_rebalance_cpu [--sizes 100,500] [--reps 7]

What bench/bench_groups.py times over the network, minus the clients and the kernel: a Stable group
of N members (JoinGroup v5, SyncGroup v3, as that bench sends) rebalances once: the leader's
JoinGroup, then every other member's (the join completes at the last one and answers all N), then
the followers' SyncGroups and the leader's with N assignments, its GroupMetadata write completed at
once (MemoryLog, no disk) and all N SyncGroups answered. Each request is a pre-encoded frame; its
cost is the dispatcher's (header, kio decode, handler, domain) plus encoding its answer. Also
prints the cost of encoding the GroupMetadata record of N members (the log does it once per
sync). Prints process CPU (median over --reps). To measure an older tree (`python -m bench.peers
snapshot DIR`), run this file by path so that DIR's packages are the ones imported, interleaving
runs of both trees:

    PYTHONPATH=DIR /work/main/.venv/bin/python /work/main/bench/bench_rebalance_cpu.py --sizes 500
    PYTHONPATH=/work/main /work/main/.venv/bin/python /work/main/bench/bench_rebalance_cpu.py --sizes 500
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import statistics
import struct
import time
from typing import Any

from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.join_group.v5.response import JoinGroupResponse
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.serial import entity_reader
from kio.static.primitive import i32, i32Timedelta

from coordinator import record_codec
from coordinator.app import build_dispatcher
from coordinator.config import Config
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.log_setup import configure_logging
from coordinator.net.dispatch import Deferred, Dispatcher
from coordinator.records import GroupMetadataRecord
from coordinator.runtime.shard import GroupCoordinator, GroupSettings
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog
from coordinator.services import Node, Services
from protocol.codec import encode_request

SUBSCRIPTION = struct.pack(">hi", 0, 1) + struct.pack(">h", 5) + b"bench" + struct.pack(">i", -1)
ASSIGNMENT = struct.pack(">hii", 0, 0, -1)


def _ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def _frame(request: Any) -> bytes:
    cls = type(request)
    return encode_request(int(cls.__api_key__), int(cls.__version__), bool(cls.__flexible__), 1, "bench",
                          request)[4:]


def join_frame(group: str, member_id: str) -> bytes:
    return _frame(JoinGroupRequest(
        group_id=group, session_timeout=_ms(10000), rebalance_timeout=_ms(60000), member_id=member_id,
        group_instance_id=None, protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION),)))


def sync_frame(group: str, generation: int, member_id: str, members: list[str] | None = None) -> bytes:
    assignments = tuple(SyncGroupRequestAssignment(member_id=m, assignment=ASSIGNMENT) for m in members or ())
    return _frame(SyncGroupRequest(group_id=group, generation_id=i32(generation), member_id=member_id,
                                   group_instance_id=None, assignments=assignments))


class Rig:
    """The real dispatcher over a MemoryLog and a fake clock (timers fire only when advanced)."""

    def __init__(self) -> None:
        config = Config.load(overrides={"log.dirs": "/nonexistent-unused"}, environ={})
        node = Node(config.node_id, "bench-cluster-id-000000", host="127.0.0.1", port=9092)
        self.services = Services(config, node, TopicCatalog(node.cluster_id, config.offsets_topic_num_partitions))
        self.log = MemoryLog(auto=False)
        self.clock = FakeScheduler()
        self.services.groups = GroupCoordinator(GroupSettings(initial_rebalance_delay_ms=0), self.clock, self.log)
        self.dispatcher = build_dispatcher(self.services)

    def send(self, frames: list[bytes]) -> list[Any]:
        return [self.dispatcher.dispatch(frame, "127.0.0.1", 1) for frame in frames]

    @staticmethod
    async def answers(sent: list[Any]) -> list[bytes]:
        """The encoded answers; waits for delayed ones as the server's event loop does."""
        out = []
        for item in sent:
            if isinstance(item, Deferred):
                await item.future
                item = Dispatcher.finish(item)
            out.append(item)
        return out


def join_answer(frame: bytes) -> JoinGroupResponse:
    return entity_reader(JoinGroupResponse)(frame, 8)[0]


async def one_rebalance(size: int, group: str) -> tuple[float, float, float]:
    """(join phase, sync phase, GroupMetadata record encode) CPU seconds for one rebalance of `size`."""
    rig = Rig()
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
    record_codec.encode(group_record)
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
