"""Loading an offsets partition: latest usable snapshot + replay of the log after it.

Everything goes through `Shard.replay_all`, the function live writes use, so a loaded
shard equals the live one that wrote the log. Steps (Kafka's CoordinatorLoaderImpl +
GroupMetadataManager.onLoaded):

1. Snapshot (storage/snapshot.py, written by the bulk-load job): the newest complete
   one whose `covers_log_offset` is not beyond the log end -- or, when the partition has no
   log yet (no record: a fresh server, a migration from a Kafka broker), the newest one, and
   the log then starts at the offset it covers (Kafka's log start offset after deleted
   records), so new commits continue from there. A log that exists but ends before the newest
   snapshot's offset (a restored backup) keeps the older rule, with a warning naming both
   offsets. One log line per partition says which snapshot and why. Its records are read in a worker thread
   (`read_records`) and replayed in chunks, as the log's are.
   A snapshot that covers no log offset (an export, or another partition layout) is the
   whole state as of its creation: only log records written after `created_at_ms` are
   replayed over it. In cluster mode the snapshots are kc_blobs rows (storage/pg/snapshot_blobs.py),
   copied into a snapshot root in the scratch directory first.
2. The log from the snapshot's offset (or the log start) to its end, `chunk_bytes` at a
   time, folded by storage.latest.LatestRecords into the latest record per key (plus
   what a replay of every record would keep: see there); only those records are
   decoded and replayed, at the end or when a group tombstone seals what came before
   it. Transactional offsets are held per producer until their marker (committed or
   dropped there); those without a marker by the log end become pending offsets of the
   shard (`replay_pending`), as before the restart. Between chunks the loader yields to
   the event loop, so other partitions load interleaved and ACTIVE partitions keep serving.
3. onLoaded: timers are not persisted, so each member of a loaded Stable group gets a
   session timer; a member that does not heartbeat within its session timeout is
   removed and the group rebalances, as in Kafka. A group over group.max.size rebalances.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from itertools import islice
from typing import TYPE_CHECKING, TypedDict

import structlog

from coordinator.records.log_codec import decode, decode_all
from coordinator.records.types import OffsetCommitRecord, Record
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.shard import Shard, ShardState
from storage import snapshot as snapshots
from storage.errors import CorruptRecordError
from storage.latest import LatestRecords
from storage.pg import is_store_log
from storage.txn_fold import Held

if TYPE_CHECKING:
    from storage.pg.pg_log import PgPartitionLog

log = structlog.get_logger("coordinator.runtime.loader")

STORE_SNAPSHOTS_DIR = ".snapshots"  # cluster mode: snapshot blobs copied beside the replicas (scratch)
REPLAY_PER_TURN = 50_000  # survivors replayed between yields to the event loop


def choose_snapshot(root: str, partition: int, log_start: int, log_end: int
                    ) -> tuple[snapshots.SnapshotInfo | None, str]:
    """The snapshot to load under a log [log_start, log_end), and why (for the partition's log line)."""
    found = snapshots.list_snapshots(root, partition)
    if not found:
        return None, "no snapshot of this partition"
    newest = found[-1]
    covers = newest.covers_log_offset
    if covers is None:
        return newest, "the newest, an export: log records written after it are replayed over it"
    if covers <= log_end:
        return newest, f"the newest; the log is replayed from offset {covers}"
    if log_start == log_end:
        return newest, f"the newest; the partition has no log record yet, so its log starts at offset {covers}"
    usable = [s for s in found if s.covers_log_offset is None or s.covers_log_offset <= log_end]
    log.warning("offsets snapshot beyond the log", partition=partition, snapshot=newest.path,
                covers_log_offset=covers, log_end_offset=log_end,
                action="an older snapshot or the whole log is used (was the log restored from a backup?)")
    why = f"the newest covers offset {covers}, beyond this log's end {log_end}"
    return (usable[-1], f"{why}: an older one") if usable else (None, f"{why}: none used")


class LoadStats(TypedDict, total=False):
    """What loading a partition logged and returned (the metrics read `ms`)."""

    partition: int
    failed: bool  # failed to load: left UNLOADED
    snapshot: str | None  # the bulk-load snapshot replayed first
    snapshot_records: int
    log_records: int
    replayed: int
    pending_txn_offsets: int
    scan_ms: float
    records_per_s: int
    mb_per_s: float
    groups: int
    offsets: int
    ms: float


async def load_shard(shard: Shard, durable: DurableLog, snapshot_root: str | None,
                     chunk_bytes: int = 5 << 20) -> LoadStats:
    """Load one partition into `shard` (LOADING) and make it ACTIVE. Returns stats."""
    started = time.monotonic()
    partition = shard.partition
    plog = durable.logs[partition]
    stats: LoadStats = {"partition": partition, "snapshot": None, "snapshot_records": 0, "log_records": 0}
    start = plog.log_start_offset
    min_timestamp = None
    if is_store_log(plog):  # cluster mode: the bulk-load snapshots are kc_blobs rows
        snapshot_root = await _fetch_store_snapshots(plog)
    info = None
    if snapshot_root:
        info, why = choose_snapshot(snapshot_root, partition, plog.log_start_offset, plog.log_end_offset)
        (log.info if info is not None or "beyond" in why else log.debug)(
            "offsets snapshot chosen", partition=partition, snapshot=info.path if info else None, why=why)
        covers = info.covers_log_offset if info is not None else None
        if covers is not None and covers > plog.log_end_offset:
            await plog.start_empty_at(covers)
            start = plog.log_start_offset
    if info is not None:
        stats["snapshot"] = info.path
        stats["snapshot_records"] = await _replay_snapshot(shard, info.path)
        if info.covers_log_offset is None:
            min_timestamp = info.manifest.get("created_at_ms", 0)
        else:
            start = max(start, info.covers_log_offset)
    offset = start
    end = plog.high_watermark
    fold = LatestRecords(start, min_timestamp)
    scan_started = time.monotonic()
    while offset < end:
        data = plog.read(offset, chunk_bytes)
        if not data:
            break
        read_from, offset = offset, fold.add(data)
        if offset <= read_from:  # e.g. a negative lastOffsetDelta: never loop on the same read
            raise CorruptRecordError(f"reading offset {read_from} of partition {partition} makes no progress")
        await _replay_pairs(shard.replay_all, fold.take_sealed())
        await asyncio.sleep(0)  # let other partitions and requests run
    scanned = time.monotonic()
    stats["replayed"] = await _replay_pairs(shard.replay_all, fold.take_all())
    stats["pending_txn_offsets"] = replay_pending(shard, fold.pending())
    count = stats["log_records"] = fold.records
    if count:
        elapsed = max(time.monotonic() - scan_started, 1e-9)  # scan + replay
        stats["scan_ms"] = round((scanned - scan_started) * 1000, 1)
        stats["records_per_s"] = round(count / elapsed)
        stats["mb_per_s"] = round(fold.bytes / 2**20 / elapsed, 1)
    if shard.state is not ShardState.LOADING:  # unloaded meanwhile
        return stats
    on_loaded(shard)
    shard.set_state(ShardState.ACTIVE)
    stats["groups"] = len(shard.groups) + len(shard.consumer_groups)
    stats["offsets"] = shard.offsets.count()
    stats["ms"] = round((time.monotonic() - started) * 1000, 1)
    (log.info if count or info is not None else log.debug)("offsets partition loaded", **stats)
    return stats


def replay_pending(shard: Shard, held: list[Held]) -> int:
    """Transactional offsets without a marker by the log end, in log order: pending in the shard (their marker
    comes later, from the transaction coordinator), as they were before the restart."""
    for item in held:
        record = decode(item.key, item.value)
        if type(record) is OffsetCommitRecord:  # a transactional batch holds nothing else (Kafka's writes)
            shard.txn.replay(item.producer_id, (record,), stale=item.stale, producer_epoch=item.producer_epoch)
    return len(held)


async def _fetch_store_snapshots(plog: PgPartitionLog) -> str:
    """Copy the partition's snapshot blobs into a local snapshot root; returns the root."""
    from storage.pg import snapshot_blobs

    root = os.path.join(os.path.dirname(plog.path), STORE_SNAPSHOTS_DIR)
    async with plog.pool.acquire() as conn:
        await snapshot_blobs.fetch(conn, plog.topic_id, plog.partition, root)
    return root


async def _replay_pairs(replay_all: Callable[[list[Record]], object],
                        pairs: Iterable[tuple[bytes, bytes | None]]) -> int:
    """Decode and replay (key, value) pairs from LatestRecords, REPLAY_PER_TURN records a
    `replay_all` (KIP-848 consumer-group records included: the shard hands them to its
    consumer_replay); records of types this coordinator does not know (share groups...)
    are skipped."""
    count = 0
    records = decode_all(pairs)
    while True:
        chunk = list(islice(records, REPLAY_PER_TURN))
        if not chunk:
            return count
        replay_all(chunk)
        count += len(chunk)
        if len(chunk) == REPLAY_PER_TURN:
            await asyncio.sleep(0)


async def _replay_snapshot(shard: Shard, path: str) -> int:
    """The snapshot's records (groups, consumer-group records, offsets: storage/snapshot.py) through replay_all,
    as a log's."""
    _manifest, pairs = await asyncio.to_thread(snapshots.read_records, path)
    return await _replay_pairs(shard.replay_all, pairs)


def on_loaded(shard: Shard) -> None:
    """GroupMetadataManager.onLoaded: re-arm the session timers of classic and consumer groups' members (and the
    rebalance timers of consumer-group members revoking partitions)."""
    shard.consumer.arm_after_load()
    shard.share.arm_after_load()
    membership = shard.membership
    max_size = shard.settings.max_size
    for group in list(shard.groups.values()):
        if not group.members:
            continue
        for member in group.members.values():
            membership.touch_session(group, member)
        if len(group.members) > max_size:
            shard.write_result(membership.prepare_rebalance(
                group, "over_capacity",
                f"freshly loaded group {group.group_id} has {len(group.members)} members, "
                f"more than group.max.size {max_size}"))


async def load_all(shards: list[Shard], durable: DurableLog, snapshot_root: str | None,
                   chunk_bytes: int = 5 << 20) -> list[LoadStats]:
    """Load partitions concurrently (interleaved chunk by chunk on the one loop)."""
    started = time.monotonic()
    results = await asyncio.gather(*(load_logged(s, durable, snapshot_root, chunk_bytes) for s in shards))
    log.info("offsets partitions loaded", partitions=len(shards), ms=round((time.monotonic() - started) * 1000, 1),
             records=sum(r.get("log_records", 0) + r.get("snapshot_records", 0) for r in results))
    return results


async def load_logged(shard: Shard, durable: DurableLog, snapshot_root: str | None, chunk_bytes: int) -> LoadStats:
    """load_shard; a partition that fails to load is logged and left UNLOADED."""
    try:
        return await load_shard(shard, durable, snapshot_root, chunk_bytes)
    except Exception:
        # a partition that cannot load stays unavailable; the others serve
        log.exception("loading offsets partition failed", partition=shard.partition)
        shard.set_state(ShardState.UNLOADED)
        return {"partition": shard.partition, "failed": True}
