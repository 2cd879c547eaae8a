"""Helpers for the Spark job and snapshot tests: writing logs, a reference replay."""

from __future__ import annotations

import asyncio
import os
import struct

from storage.dump import iter_log_records
from storage.log import PartitionLog
from storage.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)


def offsets_dir(root: str, partition: int) -> str:
    return os.path.join(root, f"__consumer_offsets-{partition}")


def commit(group, topic, partition, offset, ts, metadata="", expire=-1, epoch=-1):
    """(key bytes, value bytes, record timestamp) of an OffsetCommit record."""
    return (encode_key(OffsetCommitKey(group, topic, partition)),
            encode_value(OffsetCommitValue(offset, metadata, ts, epoch, expire)), ts)


def delete_offset(group, topic, partition, ts=0):
    return (encode_key(OffsetCommitKey(group, topic, partition)), None, ts)


def group_meta(group, value, ts=0):
    return (encode_key(GroupMetadataKey(group)), encode_value(value), ts)


def delete_group(group, ts=0):
    return (encode_key(GroupMetadataKey(group)), None, ts)


def write_log(path: str, batches, segment_bytes: int = 1 << 30) -> None:
    """Append each batch (a list of record tuples) with the project's PartitionLog."""
    async def go():
        log = PartitionLog.open(path, segment_bytes=segment_bytes, flush_policy="none")
        for batch in batches:
            log.append_records(batch)
        await log.flush()
        await log.close()
    asyncio.run(go())


def replay(paths):
    """Reference replay: latest value per key, tombstones delete. Returns
    (groups {id: GroupMetadataValue|None}, offsets {OffsetCommitKey: OffsetCommitValue})."""
    state = {}
    for path in paths if isinstance(paths, (list, tuple)) else [paths]:
        for _, key, value in iter_log_records(path):
            _, k = decode_key(key)
            if value is None:
                state.pop(k, None)
            else:
                state[k] = decode_value(k, value)[1]
    groups = {k.group: v for k, v in state.items() if isinstance(k, GroupMetadataKey)}
    offsets = {k: v for k, v in state.items() if isinstance(k, OffsetCommitKey)}
    for k in offsets:
        groups.setdefault(k.group, None)  # Kafka: an unknown group with offsets is a simple group
    return groups, offsets


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def encode_subscription(topics, version: int = 0, user_data: bytes | None = None,
                        owned_partitions=(), generation_id: int = -1,
                        rack_id: str | None = None) -> bytes:
    """A ConsumerProtocolSubscription's bytes: the inverse of rules.consumer_protocol.decode_subscription
    (the server only decodes them; clients write them)."""
    out = bytearray(_I16.pack(version))

    def string(s: str | None) -> None:
        if s is None:
            out.extend(_I16.pack(-1))
        else:
            raw = s.encode()
            out.extend(_I16.pack(len(raw)) + raw)

    out += _I32.pack(len(topics))
    for t in topics:
        string(t)
    out += _I32.pack(-1) if user_data is None else _I32.pack(len(user_data)) + user_data
    if version >= 1:
        out += _I32.pack(len(owned_partitions))
        for topic, parts in owned_partitions:
            string(topic)
            out += _I32.pack(len(parts)) + b"".join(_I32.pack(p) for p in parts)
    if version >= 2:
        out += _I32.pack(generation_id)
    if version >= 3:
        string(rack_id)
    return bytes(out)
