"""The Spark jobs end to end with the real server process (local[2]).

1. bulk load of a log the *server* wrote -> snapshots equal to the server's live state;
   a server restarted on those snapshots (with the covered log segments removed, so
   only the snapshot can provide the state) answers OffsetFetch / DescribeGroups /
   ListGroups exactly as before, from `offsets.snapshot.dir` and from the default
   (log.dirs).
2. compaction staged by the expire job while a client keeps committing: the server
   swaps it in, every acknowledged commit is still returned, the closed segments
   shrank; a staging area whose originals changed (a second job run on the same log)
   is refused with a log line and nothing is lost.
3. KIP-211 expiry decided by the job (time moved with --now-ms) and applied by the
   live server, which re-checks: a group that came back to life keeps its offsets.

The real CLIs run as subprocesses for the bulk load and the first expire run; the other
expire runs use the module's one in-process SparkSession (a JVM start per run would
double the module's time).
"""

from __future__ import annotations

import glob
import io
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from rules.placement import partition_for
from storage.dump import iter_log_records
from storage.snapshot import latest_snapshot, read_snapshot
from tests.support.groups import assignment
from tests.support.offsets import commit_request, delete_request, fetch_request, schema
from tests.support.server_process import ROOT, ServerProcess, start_server
from tests.support.wire_client import WireClient, request_frame, response_class_for
from tests.support.wire_members import Member

pytestmark = pytest.mark.integration

E = ErrorCode
PARTITIONS = 50
BASE_SETTINGS = {"group.initial.rebalance.delay.ms": "500", "group.min.session.timeout.ms": "500"}
SPARK_ENV = {"PYSPARK_PYTHON": sys.executable}
#: Every topic the tests commit to (OffsetCommit to a topic the server does not host is refused, as Kafka does).
TOPICS = {"orders": 4, "payments": 2, "audit-log": 1, "clicks": 3, "s": 3, "r": 3, "t": 4, "once": 1, "A": 1, "B": 2}


@pytest.fixture
def servers():
    """Start servers; each is stopped (SIGKILL if still running) after the test."""
    started: list[ServerProcess] = []

    def start(log_dir: str, **overrides: str) -> ServerProcess:
        process = start_server(log_dir, overrides={**BASE_SETTINGS, **overrides}, topics=TOPICS)
        started.append(process)
        wait_all_loaded(process)
        return process

    yield start
    for process in started:
        process.kill()


def wait_all_loaded(server: ServerProcess, timeout: float = 30.0) -> dict:
    return server.wait_for_event("offsets partitions loaded", timeout)


def stop(server: ServerProcess) -> None:
    code = server.stop()
    assert code == 0, f"server exited with {code}: {server.lines[-10:]}"


# --------------------------------------------------------------------- group members
def member(server: ServerProcess, group: str, topics: list[str], instance: str | None = None) -> Member:
    """A member as these tests use it: 30 s sessions, static when `instance` is given."""
    return Member(server, group, topics, session=30000, client_id="e2e-member", instance=instance, timeout=30,
                  reason="e2e")


def commit(m: Member, offsets: dict[tuple[str, int], int], metadata: str = "", epoch: int = -1) -> None:
    response = m.commit(offsets, metadata, epoch)
    assert all_ok(response), response


def leave(m: Member) -> None:
    response = m.leave()
    assert response.error_code is E.none, response


def stable_group(server: ServerProcess, group: str, topics: list[str], n: int,
                 instances: list[str | None] | None = None) -> list[Member]:
    """n members join concurrently; the leader gives each one partition per topic; all sync."""
    members = [member(server, group, topics, (instances or [None] * n)[i]) for i in range(n)]
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(Member.join, members))
        leader = next(m for m in members if m.join_response.members)
        plan = {mid: assignment({t: [i] for t in topics})
                for i, mid in enumerate(sorted(m.member_id for m in members))}
        list(pool.map(lambda m: m.sync(plan if m is leader else None), members))
    return members


