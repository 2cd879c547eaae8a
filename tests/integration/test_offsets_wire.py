"""The offsets APIs against the real server process: dump-log of what it wrote, and no
acknowledged commit lost to kill -9."""

from __future__ import annotations

import json
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from kio.schema.errors import ErrorCode

from rules.placement import partition_for
from tests.support.offsets import commit_request, fetch_request, fetched, schema, wait_loaded
from tests.support.server_process import ROOT, start_server
from tests.support.wire_client import WireClient, request_frame, response_class_for

E = ErrorCode




def test_dump_log_shows_commits_and_group_metadata(tmp_path):
    server = start_server(str(tmp_path / "data"), overrides={"group.initial.rebalance.delay.ms": "0"}, topics={"t": 2})
    group = "dump-group"
    try:
        with WireClient(server.host, server.port) as client:
            wait_loaded(client, group)
            join = schema("join_group", 5).JoinGroupRequest
            protocol = schema("join_group", 5).JoinGroupRequestProtocol
            import datetime

            from kio.static.primitive import i32Timedelta
            ms = lambda v: i32Timedelta.parse(datetime.timedelta(milliseconds=v))  # noqa: E731
            request = dict(group_id=group, session_timeout=ms(10000), rebalance_timeout=ms(10000),
                           protocol_type="consumer", protocols=(protocol(name="range", metadata=b"sub"),))
            first = client.call(join(member_id="", group_instance_id=None, **request))
            assert first.error_code == E.member_id_required
            joined = client.call(join(member_id=first.member_id, group_instance_id=None, **request))
            assert joined.error_code == E.none
            sync_m = schema("sync_group", 5)
            synced = client.call(sync_m.SyncGroupRequest(
                group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
                group_instance_id=None, protocol_type="consumer", protocol_name="range",
                assignments=(sync_m.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"asg"),)))
            assert synced.error_code == E.none
            response = client.call(commit_request(8, group, {("t", 0): 42, ("t", 1): 43}, epoch=1, metadata="md",
                                                  generation=joined.generation_id, member=joined.member_id))
            assert {p.error_code for t in response.topics for p in t.partitions} == {E.none}
    finally:
        assert server.stop() == 0
    part = partition_for(group, 50)
    out = subprocess.run([sys.executable, "-m", "coordinator", "dump-log",
                          str(tmp_path / "data" / f"__consumer_offsets-{part}"), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    commits = [r for r in records if r["type"] == "offset_commit"]
    metas = [r for r in records if r["type"] == "group_metadata"]
    assert [(r["topic"], r["partition"], r["value"]["offset"], r["value"]["metadata"], r["value"]["version"],
             r["key_version"]) for r in commits] == [("t", 0, 42, "md", 3, 1), ("t", 1, 43, "md", 3, 1)]
    last = metas[-1]["value"]
    assert (last["version"], last["protocol_type"], last["protocol"], last["generation"]) == (3, "consumer",
                                                                                             "range", 1)
    assert [m["assignment"] for m in last["members"]] == [b"asg".hex()]


class Pipeline:
    """Pipelines OffsetCommits (generation -1) on one socket; records what was acknowledged."""

    def __init__(self, host: str, port: int, group: str, start: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.group = group
        self.next_offset = start
        self.acked = -1
        self.sent: dict[int, int] = {}  # correlation id -> offset committed for all 10 partitions

    def run(self, stop: threading.Event) -> None:
        correlation = 0
        response_cls = None
        buf = b""
        try:
            while not stop.is_set():
                frames = []
                for _ in range(32):
                    correlation += 1
                    request = commit_request(9, self.group, {("t", p): self.next_offset for p in range(10)})
                    response_cls = response_cls or response_class_for(request)
                    self.sent[correlation] = self.next_offset
                    self.next_offset += 1
                    frames.append(request_frame(request, correlation))
                self.sock.sendall(b"".join(frames))
                for _ in range(32):
                    while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
                        chunk = self.sock.recv(1 << 16)
                        if not chunk:
                            raise ConnectionError
                        buf += chunk
                    size = struct.unpack_from(">i", buf)[0]
                    frame, buf = buf[4:4 + size], buf[4 + size:]
                    cid = struct.unpack_from(">i", frame)[0]
                    from kio.serial import entity_reader
                    response, _ = entity_reader(response_cls)(frame, 5)
                    if all(p.error_code == E.none for t in response.topics for p in t.partitions):
                        self.acked = max(self.acked, self.sent[cid])
        except (ConnectionError, OSError):
            pass


def test_kill9_never_loses_an_acknowledged_commit(tmp_path):
    data = str(tmp_path / "data")
    group = "kill-group"
    start, acked, rng = 0, 0, random.Random(7)  # acked: set by each round, read from the second on
    started = time.monotonic()
    for _round in range(3):
        server = start_server(data, topics={"t": 10})
        try:
            with WireClient(server.host, server.port) as client:
                wait_loaded(client, group)
                if _round:
                    got = fetched(client.call(fetch_request(9, group, {"t": list(range(10))})).groups[0].topics)
                    assert all(v[0] >= acked for v in got.values()), (got, acked)
                    assert all(v[0] < start for v in got.values())
            pipeline = Pipeline(server.host, server.port, group, start)
            stop = threading.Event()
            thread = threading.Thread(target=pipeline.run, args=(stop,), daemon=True)
            thread.start()
            time.sleep(rng.uniform(0.3, 1.2))
            server.process.send_signal(signal.SIGKILL)
            server.process.wait()
            stop.set()
            thread.join(10)
            acked, start = pipeline.acked, pipeline.next_offset
            assert acked > 0, "nothing was acknowledged before the kill"
        finally:
            server.kill()
    server = start_server(data, topics={"t": 10})
    try:
        with WireClient(server.host, server.port) as client:
            wait_loaded(client, group)
            got = fetched(client.call(fetch_request(9, group, {"t": list(range(10))})).groups[0].topics)
            assert all(acked <= v[0] < start for v in got.values()), (got, acked)
            assert {v[3] for v in got.values()} == {E.none}
    finally:
        assert server.stop() == 0
    assert time.monotonic() - started < 30
