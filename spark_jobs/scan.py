"""The task side: walk one segment file with the project's own codecs, yield rows.

A "segment" may also be a chunk of PostgreSQL rows (cluster mode, spark_jobs/store_input.py): its
bytes are fetched instead of read from a file, and walked the same way.

Segment files are packed into tasks by size (``scan_tasks``: 2 x the cores, or ~64
MiB of segments per task, whichever is more): a task opens each file by path,
checks every batch (length, magic, CRC-32C via storage.batch), decodes records
(storage.batch.decode_records) and keys (storage.records.read_offset_key, the
hand-packed v1 reader, else decode_key or, for KIP-848 consumer-group records (KIND_CONSUMER, their
raw key always kept), storage.consumer_group_records.decode_key, for KIP-932 share-group records (KIND_SHARE,
likewise) storage.share_group_records.decode_key), and yields, in ``ROW_SCHEMA`` order, each
segment's *last* record of each key (a map-side combine: within a segment file order is offset
order, so an earlier record of a key can never be the latest; this cuts the rows crossing into the JVM by the number of
repeated commits), then one summary row for the segment. The key is the raw key
bytes when ``with_keys`` (compaction, like Kafka, works on raw keys), else the
decoded key. Values stay encoded: the jobs keep only the latest record per key and
decode just those (storage.records.read_offset_value / decode_value), which saves decoding every
superseded commit. This is storage.dump.iter_log_records' walk, with batch
timestamps kept and an optional skip-corrupt mode.

Transactions (storage/txn_clean.SegmentTxns, a first walk over the segment's batch headers and markers):
a transactional record whose marker is in the segment is decided there -- aborted: left out; committed:
an ordinary row (committed offsets compete by their record offset, Kafka's rule); a tombstone applies at
once whatever its transaction (storage/txn_fold.py). A transactional value whose marker lies beyond the
segment is a row with ``transactional`` set and its ``producer_id``: the driver decides it from the later
segments' ``KIND_TXN`` rows (``spark_jobs/txn_rows.py``). Each segment yields one ``KIND_TXN`` row per
producer for its first marker (``commit`` set: it ends what an earlier segment left open) and one per
transaction it leaves open (``commit`` null, ``offset`` = the transaction's first offset here). The
combine keeps the records before and after each such first offset apart, so a snapshot may stop there.
"""

from __future__ import annotations

import bisect
import heapq
import os

from rules.placement import partition_for
from storage import consumer_group_records, share_group_records
from storage.batch import decode_records, ensure_valid, iter_batches
from storage.consumer_group_records import ConsumerGroupKey
from storage.errors import RecordError
from storage.records import GroupMetadataKey, Key, OffsetCommitKey, UnknownRecordType, decode_key, read_offset_key
from storage.share_group_records import ShareGroupKey
from storage.txn_clean import SegmentTxns

from .store_input import read_source, source_name, source_size

KIND_OFFSET, KIND_GROUP, KIND_OTHER, KIND_CONSUMER, KIND_TXN, KIND_SHARE, KIND_SUMMARY = 0, 1, 2, 3, 4, 5, 9
ABORTED = -2  # (internal) the records of a batch whose transaction aborts in the segment

ROW_SCHEMA = (
    "src_partition int, segment_base long, active boolean, kind byte, offset long, timestamp long, "
    "key binary, group string, topic string, partition int, value binary, target int, "
    "transactional boolean, n_records long, n_batches long, n_bytes long, misplaced long, "
    "note string, producer_id long, commit boolean"
)


class CorruptSegment(Exception):
    """A batch that fails its checks; the message names the file and position."""


