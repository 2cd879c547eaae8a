"""Swapping in the Spark expire job's staged compaction, without a restart.

The job leaves `<log.dirs>/__consumer_offsets-<p>/.staging-<id>/` (cleaned copies of
closed segments + expiry tombstones + manifest.json; docs/SPARK_JOBS.md). Per staging
area of an ACTIVE partition:

1. `validate_staging(deep=True)` in a worker thread (CRCs of live and staged files);
   any problem -> refused: a log line names the problems and the staging directory is
   removed (the job can run again on the current log).
2. Safe point: wait until every append of the partition is durable, then -- with no
   await in between, so no commit can interleave -- re-check sizes/mtimes, close the
   partition log, rename the staged segment files over the live ones, reopen the log.
   Commits are held only for that synchronous swap. Compaction drops superseded records
   only, so the in-memory state is unchanged.
3. Expiry tombstones are re-decided on the live state (coordinator/groups/expiry.py, with the
   job's retention): an offset committed again since the job read the log, or a group
   that came back to life, keeps its offsets. The ones that still hold are written
   through Shard.write (so replayed like any other record).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from typing import TYPE_CHECKING

import structlog

from coordinator.runtime.shard import ShardState
from coordinator.runtime.staged_tombstones import append_tombstones, offered_tombstones
from storage.compaction import Manifest, list_staging, validate_staging
from storage.log import PartitionLog
from storage.pg import is_store_log

if TYPE_CHECKING:
    from coordinator.runtime.durable_log import DurableLog
    from coordinator.runtime.group_coordinator import GroupCoordinator
    from coordinator.runtime.shard import Shard

log = structlog.get_logger("coordinator.runtime.staging")

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")


async def check_partition(coordinator: GroupCoordinator, durable: DurableLog, partition: int) -> list[str]:
    """Apply or refuse every staging area of one partition; returns their outcomes."""
    shard = coordinator.shards.get(partition)
    if shard is None or shard.state is not ShardState.ACTIVE or partition not in durable.logs:
        return []
    plog = durable.logs[partition]
    if is_store_log(plog):  # cluster mode: stagings are kc_blobs rows
        from coordinator.runtime.staging_store import check_store_partition  # with the PostgreSQL driver

        return await check_store_partition(shard, durable, partition, plog)
    path = durable.path(partition)
    outcomes = []
    for staging, manifest in await asyncio.to_thread(list_staging, path):
        problems = await asyncio.to_thread(validate_staging, path, manifest, True)
        if not problems:
            problems = await _swap(shard, durable, partition, staging, manifest)
        if problems:
            log.warning("staged compaction refused", partition=partition, staging=os.path.basename(staging),
                        problems=problems)
            shutil.rmtree(staging, ignore_errors=True)
            outcomes.append("refused")
            continue
        shutil.rmtree(staging, ignore_errors=True)  # its segment files were moved into the log
        written = append_tombstones(shard, manifest)
        outcomes.append("applied")
        log.info("staged compaction applied", partition=partition, staging=os.path.basename(staging),
                 segments=len(manifest["segments"]), tombstones_offered=len(offered_tombstones(manifest)),
                 tombstones_written=written)
    return outcomes


async def _swap(shard: Shard, durable: DurableLog, partition: int, staging: str, manifest: Manifest) -> list[str]:
    plog = durable.logs[partition]
    await durable.flush()  # the writes still queued in DurableLog too
    if shard.state is not ShardState.ACTIVE or durable.logs.get(partition) is not plog:
        return ["partition was unloaded or reopened during the check"]
    # -- from here to the reopen nothing awaits: no append can interleave --
    if plog.flushing or durable.has_queued(partition):
        # appended after the flush returned
        return ["appends in flight at the swap point; will retry"]
    problems = validate_staging(durable.path(partition), manifest, deep=False)
    if problems:
        return problems
    assert isinstance(plog, PartitionLog)  # local mode's (check_partition sends cluster mode's to staging_store)
    plog.close_sync()
    path = durable.path(partition)
    try:
        for seg in manifest["segments"]:
            stem = seg["cleaned"]["file"][:-len(".log")] if seg["cleaned"]["file"].endswith(".log") \
                else f"{seg['base_offset']:020d}"
            for suffix in SEGMENT_SUFFIXES:
                staged = os.path.join(staging, stem + suffix)
                live = os.path.join(path, f"{seg['base_offset']:020d}{suffix}")
                if os.path.exists(staged):
                    os.replace(staged, live)
                elif suffix != ".log" and os.path.exists(live):
                    os.unlink(live)  # stale index of the replaced segment: rebuilt on open
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        durable.open_partition(partition)
    return []


async def check_all(coordinator: GroupCoordinator, durable: DurableLog) -> None:
    for partition in sorted(durable.logs):
        try:
            await check_partition(coordinator, durable, partition)
        except Exception:
            log.exception("checking staged compaction failed", partition=partition)
