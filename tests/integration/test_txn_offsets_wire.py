"""TxnOffsetCommit against the real server process, with a raw wire client: offsets of a transaction whose
group's offsets partition was added (AddOffsetsToTxn) are pending -- OffsetFetch require_stable answers
UNSTABLE_OFFSET_COMMIT, a plain one the committed offset -- still pending after kill -9 and a restart, and
committed by EndTxn's marker; offsets for a group the transaction never added are refused (KIP-890's
verification, Kafka's error per request version) and nothing stays pending after EndTxn; offsets an earlier
version left pending outside their transaction are aborted once the transaction is known over (at the load,
when it completes) and stay so across restarts (transactions/runtime/orphans.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32, i64

from coordinator.groups.settings import GroupSettings
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.loader import load_all
from coordinator.runtime.timers import FakeScheduler
from rules.placement import partition_for
from tests.support.offsets import commit_request, fetch_request, fetched, schema, wait_loaded
from tests.support.server_process import ServerProcess, start_server
from tests.support.txn_wire import add_offsets, add_partitions, end_txn, init_producer_id
from tests.support.wire_client import WireClient

E = ErrorCode
GROUP = "txn-wire-group"


def txn_commit(version: int, producer_id: int, epoch: int, offsets: dict[int, int], *, group: str = GROUP,
               topic: str = "t", generation: int = -1, member: str = "", txn_id: str = "txn-1") -> object:
    m = schema("txn_offset_commit", version)
    partitions = []
    for partition, offset in offsets.items():
        kwargs: dict = {"partition_index": i32(partition), "committed_offset": i64(offset), "committed_metadata": "m"}
        if version >= 2:
            kwargs["committed_leader_epoch"] = i32(-1)
        partitions.append(m.TxnOffsetCommitRequestPartition(**kwargs))
    extra: dict = {"generation_id": i32(generation), "member_id": member, "group_instance_id": None} \
        if version >= 3 else {}
    return m.TxnOffsetCommitRequest(transactional_id=txn_id, group_id=group, producer_id=producer_id,
                                    producer_epoch=i16(epoch), topics=(m.TxnOffsetCommitRequestTopic(
                                        name=topic, partitions=tuple(partitions)),), **extra)


def codes(response) -> dict:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def stable(client: WireClient, version: int = 8) -> dict:
    response = client.call(fetch_request(version, GROUP, {"t": [0, 1]}, require_stable=True))
    topics = response.groups[0].topics if version >= 8 else response.topics
    return {key: (offset, code) for key, (offset, _e, _m, code) in fetched(topics).items()}


def retried(call, timeout: float = 20.0):
    """`call()` until it answers something else than a retriable loading error (the transaction coordinator's
    partitions load in the background after a start)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = call()
        code = getattr(answer, "error_code", answer)
        if code not in (E.coordinator_load_in_progress, E.concurrent_transactions) or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


@contextmanager
def serving(data: str, kill: bool = False) -> Iterator[tuple[ServerProcess, WireClient]]:
    """The server on `data` (topic t, 2 partitions) and a client, once GROUP's offsets partition is loaded; then
    stopped (exit 0), or killed with SIGKILL (nothing flushed on the way out)."""
    server = start_server(data, topics={"t": 2})
    try:
        with WireClient(server.host, server.port) as client:
            wait_loaded(client, GROUP)
            yield server, client
    finally:
        if kill:
            server.kill()
        else:
            assert server.stop() == 0


def begin(client: WireClient, txn_id: str) -> tuple[int, int]:
    init = retried(lambda: init_producer_id(client, txn_id))
    assert init.error_code == E.none
    return init.producer_id, init.producer_epoch


def test_txn_offset_commit_pending_until_its_marker_and_across_kill_9(tmp_path):
    data = str(tmp_path / "data")
    with serving(data, kill=True) as (server, client):
        pid, epoch = begin(client, "txn-1")
        assert add_offsets(client, "txn-1", pid, epoch, GROUP) == E.none
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
        assert add_offsets(client, "txn-1", pid, epoch, "no-such-group") == E.none
        assert codes(client.call(txn_commit(4, pid, epoch, {0: 1}, generation=3, member="m",
                                            group="no-such-group"))) == {("t", 0): E.illegal_generation}
        assert codes(client.call(txn_commit(4, pid, epoch, {0: 1}, group=""))) == {("t", 0): E.invalid_group_id}
        unstable = {("t", 0): (-1, E.unstable_offset_commit), ("t", 1): (-1, E.unstable_offset_commit)}
        assert stable(client) == unstable
        assert stable(client, 7) == unstable
        plain = client.call(fetch_request(8, GROUP, {"t": [0, 1]}))
        assert {k: v[0] for k, v in fetched(plain.groups[0].topics).items()} == {("t", 0): 3, ("t", 1): -1}
    with serving(data) as (server, client):
        assert stable(client) == unstable  # the transaction is still open: its offsets still pending
        plain = client.call(fetch_request(8, GROUP, {"t": [0, 1]}))
        assert {k: v[0] for k, v in fetched(plain.groups[0].topics).items()} == {("t", 0): 3, ("t", 1): -1}
        assert retried(lambda: end_txn(client, "txn-1", pid, epoch, True)) == E.none
        assert stable(client) == {("t", 0): (1, E.none), ("t", 1): (24, E.none)}


