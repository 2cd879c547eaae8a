"""The metadata hash of a modern group (KIP-1101, Kafka 4.1+): one int64 that changes when a subscribed topic's id,
name, partition count or partition racks change, stored in ShareGroupMetadataValue.MetadataHash (and the consumer
groups' ConsumerGroupMetadataValue.MetadataHash): Kafka's group-coordinator Utils.computeTopicHash and
computeGroupHash, byte for byte.

Both feed hash4j's streaming XXH3-64 (seed 0), whose value is XXH3-64 of the bytes put into it: integers
little-endian, a String as its UTF-16 code units (little-endian) followed by their count as an int. A topic:
magic byte 0, the topic id's most and least significant longs, the name, the partition count, then per partition
its index and its replicas' racks sorted, each as its length (int) then the string. A group: 0 without topics,
else the topic hashes as longs in the order of their topic names (Java's String order: UTF-16 code units).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping

import xxhash

TOPIC_HASH_MAGIC_BYTE = 0
_INT = struct.Struct("<i")
_LONG = struct.Struct("<q")
_ID = struct.Struct("<QQ")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _put_string(out: bytearray, value: str) -> None:
    units = value.encode("utf-16-le", "surrogatepass")
    out += units
    out += _INT.pack(len(units) // 2)


def _java_order(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def topic_hash(topic_id: uuid.UUID, name: str, partitions: int,
               racks: Callable[[int], list[str]] | None = None) -> int:
    """Utils.computeTopicHash of a topic that exists; `racks(partition)`: its replicas' racks (none by default)."""
    out = bytearray((TOPIC_HASH_MAGIC_BYTE,))
    out += _ID.pack(topic_id.int >> 64, topic_id.int & 0xFFFFFFFFFFFFFFFF)
    _put_string(out, name)
    out += _INT.pack(partitions)
    for index in range(partitions):
        out += _INT.pack(index)
        for rack in sorted(racks(index) if racks is not None else (), key=_java_order):
            out += _INT.pack(len(rack.encode("utf-16-le", "surrogatepass")) // 2)
            _put_string(out, rack)
    return _signed(xxhash.xxh3_64_intdigest(bytes(out)))


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    """Utils.computeGroupHash: 0 for no topic, else XXH3-64 of the topic hashes in the order of their names."""
    if not topic_hashes:
        return 0
    stream = b"".join(_LONG.pack(topic_hashes[name]) for name in sorted(topic_hashes, key=_java_order))
    return _signed(xxhash.xxh3_64_intdigest(stream))


def subscribed_hash(names: set[str], topics: Mapping[str, tuple[uuid.UUID, int]]) -> int:
    """ModernGroup.computeMetadataHash: the group hash over the subscribed topics that exist."""
    return group_hash({name: topic_hash(topics[name][0], name, topics[name][1]) for name in names if name in topics})