class Heartbeats:
    """Keeps members alive (one heartbeat per member per interval) while a job runs."""

    def __init__(self, members: list[Member], interval: float = 1.0) -> None:
        self.members, self.interval = list(members), interval
        self.stop_event = threading.Event()
        self.errors: list = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def add(self, member: Member) -> None:
        self.members.append(member)

    def _run(self) -> None:
        while not self.stop_event.wait(self.interval):
            for m in list(self.members):
                code = m.heartbeat()
                if code is not E.none:
                    self.errors.append((m.group, m.member_id, code))

    def __enter__(self) -> Heartbeats:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join(10)


def all_ok(response) -> bool:
    return all(p.error_code is E.none for t in response.topics for p in t.partitions)


def simple_commit(client: WireClient, group: str, offsets: dict[tuple[str, int], int], **kwargs) -> None:
    response = client.call(commit_request(kwargs.pop("version", 9), group, offsets, **kwargs))
    assert all_ok(response), response


# --------------------------------------------------------------------- live state
def live_state(server: ServerProcess, extra: tuple[str, ...] = ()) -> dict:
    """Everything the wire shows about groups and offsets: ListGroups v5, DescribeGroups v5
    of every listed group (+ `extra`), OffsetFetch v9 (all topics) of each."""
    with WireClient(server.host, server.port) as client:
        listed = client.call(schema("list_groups", 5).ListGroupsRequest(states_filter=(), types_filter=()))
        assert listed.error_code is E.none
        groups = sorted(g.group_id for g in listed.groups)
        names = tuple(groups) + tuple(g for g in extra if g not in groups)
        described = client.call(schema("describe_groups", 5).DescribeGroupsRequest(
            groups=names, include_authorized_operations=False)) if names else None
        offsets = {}
        for group in names:
            response = client.call(fetch_request(9, group, None)).groups[0]
            assert response.error_code is E.none, (group, response.error_code)
            offsets[group] = {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch,
                                                           p.metadata)
                              for t in response.topics for p in t.partitions if p.error_code is E.none}
    return {
        "list": {g.group_id: (g.protocol_type, g.group_state, g.group_type) for g in listed.groups},
        "describe": {d.group_id: (d.error_code, d.group_state, d.protocol_type, d.protocol_data, tuple(sorted(
            (m.member_id, m.group_instance_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment)
            for m in d.members))) for d in (described.groups if described else ())},
        "offsets": offsets,
    }


def snapshot_state(root: str) -> tuple[dict, dict, dict, dict]:
    """(groups {id: value|None}, offsets {group: {(t, p): (offset, epoch, metadata)}},
    covers {partition: covers_log_offset}, expire timestamps {(g, t, p): ms}) over every
    partition's latest snapshot."""
    groups, offsets, covers, expire = {}, {}, {}, {}
    for p in range(PARTITIONS):
        if latest_snapshot(root, p) is None:
            continue
        gs, os_, cover = read_snapshot(root, p)
        covers[p] = cover
        for gid, value in gs:
            assert partition_for(gid, PARTITIONS) == p
            groups[gid] = value
        for k, v in os_:
            offsets.setdefault(k.group, {})[(k.topic, k.partition)] = (v.offset, v.leader_epoch, v.metadata)
            expire[(k.group, k.topic, k.partition)] = v.expire_timestamp
    return groups, offsets, covers, expire


def log_end(partition_dir: str) -> int | None:
    last = None
    for offset, _key, _value in iter_log_records(partition_dir):
        last = offset
    return None if last is None else last + 1


def closed_segments(data: str) -> dict[tuple[int, int], int]:
    """(partition, base offset) -> size of every closed (not last) offsets segment."""
    out = {}
    for d in glob.glob(os.path.join(data, "__consumer_offsets-*")):
        p = int(d.rsplit("-", 1)[1])
        bases = sorted(int(n[:20]) for n in os.listdir(d) if n.endswith(".log") and len(n) == 24)
        for base in bases[:-1]:
            out[(p, base)] = os.path.getsize(os.path.join(d, f"{base:020d}.log"))
    return out


