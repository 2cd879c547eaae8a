"""protocol/bounds.py: every array count of a request is checked against the bytes left before
kio's native reader reserves room for its elements (issue 13, defect 1).

The hostile counts here are large enough to be refused but small enough (2^20) that kio, without
the check, only reserves 8 MB and then fails on the missing bytes: so without the checker these
tests fail on the kind of error (a BufferUnderflow, not a CountError) instead of aborting pytest.
The real bombs (2^32-1, 2^31-1) run in a child process under RLIMIT_AS, where they aborted it.
"""

# no `from __future__ import annotations`: kio reads the field types of the classes below

import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.fetch.v16.response import FetchResponse
from kio.schema.produce.v10.response import ProduceResponse
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_reader
from kio.static import primitive
from kio.static.constants import EntityType

from primitives.uvarint import encode_uvarint as uvarint
from protocol import bounds
from protocol.apis import API_TABLE, ApiKey
from protocol.codec import DecodeError, decode_request
from protocol.encoder import encode
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
from tests.support.server_process import ROOT


def refused(key: ApiKey, version: int, body: bytes) -> str:
    """Decode `body` as a request; it must be refused for a count (not for running out of bytes)."""
    with pytest.raises(DecodeError) as caught:
        decode_request(API_TABLE[key], version, body, 0)
    assert isinstance(caught.value.__cause__, bounds.CountError), caught.value
    return str(caught.value)


def test_compact_count_of_a_top_level_array():
    message = refused(ApiKey.METADATA, 12, uvarint(HOSTILE + 1) + b"\x00" * 10)
    assert f"array of {HOSTILE} elements of at least 18 bytes" in message


def test_legacy_count_of_a_top_level_array():
    refused(ApiKey.METADATA, 4, i32(HOSTILE) + legacy("t") + b"\x01")


def test_compact_count_of_primitive_arrays():
    refused(ApiKey.DESCRIBE_GROUPS, 5, uvarint(HOSTILE + 1) + compact("g") + b"\x00\x00")
    refused(ApiKey.DELETE_GROUPS, 2, uvarint(HOSTILE + 1) + b"\x00")


def test_legacy_count_of_a_primitive_array_after_other_arrays():
    # Fetch v7: the forgotten topics' int32 partitions come after the (empty) topics array
    head = i32(-1) + i32(500) + i32(1) + i32(1 << 20) + b"\x00" + i32(0) + i32(0)
    refused(ApiKey.FETCH, 7, head + i32(0) + i32(1) + legacy("t") + i32(HOSTILE) + i32(0))






def test_nested_legacy_count_in_the_last_element():
    refused(ApiKey.OFFSET_COMMIT, 7, commit_v7([("t", i32(HOSTILE) + commit_v7_partition(0))]))


def test_nested_legacy_count_behind_a_walked_element():
    """The first topic's partitions (strings inside) must be walked to find the second's count."""
    fine = i32(2) + commit_v7_partition(0) + commit_v7_partition(1)
    refused(ApiKey.OFFSET_COMMIT, 7, commit_v7([("a", fine), ("b", i32(HOSTILE) + commit_v7_partition(0))]))
    refused(ApiKey.OFFSET_COMMIT, 7, commit_v7([("a", i32(HOSTILE) + commit_v7_partition(0)), ("b", fine)]))


def test_nested_compact_count():
    partition = i32(0) + i64(42) + i32(-1) + compact("") + b"\x00"
    head = compact("group") + i32(1) + compact("member") + b"\x00"
    refused(ApiKey.OFFSET_COMMIT, 9, head + uvarint(2) + compact("t") + uvarint(HOSTILE + 1) + partition + b"\x00\x00")
    two = head + uvarint(3) + compact("a") + uvarint(2) + partition + b"\x00"
    refused(ApiKey.OFFSET_COMMIT, 9, two + compact("b") + uvarint(HOSTILE + 1) + partition + b"\x00\x00")




def test_nullable_nested_count():
    refused(ApiKey.OFFSET_FETCH, 8, fetch_groups_v8(uvarint(HOSTILE + 1) + compact("t") + uvarint(1) + b"\x00"))
    request = decode_request(API_TABLE[ApiKey.OFFSET_FETCH], 8, fetch_groups_v8(b"\x00") + b"\x00", 0)
    assert request.groups[0].topics is None  # null (0) is not a count


def test_nullable_legacy_count():
    refused(ApiKey.OFFSET_FETCH, 7, compact("g") + uvarint(HOSTILE + 1) + b"\x00\x00")
    refused(ApiKey.OFFSET_FETCH, 5, legacy("g") + i32(HOSTILE) + legacy("t") + i32(0))
    assert decode_request(API_TABLE[ApiKey.OFFSET_FETCH], 5, legacy("g") + i32(-1), 0).topics is None


