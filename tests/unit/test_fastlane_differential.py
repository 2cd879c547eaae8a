"""The native fast lane (coordinator/fastlane/) against the pure-Python path, which is the reference: the same
random sequence of OffsetCommit, OffsetFetch and Heartbeat frames -- valid ones of every version the lane takes,
and hostile ones (cut, bytes flipped, counts lied about, a body under another or an unsupported version) -- runs
through a dispatcher built on each path, over the same groups, members and clock. Every answer must be
byte-identical (or both connections closed), and so must the log bytes of every write (its record batch), the
offsets store (packed values and layout), the writes in flight with their journals, and the groups' members with
their session deadlines; failed writes must be taken back alike. The lane must also have handled most of the
valid frames itself (it could pass by declining them all).
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from coordinator.groups import classic_group
from coordinator.net.dispatch import CloseConnection, Deferred, Dispatcher
from protocol.apis import ApiKey
from tests.support.examples import examples
from tests.support.fastlane import RecordingLog, offsets_state, path, require_native
from tests.support.offsets import OffsetsHarness, commit_request, decode, fetch_request, schema
from tests.support.wire_client import request_frame

GROUPS = ("g1", "g2", "simple")
TOPICS = {"t": 8, "u": 300, "x": 1}  # x: partition 1+ unknown
# mostly metadata the lane takes; the last is over offset.metadata.max.bytes (the Python path answers it)
METADATA = ("", "", "", "", None, "m", "métadonnée", "x" * 40, "y" * 5000)

versions = {"commit": range(2, 10), "fetch": range(1, 10), "heartbeat": range(0, 5)}

# mostly partitions the lane takes (so that it answers most frames itself), sometimes unknown ones
known_partition = st.tuples(st.sampled_from(["t", "t", "u", "x"]), st.integers(min_value=0, max_value=7)).map(
    lambda tp: (tp[0], 0) if tp[0] == "x" else (tp[0], tp[1] * 41 if tp[0] == "u" else tp[1]))
odd_partition = st.tuples(st.sampled_from([*TOPICS, "nope"]), st.sampled_from([1, 8, 40, 300, -1]))
partition_sets = st.lists(st.one_of(*[known_partition] * 9, odd_partition), min_size=0, max_size=5)
# (member, generation): a member of its group at its generation, a commit outside group management, or wrong ones
WHO = [("member0", "current")] * 3 + [("member1", "current"), ("", -1), ("", -1), ("member0", "old"),
                                      ("nobody", "current"), ("", "current"), ("member1", -1)]
who = st.sampled_from(WHO)
commit_op = st.tuples(st.just("commit"), st.sampled_from(list(versions["commit"])), st.sampled_from(GROUPS),
                      who, partition_sets, st.sampled_from(METADATA),
                      st.sampled_from([-1, 0, 7]), st.sampled_from([-1, 60_000]),
                      st.integers(min_value=0, max_value=2**40))
fetch_op = st.tuples(st.just("fetch"), st.sampled_from(list(versions["fetch"])), st.sampled_from(GROUPS),
                     partition_sets, st.booleans())
heartbeat_op = st.tuples(st.just("heartbeat"), st.sampled_from(list(versions["heartbeat"])),
                         st.sampled_from(GROUPS), who)
mangle = st.tuples(st.integers(min_value=0, max_value=400), st.integers(min_value=1, max_value=255),
                   st.integers(min_value=8, max_value=400))
ops = st.one_of(commit_op, fetch_op, heartbeat_op,
                st.tuples(st.just("hostile"), st.one_of(commit_op, fetch_op, heartbeat_op), mangle),
                st.tuples(st.just("relabel"), st.one_of(commit_op, fetch_op, heartbeat_op),
                          st.sampled_from([-1, 0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 0x7FFF])),
                st.tuples(st.just("complete")), st.tuples(st.just("fail")),
                st.tuples(st.just("advance"), st.sampled_from([100, 4000, 11000])))


class Run:
    """One path's harness: a group coordinator on a fake clock, a RecordingLog, and the real dispatcher."""

    def __init__(self, name: str) -> None:
        ids = itertools.count()
        self.patch = lambda: uuid.UUID(int=next(ids))  # member ids alike on both paths
        with path(name):
            self.proc = OffsetsHarness(topics=TOPICS)
        self.proc.log = self.proc.coordinator.record_log = RecordingLog()
        for shard in self.proc.coordinator.shards.values():
            shard.record_log = self.proc.log
        self.answers: list[Any] = []
        self.deferred: list[tuple[int, Deferred]] = []
        self.members: dict[str, list[str]] = {}
        self.lanes = [self.proc.dispatcher.fast_path(key) for key in (ApiKey.OFFSET_COMMIT, ApiKey.HEARTBEAT)]
        self.lanes.append(self.proc.dispatcher._fast.get(int(ApiKey.OFFSET_FETCH)))

    def handled(self) -> int:
        return sum(getattr(lane, "handled", 0) for lane in self.lanes)

    def setup(self) -> None:
        """g1: a Stable group of two members; g2: one member still joining's group (PreparingRebalance);
        'simple': a group of commits outside group management."""
        original = uuid.uuid4
        classic_group.uuid.uuid4 = self.patch  # type: ignore[attr-defined]
        try:
            self.members["g1"] = self.proc.stable_group(2, group_id="g1")
            self.members["g2"] = [self.proc.new_member(group_id="g2", rebalance=60000)[0]]
        finally:
            classic_group.uuid.uuid4 = original  # type: ignore[attr-defined]
        self.send(request_frame(commit_request(7, "simple", {("t", 0): 1}), 1)[4:])
        self.settle("complete")

    def member(self, group: str, choice: str) -> str:
        ids = self.members.get(group, [])
        if choice.startswith("member"):
            index = int(choice[-1])
            return ids[index] if index < len(ids) else "gone"
        return choice

    def generation(self, group: str, choice: Any) -> int:
        current = self.proc.coordinator.group(group)
        generation = current.generation_id if current is not None else 0
        return {"current": generation, "old": generation - 1}.get(choice, choice)

    def frame(self, op: tuple) -> bytes:
        kind = op[0]
        if kind == "commit":
            _, version, group, (member, gen), parts, metadata, epoch, retention, offset = op
            offsets = {(t, p): offset + i for i, (t, p) in enumerate(parts)}
            request = commit_request(version, group, offsets, generation=self.generation(group, gen),
                                     member=self.member(group, member), metadata=metadata, epoch=epoch,
                                     retention_ms=retention)
        elif kind == "fetch":
            _, version, group, parts, stable = op
            topics: dict[str, list[int]] = {}
            for t, p in parts:
                topics.setdefault(t, []).append(p)
            request = fetch_request(version, group, topics, require_stable=stable)
        else:
            _, version, group, (member, gen) = op
            m = schema("heartbeat", version)
            fields: dict[str, Any] = {"group_id": group, "generation_id": self.generation(group, gen),
                                      "member_id": self.member(group, member)}
            if version >= 3:
                fields["group_instance_id"] = None
            request = m.HeartbeatRequest(**fields)
        return request_frame(request, len(self.answers) + 1)[4:]

    def send(self, frame: bytes) -> None:
        try:
            out = self.proc.dispatcher.dispatch(frame, "127.0.0.1", 5555)
        except CloseConnection:
            out = "closed"
        if isinstance(out, Deferred):
            self.deferred.append((len(self.answers), out))
        self.answers.append(out if not isinstance(out, Deferred) else None)

    def settle(self, how: str) -> None:
        if how == "complete":
            self.proc.log.complete()
        else:
            self.proc.log.fail(OSError("disk gone"))
        waiting = []
        for index, deferred in self.deferred:
            if deferred.future.done():
                self.answers[index] = Dispatcher.finish(deferred)
            else:
                waiting.append((index, deferred))
        self.deferred = waiting

    def apply(self, op: tuple) -> None:
        kind = op[0]
        if kind in ("complete", "fail"):
            self.settle(kind)
        elif kind == "advance":
            self.proc.clock.advance(op[1])
        elif kind == "hostile":
            frame = bytearray(self.frame(op[1]))
            cut, flip, at = op[2]  # a byte flipped (a length or count among them), then maybe the end cut off
            if at < len(frame):
                frame[at] ^= flip
            self.send(bytes(frame[:max(8, len(frame) - cut)]) if cut < 100 else bytes(frame))
        elif kind == "relabel":  # the body of one version under another (or unsupported) version's header
            frame = bytearray(self.frame(op[1]))
            frame[2:4] = op[2].to_bytes(2, "big", signed=True)
            self.send(bytes(frame))
        else:
            self.send(self.frame(op))

    def state(self) -> tuple:
        return self.answers, self.proc.log.batches, self.proc.log.records, offsets_state(self.proc.coordinator)


