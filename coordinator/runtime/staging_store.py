"""Cluster mode: the owner applies the Spark expire job's staged compaction from kc_blobs.

The job leaves one kc_blobs row (kind 'staging', storage/pg/staged_compaction.py) per partition:
cleaned copies of the rows it read in a range, plus expiry tombstones. On the partition's owner, per
blob of an ACTIVE shard:

1. Queued writes are flushed, then one fenced transaction (staged_compaction.apply) drops the blob and,
   if the rows of the range are still exactly those the job read (base offsets + batch CRCs), replaces
   them. Otherwise it is refused (a log line says why): the job can run again on the current rows.
   Fenced (this node lost the partition): the error propagates and the blob stays for the new owner.
2. The log rebuilds its local replica from the compacted rows (PgPartitionLog.reload_replica: switched
   to only if no append happened meanwhile; else the old replica stays, holding the same state).
3. The expiry tombstones are re-decided on live state and written (staged_tombstones.py), as in local
   mode. Compaction drops superseded records only, so the in-memory state is unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from coordinator.runtime.shard import ShardState
from coordinator.runtime.staged_tombstones import append_tombstones, offered_tombstones
from storage.pg import blobs, staged_compaction
from storage.pg.pg_log import PgPartitionLog

if TYPE_CHECKING:
    from coordinator.runtime.durable_log import DurableLog
    from coordinator.runtime.shard import Shard

log = structlog.get_logger("coordinator.runtime.staging_store")


async def check_store_partition(shard: Shard, durable: DurableLog, partition: int, plog: PgPartitionLog) -> list[str]:
    """Apply or refuse every staging blob of one owned partition; returns their outcomes."""
    async with plog.pool.acquire() as conn:
        found = await blobs.names(conn, blobs.STAGING, plog.topic_id, partition)
    outcomes: list[str] = []
    for info in found:
        if shard.state is not ShardState.ACTIVE or durable.logs.get(partition) is not plog:
            break  # unloaded meanwhile: the blobs wait for the next check (or owner)
        outcomes.append(await _apply(shard, durable, partition, plog, info.name))
    return outcomes


async def _apply(shard: Shard, durable: DurableLog, partition: int, plog: PgPartitionLog, name: str) -> str:
    async with plog.pool.acquire() as conn:
        blob = await blobs.get(conn, blobs.STAGING, plog.topic_id, partition, name)
        try:
            header, cleaned = staged_compaction.decode(blob or b"")
        except ValueError as exc:
            await blobs.delete(conn, blobs.STAGING, plog.topic_id, partition, name)
            log.warning("staged compaction refused", partition=partition, staging=name, problems=[str(exc)])
            return "refused"
    await durable.flush()  # the writes still queued in DurableLog
    async with plog.pool.acquire() as conn:
        problems = await staged_compaction.apply(conn, plog.topic_id, partition, plog.epoch, name, header, cleaned)
    if problems:
        log.warning("staged compaction refused", partition=partition, staging=name, problems=problems)
        return "refused"
    reloaded = await plog.reload_replica()
    # unloaded meanwhile: no tombstones (the new owner's expiry decides them on its own)
    written = append_tombstones(shard, header) if shard.state is ShardState.ACTIVE else 0
    log.info("staged compaction applied", partition=partition, staging=name, rows_first=header["first"],
             rows_last=header["last"], replica_reloaded=reloaded,
             tombstones_offered=len(offered_tombstones(header)), tombstones_written=written)
    return "applied"
