"""Red team a20 / a03 (issue 13 follow-up): a group whose record cannot fit the offsets log's batch
limit (message.max.bytes, 1048588, Kafka's max message size for __consumer_offsets). Kafka refuses
the write: the leader's SyncGroup is answered UNKNOWN_SERVER_ERROR (appendGroupMetadataErrorToResponseError
of RECORD_LIST_TOO_LARGE / MESSAGE_TOO_LARGE) and the group goes back to rebalancing. Before the fix
the record was written (90 MB records, a restart that ran out of memory), and a MemoryError while
batching left the writes of that turn unanswered. Real server, memory limit, Watchdog, commits
pipelined behind the SyncGroup are answered and survive a restart."""

from __future__ import annotations

import datetime
import importlib

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta

from tests.support.hostile import Watchdog, assert_commits_survive, commit_offsets, start_limited_server
from tests.support.offsets import commit_request
from tests.support.wire_client import WireClient, request_frame

pytestmark = pytest.mark.integration

GROUP = "survivor"
KEPT = {("kept", 0): 42, ("kept", 1): 7}
BYSTANDERS = {f"bystander{k}": {("t", 0): 100 + k} for k in range(3)}
OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def join(group: str, member: str, metadata: bytes):
    m = importlib.import_module("kio.schema.join_group.v5.request")
    return m.JoinGroupRequest(group_id=group, session_timeout=ms(60_000), rebalance_timeout=ms(60_000),
                              member_id=member, group_instance_id=None, protocol_type="consumer",
                              protocols=(m.JoinGroupRequestProtocol(name="range", metadata=metadata),))


def sync(group: str, generation: int, member: str, assignment: bytes):
    m = importlib.import_module("kio.schema.sync_group.v3.request")
    return m.SyncGroupRequest(group_id=group, generation_id=i32(generation), member_id=member, group_instance_id=None,
                              assignments=(m.SyncGroupRequestAssignment(member_id=member, assignment=assignment),))


def join_until_member(client: WireClient, group: str, metadata: bytes):
    answer = client.call(join(group, "", metadata))
    if answer.error_code == ErrorCode.member_id_required:
        answer = client.call(join(group, answer.member_id, metadata))
    assert answer.error_code == ErrorCode.none, answer.error_code
    return answer


@pytest.mark.parametrize("metadata_bytes, assignment_bytes", [
    (600_000, 600_000),  # each part fits, the record does not: found when encoded
    (45 << 20, 1),  # a03: the subscription alone is 45 MB: refused before it is encoded
])
def test_a_group_record_past_the_batch_limit_is_refused(tmp_path, metadata_bytes, assignment_bytes):
    server = start_limited_server(str(tmp_path), OVERRIDES, topics={"t": 1})
    try:
        commit_offsets(server, GROUP, KEPT)
        with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=60) as client:
            joined = join_until_member(client, "giant", b"m" * metadata_bytes)
            assert joined.leader == joined.member_id
            requests = [sync("giant", joined.generation_id, joined.member_id, b"a" * assignment_bytes)]
            requests += [commit_request(8, group, offsets) for group, offsets in BYSTANDERS.items()]
            client.send_raw(b"".join(request_frame(r, 1000 + i) for i, r in enumerate(requests)))
            answers = [client.receive(r, 1000 + i) for i, r in enumerate(requests)]
            assert answers[0].error_code == ErrorCode.unknown_server_error
            for answer in answers[1:]:
                assert [p.error_code for t in answer.topics for p in t.partitions] == [ErrorCode.none]
            # the failed store sent the group back to rebalancing: the member joins again, smaller
            again = client.call(join("giant", joined.member_id, b"m"))
            assert again.error_code == ErrorCode.none and again.generation_id > joined.generation_id
            synced = client.call(sync("giant", again.generation_id, again.member_id, b"a"))
            assert synced.error_code == ErrorCode.none
        dog.check()
        assert server.process.poll() is None
        assert server.stop() == 0
    finally:
        server.kill()
    restarted = start_limited_server(str(tmp_path), OVERRIDES)
    try:
        assert_commits_survive(restarted, GROUP, KEPT)
        for group, offsets in BYSTANDERS.items():
            assert_commits_survive(restarted, group, offsets)
    finally:
        restarted.kill()