def both(sequence: list[tuple]) -> tuple[Run, Run]:
    runs = []
    for name in ("native", "python"):
        run = Run(name)
        run.setup()
        for op in sequence:
            run.apply(op)
        run.settle("complete")
        runs.append(run)
    return runs[0], runs[1]


@pytest.fixture(autouse=True)
def _native() -> None:
    require_native()


@settings(max_examples=examples(120), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(ops, min_size=1, max_size=25))
def test_random_sequences_answer_log_and_state_alike_on_both_paths(sequence):
    fast, python = both(sequence)
    assert python.handled() == 0
    HANDLED[0] += fast.handled()
    HANDLED[1] += sum(op[0] in versions for op in sequence)
    fast_state, python_state = fast.state(), python.state()
    for i, (a, b) in enumerate(zip(fast_state[0], python_state[0])):
        assert a == b, f"answer {i} differs: {sequence}"
    assert fast_state == python_state


HANDLED = [0, 0]  # frames the lane answered itself, valid frames sent: over all examples of the random test


def test_the_random_sequences_went_through_the_lane():
    """(Runs after the random test, in file order.) Most valid frames of the random sequences were the lane's to
    answer, not the Python path's: the equality above says something about the native code."""
    handled, sent = HANDLED
    if sent:
        assert handled > sent // 3, HANDLED


