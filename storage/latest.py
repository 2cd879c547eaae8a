"""The latest record per key of __consumer_offsets batches: the loader's scan.

Loading replays a partition's log; most of a busy partition is commits superseded
by later commits of the same key. `LatestRecords` walks raw batch bytes (CRC-32C
checked per batch) and keeps raw key -> raw value of the newest record of each key,
so only the survivors are decoded and replayed. For that to give exactly the state
a replay of every record gives, two things a later record cannot undo are kept:

* a commit later deleted by an offset tombstone still created its (simple) group on
  replay: the commit is kept as a *creator*, replayed before the survivors. Only commits:
  a KIP-848 record later deleted (a member's assignment, say) leaves nothing behind, and
  replaying its old value would bring back a member's partitions that others own since;
* a group tombstone (GroupMetadataKey, null value) removes whatever group exists at
  that point, so it is a barrier: what came before it is sealed as its own part and
  replayed before it, what comes after starts afresh. A KIP-848 consumer group's
  tombstone (ConsumerGroupMetadataKey, type 3, null value: Kafka writes it after the
  tombstones of the group's members and assignments) is a barrier too, so the group's
  deletion is replayed where it happened (Kafka refuses it while members remain).

Between two barriers the survivors commute (a commit creates its group only if
absent, a group value replaces whatever is there, offset keys are independent; the
consumer-group records that survive are each member's and the group's latest, which
agree with each other: no two members' latest assignments share a partition), so
each part's order does not matter. `take_sealed` hands over the parts closed by a
barrier, `take_all` everything (call it once the log end is reached).

Records of plain (uncompressed) batches are read by a `RecordReader`
(storage/record_readers.py: aiokafka's C parser when it can be used, ~1.8x the records/s,
else a Python loop). A compressed batch, a batch that starts before `start` and any batch
under a timestamp filter take storage.batch.decode_records; control batches are skipped.
The CRC is always checked here, per batch, with crc32c.

Transactions (TxnOffsetCommit's transactional batches and their markers, control batches): records of a
transactional batch are held per producer until the producer's marker, which commits or drops them by Kafka's
rules (storage/txn_fold.py); while some are held every other batch goes through `put`, so that a later record of
a held key is seen. What has no marker by the end is `pending()`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from crc32c import crc32c

from .batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    TRANSACTIONAL_MASK,
    RecordBatch,
    decode_records,
)
from .control_records import read_marker
from .errors import CorruptRecordError, InvalidRecordError
from .record_readers import RecordReader, default_reader
from .txn_fold import Held, HeldTransactions

# baseOffset, batchLength, magic, crc, attributes, lastOffsetDelta, recordsCount
_HEAD = struct.Struct(">qi4xbIhi30xi")
_BARRIER_KEY_TYPES = (b"\x00\x02", b"\x00\x03")  # GroupMetadataKey, ConsumerGroupMetadataKey: tombstones seal
_OFFSET_KEY_TYPES = (b"\x00\x00", b"\x00\x01")  # OffsetCommitKey v0/v1: a deleted commit still created its group

Pair = tuple[bytes, "bytes | None"]


class LatestRecords:
    """Fold batches into the latest (key, value) per key; see the module docstring.

    `start`: records below this offset are skipped (a snapshot covers them).
    `min_timestamp`: records older than this are skipped (a snapshot taken then).
    `reader`: reads plain batches (default: storage.record_readers.default_reader()).

    `latest` and `put` are what the reader writes into (record_readers.LatestFold).
    """

    __slots__ = ("start", "min_timestamp", "records", "bytes", "next_offset", "reader", "latest", "_creators",
                 "_sealed", "held")

    def __init__(self, start: int = 0, min_timestamp: int | None = None,
                 reader: RecordReader | None = None) -> None:
        self.start = start
        self.reader = reader  # None: default_reader(), resolved by the first add (an empty log imports no parser)
        self.min_timestamp = min_timestamp
        self.records = 0  # records read at or after `start`
        self.bytes = 0
        self.next_offset = start
        self.latest: dict[bytes, bytes | None] = {}
        self._creators: list[Pair] = []
        self._sealed: list[Iterable[Pair] | dict[bytes, bytes | None]] = []  # dicts: their items
        self.held = HeldTransactions()  # transactional records until their marker (storage/txn_fold.py)

    # --- scanning ------------------------------------------------------------------------

    def add(self, data: bytes) -> int:
        """Fold the whole batches of `data` (as PartitionLog.read returns them); returns
        the offset after the last batch. A partial trailing batch is left for the next
        read. Raises CorruptRecordError (length, CRC) or InvalidRecordError (magic,
        a record that does not parse)."""
        try:
            return self._add(data)
        except IndexError:
            raise InvalidRecordError("a record runs past the end of its batch") from None

    def _add(self, data: bytes) -> int:
        head = _HEAD.unpack_from
        mv = memoryview(data)
        pos, end = 0, len(data)
        start = self.start
        general = self.min_timestamp is not None
        reader = self.reader
        if reader is None:
            reader = self.reader = default_reader()
        plain = reader.read_plain
        records = 0
        while end - pos >= HEADER_SIZE:
            base, length, magic, crc, attributes, last_delta, count = head(data, pos)
            size = length + LOG_OVERHEAD
            if size < HEADER_SIZE:
                raise CorruptRecordError(f"batch at position {pos} has length {length}")
            bend = pos + size
            if bend > end:
                break
            if magic != MAGIC:
                raise InvalidRecordError(f"batch at position {pos} has magic {magic}, only 2 is supported")
            if crc32c(mv[pos + ATTRIBUTES_OFFSET:bend]) != crc:
                raise CorruptRecordError(f"batch at position {pos} (offset {base}): CRC mismatch")
            self.next_offset = base + last_delta + 1
            if attributes & CONTROL_MASK:  # a transaction marker ends its producer's held records
                if attributes & TRANSACTIONAL_MASK and base >= start:
                    self._marker(RecordBatch(data, pos))
            elif attributes & TRANSACTIONAL_MASK:
                records += self._transactional(RecordBatch(data, pos))
            elif general or attributes & COMPRESSION_MASK or base < start or self.held:
                # (while transactions are open every record goes through `put`, which tells them)
                records += self._general(RecordBatch(data, pos))
            else:
                plain(data, mv, pos, bend, self)
                records += count
            pos = bend
        self.records += records
        self.bytes += pos
        return self.next_offset

    def _general(self, batch: RecordBatch) -> int:
        start, min_ts = self.start, self.min_timestamp
        n = 0
        for r in decode_records(batch):
            if r.offset < start:
                continue
            n += 1
            if r.key is not None and (min_ts is None or r.timestamp >= min_ts):
                self.put(r.key, r.value)
        return n

    def _transactional(self, batch: RecordBatch) -> int:
        start, min_ts = self.start, self.min_timestamp
        held = self.held
        producer_id, producer_epoch = batch.producer_id, batch.producer_epoch
        n = 0
        for r in decode_records(batch):
            if r.offset < start:
                continue
            n += 1
            if r.key is None or (min_ts is not None and r.timestamp < min_ts):
                continue
            if r.value is None:
                self.put(r.key, None)
            else:
                held.hold(producer_id, producer_epoch, r.key, r.value, r.offset)
        return n

    def _marker(self, batch: RecordBatch) -> None:
        marker = read_marker(batch)
        if marker is None:
            return
        for key, value in self.held.end(marker.producer_id, marker.commit):
            self.latest[key] = value

    def put(self, key: bytes, value: bytes | None) -> None:
        if self.held:
            self.held.touched(key, value)
        latest = self.latest
        if value is not None:
            latest[key] = value
            return
        if key[:2] in _BARRIER_KEY_TYPES:  # barrier: seal what came before it
            if latest or self._creators:
                self._sealed.append(self._creators)
                self._sealed.append(latest)
                self._sealed.append([(key, None)])
                self.latest, self._creators = {}, []
            else:
                self._sealed.append([(key, None)])
            return
        previous = latest.get(key)
        if previous is not None and key[:2] in _OFFSET_KEY_TYPES:
            self._creators.append((key, previous))  # the commit created its group; the tombstone cannot undo that
        latest[key] = None

    # --- handing over ------------------------------------------------------------------------

    def take_sealed(self) -> Iterator[Pair]:
        """The (key, value) pairs closed by barriers so far, in replay order."""
        sealed, self._sealed = self._sealed, []
        return _pairs(sealed)

    def pending(self) -> list[Held]:
        """The transactional records without a marker so far, in log order (at the log end: still pending)."""
        return self.held.pending()

    def take_all(self) -> Iterator[Pair]:
        """Everything not yet taken, in replay order; the fold starts empty again."""
        self._sealed.append(self._creators)
        self._sealed.append(self.latest)
        self.latest, self._creators = {}, []
        return self.take_sealed()

    def __len__(self) -> int:
        """Keys in the current (unsealed) part."""
        return len(self.latest)


def _pairs(parts: list[Iterable[Pair] | dict[bytes, bytes | None]]) -> Iterator[Pair]:
    for part in parts:
        yield from (part.items() if isinstance(part, dict) else part)
