# cython: language_level=3
"""OffsetFetch v1-v9 in native code, for the common shape: named topics and partitions of groups this node serves,
read from the packed store (offsets/store.py) straight into the answer, as offsets/manager.py `fetch` reads them
(durable values of keys a write in flight changed, -1 for what a group does not have). Anything else -- all topics
(null), a group error (empty id, loading, not ours), a KIP-848 member's fetch (v9), require_stable with open
transactions, more partitions than a slice, tagged fields -- goes to the generic handler, which answers it."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int16_t, int32_t, int64_t
from libc.string cimport memcpy

from coordinator.fastlane._wire cimport (
    FASTLANE_SOURCE_DIGEST,
    Cursor,
    array_count,
    count_size,
    cursor_init,
    need,
    no_tags,
    plain_body_offset,
    put_count,
    put_i16,
    put_i32,
    put_i64,
    put_string,
    read_i32,
    read_string,
    string_size,
)

SOURCE_DIGEST = FASTLANE_SOURCE_DIGEST.decode()

cdef int MIN_VERSION = 1, TOP_ERROR_FROM = 2, THROTTLE_FROM = 3, EPOCH_FROM = 5, FLEXIBLE_FROM = 6
cdef int STABLE_FROM = 7, GROUPS_FROM = 8, MEMBER_FROM = 9, MAX_VERSION = 9
cdef int16_t UNSTABLE_OFFSET_COMMIT = 88
cdef Py_ssize_t PACKED_HEAD = 28  # offsets/store.py's "=qqqi": offset, commit ts, expire ts, epoch; metadata


cdef struct Row:
    int64_t offset
    int32_t epoch
    const char* metadata  # inside a packed value the store or the durable view holds during the call
    Py_ssize_t metadata_n
    int16_t code


cdef class FetchLane:
    """The native fast path of OffsetFetch; None (the generic handler) for anything it does not take."""

    cdef object shard_for, dead, slices
    cdef public int handled

    def __init__(self, shard_for, dead_state, slices):
        self.shard_for = shard_for
        self.dead = dead_state
        self.slices = slices  # handlers/offset_fetch_slices: its SLICE, read at each request as the handler does
        self.handled = 0

    def __call__(self, bytes frame, int version, int correlation_id):
        if not MIN_VERSION <= version <= MAX_VERSION:
            return None
        answer = self.fetch(frame, version, correlation_id)
        if answer is not None:
            self.handled += 1
        return answer

    cdef object fetch(self, bytes frame, int version, int correlation_id):
        cdef const unsigned char* data = <const unsigned char*>PyBytes_AS_STRING(frame)
        cdef Py_ssize_t end = PyBytes_GET_SIZE(frame)
        cdef bint flexible = version >= FLEXIBLE_FROM, grouped = version >= GROUPS_FROM
        cdef Cursor c
        cdef Py_ssize_t groups = 1, g, t, i, n, at = 0, topics, indexes, total = 0
        cdef bint stable = False
        cursor_init(&c, data, plain_body_offset(data, end, flexible), end, flexible)
        if grouped:
            groups = array_count(&c, 3)  # group id, topics, tags (v8+ is flexible)
            if groups <= 0:
                return None
        plan = []  # per group: (group id, [topic names])
        for g in range(groups):
            n = read_string(&c, &at)
            if n <= 0:
                return None
            try:
                group_id = data[at:at + n].decode("utf-8")
            except UnicodeDecodeError:
                return None
            if version >= MEMBER_FROM:
                n = read_string(&c, &at)
                read_i32(&c)
                if n < -1:
                    return None
            topics = array_count(&c, 3 if flexible else 6)  # name, indexes (and tags)
            if topics < 0:
                return None  # null: every committed topic (the generic handler)
            names = []
            for t in range(topics):
                n = read_string(&c, &at)
                if n < 0:
                    return None
                try:
                    names.append(data[at:at + n].decode("utf-8"))
                except UnicodeDecodeError:
                    return None
                indexes = array_count(&c, 4)
                if indexes < 0 or not need(&c, 4 * indexes):
                    return None
                c.pos += 4 * indexes
                total += indexes
                no_tags(&c)
            if grouped:
                no_tags(&c)
            plan.append((group_id, names))
        if version >= STABLE_FROM:
            if not need(&c, 1) or data[c.pos] > 1:
                return None
            stable = data[c.pos] == 1
            c.pos += 1
        no_tags(&c)
        if c.bad or c.pos != end or total > self.slices.SLICE:
            return None
        reads = []
        for group_id, names in plan:
            read = self.group_read(group_id, stable, version)
            if read is None:
                return None
            reads.append(read)
        cdef Row* rows = <Row*>PyMem_Malloc(max(total, 1) * sizeof(Row))
        if rows == NULL:
            raise MemoryError()
        try:
            return self.answer(data, end, version, correlation_id, plan, reads, rows, stable)
        finally:
            PyMem_Free(rows)

    cdef object group_read(self, str group_id, bint stable, int version):
        """(the group's topics in the store or None, the durable view of keys in flight), or None: not taken."""
        shard = self.shard_for(group_id)
        if shard.error is not None:
            return None
        consumers = shard.consumer_groups
        if version >= MEMBER_FROM and group_id in consumers:
            return None  # a KIP-848 member's fetch is checked against its epoch (handlers/offset_fetch.py)
        store = shard.offsets
        if stable and store.txn.has_open(group_id):
            return None
        group = shard.groups.get(group_id)
        if (group is None or group.state is self.dead) and group_id not in consumers:
            return (None, None)  # no such group: -1 for every partition
        view = store.durable_view(group_id) if store.inflight else None
        return (store.by_group.get(group_id), view or None)

    cdef object answer(self, const unsigned char* data, Py_ssize_t end, int version, int correlation_id,
                       list plan, list reads, Row* rows, bint stable):
        cdef bint flexible = version >= FLEXIBLE_FROM, grouped = version >= GROUPS_FROM
        cdef bint epochs = version >= EPOCH_FROM
        cdef Cursor c
        cdef Py_ssize_t g, t, i, n, at = 0, topics, indexes, k = 0, size, row_size
        cdef int32_t index
        cursor_init(&c, data, plain_body_offset(data, end, flexible), end, flexible)
        size = 4 + flexible  # correlation id, header tags
        size += 4 if version >= THROTTLE_FROM else 0
        if grouped:
            size += count_size(len(plan), flexible) + flexible  # groups, top tags
            array_count(&c, 1)
        row_size = 4 + 8 + (4 if epochs else 0) + 2 + flexible  # index, offset, [epoch], error, [tags]
        for g in range(len(plan)):
            group_id, names = plan[g]
            stored, view = reads[g]
            n = read_string(&c, &at)
            if grouped:
                size += string_size(n, flexible) + 2 + flexible  # group id, error code, tags
                if version >= MEMBER_FROM:
                    read_string(&c, &at)
                    read_i32(&c)
            elif version >= TOP_ERROR_FROM:
                size += 2 + flexible
            elif flexible:
                size += 1
            topics = array_count(&c, 1)
            size += count_size(topics, flexible)
            for t in range(topics):
                name = names[t]
                n = read_string(&c, &at)
                indexes = array_count(&c, 1)
                size += string_size(n, flexible) + count_size(indexes, flexible) + flexible
                slots = None if stored is None else stored.get(name)
                for i in range(indexes):
                    index = read_i32(&c)
                    look_up(&rows[k], slots, index, name, view, stable)
                    size += row_size + string_size(rows[k].metadata_n, flexible)
                    k += 1
                no_tags(&c)
            if grouped:
                no_tags(&c)
        out = PyBytes_FromStringAndSize(NULL, size + 4)
        cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(out)
        p = put_i32(put_i32(p, size), correlation_id)
        if flexible:
            p[0] = 0
            p += 1
        if version >= THROTTLE_FROM:
            p = put_i32(p, 0)
        cursor_init(&c, data, plain_body_offset(data, end, flexible), end, flexible)
        k = 0
        if grouped:
            array_count(&c, 1)
            p = put_count(p, len(plan), flexible)
        for g in range(len(plan)):
            n = read_string(&c, &at)
            if grouped:
                p = put_string(p, data + at, n, flexible)
                if version >= MEMBER_FROM:
                    read_string(&c, &at)
                    read_i32(&c)
            topics = array_count(&c, 1)
            p = put_count(p, topics, flexible)
            for t in range(topics):
                n = read_string(&c, &at)
                p = put_string(p, data + at, n, flexible)
                indexes = array_count(&c, 1)
                p = put_count(p, indexes, flexible)
                for i in range(indexes):
                    p = put_i64(put_i32(p, read_i32(&c)), rows[k].offset)
                    if epochs:
                        p = put_i32(p, rows[k].epoch)
                    p = put_string(p, <const unsigned char*>rows[k].metadata, rows[k].metadata_n, flexible)
                    p = put_i16(p, rows[k].code)
                    if flexible:
                        p[0] = 0
                        p += 1
                    k += 1
                no_tags(&c)
                if flexible:
                    p[0] = 0
                    p += 1
            if grouped:
                no_tags(&c)
            if grouped or version >= TOP_ERROR_FROM:
                p = put_i16(p, 0)  # the group's error code
            if flexible:
                p[0] = 0  # the group's (v8+) or the response's tags
                p += 1
        if grouped and flexible:
            p[0] = 0
        return out


cdef void look_up(Row* row, object slots, int32_t index, str name, object view, bint stable) except *:
    """offsets/manager.py `fetch` for one partition: the durable value of a key a write in flight changed (or
    UNSTABLE_OFFSET_COMMIT with require_stable), else the store's, else -1."""
    row.offset = -1
    row.epoch = -1
    row.metadata = ""
    row.metadata_n = 0
    row.code = 0
    raw = None
    if view is not None and (name, index) in view:
        if stable:
            row.code = UNSTABLE_OFFSET_COMMIT
            return
        raw = view[(name, index)]
    elif slots is not None:
        if type(slots) is list:
            if 0 <= index < len(<list>slots):
                raw = (<list>slots)[index]
        else:
            raw = (<dict>slots).get(index)
    if raw is None:
        return
    cdef const char* p = PyBytes_AS_STRING(raw)
    memcpy(&row.offset, p, 8)
    memcpy(&row.epoch, p + 24, 4)
    row.metadata = p + PACKED_HEAD
    row.metadata_n = PyBytes_GET_SIZE(raw) - PACKED_HEAD
