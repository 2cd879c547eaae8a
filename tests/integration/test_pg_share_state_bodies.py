"""storage/pg/share_state_calls.py's rows for bodies too long for a notification, on a real PostgreSQL: stored
compressed, taken once (the row goes as it is read), rows nobody took deleted after STORED_BODY_TTL by the next
store, and a row that does not decompress taken as a gone one."""

from __future__ import annotations

import os

import asyncpg

from storage.pg import share_state_calls as calls
from storage.pg.schema import migrate


async def test_a_stored_body_is_taken_once_and_old_rows_go(pg_url):
    conn = await asyncpg.connect(pg_url)
    try:
        await migrate(conn)
        body = os.urandom(20_000)
        first = await calls.store_body(conn, body)
        assert calls.question(calls.Question(1, 2, 3, body)) is None
        payload = calls.question(calls.Question(1, 2, 3, b"", first))
        assert payload is not None and len(payload) < 100
        assert await calls.take_body(conn, first) == body
        assert await calls.take_body(conn, first) is None  # taken: gone
        forgotten = await calls.store_body(conn, b"never taken")
        await conn.execute("UPDATE kc_share_state_bodies SET stored_at = now() - interval '6 minutes' WHERE id = $1",
                           forgotten)
        kept = await calls.store_body(conn, b"next")
        assert await conn.fetch("SELECT id FROM kc_share_state_bodies ORDER BY id") == [(kept,)]
        await conn.execute("UPDATE kc_share_state_bodies SET body = '\\x00ff'::bytea WHERE id = $1", kept)
        assert await calls.take_body(conn, kept) is None  # not zlib: dropped as a gone one, no exception
        assert await conn.fetch("SELECT id FROM kc_share_state_bodies") == []
    finally:
        await conn.close()