def run_cli(job: str, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", f"spark_jobs.{job}", "--master", "local[2]",
                          "--shuffle-partitions", "2", "--conf", "spark.ui.enabled=false", *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, **SPARK_ENV})
    assert out.returncode == 0, f"{job} failed ({out.returncode}):\n{out.stderr[-3000:]}"
    return out


# ===================================================================== 1. bulk load
def populate(server: ServerProcess) -> list[Member]:
    """Consumer groups with members, simple groups, superseded commits, deleted offsets,
    deleted groups, a group deleted and recreated, a commit with an expire timestamp."""
    orders = stable_group(server, "orders-app", ["orders", "payments"], 2)
    audit = stable_group(server, "audit", ["audit-log"], 1, instances=["audit-1"])
    leaving = stable_group(server, "left-empty", ["clicks"], 1)
    gone = stable_group(server, "gone", ["clicks"], 1)
    for round_ in range(3):  # superseded commits
        commit(orders[0], {("orders", p): 100 * round_ + p for p in range(4)}, metadata=f"r{round_}", epoch=3)
        commit(orders[1], {("payments", p): 10 * round_ + p for p in range(2)}, epoch=round_)
    commit(audit[0], {("audit-log", 0): 7}, metadata="audit")
    commit(leaving[0], {("clicks", p): 50 + p for p in range(3)})
    commit(gone[0], {("clicks", 0): 1})
    leave(leaving[0])
    leave(gone[0])
    with WireClient(server.host, server.port) as client:
        for i in range(20):
            for round_ in range(2):
                simple_commit(client, f"simple-{i}", {("s", p): 1000 * round_ + i * 10 + p for p in range(3)},
                              metadata=f"simple {i}")
        simple_commit(client, "with-expire", {("s", 0): 5}, version=4, retention_ms=86_400_000)
        simple_commit(client, "reborn", {("r", 0): 1, ("r", 1): 2})
        deleted = client.call(delete_request("simple-3", {"s": [1]}))
        assert deleted.error_code is E.none and all(p.error_code is E.none for t in deleted.topics
                                                    for p in t.partitions)
        deleted = client.call(delete_request("left-empty", {"clicks": [2]}))
        assert deleted.error_code is E.none
        response = client.call(schema("delete_groups", 2).DeleteGroupsRequest(
            groups_names=("simple-5", "gone", "reborn")))
        assert {r.group_id: r.error_code for r in response.results} == {
            "simple-5": E.none, "gone": E.none, "reborn": E.none}
        simple_commit(client, "reborn", {("r", 2): 3})
    return orders + audit + leaving + gone


