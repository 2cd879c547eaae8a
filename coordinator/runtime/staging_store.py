"""Cluster mode: the owner applies the Spark expire job's staged compaction from kc_blobs.

The job leaves one kc_blobs row (kind 'staging', storage/pg/staged_compaction.py) per partition:
cleaned copies of the rows it read in a range, plus expiry tombstones. On the partition's owner, per
blob of an ACTIVE shard:

1. Queued writes are flushed, then one fenced transaction (staged_compaction.apply) drops the blob and,
   if the rows of the range are still exactly those the job read (base offsets + batch CRCs), replaces
   them. Otherwise it is refused (a log line says why): the job can run again on the current rows.
   Fenced (this node lost the partition): the error propagates and the blob stays for the new owner.
2. The local replica is rebuilt from the compacted rows in the partition's other scratch directory and
   swapped in with no await between the check and the swap: only if no append happened meanwhile
   (else the old replica stays; it holds the same state, and the next take rebuilds it).
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

RELOAD_SUFFIX = ".reloaded"  # a replica rebuilt after a staged compaction alternates between two dirs


async def check_store_partition(shard: Shard, durable: DurableLog, partition: int, plog: PgPartitionLog) -> list[str]:
    """Apply or refuse every staging blob of one owned partition; returns their outcomes."""
    async with plog.pool.acquire() as conn:
        found = await blobs.names(conn, blobs.STAGING, plog.topic_id, partition)
    outcomes: list[str] = []
    for info in found:
        current = durable.logs.get(partition)  # a reload swaps it
        if shard.state is not ShardState.ACTIVE or not isinstance(current, PgPartitionLog):
            break  # unloaded meanwhile: the blobs wait for the next check (or owner)
        outcomes.append(await _apply(shard, durable, partition, current, info.name))
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
    reloaded = await _reload_replica(durable, partition, plog)
    written = append_tombstones(shard, header)
    log.info("staged compaction applied", partition=partition, staging=name, rows_first=header["first"],
             rows_last=header["last"], replica_reloaded=reloaded,
             tombstones_offered=len(offered_tombstones(header)), tombstones_written=written)
    return "applied"


async def _reload_replica(durable: DurableLog, partition: int, plog: PgPartitionLog) -> bool:
    """Rebuild the replica from PostgreSQL and swap it in if nothing was appended meanwhile."""
    home = durable.path(partition)
    scratch = home if plog.path != home else home + RELOAD_SUFFIX
    fresh = await PgPartitionLog.open(plog.pool, plog.topic_id, partition, plog.epoch, scratch)
    # -- from here to the swap nothing awaits: no append can interleave --
    if (durable.logs.get(partition) is not plog or plog.failed is not None or plog.flushing
            or durable.has_queued(partition) or plog.high_watermark != fresh.high_watermark
            or plog.log_end_offset != fresh.log_end_offset):
        await fresh.delete()
        return False
    durable.attach(partition, fresh)
    await plog.delete()  # nothing in flight: closes at once and removes the old replica's directory
    return True
