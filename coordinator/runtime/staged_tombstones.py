"""The expiry tombstones a staged compaction offers, re-decided on the live state before they are written.

The job decided them on the log as it read it; since then an offset may have been committed again or a
group come back to life (coordinator/groups/expiry.py decides, with the job's retention). Shared by the
staging of local mode (staging directories) and of cluster mode (kc_blobs): the manifest / blob header
has the same ``settings`` and ``tombstones.records``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coordinator.groups.admin import group_tombstones
from coordinator.groups.expiry import expired_records
from coordinator.records.types import Record
from storage.compaction import Manifest

if TYPE_CHECKING:
    from coordinator.runtime.shard import Shard


def offered_tombstones(manifest: Manifest) -> list[dict[str, Any]]:
    tomb = manifest.get("tombstones") or {}
    return list(tomb.get("records") or [])


def append_tombstones(shard: Shard, manifest: Manifest) -> int:
    """Re-decide the job's expiry tombstones on live state; write those that still hold."""
    offered = offered_tombstones(manifest)
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
    records: list[Record] = []
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
