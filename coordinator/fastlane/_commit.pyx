# cython: language_level=3
"""OffsetCommit v2-v9 in native code: the frame parsed into C values, the store changed, the records' log bytes and
the answer made, with no kio object and no Python tuple per partition but the records the store's undo keeps.

Two passes over the body. The first checks the whole frame (bounds, counts, strings, every partition of a topic
this server knows, metadata within offset.metadata.max.bytes, no tagged fields) and makes only the group's and
topics' strings; the group is then judged by the Python function the handler uses (offsets/manager.py
`validate_commit`). Any doubt before that point -- an unusual shape, an unknown topic, a refusal, a loading or
unloaded shard, an open transaction of the group, a group that does not exist yet, an online migration -- returns
None and the frame goes to the handler's Python fast path unchanged, which judges it as always (nothing was changed
here). The second pass applies each partition as OffsetStore.apply_all does (the same packed value, the same undo
entry, the same dense-list or dict layout), makes its record tail as log_codec.encode_tails does and its answer.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy

from coordinator.fastlane._wire cimport (
    FASTLANE_SOURCE_DIGEST,
    Cursor,
    array_count,
    ascii,
    count_size,
    cursor_init,
    no_tags,
    plain_body_offset,
    put_count,
    put_i16,
    put_i32,
    put_i64,
    put_string,
    put_uvarint,
    put_varint,
    read_i16,
    read_i32,
    read_i64,
    read_string,
    string_size,
    varint_size,
)

SOURCE_DIGEST = FASTLANE_SOURCE_DIGEST.decode()


cdef extern from *:
    """
    /* An OffsetCommitRecord(group, topic, partition, OffsetValue(offset, metadata, commit ts, epoch, expire ts)):
       the NamedTuples allocated as tuple.__new__(cls, items) allocates them, without their Python __new__. */
    static PyObject* fastlane_record(PyObject* record_type, PyObject* value_type, PyObject* group,
                                     PyObject* topic, PyObject* partition, PyObject* offset, PyObject* metadata,
                                     PyObject* now, PyObject* epoch, PyObject* expire) {
        PyTypeObject* vt = (PyTypeObject*)value_type;
        PyTypeObject* rt = (PyTypeObject*)record_type;
        PyObject* value = vt->tp_alloc(vt, 5);
        if (value == NULL) return NULL;
        PyObject* items[5] = {offset, metadata, now, epoch, expire};
        for (int i = 0; i < 5; i++) { Py_INCREF(items[i]); PyTuple_SET_ITEM(value, i, items[i]); }
        PyObject* record = rt->tp_alloc(rt, 4);
        if (record == NULL) { Py_DECREF(value); return NULL; }
        Py_INCREF(group); PyTuple_SET_ITEM(record, 0, group);
        Py_INCREF(topic); PyTuple_SET_ITEM(record, 1, topic);
        Py_INCREF(partition); PyTuple_SET_ITEM(record, 2, partition);
        PyTuple_SET_ITEM(record, 3, value);  /* the reference made above */
        return record;
    }
    """
    object fastlane_record(object record_type, object value_type, object group, object topic, object partition,
                           object offset, object metadata, object now, object epoch, object expire)

cdef int MIN_VERSION = 2, THROTTLE_FROM = 3, RETENTION_UNTIL = 4, EPOCH_FROM = 6, INSTANCE_FROM = 7
cdef int FLEXIBLE_FROM = 8, MAX_VERSION = 9
cdef Py_ssize_t SHORT_STRING_MAX = 32767  # a key's or value's string field (storage/records.py)
cdef Py_ssize_t DENSE_SLACK = 16  # offsets/store.py's _DENSE_SLACK
cdef int64_t DEFAULT_RETENTION = -1
cdef int64_t NO_EXPIRE = -1
cdef Py_ssize_t PACKED_HEAD = 28  # offsets/store.py's _PACKED: "=qqqi" offset, commit ts, expire ts, epoch
cdef Py_ssize_t PLAIN_VALUE = 24  # an OffsetCommitValue v3 without metadata


cdef int64_t RETENTION_MAX = 1 << 50  # ms; beyond it (or negative but -1) kio's timedelta may not hold it


cdef int64_t java_length(const unsigned char* p, Py_ssize_t n) except -2:
    """Java's String.length() of UTF-8 bytes (UTF-16 units, offsets/manager.py `java_length`); -1 when they are
    not UTF-8 (kio refuses them)."""
    if ascii(p, n):
        return n
    try:
        return len(p[:n].decode("utf-8").encode("utf-16-le")) // 2
    except UnicodeDecodeError:
        return -1


cdef class CommitLane:
    """The native fast path of an OffsetCommitHandler (handlers/offset_commit.py): call it as the dispatcher calls
    a fast path. `written(shard, records, tails, undo, body, version, correlation_id)` (fastlane/lane.py) registers
    the write this lane applied and returns the Deferred answer."""

    cdef object fallback, shard_for, validate, settings, written, record_type, value_type
    cdef dict counts
    cdef Py_ssize_t scan_from
    cdef public int handled  # commits this lane answered (tests and the benchmarks read it)

    def __init__(self, handler, validate, written, record_type, value_type, Py_ssize_t scan_from):
        self.fallback = handler.fast
        self.shard_for = handler.shard_for
        self.settings = handler.settings
        self.counts = handler.partition_counts
        self.validate = validate
        self.written = written
        self.record_type = record_type
        self.value_type = value_type
        self.scan_from = scan_from
        self.handled = 0

    def __call__(self, bytes frame, int version, int correlation_id):
        answer = None
        if MIN_VERSION <= version <= MAX_VERSION and PyBytes_GET_SIZE(frame) <= self.scan_from:
            answer = self.commit(frame, version, correlation_id)
        if answer is None:
            return self.fallback(frame, version, correlation_id)
        self.handled += 1
        return answer

    cdef object commit(self, bytes frame, int version, int correlation_id):
        cdef const unsigned char* data = <const unsigned char*>PyBytes_AS_STRING(frame)
        cdef Py_ssize_t end = PyBytes_GET_SIZE(frame)
        cdef bint flexible = version >= FLEXIBLE_FROM
        cdef Cursor c
        cdef Py_ssize_t group_at = 0, member_at = 0, instance_at = 0, at = 0
        cdef Py_ssize_t group_n, member_n, instance_n = -1, n, topics, partitions, t, i, topics_at
        cdef Py_ssize_t records = 0, body_size
        cdef int32_t generation, index, count
        cdef int64_t retention = DEFAULT_RETENTION, max_metadata = self.settings.offset_metadata_max_bytes, length
        cdef int64_t offset
        cdef int32_t epoch
        cursor_init(&c, data, plain_body_offset(data, end, flexible), end, flexible)
        group_n = read_string(&c, &group_at)
        generation = read_i32(&c)
        member_n = read_string(&c, &member_at)
        if version >= INSTANCE_FROM:
            instance_n = read_string(&c, &instance_at)
        if version <= RETENTION_UNTIL:
            retention = read_i64(&c)
        topics_at = c.pos
        topics = array_count(&c, 3 if flexible else 6)  # name and count (and tags)
        if c.bad or group_n <= 0 or group_n > SHORT_STRING_MAX or member_n < 0 or instance_n < -1 or topics < 0:
            return None
        if retention != DEFAULT_RETENTION and not 0 <= retention <= RETENTION_MAX:
            return None
        names = []
        body_size = (4 if version >= THROTTLE_FROM else 0) + count_size(topics, flexible) + flexible
        for t in range(topics):
            n = read_string(&c, &at)
            if n < 0 or n > SHORT_STRING_MAX:
                return None
            try:
                name = data[at:at + n].decode("utf-8")
            except UnicodeDecodeError:
                return None
            known = self.counts.get(name)
            if known is None:
                return None  # an unknown topic: the Python path refuses its partitions
            count = known
            partitions = array_count(&c, 14 + (4 if version >= EPOCH_FROM else 0))  # index, offset, [epoch], metadata
            if partitions < 0:
                return None
            body_size += string_size(n, flexible) + count_size(partitions, flexible) + flexible
            body_size += partitions * (6 + flexible)
            for i in range(partitions):
                index = read_i32(&c)
                read_i64(&c)
                if version >= EPOCH_FROM:
                    read_i32(&c)
                n = read_string(&c, &at)
                no_tags(&c)
                if c.bad or index < 0 or index >= count or n > SHORT_STRING_MAX:
                    return None
                if n > 0 and (n > max_metadata or not ascii(data + at, n)):
                    length = java_length(data + at, n)
                    if length < 0 or length > max_metadata:
                        return None  # too long (OFFSET_METADATA_TOO_LARGE) or not UTF-8: the Python path
            no_tags(&c)
            records += partitions
            names.append(name)
        no_tags(&c)
        if c.bad or c.pos != end or records == 0:
            return None
        try:
            group_id = data[group_at:group_at + group_n].decode("utf-8")
            member_id = data[member_at:member_at + member_n].decode("utf-8")
            instance_id = None if instance_n < 0 else data[instance_at:instance_at + instance_n].decode("utf-8")
        except UnicodeDecodeError:
            return None
        shard = self.shard_for(group_id)
        if shard.error is not None or shard.journal is not None:
            return None  # an operation's changes wait for their write (Shard.open_journal): the Python path
        store = shard.offsets
        if group_id in store.txn.by_group:
            return None  # open transactions of the group: a commit makes their offsets stale (Shard._replay_offsets)
        if group_id not in shard.groups and group_id not in shard.consumer_groups:
            return None  # the first commit makes the "simple" group: the Python path
        if self.validate(shard, group_id, member_id, instance_id, generation, version) is not None:
            return None
        now_ms = shard.scheduler.wall_ms()
        cdef int64_t now = now_ms
        cdef int64_t expire = NO_EXPIRE if retention == DEFAULT_RETENTION else now + retention
        expire_ms = expire
        cursor_init(&c, data, topics_at, end, flexible)
        array_count(&c, 1)
        body = PyBytes_FromStringAndSize(NULL, body_size + 8 + flexible)
        cdef unsigned char* out = <unsigned char*>PyBytes_AS_STRING(body)
        out = put_i32(put_i32(out, body_size + 4 + flexible), correlation_id)
        if flexible:
            out[0] = 0
            out += 1
        if version >= THROTTLE_FROM:
            out = put_i32(out, 0)
        out = put_count(out, topics, flexible)
        record_list, tails, undo = [], [], []
        by_group = store.by_group
        topics_of = by_group.get(group_id)
        if topics_of is None:
            topics_of = by_group[group_id] = {}
        group_raw = data[group_at:group_at + group_n]
        for t in range(topics):
            n = read_string(&c, &at)
            out = put_string(out, data + at, n, flexible)
            name = names[t]
            head = key_head(group_raw, data[at:at + n])
            partitions = array_count(&c, 1)
            out = put_count(out, partitions, flexible)
            slots = topics_of.get(name) if partitions else None
            if slots is None and partitions:
                slots = topics_of[name] = []
            for i in range(partitions):
                index = read_i32(&c)
                offset = read_i64(&c)
                epoch = read_i32(&c) if version >= EPOCH_FROM else -1
                n = read_string(&c, &at)
                no_tags(&c)
                if n < 0:
                    n = 0
                slots = apply(topics_of, name, slots, index,
                              packed(offset, now, expire, epoch, data + at, n), undo)
                metadata = data[at:at + n].decode("utf-8") if n else ""
                record_list.append(fastlane_record(self.record_type, self.value_type, group_id, name, index, offset,
                                                   metadata, now_ms, epoch, expire_ms))
                tails.append(record_tail(head, index, offset, epoch, now, expire, data + at, n))
                out = put_i16(put_i32(out, index), 0)
                if flexible:
                    out[0] = 0
                    out += 1
            no_tags(&c)
            if flexible:
                out[0] = 0
                out += 1
        if flexible:
            out[0] = 0
        return self.written(shard, record_list, tails, undo, body, version, correlation_id)


cdef bytes packed(int64_t offset, int64_t now, int64_t expire, int32_t epoch, const unsigned char* metadata,
                  Py_ssize_t n):
    """offsets/store.py's packed value: "=qqqi" (native byte order) offset, commit ts, expire ts, epoch; metadata."""
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, PACKED_HEAD + n)
    cdef char* p = PyBytes_AS_STRING(raw)
    memcpy(p, &offset, 8)
    memcpy(p + 8, &now, 8)
    memcpy(p + 16, &expire, 8)
    memcpy(p + 24, &epoch, 4)
    memcpy(p + PACKED_HEAD, metadata, n)
    return raw