def test_the_lane_handles_the_common_shapes_itself():
    """The plain frames of every version, on existing groups: the native lane answers each (its counters move),
    and as the Python path does."""
    sequence: list[tuple] = []
    for version in versions["commit"]:
        sequence.append(("commit", version, "g1", ("member0", "current"), [("t", 0), ("t", 3), ("u", 299)], "m",
                         5, -1, 100 + version))
        sequence.append(("commit", version, "simple", ("", -1), [("u", 7)], "", -1, 60_000, 7))
    sequence.append(("complete",))
    sequence += [("fetch", version, "g1", [("t", 0), ("t", 1), ("u", 299)], False) for version in versions["fetch"]]
    sequence += [("heartbeat", version, "g1", ("member1", "current")) for version in versions["heartbeat"]]
    fast, python = both(sequence)
    assert fast.handled() == len(sequence) - 1
    assert fast.state() == python.state()


def test_a_failed_write_is_taken_back_and_answered_alike():
    sequence = [("commit", 8, "g1", ("member0", "current"), [("t", 1), ("t", 2)], "a", 1, -1, 10), ("complete",),
                ("commit", 8, "g1", ("member0", "current"), [("t", 1), ("u", 9)], "b", 1, -1, 20),
                ("commit", 9, "simple", ("", -1), [("t", 1)], "", -1, -1, 30),
                ("fetch", 8, "g1", [("t", 1), ("u", 9)], False), ("fetch", 8, "g1", [("t", 1)], True),
                ("fail",), ("fetch", 6, "g1", [("t", 1), ("t", 2), ("u", 9)], False)]
    fast, python = both(sequence)
    assert fast.state() == python.state()
    after = decode(fetch_request(6, "g1", {"t": [1, 2], "u": [9]}), fast.answers[-1])
    assert [(p.partition_index, p.committed_offset) for t in after.topics for p in t.partitions] == [
        (1, 10), (2, 11), (9, -1)]  # the failed write's offsets taken back
