# cython: language_level=3
"""Kafka's wire encodings for the native fast lane: a bounds-checked reader over a request frame and the writes
of an answer into a buffer sized beforehand.

Every read checks the bytes left first: past the end, or on a value the lane does not take (a varint longer than
an int32's, a negative length other than null's -1), the cursor turns `bad`, stays at the end (every later read
fails too) and returns 0. A count is trusted only after `array_count` checked that many elements of at least
`min_size` bytes can fit in what is left. A bad cursor means "not handled": the frame goes to the Python path,
which judges it (and closes the connection if Kafka would).
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef extern from *:
    """
    #ifndef FASTLANE_SOURCE_DIGEST
    #define FASTLANE_SOURCE_DIGEST ""
    #endif
    """
    const char* FASTLANE_SOURCE_DIGEST  # setup.py: the SHA-256 of the lane's sources (loader.py compares it)


cdef struct Cursor:
    const unsigned char* data
    Py_ssize_t pos
    Py_ssize_t end
    bint flexible
    bint bad


cdef inline void cursor_init(Cursor* c, const unsigned char* data, Py_ssize_t pos, Py_ssize_t end,
                             bint flexible) noexcept nogil:
    c.data = data
    c.pos = pos
    c.end = end
    c.flexible = flexible
    c.bad = pos > end or pos < 0


cdef inline void fail(Cursor* c) noexcept nogil:
    c.bad = True
    c.pos = c.end


cdef inline bint need(Cursor* c, Py_ssize_t n) noexcept nogil:
    """Whether n more bytes can be read (else the cursor turns bad)."""
    if c.bad or n < 0 or c.end - c.pos < n:
        fail(c)
        return False
    return True


cdef inline int16_t read_i16(Cursor* c) noexcept nogil:
    if not need(c, 2):
        return 0
    cdef const unsigned char* p = c.data + c.pos
    c.pos += 2
    return <int16_t>((<uint32_t>p[0] << 8) | p[1])


cdef inline int32_t read_i32(Cursor* c) noexcept nogil:
    if not need(c, 4):
        return 0
    cdef const unsigned char* p = c.data + c.pos
    c.pos += 4
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


cdef inline int64_t read_i64(Cursor* c) noexcept nogil:
    if not need(c, 8):
        return 0
    cdef const unsigned char* p = c.data + c.pos
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | p[i]
    c.pos += 8
    return <int64_t>v


cdef inline uint32_t read_uvarint(Cursor* c) noexcept nogil:
    """Kafka's unsigned varint of at most 5 bytes whose value fits 32 bits; anything longer turns bad."""
    cdef uint32_t value = 0
    cdef int shift = 0
    cdef unsigned char b
    while True:
        if not need(c, 1):
            return 0
        b = c.data[c.pos]
        c.pos += 1
        if shift == 28 and b > 0x0F:
            fail(c)
            return 0
        value |= (<uint32_t>(b & 0x7F)) << shift
        if b < 0x80:
            return value
        shift += 7


cdef inline Py_ssize_t read_length(Cursor* c) noexcept nogil:
    """A string's or bytes' length: int16 (-1 null) or, flexible, compact uvarint - 1. -2 when bad."""
    cdef int64_t n
    if c.flexible:
        n = <int64_t>read_uvarint(c) - 1
    else:
        n = read_i16(c)
    if c.bad or n < -1:
        fail(c)
        return -2
    return <Py_ssize_t>n


cdef inline Py_ssize_t read_string(Cursor* c, Py_ssize_t* start) noexcept nogil:
    """A nullable string: its length (-1 null, -2 bad); `start` gets where its bytes begin."""
    cdef Py_ssize_t n = read_length(c)
    if n < 0:
        return n
    if not need(c, n):
        return -2
    start[0] = c.pos
    c.pos += n
    return n


