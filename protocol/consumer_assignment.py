"""The consumer protocol's assignment (ConsumerProtocolAssignment): which topic partitions a member of a
"consumer" group was given, read with kio's schema of it. Used by the groups command and the console's views."""

from __future__ import annotations

import struct
from typing import Any

from kio.index import load_entity_module
from kio.serial import entity_reader
from kio.static.constants import EntityType

_I16 = struct.Struct(">h")
TopicPartition = tuple[str, int]


def decode_assignment(data: bytes | None) -> tuple[TopicPartition, ...]:
    """The topic-partitions of a ConsumerProtocolAssignment (int16 version, then the struct).

    Every version (0-3) has the same fields, and a newer one starts with them, so a version above
    the newest kio knows is read as that one. Bytes that are not an assignment (a group of another
    protocol type, a member still joining) give no partitions rather than an error: describe shows
    what it can.
    """
    if not data or len(data) < 2:
        return ()
    (version,) = _I16.unpack_from(data, 0)
    if version < 0:
        return ()
    module = load_entity_module("consumer_protocol_assignment", min(version, 3), EntityType.data)
    cls: Any = module.ConsumerProtocolAssignment
    try:
        entity, _size = entity_reader(cls)(data, 2)
    except Exception:  # kio raises many types for bytes it cannot read
        return ()
    return tuple(sorted((str(tp.topic), int(p)) for tp in entity.assigned_partitions for p in tp.partitions))
