"""Helpers for retention and log-start tests through the data plane (in process, fake clock)."""

from __future__ import annotations

import os
import time

from protocol.apis import ApiKey
from storage.batch import build_batch
from storage.log import PartitionLog
from tests.support.data_plane import Plane, batch, req

SMALL = "200"  # segment.bytes: two one-record batches per segment


def log_files(path: str) -> list[str]:
    return sorted(n for n in os.listdir(path) if n.endswith(".log"))


async def filled_log(path: str, batches: int = 6) -> PartitionLog:
    lg = PartitionLog.open(path, segment_bytes=int(SMALL))
    for i in range(batches):
        await lg.append(batch(b"v%d" % i, ts=1000 + i))
    return lg


async def produce_n(plane: Plane, n: int, topic: str = "t", ts: int | None = None, keyed: bool = False) -> None:
    """`keyed`: each record with a key (a compacted topic refuses records without one)."""
    ts = int(time.time() * 1000) if ts is None else ts  # now: the default 7-day retention.ms keeps them
    for i in range(n):
        records = build_batch([(b"k%d" % i, b"r%d" % i, ts + i)]) if keyed else batch(b"r%d" % i, ts=ts + i)
        assert (await plane.produce(topic, 0, records)).error_code == 0


def list_offsets_for(topic: str, timestamp: int):
    return req(ApiKey.LIST_OFFSETS, 9, replica_id=-1, isolation_level=0, topics=[
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp, "current_leader_epoch": -1}]}])


def list_offsets(timestamp: int):
    return list_offsets_for("t", timestamp)
