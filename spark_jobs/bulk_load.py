"""Bulk load: __consumer_offsets logs (+ an optional offsets export) -> per-partition snapshots.

    python -m spark_jobs.bulk_load --master local[*] --input LOGDIR... [--export FILE]
        --output DIR [--offsets-partitions 50] [--skip-corrupt]

Cluster mode: ``--storage-url URL`` reads the __consumer_offsets rows of a PostgreSQL store
(spark_jobs/store_input.py), and ``--output postgresql://...`` publishes the snapshots as kc_blobs
rows of that store (spark_jobs/bulk_load_store.py) instead of directories.

Stages: (1) scan every segment in parallel with the project's codecs (one task per
file); (2) check the scan (corrupt batches fail the job here, before anything is
written); (3) keep the latest record per key (DataFrame aggregation; a KIP-848
consumer-group record by its raw key, carried into the snapshot as its bytes), drop
tombstoned keys, merge the export (a key the logs mention at all, even as a
tombstone, ignores the export: the log is the newer truth); (4) one task per target
partition builds and writes its snapshot into a hidden temp directory; (5) the
driver publishes all snapshots (renames) only after every task succeeded.

Groups are placed with partition_for(group, --offsets-partitions). When every record
read already lives in its target partition (same layout), a snapshot covers the
next offset after the last record of that partition's log, or the first offset of the
earliest transaction still open there (Kafka's last stable offset: the server replays the
open transaction from the log); otherwise (another partition count, or export-only input)
snapshots cover no log offset (``covers_log_offset`` = None): the server must not replay a
log over them, and pending transactional offsets are left out (they are not committed).
Transactional offsets count once committed, by their record offset; aborted ones never
(spark_jobs/txn_rows.py).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import time
from typing import Any

from storage.pg import url as storage_url

from .bulk_load_store import is_store, publish_to_store, shown, store_writer
from .common import (
    JobError,
    Progress,
    parse_conf,
    print_summary,
    spark_session,
    worker_error,
)
from .scan import (
    KIND_CONSUMER,
    KIND_GROUP,
    KIND_OFFSET,
    KIND_SHARE,
    KIND_SUMMARY,
    KIND_TXN,
    ROW_SCHEMA,
    scan_many,
    scan_tasks,
    segment_specs,
    ship_code,
)
from .store_input import DEFAULT_CHUNK_BYTES, find_inputs, source_size
from .txn_rows import resolve, settle


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m spark_jobs.bulk_load", description=__doc__.split("\n")[0])
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    p.add_argument("--input", nargs="*", action="extend", default=[],
                   help="__consumer_offsets-N directories, or log.dirs roots holding them")
    p.add_argument("--export", nargs="*", action="extend", default=[],
                   help="offsets export(s): .csv (header), .json/.jsonl (JSON lines), .parquet")
    p.add_argument("--export-format", choices=["csv", "json", "parquet"])
    p.add_argument("--storage-url", type=storage_url.argument,
                   help="also read the __consumer_offsets rows of this PostgreSQL store")
    p.add_argument("--chunk-bytes", type=int, default=DEFAULT_CHUNK_BYTES,
                   help="with --storage-url: bytes of rows per scan chunk")
    p.add_argument("--output", required=True, help="snapshot root (the server's snapshot dir), or a "
                   "postgresql:// URL: the snapshots go to that store (cluster mode)")
    p.add_argument("--offsets-partitions", type=int, default=50, help="offsets.topic.num.partitions of the target")
    p.add_argument("--skip-corrupt", action="store_true",
                   help="skip corrupt batches (reported) instead of failing the job")
    p.add_argument("--shuffle-partitions", type=int, default=None)
    p.add_argument("--conf", action="append", help="extra Spark setting key=value")
    args = p.parse_args(argv)
    if not args.input and not args.export and not args.storage_url:
        p.error("give at least one --input, --storage-url or --export")
    if args.offsets_partitions < 1:
        p.error("--offsets-partitions must be >= 1")
    if is_store(args.output):
        try:
            storage_url.parse(args.output)
        except ValueError as exc:
            p.error(f"--output: {exc}")
    return args


def _write_partition(index, rows, *, output, covers, partitions, job_ms, sources):
    """Task: build one target partition's snapshot into a temp dir (not published)."""
    import pyarrow as pa

    from storage.records import GroupMetadataKey, decode_value, read_offset_value
    from storage.snapshot import CONSUMER_GROUPS_SCHEMA, MANIFEST, OFFSETS_SCHEMA, groups_table, prepare_snapshot

    groups = []
    consumer: dict[str, list] = {name: [] for name in CONSUMER_GROUPS_SCHEMA.names}
    cols: dict[str, list] = {name: [] for name in OFFSETS_SCHEMA.names}
    for _, r in rows:
        if r.kind == KIND_GROUP:
            groups.append((r.group, decode_value(GroupMetadataKey(r.group), r.value)[1]))
            continue
        if r.kind in (KIND_CONSUMER, KIND_SHARE):  # carried as the record bytes: the loader decodes and replays them
            for name, item in zip(CONSUMER_GROUPS_SCHEMA.names, (r.group, r.key, r.value)):
                consumer[name].append(item)
            continue
        if r.value is not None:
            offset, metadata, commit_timestamp, leader_epoch, expire_timestamp = read_offset_value(r.value)
            fields = (offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)
        else:  # from the export
            fields = (r.offset, r.leader_epoch, r.metadata, r.commit_timestamp, r.expire_timestamp)
        for name, item in zip(("group", "topic", "partition", "offset", "leader_epoch", "metadata",
                               "commit_timestamp", "expire_timestamp"), (r.group, r.topic, r.partition) + fields):
            cols[name].append(item)
    offsets = pa.Table.from_pydict(cols, schema=OFFSETS_SCHEMA)
    tmp = prepare_snapshot(output, index, groups_table(groups), offsets, covers.get(index),
                           offsets_partitions=partitions, created_at_ms=job_ms, source=sources,
                           consumer_groups=pa.Table.from_pydict(consumer, schema=CONSUMER_GROUPS_SCHEMA))
    with open(os.path.join(tmp, MANIFEST)) as f:
        manifest = json.load(f)
    yield (index, tmp, manifest["groups"], manifest["offsets"], manifest["simple_groups"])


