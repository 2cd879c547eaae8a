"""The task side: walk one segment file with the project's own codecs, yield rows.

A "segment" may also be a chunk of PostgreSQL rows (cluster mode, spark_jobs/store_input.py): its
bytes are fetched instead of read from a file, and walked the same way.

Segment files are packed into tasks by size (``scan_tasks``: 2 x the cores, or ~64
MiB of segments per task, whichever is more): a task opens each file by path,
checks every batch (length, magic, CRC-32C via storage.batch), decodes records
(storage.batch.decode_records) and keys (storage.records.read_offset_key, the
hand-packed v1 reader, else decode_key or, for KIP-848 consumer-group records (KIND_CONSUMER, their
raw key always kept), storage.consumer_group_records.decode_key), and yields, in ``ROW_SCHEMA`` order, each
segment's *last* record of each key (a map-side combine: within a segment file order is offset
order, so an earlier record of a key can never be the latest; this cuts the rows crossing into the JVM by the number of
repeated commits), then one summary row for the segment. The key is the raw key
bytes when ``with_keys`` (compaction, like Kafka, works on raw keys), else the
decoded key. Values stay encoded: the jobs keep only the latest record per key and
decode just those (storage.records.read_offset_value / decode_value), which saves decoding every
superseded commit. This is storage.dump.iter_log_records' walk, with batch
timestamps and transactional flags kept and an optional skip-corrupt mode.
"""

from __future__ import annotations

import heapq
import os

from storage import consumer_group_records
from storage.batch import decode_records, ensure_valid, iter_batches
from storage.consumer_group_records import ConsumerGroupKey
from storage.errors import RecordError
from storage.placement import partition_for
from storage.records import GroupMetadataKey, Key, OffsetCommitKey, UnknownRecordType, decode_key, read_offset_key

from .store_input import read_source, source_name, source_size

KIND_OFFSET, KIND_GROUP, KIND_OTHER, KIND_CONSUMER, KIND_SUMMARY = 0, 1, 2, 3, 9

ROW_SCHEMA = (
    "src_partition int, segment_base long, active boolean, kind byte, offset long, timestamp long, "
    "key binary, group string, topic string, partition int, value binary, target int, "
    "transactional boolean, n_records long, n_batches long, n_bytes long, misplaced long, "
    "note string"
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
        txn = batch.is_transactional
        for r in records:
            n_records += 1
            if r.key is None:
                continue
            try:
                fields = read_offset_key(r.key)  # the key Kafka writes, without the schema walk
                key: Key | ConsumerGroupKey
                if fields is not None:
                    key = OffsetCommitKey(*fields)
                elif consumer_group_records.is_consumer_group_key(r.key):
                    key = consumer_group_records.decode_key(r.key)
                else:
                    key = decode_key(r.key)[1]
            except UnknownRecordType:
                latest[r.key] = (src, base, is_last, KIND_OTHER, r.offset, r.timestamp,
                                 r.key if with_keys else None, None, None, None, r.value, None, txn,
                                 None, None, None, None, None)
                continue
            except RecordError as exc:
                msg = f"{path}: bad record key at offset {r.offset} (batch at position {batch.position}): {exc}"
                if not skip_corrupt:
                    raise CorruptSegment(msg) from None
                notes.append(f"skipped record: {msg}")
                continue
            group = key.group
            target = placed.get(group)
            if target is None:
                target = placed[group] = partition_for(group, target_partitions)
            if target != src:
                misplaced += 1
            row: tuple
            if type(key) is OffsetCommitKey:
                row = (src, base, is_last, KIND_OFFSET, r.offset, r.timestamp, r.key if with_keys else None,
                       group, key.topic, key.partition, r.value, target, txn, None, None, None, None, None)
            elif type(key) is GroupMetadataKey:
                row = (src, base, is_last, KIND_GROUP, r.offset, r.timestamp, r.key if with_keys else None,
                       group, None, None, r.value, target, txn, None, None, None, None, None)
            else:  # a KIP-848 consumer-group record: its raw key always (it tells the records of a group apart)
                row = (src, base, is_last, KIND_CONSUMER, r.offset, r.timestamp, r.key,
                       group, None, None, r.value, target, txn, None, None, None, None, None)
            latest[r.key if with_keys else key] = row
    yield from latest.values()
    if position != len(data):
        msg = f"{path}: {len(data) - position} bytes of a partial batch at position {position}"
        if is_last:
            notes.append(f"ignored the last segment's partial tail (a write in progress?): {msg}")
        elif not skip_corrupt:
            raise CorruptSegment(msg)
        else:
            notes.append(f"skipped: {msg}")
    yield (src, base, is_last, KIND_SUMMARY, next_offset, None, None, None, None, None, None, None, None,
           n_records, n_batches, len(data), misplaced, "\n".join(notes) or None)


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
    """On a real cluster, send the primitives, storage and spark_jobs packages to the executors
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
        for pkg in ("primitives", "storage", "spark_jobs"):
            for dirpath, _, files in os.walk(os.path.join(root, pkg)):
                for name in files:
                    if name.endswith(".py"):
                        full = os.path.join(dirpath, name)
                        z.write(full, os.path.relpath(full, root))
    spark.sparkContext.addPyFile(zpath)
