"""Helpers for the online-migration tests: a classic-protocol consumer (JoinGroup / SyncGroup / Heartbeat /
LeaveGroup, with real ConsumerProtocol bytes) on the consumer-group harness's coordinator."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from coordinator.groups.classic_member import JoinResult, SyncResult
from coordinator.groups.params import JoinParams, LeavingMember, SyncParams
from rules.consumer_protocol import decode_assignment
from tests.support.consumer_groups import ConsumerHarness
from tests.support.spark import encode_subscription


class ClassicConsumer:
    """A classic-protocol member as a Java consumer runs it: it reports what it owns when it (re)joins, owns
    what SyncGroup gives it."""

    def __init__(self, h: ConsumerHarness, group_id: str = "g", topics: tuple[str, ...] = ("orders",),
                 instance: str | None = None, session_ms: int = 10_000, rebalance_ms: int = 30_000) -> None:
        self.h, self.group_id, self.topics, self.instance = h, group_id, topics, instance
        self.session_ms, self.rebalance_ms = session_ms, rebalance_ms
        self.member_id = ""
        self.generation = -1
        self.owned: dict[str, list[int]] = {}

    def protocols(self) -> tuple[tuple[str, bytes], ...]:
        owned = tuple((t, tuple(ps)) for t, ps in sorted(self.owned.items()))
        return (("range", encode_subscription(list(self.topics), version=1, owned_partitions=owned)),)

    def join_once(self, version: int = 9) -> list[JoinResult]:
        replies: list[JoinResult] = []
        params = JoinParams(self.group_id, self.member_id, self.instance, self.session_ms, self.rebalance_ms,
                            "consumer", self.protocols(), None, "classic-client", "/127.0.0.1", version)
        self.h.shard(self.group_id).join(params, replies.append)
        self.h.log.complete()
        return replies

    def join(self) -> JoinResult:
        replies = self.join_once()
        if replies and replies[0].error is ErrorCode.member_id_required:
            self.member_id = replies[0].member_id
            replies = self.join_once()
        assert len(replies) == 1, replies
        if replies[0].error is ErrorCode.none:
            self.member_id, self.generation = replies[0].member_id, replies[0].generation_id
        return replies[0]

    def sync_later(self, assignments: dict[str, bytes] | None = None) -> list[SyncResult]:
        """SyncGroup; its answer lands in the list (at once, or when a classic group's leader syncs)."""
        replies: list[SyncResult] = []
        params = SyncParams(self.group_id, self.member_id, self.instance, self.generation, "consumer", "range",
                            tuple((assignments or {}).items()), 5)
        self.h.shard(self.group_id).sync(params, replies.append)
        return replies

    def take(self, reply: SyncResult) -> SyncResult:
        """Own what a successful SyncGroup gave."""
        if reply.error is ErrorCode.none:
            _version, partitions, _user = decode_assignment(reply.assignment)
            self.owned = {t: list(ps) for t, ps in partitions}
        return reply

    def sync(self, assignments: dict[str, bytes] | None = None) -> SyncResult:
        replies = self.sync_later(assignments)
        self.h.log.complete()
        assert len(replies) == 1, replies
        return self.take(replies[0])

    def heartbeat(self) -> ErrorCode:
        return self.h.shard(self.group_id).heartbeat(self.group_id, self.member_id, self.instance, self.generation)

    def leave(self) -> ErrorCode:
        answer, _write = self.h.shard(self.group_id).leave(self.group_id, [LeavingMember(self.member_id,
                                                                                        self.instance)])
        self.h.log.complete()
        return answer.members[0][2]

    def rejoin_until_synced(self, rounds: int = 10) -> None:
        """Join and sync until SyncGroup answers (a rejoin is asked while the member must revoke first)."""
        for _ in range(rounds):
            if self.join().error is ErrorCode.none and self.sync().error is ErrorCode.none:
                return
        raise AssertionError("never synced")

    def partitions(self) -> set[tuple[str, int]]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}


def topic_partitions(h: ConsumerHarness, owned: dict[uuid.UUID, frozenset[int]]) -> set[tuple[str, int]]:
    """A consumer-protocol member's partitions by topic name."""
    return {(h.topics.name_of(t) or "?", p) for t, ps in owned.items() for p in ps}
