"""A classic group's member (Kafka's ClassicGroupMember) and what its JoinGroup and SyncGroup waiters receive.

Pure values: the member's protocols and assignment, its session bookkeeping, and the waiter callables that
its group (classic_group.py) completes when membership.py decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

NO_LEADER = ""
EMPTY_ASSIGNMENT = b""


@dataclass(frozen=True, slots=True)
class JoinResult:
    """What a JoinGroup waiter receives (JoinGroupResponseData without version details)."""

    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = NO_LEADER
    skip_assignment: bool = False
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (member id, instance id, metadata)


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = EMPTY_ASSIGNMENT


JoinWaiter = Callable[[JoinResult], None]
SyncWaiter = Callable[[SyncResult], None]
Protocols = tuple[tuple[str, bytes], ...]  # (name, metadata) in the member's preference order


def dedupe_protocols(protocols: Protocols, seen: set[str] | None = None) -> Protocols:
    """Keep the first entry per protocol name (Kafka's collection is keyed by name); `seen`: the
    names kept from earlier slices of the same list."""
    if seen is None:
        seen = set()
    out = []
    for name, metadata in protocols:
        if name not in seen:
            seen.add(name)
            out.append((name, metadata))
    return tuple(out)


@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = EMPTY_ASSIGNMENT
    awaiting_join: JoinWaiter | None = None
    awaiting_sync: SyncWaiter | None = None
    is_new: bool = False
    # Session bookkeeping (see Rebalancer.touch_session): the deadline moves on every
    # heartbeat; `armed_at` is when the one session timer of this member fires, if armed.
    session_deadline_ms: float = 0.0
    armed_at: float | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol_name: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol_name}")

    def matches(self, protocols: Protocols) -> bool:
        return protocols == self.protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _metadata in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """ClassicGroupMember.hasSatisfiedHeartbeat: waiting members need no heartbeat, new ones do."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None