cdef inline Py_ssize_t array_count(Cursor* c, Py_ssize_t min_size) noexcept nogil:
    """An array's count (-1 null), checked against the bytes left: count * min_size must fit. -2 when bad."""
    cdef int64_t n
    if c.flexible:
        n = <int64_t>read_uvarint(c) - 1
    else:
        n = read_i32(c)
    if c.bad or n < -1:
        fail(c)
        return -2
    if n > 0 and n > (c.end - c.pos) // min_size:
        fail(c)
        return -2
    return <Py_ssize_t>n


cdef inline void no_tags(Cursor* c) noexcept nogil:
    """Flexible versions: an empty tagged-field section (the common shape); tagged fields turn bad (Python path)."""
    if c.flexible and read_uvarint(c) != 0:
        fail(c)


cdef inline bint ascii(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] >= 0x80:
            return False
    return True


cdef inline Py_ssize_t plain_body_offset(const unsigned char* p, Py_ssize_t end, bint flexible) noexcept nogil:
    """protocol.header.plain_body_offset: where the body starts when the header is the common kind (an ASCII or
    null client id, header v2's tagged fields empty), else -1."""
    if end < 10:
        return -1
    cdef Py_ssize_t n = <int16_t>((<uint32_t>p[8] << 8) | p[9])
    cdef Py_ssize_t pos = 10
    if n > 0:
        if end - pos < n or not ascii(p + pos, n):
            return -1
        pos += n
    elif n < -1:
        return -1
    if flexible:
        if pos >= end or p[pos] != 0:
            return -1
        pos += 1
    return pos


# --- writing into a buffer sized beforehand -------------------------------------------------------------------

cdef inline unsigned char* put_i16(unsigned char* p, int32_t v) noexcept nogil:
    p[0] = <unsigned char>((v >> 8) & 0xFF)
    p[1] = <unsigned char>(v & 0xFF)
    return p + 2


cdef inline unsigned char* put_i32(unsigned char* p, int64_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    p[0] = <unsigned char>(u >> 24)
    p[1] = <unsigned char>(u >> 16)
    p[2] = <unsigned char>(u >> 8)
    p[3] = <unsigned char>u
    return p + 4


cdef inline unsigned char* put_i64(unsigned char* p, int64_t v) noexcept nogil:
    cdef uint64_t u = <uint64_t>v
    cdef int i
    for i in range(8):
        p[i] = <unsigned char>(u >> (56 - 8 * i))
    return p + 8


cdef inline int uvarint_size(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline unsigned char* put_uvarint(unsigned char* p, uint64_t v) noexcept nogil:
    while v >= 0x80:
        p[0] = <unsigned char>((v & 0x7F) | 0x80)
        p += 1
        v >>= 7
    p[0] = <unsigned char>v
    return p + 1


cdef inline int varint_size(int64_t v) noexcept nogil:
    """A zig-zag varint's size (storage/varint.py's encoding)."""
    return uvarint_size((<uint64_t>v << 1) ^ <uint64_t>(v >> 63))


cdef inline unsigned char* put_varint(unsigned char* p, int64_t v) noexcept nogil:
    return put_uvarint(p, (<uint64_t>v << 1) ^ <uint64_t>(v >> 63))


cdef inline int count_size(Py_ssize_t n, bint flexible) noexcept nogil:
    """An array count's or a string length's size: compact uvarint n + 1, or int32 (`wide`) / int16."""
    return uvarint_size(<uint64_t>(n + 1)) if flexible else 4


cdef inline unsigned char* put_count(unsigned char* p, Py_ssize_t n, bint flexible) noexcept nogil:
    return put_uvarint(p, <uint64_t>(n + 1)) if flexible else put_i32(p, n)


cdef inline int string_size(Py_ssize_t n, bint flexible) noexcept nogil:
    return (uvarint_size(<uint64_t>(n + 1)) if flexible else 2) + n


cdef inline unsigned char* put_string(unsigned char* p, const unsigned char* s, Py_ssize_t n,
                                      bint flexible) noexcept nogil:
    p = put_uvarint(p, <uint64_t>(n + 1)) if flexible else put_i16(p, <int32_t>n)
    memcpy(p, s, n)
    return p + n