def test_offsets_for_a_group_the_transaction_never_added_are_refused_and_never_left_pending(tmp_path):
    """The issue-30 wedge: InitProducerId, AddPartitionsToTxn, then TxnOffsetCommit without AddOffsetsToTxn was
    answered NONE and left the offsets pending for ever (UNSTABLE_OFFSET_COMMIT after EndTxn, and after a
    restart)."""
    data = str(tmp_path / "data")
    with serving(data) as (server, client):
        pid, epoch = begin(client, "wedge")
        assert add_partitions(client, "wedge", pid, epoch, "t", [0]) == {("t", 0): E.none}
        for version, refused in ((0, E.invalid_txn_state), (2, E.invalid_txn_state), (3, E.invalid_txn_state),
                                 (4, E.transaction_abortable)):
            answer = client.call(txn_commit(version, pid, epoch, {0: 7, 1: 8}, txn_id="wedge"))
            assert codes(answer) == {("t", 0): refused, ("t", 1): refused}, version
        fenced = client.call(txn_commit(4, pid, epoch + 1, {0: 7}, txn_id="wedge"))
        assert codes(fenced) == {("t", 0): E.invalid_producer_epoch}
        assert codes(client.call(txn_commit(4, pid, epoch, {0: 7}, txn_id="never-initialized"))) == {
            ("t", 0): E.invalid_producer_id_mapping}
        assert stable(client) == {("t", 0): (-1, E.none), ("t", 1): (-1, E.none)}
        assert end_txn(client, "wedge", pid, epoch, True) == E.none
        assert stable(client) == {("t", 0): (-1, E.none), ("t", 1): (-1, E.none)}
    with serving(data) as (server, client):
        assert stable(client) == {("t", 0): (-1, E.none), ("t", 1): (-1, E.none)}


def wait_all_loaded(server, timeout: float = 20.0) -> None:
    """Until every offsets partition and every __transaction_state partition (50 each) logged its load."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = list(server.lines)
        if any("offsets partitions loaded" in line for line in lines) and sum(
                "transaction state partition loaded" in line for line in lines) == 50:
            return
        time.sleep(0.05)
    raise AssertionError("the partitions did not load")


async def _write_orphan(data: str, producer_id: int, epoch: int, offset: int) -> None:
    """With the server stopped: offsets pending for `producer_id` in GROUP's offsets partition, written as the
    server before KIP-890's verification of TxnOffsetCommit did for a group the transaction never added."""
    partition = partition_for(GROUP, 50)
    durable = DurableLog(data)
    groups = GroupCoordinator(GroupSettings(offsets_partitions=50), FakeScheduler(), durable, owned=[partition])
    durable.open_partition(partition)
    await load_all(groups.owned_shards(), durable, None)
    value = OffsetValue(offset, "", int(time.time() * 1000), -1, -1)
    await groups.shard_for(GROUP).txn.write(producer_id, epoch, [OffsetCommitRecord(GROUP, "t", 0, value)])
    await durable.close()


def test_offsets_left_pending_by_transactions_that_are_over_are_aborted_at_load_and_when_they_complete(tmp_path):
    """What the unverified TxnOffsetCommit left in a log: for a transaction that completed, aborted once the
    restarted server has loaded (and so across every later restart); for one still ongoing (its partitions
    without the group's), left pending until it completes, then aborted."""
    data = str(tmp_path / "data")
    with serving(data) as (server, client):
        assert codes(client.call(commit_request(8, GROUP, {("t", 0): 3}))) == {("t", 0): E.none}
        done_pid, done_epoch = begin(client, "completed")
        assert add_partitions(client, "completed", done_pid, done_epoch, "t", [0]) == {("t", 0): E.none}
        assert end_txn(client, "completed", done_pid, done_epoch, True) == E.none
    asyncio.run(_write_orphan(data, done_pid, done_epoch, 50))
    with serving(data) as (server, client):
        settled = {("t", 0): (3, E.none), ("t", 1): (-1, E.none)}
        deadline = time.monotonic() + 10
        while stable(client) != settled and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stable(client) == settled  # aborted: the committed offset stays
        open_pid, open_epoch = begin(client, "ongoing")
        assert add_partitions(client, "ongoing", open_pid, open_epoch, "t", [1]) == {("t", 1): E.none}
    asyncio.run(_write_orphan(data, open_pid, open_epoch, 60))
    with serving(data) as (server, client):
        wait_all_loaded(server)
        client.call(fetch_request(8, GROUP, {"t": [0]}))  # answered after the sweeps the loads asked for
        assert stable(client) == {("t", 0): (-1, E.unstable_offset_commit), ("t", 1): (-1, E.none)}
        assert end_txn(client, "ongoing", open_pid, open_epoch, True) == E.none
        deadline = time.monotonic() + 10
        while stable(client) != settled and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stable(client) == settled
        assert any("aborting transactional offsets no transaction marker will end" in line
                   for line in server.lines)
    with serving(data) as (server, client):
        assert stable(client) == settled  # the ABORT markers are in the log: nothing pending at the load
        wait_all_loaded(server)
        client.call(fetch_request(8, GROUP, {"t": [0]}))  # answered after the sweeps the loads asked for
        assert not any("aborting transactional offsets" in line for line in server.lines)
