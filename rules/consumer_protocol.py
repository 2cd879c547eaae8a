"""ConsumerProtocolSubscription (v0-v3): the member metadata of "consumer" groups.

Offset expiry (KIP-211) needs the topics a Stable consumer group subscribes to. The
bytes stored in a GroupMetadataValue member's ``subscription`` are an int16 version
followed by the struct (clients/src/main/resources/common/message/
ConsumerProtocolSubscription.json)::

    v0+  topics           []string   (int32 count, int16-length UTF-8 each)
    v0+  user_data        nullable bytes (int32 length, -1 = null)
    v1+  owned_partitions []{topic string, partitions []int32}
    v2+  generation_id    int32 (default -1)
    v3+  rack_id          nullable string

No version is flexible. Kafka's ClassicGroup.computeSubscribedTopics parses every
version with the v0 schema (v0 is a prefix of all of them, so unknown future versions
still yield their topics); ``subscribed_topics`` does the same. In rules/, not
``protocol/``, so the Spark jobs (which import no protocol/) and the server share it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal, overload

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class SubscriptionError(ValueError):
    """The bytes are not a ConsumerProtocolSubscription (Kafka: SchemaException)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def fixed(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.buf):
            raise SubscriptionError(f"truncated at byte {self.pos}")
        (value,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return value

    def raw(self, length: int) -> bytes:
        end = self.pos + length
        if length < 0 or end > len(self.buf):
            raise SubscriptionError(f"length {length} at byte {self.pos} runs past the end")
        out, self.pos = bytes(self.buf[self.pos:end]), end
        return out

    @overload
    def string(self, nullable: Literal[False] = False) -> str: ...
    @overload
    def string(self, nullable: bool) -> str | None: ...

    def string(self, nullable: bool = False) -> str | None:
        length = self.fixed(_I16)
        if length < 0:
            if nullable:
                return None
            raise SubscriptionError(f"null string at byte {self.pos}")
        try:
            return self.raw(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SubscriptionError(f"string is not UTF-8: {exc}") from None

    def count(self) -> int:
        n = self.fixed(_I32)
        if n < 0 or n > len(self.buf) - self.pos:
            raise SubscriptionError(f"invalid array length {n}")
        return n


def decode_subscription(data: bytes) -> Subscription:
    """Full decode of v0-v3 (a newer version is read as its v3 prefix)."""
    r = _Reader(data)
    version = r.fixed(_I16)
    if version < 0:
        raise SubscriptionError(f"negative version {version}")
    topics = tuple(r.string() for _ in range(r.count()))
    n = r.fixed(_I32)
    user_data = None if n < 0 else r.raw(n)
    owned: tuple = ()
    generation, rack = -1, None
    if version >= 1:
        owned = tuple((r.string(), tuple(r.fixed(_I32) for _ in range(r.count())))
                      for _ in range(r.count()))
    if version >= 2:
        generation = r.fixed(_I32)
    if version >= 3:
        rack = r.string(nullable=True)
    return Subscription(version, topics, user_data, owned, generation, rack)


def subscribed_topics(data: bytes) -> list[str]:
    """Topics of a subscription, parsed with the v0 prefix as Kafka does."""
    r = _Reader(data)
    r.fixed(_I16)
    return [r.string() for _ in range(r.count())]



def protocol_version(data: bytes) -> int:
    """ConsumerProtocol.deserializeVersion: the int16 that starts a subscription or an assignment."""
    if len(data) < 2:
        raise SubscriptionError("no version")
    return _I16.unpack_from(data, 0)[0]


#: ConsumerProtocolAssignment's newest version: a newer one asked for is written as this one
#: (ConsumerProtocol.checkAssignmentVersion); v0-v3 have the same fields
ASSIGNMENT_HIGHEST_VERSION = 3


def encode_assignment(partitions: dict[str, list[int]] | list[tuple[str, list[int]]], version: int,
                      user_data: bytes | None = None) -> bytes:
    """ConsumerProtocol.serializeAssignment: int16 version, then [topic, [partition]] and nullable user data."""
    if version < 0:
        raise SubscriptionError(f"negative version {version}")
    items = list(partitions.items()) if isinstance(partitions, dict) else list(partitions)
    out = [_I16.pack(min(version, ASSIGNMENT_HIGHEST_VERSION)), _I32.pack(len(items))]
    for topic, numbers in items:
        name = topic.encode()
        out += [_I16.pack(len(name)), name, _I32.pack(len(numbers))]
        out += [_I32.pack(n) for n in numbers]
    out.append(_I32.pack(-1) if user_data is None else _I32.pack(len(user_data)) + user_data)
    return b"".join(out)


def decode_assignment(data: bytes) -> tuple[int, tuple[tuple[str, tuple[int, ...]], ...], bytes | None]:
    """ConsumerProtocol.deserializeConsumerProtocolAssignment, strictly: (version, partitions, user data).
    SubscriptionError for bytes that are not one, the empty assignment of a member that never synced included
    (Kafka's SchemaException on a buffer underflow)."""
    r = _Reader(data)
    version = r.fixed(_I16)
    if version < 0:
        raise SubscriptionError(f"negative version {version}")
    partitions = tuple((r.string(), tuple(r.fixed(_I32) for _ in range(r.count()))) for _ in range(r.count()))
    n = r.fixed(_I32)
    return version, partitions, (None if n < 0 else r.raw(n))


TopicPartition = tuple[str, int]


def assigned_partitions(data: bytes | None) -> tuple[TopicPartition, ...]:
    """The topic-partitions of a ConsumerProtocolAssignment, sorted, for the views (the groups command, the
    console): `decode_assignment` read leniently. Bytes that are not an assignment (a group of another protocol
    type, a member still joining, garbage) give no partitions rather than an error: a describe shows what it
    can."""
    if not data:
        return ()
    try:
        _version, partitions, _user_data = decode_assignment(data)
    except SubscriptionError:
        return ()
    return tuple(sorted((topic, partition) for topic, numbers in partitions for partition in numbers))
