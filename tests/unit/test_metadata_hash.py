"""Kafka's group metadata hash (Utils.computeTopicHash / computeGroupHash of Kafka 4.1+, hash4j's streaming XXH3-64,
seed 0): the stream built here by hand from Kafka's description (as its UtilsTest builds it), XXH3-64's known
value of the empty input, and what changes the hash."""

from __future__ import annotations

import struct
import uuid

import xxhash

from coordinator.groups.metadata_hash import group_hash, subscribed_hash, topic_hash

FOO = uuid.UUID("0123456789abcdef0011223344556677")


def _signed(value: int) -> int:
    return struct.unpack("<q", struct.pack("<Q", value))[0]


def test_xxh3_is_the_standard_one():
    assert xxhash.xxh3_64_intdigest(b"") == 0x2D06800538D394C2  # XXH3_64bits("") of the reference implementation


def test_topic_hash_stream():
    stream = (b"\x00" + struct.pack("<q", _signed(0x0123456789ABCDEF)) + struct.pack("<q", 0x0011223344556677)
              + "foo".encode("utf-16-le") + struct.pack("<i", 3)  # putString: UTF-16 units, then their count
              + struct.pack("<i", 2)  # partitions
              + struct.pack("<i", 0) + struct.pack("<i", 2) + "r1".encode("utf-16-le") + struct.pack("<i", 2)
              + struct.pack("<i", 2) + "r2".encode("utf-16-le") + struct.pack("<i", 2)
              + struct.pack("<i", 1))
    expected = _signed(xxhash.xxh3_64_intdigest(stream))
    assert topic_hash(FOO, "foo", 2, lambda p: ["r2", "r1"] if p == 0 else []) == expected


def test_group_hash_orders_by_topic_name_and_follows_the_topics():
    hashes = {"foo": topic_hash(FOO, "foo", 2), "bar": topic_hash(uuid.UUID(int=1), "bar", 1)}
    stream = struct.pack("<q", hashes["bar"]) + struct.pack("<q", hashes["foo"])
    assert group_hash(hashes) == _signed(xxhash.xxh3_64_intdigest(stream))
    assert group_hash({}) == 0
    topics = {"foo": (FOO, 2), "bar": (uuid.UUID(int=1), 1)}
    base = subscribed_hash({"foo", "bar", "missing"}, topics)
    assert base == group_hash(hashes)  # topics that do not exist are left out
    assert subscribed_hash({"foo", "bar"}, {**topics, "foo": (FOO, 3)}) != base  # grew
    assert subscribed_hash({"foo", "bar"}, {**topics, "foo": (uuid.UUID(int=7), 2)}) != base  # recreated
    assert subscribed_hash(set(), topics) == 0
