"""Hand-built __consumer_offsets logs with transactions: segment files of raw batches (offsets assigned here),
for the cleaner and Spark job tests."""

from __future__ import annotations

import os
import struct

from storage.batch import build_batch
from storage.control_records import build_marker_batch
from tests.support.spark import commit

_BASE = struct.Struct(">q")


def plain(topic_partition: int, offset: int, ts: int = 1000, group: str = "g") -> bytes:
    return build_batch([commit(group, "t", topic_partition, offset, ts)])


def txn(pid: int, topic_partition: int, offset: int, ts: int = 1000, group: str = "g") -> bytes:
    return build_batch([commit(group, "t", topic_partition, offset, ts)], producer_id=pid, producer_epoch=0,
                       is_transactional=True)


def marker(pid: int, commit_: bool, ts: int = 1000) -> bytes:
    return build_marker_batch(pid, 0, commit_, 0, ts)


def at(base: int, batch: bytes) -> bytes:
    """`batch` with base offset `base` (outside the CRC)."""
    return _BASE.pack(base) + batch[8:]


def segment_bytes(first: int, batches: list[bytes]) -> bytes:
    """One-record batches placed from offset `first` on."""
    return b"".join(at(first + i, b) for i, b in enumerate(batches))


def write_segments(path: str, segments: list[list[bytes]]) -> list[int]:
    """Segment files of one-record batches, offsets from 0; returns the base offsets."""
    os.makedirs(path, exist_ok=True)
    bases, offset = [], 0
    for batches in segments:
        bases.append(offset)
        with open(os.path.join(path, f"{offset:020d}.log"), "wb") as f:
            f.write(segment_bytes(offset, batches))
        offset += len(batches)
    return bases
