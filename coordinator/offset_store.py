"""The committed offsets of one shard, held packed, and the keys with writes in flight.

A million offsets must fit in little memory (the target: <= 150 bytes of server RSS an
offset, bench/bench_memory.py): an offset is one bytes object (`unpack_value` gives the
OffsetValue back), and a topic's offsets sit in a list indexed by partition while the
partitions are dense. Only `Shard.replay_all` (through `apply_all`) and the end of a
write (`end`) change the store; coordinator/offsets.py reads it.
"""

from __future__ import annotations

from struct import Struct
from typing import Callable, Iterable

from .records import OffsetCommitRecord, OffsetValue

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
    return partitions.get(partition)


def _packed_items(partitions: Partitions) -> Iterable[tuple[int, bytes]]:
    if type(partitions) is list:
        return ((p, raw) for p, raw in enumerate(partitions) if raw is not None)
    return partitions.items()


class OffsetStore:
    """group -> topic -> partitions (see Partitions) -> packed value, plus the keys with
    writes in flight.

    Values go in as OffsetValue and come out as OffsetValue; in between they are held
    packed (unpack_value), which is what makes a million offsets fit in ~100 MB.
    """

    __slots__ = ("by_group", "pending")

    def __init__(self) -> None:
        self.by_group: dict[str, dict[str, Partitions]] = {}
        # (group, topic) -> partition -> [writes in flight, last durable value or None]
        # (by (group, topic) first: a write's keys share it, so its bookkeeping hashes ints)
        self.pending: dict[tuple[str, str], dict[int, list]] = {}

    def apply(self, group: str, topic: str, partition: int, value: OffsetValue | None) -> None:
        """The replay of one OffsetCommit record (a None value is a tombstone)."""
        self.apply_all(((group, topic, partition, value),))

    def apply_all(self, records: Iterable[tuple], track: bool = False,
                  committed_to: Callable[[str], None] | None = None) -> None:
        """The replay of OffsetCommit records (group, topic, partition, value-or-None), in
        order: the one way the store changes. With `track` (a live write), each key first
        remembers its durable value in `pending` (packed as the store held it;
        `durable_value` unpacks it), in the same pass; `end` settles it.

        A write's records share their group and topic, so the topic's partitions are
        looked up once per run of equal (group, topic), not once per record; there
        `committed_to(group)` (if given) hears of a group an offset is committed to.
        """
        by_group = self.by_group
        pending = self.pending
        last_group = last_topic = None
        partitions: Partitions | None = None
        tracked_group = tracked_topic = None
        tracked: dict[int, list] = {}
        for group, topic, partition, value in records:
            if track:
                if group is not tracked_group or topic is not tracked_topic:
                    tracked = pending.get((group, topic))  # type: ignore[assignment]
                    if tracked is None:
                        tracked = pending[group, topic] = {}
                    tracked_group, tracked_topic = group, topic
                entry = tracked.get(partition)
                if entry is None:
                    if group is last_group and topic is last_topic and partitions is not None:
                        current = partitions
                    else:
                        topics = by_group.get(group)
                        current = None if topics is None else topics.get(topic)
                    tracked[partition] = [1, None if current is None else _packed(current, partition)]
                else:
                    entry[0] += 1
            if value is None:
                topics = by_group.get(group)
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
                    partitions[partition] = raw
                    continue
                if 0 <= partition < 2 * size + _DENSE_SLACK:
                    if partition > size:
                        partitions += [None] * (partition - size)
                    partitions.append(raw)
                    continue
                partitions = by_group[group][topic] = dict(_packed_items(partitions))
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

    def has_offsets(self, group: str) -> bool:
        return group in self.by_group

    def count(self) -> int:
        return sum(sum(1 for _ in _packed_items(p)) for topics in self.by_group.values() for p in topics.values())

    def items(self, group: str) -> Iterable[tuple[str, int, OffsetValue]]:
        for topic, partitions in self.by_group.get(group, {}).items():
            for partition, raw in _packed_items(partitions):
                yield topic, partition, unpack_value(raw)

    # --- writes in flight ------------------------------------------------------------

    def end(self, records: list, error: BaseException | None) -> None:
        """The write of `records` (applied with `apply_all(track=True)`) is durable (error
        None) or failed (revert to the durable value)."""
        pending = self.pending
        last = None
        tracked: dict[int, list] | None = None
        for record in records:
            if type(record) is not OffsetCommitRecord:
                continue
            group, topic, partition, value = record
            if last is None or group is not last[0] or topic is not last[1]:
                if tracked is not None and not tracked:
                    del pending[last]  # type: ignore[index]
                last = (group, topic)
                tracked = pending.get(last)
                if tracked is None:
                    continue
            elif tracked is None:
                continue
            entry = tracked.get(partition)
            if entry is None:
                continue
            if error is not None:
                self.apply(group, topic, partition, durable_value(entry))
            count = entry[0] - 1
            if count <= 0:
                del tracked[partition]
            else:
                entry[0] = count
                if error is None:
                    entry[1] = value
        if tracked is not None and not tracked:
            del pending[last]  # type: ignore[index]

    def pending_entry(self, group: str, topic: str, partition: int) -> list | None:
        """[writes in flight, durable value] of a key with writes in flight, else None."""
        tracked = self.pending.get((group, topic))
        return None if tracked is None else tracked.get(partition)

    def is_pending(self, group: str, topic: str, partition: int) -> bool:
        return self.pending_entry(group, topic, partition) is not None

    def durable(self, group: str, topic: str, partition: int) -> OffsetValue | None:
        entry = self.pending_entry(group, topic, partition) if self.pending else None
        return self.get(group, topic, partition) if entry is None else durable_value(entry)


def durable_value(entry: list) -> OffsetValue | None:
    """The durable value a pending entry remembers: packed as the store held it, or an
    OffsetValue (the record of an earlier write that became durable meanwhile)."""
    value = entry[1]
    return unpack_value(value) if type(value) is bytes else value
