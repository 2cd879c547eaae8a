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

from coordinator.groups.admin import group_tombstones
from coordinator.groups.expiry import expired_records
from coordinator.runtime.shard import ShardState
from storage.compaction import list_staging, validate_staging

if TYPE_CHECKING:
    from coordinator.runtime.coordinator import GroupCoordinator
    from coordinator.runtime.durable_log import DurableLog
    from coordinator.runtime.shard import Shard

log = structlog.get_logger("coordinator.runtime.staging")

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")


async def check_partition(coordinator: GroupCoordinator, durable: DurableLog, partition: int) -> list[str]:
    """Apply or refuse every staging area of one partition; returns their outcomes."""
    shard = coordinator.shards.get(partition)
    if shard is None or shard.state is not ShardState.ACTIVE or partition not in durable.logs:
        return []
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
        written = _append_tombstones(shard, manifest)
        outcomes.append("applied")
        log.info("staged compaction applied", partition=partition, staging=os.path.basename(staging),
                 segments=len(manifest["segments"]), tombstones_offered=len(_tombstones(manifest)),
                 tombstones_written=written)
    return outcomes


async def _swap(shard: Shard, durable: DurableLog, partition: int, staging: str, manifest: dict) -> list[str]:
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


def _tombstones(manifest: dict) -> list[dict]:
    tomb = manifest.get("tombstones") or {}
    return list(tomb.get("records") or [])


def _append_tombstones(shard: Shard, manifest: dict) -> int:
    """Re-decide the job's expiry tombstones on live state; write those that still hold."""
    offered = _tombstones(manifest)
    if not offered:
        return 0
    settings = manifest.get("settings", {})
    retention_ms = int(settings.get("offsets.retention.ms") or shard.settings.offsets_retention_ms)
    now_ms = max(shard.scheduler.wall_ms(), int(settings.get("now_ms") or 0))
    by_group: dict[str, set[tuple[str, int]]] = {}
    deleted_groups: set[str] = set()
    for t in offered:
        if t["type"] == "offset_commit":
            by_group.setdefault(t["group"], set()).add((t["topic"], t["partition"]))
        else:
            deleted_groups.add(t["group"])
    records: list = []
    for group_id in sorted(set(by_group) | deleted_groups):
        group = shard.groups.get(group_id)
        if group is None:
            continue  # gone already: nothing to delete
        only = by_group.get(group_id, set())
        tombstones, delete = expired_records(shard.offsets, group, now_ms, retention_ms, only=only)
        if delete and group_id in deleted_groups and len(tombstones) == sum(1 for _ in shard.offsets.items(group_id)):
            records += group_tombstones(shard.offsets, group_id)  # all its offsets expire: the group goes too
        else:
            records += tombstones
    if records:
        shard.write(records)
    return len(records)


async def check_all(coordinator: GroupCoordinator, durable: DurableLog) -> None:
    for partition in sorted(durable.logs):
        try:
            await check_partition(coordinator, durable, partition)
        except Exception:
            log.exception("checking staged compaction failed", partition=partition)
