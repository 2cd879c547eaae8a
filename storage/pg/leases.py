"""kc_nodes: each node's lease (node.id, incarnation, listeners, expiry), timed by PostgreSQL's clock.

A node registers with a fresh incarnation and renews before `session_ms` passes; a row whose
expires_at is past (per clock_timestamp() of PostgreSQL, never a node's clock) is a dead node, whose
node.id another incarnation may take. Membership policy (when to renew, what to do on loss) lives
in coordinator/cluster/node_leases.py.

A node is also dead, before its lease runs out, when its PostgreSQL session has ended: each
incarnation holds a session-level advisory lock (its `session_key`, a random bigint) on a connection
of its own, and PostgreSQL frees the lock the moment that connection closes -- which is what a killed
process's kernel does to it. `expire_orphaned` then ends the lease at once, so the partitions of a
crashed node move in well under a second instead of a session timeout (while its address, which
clients keep trying, may drop every packet). A node that is only frozen (SIGSTOP, a GC pause) or cut
off keeps its connection open as far as PostgreSQL knows, so its lease decides, as before. A row with
no session_key (a node that holds no lock) is judged by its lease alone.
"""

from __future__ import annotations

import datetime
import json
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from storage.pg.errors import NodeIdInUseError
from storage.pg.notify import CHANNEL, Executor

_EXPIRY = "clock_timestamp() + ${} * interval '1 millisecond'"

# Whether some session of this database holds the advisory lock of kc_nodes row `n` (pg_locks shows a bigint
# key as classid = its high 32 bits, objid = its low 32 bits, objsubid = 1). Exclusive only: a watcher's shared
# lock on a dead node's key (coordinator/cluster/watcher.py), granted when that node's session ended, must not
# read as the node being alive.
_SESSION_HELD = """EXISTS (SELECT 1 FROM pg_locks l
                           WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
                             AND l.mode = 'ExclusiveLock'
                             AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                             AND (l.classid::bigint << 32) | l.objid::bigint = n.session_key)"""


async def hold_session_lock(connection: Any) -> int:
    """Take a fresh session-level advisory lock on `connection` (the node's own, kept open while it lives);
    returns its key, which `register` records. PostgreSQL frees it when the connection closes."""
    while True:
        key = secrets.randbits(63)
        if await connection.fetchval("SELECT pg_try_advisory_lock($1)", key):
            return key


async def session_ended_within(connection: Any, key: int, wait_ms: int) -> bool:
    """Whether the session holding lock `key` ends within `wait_ms` (a shared request waits behind its exclusive
    hold, under lock_timeout); a granted lock is let go at once. Run on a connection of its own: the caller asks
    again and again, and between two asks may change its mind about which key to wait for -- with no
    cancellation of a statement in flight."""
    try:
        async with connection.transaction():
            await connection.execute(f"SET LOCAL lock_timeout = {int(wait_ms)}")
            await connection.execute("SELECT pg_advisory_xact_lock_shared($1)", key)
    except asyncpg.exceptions.LockNotAvailableError:
        return False
    return True  # the transaction-level lock went with the COMMIT


@dataclass(frozen=True, slots=True)
class NodeRow:
    node_id: int
    incarnation: uuid.UUID
    listeners: Any  # the JSON the node registered (its advertised listeners)
    rack: str | None
    expires_at: datetime.datetime
    session_key: int | None = None  # of its session lock (None: it holds none)


async def register(
    executor: Executor,
    node_id: int,
    listeners: Any,
    rack: str | None,
    session_ms: int,
    *,
    replacing: uuid.UUID | None = None,
    session_key: int | None = None,
) -> uuid.UUID:
    """Take `node_id` with a new incarnation and a lease of `session_ms`; NodeIdInUseError while
    another incarnation's lease on it is live. `replacing`: our own previous incarnation, which we
    may replace even while PostgreSQL still counts its lease as live (re-registering after a lost renew).
    `session_key`: the lock `hold_session_lock` took for this incarnation.
    A live lease whose session lock is free (its node died) does not stop the registration."""
    incarnation = uuid.uuid4()
    taken = await executor.fetch(
        f"""WITH taken AS (
                INSERT INTO kc_nodes AS n (node_id, incarnation, listeners, rack, expires_at, session_key)
                VALUES ($1, $2, $3::jsonb, $4, {_EXPIRY.format(5)}, $7)
                ON CONFLICT (node_id) DO UPDATE
                    SET incarnation = EXCLUDED.incarnation, listeners = EXCLUDED.listeners, rack = EXCLUDED.rack,
                        expires_at = EXCLUDED.expires_at, session_key = EXCLUDED.session_key
                    WHERE n.expires_at <= clock_timestamp() OR n.incarnation = $6::uuid
                       OR (n.session_key IS NOT NULL AND NOT {_SESSION_HELD})
                RETURNING 1)
            SELECT pg_notify('{CHANNEL}', 'nodes') FROM taken""",
        node_id, incarnation, json.dumps(listeners), rack, session_ms, replacing, session_key,
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


async def expire_orphaned(executor: Executor, me: int) -> list[int]:
    """End at once the lease of every other node whose session lock is free (its connection closed: the
    process died); notifies the cluster when there was one. Returns their node ids."""
    rows = await executor.fetch(
        f"""WITH gone AS (
                UPDATE kc_nodes n SET expires_at = clock_timestamp()
                WHERE n.node_id <> $1 AND n.expires_at > clock_timestamp() AND n.session_key IS NOT NULL
                  AND NOT {_SESSION_HELD}
                RETURNING n.node_id)
            SELECT node_id, pg_notify('{CHANNEL}', 'nodes') FROM gone""",
        me,
    )  # fmt: skip
    return sorted(row["node_id"] for row in rows)


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
        """SELECT node_id, incarnation, listeners, rack, expires_at, session_key FROM kc_nodes
           WHERE expires_at > clock_timestamp() ORDER BY node_id"""
    )
    return [
        NodeRow(row["node_id"], row["incarnation"], json.loads(row["listeners"]), row["rack"], row["expires_at"],
                row["session_key"])
        for row in rows
    ]


async def db_now(executor: Executor) -> datetime.datetime:
    """PostgreSQL's clock (the one leases are measured by)."""
    return await executor.fetchval("SELECT clock_timestamp()")
