"""Consumer-group members speaking the classic protocol over the wire to a running server (kio requests on
their own sockets), for the tests that drive a group without a real client library."""

from __future__ import annotations

import datetime
import threading
from concurrent.futures import ThreadPoolExecutor

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.static.primitive import i32, i32Timedelta

from tests.support.groups import assignment, subscription
from tests.support.offsets import commit_request
from tests.support.wire_client import WireClient

E = ErrorCode


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


class Member:
    """One consumer-group member speaking JoinGroup v9 / SyncGroup v5 / Heartbeat v4 on its own socket;
    `instance` makes it a static member. Heartbeats and commits may come from another thread (a
    heartbeat loop beside the test): they take the member's lock."""

    def __init__(self, server, group: str, topics: list[str], session: int = 10000, rebalance: int = 30000,
                 client_id: str = "wire-member", instance: str | None = None, timeout: float = 60,
                 reason: str = "test") -> None:
        self.client = WireClient(server.host, server.port, timeout=timeout)
        self.group, self.topics, self.session, self.rebalance = group, topics, session, rebalance
        self.client_id, self.instance, self.reason = client_id, instance, reason
        self.member_id = ""
        self.generation = -1
        self.join_response = None
        self.lock = threading.Lock()

    def join(self):
        request = lambda: JoinGroupRequest(  # noqa: E731
            group_id=self.group, session_timeout=ms(self.session), rebalance_timeout=ms(self.rebalance),
            member_id=self.member_id, group_instance_id=self.instance, protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=subscription(self.topics)),),
            reason=self.reason)
        response = self.client.call(request(), self.client_id)
        if response.error_code is E.member_id_required:
            self.member_id = response.member_id
            response = self.client.call(request(), self.client_id)
        assert response.error_code is E.none, response
        self.member_id, self.generation, self.join_response = response.member_id, response.generation_id, response
        return response

    def sync(self, assignments: dict[str, bytes] | None = None):
        response = self.client.call(SyncGroupRequest(
            group_id=self.group, generation_id=i32(self.generation), member_id=self.member_id,
            group_instance_id=self.instance, protocol_type="consumer", protocol_name="range",
            assignments=tuple(SyncGroupRequestAssignment(member_id=m, assignment=a)
                              for m, a in (assignments or {}).items())), self.client_id)
        assert response.error_code is E.none, response
        return response

    def heartbeat(self) -> ErrorCode:
        with self.lock:
            return self.client.call(HeartbeatRequest(group_id=self.group, generation_id=i32(self.generation),
                                                     member_id=self.member_id,
                                                     group_instance_id=self.instance)).error_code

    def commit(self, offsets: dict[tuple[str, int], int], metadata: str = "", epoch: int = -1):
        """OffsetCommit v8 as this member; the response."""
        with self.lock:
            return self.client.call(commit_request(8, self.group, offsets, generation=self.generation,
                                                   member=self.member_id, instance=self.instance,
                                                   metadata=metadata, epoch=epoch))

    def leave(self):
        return self.client.call(LeaveGroupRequest(group_id=self.group, members=(
            MemberIdentity(member_id=self.member_id, group_instance_id=self.instance, reason=self.reason),)))

    def close(self):
        self.client.close()


def join_and_sync_all(members: list[Member]) -> dict[str, bytes]:
    """Everyone joins concurrently; the leader assigns one partition each; everyone syncs."""
    with ThreadPoolExecutor(len(members)) as pool:
        list(pool.map(Member.join, members))
        leaders = [m for m in members if m.join_response.members]
        assert len(leaders) == 1
        leader = leaders[0]
        plan = {mid: assignment({"t": [i]}) for i, mid in enumerate(sorted(m.member_id for m in members))}
        synced = list(pool.map(lambda m: m.sync(plan if m is leader else None), members))
    assert [s.assignment for s in synced] == [plan[m.member_id] for m in members]
    return plan
