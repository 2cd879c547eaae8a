"""tests/support/postgres.py: the throwaway PostgreSQL the cluster-mode tests run on."""

from __future__ import annotations

import glob
import socket
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from tests.support import postgres
from tests.support.postgres import server_or_skip


def refuses_connections(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


async def test_each_test_database_is_fresh_and_separate(postgres_server, pg_url):
    other = postgres_server.new_database()
    assert other != pg_url
    first = await asyncpg.connect(pg_url)
    try:
        await first.execute("CREATE TABLE t (x int)")
        assert await first.fetchval("SHOW max_connections") == "200"
    finally:
        await first.close()
    second = await asyncpg.connect(other)
    try:
        assert await second.fetchval("SELECT to_regclass('t')") is None
    finally:
        await second.close()


async def test_down_is_a_crash_that_keeps_committed_rows(postgres_server, pg_url):
    conn = await asyncpg.connect(pg_url)
    await conn.execute("CREATE TABLE t (x int); INSERT INTO t VALUES (1)")
    with postgres_server.down():
        assert refuses_connections(postgres_server.port)
        with pytest.raises((asyncpg.PostgresConnectionError, asyncpg.InterfaceError, OSError)):
            await conn.fetchval("SELECT 1")
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT x FROM t") == 1
    finally:
        await conn.close()


def test_stop_leaves_no_server_and_no_files():
    with server_or_skip() as server:
        assert server.sql("SELECT 1").strip() == "1"
        port, directory = server.port, server.dir
    assert refuses_connections(port)
    assert not directory.exists()


def _no_binaries(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(postgres, "DEBIAN_BIN_GLOB", "/nonexistent/*/bin")


def test_without_binaries_the_tests_skip(monkeypatch):
    _no_binaries(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no initdb/pg_ctl"):
        server_or_skip()


def test_without_binaries_under_ci_the_tests_fail(monkeypatch):
    _no_binaries(monkeypatch)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI"):
        server_or_skip()


def test_debian_bin_dir_is_found_off_path(monkeypatch):
    if not glob.glob(f"{postgres.DEBIAN_BIN_GLOB}/initdb"):
        pytest.skip("no Debian PostgreSQL package here")
    monkeypatch.setenv("PATH", "/nonexistent")
    found = postgres.find_bin_dir()
    assert found.match(postgres.DEBIAN_BIN_GLOB) and (found / "initdb").exists(), found


def test_a_server_whose_test_process_dies_is_stopped_by_its_watchdog():
    server_or_skip()  # skips without binaries
    started = subprocess.run(
        [sys.executable, "-c", "import os; from tests.support.postgres import PostgresServer;"
         "s = PostgresServer().start(); print(s.port, s.dir, flush=True); os._exit(0)"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    port, directory = started.stdout.split()
    while not refuses_connections(int(port)) or Path(directory).exists():
        time.sleep(0.1)  # the watchdog polls its parent every second; the test's timeout bounds this
