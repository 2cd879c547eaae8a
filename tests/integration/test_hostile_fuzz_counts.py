"""Fuzzing every API/version of the API table with hostile counts and lengths (issue 13).

For each request class of protocol/apis.py's API_TABLE, hypothesis builds a frame that follows the
class's schema (read from kio's field metadata, independently of protocol/bounds.py): a few honest
elements per array, strings, bytes, nested and nullable structs, tagged-field sections. Then at
least one count or length prefix (of an array, string, bytes, tagged-field section or the header's
client id, at any depth) is replaced by a hostile one: 2^31-1, 2^32-1, the longest varint, one more
than the bytes left, a negative length, an over-long varint. The real server runs under a 3 GiB
RLIMIT_AS; every such frame must close only its own connection, while a well-behaved client keeps
getting answers within 1.5 s, the server stays up and offsets committed before survive.
(tests/integration/test_fuzz.py sends garbage frames; this one sends frames a parser takes seriously.)
Every API runs against the server as built (the native fast lane in CI); OffsetCommit, OffsetFetch and Heartbeat,
which the lane takes, also against the pure-Python path (COORDINATOR_NO_EXTENSIONS=1).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from coordinator.fastlane import native
from coordinator.fastlane.native import NO_EXTENSIONS_ENV
from primitives.uvarint import encode_uvarint as uvarint
from protocol.apis import API_TABLE, ApiKey
from protocol.framing import frame
from protocol.kio_fields import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from tests.support.fastlane import native_required, path, python_forced
from tests.support.hostile import (
    Watchdog,
    assert_commits_survive,
    closed_by_server,
    commit_offsets,
    start_limited_server,
)

pytestmark = pytest.mark.integration

COMMITTED = {("fuzzed", 0): 5, ("fuzzed", 3): 9}
_FIXED = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8,
          "float64": 8, "bool": 1, "uuid": 16, "error_code": 2, "timedelta_i32": 4, "timedelta_i64": 8,
          "datetime_i64": 8}
_I16, _I32 = struct.Struct(">h").pack, struct.Struct(">i").pack


@dataclass
class Prefix:
    """A count or length prefix: `kind` says how it is encoded, `honest` is what fits."""

    kind: str  # "compact" (uvarint value + 1), "int16", "int32" or "tags" (uvarint tagged-field count)
    honest: bytes


# Hostile prefixes, as functions of the bytes that follow them.
HOSTILE: dict[str, list[Callable[[int], bytes]]] = {
    "compact": [lambda left: uvarint(2**32 - 1), lambda left: uvarint(2**35 - 1), lambda left: uvarint(2**31),
                lambda left: uvarint(left + 2), lambda left: b"\xff\xff\xff\xff\xff\x01"],
    "int32": [lambda left: _I32(2**31 - 1), lambda left: _I32(2**24), lambda left: _I32(left + 1),
              lambda left: _I32(-2)],
    "int16": [lambda left: _I16(32767), lambda left: _I16(left + 1) if left < 32767 else _I16(-2),
              lambda left: _I16(-2)],
    "tags": [lambda left: uvarint(2**32 - 1), lambda left: b"\x01" + uvarint(9999) + uvarint(2**31 - 1),
             lambda left: b"\x01" + uvarint(9998) + uvarint(left + 1)],  # unknown tags; one size too long
}


def _text(draw: Any, flexible: bool) -> list:
    raw = draw(st.binary(max_size=6).map(lambda b: bytes(0x61 + x % 26 for x in b)))
    return [Prefix("compact", uvarint(len(raw) + 1)) if flexible else Prefix("int16", _I16(len(raw))), raw]


def _primitive(draw: Any, kafka_type: str, flexible: bool) -> list:
    if kafka_type in _FIXED:
        return [draw(st.binary(min_size=_FIXED[kafka_type], max_size=_FIXED[kafka_type]))]
    if kafka_type == "string":
        return _text(draw, flexible)
    assert kafka_type in ("bytes", "records"), kafka_type
    raw = draw(st.binary(max_size=6))
    return [Prefix("compact", uvarint(len(raw) + 1)) if flexible else Prefix("int32", _I32(len(raw))), raw]


def _struct(draw: Any, cls: type, nullable: bool = False) -> list:
    """Honest tokens (bytes and Prefixes) for one `cls` value, following kio's field metadata."""
    if nullable and draw(st.booleans()):
        return [b"\xff"]  # a null struct
    out: list = [b"\x01"] if nullable else []
    flexible = bool(cls.__flexible__)
    for field in fields(cls):
        if get_field_tag(field) is not None:
            continue  # tagged fields: only the (empty) section below
        kind = classify_field(field)
        if isinstance(kind, (EntityTupleField, PrimitiveTupleField)):
            count = draw(st.integers(0, 2))
            out.append(Prefix("compact", uvarint(count + 1)) if flexible else Prefix("int32", _I32(count)))
            for _ in range(count):
                if isinstance(kind, EntityTupleField):
                    out += _struct(draw, kind.type_)
                else:
                    out += _primitive(draw, get_schema_field_type(field), flexible)
        elif isinstance(kind, EntityField):
            out += _struct(draw, kind.type_, is_optional(field))
        else:
            out += _primitive(draw, get_schema_field_type(field), flexible)
    if flexible:
        out.append(Prefix("tags", b"\x00"))
    return out


