"""OffsetCommit v0/v1 and OffsetFetch v0 (protocol/legacy_messages.py) against bytes built
by hand from Kafka 3.x's JSON schemas, through the same decoder, encoder and API table as
every kio class."""

from __future__ import annotations

import io
import struct

from hypothesis import given, settings, strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i32, i64

from protocol import legacy_messages as m
from protocol.apis import API_TABLE, ApiKey
from protocol.codec import decode_request, encode_request, encode_response
from protocol.encoder import encode
from protocol.header import parse_request_header
from tests.support.examples import examples

E = ErrorCode


def s(text: str | None) -> bytes:
    """Kafka's non-compact (nullable) STRING: int16 length, -1 for null."""
    if text is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(text.encode())) + text.encode()


def n(count: int) -> bytes:
    """A non-compact ARRAY's int32 length."""
    return struct.pack(">i", count)


def i(value: int) -> bytes:
    return struct.pack(">i", value)


def q(value: int) -> bytes:
    return struct.pack(">q", value)


COMMIT_V0 = s("grp") + n(1) + s("t") + n(2) + i(0) + q(100) + s("md") + i(3) + q(7) + s(None)
COMMIT_V1 = (s("grp") + i(5) + s("m-1") + n(1) + s("t") + n(2)
             + i(0) + q(100) + q(1234) + s("md") + i(3) + q(7) + q(-1) + s(None))
# error codes: 22 ILLEGAL_GENERATION, 15 COORDINATOR_NOT_AVAILABLE
COMMIT_RESPONSE = n(1) + s("t") + n(2) + i(0) + struct.pack(">h", 0) + i(3) + struct.pack(">h", 22)
FETCH_V0 = s("grp") + n(2) + s("a") + n(2) + i(0) + i(1) + s("b") + n(0)
FETCH_RESPONSE_V0 = n(1) + s("a") + n(2) + i(0) + q(100) + s("md") + struct.pack(">h", 0) \
    + i(1) + q(-1) + s(None) + struct.pack(">h", 15)


def commit_v0() -> m.OffsetCommitRequestV0:
    return m.OffsetCommitRequestV0(group_id="grp", topics=(m.OffsetCommitRequestTopicV0(name="t", partitions=(
        m.OffsetCommitRequestPartitionV0(partition_index=i32(0), committed_offset=i64(100), committed_metadata="md"),
        m.OffsetCommitRequestPartitionV0(partition_index=i32(3), committed_offset=i64(7), committed_metadata=None),
    )),))


def commit_v1() -> m.OffsetCommitRequestV1:
    P = m.OffsetCommitRequestPartitionV1
    return m.OffsetCommitRequestV1(group_id="grp", generation_id=i32(5), member_id="m-1", topics=(
        m.OffsetCommitRequestTopicV1(name="t", partitions=(
            P(partition_index=i32(0), committed_offset=i64(100), commit_timestamp=i64(1234), committed_metadata="md"),
            P(partition_index=i32(3), committed_offset=i64(7), committed_metadata=None),  # default -1
        )),))


def commit_response(version: int):
    top, topic, part = {0: (m.OffsetCommitResponseV0, m.OffsetCommitResponseTopicV0, m.OffsetCommitResponsePartitionV0),
                        1: (m.OffsetCommitResponseV1, m.OffsetCommitResponseTopicV1,
                            m.OffsetCommitResponsePartitionV1)}[version]
    return top(topics=(topic(name="t", partitions=(part(partition_index=i32(0), error_code=E.none),
                                                    part(partition_index=i32(3), error_code=E.illegal_generation))),))


def fetch_v0() -> m.OffsetFetchRequestV0:
    return m.OffsetFetchRequestV0(group_id="grp", topics=(
        m.OffsetFetchRequestTopicV0(name="a", partition_indexes=(i32(0), i32(1))),
        m.OffsetFetchRequestTopicV0(name="b", partition_indexes=())))


def fetch_response_v0() -> m.OffsetFetchResponseV0:
    P = m.OffsetFetchResponsePartitionV0
    return m.OffsetFetchResponseV0(topics=(m.OffsetFetchResponseTopicV0(name="a", partitions=(
        P(partition_index=i32(0), committed_offset=i64(100), metadata="md", error_code=E.none),
        P(partition_index=i32(1), committed_offset=i64(-1), metadata=None, error_code=E.coordinator_not_available),
    )),))


