"""Offset expiry (KIP-211) and compaction of closed segments, staged beside a live server.

    python -m spark_jobs.expire --master local[*] --log-dirs DIR[,DIR...]
        [--offsets-retention-minutes 10080] [--delete-retention-ms 86400000] [--now-ms MS]

Stages: (1) scan every segment of every ``__consumer_offsets-N`` in parallel with
the project's codecs; (2) check the scan (corrupt batches fail the job, or with
``--skip-corrupt`` exclude that partition); (3) compaction: the latest offset of
each raw key over the closed segments (Kafka's offset map; the active, last segment
is never read for it nor rewritten) decides what each closed segment keeps, and one
task per segment writes the cleaned copy (storage.cleaner, Kafka's retention rules
incl. the delete horizon) into the partition's staging directory; (4) expiry: the
latest state of every group over the whole log (active segment included) goes
through rules.offset_expiry (Kafka's ClassicGroup/OffsetMetadataManager rules; a KIP-848
consumer group's by ConsumerGroup's: its records are never expired, its offsets of
subscribed topics kept, the group itself never deleted here) and the
expired offsets, plus classic groups left empty with no offsets, become tombstones;
(5) per partition the tombstones file and the manifest (last) are written.

Nothing in the live log changes: the server validates the staging area
(storage.compaction.validate_staging), swaps the segments and appends the tombstones
after re-checking them against its live state. See docs/SPARK_JOBS.md.

Cluster mode: ``--storage-url URL`` (instead of ``--log-dirs``) reads the rows of the PostgreSQL
store in chunks (spark_jobs/store_input.py) and stages one kc_blobs row per partition for its owner
(spark_jobs/expire_store.py). See docs/SPARK_JOBS.md, "Cluster mode".
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import uuid

from storage.pg import url as storage_url

from .common import (
    JobError,
    PartitionInput,
    Progress,
    parse_conf,
    print_summary,
    spark_session,
    worker_error,
)
from .expire_store import clean_chunk, write_store_staging
from .scan import (
    KIND_CONSUMER,
    KIND_GROUP,
    KIND_OFFSET,
    KIND_SUMMARY,
    KIND_TXN,
    ROW_SCHEMA,
    scan_many,
    scan_tasks,
    segment_specs,
    ship_code,
)
from .store_input import DEFAULT_CHUNK_BYTES, find_inputs, source_name
from .txn_rows import pending, per_segment, resolve, settle


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m spark_jobs.expire", description=__doc__.split("\n")[0])
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--log-dirs", nargs="+",
                        help="log.dirs (comma-separated allowed) or __consumer_offsets-N directories")
    source.add_argument("--storage-url", type=storage_url.argument,
                        help="cluster mode: read the PostgreSQL store (storage.url) and stage "
                        "each partition's result there (kc_blobs) for its owner to apply")
    p.add_argument("--chunk-bytes", type=int, default=DEFAULT_CHUNK_BYTES,
                   help="with --storage-url: bytes of rows per chunk (the unit of scan and compaction, as a "
                        "segment file is; a partition's last chunk is left uncompacted as an active segment is)")
    p.add_argument("--offsets-retention-minutes", type=int, default=10080, help="offsets.retention.minutes")
    p.add_argument("--delete-retention-ms", type=int, default=86_400_000, help="delete.retention.ms")
    p.add_argument("--now-ms", type=int, default=None, help="the time decisions are made at (default: now)")
    p.add_argument("--index-interval-bytes", type=int, default=4096, help="index.interval.bytes")
    p.add_argument("--offsets-partitions", type=int, default=50, help="offsets.topic.num.partitions")
    p.add_argument("--no-compaction", action="store_true", help="only compute expiry tombstones")
    p.add_argument("--no-expiry", action="store_true", help="only compact closed segments")
    p.add_argument("--skip-corrupt", action="store_true",
                   help="leave partitions with corrupt batches out (reported) instead of failing")
    p.add_argument("--shuffle-partitions", type=int, default=None)
    p.add_argument("--conf", action="append", help="extra Spark setting key=value")
    return p.parse_args(argv)


def _clean_task(row, staging_id, now_ms, retention_ms, interval, decided):
    """Task: compact one closed segment into the staging directory; `decided`: how the transactions the segment
    leaves open end (spark_jobs/txn_rows.per_segment)."""
    from storage.cleaner import clean_segment, write_segment_files
    from storage.compaction import fingerprint
    from storage.errors import RecordError
    from storage.txn_clean import SegmentTxns

    path = row.path
    before = os.stat(path)
    with open(path, "rb") as f:
        data = f.read()
    after = os.stat(path)
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or len(data) != row.scanned_bytes:
        raise JobError(f"{path} changed while the job read it (a closed segment must not change)")
    keep = set(row.keep or ())
    try:
        cleaned = clean_segment(data, keep.__contains__, now_ms=now_ms, delete_retention_ms=retention_ms,
                                upper_bound=row.upper_bound, aborted=SegmentTxns(data).aborted_fn(decided))
    except RecordError as exc:
        raise JobError(f"{path}: {exc}") from None
    staging = os.path.join(os.path.dirname(path), staging_id)
    os.makedirs(staging, exist_ok=True)
    write_segment_files(staging, row.segment_base, cleaned.data, interval)
    original = fingerprint(path, data)
    original.update(last_offset=row.last_offset, next_offset=row.last_offset + 1)
    name = os.path.basename(path)
    return {"partition": row.src_partition, "base_offset": row.segment_base, "file": name,
            "original": original,
            "cleaned": {"file": name, "size": len(cleaned.data), "crc32c": fingerprint(
                os.path.join(staging, name), cleaned.data)["crc32c"], "empty": not cleaned.data,
                "last_offset": cleaned.last_offset},
            "stats": vars(cleaned.stats)}


def _expire_task(row, now_ms, retention_ms):
    """Task: KIP-211 decisions for one group's latest state."""
    from rules.offset_expiry import expire_consumer_group, expire_group
    from storage.consumer_group_records import consumer_group_subscribed
    from storage.records import GroupMetadataKey, OffsetCommitValue, decode_value, read_offset_value

    group, value, value_offset, offsets, consumer = row.group, None, None, [], []
    pending = set()
    for it in row.items:
        if it.kind == KIND_TXN:  # a pending transactional offset (Kafka's hasPendingTransactionalOffsets)
            pending.add((it.topic, it.partition))
        elif it.kind == KIND_GROUP:
            value, value_offset = decode_value(GroupMetadataKey(group), it.value)[1], it.offset
        elif it.kind == KIND_CONSUMER:
            consumer.append((it.key, it.value))
        else:
            v = OffsetCommitValue(*read_offset_value(it.value))
            offsets.append((it.topic, it.partition, v, it.offset))
    live = [(t, p, v) for t, p, v, _ in offsets]
    if consumer:  # a KIP-848 consumer group: its rules, and it is never deleted here
        decision = expire_consumer_group(consumer_group_subscribed(consumer), live, now_ms, retention_ms)
    else:
        decision = expire_group(value, live, now_ms, retention_ms)
    if pending:  # Kafka's cleanupExpiredOffsets: no offset with a pending one expires, no group with them goes
        decision = type(decision)(tuple(e for e in decision.expired if (e[0], e[1]) not in pending), False)
    at = {(t, p): o for t, p, _, o in offsets}
    out = [{"offsets_partition": row.src_partition, "type": "offset_commit", "group": group, "topic": t,
            "partition": p, "decided_on_offset": at[(t, p)], "reason": why} for t, p, why in decision.expired]
    if decision.delete_group:
        out.append({"offsets_partition": row.src_partition, "type": "group_metadata", "group": group,
                    "decided_on_offset": value_offset, "reason": "empty_group_without_offsets"})
    return out


