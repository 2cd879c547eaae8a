"""OffsetCommit requests whose records cannot fit the offsets log, refused before decoding.

Kafka writes a commit's records as one atomic batch and refuses a batch larger than the
offsets topic's max.message.bytes (message.max.bytes, 1048588 by default): the
CoordinatorRuntime throws RecordTooLargeException and every partition is answered
INVALID_COMMIT_OFFSET_SIZE (a group error found first wins, as Kafka validates the group
before it builds records). Here kio's reader would first build a Python object per
partition while holding the GIL (a 1M-partition, 18 MB commit: ~2 s with the event loop
stopped, then seconds more for records and the answer). So a commit frame larger than
SCAN_FROM bytes is walked on its raw bytes first, adding up a lower bound of its records'
size; the walk stops as soon as the bound passes the limit (at most ~limit/41 partitions),
and such a commit is answered from the raw bytes, a batch of partitions at a time (letting
the loop go as sliced_encoding.Turns says), without a record or a kio object. Anything the
walk does not like goes on to the normal path, which judges it. Smaller frames (where the
bound is meaningless anyway) are not walked.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from coordinator.handlers.sliced_encoding import BATCH, Turns, array_count, string_bytes  # BATCH: per step
from protocol.codec import Encoded
from protocol.header import HeaderError, read_uvarint

SCAN_FROM = 256 << 10  # bytes: smaller commits decode in ~30 ms
MAX_WALK = 200_000  # entries walked before the walk gives up (e.g. a frame of empty topics)
BATCH_OVERHEAD = 61  # record batch v2 header
# A record of key v1 (2 + group 2+n + topic 2+n + 4) and value v3 (2 + 8 + 4 + metadata 2+n + 8),
# with at least one byte for each of its 7 framing fields (length, attributes, timestamp and
# offset deltas, key and value lengths, header count).
RECORD_OVERHEAD = 10 + 24 + 7
UNKNOWN_TOPIC_OR_PARTITION = 3

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


class _Bytes:
    """A cursor over a request body, for the encodings OffsetCommit uses (raises IndexError,
    struct.error or HeaderError past the end)."""

    __slots__ = ("data", "pos", "flexible")

    def __init__(self, data: bytes, pos: int, flexible: bool) -> None:
        self.data, self.pos, self.flexible = data, pos, flexible

    def skip(self, n: int) -> None:
        self.pos += n
        if self.pos > len(self.data):
            raise IndexError("past the end")

    def int32(self) -> int:
        (value,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return value

    def uvarint(self) -> int:
        value, self.pos = read_uvarint(self.data, self.pos)
        return value

    def string(self) -> bytes | None:
        if self.flexible:
            n = self.uvarint() - 1
        else:
            (n,) = _I16.unpack_from(self.data, self.pos)
            self.pos += 2
        if n < 0:
            return None
        start = self.pos
        self.skip(n)
        return self.data[start:self.pos]

    def count(self) -> int:
        if self.flexible:
            return self.uvarint() - 1
        return self.int32()

    def tags(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.skip(self.uvarint())


@dataclass(frozen=True)
class CommitScan:
    group_id: str
    generation: int
    member_id: str
    instance_id: str | None
    topics_at: int  # where the topics array starts


def _partition_fixed(version: int) -> int:
    """Bytes of a partition's fixed fields: index, offset, [v6+ leader epoch], [v1 commit timestamp]."""
    return 12 + (4 if version >= 6 else 0) + (8 if version == 1 else 0)


def scan_oversized(body: bytes, pos: int, version: int, flexible: bool, limit: int,
                   max_metadata: int) -> CommitScan | None:
    """The commit's group fields if its records surely pass `limit` bytes, else None (also
    for a body the walk cannot read: the normal path judges it). Partitions of topics or
    indexes this server does not know count too: a frame of a million partitions of an
    unknown topic must not reach kio's reader either (refusal_body answers them
    UNKNOWN_TOPIC_OR_PARTITION). Kafka refuses those partitions before
    its coordinator sizes the rest, so where the known ones alone would fit, Kafka commits them
    and this refuses them (INVALID_COMMIT_OFFSET_SIZE): the one difference, kept for the guard."""
    try:
        cur = _Bytes(body, pos, flexible)
        group = cur.string() or b""
        generation, member = -1, b""
        if version >= 1:
            generation = cur.int32()
            member = cur.string() or b""
        instance = cur.string() if version >= 7 else None
        if 2 <= version <= 4:
            cur.skip(8)  # retention time
        topics_at = cur.pos
        fixed = _partition_fixed(version)
        bound, walked = BATCH_OVERHEAD, 0
        for _ in range(cur.count()):
            name = cur.string() or b""
            per_record = RECORD_OVERHEAD + len(group) + len(name)
            for _ in range(cur.count()):
                cur.skip(fixed)
                metadata = cur.string()
                cur.tags()
                size = 0 if metadata is None else len(metadata)
                if size <= max_metadata:  # a longer one may be refused alone, with no record
                    bound += per_record + size
                walked += 1
                if bound > limit:
                    return CommitScan(group.decode(), generation, member.decode(),
                                      None if instance is None else instance.decode(), topics_at)
                if walked > MAX_WALK:
                    return None
            cur.tags()
            walked += 1
        return None
    except (IndexError, struct.error, UnicodeDecodeError, HeaderError):
        return None


async def refusal_body(body: bytes, scan: CommitScan, version: int, flexible: bool, code: int,
                       counts: dict[str, int]) -> Encoded:
    """The response body answering `code` for every partition of the commit (but those of topics
    or partitions not in `counts`: UNKNOWN_TOPIC_OR_PARTITION), built from the raw request BATCH
    partitions at a time, letting the loop go as sliced_encoding.Turns says (other connections are
    served in between). Partitions are answered
    in request order (Kafka's response lists the unknown ones first)."""
    cur = _Bytes(body, scan.topics_at, flexible)
    fixed = _partition_fixed(version)
    out = bytearray()
    turns = Turns()
    if version >= 3:
        out += _I32.pack(0)  # throttle time
    tail = _I16.pack(code) + (b"\x00" if flexible else b"")
    unknown_tail = _I16.pack(UNKNOWN_TOPIC_OR_PARTITION) + (b"\x00" if flexible else b"")
    topics = cur.count()
    out += array_count(topics, flexible)
    done = 0
    for _ in range(topics):
        name = cur.string() or b""
        out += string_bytes(name, flexible)
        count = counts.get(name.decode(errors="replace"), 0)
        partitions = cur.count()
        out += array_count(partitions, flexible)
        for _ in range(partitions):
            start = cur.pos
            index = cur.int32()
            cur.skip(fixed - 4)
            cur.string()
            cur.tags()
            out += body[start:start + 4]  # partition index
            out += tail if 0 <= index < count else unknown_tail
            done += 1
            if done % BATCH == 0:
                await turns.pause()
        if flexible:
            out.append(0)
        cur.tags()
    if flexible:
        out.append(0)
    return Encoded(out)