def kio_bytes(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


CASES = [
    (commit_v0(), COMMIT_V0),
    (commit_v1(), COMMIT_V1),
    (commit_response(0), COMMIT_RESPONSE),
    (commit_response(1), COMMIT_RESPONSE),
    (fetch_v0(), FETCH_V0),
    (fetch_response_v0(), FETCH_RESPONSE_V0),
]


def test_hand_built_bytes_decode_and_encode_both_ways():
    for entity, raw in CASES:
        assert encode(entity) == raw, type(entity).__name__  # protocol/encoder.py
        assert kio_bytes(entity) == raw, type(entity).__name__  # kio's own writer agrees
        decoded, used = entity_reader(type(entity))(raw, 0)  # kio's native reader
        assert (decoded, used) == (entity, len(raw))


def test_requests_decode_through_the_api_table_after_a_v1_header():
    for key, version, entity, raw in [(ApiKey.OFFSET_COMMIT, 0, commit_v0(), COMMIT_V0),
                                      (ApiKey.OFFSET_COMMIT, 1, commit_v1(), COMMIT_V1),
                                      (ApiKey.OFFSET_FETCH, 0, fetch_v0(), FETCH_V0)]:
        spec = API_TABLE[key]
        assert not spec.request_is_flexible(version)
        frame = encode_request(key, version, False, 77, "old-client", entity)
        header = parse_request_header(frame[4:], False)
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            key, version, 77, "old-client")
        assert frame[4 + header.body_offset:] == raw
        assert decode_request(spec, version, frame[4:], header.body_offset) == entity


def test_response_frames_use_header_v0():
    for entity, raw in CASES[2:4]:
        out = encode_response(9, API_TABLE[ApiKey.OFFSET_COMMIT].response_header_versions[0], entity)
        assert out == struct.pack(">ii", 4 + len(raw), 9) + raw
    out = encode_response(9, API_TABLE[ApiKey.OFFSET_FETCH].response_header_versions[0], fetch_response_v0())
    assert out == struct.pack(">ii", 4 + len(FETCH_RESPONSE_V0), 9) + FETCH_RESPONSE_V0


def test_api_table_serves_every_version_from_zero():
    commit, fetch = API_TABLE[ApiKey.OFFSET_COMMIT], API_TABLE[ApiKey.OFFSET_FETCH]
    assert (commit.min_version, commit.max_version, commit.flexible_from) == (0, 9, 8)
    assert (fetch.min_version, fetch.max_version, fetch.flexible_from) == (0, 9, 6)
    assert commit.requests[0] is m.OffsetCommitRequestV0 and commit.requests[1] is m.OffsetCommitRequestV1
    assert commit.responses[1] is m.OffsetCommitResponseV1 and fetch.requests[0] is m.OffsetFetchRequestV0
    assert commit.requests[2].__module__.startswith("kio.")  # kio still serves what it has
    for spec, versions in ((commit, (0, 1)), (fetch, (0,))):
        for v in versions:
            assert spec.response_header_versions[v] == 0
            assert spec.requests[v].__header_schema__.__version__ == 1
            assert (spec.requests[v].__type__, spec.responses[v].__type__) == (EntityType.request,
                                                                               EntityType.response)
            assert int(spec.requests[v].__version__) == v and int(spec.requests[v].__api_key__) == spec.key


def test_truncated_legacy_bodies_are_decode_errors():
    from protocol.codec import DecodeError

    spec = API_TABLE[ApiKey.OFFSET_COMMIT]
    for cut in (1, 5, len(COMMIT_V1) - 1):
        try:
            decode_request(spec, 1, COMMIT_V1[:cut], 0)
        except DecodeError:
            continue
        raise AssertionError(f"a body cut at {cut} decoded")


@settings(max_examples=examples(60), deadline=None)
@given(st.sampled_from(sorted(set(m.LEGACY_CLASSES.values()), key=lambda c: c.__name__)).flatmap(st.from_type))
def test_encoder_matches_kio_and_round_trips(entity):
    raw = encode(entity)
    assert raw == kio_bytes(entity)
    assert entity_reader(type(entity))(raw, 0) == (entity, len(raw))
