"""Heartbeat request frames read by hand: header and body in one pass, no kio entity.

Heartbeat is the one request a busy coordinator gets most of (every member, every few
seconds), so its frame is parsed straight into a tuple (group_id, generation_id,
member_id, group_instance_id) by `heartbeat_reader(version)`. The reader handles only
the common shape and returns None for anything else: a non-ASCII client id, a string
of 127+ bytes in a flexible version, tagged fields, trailing bytes, a truncated or
malformed frame. The caller then runs the generic path (header + kio decode), which
answers or closes the connection exactly as for any other request, so the fast reader
never decides what malformed input means.

Frame layout (after the 4-byte size): api_key int16, api_version int16, correlation_id
int32, client_id int16-length string (null = -1), [v2 header: tagged fields]; body v0-3:
group_id string, generation_id int32, member_id string, [v3: group_instance_id nullable
string]; v4 (flexible): compact strings (uvarint length + 1) and a tagged-field section.
"""

from __future__ import annotations

from struct import Struct
from struct import error as StructError
from typing import Callable

_INT16 = Struct(">h")
_INT32_INT16 = Struct(">ih")
_INT32 = Struct(">i")
_CLIENT_ID_AT = 8  # api_key, api_version, correlation_id

HeartbeatFields = tuple[str, int, str, "str | None"]  # group_id, generation_id, member_id, group_instance_id
HeartbeatReader = Callable[[bytes], "HeartbeatFields | None"]

FIRST_INSTANCE_ID_VERSION = 3
FIRST_FLEXIBLE_VERSION = 4
LAST_KNOWN_VERSION = 4


def _client_id_end(frame: bytes) -> int:
    """Where the header's client id ends; -1 if it is not plain ASCII (which the generic path judges)."""
    (length,) = _INT16.unpack_from(frame, _CLIENT_ID_AT)
    pos = _CLIENT_ID_AT + 2
    if length > 0:
        return pos + length if frame[pos:pos + length].isascii() else -1
    return pos if length >= -1 else -1


def _legacy_reader(with_instance_id: bool) -> HeartbeatReader:
    def read(frame: bytes) -> HeartbeatFields | None:
        try:
            pos = _client_id_end(frame)
            if pos < 0:
                return None
            (length,) = _INT16.unpack_from(frame, pos)
            if length < 0:
                return None
            pos += 2
            end = pos + length
            group_id = frame[pos:end].decode()
            generation_id, length = _INT32_INT16.unpack_from(frame, end)
            if length < 0:
                return None
            pos = end + 6
            end = pos + length
            member_id = frame[pos:end].decode()
            instance_id = None
            if with_instance_id:
                (length,) = _INT16.unpack_from(frame, end)
                pos = end + 2
                if length >= 0:
                    end = pos + length
                    instance_id = frame[pos:end].decode()
                elif length == -1:
                    end = pos
                else:
                    return None
            if end != len(frame):
                return None
            return group_id, generation_id, member_id, instance_id
        except (StructError, UnicodeDecodeError):  # truncated, or not UTF-8
            return None

    return read


def _read_flexible(frame: bytes) -> HeartbeatFields | None:
    try:
        pos = _client_id_end(frame)
        if pos < 0:
            return None
        if frame[pos]:  # header tagged fields: only an empty section is common
            return None
        size = frame[pos + 1]  # compact string: length + 1 as one varint byte (< 0x80)
        if not 0 < size < 0x80:
            return None
        pos += 2
        end = pos + size - 1
        group_id = frame[pos:end].decode()
        (generation_id,) = _INT32.unpack_from(frame, end)
        size = frame[end + 4]
        if not 0 < size < 0x80:
            return None
        pos = end + 5
        end = pos + size - 1
        member_id = frame[pos:end].decode()
        size = frame[end]
        if size == 0:
            instance_id = None
            pos = end + 1
        elif size < 0x80:
            pos = end + 1
            end = pos + size - 1
            instance_id = frame[pos:end].decode()
            pos = end
        else:
            return None
        if frame[pos] or pos + 1 != len(frame):  # body tagged fields empty, nothing after them
            return None
        return group_id, generation_id, member_id, instance_id
    except (StructError, IndexError, UnicodeDecodeError):  # truncated, or not UTF-8
        return None


def heartbeat_reader(version: int) -> HeartbeatReader | None:
    """The hand reader for HeartbeatRequest `version`, or None for a version it does not know."""
    if not 0 <= version <= LAST_KNOWN_VERSION:
        return None
    if version >= FIRST_FLEXIBLE_VERSION:
        return _read_flexible
    return _legacy_reader(version >= FIRST_INSTANCE_ID_VERSION)
