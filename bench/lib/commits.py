"""OffsetCommit v7 outside group management (generation -1, no member id), as the commit benchmarks send
it: bench_offsets and bench_memory over the wire, the in-process profiles of the commit path."""

from __future__ import annotations

import struct

from kio.schema.offset_commit.v7.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.static.primitive import i32, i64

from bench.lib.compare import PIPELINED, Mode
from bench.lib.loadgen import Workload
from bench.lib.wire import request_frame

TOPIC = "bench-offsets"
PARTITIONS = 10
FRAMES_PER_CONNECTION = 64


def commit_request(group: str, topics: dict[str, int], offset: int) -> OffsetCommitRequest:
    """One offset for partitions 0..n-1 of every topic in `topics` (name -> n)."""
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=i32(-1), member_id="", group_instance_id=None,
        topics=tuple(OffsetCommitRequestTopic(name=name, partitions=tuple(
            OffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(offset),
                                         committed_leader_epoch=i32(-1), committed_metadata="")
            for p in range(partitions))) for name, partitions in topics.items()))


def commit_frames(connection: int) -> list[bytes]:
    """The frames connection `connection` sends: its own group, 1 topic x PARTITIONS, offsets 1000 on."""
    group = f"bench-offsets-{connection}"
    return [request_frame(commit_request(group, {TOPIC: PARTITIONS}, 1000 + i), correlation_id=i + 1)
            for i in range(FRAMES_PER_CONNECTION)]


def commit_check(body: bytes) -> None:
    """OffsetCommit v7 answer (header v0): correlation, throttle, topics[name, partitions[index, error]]."""
    pos = 8
    (topics,) = struct.unpack_from(">i", body, pos)
    pos += 4
    for _ in range(topics):
        (n,) = struct.unpack_from(">h", body, pos)
        pos += 2 + n
        (parts,) = struct.unpack_from(">i", body, pos)
        pos += 4
        for _ in range(parts):
            _index, code = struct.unpack_from(">ih", body, pos)
            pos += 6
            if code != 0:
                raise ValueError(f"OffsetCommit answered error code {code}")


def commit_workload(seconds: float, mode: Mode = PIPELINED) -> Workload:
    """Every connection its own group's frames (so several offsets partitions take part), checked answers."""
    per_connection = [commit_frames(c) for c in range(mode.connections)]
    return Workload(per_connection[0], connections=mode.connections, in_flight=mode.in_flight, duration=seconds,
                    warmup=1.0, check=commit_check, frames_for=lambda c: per_connection[c])