def test_null_where_the_schema_allows_none_is_refused():
    """Kafka refuses such a request ("non-nullable field topics was serialized as null"); kio would
    give the handler None (OffsetCommit v8 with null topics logged two tracebacks per request)."""
    message = refused(ApiKey.OFFSET_COMMIT, 8, compact("g") + i32(-1) + compact("") + b"\x00" + b"\x00" + b"\x00")
    assert "null array" in message
    refused(ApiKey.OFFSET_COMMIT, 2, legacy("g") + i32(-1) + legacy("") + i64(-1) + i32(-1))
    refused(ApiKey.DELETE_GROUPS, 2, b"\x00" + b"\x00")


def test_a_count_is_refused_only_when_its_smallest_elements_cannot_fit():
    check = bounds.checker(API_TABLE[ApiKey.FIND_COORDINATOR].requests[4])
    assert check is not None
    for count in (1, 7):  # key_type, then `count` empty compact strings: `count` bytes
        body = b"\x00" + uvarint(count + 1) + b"\x01" * count
        check(body, 0)
        with pytest.raises(bounds.CountError):
            check(body[:-1], 0)


def test_classes_without_arrays_get_no_checker():
    for key in (ApiKey.HEARTBEAT, ApiKey.API_VERSIONS, ApiKey.INIT_PRODUCER_ID):
        for cls in API_TABLE[key].requests.values():
            assert bounds.checker(cls) is None
    for cls in API_TABLE[ApiKey.OFFSET_COMMIT].requests.values():
        assert bounds.checker(cls) is bounds.checker(cls) is not None





REQUESTS = [cls for spec in API_TABLE.values() for cls in spec.requests.values() if bounds.checker(cls)]
TAGGED_COUNTS = [FetchResponse, ProduceResponse]  # tagged arrays, nested tagged structs: the tag helpers


@pytest.mark.parametrize("cls", REQUESTS + TAGGED_COUNTS, ids=lambda c: f"{c.__module__.split('.')[-2]}.{c.__name__}")
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), prefix=st.binary(max_size=3))
def test_every_well_formed_message_passes_its_checker(cls, data, prefix):
    """The checker walks a frame exactly as kio reads it: it never refuses what kio encodes."""
    entity, body = well_formed(data, cls)
    frame = prefix + body
    bounds.checker(cls)(frame, len(prefix))
    try:
        decoded = entity_reader(cls)(frame, len(prefix))
    except ValueError as exc:  # kio writes durations it cannot read back ("timedelta milliseconds overflow")
        assert "overflow" in str(exc)
        return
    assert decoded == (entity, len(body))




@pytest.mark.parametrize("key, version, body", BOMBS.values(), ids=BOMBS.keys())
def test_a_bomb_is_refused_under_a_memory_limit(key, version, body):
    """In a child process under a 3 GiB RLIMIT_AS, as in a container: kio aborted it (SIGABRT)."""
    script = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from protocol.apis import API_TABLE
        from protocol.codec import DecodeError, decode_request
        try:
            decode_request(API_TABLE[{int(key)}], {version}, {body!r}, 0)
        except DecodeError as exc:
            print(type(exc.__cause__).__name__)
    """)
    child = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr[-500:]
    assert child.stdout.strip() == "CountError"


# No kio schema nests a tagged section inside a tagged field yet; a made-up one checks that the
# checker's helpers for such sections do not collide (each tagged section gets its own).
@dataclass(frozen=True, slots=True, kw_only=True)
class _Deep:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[primitive.i16] = primitive.i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[primitive.i16] = primitive.i16(0)
    __header_schema__: ClassVar[type] = RequestHeader
    ids: tuple[primitive.i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    note: str = field(metadata={"kafka_type": "string", "tag": 0}, default="")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Outer:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[primitive.i16] = primitive.i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[primitive.i16] = primitive.i16(0)
    __header_schema__: ClassVar[type] = RequestHeader
    names: tuple[str, ...] = field(metadata={"kafka_type": "string"}, default=())
    deep: _Deep = field(metadata={"tag": 0}, default=_Deep())


@settings(max_examples=30, deadline=None)
@given(ids=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=3), note=st.text(max_size=3),
       names=st.lists(st.text(max_size=3), max_size=3))
def test_nested_tagged_sections_get_their_own_helpers(ids, note, names):
    entity = _Outer(names=tuple(names), deep=_Deep(ids=tuple(ids), note=note))
    body = encode(entity)
    bounds.checker(_Outer)(body, 0)
    assert entity_reader(_Outer)(body, 0) == (entity, len(body))
    if ids:  # the nested array's count, made hostile: 2^20 elements
        count = len(encode(_Outer(names=tuple(names)))) - 1 + 3  # after the names: tag count, tag, size
        assert body[count] == len(ids) + 1
        hostile = body[:count] + uvarint(2**20 + 1) + body[count + 1:]
        with pytest.raises(bounds.CountError):
            bounds.checker(_Outer)(hostile, 0)
