"""The harness's process handling, without Kafka: bounded waits, useful failures, no survivors.

Runs in the default suite (a few seconds): fake drivers are tiny Python programs that print the
line protocol, ignore SIGTERM, or leave a grandchild behind.
"""

from __future__ import annotations

import sys
import time

import pytest

from tests.clients.kcat_consumer import COMMIT_DONE, PARTITION, REBALANCE, STORED
from tests.clients.process import ClientProcess, wait_all

GRACEFUL = r"""
import json, signal, sys, time
def out(**e): print(json.dumps(e), flush=True)
signal.signal(signal.SIGTERM, lambda *_: (out(event="closed"), sys.exit(0)))
out(event="started", client="fake")
out(event="assigned", partitions=[["t", 0]], assignment=[["t", 0]])
out(event="record", topic="t", partition=0, offset=0, value="v")
out(event="committed", offsets=[["t", 0, 1]])
print("not a protocol line", flush=True)
print("some log on stderr", file=sys.stderr, flush=True)
while True: time.sleep(0.05)
"""


def fake(code: str, name: str = "fake") -> ClientProcess:
    return ClientProcess(name, [sys.executable, "-c", code])


def test_events_views_and_graceful_stop():
    client = fake(GRACEFUL)
    # stdout and stderr are read by two threads: wait for the last line of each
    client.wait_until(lambda c: any("some log" in line for line in c.stderr)
                      and any("not a protocol line" in line for line in c.stderr), 10, "stdout and stderr lines")
    assert client.assignment == {("t", 0)}
    assert [r["value"] for r in client.records] == ["v"]
    assert client.committed == {("t", 0): 1}
    assert client.stop(timeout=10) == 0
    assert client.of("closed")
    assert "(stdout) not a protocol line" in client.describe()


def test_wait_times_out_with_the_clients_output():
    client = fake(GRACEFUL, name="slow#1")
    try:
        started = time.monotonic()
        with pytest.raises(AssertionError) as failure:
            client.wait_for("revoked", timeout=1)
        assert time.monotonic() - started < 5
        message = str(failure.value)
        assert "slow#1" in message and "'revoked'" in message and "some log on stderr" in message
    finally:
        client.kill()


def test_wait_fails_fast_when_the_client_exits():
    client = fake("import sys; print('boom', file=sys.stderr); sys.exit(3)")
    started = time.monotonic()
    with pytest.raises(AssertionError, match="exited 3") as failure:
        client.wait_for("assigned", timeout=30)
    assert time.monotonic() - started < 10
    assert "boom" in str(failure.value)
    with pytest.raises(AssertionError, match="exited early"):
        wait_all([client], lambda: False, 30, "never")


def test_stop_kills_a_client_that_ignores_sigterm():
    client = fake("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                  "print('{\"event\": \"started\"}', "
                  "flush=True)\nwhile True: time.sleep(0.05)")
    client.wait_for("started", timeout=10)
    with pytest.raises(AssertionError, match="did not exit within 1s of SIGTERM"):
        client.stop(timeout=1)
    assert client.proc.poll() is not None


def test_kill_takes_the_whole_process_group():
    client = fake("import json, subprocess, time\n"
                  "child = subprocess.Popen(['sleep', '60'])\n"
                  "print(json.dumps({'event': 'started', 'child': child.pid}), flush=True)\n"
                  "while True: time.sleep(0.05)")
    child = client.wait_for("started", timeout=10)["child"]
    client.kill()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), "the driver's child survived kill()"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_kcat_log_lines_parse():
    eager = REBALANCE.match("% Group g rebalanced (memberid rdkafka-1a2b): assigned: t [0], t.x [11]")
    assert eager.group(1) == "assigned" and PARTITION.findall(eager.group(3)) == [("t", "0"), ("t.x", "11")]
    revoked = REBALANCE.match("% Group g rebalanced (memberid rdkafka-1a2b): revoked: ")
    assert revoked.group(1) == "revoked" and PARTITION.findall(revoked.group(3)) == []
    incremental = REBALANCE.match("% Group g rebalanced: incremental assignment of 1 partition(s) "
                                  "(memberid rdkafka-1a2b, COOPERATIVE rebalance protocol): t [3]")
    assert incremental.group(2) == "assignment" and PARTITION.findall(incremental.group(3)) == [("t", "3")]
    stored = STORED.search("%7|1.0|OFFSET|rdkafka#consumer-1| [thrd:main]: Topic t [0]: stored offset 16, "
                           "committed offset 12: setting stored offset 16 for commit")
    assert stored.groups() == ("t", "0", "16")
    done = COMMIT_DONE.search("%7|1.0|COMMIT|rdkafka#consumer-1| [thrd:main]: GroupCoordinator/1: OffsetCommit for "
                              "6 partition(s) in join-state steady: cgrp auto commit timer: returned: Success")
    assert done.group(1) == "Success"

