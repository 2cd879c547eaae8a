# cython: language_level=3
"""Heartbeat v0-v4 in native code: the frame parsed into C values and two strings, the handler's one decision
(handlers/heartbeat.py `code`: the same Python function the generic handler asks), the handler's cached answer
frame with this correlation id. Anything else (a header or body of an unusual shape, bytes left over) goes to the
handler's Python fast path, which judges it as always."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memcpy

from protocol.sliced_decode import SLICED_FROM

from coordinator.fastlane._wire cimport (
    FASTLANE_SOURCE_DIGEST,
    Cursor,
    cursor_init,
    no_tags,
    plain_body_offset,
    put_i32,
    read_i32,
    read_string,
)

SOURCE_DIGEST = FASTLANE_SOURCE_DIGEST.decode()

cdef int INSTANCE_FROM = 3  # group_instance_id
cdef int FLEXIBLE_FROM = 4
cdef int MAX_VERSION = 4


cdef class HeartbeatLane:
    """The native fast path of a HeartbeatHandler: call it as the dispatcher calls a fast path."""

    cdef object fallback, decide, frame_of, metrics, api_name
    cdef dict tails  # version << 16 | code -> the answer frame after its size and correlation id
    cdef dict sizes  # the same key -> the frame's size field
    cdef public int handled  # heartbeats this lane answered (tests read it)

    def __init__(self, handler, str api_name):
        self.fallback = handler.fast
        self.decide = handler.code
        self.frame_of = handler.frame
        self.metrics = handler.metrics
        self.api_name = api_name
        self.tails = {}
        self.sizes = {}
        self.handled = 0

    def __call__(self, bytes frame, int version, int correlation_id):
        cdef const unsigned char* data = <const unsigned char*>PyBytes_AS_STRING(frame)
        cdef Py_ssize_t end = PyBytes_GET_SIZE(frame)
        cdef bint flexible = version >= FLEXIBLE_FROM
        cdef Cursor c
        if end > SLICED_FROM:
            return None  # decoded sliced by the generic path (net/dispatch.py), as the Python fast path leaves it
        cdef Py_ssize_t group_at = 0, member_at = 0, instance_at = 0
        cdef Py_ssize_t group_n, member_n, instance_n = -1
        cdef int generation, value
        if version < 0 or version > MAX_VERSION:
            return self.fallback(frame, version, correlation_id)
        cursor_init(&c, data, plain_body_offset(data, end, flexible), end, flexible)
        group_n = read_string(&c, &group_at)
        generation = read_i32(&c)
        member_n = read_string(&c, &member_at)
        if version >= INSTANCE_FROM:
            instance_n = read_string(&c, &instance_at)
        no_tags(&c)
        if c.bad or c.pos != end or group_n < 0 or member_n < 0 or instance_n < -1:
            return self.fallback(frame, version, correlation_id)
        try:
            group_id = data[group_at:group_at + group_n].decode("utf-8")
            member_id = data[member_at:member_at + member_n].decode("utf-8")
            instance_id = None if instance_n < 0 else data[instance_at:instance_at + instance_n].decode("utf-8")
        except UnicodeDecodeError:
            return self.fallback(frame, version, correlation_id)
        code = self.decide(group_id, generation, member_id, instance_id)
        self.handled += 1
        value = code
        if value and self.metrics is not None:
            self.metrics.error(self.api_name, code)
        key = (version << 16) | value
        tail = self.tails.get(key)
        if tail is None:
            fixed = self.frame_of(version, code)
            tail = self.tails[key] = fixed.tail
            self.sizes[key] = fixed.size
        return answer_frame(self.sizes[key], correlation_id, tail)


cdef bytes answer_frame(int size, int correlation_id, bytes tail):
    """size, correlation id, then the cached rest of the frame."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(tail)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 8 + n)
    cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(out)
    p = put_i32(put_i32(p, size), correlation_id)
    memcpy(p, PyBytes_AS_STRING(tail), n)
    return out