@st.composite
def hostile_frames(draw: Any, key: int, version: int) -> bytes:
    spec = API_TABLE[key]
    flexible_header = spec.request_is_flexible(version)
    tokens: list = [struct.pack(">hhi", key, version, 99), *_text(draw, False)]  # header v1/v2
    if flexible_header:
        tokens.append(Prefix("tags", b"\x00"))
    tokens += _struct(draw, spec.requests[version])
    prefixes = [i for i, token in enumerate(tokens) if isinstance(token, Prefix)]
    hostile = draw(st.sets(st.sampled_from(prefixes), min_size=1, max_size=3))
    out: list[bytes] = []
    left = 0
    for i in reversed(range(len(tokens))):  # from the end, so that a prefix knows the bytes after it
        token = tokens[i]
        if isinstance(token, Prefix):
            token = draw(st.sampled_from(HOSTILE[token.kind]))(left) if i in hostile else token.honest
        out.append(token)
        left += len(token)
    return frame(b"".join(reversed(out)))


@pytest.fixture(scope="module")
def attacked(request, tmp_path_factory):
    """The server on one path: "built" (the environment's: the native fast lane where it is built, as in CI) or
    "python" (COORDINATOR_NO_EXTENSIONS=1 forced: the reference path of the fast lane's APIs)."""
    mode = request.param
    env = {NO_EXTENSIONS_ENV: "1"} if mode == "python" else None
    server = start_limited_server(str(tmp_path_factory.mktemp(f"fuzz-counts-{mode}")), env=env)
    commit_offsets(server, "fuzz-counts", COMMITTED)
    with Watchdog(server) as watchdog:
        yield mode, server, watchdog
    code = server.stop()
    assert code == 0, server.lines[-10:]


def _expected_path(mode: str) -> str:
    if mode == "python" or python_forced():
        return "python"
    with path("native"):
        described = native.describe()
    if described["path"] != "native" and native_required():
        pytest.fail(f"the native fast lane is not active: {described['reason']}")
    return described["path"]


VERSIONS = [(key, version) for key, spec in sorted(API_TABLE.items())
            for version in range(spec.min_version, spec.max_version + 1)]
# the fast lane's APIs: again on the pure-Python path (the other APIs have one path)
LANE_VERSIONS = [(key, version) for key, version in VERSIONS
                 if key in (ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.HEARTBEAT)]
FUZZ = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])


def _ids(cases: list[tuple[int, int]]) -> list[str]:
    return [f"{API_TABLE[k].name}-v{v}" for k, v in cases]


def _attack(attacked: tuple, key: int, version: int, data: Any) -> None:
    _, server, watchdog = attacked
    payload = data.draw(hostile_frames(key, version))
    with socket.create_connection((server.host, server.port), timeout=5) as bad:
        bad.sendall(payload)
        assert closed_by_server(bad), payload.hex()
    assert server.process.poll() is None, f"the server stopped: {server.lines[-5:]}"
    watchdog.check()


# (one value per decorator: the module-scoped server is started once per path, not once per case)
@pytest.mark.parametrize("attacked", ["built"], indirect=True)
@pytest.mark.parametrize("key, version", VERSIONS, ids=_ids(VERSIONS))
@FUZZ
@given(data=st.data())
def test_hostile_counts_and_lengths_close_only_their_connection(attacked, key, version, data):
    _attack(attacked, key, version, data)


@pytest.mark.parametrize("attacked", ["python"], indirect=True)
@pytest.mark.parametrize("key, version", LANE_VERSIONS, ids=_ids(LANE_VERSIONS))
@FUZZ
@given(data=st.data())
def test_on_the_pure_python_path_too(attacked, key, version, data):
    _attack(attacked, key, version, data)


@pytest.mark.parametrize("attacked", ["built", "python"], indirect=True)
def test_after_the_fuzzing_the_server_is_whole(attacked):
    mode, server, watchdog = attacked
    assert server.wait_for_event("hot path")["path"] == _expected_path(mode)  # the path the fuzzing went through
    assert server.process.poll() is None
    watchdog.check()
    assert_commits_survive(server, "fuzz-counts", COMMITTED)
    assert not [e for e in server.events() if e.get("level") in ("error", "critical")]
    server.wait_for_event("closing connection", where=lambda e: "CountError" in e["reason"])
