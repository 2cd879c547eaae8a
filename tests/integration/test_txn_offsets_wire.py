"""TxnOffsetCommit against the real server process: a producer id from InitProducerId (idempotent: no
transactional id), its offsets pending -- OffsetFetch require_stable answers UNSTABLE_OFFSET_COMMIT, a plain one
the committed offset -- and still pending after kill -9 and a restart. (The marker that ends them comes from
EndTxn, the transaction coordinator's; complete_transaction is tested in tests/unit/test_txn_offsets*.py.)"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32, i64

from tests.support.offsets import commit_request, fetch_request, fetched, schema, wait_loaded
from tests.support.server_process import start_server
from tests.support.wire_client import WireClient

E = ErrorCode
GROUP = "txn-wire-group"


def txn_commit(version: int, producer_id: int, epoch: int, offsets: dict[int, int], *, group: str = GROUP,
               topic: str = "t", generation: int = -1, member: str = "") -> object:
    m = schema("txn_offset_commit", version)
    partitions = []
    for partition, offset in offsets.items():
        kwargs: dict = {"partition_index": i32(partition), "committed_offset": i64(offset), "committed_metadata": "m"}
        if version >= 2:
            kwargs["committed_leader_epoch"] = i32(-1)
        partitions.append(m.TxnOffsetCommitRequestPartition(**kwargs))
    extra: dict = {"generation_id": i32(generation), "member_id": member, "group_instance_id": None} \
        if version >= 3 else {}
    return m.TxnOffsetCommitRequest(transactional_id="txn-1", group_id=group, producer_id=producer_id,
                                    producer_epoch=i16(epoch), topics=(m.TxnOffsetCommitRequestTopic(
                                        name=topic, partitions=tuple(partitions)),), **extra)


def codes(response) -> dict:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def stable(client: WireClient, version: int = 8) -> dict:
    response = client.call(fetch_request(version, GROUP, {"t": [0, 1]}, require_stable=True))
    topics = response.groups[0].topics if version >= 8 else response.topics
    return {key: (offset, code) for key, (offset, _e, _m, code) in fetched(topics).items()}


def test_txn_offset_commit_pending_until_its_marker_and_across_kill_9(tmp_path):
    data = str(tmp_path / "data")
    server = start_server(data, topics={"t": 2})
    try:
        with WireClient(server.host, server.port) as client:
            wait_loaded(client, GROUP)
            init = schema("init_producer_id", 4).InitProducerIdRequest(
                transactional_id=None, transaction_timeout=datetime.timedelta(milliseconds=60000),
                producer_id=i64(-1), producer_epoch=i16(-1))
            produced = client.call(init)
            assert produced.error_code == E.none
            pid, epoch = produced.producer_id, produced.producer_epoch
            assert codes(client.call(commit_request(8, GROUP, {("t", 0): 3}))) == {("t", 0): E.none}
            for version in (0, 3, 4):
                answer = client.call(txn_commit(version, pid, epoch, {0: 10 + version, 1: 20 + version}))
                assert codes(answer) == {("t", 0): E.none, ("t", 1): E.none}, version
            refused = client.call(txn_commit(4, pid, epoch, {0: 1, 9: 1}))
            assert codes(refused) == {("t", 0): E.none, ("t", 9): E.unknown_topic_or_partition}
            assert codes(client.call(txn_commit(4, pid, epoch, {0: 1}, topic="nope"))) == {
                ("nope", 0): E.unknown_topic_or_partition}
            assert codes(client.call(txn_commit(4, pid, epoch, {0: 1}, generation=3, member="m"))) == {
                ("t", 0): E.unknown_member_id}  # the (simple, Empty) group has no such member
            wait_loaded(client, "no-such-group")
            assert codes(client.call(txn_commit(4, pid, epoch, {0: 1}, generation=3, member="m",
                                                group="no-such-group"))) == {("t", 0): E.illegal_generation}
            assert codes(client.call(txn_commit(4, pid, epoch, {0: 1}, group=""))) == {("t", 0): E.invalid_group_id}
            unstable = {("t", 0): (-1, E.unstable_offset_commit), ("t", 1): (-1, E.unstable_offset_commit)}
            assert stable(client) == unstable
            assert stable(client, 7) == unstable
            plain = client.call(fetch_request(8, GROUP, {"t": [0, 1]}))
            assert {k: v[0] for k, v in fetched(plain.groups[0].topics).items()} == {("t", 0): 3, ("t", 1): -1}
    finally:
        server.kill()  # kill -9: nothing flushed on the way out
    server = start_server(data, topics={"t": 2})
    try:
        with WireClient(server.host, server.port) as client:
            wait_loaded(client, GROUP)
            assert stable(client) == unstable
            plain = client.call(fetch_request(8, GROUP, {"t": [0, 1]}))
            assert {k: v[0] for k, v in fetched(plain.groups[0].topics).items()} == {("t", 0): 3, ("t", 1): -1}
    finally:
        assert server.stop() == 0
