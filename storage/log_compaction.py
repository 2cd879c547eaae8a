"""Compaction of a topic log's closed segments (``cleanup.policy=compact``), with Kafka's cleaner rules.

A mixin of ``storage.log.PartitionLog``. Which records survive is ``storage/cleaner.py``
(the same code the Spark expire job runs on ``__consumer_offsets``): the latest record of
each key below the cleaning bound, keyless records dropped, tombstones kept until their
batch's delete horizon (``delete.retention.ms`` after the first cleaning that saw them).

* What is cleaned: the closed segments whose successor starts at or below the high
  watermark (the bound is the base offset of the first segment that is not), when the
  bytes added since the last cleaning are at least ``min.cleanable.dirty.ratio`` of them
  (Kafka's LogCleanerManager). The clean point is kept in memory only: after a restart
  the first cleaning redoes the whole range (the result is the same).
* How: the offset map (key -> latest offset) is built, and each segment rewritten batch by
  batch into ``<base>.log.cleaned``, in a worker thread reading the files by path (memory:
  the map plus one batch). The map holds at most ``MAX_MAP_KEYS`` keys; a range with more
  is cleaned in several passes, as Kafka's dedupe buffer does.
* Swap, per segment: the old index files are removed, ``<base>.log.cleaned`` is renamed
  over ``<base>.log`` (atomic) and opened (recovery rebuilds its indexes), then the log's
  segment object is replaced on the event loop. Readers of the old object keep reading
  the old inode until then. A crash leaves either file whole, and missing indexes are
  rebuilt at open, so a crash never loses or mixes records.
"""

from __future__ import annotations

import asyncio
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass

import structlog

from .batch import HEADER_SIZE, LOG_OVERHEAD, RecordBatch, decode_records, ensure_valid
from .cleaner import CleanStats, clean_segment
from .errors import CorruptRecordError
from .handles import HANDLES
from .log_fields import LogFields
from .recovery import fsync_dir, open_segment
from .segment import Segment
from .txn_clean import Aborted, AbortedRanges, never_aborted

log = structlog.get_logger(__name__)

CLEANED_SUFFIX = ".cleaned"
MAX_MAP_KEYS = 1_000_000
_LENGTH = struct.Struct(">qi")


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    delete_retention_ms: int = 86_400_000
    min_cleanable_dirty_ratio: float = 0.5


def _batches(path: str, limit: int):
    """Each batch of a segment file up to ``limit`` bytes, read one at a time."""
    with open(path, "rb") as f:
        position = 0
        while position + LOG_OVERHEAD <= limit:
            head = f.read(LOG_OVERHEAD)
            if len(head) < LOG_OVERHEAD:
                return
            size = _LENGTH.unpack(head)[1] + LOG_OVERHEAD
            if size < HEADER_SIZE:
                raise CorruptRecordError(f"{path}: batch at {position} has impossible length {size}")
            data = head + f.read(size - LOG_OVERHEAD)
            if len(data) < size or position + size > limit:
                return
            yield data
            position += size


def _build_map(segments: list[tuple[int, str, int]], upper: int,
               aborted: Aborted = never_aborted) -> tuple[dict[bytes, int], int]:
    """key -> latest offset over ``segments`` (base, path, size), records of aborted transactions left out;
    returns the map and the bound actually covered (lower than ``upper`` when the map filled up: whole
    segments only)."""
    latest: dict[bytes, int] = {}
    for i, (_base, path, size) in enumerate(segments):
        seen: dict[bytes, int] = {}
        for data in _batches(path, size):
            batch = RecordBatch(data, 0)
            ensure_valid(batch)
            if batch.is_control or aborted(batch):  # a marker's key is no record key (cleaner.py keeps markers)
                continue
            for rec in decode_records(batch):
                if rec.key is not None and rec.offset < upper:
                    seen[rec.key] = rec.offset
        if i > 0 and len(latest) + len(seen) > MAX_MAP_KEYS:
            return latest, segments[i][0]
        latest.update(seen)
    return latest, upper


def _clean_into(path: str, size: int, latest: dict[bytes, int], upper: int, now_ms: int,
                delete_retention_ms: int, fsync, aborted: Aborted = never_aborted) -> tuple[str, CleanStats]:
    """Write the cleaned copy of one segment beside it; returns its path and what was dropped."""
    target = path + CLEANED_SUFFIX
    stats = CleanStats()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for data in _batches(path, size):
            batch = RecordBatch(data, 0)
            keys = {rec.offset: rec.key for rec in decode_records(batch)}

            def is_latest(offset: int, keys=keys) -> bool:
                return latest.get(keys[offset], -1) <= offset

            cleaned = clean_segment(data, is_latest, now_ms=now_ms, delete_retention_ms=delete_retention_ms,
                                    upper_bound=upper, aborted=aborted)
            stats.add(cleaned.stats)
            if cleaned.data:
                os.write(fd, cleaned.data)
        fsync(fd)
    finally:
        os.close(fd)
    return target, stats


