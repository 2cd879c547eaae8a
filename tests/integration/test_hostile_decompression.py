"""Issue 13 defect 2, against the real server in a 3 GiB container: a 131 KB zstd batch that
inflates to 4 GiB (RLE blocks, 32,768:1) is answered INVALID_RECORD, and a 2 KB batch of the
most records that fit under the cap (its longest record walk) is checked while others still
get answers within 1.5 s; the server stays up and keeps its acknowledged commits."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from storage.compression import MAX_DECOMPRESSED_BYTES, ZSTD
from tests.support.bombs import batch_with_payload, many_smallest_records, zstd_rle
from tests.support.data_plane import req
from tests.support.hostile import Watchdog, assert_commits_survive, commit_offsets, start_limited_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

COMMITS = {("orders", 0): 42, ("orders", 1): 7}


def produce(client: WireClient, records: bytes) -> ErrorCode:
    request = req(ApiKey.PRODUCE, 9, acks=-1, timeout=datetime.timedelta(seconds=5), transactional_id=None,
                  topic_data=[{"name": "bombed", "partition_data": [{"index": 0, "records": records}]}])
    return client.call(request).responses[0].partition_responses[0].error_code


def attack(tmp_path, records: bytes, expected: ErrorCode) -> None:
    """Send `records` three times while the watchdog asks; the server must survive it all."""
    server = start_limited_server(str(tmp_path))
    try:
        commit_offsets(server, "survivors", COMMITS)
        with Watchdog(server) as watchdog, WireClient(server.host, server.port) as attacker:
            for _ in range(3):
                assert produce(attacker, records) == expected
            watchdog.check()
        assert server.process.poll() is None, "the server died"
        assert_commits_survive(server, "survivors", COMMITS)
    finally:
        server.stop()


def test_zstd_bomb_is_refused_while_the_server_stays_up(tmp_path):
    bomb = batch_with_payload(ZSTD, zstd_rle(4 << 30))
    assert len(bomb) < 140 * 1024
    attack(tmp_path, bomb, ErrorCode.invalid_record)


def test_the_longest_record_walk_under_the_cap_keeps_others_answered(tmp_path):
    walk = many_smallest_records(MAX_DECOMPRESSED_BYTES)
    assert len(walk) < 4096
    attack(tmp_path, walk, ErrorCode.none)
