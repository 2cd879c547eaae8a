"""Transactional records of __consumer_offsets held per producer until their marker, in the loader's fold of a
log (storage/latest.py): Kafka's OffsetMetadataManager rules (replay with a producer id,
replayEndTransactionMarker) applied to raw keys and values by rules/pending_offsets.py -- the same
implementation the live shard holds its pending offsets in, so a restart finds what the shard had.

* A record of a transactional batch with a value is held under its producer (the latest per key), with its log
  offset; a tombstone in such a batch applies at once, as any tombstone (Kafka's replay ignores the producer).
* A later non-transactional record of the key marks the held one stale (a committed offset newer in the log:
  the COMMIT will not materialize it); a tombstone of the key drops it.
* COMMIT: the producer's held records that are not stale become the latest of their keys, in log order; each
  makes other producers' held records of the key that are older in the log stale. ABORT: dropped.
* What has no marker by the end is `pending()`: the loader replays it as pending offsets of the shard.

The fold does not decode keys, so each raw key is its own scope of "open transactions" (the live shard's is
the group): which records commit, drop or go stale depends only on the key, so the outcome is the same.
Memory: one entry per (open producer, key), as the live shard holds.
"""

from __future__ import annotations

from typing import NamedTuple

from rules.pending_offsets import PendingTxnOffsets


class Held(NamedTuple):
    """A transactional record without its marker by the end of the log."""

    producer_id: int
    producer_epoch: int
    key: bytes
    value: bytes
    stale: bool
    offset: int


class HeldTransactions:
    __slots__ = ("rules",)

    def __init__(self) -> None:
        #: raw key (as a 1-tuple: its own scope) -> (raw value, log offset), per producer
        self.rules: PendingTxnOffsets[tuple[bytes], tuple[bytes, int]] = PendingTxnOffsets()

    def hold(self, producer_id: int, producer_epoch: int, key: bytes, value: bytes, offset: int) -> None:
        self.rules.saw_epoch(producer_id, producer_epoch)
        self.rules.add(producer_id, (key,), (value, offset))

    def touched(self, key: bytes, value: bytes | None) -> None:
        """A non-transactional record of `key` (None: a tombstone) after the held ones."""
        if value is None:
            self.rules.deleted((key,))
        else:
            self.rules.committed((key,))

    def end(self, producer_id: int, commit: bool) -> list[tuple[bytes, bytes]]:
        """The producer's marker: on COMMIT, the (key, value) pairs that become the latest, in log order."""
        rules = self.rules
        return [(key, value) for (key,), (value, _offset) in rules.end(producer_id, commit, rules.next_seq())]

    def pending(self) -> list[Held]:
        """The held records of producers without a marker, in log order."""
        epochs = self.rules.epochs
        entries = sorted(self.rules.entries(), key=lambda item: item[2].seq)
        return [Held(producer_id, epochs.get(producer_id, -1), key, value, entry.stale, offset)
                for producer_id, (key,), entry in entries for value, offset in (entry.value,)]

    def __bool__(self) -> bool:
        return bool(self.rules.by_producer)
