"""storage/pg/log_reads.py: which topic id the tools read, and how rows are cut into chunks."""

from __future__ import annotations

import uuid

import pytest

from coordinator.data_plane.topic_catalog import TopicCatalog
from storage.pg import log_reads
from storage.pg.connect import open_pool
from storage.pg.log_reads import Chunk, RowInfo
from tests.support.pg_offsets import CLUSTER_ID, offsets_topic_id


async def test_offsets_topic_id_from_kc_topics_else_from_the_cluster_id(pg_url):
    pool = await open_pool(pg_url)
    try:
        async with pool.acquire() as conn:
            with pytest.raises(LookupError):
                await log_reads.offsets_topic_id(conn)  # no node of the cluster started yet
            await conn.execute("INSERT INTO kc_cluster (name, value) VALUES ('cluster.id', $1)", CLUSTER_ID)
            derived = TopicCatalog(CLUSTER_ID, 50).get("__consumer_offsets").topic_id  # the topic catalog's
            assert await log_reads.offsets_topic_id(conn) == derived == offsets_topic_id()
            listed = uuid.uuid4()
            await conn.execute("INSERT INTO kc_topics (name, topic_id, partitions, internal) "
                               "VALUES ('__consumer_offsets', $1, 50, true)", listed)
            assert await log_reads.offsets_topic_id(conn) == listed
    finally:
        await pool.close()


def test_chunks_cut_consecutive_rows_by_size():
    rows = [RowInfo(0, 4, 100), RowInfo(5, 5, 100), RowInfo(6, 9, 300), RowInfo(12, 12, 50)]  # a gap: compacted
    assert log_reads.chunks(rows, 200) == [Chunk(0, 5, 200), Chunk(6, 9, 300), Chunk(12, 12, 50)]
    assert log_reads.chunks(rows, 1 << 20) == [Chunk(0, 12, 550)]
    assert log_reads.chunks([], 10) == []
