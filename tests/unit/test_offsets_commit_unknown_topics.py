"""OffsetCommit to topics or partitions this server does not know: UNKNOWN_TOPIC_OR_PARTITION, as
Kafka's KafkaApis.handleOffsetCommitRequest answers from its metadata cache, before the group
coordinator sees the rest (coordinator/offsets/known_topics.py). Generic and fast path alike."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.offsets.known_topics import merge_answers, split_unknown
from tests.support.dispatch import known_topics
from tests.support.legacy_offsets import commit_v0, commit_v1
from tests.support.offsets import OffsetsHarness, codes, commit_request, fetch_request, fetched
from tests.unit.test_offsets_commit_size import answer, big_commit
from tests.unit.test_offsets_fast_path import fast, frame_of, same, settled

E = ErrorCode
TOPICS = {"t": 3, "u": 1}


def harness(**settings) -> OffsetsHarness:
    return OffsetsHarness(topics=TOPICS, **settings)


def test_a_commit_to_an_unknown_topic_is_refused_and_writes_nothing():
    h = harness()
    response = h.commit(commit_request(9, "g", {("nope", 0): 5, ("nope", 1): 6}))
    assert codes(response) == {("nope", 0): E.unknown_topic_or_partition, ("nope", 1): E.unknown_topic_or_partition}
    assert h.log.all_records() == []
    assert "g" not in h.coordinator.shard_for("g").groups  # no simple group made either


@pytest.mark.parametrize("version", [0, 1, 2, 5, 7, 8, 9])
def test_partitions_out_of_range_are_refused_and_the_rest_committed(version):
    h = harness()
    offsets = {("t", 0): 1, ("t", 3): 2, ("t", -1): 3, ("u", 0): 4, ("x", 0): 5}
    if version < 2:
        request = commit_v0("g", offsets) if version == 0 else commit_v1("g", offsets)
    else:
        request = commit_request(version, "g", offsets)
    response = h.commit(request)
    unknown = E.unknown_topic_or_partition
    assert codes(response) == {("t", 0): E.none, ("t", 3): unknown, ("t", -1): unknown, ("u", 0): E.none,
                               ("x", 0): unknown}
    # Kafka's response builder: the refused partitions first, the coordinator's answer merged in by topic
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in response.topics] == \
        [("t", [3, -1, 0]), ("x", [0]), ("u", [0])]
    got = fetched(h.send(fetch_request(7, "g", {"t": [0, 3], "u": [0]})).topics)
    assert got[("t", 0)][0] == 1 and got[("t", 3)][0] == -1 and got[("u", 0)][0] == 4


def test_only_unknown_partitions_skip_the_group_check_mixed_ones_get_both():
    h = harness()
    ghost = {"generation": 3, "member": "ghost"}
    alone = h.commit(commit_request(9, "g", {("nope", 0): 1}, **ghost))
    assert codes(alone) == {("nope", 0): E.unknown_topic_or_partition}
    mixed = h.commit(commit_request(9, "g", {("nope", 0): 1, ("t", 1): 1}, **ghost))
    assert codes(mixed) == {("nope", 0): E.unknown_topic_or_partition, ("t", 1): E.group_id_not_found}


def test_the_internal_topic_is_known():
    h = harness()
    response = h.commit(commit_request(9, "g", {("__consumer_offsets", 49): 1, ("__consumer_offsets", 50): 1}))
    assert codes(response) == {("__consumer_offsets", 49): E.none,
                               ("__consumer_offsets", 50): E.unknown_topic_or_partition}


@pytest.mark.parametrize("version", [2, 6, 9])
def test_the_fast_path_answers_unknown_topics_as_the_generic_path(version):
    frame = frame_of(commit_request(version, "g", {("nope", 0): 1, ("t", 0): 2, ("t", 7): 3}))
    out = same(frame)  # OffsetsHarness' default topics: "t" has many partitions, "nope" none
    h = OffsetsHarness()
    assert settled(h, fast(h, frame)) == out


def test_a_topic_created_later_is_known_from_then_on():
    h = harness()
    assert codes(h.commit(commit_request(9, "g", {("late", 0): 1}))) == {("late", 0): E.unknown_topic_or_partition}
    known_topics(h.services.topics, {"late": 1})
    assert codes(h.commit(commit_request(9, "g", {("late", 0): 1}))) == {("late", 0): E.none}


async def test_an_oversized_commit_answers_unknown_partitions_as_such():
    proc = OffsetsHarness(topics={"orders": 1 << 20}, offsets_max_batch_bytes=100_000)
    got = codes(await answer(proc, big_commit(8)))  # half its partitions are of "payments", unknown here
    assert {code for (topic, _p), code in got.items() if topic == "payments"} == {E.unknown_topic_or_partition}
    assert {code for (topic, _p), code in got.items() if topic == "orders"} == {E.invalid_commit_offset_size}
    assert proc.log.all_records() == []


async def test_an_oversized_commit_of_unknown_topics_only_is_refused_per_partition():
    proc = OffsetsHarness(topics={}, offsets_max_batch_bytes=100_000)
    got = codes(await answer(proc, big_commit(8)))
    assert set(got.values()) == {E.unknown_topic_or_partition}


def test_split_and_merge_leave_the_common_case_alone():
    class T:
        def __init__(self, name, indexes):
            self.name = name
            self.partitions = [type("P", (), {"partition_index": i})() for i in indexes]

    assert split_unknown([T("t", [0, 1, 2])], {"t": 3}) is None
    known, refused = split_unknown([T("t", [0, 3]), T("v", [0])], {"t": 3})
    assert [(k.name, [p.partition_index for p in k.partitions]) for k in known] == [("t", [0])]
    assert refused == [("t", [3], [E.unknown_topic_or_partition]), ("v", [0], [E.unknown_topic_or_partition])]
    assert merge_answers(refused, [("t", [0], None)]) == [
        ("t", [3, 0], [E.unknown_topic_or_partition, E.none]), ("v", [0], [E.unknown_topic_or_partition])]