def scan_segment(spec: tuple, target_partitions: int, with_keys: bool, skip_corrupt: bool):
    """Rows of one segment. ``spec`` = (source partition, base offset, path or PgChunk, is_last).

    A partial batch at the end of the *last* segment is the server's in-flight
    append (or a torn write recovery would cut): it ends the data, with a note. A
    bad batch anywhere else raises CorruptSegment, or with ``skip_corrupt`` is
    skipped (a CRC failure: just that batch; an unreadable length: the rest of the
    file) and described in the summary row's note.
    """
    src, base, source, is_last = spec
    data = read_source(source)
    path = source_name(source)
    txns = SegmentTxns(data)  # markers and open transactions first: a record's fate is known when it is read
    splits = sorted(txns.open_runs.values())  # a snapshot's cover may stop at one of these (bulk_load)
    placed: dict[str, int] = {}
    latest: dict = {}  # map-side combine: only a segment's last record per key leaves the task
    notes: list[str] = []
    n_records = n_batches = misplaced = 0
    next_offset = base
    position = 0
    batches = iter_batches(data)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            break
        except RecordError as exc:
            msg = f"{path}: bad batch at position {position}: {exc}"
            if not skip_corrupt:
                raise CorruptSegment(msg) from None
            notes.append(f"skipped {len(data) - position} bytes (rest of file): {msg}")
            position = len(data)
            break
        position = batch.position
        try:
            ensure_valid(batch)
            records = decode_records(batch)
        except RecordError as exc:
            msg = f"{path}: bad batch at position {position}: {exc}"
            if not skip_corrupt:
                raise CorruptSegment(msg) from None
            notes.append(f"skipped batch of {batch.size} bytes: {msg}")
            position += batch.size
            continue
        position += batch.size
        n_batches += 1
        next_offset = batch.next_offset
        if batch.is_control:
            continue
        pid = None  # set: a transactional value whose marker is not in this segment ("transactional" rows)
        if batch.is_transactional:
            commit = txns.outcome(batch.producer_id, batch.base_offset)
            if commit is None:
                pid = batch.producer_id
            elif not commit:
                pid = ABORTED
        for r in records:
            n_records += 1
            if r.key is None:
                continue
            held = pid if r.value is not None else None  # a tombstone applies at once (storage/txn_fold.py)
            if held == ABORTED:
                continue
            row = _row(src, base, is_last, r, with_keys, target_partitions, placed, held)
            if row is None:
                continue
            if isinstance(row, str):
                if not skip_corrupt:
                    raise CorruptSegment(f"{path}: {row} (batch at position {batch.position})")
                notes.append(f"skipped record: {path}: {row} (batch at position {batch.position})")
                continue
            if row[11] is not None and row[11] != src:
                misplaced += 1
            region = bisect.bisect_right(splits, r.offset) if splits else 0
            raw = with_keys or row[3] not in (KIND_OFFSET, KIND_GROUP)  # else by the decoded key (any key version)
            combine = (r.key if raw else row[-1], region, held)
            latest[combine] = row[:-1]
    yield from latest.values()
    for producer_id, (offset, commit) in txns.first_markers().items():  # each ends what an earlier segment left open
        yield _txn_row(src, base, is_last, offset, producer_id, commit)
    for producer_id, first in txns.open_runs.items():  # transactions this segment leaves open
        yield _txn_row(src, base, is_last, first, producer_id, None)
    if position != len(data):
        msg = f"{path}: {len(data) - position} bytes of a partial batch at position {position}"
        if is_last:
            notes.append(f"ignored the last segment's partial tail (a write in progress?): {msg}")
        elif not skip_corrupt:
            raise CorruptSegment(msg)
        else:
            notes.append(f"skipped: {msg}")
    yield (src, base, is_last, KIND_SUMMARY, next_offset, None, None, None, None, None, None, None, None,
           n_records, n_batches, len(data), misplaced, "\n".join(notes) or None, None, None)


def _txn_row(src: int, base: int, is_last: bool, offset: int, producer_id: int, commit: bool | None) -> tuple:
    return (src, base, is_last, KIND_TXN, offset, None, None, None, None, None, None, None, None,
            None, None, None, None, None, producer_id, commit)