def test_bulk_load_of_a_server_written_log_equals_the_live_state_and_the_server_restarts_on_it(
        tmp_path, servers):
    data, snaps = str(tmp_path / "data"), str(tmp_path / "snapshots")
    server = servers(data)
    members = populate(server)
    before = live_state(server, extra=("simple-5", "gone"))
    stop(server)
    for m in members:
        m.close()

    # the live state is what the test built
    assert before["offsets"]["simple-3"] == {("s", 0): (1030, -1, "simple 3"), ("s", 2): (1032, -1, "simple 3")}
    assert before["offsets"]["reborn"] == {("r", 2): (3, -1, "")}
    assert before["offsets"]["simple-5"] == {} and before["offsets"]["gone"] == {}
    assert before["describe"]["gone"][1] == "Dead" and "gone" not in before["list"]
    assert before["describe"]["orders-app"][1] == "Stable" and len(before["describe"]["orders-app"][4]) == 2
    assert before["describe"]["left-empty"][1] == "Empty"
    assert before["offsets"]["orders-app"][("orders", 3)] == (203, 3, "r2")

    run_cli("bulk_load", "--input", data, "--output", snaps, "--offsets-partitions", str(PARTITIONS))

    # --- the snapshot's contents equal the live state
    groups, offsets, covers, expire = snapshot_state(snaps)
    assert set(groups) == set(before["list"])
    for gid, value in groups.items():
        listed_type, listed_state, _ = before["list"][gid]
        error, state, protocol_type, protocol, members_ = before["describe"][gid]
        if value is None:  # a simple group
            assert (listed_type, state, protocol_type, members_) == ("", "Empty", "", ()), gid
            continue
        assert (error, listed_type, protocol_type) == (E.none, value.protocol_type, value.protocol_type), gid
        assert state == listed_state == ("Stable" if value.members else "Empty"), gid
        assert protocol == (value.protocol or ""), gid
        assert members_ == tuple(sorted((m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                         m.subscription, m.assignment) for m in value.members)), gid
    assert offsets == {g: o for g, o in before["offsets"].items() if o}
    assert expire[("with-expire", "s", 0)] > time.time() * 1000 and expire[("simple-0", "s", 0)] == -1
    for p, cover in covers.items():
        end = log_end(os.path.join(data, f"__consumer_offsets-{p}"))
        assert cover == (end or 0), (p, cover, end)
    used = {p for p, c in covers.items() if c}

    # --- restart on the snapshot; the covered segments are gone, so only the snapshot has the state (each of
    # those logs then starts at the offset its snapshot covers: coordinator/runtime/loader.py)
    def copy_without_covered_log(dest: str) -> None:
        shutil.copytree(data, dest)
        for p in used:
            part = os.path.join(dest, f"__consumer_offsets-{p}")
            for name in os.listdir(part):
                if name[:20].isdigit():
                    os.unlink(os.path.join(part, name))

    for variant in ("offsets.snapshot.dir", "log.dirs"):
        copy = str(tmp_path / f"restart-{variant}")
        copy_without_covered_log(copy)
        if variant == "log.dirs":  # the default location: the snapshot tree inside log.dirs
            shutil.copytree(snaps, copy, dirs_exist_ok=True)
            server = servers(copy)
        else:
            server = servers(copy, **{"offsets.snapshot.dir": snaps})
        loaded = {e["partition"]: e for e in server.events("offsets partition loaded")}
        assert set(loaded) >= used
        for p in used:
            assert loaded[p]["snapshot"] and loaded[p]["log_records"] == 0, loaded[p]
            assert loaded[p]["snapshot"].startswith(copy if variant == "log.dirs" else snaps)
        after = live_state(server, extra=("simple-5", "gone"))
        assert after == before, variant
        if variant == "log.dirs":  # new commits go on top of the snapshot, and survive a restart
            with WireClient(server.host, server.port) as client:
                simple_commit(client, "simple-0", {("s", 0): 99_999})
            stop(server)
            server = servers(copy)
            again = live_state(server, extra=("simple-5", "gone"))
            before["offsets"]["simple-0"][("s", 0)] = (99_999, -1, "")
            assert again == before
        stop(server)


# ===================================================================== 2. compaction
class Committer:
    """Pipelines OffsetCommit v9 (generation -1) for several groups on one socket and
    records every acknowledged commit: (group, topic, partition) -> offset."""

    def __init__(self, server: ServerProcess, groups: list[str], partitions: int = 4, depth: int = 16,
                 pause: float = 0.03) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.groups, self.partitions, self.depth, self.pause = groups, partitions, depth, pause
        self.acked: dict[tuple[str, str, int], int] = {}
        self.counter = 0
        self.commits = 0
        self.errors: list = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        cls, buf, correlation = None, b"", 0
        try:
            while not self.stop_event.is_set():
                sent = {}
                frames = []
                for _ in range(self.depth):
                    correlation += 1
                    self.counter += 1
                    group = self.groups[self.counter % len(self.groups)]
                    offsets = {("t", p): self.counter for p in range(self.partitions)}
                    request = commit_request(9, group, offsets, metadata=f"c{self.counter}")
                    cls = cls or response_class_for(request)
                    sent[correlation] = (group, offsets)
                    frames.append(request_frame(request, correlation))
                self.sock.sendall(b"".join(frames))
                for _ in range(self.depth):  # every request sent is answered before the next round
                    while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
                        chunk = self.sock.recv(1 << 16)
                        if not chunk:
                            raise ConnectionError("server closed the connection")
                        buf += chunk
                    size = struct.unpack_from(">i", buf)[0]
                    frame, buf = buf[4:4 + size], buf[4 + size:]
                    cid = struct.unpack_from(">i", frame)[0]
                    response, _ = entity_reader(cls)(frame, 5)
                    group, offsets = sent[cid]
                    for t in response.topics:
                        for p in t.partitions:
                            if p.error_code is E.none:
                                self.acked[(group, t.name, p.partition_index)] = offsets[(t.name, p.partition_index)]
                            else:
                                self.errors.append((group, t.name, p.partition_index, p.error_code))
                    self.commits += 1
                time.sleep(self.pause)
        except Exception as exc:  # reported by the test
            self.errors.append(repr(exc))

    def __enter__(self) -> Committer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join(20)
        self.sock.close()


