"""The transactions of one partition: ongoing ones, the last stable offset, the aborted list.

Kafka's ProducerStateManager (ongoingTxns, unreplicatedTxns, firstUnstableOffset), UnifiedLog
(lastStableOffset) and TransactionIndex (the aborted transactions a read_committed Fetch answers):

* a transaction begins with its producer's first transactional batch in the partition and is
  ongoing until its marker (COMMIT/ABORT control batch) is appended;
* once the marker is appended the transaction is decided but still "unreplicated" until the high
  watermark passes the marker (here: until the marker is durable), and until then it still holds
  the last stable offset back, as Kafka's does;
* the last stable offset (LSO) = the first offset of the earliest undecided-or-unreplicated
  transaction (never below the log start offset), bounded by the high watermark; without such a
  transaction, the high watermark;
* an aborted transaction (one that had records here) joins the aborted list
  (producer id, first offset, last offset = the marker's offset) kept in marker order, as the
  transaction index; entries whose marker falls below the log start offset are trimmed.

Byte marks: every batch appended adds its size to `appended_bytes`, and every durable one to
`durable_bytes`; a transaction remembers the mark at its first batch. The mark of the LSO is then
what a read_committed delayed fetch counts (the bytes made readable to it), see `stable_mark`.
"""

from __future__ import annotations

import bisect
from typing import NamedTuple


class OpenTxn(NamedTuple):
    producer_id: int
    first_offset: int
    first_mark: int  # appended bytes before its first batch


class DecidedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    first_mark: int
    last_offset: int  # the marker's offset


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int  # the LSO once it completed (TransactionIndex's field; ends a search early)


class TxnTracker:
    __slots__ = ("ongoing", "unreplicated", "aborted", "_aborted_lasts", "appended_bytes", "durable_bytes")

    def __init__(self) -> None:
        # keyed by first offset; first offsets grow with the log, so insertion order is offset order
        self.ongoing: dict[int, OpenTxn] = {}
        self.unreplicated: dict[int, DecidedTxn] = {}
        self.aborted: list[AbortedTxn] = []
        self._aborted_lasts: list[int] = []
        self.appended_bytes = 0
        self.durable_bytes = 0

    # ----------------------------------------------------------------- changes
    def begin(self, producer_id: int, first_offset: int, first_mark: int | None = None) -> None:
        mark = self.appended_bytes if first_mark is None else first_mark
        self.ongoing[first_offset] = OpenTxn(producer_id, first_offset, mark)

    def complete(self, producer_id: int, first_offset: int, marker_offset: int, aborted: bool) -> None:
        """The producer's transaction begun at `first_offset` ends with the marker at `marker_offset`."""
        txn = self.ongoing.pop(first_offset, None)
        if txn is None:
            raise ValueError(f"no ongoing transaction of producer {producer_id} at offset {first_offset}")
        if aborted:
            lso = self._next_open_offset(producer_id, marker_offset + 1)
            self.aborted.append(AbortedTxn(producer_id, first_offset, marker_offset, lso))
            self._aborted_lasts.append(marker_offset)
        self.unreplicated[first_offset] = DecidedTxn(producer_id, first_offset, txn.first_mark, marker_offset)

    def _next_open_offset(self, producer_id: int, otherwise: int) -> int:
        """Kafka's ProducerStateManager.lastStableOffset(completedTxn)."""
        for txn in self.ongoing.values():
            if txn.producer_id != producer_id:
                return txn.first_offset
        return otherwise

    def appended(self, size: int) -> None:
        self.appended_bytes += size

    def made_durable(self, size: int) -> None:
        self.durable_bytes += size

    def trim(self, log_start: int) -> None:
        """Forget aborted transactions whose marker is below the log start offset (their segment is gone)."""
        lasts = self._aborted_lasts
        if lasts and lasts[0] < log_start:
            cut = bisect.bisect_left(lasts, log_start)
            del lasts[:cut]
            del self.aborted[:cut]

    # ---------------------------------------------------------------- queries
    def _settle(self, high_watermark: int) -> None:
        """Kafka's onHighWatermarkUpdated: decided transactions whose marker is readable stop holding the LSO."""
        unreplicated = self.unreplicated
        if unreplicated:
            for first in [k for k, txn in unreplicated.items() if txn.last_offset < high_watermark]:
                del unreplicated[first]

    def _first_unstable(self, high_watermark: int) -> OpenTxn | DecidedTxn | None:
        self._settle(high_watermark)
        first: OpenTxn | DecidedTxn | None = None
        if self.ongoing:
            first = next(iter(self.ongoing.values()))
        if self.unreplicated:
            other = self.unreplicated[min(self.unreplicated)]
            if first is None or other.first_offset < first.first_offset:
                first = other
        return first

    def last_stable_offset(self, high_watermark: int, log_start: int) -> int:
        if not self.ongoing and not self.unreplicated:
            return high_watermark
        first = self._first_unstable(high_watermark)
        if first is None:
            return high_watermark
        return min(max(first.first_offset, log_start), high_watermark)

    def stable_mark(self, high_watermark: int) -> int:
        """The byte mark of the LSO: bytes below it a read_committed reader may have."""
        if not self.ongoing and not self.unreplicated:
            return self.durable_bytes
        first = self._first_unstable(high_watermark)
        return self.durable_bytes if first is None else min(first.first_mark, self.durable_bytes)

    def open_first_offset(self) -> int:
        """The first offset of the earliest ongoing transaction, -1 without one."""
        return next(iter(self.ongoing)) if self.ongoing else -1

    def aborted_in(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Kafka's collectAbortedTxns: aborted transactions with last offset >= `fetch_offset` and first
        offset < `upper_bound` (the end of what a Fetch returned), in marker order."""
        out: list[AbortedTxn] = []
        aborted = self.aborted
        for i in range(bisect.bisect_left(self._aborted_lasts, fetch_offset), len(aborted)):
            txn = aborted[i]
            if txn.first_offset < upper_bound:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound:
                break
        return out
