"""Compaction of `__share_group_state` (KIP-932's share coordinator log) by Kafka's rules, as a Spark job.

Kafka does not let its log cleaner compact this topic (cleanup.policy=delete, KIP-932): a share partition's
state is its latest ShareSnapshot plus every ShareUpdate after it, and the ShareUpdate records of one share
partition share a key, so keeping the latest record per key (what compaction does) would drop updates that the
state still needs. The share coordinator instead deletes what no share partition needs any more
(ShareCoordinatorOffsetsManager; coordinator/share/state_store.py's `redundant_offset`). This job applies the
same rule per share partition, not only below the partition-wide redundant offset:

* a share partition (group, topic id, partition) keeps its latest ShareSnapshot and the ShareUpdates after it;
  every record of it before that snapshot goes;
* a share partition whose last record is a ShareSnapshot tombstone (its state was deleted) loses every record;
* offsets stay as they were (a log may have gaps), batches are rewritten only where records went.

Input: `__share_group_state-N` directories or log.dirs roots holding them (a stopped server's, or a copy);
output: the same directories under `--output`, each a complete log the server loads (its share coordinator
replays it into the same state). One Spark task per partition: the rule needs a partition's records in order.

    python -m spark_jobs.share_state --input LOGDIR... --output OUTDIR [--master local[*]]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from spark_jobs.common import (
    JobError,
    Progress,
    find_partition_dirs,
    parse_conf,
    print_summary,
    segment_paths,
    spark_session,
    worker_error,
)
from spark_jobs.scan import ship_code

STATE_DIR_RE = re.compile(r"^__share_group_state-(\d+)$")
SNAPSHOT_TYPE = 0  # ShareSnapshotKey's record type; ShareUpdateKey's is 1


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m spark_jobs.share_state", description=__doc__.split("\n\n")[0])
    p.add_argument("--input", nargs="+", required=True,
                   help="log.dirs (comma-separated allowed) or __share_group_state-N directories")
    p.add_argument("--output", required=True, help="where the compacted __share_group_state-N directories go")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--conf", action="append", help="a Spark setting, key=value")
    return p.parse_args(argv)


def share_key(key: bytes) -> tuple[tuple[str, Any, int], bool]:
    """(the share partition a record is about, whether it is a ShareSnapshot)."""
    from storage import share_state_records

    decoded = share_state_records.decode_key(key)
    return (decoded.group, decoded.topic_id, decoded.partition), isinstance(
        decoded, share_state_records.ShareSnapshotKey)


def kept_offsets(records: list[tuple[int, bytes | None, bool]]) -> set[int]:
    """The offsets Kafka's rule keeps, from (offset, key, is a tombstone) of a partition's records in order."""
    last_snapshot: dict[Any, int] = {}
    deleted: dict[Any, bool] = {}
    of: dict[int, Any] = {}
    for offset, key, tombstone in records:
        if key is None:
            continue
        which, snapshot = share_key(key)
        of[offset] = which
        if snapshot:
            last_snapshot[which] = offset
            deleted[which] = tombstone
    return {offset for offset, which in of.items()
            if not deleted.get(which, False) and offset >= last_snapshot.get(which, -1)}


def compact_partition(src: str, partition: int, output: str) -> dict[str, int]:
    """Read one `__share_group_state-N` directory, write its compacted copy; the counts."""
    from storage.batch import decode_records, iter_batches
    from storage.cleaner import clean_segment, write_segment_files

    segments = [(base, path) for base, path, _size in segment_paths(src)]
    datas = []
    records: list[tuple[int, bytes | None, bool]] = []
    end = 0
    for base, path in segments:
        with open(path, "rb") as handle:
            data = handle.read()
        datas.append((base, data))
        for batch in iter_batches(data):
            end = batch.next_offset
            if not batch.is_control:
                records += [(r.offset, r.key, r.value is None) for r in decode_records(batch)]
    keep = kept_offsets(records)
    target = os.path.join(output, f"__share_group_state-{partition}")
    os.makedirs(target, exist_ok=True)
    stats = {"partition": partition, "records_read": len(records), "records_kept": len(keep), "bytes_read": 0,
             "bytes_written": 0}
    for base, data in datas:
        # `keep` stands for "latest"; tombstones never survive it, so no delete horizon is needed. The log's last
        # batch stays (empty if need be: Kafka's RETAIN_EMPTY at the bound), so its end offset does not go back.
        cleaned = clean_segment(data, keep.__contains__, now_ms=0, delete_retention_ms=0, upper_bound=end)
        stats["bytes_read"] += len(data)
        stats["bytes_written"] += len(cleaned.data)
        if cleaned.data or base == datas[-1][0]:  # the last segment stays (the log's end offset is in it)
            write_segment_files(target, base, cleaned.data)
    return stats


def run(argv: list[str] | None, spark: Any = None, out: Any = None) -> dict[str, Any]:
    args = parse_args(argv)
    progress = Progress("share_state", out)
    parts = find_partition_dirs(args.input, STATE_DIR_RE)
    if not parts:
        raise JobError("no __share_group_state-N directory in the input")
    output = os.path.abspath(args.output)
    existing = [p.partition for p in parts
                if os.path.exists(os.path.join(output, f"__share_group_state-{p.partition}"))]
    if existing:
        raise JobError(f"{output} already holds __share_group_state-{existing[0]}: nothing written")
    own = spark is None
    if own:
        spark = spark_session(args.master, "kgc-share-state", None, parse_conf(args.conf))
    try:
        ship_code(spark)
        with progress.stage(1, 1, f"compact {len(parts)} partition(s)"):
            inputs = [(p.path, p.partition) for p in parts]
            rows = spark.sparkContext.parallelize(inputs, len(inputs)).map(
                lambda item: compact_partition(item[0], item[1], output)).collect()
    except BaseException as exc:
        line = worker_error(exc)
        if line and not isinstance(exc, JobError):
            raise JobError(f"corrupt input: {line}") from None
        raise
    finally:
        if own:
            spark.stop()
    summary = {"partitions": len(rows), **{k: sum(r[k] for r in rows) for k in
                                           ("records_read", "records_kept", "bytes_read", "bytes_written")},
               "wall_time_s": round(progress.elapsed, 2)}
    print_summary(progress, summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    try:
        run(argv)
    except JobError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
