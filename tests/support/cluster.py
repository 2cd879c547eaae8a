"""A cluster of real server processes on one PostgreSQL database, for the cluster-mode tests.

`ClusterNodes(pg_url, tmp_path)` starts nodes with `storage.url` set, each its own `node.id`,
ephemeral port and scratch `log.dirs`, with short lease timings so failover fits a test. It can
kill -9, SIGSTOP/SIGCONT, SIGTERM and restart nodes, and reads the database the nodes share
(`query`) to check what became visible there.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coordinator.cluster.assignment import desired_owners
from tests.support.server_process import ServerProcess, start_server

#: Short leases so that a test's failover takes seconds (defaults: 2000 / 9000).
HEARTBEAT_MS = 500
SESSION_MS = 3000
OFFSETS_PARTITIONS = 6


class ClusterDatabase:
    """What the nodes sharing the database at `pg_url` wrote there (also for nodes this process did not start,
    e.g. the compose cluster's containers: tests/clients/test_compose_cluster.py)."""

    def __init__(self, pg_url: str) -> None:
        self.pg_url = pg_url

    def query(self, sql: str, *args: Any) -> list[dict]:
        return asyncio.run(_query(self.pg_url, sql, args))

    def owners(self) -> dict[tuple[str, int], tuple[int | None, int]]:
        """(topic name, partition) -> (owner node id or None, epoch), as kc_partitions says."""
        rows = self.query("SELECT t.name, p.partition, p.owner, p.epoch FROM kc_partitions p "
                          "JOIN kc_topics t USING (topic_id)")
        return {(r["name"], r["partition"]): (r["owner"], r["epoch"]) for r in rows}

    def settled(self, node_ids: set[int], timeout: float = 30) -> dict[tuple[str, int], tuple[int | None, int]]:
        """kc_partitions (as `owners`) once every partition is owned by the node that the assignment
        over `node_ids` wants: the live nodes have taken their shares and given up the others."""
        live = sorted(node_ids)

        def steady() -> dict | None:
            rows = self.query("SELECT t.name, p.topic_id, p.partition, p.owner, p.epoch FROM kc_partitions p "
                              "JOIN kc_topics t USING (topic_id)")
            wanted = desired_owners([(r["topic_id"], r["partition"]) for r in rows], live)
            if any(r["owner"] != wanted[(r["topic_id"], r["partition"])] for r in rows):
                return None
            return {(r["name"], r["partition"]): (r["owner"], r["epoch"]) for r in rows}

        return wait_until(steady, timeout, f"every partition owned as the assignment over nodes {live} wants")

    def live_nodes(self) -> set[int]:
        return {r["node_id"] for r in self.query("SELECT node_id FROM kc_nodes WHERE expires_at > now()")}

    def batch_count(self) -> int:
        return self.query("SELECT count(*) AS n FROM kc_batches")[0]["n"]


class ClusterNodes(ClusterDatabase):
    """Server processes (one per node id) on the database at `pg_url`."""

    def __init__(self, pg_url: str, tmp_path: Path, **overrides: str) -> None:
        super().__init__(pg_url)
        self.tmp_path = tmp_path
        self.settings = {"storage.url": pg_url, "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
                         "broker.session.timeout.ms": str(SESSION_MS),
                         "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                         "group.initial.rebalance.delay.ms": "0", **overrides}
        self.nodes: dict[int, ServerProcess] = {}
        self._all: list[ServerProcess] = []

    @property
    def session_seconds(self) -> float:
        return int(self.settings["broker.session.timeout.ms"]) / 1000

    def start(self, node_id: int, timeout: float = 20.0, **overrides: str) -> ServerProcess:
        scratch = self.tmp_path / f"node{node_id}"
        node = start_server(str(scratch), {**self.settings, "node.id": str(node_id), **overrides}, timeout=timeout)
        self.nodes[node_id] = node
        self._all.append(node)
        return node

    def start_all(self, count: int = 3) -> list[ServerProcess]:
        return [self.start(node_id) for node_id in range(1, count + 1)]

    def bootstrap(self, *node_ids: int) -> str:
        """Bootstrap servers: the given nodes, else every running node."""
        chosen = node_ids or tuple(self.running())
        return ",".join(self.nodes[n].bootstrap for n in chosen)

    def running(self) -> list[int]:
        return [n for n, node in self.nodes.items() if node.process.poll() is None]

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def pause(self, node_id: int) -> None:
        os.kill(self.nodes[node_id].process.pid, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        os.kill(self.nodes[node_id].process.pid, signal.SIGCONT)

    def close(self) -> None:
        for node in self._all:
            if node.process.poll() is None:
                os.kill(node.process.pid, signal.SIGCONT)
            node.kill()


async def _query(url: str, sql: str, args: tuple) -> list[dict]:
    from storage.pg.connect import connect

    connection = await connect(url)  # (a URL of several hosts too)
    try:
        return [dict(row) for row in await connection.fetch(sql, *args)]
    finally:
        await connection.close()


def wait_until(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll `check` until it returns something truthy (returned) or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what} (last: {result!r})")
        time.sleep(interval)
