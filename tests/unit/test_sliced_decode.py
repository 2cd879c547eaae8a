"""protocol/sliced_decode.py: the decoder that yields every CHUNK elements reads every request
class exactly as kio does, and refuses what kio and protocol/bounds.py refuse (issue 13)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.serial import entity_reader

from primitives.uvarint import encode_uvarint as uvarint
from protocol import bounds, sliced_decode
from protocol.apis import API_TABLE, ApiKey
from protocol.codec import DecodeError, decode_request
from protocol.encoder import encode
from tests.support.examples import examples
from tests.support.protocol_bytes import (
    BOMBS,
    HOSTILE,
    commit_v7,
    commit_v7_partition,
    compact,
    fetch_groups_v8,
    i32,
    i64,
    legacy,
    well_formed,
)

ALL_REQUESTS = sorted({cls for spec in API_TABLE.values() for cls in spec.requests.values()},
                      key=lambda c: (c.__module__, c.__name__))


def sliced(cls: type, frame: bytes, pos: int = 0) -> tuple[object, int]:
    """The entity and the number of times the decoder yielded."""
    steps = sliced_decode.decode(cls, frame, pos)
    yields = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value, yields
        yields += 1


@pytest.mark.parametrize("cls", ALL_REQUESTS, ids=lambda c: f"{c.__module__.split('.')[-2]}.{c.__name__}")
@settings(max_examples=examples(8), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), prefix=st.binary(max_size=3))
def test_every_well_formed_message_decodes_as_kio_decodes_it(cls, data, prefix):
    entity, body = well_formed(data, cls)
    frame = prefix + body
    try:
        expected, _size = entity_reader(cls)(frame, len(prefix))
    except ValueError as exc:  # kio writes durations it cannot read back ("timedelta milliseconds overflow")
        assert "overflow" in str(exc)
        with pytest.raises(ValueError):
            sliced(cls, frame, len(prefix))
        return
    assert sliced(cls, frame, len(prefix))[0] == expected == entity


@pytest.mark.parametrize("count", [0, 1, sliced_decode.CHUNK - 1, sliced_decode.CHUNK, 3 * sliced_decode.CHUNK + 7])
@pytest.mark.parametrize("version", [0, 5])  # legacy and compact counts
def test_long_arrays_are_read_in_chunks_with_yields_between(version, count):
    cls = API_TABLE[ApiKey.DESCRIBE_GROUPS].requests[version]
    entity = cls(groups=tuple(f"g{i}" for i in range(count)), **({"include_authorized_operations": True}
                                                                 if version else {}))
    decoded, yields = sliced(cls, encode(entity))
    assert decoded == entity
    assert yields == (count + 1) // sliced_decode.CHUNK  # every CHUNK elements, the request itself one


def test_nested_arrays_yield_too():
    """OffsetCommit's topics hold partition arrays: the decoder walks them itself, and an element
    counts towards a yield at any depth."""
    cls = API_TABLE[ApiKey.OFFSET_COMMIT].requests[9]
    topic_cls = cls.__dataclass_fields__["topics"].type.__args__[0]
    partition_cls = topic_cls.__dataclass_fields__["partitions"].type.__args__[0]
    partition = partition_cls(partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata="")
    topics = tuple(topic_cls(name=f"t{i}", partitions=(partition,) * 3) for i in range(2 * sliced_decode.CHUNK))
    entity = cls(group_id="g", generation_id_or_member_epoch=1, member_id="m", group_instance_id=None,
                 topics=topics)
    decoded, yields = sliced(cls, encode(entity))
    assert decoded == entity
    assert yields == 4 * 2 * sliced_decode.CHUNK // sliced_decode.CHUNK  # a topic and its 3 partitions: 4 elements


# The malformed bodies of tests/integration/test_protocol_bounds.py: each is refused by kio's path (with
# bounds.py) and by the sliced decoder, for a count or a null where none is allowed.
_PARTITION_V9 = i32(0) + i64(42) + i32(-1) + compact("") + b"\x00"
_HEAD_V9 = compact("group") + i32(1) + compact("member") + b"\x00"
_FINE_V7 = i32(2) + commit_v7_partition(0) + commit_v7_partition(1)
_FETCH_V7 = i32(-1) + i32(500) + i32(1) + i32(1 << 20) + b"\x00" + i32(0) + i32(0)
MALFORMED = {
    "compact top-level count": (ApiKey.METADATA, 12, uvarint(HOSTILE + 1) + b"\x00" * 10),
    "legacy top-level count": (ApiKey.METADATA, 4, i32(HOSTILE) + legacy("t") + b"\x01"),
    "compact primitive count": (ApiKey.DESCRIBE_GROUPS, 5, uvarint(HOSTILE + 1) + compact("g") + b"\x00\x00"),
    "compact primitive count 2": (ApiKey.DELETE_GROUPS, 2, uvarint(HOSTILE + 1) + b"\x00"),
    "legacy primitive count after arrays": (ApiKey.FETCH, 7, _FETCH_V7 + i32(0) + i32(1) + legacy("t")
                                            + i32(HOSTILE) + i32(0)),
    "nested legacy count, last element": (ApiKey.OFFSET_COMMIT, 7,
                                          commit_v7([("t", i32(HOSTILE) + commit_v7_partition(0))])),
    "nested legacy count behind an element": (ApiKey.OFFSET_COMMIT, 7, commit_v7(
        [("a", _FINE_V7), ("b", i32(HOSTILE) + commit_v7_partition(0))])),
    "nested legacy count before an element": (ApiKey.OFFSET_COMMIT, 7, commit_v7(
        [("a", i32(HOSTILE) + commit_v7_partition(0)), ("b", _FINE_V7)])),
    "nested compact count": (ApiKey.OFFSET_COMMIT, 9, _HEAD_V9 + uvarint(2) + compact("t")
                             + uvarint(HOSTILE + 1) + _PARTITION_V9 + b"\x00\x00"),
    "nested compact count, second topic": (ApiKey.OFFSET_COMMIT, 9, _HEAD_V9 + uvarint(3) + compact("a") + uvarint(2)
                                           + _PARTITION_V9 + b"\x00" + compact("b") + uvarint(HOSTILE + 1)
                                           + _PARTITION_V9 + b"\x00\x00"),
    "nullable nested count": (ApiKey.OFFSET_FETCH, 8, fetch_groups_v8(uvarint(HOSTILE + 1) + compact("t")
                                                                       + uvarint(1) + b"\x00")),
    "nullable compact count": (ApiKey.OFFSET_FETCH, 7, compact("g") + uvarint(HOSTILE + 1) + b"\x00\x00"),
    "nullable legacy count": (ApiKey.OFFSET_FETCH, 5, legacy("g") + i32(HOSTILE) + legacy("t") + i32(0)),
    "null topics v8": (ApiKey.OFFSET_COMMIT, 8, compact("g") + i32(-1) + compact("") + b"\x00" + b"\x00" + b"\x00"),
    "null topics v2": (ApiKey.OFFSET_COMMIT, 2, legacy("g") + i32(-1) + legacy("") + i64(-1) + i32(-1)),
    "null groups": (ApiKey.DELETE_GROUPS, 2, b"\x00" + b"\x00"),
    "unknown tag": (ApiKey.DELETE_GROUPS, 2, uvarint(2) + compact("g") + uvarint(1) + uvarint(7) + uvarint(0)),
    **{f"bomb: {name}": bomb for name, bomb in BOMBS.items()},
}


@pytest.mark.parametrize("key, version, body", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_frames_are_refused_both_ways(key, version, body):
    cls = API_TABLE[key].requests[version]
    with pytest.raises(DecodeError):
        decode_request(API_TABLE[key], version, body, 0)
    with pytest.raises(bounds.CountError):
        sliced(cls, body)


def test_the_legal_nulls_decode_as_kio_decodes_them():
    for key, version, body in [(ApiKey.OFFSET_FETCH, 8, fetch_groups_v8(b"\x00") + b"\x00"),
                               (ApiKey.OFFSET_FETCH, 5, legacy("g") + i32(-1))]:
        expected = decode_request(API_TABLE[key], version, body, 0)
        assert sliced(API_TABLE[key].requests[version], body)[0] == expected


@pytest.mark.parametrize("cut", [1, 2, 5])
def test_a_frame_that_ends_early_is_refused(cut):
    cls = API_TABLE[ApiKey.DESCRIBE_GROUPS].requests[5]
    body = encode(cls(groups=("a", "b", "c"), include_authorized_operations=False))
    with pytest.raises(Exception):  # noqa: B017 - kio's reader and ours may raise different types; both refuse
        entity_reader(cls)(body[:-cut], 0)
    with pytest.raises(Exception):  # noqa: B017 - kio's reader and ours may raise different types; both refuse
        sliced(cls, body[:-cut])