cdef object apply(dict topics, str name, object slots, int32_t index, bytes raw, list undo):
    """OffsetStore.apply_all for one partition of a live write: the value it replaces goes to `undo`; the topic's
    dense list becomes a dict from the first partition far past its end. Returns the topic's slots."""
    cdef Py_ssize_t size
    if type(slots) is list:
        size = len(<list>slots)
        if index < size:
            undo.append((<list>slots)[index])
            (<list>slots)[index] = raw
            return slots
        if index < 2 * size + DENSE_SLACK:
            undo.append(None)
            if index > size:
                (<list>slots).extend([None] * (index - size))
            (<list>slots).append(raw)
            return slots
        slots = topics[name] = {p: v for p, v in enumerate(<list>slots) if v is not None}
    undo.append((<dict>slots).get(index))
    (<dict>slots)[index] = raw
    return slots


cdef bytes key_head(bytes group, bytes topic):
    """log_codec.key_head: the key's length varint, then OffsetCommitKey v1 up to its partition."""
    cdef Py_ssize_t g = PyBytes_GET_SIZE(group), t = PyBytes_GET_SIZE(topic)
    cdef Py_ssize_t key = 2 + 2 + g + 2 + t + 4
    cdef bytes head = PyBytes_FromStringAndSize(NULL, varint_size(key) + key - 4)
    cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(head)
    p = put_i16(put_varint(p, key), 1)
    p = put_i16(p, <int32_t>g)
    memcpy(p, PyBytes_AS_STRING(group), g)
    p = put_i16(p + g, <int32_t>t)
    memcpy(p, PyBytes_AS_STRING(topic), t)
    return head


