"""A node paused (SIGSTOP) past its session loses its partitions to the others; resumed (SIGCONT), it
answers the writes that waited in its socket with retriable errors and makes none of them visible in
PostgreSQL, gives up what it held, and later takes its share again."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from rules.placement import OFFSETS_TOPIC, partition_for
from tests.clients.produce import create_topic
from tests.support.cluster import OFFSETS_PARTITIONS, ClusterNodes, wait_until
from tests.support.data_plane import batch, ms, req
from tests.support.offsets import commit_request, fetch_request
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

TOPIC = "fenced"
PARTITIONS = 6


def produce_request(topic: str, partition: int, value: bytes):
    return req(ApiKey.PRODUCE, 9, acks=-1, timeout=ms(5000), transactional_id=None,
               topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": batch(value)}]}])


def produce_code(response) -> ErrorCode:
    return response.responses[0].partition_responses[0].error_code


def rows_of(cluster: ClusterNodes, topic: str, partition: int) -> list[tuple[int, int]]:
    return [(r["base_offset"], r["last_offset"]) for r in cluster.query(
        "SELECT b.base_offset, b.last_offset FROM kc_batches b JOIN kc_topics t USING (topic_id) "
        "WHERE t.name = $1 AND b.partition = $2 ORDER BY b.base_offset", topic, partition)]


def test_a_paused_node_makes_no_write_visible_after_sigcont(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        nodes = cluster.start_all(3)
        group = "fence"
        offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
        victim = cluster.settled({1, 2, 3})[(OFFSETS_TOPIC, offsets_partition)][0]  # the group's coordinator
        for attempt in range(10):  # a topic with a partition the victim leads too (the assignment decides)
            topic = f"{TOPIC}-{attempt}"
            create_topic(nodes[0].bootstrap, topic, PARTITIONS)
            owners = cluster.settled({1, 2, 3})
            led = [p for p in range(PARTITIONS) if owners[(topic, p)][0] == victim]
            if led:
                break
        tp = (topic, led[0])
        node = cluster.nodes[victim]

        with WireClient(node.host, node.port, timeout=30) as client:
            assert client.call(commit_request(8, group, {tp: 10})).topics[0].partitions[0].error_code == ErrorCode.none
            assert produce_code(client.call(produce_request(*tp, b"before"))) == ErrorCode.none
            offsets_rows, topic_rows = rows_of(cluster, OFFSETS_TOPIC, offsets_partition), rows_of(cluster, *tp)

            cluster.pause(victim)
            late_commit = commit_request(8, group, {tp: 20})
            late_produce = produce_request(*tp, b"after")
            commit_id, produce_id = client.send(late_commit), client.send(late_produce)  # wait in its socket
            moved = wait_until(
                lambda: all(owner not in (None, victim) for owner, _ in cluster.owners().values()) and
                cluster.owners(), cluster.session_seconds + 10, "the paused node's partitions taken by the others")
            assert moved[tp][1] > owners[tp][1]  # a new epoch
            cluster.resume(victim)

            commit_code = client.receive(late_commit, commit_id).topics[0].partitions[0].error_code
            assert commit_code in (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
                                   ErrorCode.coordinator_load_in_progress)
            assert produce_code(client.receive(late_produce, produce_id)) in (
                ErrorCode.not_leader_or_follower, ErrorCode.request_timed_out, ErrorCode.kafka_storage_error)
        assert rows_of(cluster, OFFSETS_TOPIC, offsets_partition) == offsets_rows
        assert rows_of(cluster, *tp) == topic_rows

        node.wait_for_event("cluster.partition.lost", timeout=10)
        again = cluster.settled({1, 2, 3})  # the resumed node takes its share again
        assert again[(OFFSETS_TOPIC, offsets_partition)][0] == victim
        coordinator = cluster.nodes[victim]
        with WireClient(coordinator.host, coordinator.port) as client:
            fetched = wait_until(lambda: (r := client.call(fetch_request(8, group, {tp[0]: [tp[1]]})).groups[0])
                                 .error_code == ErrorCode.none and r, 20, "the group's offsets loaded")
        assert fetched.topics[0].partitions[0].committed_offset == 10
    finally:
        cluster.close()
