"""kc_nodes: each node's lease (node.id, incarnation, listeners, expiry), timed by PostgreSQL's clock.

A node registers with a fresh incarnation and renews before `session_ms` passes; a row whose
expires_at is past (per clock_timestamp() of PostgreSQL, never a node's clock) is a dead node, whose
node.id another incarnation may take. Membership policy (when to renew, what to do on loss) lives
in coordinator/cluster/membership.py.
"""

from __future__ import annotations

import datetime
import json
import uuid
from dataclasses import dataclass
from typing import Any

from storage.pg.errors import NodeIdInUseError
from storage.pg.notify import CHANNEL, Executor

_EXPIRY = "clock_timestamp() + ${} * interval '1 millisecond'"


@dataclass(frozen=True, slots=True)
class NodeRow:
    node_id: int
    incarnation: uuid.UUID
    listeners: Any  # the JSON the node registered (its advertised listeners)
    rack: str | None
    expires_at: datetime.datetime


async def register(
    executor: Executor,
    node_id: int,
    listeners: Any,
    rack: str | None,
    session_ms: int,
    *,
    replacing: uuid.UUID | None = None,
) -> uuid.UUID:
    """Take `node_id` with a new incarnation and a lease of `session_ms`; NodeIdInUseError while
    another incarnation's lease on it is live. `replacing`: our own previous incarnation, which we
    may replace even while PostgreSQL still counts its lease as live (re-registering after a lost renew)."""
    incarnation = uuid.uuid4()
    taken = await executor.fetch(
        f"""WITH taken AS (
                INSERT INTO kc_nodes AS n (node_id, incarnation, listeners, rack, expires_at)
                VALUES ($1, $2, $3::jsonb, $4, {_EXPIRY.format(5)})
                ON CONFLICT (node_id) DO UPDATE
                    SET incarnation = EXCLUDED.incarnation, listeners = EXCLUDED.listeners, rack = EXCLUDED.rack,
                        expires_at = EXCLUDED.expires_at
                    WHERE n.expires_at <= clock_timestamp() OR n.incarnation = $6::uuid
                RETURNING 1)
            SELECT pg_notify('{CHANNEL}', 'nodes') FROM taken""",
        node_id, incarnation, json.dumps(listeners), rack, session_ms, replacing,
    )  # fmt: skip
    if not taken:
        raise NodeIdInUseError(node_id)
    return incarnation


async def renew(executor: Executor, node_id: int, incarnation: uuid.UUID, session_ms: int) -> bool:
    """Extend our lease to now + session_ms. False when it is no longer ours to extend: the row is
    gone, another incarnation took it, or it already expired (the node must treat itself as dead)."""
    renewed = await executor.fetchval(
        f"""UPDATE kc_nodes SET expires_at = {_EXPIRY.format(3)}
            WHERE node_id = $1 AND incarnation = $2 AND expires_at > clock_timestamp() RETURNING 1""",
        node_id, incarnation, session_ms,
    )  # fmt: skip
    return renewed is not None


async def deregister(executor: Executor, node_id: int, incarnation: uuid.UUID) -> bool:
    """Remove our row (a clean stop); False when it was not ours any more."""
    removed = await executor.fetch(
        f"""WITH gone AS (DELETE FROM kc_nodes WHERE node_id = $1 AND incarnation = $2 RETURNING 1)
            SELECT pg_notify('{CHANNEL}', 'nodes') FROM gone""",
        node_id, incarnation,
    )  # fmt: skip
    return bool(removed)


async def live_nodes(executor: Executor) -> list[NodeRow]:
    """Every node whose lease has not expired by PostgreSQL's clock, by node id."""
    rows = await executor.fetch(
        """SELECT node_id, incarnation, listeners, rack, expires_at FROM kc_nodes
           WHERE expires_at > clock_timestamp() ORDER BY node_id"""
    )
    return [
        NodeRow(row["node_id"], row["incarnation"], json.loads(row["listeners"]), row["rack"], row["expires_at"])
        for row in rows
    ]


async def db_now(executor: Executor) -> datetime.datetime:
    """PostgreSQL's clock (the one leases are measured by)."""
    return await executor.fetchval("SELECT clock_timestamp()")