cdef bytes record_tail(bytes head, int32_t index, int64_t offset, int32_t epoch, int64_t now, int64_t expire,
                       const unsigned char* metadata, Py_ssize_t n):
    """log_codec.encode_tails for one commit: the key's head and partition, the value (v3, or v1 with an expire
    timestamp) with its length varint, no headers."""
    cdef Py_ssize_t h = PyBytes_GET_SIZE(head)
    cdef Py_ssize_t value = (2 + 8 + 4 + 2 + n + 8) if expire == NO_EXPIRE else (2 + 8 + 2 + n + 8 + 8)
    cdef bytes tail = PyBytes_FromStringAndSize(NULL, h + 4 + varint_size(value) + value + 1)
    cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(tail)
    memcpy(p, PyBytes_AS_STRING(head), h)
    p = put_varint(put_i32(p + h, index), value)
    if expire == NO_EXPIRE:
        p = put_i16(put_i32(put_i64(put_i16(p, 3), offset), epoch), <int32_t>n)
        memcpy(p, metadata, n)
        p = put_i64(p + n, now)
    else:
        p = put_i16(put_i64(put_i16(p, 1), offset), <int32_t>n)
        memcpy(p, metadata, n)
        p = put_i64(put_i64(p + n, now), expire)
    p[0] = 0  # no headers
    return tail


def failed_body(bytes frame, int version, int code):
    """The answer `frame` (this lane's, every partition NONE) with `code` on every partition instead: what the
    handler's `failed` answers when the write fails."""
    cdef bint flexible = version >= FLEXIBLE_FROM
    cdef bytes out = PyBytes_FromStringAndSize(PyBytes_AS_STRING(frame), PyBytes_GET_SIZE(frame))
    cdef Cursor c
    cdef Py_ssize_t topics, partitions, t, i, at = 0
    cursor_init(&c, <const unsigned char*>PyBytes_AS_STRING(out), 8 + flexible, PyBytes_GET_SIZE(out), flexible)
    if version >= THROTTLE_FROM:
        read_i32(&c)
    topics = array_count(&c, 1)
    for t in range(topics):
        read_string(&c, &at)
        partitions = array_count(&c, 1)
        for i in range(partitions):
            read_i32(&c)
            if c.bad:
                break
            put_i16(<unsigned char*>PyBytes_AS_STRING(out) + c.pos, code)
            read_i16(&c)
            no_tags(&c)
        no_tags(&c)
    if c.bad:
        raise ValueError("not an answer of this lane")
    return out