def run(argv, spark=None, out=None) -> dict:
    args = parse_args(argv)
    progress = Progress("expire", out)
    now_ms = args.now_ms if args.now_ms is not None else int(time.time() * 1000)
    staging_id = f".staging-{now_ms}-{uuid.uuid4().hex[:8]}"
    own = spark is None
    if own:
        spark = spark_session(args.master, "kgc-expire", args.shuffle_partitions, parse_conf(args.conf))
    parts: list[PartitionInput] = []
    try:
        parts, segs = find_inputs(args.log_dirs, args.storage_url, args.chunk_bytes)
        return _run(spark, args, progress, now_ms, staging_id, parts, segs)
    except BaseException as exc:
        for part in parts if not args.storage_url else ():  # (the store's staging is one transaction)
            shutil.rmtree(os.path.join(part.path, staging_id), ignore_errors=True)
        line = worker_error(exc)
        if line and not isinstance(exc, JobError):
            raise JobError(f"nothing staged: {line}") from None
        raise
    finally:
        if own:
            spark.stop()


def _run(spark, args, progress, now_ms, staging_id, parts, segs_by_path) -> dict:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from storage.txn_clean import cleanable_below

    retention_ms = args.offsets_retention_minutes * 60_000
    ship_code(spark)
    segs = {p.partition: segs_by_path[p.path] for p in parts}
    specs = segment_specs(parts, segs_by_path.__getitem__)
    progress.log(f"{len(parts)} partition(s), {len(specs)} segment(s); now_ms={now_ms} "
                 f"offsets.retention.ms={retention_ms} delete.retention.ms={args.delete_retention_ms}")
    summary: dict = {"partitions": len(parts), "segments": len(specs), "staging_id": staging_id}
    with progress.stage(1, 5, f"scan {len(specs)} segment(s)"):
        n, skip = args.offsets_partitions, args.skip_corrupt
        tasks = scan_tasks(specs, spark.sparkContext.defaultParallelism)
        rdd = spark.sparkContext.parallelize(tasks, max(1, len(tasks))).flatMap(
            lambda t: scan_many(t, n, True, skip))
        scanned = spark.createDataFrame(rdd, ROW_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
        seg_rows = scanned.filter(F.col("kind") == KIND_SUMMARY).collect() if specs else []
        txns = resolve(scanned.filter(F.col("kind") == KIND_TXN).select(
            "src_partition", "segment_base", "offset", "producer_id", "commit").collect() if specs else [])
    with progress.stage(2, 5, "check the scan"):
        info = {(r.src_partition, r.segment_base): r for r in seg_rows}
        bad = sorted({r.src_partition for r in seg_rows if r.note and "skipped" in r.note})
        for r in seg_rows:
            if r.note:
                progress.log(f"  note: {r.note}")
        if bad:
            progress.log(f"  partitions left out because of corrupt batches: {bad}")
        good = [p.partition for p in parts if p.partition not in bad]
        summary.update(records_read=sum(r.n_records for r in seg_rows), partitions_skipped=bad)
        # Kafka's first uncleanable offset: the active segment, or the segment of the first offset of the
        # earliest transaction still open (the last stable offset), whichever is lower
        bounds = {p: cleanable_below([b for b, _, _ in segs[p]], segs[p][-1][0], txns.first_open.get(p)) for p in good}
        for p in good:
            if bounds[p] < segs[p][-1][0]:
                progress.log(f"  partition {p}: a transaction is open from offset {txns.first_open[p]}: "
                             f"segments from {bounds[p]} on are not compacted")
        closed = [(p, base, source_name(source), bounds[p], info[(p, base)].offset - 1, info[(p, base)].n_bytes)
                  for p in good for base, source, _ in segs[p][:-1] if base < bounds[p]]
        summary["bytes_before"] = sum(c[5] for c in closed)
    records = scanned.filter(~F.col("kind").isin(KIND_SUMMARY, KIND_TXN)).filter(F.col("src_partition").isin(good))
    committed = settle(spark, records, txns)  # aborted and pending transactional records never count
    with progress.stage(3, 5, f"compact {len(closed)} closed segment(s)"):
        cleaned = _compact(spark, args, committed, closed, txns, staging_id, now_ms, good, segs) \
            if closed and not args.no_compaction else []
    tombstones = []
    with progress.stage(4, 5, "expire offsets (KIP-211)"):
        if not args.no_expiry:
            live = _live_per_group(committed, pending(spark, records, txns))
            tombstones = live.rdd.flatMap(lambda r: _expire_task(r, now_ms, retention_ms)).collect()
    scanned.unpersist()
    with progress.stage(5, 5, "write staging manifests"):
        settings = {"offsets.retention.minutes": args.offsets_retention_minutes,
                    "offsets.retention.ms": retention_ms, "delete.retention.ms": args.delete_retention_ms,
                    "now_ms": now_ms, "index.interval.bytes": args.index_interval_bytes,
                    "compaction": not args.no_compaction, "expiry": not args.no_expiry}
        if args.storage_url:
            staged = write_store_staging(args.storage_url, staging_id, now_ms, settings, segs, good, cleaned,
                                         tombstones, info)
            for name in staged:
                progress.log(f"  staged {name}")
        else:
            staged = _write_local_staging(progress, parts, bad, staging_id, now_ms, settings, cleaned, tombstones,
                                          segs, info, bounds)
    totals = _sum_stats(cleaned)
    summary.update(
        keys_kept=totals.get("records_kept", 0), superseded_dropped=totals.get("superseded_dropped", 0),
        tombstones_dropped=totals.get("tombstones_dropped", 0),
        expired_offsets=sum(1 for t in tombstones if t["type"] == "offset_commit"),
        deleted_groups=sum(1 for t in tombstones if t["type"] == "group_metadata"),
        tombstones_written=len(tombstones), segments_cleaned=len(cleaned),
        bytes_after=sum(c["cleaned"]["size"] for c in cleaned) if cleaned else summary["bytes_before"],
        staged=staged, wall_time_s=round(progress.elapsed, 2))
    print_summary(progress, summary)
    return summary


def _compact(spark, args, committed, closed, txns, staging_id, now_ms, good, segs) -> list:
    """Stage 3: the closed segments below their partition's cleaning bound cleaned (Kafka's cleaner: the
    latest committed record per key kept, tombstones past delete.retention.ms dropped), as staged files."""
    from pyspark.sql import Window, functions as F

    jobs = spark.createDataFrame(closed, "src_partition int, segment_base long, path string, "
                                         "upper_bound long, last_offset long, scanned_bytes long")
    in_closed = committed.filter(F.col("key").isNotNull()).join(
        jobs.select("src_partition", "segment_base"), ["src_partition", "segment_base"], "left_semi")
    w = Window.partitionBy("src_partition", "key")
    keep = (in_closed.withColumn("latest", F.max("offset").over(w))
            .filter(F.col("offset") == F.col("latest"))
            .groupBy("src_partition", "segment_base").agg(F.collect_list("offset").alias("keep")))
    jobs = jobs.join(keep, ["src_partition", "segment_base"], "left")
    sid, dr, iv = staging_id, args.delete_retention_ms, args.index_interval_bytes
    after = per_segment(txns)  # how the transactions each segment leaves open end
    if args.storage_url:
        sources = {(p, base): source for p in good for base, source, _ in segs[p][:-1]}
        return jobs.rdd.map(lambda r: clean_chunk(
            r, sources[(r.src_partition, r.segment_base)], now_ms, dr,
            after.get((r.src_partition, r.segment_base), {}))).collect()
    return jobs.rdd.map(lambda r: _clean_task(r, sid, now_ms, dr, iv, after.get(
            (r.src_partition, r.segment_base), {}))).collect()


def _write_local_staging(progress, parts, bad, staging_id, now_ms, settings, cleaned, tombstones, segs, info,
                         bounds) -> list:
    """Stage 5 in local mode: each partition's cleaned segments and tombstones into its staging directory."""
    staged: list = []
    for part in parts:
        if part.partition in bad:
            continue
        p = part.partition
        mine = sorted((c for c in cleaned if c["partition"] == p), key=lambda c: c["base_offset"])
        tombs = [{k: v for k, v in t.items() if k != "offsets_partition"}
                 for t in tombstones if t["offsets_partition"] == p]
        staging = os.path.join(part.path, staging_id)
        if not mine and not tombs:
            shutil.rmtree(staging, ignore_errors=True)
            continue
        last_base, _, _ = segs[p][-1]
        _write_staging(staging, staging_id, p, now_ms, settings, mine, tombs, last_base, info[(p, last_base)],
                       bounds[p])
        staged.append(staging)
        progress.log(f"  partition {p}: {len(mine)} segment(s) cleaned, {len(tombs)} tombstone(s) -> {staging}")
    return staged


def _live_per_group(records, pending=None):
    """One row per (src_partition, group): the live (latest, not tombstoned) records of the group as
    ``items`` (kind, topic, partition, offset, value, key), what _expire_task decides on. A
    consumer-group record is latest per raw key (``key``), an offset or group record per decoded key.
    `records`: the committed ones (spark_jobs/txn_rows.settle); `pending`: transactional offsets still
    pending, added as items of kind KIND_TXN (Kafka keeps their keys and their group)."""
    from pyspark.sql import functions as F

    key = ["src_partition", "kind", "group", "topic", "partition"]
    latest = (records.filter(F.col("kind").isin(KIND_OFFSET, KIND_GROUP)).groupBy(*key)
              .agg(F.max(F.struct("offset", "value")).alias("w"))
              .select(*key, F.lit(None).cast("binary").alias("key"), "w.offset", "w.value"))
    consumer = (records.filter(F.col("kind") == KIND_CONSUMER)
                .groupBy("src_partition", "kind", "group", "key")
                .agg(F.max(F.struct("offset", "value")).alias("w"))
                .select("src_partition", "kind", "group", F.lit(None).cast("string").alias("topic"),
                        F.lit(None).cast("int").alias("partition"), "key", "w.offset", "w.value"))
    live = latest.unionByName(consumer).filter(F.col("value").isNotNull())
    if pending is not None:
        live = live.unionByName(pending.select(
            "src_partition", F.lit(KIND_TXN).cast("byte").alias("kind"), "group", "topic", "partition",
            F.lit(None).cast("binary").alias("key"), "offset", "value"))
    return live.groupBy("src_partition", "group").agg(
        F.collect_list(F.struct("kind", "topic", "partition", "offset", "value", "key")).alias("items"))


def _write_staging(staging: str, staging_id: str, partition: int, now_ms: int, settings: dict, cleaned: list,
                   tombs: list, last_base: int, active, upper_bound: int) -> None:
    """One partition's staging directory: its tombstones file, then its manifest (last, atomically)."""
    from storage.compaction import (
        FORMAT,
        FORMAT_VERSION,
        MANIFEST,
        TOMBSTONES_FILE,
        fingerprint,
        tombstone_batches,
        write_json_atomic,
    )

    os.makedirs(staging, exist_ok=True)
    data = tombstone_batches(tombs, now_ms)
    with open(os.path.join(staging, TOMBSTONES_FILE), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    meta = fingerprint(os.path.join(staging, TOMBSTONES_FILE), data)
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "id": staging_id, "partition": partition,
        "created_at_ms": int(time.time() * 1000), "settings": settings,
        "upper_bound": upper_bound, "covered_log_end_offset": active.offset,
        "active_segment": {"base_offset": last_base, "size": active.n_bytes},
        "segments": [{k: c[k] for k in ("base_offset", "file", "original", "cleaned")} for c in cleaned],
        "tombstones": {"file": TOMBSTONES_FILE, "count": len(tombs), "size": meta["size"],
                       "crc32c": meta["crc32c"], "records": tombs},
        "stats": _sum_stats(cleaned),
    }
    write_json_atomic(os.path.join(staging, MANIFEST), manifest)


def _sum_stats(cleaned: list) -> dict:
    """The cleaning stats of segments (as _clean_task returns them), added up by name."""
    totals: dict = {}
    for c in cleaned:
        for k, v in c["stats"].items():
            totals[k] = totals.get(k, 0) + v
    return totals


def main(argv=None) -> int:
    try:
        run(sys.argv[1:] if argv is None else argv)
    except JobError as exc:
        print(f"expire failed: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
