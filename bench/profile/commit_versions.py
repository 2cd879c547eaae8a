"""CPU cost of one OffsetCommit through the dispatcher, per request version (in-process, no sockets).

    .venv/bin/python -m bench.profile.commit_versions [--requests 20000] [--reps 5] [--versions 0,1,2,7,8]

The real dispatcher and handlers over a MemoryLog (no disk): each request is a pre-encoded
OffsetCommit of one topic x 10 partitions, generation -1 and no member id (a commit outside group
management, as bench/bench_offsets.py sends), cycling over 16 groups. A request's cost is
dispatch (header, kio decode, validation, records, the write's hand-off) plus completing its write
and encoding the answer. Versions the tree under test does not serve are skipped; to measure
another tree, run it from each tree in turn (bench/profile/README.md). Prints the median µs per
request over `--reps` runs per version.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from kio.static.primitive import i32, i64

from bench.lib.inprocess import DispatcherRig
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build
from protocol.codec import encode_request

GROUPS = 16
PARTITIONS = 10


def commit_frame(version: int, group: str, offset: int) -> bytes:
    """A request frame without its size prefix, built with protocol/build.py for any version's fields."""
    spec = API_TABLE[ApiKey.OFFSET_COMMIT]
    request = build(spec.requests[version], group_id=group, generation_id_or_member_epoch=i32(-1),
                    generation_id=i32(-1), member_id="", group_instance_id=None, topics=[{
                        "name": "bench-topic", "partitions": [{
                            "partition_index": i32(p), "committed_offset": i64(offset),
                            "committed_leader_epoch": i32(-1),
                            "commit_timestamp": i64(-1), "committed_metadata": ""} for p in range(PARTITIONS)]}])
    return encode_request(ApiKey.OFFSET_COMMIT, version, spec.request_is_flexible(version), 1, "bench", request)[4:]


async def run(version: int, requests: int) -> float:
    """µs per request, all of dispatch + write completion + answer encoding."""
    rig = DispatcherRig()
    dispatcher, log = rig.dispatcher, rig.log
    frames = [commit_frame(version, f"bench-group-{g}", 7) for g in range(GROUPS)]
    finish = dispatcher.finish
    start = time.perf_counter()
    for n in range(requests):
        deferred = dispatcher.dispatch(frames[n % GROUPS], "127.0.0.1", 1)
        log.complete()
        finish(deferred)
        if n % 1000 == 999:
            log.records.clear()
    return (time.perf_counter() - start) / requests * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--versions", default="0,1,2,7,8")
    args = parser.parse_args()
    spec = API_TABLE[ApiKey.OFFSET_COMMIT]
    versions = [v for v in map(int, args.versions.split(",")) if spec.supports(v)]
    results: dict[int, list[float]] = {v: [] for v in versions}
    for _ in range(args.reps):  # versions interleaved within each rep
        for v in versions:
            results[v].append(asyncio.run(run(v, args.requests)))
    for v in versions:
        print(f"OffsetCommit v{v}: {statistics.median(results[v]):.2f} µs/request "
              f"(min {min(results[v]):.2f}, max {max(results[v]):.2f}; {args.reps} x {args.requests} requests, "
              f"{PARTITIONS} partitions each)")


if __name__ == "__main__":
    main()