def _row(src: int, base: int, is_last: bool, r, with_keys: bool, target_partitions: int, placed: dict,
         held: int | None):
    """One record's row (ROW_SCHEMA) with its decoded key appended (the combine key without raw keys);
    None for nothing to yield, a message for a key that does not parse."""
    txn = held is not None
    try:
        fields = read_offset_key(r.key)  # the key Kafka writes, without the schema walk
        key: Key | ConsumerGroupKey | ShareGroupKey
        if fields is not None:
            key = OffsetCommitKey(*fields)
        elif consumer_group_records.is_consumer_group_key(r.key):
            key = consumer_group_records.decode_key(r.key)
        elif share_group_records.is_share_group_key(r.key):
            key = share_group_records.decode_key(r.key)
        else:
            key = decode_key(r.key)[1]
    except UnknownRecordType:
        return (src, base, is_last, KIND_OTHER, r.offset, r.timestamp, r.key if with_keys else None, None, None,
                None, r.value, None, txn, None, None, None, None, None, held, None, r.key)
    except RecordError as exc:
        return f"bad record key at offset {r.offset}: {exc}"
    group = key.group
    target = placed.get(group)
    if target is None:
        target = placed[group] = partition_for(group, target_partitions)
    if type(key) is OffsetCommitKey:
        return (src, base, is_last, KIND_OFFSET, r.offset, r.timestamp, r.key if with_keys else None,
                group, key.topic, key.partition, r.value, target, txn, None, None, None, None, None, held, None, key)
    if type(key) is GroupMetadataKey:
        return (src, base, is_last, KIND_GROUP, r.offset, r.timestamp, r.key if with_keys else None,
                group, None, None, r.value, target, txn, None, None, None, None, None, held, None, key)
    # a KIP-848 consumer-group or KIP-932 share-group record: its raw key always (it tells the records of a
    # group apart)
    kind = KIND_SHARE if isinstance(key, share_group_records.ShareGroupKey) else KIND_CONSUMER
    return (src, base, is_last, kind, r.offset, r.timestamp, r.key,
            group, None, None, r.value, target, txn, None, None, None, None, None, held, None, key)


def segment_specs(partitions, segment_lister) -> list[tuple]:
    """Every (partition, base, path, is_last) of the inputs, largest files first so
    the long tasks start early."""
    specs = []
    for part in partitions:
        segs = segment_lister(part.path)
        for i, (base, path, size) in enumerate(segs):
            specs.append((size, (part.partition, base, path, i == len(segs) - 1)))
    specs.sort(key=lambda s: -s[0])
    return [spec for _, spec in specs]


TASK_TARGET_BYTES = 64 << 20


def scan_tasks(specs: list[tuple], parallelism: int, target_bytes: int = TASK_TARGET_BYTES) -> list[list[tuple]]:
    """Pack segment specs into scan tasks: enough tasks to keep every core busy
    (2 x ``parallelism``) or about ``target_bytes`` of segments each when the input is
    larger, balanced by size (largest file first onto the least loaded task). Many
    small segments (a partition dir per offsets partition, 50 by default) no longer
    cost one Spark task (~0.1-0.2 s of scheduling and Python worker overhead) each."""
    if not specs:
        return []
    sizes = [source_size(s[2]) for s in specs]
    count = min(len(specs), max(2 * max(1, parallelism), -(-sum(sizes) // target_bytes)))
    loads = [(0, i) for i in range(count)]
    tasks: list[list[tuple]] = [[] for _ in range(count)]
    for size, spec in sorted(zip(sizes, specs), key=lambda item: -item[0]):
        load, i = heapq.heappop(loads)
        tasks[i].append(spec)
        heapq.heappush(loads, (load + size, i))
    return [t for t in tasks if t]


def scan_many(task: list[tuple], target_partitions: int, with_keys: bool, skip_corrupt: bool):
    """Rows of every segment of one packed task (see ``scan_tasks``)."""
    for spec in task:
        yield from scan_segment(spec, target_partitions, with_keys, skip_corrupt)


def ship_code(spark) -> None:
    """On a real cluster, send the primitives, rules, storage and spark_jobs packages to the executors
    (local masters import them from this checkout / virtualenv directly)."""
    master = spark.sparkContext.master
    if master.startswith("local"):
        return
    import tempfile
    import zipfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    fd, zpath = tempfile.mkstemp(suffix=".zip", prefix="kgc-spark-")
    os.close(fd)
    with zipfile.ZipFile(zpath, "w") as z:
        for pkg in ("primitives", "rules", "storage", "spark_jobs"):
            for dirpath, _, files in os.walk(os.path.join(root, pkg)):
                for name in files:
                    if name.endswith(".py"):
                        full = os.path.join(dirpath, name)
                        z.write(full, os.path.relpath(full, root))
    spark.sparkContext.addPyFile(zpath)
