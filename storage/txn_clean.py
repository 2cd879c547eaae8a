"""Which transactional batches a cleaner drops: Kafka's cleaner rules for transactions (LogCleaner's
CleanedTransactionMetadata, LogCleanerManager.cleanableOffsets).

* The cleaning bound never passes the last stable offset: only segments wholly below the first offset of the
  earliest open transaction are cleaned, so records of an open (pending) transaction are never dropped and never
  enter the offset map.
* A transactional batch whose transaction was aborted (its producer's next marker after it is ABORT) does not
  enter the offset map, and its records are dropped (an emptied batch goes, except at the cleaning bound).
* Records of committed transactions compete with other records of their key by their own offset, as any record.
* Markers (control batches) are kept: storage/cleaner.py copies them byte for byte.

Two sources tell a batch's fate: the aborted list a live partition keeps (`AbortedRanges`: Kafka's transaction
index, (producer id, first offset, marker offset)), or the markers of the bytes themselves (`SegmentTxns`, a walk
over batch headers; a transaction whose marker lies beyond them is decided by `after`, as the Spark jobs learn it
from the later segments).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping

from .batch import RecordBatch, ensure_valid, iter_batches
from .control_records import read_marker
from .errors import RecordError

Aborted = Callable[[RecordBatch], bool]


def never_aborted(batch: RecordBatch) -> bool:
    return False


class AbortedRanges:
    """Aborted transactions as (producer id, first offset, last offset = the marker's offset); `aborted(batch)`
    says whether a transactional batch belongs to one (Kafka's collectAbortedTransactions + onBatchRead)."""

    __slots__ = ("_by_producer",)

    def __init__(self, aborted: Iterable[tuple[int, int, int]]) -> None:
        by_producer: dict[int, list[tuple[int, int]]] = {}
        for producer_id, first, last in aborted:
            by_producer.setdefault(producer_id, []).append((first, last))
        for ranges in by_producer.values():
            ranges.sort()
        self._by_producer = by_producer

    def aborted(self, batch: RecordBatch) -> bool:
        if not batch.is_transactional or batch.is_control:
            return False
        ranges = self._by_producer.get(batch.producer_id)
        if not ranges:
            return False
        i = bisect.bisect_right(ranges, (batch.base_offset, 1 << 62)) - 1
        return i >= 0 and ranges[i][0] <= batch.base_offset <= ranges[i][1]


class SegmentTxns:
    """The transactions seen in one stretch of a log (a segment), from its batch headers and markers.

    `markers[pid]`: the (offset, commit) of each of the producer's markers, in offset order;
    `open_runs[pid]`: the first offset of the producer's transactional batches after its last marker here
    (a transaction the stretch does not end: decided later, or still open). Batches that fail their checks are
    passed over (the caller's own walk reports them)."""

    __slots__ = ("markers", "open_runs", "_offsets")

    def __init__(self, data: bytes) -> None:
        markers: dict[int, list[tuple[int, bool]]] = {}
        open_runs: dict[int, int] = {}
        try:
            for batch in iter_batches(data):
                if not batch.is_transactional:
                    continue
                try:
                    ensure_valid(batch)
                    marker = read_marker(batch) if batch.is_control else None
                except RecordError:
                    continue
                pid = batch.producer_id
                if batch.is_control:
                    if marker is not None:
                        markers.setdefault(pid, []).append((batch.base_offset, marker.commit))
                        open_runs.pop(pid, None)
                elif pid not in open_runs:
                    open_runs[pid] = batch.base_offset
        except RecordError:
            pass  # an unreadable length: the rest is the caller's to report
        self.markers = markers
        self.open_runs = open_runs
        self._offsets = {pid: [offset for offset, _ in m] for pid, m in markers.items()}

    def outcome(self, producer_id: int, offset: int) -> bool | None:
        """How the transaction holding `offset` ends here: True commit, False abort, None: not here."""
        offsets = self._offsets.get(producer_id)
        if not offsets:
            return None
        i = bisect.bisect_right(offsets, offset)
        return self.markers[producer_id][i][1] if i < len(offsets) else None

    def first_markers(self) -> dict[int, tuple[int, bool]]:
        """Each producer's first marker here: it ends the transaction an earlier stretch left open."""
        return {pid: m[0] for pid, m in self.markers.items()}

    def aborted_fn(self, after: Mapping[int, bool | None]) -> Aborted:
        """`aborted(batch)`: the batch's transaction ends with ABORT here, or beyond here by `after[pid]`
        (True commit, False abort, None / missing: undecided, never dropped)."""
        def aborted(batch: RecordBatch) -> bool:
            if not batch.is_transactional or batch.is_control:
                return False
            commit = self.outcome(batch.producer_id, batch.base_offset)
            if commit is None:
                commit = after.get(batch.producer_id)
            return commit is False
        return aborted


def cleanable_below(segment_bases: list[int], bound: int, first_open: int | None) -> int:
    """Kafka's first uncleanable offset: `bound` (the active segment's base), lowered to the base of the segment
    holding `first_open` (the first offset of the earliest open transaction: the last stable offset)."""
    if first_open is None or first_open >= bound:
        return bound
    i = bisect.bisect_right(segment_bases, first_open) - 1
    return segment_bases[i] if i >= 0 else min(bound, first_open)


__all__ = ["Aborted", "AbortedRanges", "SegmentTxns", "cleanable_below", "never_aborted"]
