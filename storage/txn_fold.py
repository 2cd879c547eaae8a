"""Transactional records of __consumer_offsets held per producer until their marker: the loader's fold
(storage/latest.py) applies Kafka's OffsetMetadataManager rules (replay with a producer id,
replayEndTransactionMarker) on raw keys and values.

* A record of a transactional batch with a value is held under its producer (the latest per key), with its log
  offset; a tombstone in such a batch applies at once, as any tombstone (Kafka's replay ignores the producer).
* A later non-transactional record of the key marks the held one stale (a committed offset newer in the log:
  the COMMIT will not materialize it); a tombstone of the key drops it.
* COMMIT: the producer's held records that are not stale become the latest of their keys, in log order; each
  makes other producers' held records of the key that are older in the log stale. ABORT: dropped.
* What has no marker by the end is `pending()`: the loader replays it as pending offsets of the shard.

Memory: one entry per (open producer, key), as the live shard holds (coordinator/offsets/pending.py).
"""

from __future__ import annotations

from typing import NamedTuple


class Held(NamedTuple):
    """A transactional record without its marker by the end of the log."""

    producer_id: int
    producer_epoch: int
    key: bytes
    value: bytes
    stale: bool
    offset: int


class HeldTransactions:
    __slots__ = ("producers", "epochs")

    def __init__(self) -> None:
        self.producers: dict[int, dict[bytes, list]] = {}  # producer -> key -> [value, offset, stale]
        self.epochs: dict[int, int] = {}

    def hold(self, producer_id: int, producer_epoch: int, key: bytes, value: bytes, offset: int) -> None:
        entries = self.producers.get(producer_id)
        if entries is None:
            entries = self.producers[producer_id] = {}
        entries[key] = [value, offset, False]
        if producer_epoch > self.epochs.get(producer_id, -1):
            self.epochs[producer_id] = producer_epoch

    def touched(self, key: bytes, value: bytes | None) -> None:
        """A non-transactional record of `key` (None: a tombstone) after the held ones."""
        for producer_id, entries in list(self.producers.items()):
            entry = entries.get(key)
            if entry is None:
                continue
            if value is None:
                del entries[key]
                if not entries:  # nothing of the producer left (as the live shard: offsets/pending.py)
                    del self.producers[producer_id]
                    self.epochs.pop(producer_id, None)
            else:
                entry[2] = True

    def end(self, producer_id: int, commit: bool) -> list[tuple[bytes, bytes]]:
        """The producer's marker: on COMMIT, the (key, value) pairs that become the latest, in log order."""
        entries = self.producers.pop(producer_id, None)
        self.epochs.pop(producer_id, None)
        if not commit or not entries:
            return []
        out = []
        for key, (value, offset, stale) in sorted(entries.items(), key=lambda item: item[1][1]):
            if stale:
                continue
            out.append((key, value))
            for other in self.producers.values():
                entry = other.get(key)
                if entry is not None and entry[1] < offset:
                    entry[2] = True
        return out

    def pending(self) -> list[Held]:
        """The held records of producers without a marker, in log order."""
        out = [Held(producer_id, self.epochs.get(producer_id, -1), key, value, stale, offset)
               for producer_id, entries in self.producers.items()
               for key, (value, offset, stale) in entries.items()]
        out.sort(key=lambda held: held.offset)
        return out

    def __bool__(self) -> bool:
        return bool(self.producers)
