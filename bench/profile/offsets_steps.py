"""Per-request µs of each step of a durable OffsetCommit (1 topic x 10 partitions, v7),
in-process, for the code in the current directory (or PYTHONPATH=<snapshot>):

    .venv/bin/python -m bench.profile.offsets_steps [--repeat 300]

Each figure is the minimum over `--repeat` short timings (the machine is shared: the
minimum is the least disturbed), so compare two trees A B A B in one session rather
than across sessions. Steps: header parse, decode (protocol/bounds.py's count check, shown
alone too, then kio's reader), commit_records (the records and
their log tails, in one pass), Shard.write + resolve (replay_all, the write in flight,
PendingWrite) with a log that does nothing, encode_tails (what the log does for writes
that come without tails) + build_tail_batch, and dispatch -> handler -> write -> answer
in one (MemoryLog: no encoding, no fsync).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import struct
import timeit
from collections.abc import Callable

from bench.lib.commits import commit_frames
from bench.lib.inprocess import DispatcherRig
from coordinator.groups.settings import GroupSettings
from coordinator.net.dispatch import Dispatcher
from coordinator.offsets.manager import commit_records
from coordinator.records import log_codec
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from protocol import bounds
from protocol.apis import API_TABLE, ApiKey
from protocol.codec import decode_request
from protocol.header import parse_request_header
from storage.batch import build_tail_batch

BATCH = 512  # requests per timing of the whole path: 16 connections x 32 in flight


class _NullLog:
    """A RecordLog that keeps nothing: the write is resolved by the caller."""

    def append(self, partition: int, pending) -> None:
        pass


def _best(step: Callable[[], object], repeat: int, number: int = 30, per: int = 1) -> float:
    return min(timeit.repeat(step, number=number, repeat=repeat)) / number / per * 1e6


def measure(repeat: int) -> dict[str, float]:
    frame = commit_frames(0)[0][4:]
    spec = API_TABLE[ApiKey.OFFSET_COMMIT]
    _key, version, _correlation = struct.unpack_from(">hhi", frame)
    flexible = spec.request_is_flexible(version)
    header = parse_request_header(frame, flexible)
    request = decode_request(spec, version, frame, header.body_offset)
    check = bounds.checker(spec.requests[version])
    group = request.group_id
    records, _answer, _tails = commit_records(group, request.topics, 1_700_000_000_000, -1, 4096, True)
    shard = GroupCoordinator(GroupSettings(), FakeScheduler(), _NullLog()).shard_for(group)
    tails = log_codec.encode_tails(records) * 32

    def write() -> None:
        shard.write(records).resolve()

    def encode() -> None:
        log_codec.encode_tails(records)

    gc.collect()
    gc.freeze()
    out = {
        "header": _best(lambda: parse_request_header(frame, flexible), repeat),
        "decode (bounds check + kio)": _best(lambda: decode_request(spec, version, frame, header.body_offset), repeat),
        "  of which bounds check": _best(lambda: check(frame, header.body_offset), repeat),
        "commit_records (+ tails)": _best(lambda: commit_records(group, request.topics, 1, -1, 4096, True), repeat),
        "shard.write + resolve": _best(write, repeat),
        "encode_tails (writes without tails)": _best(encode, repeat),
        "build_tail_batch (per request of 32)": _best(lambda: build_tail_batch(tails, 1), repeat, 10, 32),
    }
    out["dispatch .. answer (MemoryLog)"] = asyncio.run(_whole_path(repeat))
    return out


async def _whole_path(repeat: int) -> float:
    harness = DispatcherRig()
    frames = [f[4:] for c in range(16) for f in commit_frames(c)[:BATCH // 16]]
    dispatch, log = harness.dispatcher.dispatch, harness.log

    def run() -> None:
        pending = [dispatch(f, "127.0.0.1", 1) for f in frames]
        log.complete()
        log.records.clear()
        for deferred in pending:
            Dispatcher.finish(deferred)

    run()
    gc.collect()
    gc.freeze()  # as the server does after start-up
    return _best(run, repeat, 1, len(frames))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    for step, us in measure(args.repeat).items():
        print(f"{step:38s} {us:6.2f} us per request")


if __name__ == "__main__":
    main()