def run(argv, spark=None, out=None) -> dict:
    """Run the job; returns the summary. Raises JobError on bad input."""
    args = parse_args(argv)
    progress = Progress("bulk_load", out)
    job_ms = int(time.time() * 1000)
    own = spark is None
    if own:
        spark = spark_session(args.master, "kgc-bulk-load", args.shuffle_partitions, parse_conf(args.conf))
    output = args.output if is_store(args.output) else os.path.abspath(args.output)
    try:
        return _run(spark, args, progress, job_ms, output)
    except BaseException as exc:
        for tmp in glob.glob(os.path.join(output, "__consumer_offsets-*", f".tmp-snapshot-{job_ms:013d}-*")):
            shutil.rmtree(tmp, ignore_errors=True)
        line = worker_error(exc)
        if line and not isinstance(exc, JobError):
            raise JobError(f"corrupt input, nothing written: {line}") from None
        raise
    finally:
        if own:
            spark.stop()


def _run(spark, args, progress, job_ms, output) -> dict:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    n = args.offsets_partitions
    ship_code(spark)
    parts, segs = find_inputs(args.input, args.storage_url, args.chunk_bytes)
    specs = segment_specs(parts, segs.__getitem__)
    bytes_in = sum(source_size(s[2]) for s in specs)
    progress.log(f"{len(parts)} partition dir(s), {len(specs)} segment file(s), {bytes_in} bytes; "
                 f"{len(args.export)} export(s); target offsets partitions: {n}")
    summary: dict[str, Any] = {"partition_dirs": len(parts), "segments": len(specs), "bytes_before": bytes_in}

    with progress.stage(1, 5, f"scan {len(specs)} segment(s)"):
        skip = args.skip_corrupt
        tasks = scan_tasks(specs, spark.sparkContext.defaultParallelism)
        rdd = spark.sparkContext.parallelize(tasks, max(1, len(tasks))).flatMap(
            lambda t: scan_many(t, n, False, skip))
        scanned = spark.createDataFrame(rdd, ROW_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
        seg_rows = scanned.filter(F.col("kind") == KIND_SUMMARY).collect() if specs else []
        txns = resolve(scanned.filter(F.col("kind") == KIND_TXN).select(
            "src_partition", "segment_base", "offset", "producer_id", "commit").collect() if specs else [])
    with progress.stage(2, 5, "check the scan"):
        next_offset: dict[int, int] = {}
        skipped = []
        for r in seg_rows:
            if r.active:
                next_offset[r.src_partition] = r.offset
            if r.note:
                skipped.append(r.note)
                progress.log(f"  note: {r.note}")
        misplaced = sum(r.misplaced for r in seg_rows)
        same_layout = misplaced == 0 and all(p.partition < n for p in parts)
        # the log offsets covered are those of the logs read: only meaningful where the snapshots go
        same_log = (args.output == args.storage_url and not args.input) if is_store(output) else not args.storage_url
        # never past the first offset of a transaction still open (Kafka's last stable offset): the server
        # replays it from the log after the snapshot, as pending offsets
        covers = ({p: min(off, txns.first_open.get(p, off)) for p, off in next_offset.items()}
                  if same_layout and same_log else {})
        if not same_layout and parts:
            progress.log(f"  {misplaced} record(s) belong to another partition with {n} partitions: "
                         "layout differs, snapshots will cover no log offsets")
        for p, first in sorted(txns.first_open.items()):
            progress.log(f"  partition {p}: a transaction is open from offset {first}: "
                         + ("the snapshot covers up to it, the server replays the rest" if p in covers
                            else "its pending offsets are not in the snapshot (not committed)"))
        summary.update(records_read=sum(r.n_records for r in seg_rows), same_layout=same_layout,
                       covers_log_offsets=covers, skipped=skipped, open_transactions=dict(txns.first_open))
    with progress.stage(3, 5, "latest record per key"):
        records = settle(spark, scanned.filter(F.col("kind").isin(KIND_OFFSET, KIND_GROUP, KIND_CONSUMER,
                                                                   KIND_SHARE)), txns, covers)
        key = ["kind", "group", "topic", "partition", "key"]  # key: null but for consumer/share-group records
        per_source = (records.groupBy("src_partition", *key)
                      .agg(F.max(F.struct("offset", "timestamp", "value", "target")).alias("w"))
                      .select("src_partition", *key, "w.*"))
        latest = (per_source.groupBy(*key)
                  .agg(F.max(F.struct("timestamp", "src_partition", "offset", "value", "target")).alias("w"))
                  .select(*key, "w.value", "w.target"))
        final = latest.filter(F.col("value").isNotNull()).select(
            "kind", "group", "topic", "partition", "key", "value", F.lit(None).cast("long").alias("offset"),
            F.lit(None).cast("int").alias("leader_epoch"), F.lit(None).cast("string").alias("metadata"),
            F.lit(None).cast("long").alias("commit_timestamp"),
            F.lit(None).cast("long").alias("expire_timestamp"), "target")
        if args.export:
            from .exports import read_exports

            exported = read_exports(spark, args.export, args.export_format, n)
            log_keys = latest.filter(F.col("kind") == KIND_OFFSET).select("group", "topic", "partition")
            extra = exported.join(log_keys, ["group", "topic", "partition"], "left_anti")
            final = final.unionByName(extra.select(
                F.lit(KIND_OFFSET).cast("byte").alias("kind"), "group", "topic", "partition",
                F.lit(None).cast("binary").alias("key"), F.lit(None).cast("binary").alias("value"), "offset",
                "leader_epoch", "metadata",
                "commit_timestamp", "expire_timestamp", "target"))
    with progress.stage(4, 5, f"write {n} snapshot(s) (temp directories)"):
        sources = {"inputs": [p.path for p in parts], "exports": list(args.export), "job_ms": job_ms}
        if is_store(output):
            write = store_writer(lambda root: _partition_writer(root, covers, n, job_ms, sources))
        else:
            write = _partition_writer(output, covers, n, job_ms, sources)
        results = (final.rdd.map(lambda r: (r.target, r)).partitionBy(n, lambda k: k)
                   .mapPartitionsWithIndex(write).collect())
        scanned.unpersist()
    with progress.stage(5, 5, "publish"):
        from storage.snapshot import publish_snapshot

        if is_store(output):
            published = publish_to_store(output, results)
            bytes_after = sum(len(r[5]) for r in results)
        else:
            published = [publish_snapshot(r[1]) for r in sorted(results)]
            bytes_after = sum(os.path.getsize(os.path.join(d, f)) for d in published for f in os.listdir(d))
    summary.update(groups=sum(r[2] for r in results), simple_groups=sum(r[4] for r in results),
                   offsets=sum(r[3] for r in results),
                   keys_kept=sum(r[2] + r[3] for r in results), tombstones_written=0,
                   snapshots=len(published), bytes_after=bytes_after, output=shown(output),
                   wall_time_s=round(progress.elapsed, 2))
    print_summary(progress, summary)
    print_next_steps(progress, output, results, covers)
    return summary


def print_next_steps(progress: Progress, output: str, results: list, covers: dict[int, int]) -> None:
    """What a user needs after the job: where the snapshots are, what each holds, how to start a server on them."""
    progress.log("snapshots per partition (partition: groups, offsets, log offset covered):")
    for result in sorted(results):  # (partition, path, groups, offsets, simple groups[, blob bytes])
        partition, groups, offsets = result[0], result[2], result[3]
        if groups or offsets:
            covered = covers.get(partition)
            progress.log(f"  {partition}: {groups} group(s), {offsets} offset(s), "
                         f"{'no log offset (an export or another layout)' if covered is None else covered}")
    if is_store(output):
        progress.log(f"next: the snapshots are kc_blobs rows of {shown(output)}; a node of that cluster loads each "
                     "one when it takes the partition (storage.url)")
        return
    where = os.path.abspath(output)
    progress.log(f"next: start a server on the snapshot dir {where}:")
    progress.log(f"  python -m coordinator serve --override offsets.snapshot.dir={where}")
    progress.log(f"  (or COORDINATOR_OFFSETS_SNAPSHOT_DIR={where}; when {where} is the server's log.dirs, "
                 "nothing to set). A partition with no log there starts its log at the offset its snapshot "
                 "covers, so new commits continue from it (docs/SPARK_JOBS.md, \"Migrating from Kafka\").")


def _partition_writer(output, covers, n, job_ms, sources):
    def write(index, rows):
        return _write_partition(index, rows, output=output, covers=covers, partitions=n,
                                job_ms=job_ms, sources=sources)
    return write


def main(argv=None) -> int:
    try:
        run(sys.argv[1:] if argv is None else argv)
    except JobError as exc:
        print(f"bulk_load failed: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