def fetch_all(server: ServerProcess, groups) -> dict[tuple[str, str, int], tuple[int, str]]:
    out = {}
    with WireClient(server.host, server.port) as client:
        for group in sorted(set(groups)):
            response = client.call(fetch_request(9, group, None)).groups[0]
            assert response.error_code is E.none
            for t in response.topics:
                for p in t.partitions:
                    out[(group, t.name, p.partition_index)] = (p.committed_offset, p.metadata)
    return out


def wait_staging_outcome(server: ServerProcess, partitions: set[int], since: int,
                         timeout: float = 30.0) -> dict[int, dict]:
    """Wait for an applied/refused line for each partition (events after index `since`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        outcomes = {}
        for event in server.events()[since:]:
            if event.get("event") in ("staged compaction applied", "staged compaction refused"):
                outcomes[event["partition"]] = event
        if set(outcomes) >= partitions:
            return outcomes
        time.sleep(0.1)
    raise AssertionError(f"no staging outcome for {partitions - set(outcomes)}; log tail: {server.lines[-5:]}")


def wait_no_staging(data: str, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while glob.glob(os.path.join(data, "__consumer_offsets-*", ".staging-*")):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def staged_partitions(stderr: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(r"partition (\d+): \d+ segment\(s\) cleaned", stderr)}


SMALL = {"offsets.topic.num.partitions": "10"}  # fewer (tiny) Spark tasks: the module stays fast
COMPACTION_SETTINGS = {**SMALL, "offsets.topic.segment.bytes": "16384", "offsets.staging.check.interval.ms": "200"}


def test_compaction_swapped_in_while_a_client_commits_keeps_every_acknowledged_commit(tmp_path, servers, spark):
    from spark_jobs.expire import run as expire_run

    data = str(tmp_path / "data")
    server = servers(data, **COMPACTION_SETTINGS)
    groups = [f"live-{i}" for i in range(6)]  # six partitions of ten
    with WireClient(server.host, server.port) as client:  # keys never committed again, in the first segments
        for i, group in enumerate(groups):
            simple_commit(client, group, {("once", 0): i}, metadata="once")
    with Committer(server, groups) as committer:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len({p for p, _ in closed_segments(data)}) < len(groups):
            time.sleep(0.1)
        before = closed_segments(data)
        assert len({p for p, _ in before}) == len(groups), before
        mark = len(server.events())
        out = run_cli("expire", "--log-dirs", data, "--no-expiry", "--offsets-partitions", "10")
        staged = staged_partitions(out.stderr)
        assert staged >= {p for p, _ in before}, out.stderr[-2000:]
        outcomes = wait_staging_outcome(server, staged, mark)
        refused = {p: e for p, e in outcomes.items() if e["event"] == "staged compaction refused"}
        if refused:  # show why, then run the job once more on the log as it is now
            print(f"refused on the first run: {refused}")
            mark = len(server.events())
            summary = expire_run(["--log-dirs", data, "--no-expiry", "--offsets-partitions", "10"], spark=spark,
                                 out=io.StringIO())
            again = {int(os.path.basename(os.path.dirname(s)).rsplit("-", 1)[1]) for s in summary["staged"]}
            outcomes.update(wait_staging_outcome(server, again, mark))
            refused = {p: e for p, e in outcomes.items() if e["event"] == "staged compaction refused"}
            assert not refused, f"refused twice: {refused}"
        time.sleep(0.5)  # commits after the swap
    assert not committer.errors, committer.errors[:5]
    assert committer.commits > 200, committer.commits
    print(f"{committer.commits} commits acknowledged; closed segments at the job's start: {len(before)}, "
          f"{sum(before.values())} bytes")
    assert all(e["event"] == "staged compaction applied" for e in outcomes.values())

    # every acknowledged commit's latest value, from the live server and after a restart
    expected = {k: (v, f"c{v}") for k, v in committer.acked.items()}
    expected.update({(group, "once", 0): (i, "once") for i, group in enumerate(groups)})
    assert fetch_all(server, [k[0] for k in expected]) == expected
    after = closed_segments(data)
    shrunk = {k: (before[k], after[k]) for k in before if k in after}
    assert set(shrunk) == set(before)  # same closed segments (base offsets), rewritten
    assert all(a <= b for b, a in shrunk.values()), shrunk
    assert sum(a for _, a in shrunk.values()) < sum(before.values()) // 2, shrunk
    print(f"the same closed segments after the swap: {sum(a for _, a in shrunk.values())} bytes")
    assert wait_no_staging(data)
    stop(server)
    server = servers(data, **COMPACTION_SETTINGS)
    assert fetch_all(server, [k[0] for k in expected]) == expected
    stop(server)


def test_staging_whose_originals_changed_is_refused_and_nothing_is_lost(tmp_path, servers, spark):
    """Two expire runs over the same log: the server applies one; the other's original
    segments were replaced by that swap, so it is refused with a log line."""
    from spark_jobs.expire import run as expire_run

    data = str(tmp_path / "data")
    server = servers(data, **{**COMPACTION_SETTINGS, "offsets.staging.check.interval.ms": "3600000"})
    with Committer(server, ["conflict-a", "conflict-b"], pause=0.0) as committer:
        while len(closed_segments(data)) < 4 and not committer.errors:
            time.sleep(0.05)
    assert not committer.errors
    state = live_state(server)
    stop(server)  # the log is idle: both runs see exactly the same segments
    runs = [expire_run(["--log-dirs", data, "--no-expiry", "--offsets-partitions", "10"], spark=spark,
                       out=io.StringIO()) for _ in range(2)]
    staged = [set(r["staged"]) for r in runs]
    assert len(staged[0]) == len(staged[1]) >= 1
    partitions = {int(os.path.basename(os.path.dirname(s)).rsplit("-", 1)[1]) for s in staged[0]}
    server = servers(data, **COMPACTION_SETTINGS)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        applied = [e for e in server.events("staged compaction applied")]
        refused = [e for e in server.events("staged compaction refused")]
        if len(applied) + len(refused) >= 2 * len(partitions):
            break
        time.sleep(0.1)
    assert sorted(e["partition"] for e in applied) == sorted(partitions)
    assert sorted(e["partition"] for e in refused) == sorted(partitions)
    for event in refused:
        assert any("live segment" in p and ("bytes, manifest says" in p or "was modified" in p)
                   for p in event["problems"]), event
    assert wait_no_staging(data)  # a refused area is removed (right after its log line)
    assert live_state(server) == state
    stop(server)
    server = servers(data, **COMPACTION_SETTINGS)
    assert live_state(server) == state
    stop(server)


# ===================================================================== 3. expiry
RETENTION_MIN = 10


class RebirthOnStage:
    """Progress output of the job that runs `action` once the scan is done (stage 3
    starts): the job decided on the log as it was; the server swaps later."""

    def __init__(self, action) -> None:
        self.action, self.done, self.text = action, False, io.StringIO()

    def write(self, text: str) -> None:
        self.text.write(text)
        if not self.done and "stage 3/5" in text:
            self.done = True
            self.action()

    def flush(self) -> None:
        pass


def test_job_expiry_applied_by_the_live_server_which_rechecks_revived_groups(tmp_path, servers, spark):
    from spark_jobs.expire import run as expire_run

    data = str(tmp_path / "data")
    server = servers(data, **{**SMALL, "offsets.staging.check.interval.ms": "300",
                              "offsets.retention.minutes": str(RETENTION_MIN)})
    empty = stable_group(server, "exp-empty", ["t"], 1)
    commit(empty[0], {("t", 0): 1, ("t", 1): 2})
    leave(empty[0])
    reborn = stable_group(server, "exp-reborn", ["t"], 1)
    commit(reborn[0], {("t", 0): 3, ("t", 1): 4})
    leave(reborn[0])
    stable = stable_group(server, "exp-stable", ["A"], 1)
    commit(stable[0], {("A", 0): 5, ("B", 0): 6, ("B", 1): 7})
    with WireClient(server.host, server.port) as client:
        simple_commit(client, "exp-simple", {("s", 0): 8, ("s", 1): 9})
        # OffsetCommit v2 with a retention time: an expire timestamp a day ahead wins over the age
        simple_commit(client, "exp-pinned", {("s", 0): 10}, version=2, retention_ms=86_400_000)
    now_ms = int(time.time() * 1000) + RETENTION_MIN * 60_000 + 60_000  # everything is old then
    revived: list[Member] = []

    def revive() -> None:  # the job has read the log: exp-reborn is Empty there
        revived.extend(stable_group(server, "exp-reborn", ["t"], 1))
        hb.add(revived[0])

    mark = len(server.events())
    with Heartbeats(stable) as hb:
        out = RebirthOnStage(revive)
        summary = expire_run(["--log-dirs", data, "--offsets-partitions", "10",
                              "--offsets-retention-minutes", str(RETENTION_MIN),
                              "--now-ms", str(now_ms)], spark=spark, out=out)
        partitions = {int(os.path.basename(os.path.dirname(s)).rsplit("-", 1)[1]) for s in summary["staged"]}
        outcomes = wait_staging_outcome(server, partitions, mark)
        state = live_state(server, extra=("exp-empty", "exp-simple"))
    assert out.done and not hb.errors, hb.errors
    assert all(e["event"] == "staged compaction applied" for e in outcomes.values()), outcomes
    # the job's decisions: KIP-211 on the log as it read it
    assert summary["expired_offsets"] == 2 + 2 + 2 + 2  # exp-empty, exp-reborn, exp-stable B, exp-simple
    assert summary["deleted_groups"] == 3  # exp-empty, exp-reborn, exp-simple
    offered = sum(e["tombstones_offered"] for e in outcomes.values())
    written = sum(e["tombstones_written"] for e in outcomes.values())
    assert (offered, written) == (11, 11 - 3)  # exp-reborn's two offsets + group re-checked: kept

    offsets = state["offsets"]
    assert offsets["exp-empty"] == {} and offsets["exp-simple"] == {}
    assert state["describe"]["exp-empty"][1] == "Dead" and state["describe"]["exp-simple"][1] == "Dead"
    assert "exp-empty" not in state["list"] and "exp-simple" not in state["list"]
    assert offsets["exp-stable"] == {("A", 0): (5, -1, "")}  # B: nobody subscribes
    assert offsets["exp-reborn"] == {("t", 0): (3, -1, ""), ("t", 1): (4, -1, "")}
    assert state["describe"]["exp-reborn"][1] == "Stable"
    assert offsets["exp-pinned"] == {("s", 0): (10, -1, "")}
    for m in empty + reborn + stable + revived:
        m.close()
    stop(server)
    # the tombstones are in the log: a restart shows the same
    server = servers(data, **SMALL)
    offsets = live_state(server, extra=("exp-empty", "exp-simple"))["offsets"]
    assert offsets["exp-empty"] == {} and offsets["exp-simple"] == {}
    assert offsets["exp-stable"] == {("A", 0): (5, -1, "")}
    assert offsets["exp-reborn"] == {("t", 0): (3, -1, ""), ("t", 1): (4, -1, "")}
    stop(server)
