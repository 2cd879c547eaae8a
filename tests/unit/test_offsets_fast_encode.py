"""The offsets log's fast encoders give the bytes of the general ones."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from kio.static.primitive import i32, i64

from coordinator.offsets.manager import commit_records
from coordinator.records import log_codec
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, OffsetValue
from storage.batch import build_batch, build_tail_batch, decode_records, record_tail, validate
from storage.errors import InvalidRecordError
from tests.support.examples import examples


def build_plain_batch(pairs: list[tuple[bytes, bytes | None]], timestamp: int) -> bytes:
    """The offsets log's write path for (key, value) pairs that share one timestamp."""
    return build_tail_batch([record_tail(key, value) for key, value in pairs], timestamp)


def test_plain_batch_equals_build_batch():
    pairs = [(b"k%d" % i * (1 + i % 70), None if i % 7 == 3 else b"v" * (i * 37 % 300)) for i in range(200)]
    ts = 1_700_000_000_123
    built = build_plain_batch(pairs, ts)
    assert built == build_batch([(k, v, ts) for k, v in pairs])
    validate(built)
    assert [(r.key, r.value, r.timestamp) for r in decode_records(built)] == [(k, v, ts) for k, v in pairs]
    assert build_plain_batch([(b"", b"")], -1) == build_batch([(b"", b"", -1)])


@pytest.mark.parametrize("pairs", [
    [(b"k" * 9000, b"v")],  # a key beyond the varint table
    [(b"k", b"v" * 20_000), (b"k2", None)],  # a value beyond it
    [(b"k%d" % i, b"v") for i in range(9000)],  # more records than the table's deltas
])
def test_plain_batch_falls_back_beyond_the_varint_table(pairs):
    assert build_plain_batch(pairs, 5) == build_batch([(k, v, 5) for k, v in pairs])


def test_plain_batch_refuses_no_records():
    with pytest.raises(InvalidRecordError):
        build_plain_batch([], 0)


def tails(records: list) -> list[bytes]:
    return [record_tail(*log_codec.encode(r)) for r in records]


def test_encode_tails_equals_encode_per_record():
    records = [
        OffsetCommitRecord("g", "t", 0, OffsetValue(5, "", 1_700_000_000_000)),
        OffsetCommitRecord("g", "t", 1, OffsetValue(2**63 - 1, "", -1, 2**31 - 1)),
        OffsetCommitRecord("g", "t", 1, OffsetValue(7, "meta ü", 1, 3)),
        OffsetCommitRecord("g", "t", 2, OffsetValue(7, "", 1, 3, 99)),  # expire set: v1
        OffsetCommitRecord("g", "u", 2**31 - 1, None),
        OffsetCommitRecord("gü", "t", 0, OffsetValue(1, "", 2)),
        GroupMetadataRecord("g", None),
    ]
    assert log_codec.encode_tails(records) == tails(records)
    assert log_codec.encode_tails(records) == tails(records)  # cached key heads


def test_encode_tails_refuses_too_long_names():
    with pytest.raises(ValueError):
        log_codec.encode_tails([OffsetCommitRecord("g" * 40_000, "t", 0, OffsetValue(1, "", 2))])


def test_the_key_prefix_cache_stays_bounded(monkeypatch):
    monkeypatch.setattr(log_codec, "_KEY_HEAD_LIMIT", 2)
    monkeypatch.setattr(log_codec, "_KEY_HEADS", {})
    records = [OffsetCommitRecord(f"g{i}", f"t{i % 3}", i, OffsetValue(i, "", 1)) for i in range(7)]
    assert log_codec.encode_tails(records) == tails(records)
    assert len(log_codec._KEY_HEADS) <= 2


@settings(max_examples=examples(200), deadline=None)
@given(partitions=st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(-(2**63), 2**63 - 1),
                                     st.integers(-(2**31), 2**31 - 1), st.sampled_from(["", "m", "päck" * 40, None])),
                           min_size=1, max_size=12),
       retention=st.sampled_from([-1, 0, 86_400_000]), with_epoch=st.booleans(),
       group=st.sampled_from(["g", "gröup", "x" * 300]), topic=st.sampled_from(["t", "töpic"]))
def test_commit_records_tails_are_encode_tails_of_its_records(partitions, retention, with_epoch, group, topic):
    from tests.support.offsets import schema

    m = schema("offset_commit", 8)
    topic_partitions = tuple(m.OffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(o),
                                                            committed_leader_epoch=i32(e), committed_metadata=md)
                             for p, o, e, md in partitions)
    request = m.OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=i32(-1), member_id="",
                                    group_instance_id=None,
                                    topics=(m.OffsetCommitRequestTopic(name=topic, partitions=topic_partitions),))
    records, _answer, made = commit_records(group, request.topics, 1_700_000_000_000, retention, 4096, with_epoch)
    assert made == log_codec.encode_tails(records)


def test_commit_records_gives_no_tails_for_names_the_log_cannot_encode():
    from tests.support.offsets import commit_request

    long_topic = "t" * 40_000  # beyond an int16 string length: the log's encoding fails the write
    records, _answer, made = commit_records("g", commit_request(8, "g", {(long_topic, 0): 1}).topics, 1, -1, 4096, True)
    assert len(records) == 1 and made is None
    with pytest.raises(ValueError):
        log_codec.encode_tails(records)
