"""Read-only views of the share groups coordinated here, as JSON-ready dicts (the console, the JSON endpoints and
the groups command's --http read them): members with their assignments, and per share partition its start
offset, the records in flight between the start and end offsets, those acquired, those acknowledged (delivered
completely: ACKNOWLEDGED or ARCHIVED) and the lag as Kafka 4.2 reports it (KIP-1226: the partition's high
watermark - the start offset - the delivery-complete count; None where it cannot be known here).

A share partition loaded on this node (it served a ShareFetch) gives its live window; one that is not gives its
durable state from the share coordinator (no in-flight counts then)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.groups.share.model import ShareGroup, ShareGroupMember
from coordinator.share.record_states import RecordState
from coordinator.share.state_store import UNINITIALIZED_START_OFFSET


def share_header(group: ShareGroup) -> dict[str, Any]:
    """A share group: its group epoch stands where a classic group's generation does."""
    return {"group_id": group.group_id, "state": group.state().value, "protocol_type": "share",
            "protocol": "simple", "generation": group.group_epoch, "group_type": "share"}


def share_member(member: ShareGroupMember, name_of: Callable[[Any], str | None]) -> dict[str, Any]:
    assignment = [{"topic": name_of(topic_id) or str(topic_id), "partitions": sorted(partitions)}
                  for topic_id, partitions in member.assigned.items()]
    return {"member_id": member.member_id, "group_instance_id": None, "client_id": member.client_id,
            "client_host": member.client_host, "member_epoch": member.member_epoch,
            "assignment": sorted(assignment, key=lambda a: a["topic"])}


def share_partitions(services: Any, group: ShareGroup, log_end: Callable[[str, int], int | None]
                     ) -> list[dict[str, Any]]:
    """One row per initialized share partition of the group, by topic name and partition."""
    rows = []
    owners: dict[tuple[Any, int], list[str]] = {}
    for member in group.members.values():
        for topic_id, assigned in member.assigned.items():
            for index in assigned:
                owners.setdefault((topic_id, index), []).append(member.member_id)
    for topic_id, partitions in group.initialized().items():
        info = services.topics.by_id(topic_id)
        topic = info.name if info is not None else str(topic_id)
        for index in sorted(partitions):
            rows.append(_row(services, group.group_id, topic_id, topic, index, log_end(topic, index),
                             sorted(owners.get((topic_id, index), ()))))
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


def _row(services: Any, group_id: str, topic_id: Any, topic: str, index: int, end: int | None,
         member_ids: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {"topic": topic, "partition": index, "start_offset": None, "log_end_offset": end,
                           "in_flight": None, "acquired": None, "acknowledged": None, "lag": None,
                           "member_ids": member_ids}
    entry = services.share.partitions.entries.get((group_id, topic_id, index))
    if entry is not None:
        part = entry.partition
        row.update(start_offset=part.start_offset, in_flight=part.in_flight(),
                   acquired=sum(1 for r in part.records.values() if r.state is RecordState.ACQUIRED),
                   acknowledged=part.delivery_complete_count())
    else:
        state = services.share.coordinator.known_state(group_id, topic_id, index)
        if state is not None and state.start_offset != UNINITIALIZED_START_OFFSET:
            row.update(start_offset=state.start_offset,
                       acknowledged=state.delivery_complete_count if state.delivery_complete_count >= 0 else None)
    if end is not None and row["start_offset"] is not None and row["acknowledged"] is not None:
        row["lag"] = max(end - row["start_offset"] - row["acknowledged"], 0)
    return row
