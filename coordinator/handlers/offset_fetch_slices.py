"""OffsetFetch requests naming many partitions, answered in slices that yield to the loop.

Kafka sets no limit on the partitions an OffsetFetch names; a 4 MB request names a million,
and reading them, building a kio object per answer and encoding those took ~4.4 s of the
event loop in one piece. A request naming more than SLICE partitions is answered here
instead: the offsets of BATCH partitions at a time are read and encoded straight into the
response's bytes, and the loop is let go as sliced_encoding.Turns says (other connections
are served in between). Each partition's answer is a committed offset at some moment during
the request, as if the partitions were fetched in several requests. The bytes are those of
the generic encoder (tests compare them).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple

import structlog
from kio.schema.errors import ErrorCode

from coordinator.handlers.sliced_encoding import BATCH, Turns, array_count, string_bytes  # BATCH: per step
from coordinator.offsets.manager import FetchPartition
from protocol.codec import RoomyBody

log = structlog.get_logger("coordinator.offsets.manager")


# Past this many partitions a request is answered here (offset_fetch.py asks): from ~1,000 on this path costs
# less than the generic one (1.2 against 2.2 µs a partition), whose answer is one step of the loop.
SLICE = 2_000
THROTTLE_FROM, TOP_ERROR_FROM, EPOCH_FROM, FLEXIBLE_FROM, GROUPS_FROM = 3, 2, 5, 6, 8
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


class TopicSlice(NamedTuple):
    """What coordinator.offsets.fetch reads of a requested topic."""

    name: str
    partition_indexes: Any


def requested_partitions(version: int, request: Any) -> int:
    groups = request.groups if version >= GROUPS_FROM else [request]
    return sum(len(t.partition_indexes) for g in groups for t in (g.topics or ()))


class _Writer:
    """The response's encodings for one version (flexible: compact lengths and empty tags)."""

    def __init__(self, version: int) -> None:
        self.flexible = version >= FLEXIBLE_FROM
        head = ">iqi" if version >= EPOCH_FROM else ">iq"
        self._head = struct.Struct(head).pack
        self._with_epoch = version >= EPOCH_FROM
        self.tags = b"\x00" if self.flexible else b""

    def count(self, n: int) -> bytes:
        return array_count(n, self.flexible)

    def string(self, text: str | None) -> bytes:
        return string_bytes(None if text is None else text.encode(), self.flexible)

    def partition(self, out: bytearray, row: FetchPartition) -> None:
        index, offset, epoch, metadata, code = row
        out += self._head(index, offset, epoch) if self._with_epoch else self._head(index, offset)
        out += self.string(metadata)
        out += _I16.pack(code.value)
        out += self.tags


#: (group id, topics) -> offsets.fetch's rows
Rows = Callable[[str, "list[TopicSlice] | None"], list[tuple[str, list[FetchPartition]]]]


async def _topics(w: _Writer, out: bytearray, group_id: str, topics: Any, rows_of: Rows,
                  per_partition_code: ErrorCode | None, turns: Turns) -> None:
    """The topics array of one group (or of a v0-v7 response), BATCH partitions per step."""
    out += w.count(len(topics))
    for topic in topics:
        out += w.string(topic.name)
        indexes = topic.partition_indexes
        out += w.count(len(indexes))
        for start in range(0, len(indexes), BATCH):
            chunk = indexes[start:start + BATCH]
            if per_partition_code is not None:  # v1: a group error on every partition
                rows = [(i, -1, -1, "", per_partition_code) for i in chunk]
            else:
                ((_, rows),) = rows_of(group_id, [TopicSlice(topic.name, chunk)])
            for row in rows:
                w.partition(out, row)
            await turns.pause()
        out += w.tags


def _all(w: _Writer, out: bytearray, topics: list[tuple[str, list[FetchPartition]]]) -> None:
    out += w.count(len(topics))
    for name, rows in topics:
        out += w.string(name)
        out += w.count(len(rows))
        for row in rows:
            w.partition(out, row)
        out += w.tags


async def sliced_body(version: int, request: Any, group_error: Callable[[str], ErrorCode | None],
                      rows_of: Rows) -> RoomyBody:
    """The response body. `group_error(group id)` is the group-level refusal (or None);
    `rows_of` reads offsets; an exception from it answers UNKNOWN_SERVER_ERROR for the group,
    as the generic handler does."""
    w = _Writer(version)
    body = RoomyBody()
    out = body.buffer
    turns = Turns()
    if version >= THROTTLE_FROM:
        out += _I32.pack(0)
    if version >= GROUPS_FROM:
        out += w.count(len(request.groups))
        for group in request.groups:
            out += w.string(group.group_id)
            await _group_topics(w, out, version, group.group_id, group.topics, group_error, rows_of, turns)
            out += w.tags
    else:
        await _group_topics(w, out, version, request.group_id, request.topics, group_error, rows_of, turns)
    out += w.tags
    return body


async def _group_topics(w: _Writer, out: bytearray, version: int, group_id: str, topics: Any,
                        group_error: Callable[[str], ErrorCode | None], rows_of: Rows, turns: Turns) -> None:
    """One group's topics array followed by its error code (v2+), written to `out` (no copy of it is made:
    it can be tens of megabytes)."""
    code = group_error(group_id) or ErrorCode.none
    start = len(out)
    if code is ErrorCode.none:
        try:
            if topics is None:  # all the group's offsets: as committed, not sliced
                _all(w, out, rows_of(group_id, None))
            else:
                await _topics(w, out, group_id, topics, rows_of, None, turns)
        except Exception:
            log.exception("OffsetFetch failed", group=group_id)
            code = ErrorCode.unknown_server_error
            del out[start:]
    if code is not ErrorCode.none:
        if version >= TOP_ERROR_FROM:
            out += w.count(0)
        else:
            await _topics(w, out, group_id, topics or (), rows_of, code, turns)
    if version >= TOP_ERROR_FROM:
        out += _I16.pack(code.value)