def _swap_in(directory: str, base: int, old_path: str, cleaned_path: str, interval: int, fsync) -> Segment:
    """Replace a segment file by its cleaned copy and open it (indexes rebuilt)."""
    stem = old_path[:-len(".log")]
    for suffix in (".index", ".timeindex"):
        try:
            os.unlink(stem + suffix)
        except FileNotFoundError:
            pass
    os.replace(cleaned_path, old_path)
    fsync_dir(directory, fsync)
    return open_segment(directory, base, interval, last=False, fsync=fsync)[0]


class CompactionMixin(LogFields):
    """Needs PartitionLog's ``path``, ``_segments``, ``_awaits_flush``, ``_inflight``, ``_hw``, ``_closed``,
    ``_fsync`` and ``_index_interval``."""

    _cleaned_upto = 0  # offsets below were cleaned by this process (not persisted)

    @property
    def cleaned_upto(self) -> int:
        """Offsets below were cleaned by the last compaction (0: none yet)."""
        return self._cleaned_upto

    def _cleanable(self, last_stable_offset: int | None = None) -> list[Segment]:
        stable = self._hw if last_stable_offset is None else min(self._hw, last_stable_offset)
        out = []
        for seg, nxt in zip(self._segments, self._segments[1:]):
            if self._awaits_flush(seg) or nxt.base_offset > stable:
                break
            out.append(seg)
        return out

    async def compact(self, policy: CompactionPolicy, now_ms: int, executor, *, last_stable_offset: int | None = None,
                      aborted_txns: Iterable[tuple[int, int, int]] = ()) -> CleanStats | None:
        """Clean the closed segments if enough of them is dirty; None if nothing was due.

        ``last_stable_offset``: the partition's LSO (None: no transactions); ``aborted_txns``: its aborted
        transactions as (producer id, first offset, marker offset), Kafka's transaction index."""
        segments = self._cleanable(last_stable_offset)
        if not segments or self._closed:
            return None
        upper = self._segments[len(segments)].base_offset
        total = sum(s.size for s in segments)
        dirty = sum(s.size for s in segments if s.base_offset >= self._cleaned_upto)
        if total == 0 or dirty / total < policy.min_cleanable_dirty_ratio:
            return None
        loop = asyncio.get_running_loop()
        directory = self.path  # a topic deletion renames it: then stop, never write by the old path
        files = [(s.base_offset, s.log_path, s.durable_size) for s in segments]
        aborted = AbortedRanges(aborted_txns).aborted
        latest, upper = await loop.run_in_executor(executor, _build_map, files, upper, aborted)
        stats = CleanStats()
        for seg, (base, path, size) in zip(segments, files):
            if base >= upper:
                break
            if self.path != directory:
                return stats
            cleaned, seg_stats = await loop.run_in_executor(
                executor, _clean_into, path, size, latest, upper, now_ms, policy.delete_retention_ms, self._fsync,
                aborted)
            stats.add(seg_stats)
            if seg_stats.batches_copied == seg_stats.batches_read:  # nothing changed: keep the old file
                await loop.run_in_executor(executor, os.unlink, cleaned)
                continue
            if self._closed or self.path != directory or seg not in self._segments:
                os.unlink(cleaned)
                return stats
            # Reads of the old segment keep the old file: its own fd, since the shared read-fd cache
            # (handles.HANDLES) is keyed by path and the cleaned copy takes that path.
            if seg.fd < 0:
                seg.fd = os.open(path, os.O_RDONLY)
            HANDLES.forget(path)
            new = await loop.run_in_executor(executor, _swap_in, self.path, base, path, cleaned,
                                             self._index_interval, self._fsync)
            if self._closed or self.path != directory or seg not in self._segments:
                new.close()
                return stats
            self._segments[self._segments.index(seg)] = new
            inflight = self._inflight
            if inflight is not None:  # it may still hold the old segment's descriptors
                await asyncio.wait([inflight])
            seg.close()
        self._cleaned_upto = upper
        log.info("storage.log.compacted", dir=self.path, upper_bound=upper, records_read=stats.records_read,
                 records_kept=stats.records_kept, bytes_read=stats.bytes_read, bytes_written=stats.bytes_written)
        return stats
