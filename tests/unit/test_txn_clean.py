"""Kafka's cleaner rules for transactions (storage/txn_clean.py, storage/cleaner.py, storage/log_compaction.py):
aborted records never count and are dropped, committed ones compete by offset, open ones are never cleaned,
markers are kept; and the Spark jobs' driver view of transactions (spark_jobs/txn_rows.resolve)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from spark_jobs.scan import KIND_TXN, scan_segment
from spark_jobs.txn_rows import resolve
from storage.batch import decode_records, iter_batches
from storage.cleaner import clean_segment
from storage.log import PartitionLog
from storage.log_compaction import CompactionPolicy
from storage.txn_clean import AbortedRanges, SegmentTxns, cleanable_below
from tests.support.txn_logs import marker, plain, segment_bytes, txn, write_segments

# offsets: 0 plain t1=5 | 1 plain t0=10 | 2 P100 t0=20 | 3 P200 t1=30 | 4 ABORT P200 | 5 P300 t2=40 (open here)
SEGMENT = [plain(1, 5), plain(0, 10), txn(100, 0, 20), txn(200, 1, 30), marker(200, False), txn(300, 2, 40)]


def kept(data: bytes) -> list[tuple[int, bool, bytes | None]]:
    return [(r.offset, b.is_control, r.value) for b in iter_batches(data) for r in decode_records(b)]


def test_segment_txns_knows_outcomes_first_markers_and_open_runs():
    data = segment_bytes(0, SEGMENT + [marker(100, True)])  # 6: COMMIT P100
    txns = SegmentTxns(data)
    assert txns.outcome(100, 2) is True and txns.outcome(200, 3) is False
    assert txns.outcome(300, 5) is None  # its marker is beyond these bytes
    assert txns.open_runs == {300: 5}
    assert txns.first_markers() == {200: (4, False), 100: (6, True)}
    aborted = txns.aborted_fn({300: False})
    assert [aborted(b) for b in iter_batches(data)] == [False, False, False, True, False, True, False]
    assert not any(txns.aborted_fn({300: None})(b) for b in iter_batches(data) if b.base_offset == 5)


def test_clean_segment_drops_aborted_records_keeps_committed_and_markers():
    data = segment_bytes(0, SEGMENT + [marker(100, True)])
    txns = SegmentTxns(data)
    aborted = txns.aborted_fn({300: False})
    # the offset map without aborted records: t1 -> 0 (the aborted 30 at 3 does not count), t0 -> 2 (committed)
    latest = {0, 2}
    cleaned = clean_segment(data, lambda o: o in latest or o in (4, 6), now_ms=0, delete_retention_ms=1,
                            upper_bound=7, aborted=aborted)
    assert kept(cleaned.data) == [(0, False, plain_value(1, 5)), (2, False, plain_value(0, 20)),
                                  (4, True, marker_value(200, False)), (6, True, marker_value(100, True))]
    assert cleaned.stats.aborted_dropped == 2
    # an aborted batch ending at the cleaning bound stays, empty (Kafka's RETAIN_EMPTY)
    at_bound = clean_segment(data[:sum(b.size for b in list(iter_batches(data))[:4])], lambda o: o == 0, now_ms=0,
                             delete_retention_ms=1, upper_bound=4, aborted=aborted)
    last = list(iter_batches(at_bound.data))[-1]
    assert (last.base_offset, last.last_offset, decode_records(last)) == (3, 3, [])


def plain_value(partition: int, offset: int) -> bytes | None:
    return decode_records(next(iter_batches(plain(partition, offset))))[0].value


def marker_value(pid: int, commit: bool) -> bytes | None:
    return decode_records(next(iter_batches(marker(pid, commit))))[0].value


def test_aborted_ranges_and_cleanable_bound():
    ranges = AbortedRanges([(7, 10, 20), (7, 30, 40), (8, 0, 5)])
    batches = {off: next(iter_batches(segment_bytes(off, [txn(pid, 0, 1)]))) for off, pid in
               ((10, 7), (25, 7), (40, 7), (3, 8), (12, 9))}
    assert {off: ranges.aborted(b) for off, b in batches.items()} == {10: True, 25: False, 40: True, 3: True,
                                                                      12: False}
    assert not ranges.aborted(next(iter_batches(segment_bytes(12, [plain(0, 1)]))))
    assert cleanable_below([0, 5, 8, 12], 12, None) == 12
    assert cleanable_below([0, 5, 8, 12], 12, 10) == 8  # the segment holding the open transaction's first offset
    assert cleanable_below([0, 5, 8, 12], 12, 8) == 8
    assert cleanable_below([0, 5, 8, 12], 12, 14) == 12


def scan_rows(data: bytes, base: int, is_last: bool, path) -> list:
    path.write_bytes(data)
    return list(scan_segment((0, base, str(path), is_last), 1, False, False))


def test_scan_rows_and_resolution_across_segments(tmp_path):
    seg0 = segment_bytes(0, SEGMENT)
    seg1 = segment_bytes(6, [marker(300, False), txn(400, 3, 70), plain(3, 1)])
    rows = scan_rows(seg0, 0, False, tmp_path / "0.log") + scan_rows(seg1, 6, True, tmp_path / "6.log")
    records = [r for r in rows if r[3] in (0, 1)]
    # t1: the plain 5 only (P200's aborted 30 is left out); t0: the 10, and P100's 20 apart (no marker in the
    # segment: undecided, with its producer); the segments' combine keeps them apart
    got = sorted((r[1], r[4], r[12], r[18]) for r in records)
    assert got == [(0, 0, False, None), (0, 1, False, None), (0, 2, True, 100), (0, 5, True, 300),
                   (6, 7, True, 400), (6, 8, False, None)]
    events = [SimpleNamespace(src_partition=r[0], segment_base=r[1], offset=r[4], producer_id=r[18], commit=r[19])
              for r in rows if r[3] == KIND_TXN]
    res = resolve(events)
    assert res.outcomes == {(0, 0, 100): None, (0, 0, 300): False, (0, 6, 400): None}
    assert res.first_open == {0: 2}  # P100 never ends: open from offset 2


def test_topic_compaction_drops_aborted_and_stops_at_the_last_stable_offset(tmp_path):
    """PartitionLog.compact (cleanup.policy=compact): P200's aborted record neither supersedes t1=5 nor survives;
    P100's committed 20 supersedes the 10; nothing from the segment of the open P300 on is cleaned."""
    path = str(tmp_path / "t-0")
    write_segments(path, [SEGMENT[:3], SEGMENT[3:5], [marker(100, True), plain(5, 99)],
                          SEGMENT[5:] + [plain(2, 41)], [plain(4, 1)]])

    async def go():
        lg = PartitionLog.open(path, segment_bytes=1 << 20, flush_policy="none")
        try:
            with ThreadPoolExecutor(1) as pool:
                stats = await lg.compact(CompactionPolicy(min_cleanable_dirty_ratio=0.0), 0, pool,
                                         last_stable_offset=7, aborted_txns=[(200, 3, 4)])
            return stats, kept(read_all(lg))
        finally:
            await lg.close()
    stats, records = asyncio.run(go())
    assert stats is not None and stats.aborted_dropped == 1
    assert records == [(0, False, plain_value(1, 5)), (2, False, plain_value(0, 20)),
                       (4, True, marker_value(200, False)), (5, True, marker_value(100, True)),
                       (6, False, plain_value(5, 99)), (7, False, txn_value(300, 2, 40)),
                       (8, False, plain_value(2, 41)),
                       (9, False, plain_value(4, 1))]


def read_all(lg: PartitionLog) -> bytes:
    out, offset = b"", 0
    while offset < lg.log_end_offset:
        data = lg.read(offset, 1 << 20)
        batches = list(iter_batches(data))
        out += data
        offset = batches[-1].next_offset
    return out


def txn_value(pid: int, partition: int, offset: int) -> bytes | None:
    return decode_records(next(iter_batches(txn(pid, partition, offset))))[0].value
