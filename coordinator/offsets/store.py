"""The committed offsets of one shard, held packed, and the writes in flight.

A million offsets must fit in little memory (the target: <= 150 bytes of server RSS an
offset, bench/bench_memory.py): an offset is one bytes object (`unpack_value` gives the
OffsetValue back), and a topic's offsets sit in a list indexed by partition while the
partitions are dense. Only `Shard.replay_all` (through `apply_all`) and the end of a
write that failed (`end`) change the store; coordinator/offsets/manager.py reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from struct import Struct
from typing import Any

from coordinator.offsets.pending import ShardPendingOffsets
from coordinator.records.types import OffsetCommitRecord, OffsetValue

Key = tuple[str, str, int]


# A committed offset in memory: one bytes object per partition, not an OffsetValue
# (a 5-tuple plus its int objects: ~190 bytes an offset with the dict slots; these
# bytes take 64). Native byte order; metadata as UTF-8 after the fixed fields.
_PACKED = Struct("=qqqi")  # offset, commit timestamp, expire timestamp, leader epoch
_PACKED_SIZE = _PACKED.size
_pack_head = _PACKED.pack
_unpack_head = _PACKED.unpack_from


def unpack_value(raw: bytes) -> OffsetValue:
    offset, commit_ts, expire, epoch = _unpack_head(raw)
    return OffsetValue(offset, raw[_PACKED_SIZE:].decode() if len(raw) > _PACKED_SIZE else "",
                       commit_ts, epoch, expire)


# A topic's offsets in a group: a list indexed by partition while the partitions are
# dense (8 bytes a slot instead of ~45 for a dict entry), a dict {partition: packed}
# from the first partition far past the list's end (or negative).
Partitions = list | dict
_DENSE_SLACK = 16  # a list grows to 2 * its length + this, no further


def _packed(partitions: Partitions, partition: int) -> bytes | None:
    if type(partitions) is list:
        return partitions[partition] if 0 <= partition < len(partitions) else None
    return partitions.get(partition)  # type: ignore[union-attr]  # a dict: mypy narrows no `type(x) is list` else


def _packed_items(partitions: Partitions) -> Iterable[tuple[int, bytes]]:
    if type(partitions) is list:
        return ((p, raw) for p, raw in enumerate(partitions) if raw is not None)
    return partitions.items()  # type: ignore[union-attr]  # a dict: mypy narrows no `type(x) is list` else


class OffsetStore:
    """group -> topic -> partitions (see Partitions) -> packed value, plus the writes in
    flight.

    Values go in as OffsetValue and come out as OffsetValue; in between they are held
    packed (unpack_value), which is what makes a million offsets fit in ~100 MB.

    A live write is applied at once (reads of the live state see it) and registered in
    `inflight` with its undo list: the packed value (or None) each of its offset records
    replaced, in record order. The durable value of a key is the undo value of the first
    write in flight that changed it, else the live one (`durable_view`). A write that
    becomes durable costs nothing per key (`end` drops it); only a failed one walks its
    keys, and the writes after it.
    """

    __slots__ = ("by_group", "inflight", "txn")

    def __init__(self) -> None:
        self.by_group: dict[str, dict[str, Partitions]] = {}
        # the pending transactional offsets (TxnOffsetCommit), apart from the committed ones until their marker
        self.txn = ShardPendingOffsets()
        # a write in flight (its token: the shard's PendingWrite) -> (its records, its undo
        # list), in write order
        self.inflight: dict[Any, tuple[list, list]] = {}

    def apply(self, group: str, topic: str, partition: int, value: OffsetValue | None) -> None:
        """The replay of one OffsetCommit record (a None value is a tombstone)."""
        self.apply_all(((group, topic, partition, value),))

    def apply_all(self, records: Iterable[tuple], undo: list | None = None,
                  committed_to: Callable[[str], None] | None = None) -> None:
        """The replay of OffsetCommit records (group, topic, partition, value-or-None), in
        order: the one way the store changes. With `undo` (a live write), the packed value
        each record replaces (None: there was none) is appended to it, in the same pass.

        A write's records share their group and topic, so the topic's partitions are
        looked up once per run of equal (group, topic), not once per record; there
        `committed_to(group)` (if given) hears of a group an offset is committed to.
        """
        by_group = self.by_group
        last_group = last_topic = None
        partitions: Partitions | None = None
        for group, topic, partition, value in records:
            if value is None:
                topics = by_group.get(group)
                if undo is not None:
                    current = None if topics is None else topics.get(topic)
                    undo.append(None if current is None else _packed(current, partition))
                if topics is not None:
                    self._remove(group, topics, topic, partition)
                last_group = None  # _remove may drop the topic's partitions
                continue
            if group is not last_group or topic is not last_topic or partitions is None:
                if committed_to is not None:
                    committed_to(group)
                topics = by_group.get(group)
                if topics is None:
                    topics = by_group[group] = {}
                partitions = topics.get(topic)
                if partitions is None:
                    partitions = topics[topic] = []
                last_group, last_topic = group, topic
            offset, metadata, commit_ts, epoch, expire = value
            raw = _pack_head(offset, commit_ts, expire, epoch)
            if metadata:
                raw += metadata.encode()
            if type(partitions) is list:
                size = len(partitions)
                if 0 <= partition < size:
                    if undo is not None:
                        undo.append(partitions[partition])
                    partitions[partition] = raw
                    continue
                if 0 <= partition < 2 * size + _DENSE_SLACK:
                    if undo is not None:
                        undo.append(None)
                    if partition > size:
                        partitions += [None] * (partition - size)
                    partitions.append(raw)
                    continue
                partitions = by_group[group][topic] = dict(_packed_items(partitions))
            if undo is not None:
                undo.append(partitions.get(partition))  # type: ignore[union-attr]  # a dict, as above
            partitions[partition] = raw

    def _remove(self, group: str, topics: dict, topic: str, partition: int) -> None:
        partitions = topics.get(topic)
        if partitions is None:
            return
        if type(partitions) is list:
            if _packed(partitions, partition) is None:
                return
            partitions[partition] = None
            while partitions and partitions[-1] is None:
                partitions.pop()
        elif partitions.pop(partition, None) is None:
            return
        if not partitions:
            del topics[topic]
            if not topics:
                del self.by_group[group]

    def get(self, group: str, topic: str, partition: int) -> OffsetValue | None:
        topics = self.by_group.get(group)
        if topics is None:
            return None
        partitions = topics.get(topic)
        if partitions is None:
            return None
        raw = _packed(partitions, partition)
        return None if raw is None else unpack_value(raw)

    def count(self) -> int:
        return sum(sum(1 for _ in _packed_items(p)) for topics in self.by_group.values() for p in topics.values())

    def items(self, group: str) -> Iterable[tuple[str, int, OffsetValue]]:
        for topic, partitions in self.by_group.get(group, {}).items():
            for partition, raw in _packed_items(partitions):
                yield topic, partition, unpack_value(raw)

    # --- writes in flight ------------------------------------------------------------

    def begin(self, token: Any, records: list, undo: list) -> None:
        """`records` (applied with `apply_all(records, undo)`) are in flight until `end(token)`."""
        self.inflight[token] = (records, undo)

    def end(self, token: Any, error: BaseException | None) -> None:
        """The write is durable (error None: nothing to do per key) or failed: each key it
        changed goes back to its value from before the write, unless a later write in
        flight changed the key too; that write then remembers the value as durable (and
        the live value stays its own, which a failure of its own would take back)."""
        if error is None:
            self.inflight.pop(token, None)
            return
        if token not in self.inflight:
            return
        later: list[tuple[list, list]] = []
        found = False
        for other, entry in self.inflight.items():
            if found:
                later.append(entry)
            elif other is token:
                found = True
        records, undo = self.inflight.pop(token)
        before: dict[Key, bytes | None] = {}
        for record, raw in zip(_offset_records(records), undo):
            before.setdefault((record[0], record[1], record[2]), raw)  # the first change of a key
        for later_records, later_undo in later:
            for i, record in enumerate(_offset_records(later_records)):
                key = (record[0], record[1], record[2])
                if key in before:
                    later_undo[i] = before.pop(key)
            if not before:
                break
        for (group, topic, partition), raw in before.items():
            self.apply(group, topic, partition, None if raw is None else unpack_value(raw))

    def durable_view(self, group: str) -> dict[tuple[str, int], bytes | None]:
        """{(topic, partition): durable packed value or None} of the group's keys that a
        write in flight changed (`unpack_value` reads a value); empty when none did."""
        view: dict[tuple[str, int], bytes | None] = {}
        for records, undo in self.inflight.values():
            for record, raw in zip(_offset_records(records), undo):
                if record[0] == group:
                    view.setdefault((record[1], record[2]), raw)
        return view


def _offset_records(records: list) -> Iterable[tuple]:
    return (r for r in records if type(r) is OffsetCommitRecord)


def durable_value(raw: bytes | None) -> OffsetValue | None:
    """A value of `OffsetStore.durable_view`, unpacked."""
    return None if raw is None else unpack_value(raw)
