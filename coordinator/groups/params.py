"""The parameters and answers of the classic group operations, without protocol versions.

What the handlers build from a JoinGroup, SyncGroup or LeaveGroup request of any version
and read back to answer it (groups/membership.py decides; runtime.shard.Shard is the entry
point).
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from coordinator.groups.classic_member import Protocols


@dataclass(frozen=True, slots=True)
class JoinParams:
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int  # v0: the session timeout (JoinGroupRequest.maybeOverrideRebalanceTimeout)
    protocol_type: str
    protocols: Protocols  # deduplicated by name, preference order kept
    reason: str | None
    client_id: str
    client_host: str
    api_version: int


@dataclass(frozen=True, slots=True)
class SyncParams:
    group_id: str
    member_id: str
    group_instance_id: str | None
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]
    api_version: int


@dataclass(frozen=True, slots=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveResult:
    error: ErrorCode
    members: tuple[tuple[str, str | None, ErrorCode], ...]  # (member id, instance id, error)
