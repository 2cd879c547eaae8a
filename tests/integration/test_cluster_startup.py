"""Cluster mode refuses to start with one clear line and exit code 2: PostgreSQL unreachable (no password
in any line), a schema newer than the code, a node.id held by a live node, another offsets partition count.
A node killed -9 and restarted at once is no other node: it waits for its old lease and takes a share."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys

import pytest

from tests.support.cluster import ClusterNodes
from tests.support.server_process import ROOT

pytestmark = pytest.mark.integration


def serve_until_exit(tmp_path, **settings: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "coordinator", "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", f"log.dirs={tmp_path / 'refused'}"]
    for name, value in settings.items():
        args += ["--override", f"{name}={value}"]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60)


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_postgres_is_one_line_without_the_password(tmp_path):
    port = closed_port()
    result = serve_until_exit(tmp_path, **{"storage.url": f"postgresql://kc:s3cret@127.0.0.1:{port}/kc"})
    assert result.returncode == 2
    [line] = error_lines(result)
    assert line.startswith(f"error: storage.url: cannot reach PostgreSQL at postgresql://kc:***@127.0.0.1:{port}/kc")
    assert "s3cret" not in result.stderr


def test_a_newer_schema_stops_start_up_naming_both_versions(pg_url, tmp_path):
    from storage.pg.connect import open_pool
    from storage.pg.schema import SCHEMA_VERSION

    async def from_the_future() -> None:
        pool = await open_pool(pg_url)
        try:
            await pool.execute("UPDATE kc_schema SET version = $1", SCHEMA_VERSION + 7)
        finally:
            await pool.close()

    asyncio.run(from_the_future())
    result = serve_until_exit(tmp_path, **{"storage.url": pg_url})
    assert result.returncode == 2
    [line] = error_lines(result)
    assert line.startswith("error: storage.url: ")
    assert str(SCHEMA_VERSION + 7) in line and str(SCHEMA_VERSION) in line.replace(str(SCHEMA_VERSION + 7), "")


def test_a_node_id_held_by_a_live_node_and_another_partition_count_are_refused(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        cluster.start(1)
        same_id = serve_until_exit(tmp_path, **{**cluster.settings, "node.id": "1"})
        assert same_id.returncode == 2
        [line] = error_lines(same_id)
        assert line.startswith("error: node.id: ")
        other_count = serve_until_exit(tmp_path, **{**cluster.settings, "node.id": "2",
                                                    "offsets.topic.num.partitions": "7"})
        assert other_count.returncode == 2
        [line] = error_lines(other_count)
        assert line.startswith("error: offsets.topic.num.partitions: ")
        assert cluster.live_nodes() == {1}  # neither refused node registered
        assert cluster.nodes[1].stop() == 0
    finally:
        cluster.close()


def test_a_node_killed_and_restarted_at_once_takes_its_node_id_back_and_a_share(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        cluster.start_all(2)
        cluster.settled({1, 2})
        cluster.kill(2)
        restarted = cluster.start(2, timeout=cluster.session_seconds + 15)
        # its old lease may still be live, but the session that held it ended with the process: no wait
        assert not restarted.events("cluster.node_id_held")
        again = cluster.settled({1, 2})
        assert any(owner == 2 for owner, _epoch in again.values())
        for node_id in (1, 2):
            assert cluster.nodes[node_id].stop() == 0
    finally:
        cluster.close()
