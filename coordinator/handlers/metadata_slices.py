"""Metadata answers listing many topics, built and encoded in slices that yield to the loop.

A Metadata request may name any number of topics (200,000 names in a 5 MB request took
~0.8 s of the event loop to answer, after ~0.5 s to decode). Past SLICE topics, the
topic entries are built and encoded SLICE per loop turn with the compiled encoder of
the topic struct, and spliced into the encoding of the response without topics. The
bytes are those of the generic encoder (tests compare every version).
"""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.build import _shape, build
from protocol.codec import Encoded
from protocol.encoder import uvarint, writer_for

SLICE = 20_000  # topics built and encoded per loop turn
FLEXIBLE_FROM = 9
CLUSTER_OPERATIONS_IN = range(8, 11)  # cluster_authorized_operations (int32) follows the topics


async def encode_sliced(cls: type, version: int, head: dict, topics: list[dict]) -> Encoded:
    topic_cls = _shape(cls)["topics"][0]
    assert topic_cls is not None
    write_topic = writer_for(topic_cls)
    out = bytearray()
    for start in range(0, len(topics), SLICE):
        for entry in topics[start:start + SLICE]:
            write_topic(build(topic_cls, **entry), out)
        await asyncio.sleep(0)
    # The topics array is the last field but for cluster_authorized_operations (v8-v10) and
    # the tagged fields (v9+): splice the entries in where the empty array's count is.
    shell: Any = Encoded.of(build(cls, **head, topics=[]))
    flexible = version >= FLEXIBLE_FROM
    tail = len(shell) - (4 if version in CLUSTER_OPERATIONS_IN else 0) - (1 if flexible else 0)
    count = uvarint(len(topics) + 1) if flexible else len(topics).to_bytes(4, "big")
    return Encoded(shell[:tail - (1 if flexible else 4)] + count + out + shell[tail:])
