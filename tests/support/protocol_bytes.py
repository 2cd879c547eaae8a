"""Hand-built request bodies for the bounds and sliced-decode tests: primitive encoders, hostile counts,
the array-count bombs, and well-formed messages drawn by hypothesis."""

from __future__ import annotations

import struct

from hypothesis import assume, strategies as st
from kio.static.primitive import Records

from primitives.uvarint import encode_uvarint as uvarint
from protocol.apis import ApiKey
from protocol.encoder import encode

HOSTILE = 2**20

# kio registers strategies for its primitives but not for record-set bytes.
st.register_type_strategy(Records, st.one_of(st.none(), st.binary(max_size=64)).map(
    lambda b: None if b is None else Records(b)))


HOSTILE = 2**20


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def legacy(text: str) -> bytes:
    return i16(len(text)) + text.encode()


def compact(text: str) -> bytes:
    return uvarint(len(text) + 1) + text.encode()


def commit_v7(topics: list[tuple[str, bytes]]) -> bytes:
    body = legacy("group") + i32(1) + legacy("member") + i16(-1) + i32(len(topics))
    for name, partitions in topics:
        body += legacy(name) + partitions
    return body


def commit_v7_partition(index: int) -> bytes:
    return i32(index) + i64(42) + i32(-1) + legacy("")


def fetch_groups_v8(topics: bytes) -> bytes:
    return uvarint(2) + compact("g") + topics + b"\x00" + b"\x00"  # groups[g, topics], tags; require_stable


def well_formed(data: st.DataObject, cls: type) -> tuple[object, bytes]:
    """An entity of `cls` drawn by hypothesis, and its encoding."""
    entity = data.draw(st.from_type(cls))
    try:
        return entity, encode(entity)
    except Exception:  # a value the wire cannot carry (e.g. a string over 32767 bytes)
        assume(False)
        raise


BOMBS = {
    "compact 2^32-1 (the 25-byte Metadata v12)": (ApiKey.METADATA, 12, b"\xff\xff\xff\xff\x0f"),
    "legacy 2^31-1": (ApiKey.METADATA, 4, i32(2**31 - 1)),
    "nested legacy 2^31-1": (ApiKey.OFFSET_COMMIT, 7, commit_v7([("t", i32(2**31 - 1))])),
}
