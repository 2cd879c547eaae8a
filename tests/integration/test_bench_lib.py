"""bench/lib: the requests the benchmarks send are ones our dispatcher answers without error, the one wire
client encodes and decodes as both its users expect, and the report and peer helpers do what scripts rely on."""

from __future__ import annotations

import asyncio
import os
import struct
from pathlib import Path

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from bench.lib import wire
from bench.lib.commits import commit_check, commit_frames
from bench.lib.consumer_members import ConsumerMember, join_request as consumer_join
from bench.lib.inprocess import DispatcherRig, known_topics, split_answers
from bench.lib.members import heartbeat_frames, heartbeat_request, join_request, sync_request
from bench.lib.peers import PeerError, rss_bytes, start_server
from bench.lib.report import command_line
from tests.support import wire_client


async def seat(rig: DispatcherRig, group: str, size: int) -> list:
    """Members join (two-step), the group completes at once (no initial delay), all sync."""
    ids = [(await rig.call(join_request(group, ""))).member_id for _ in range(size)]
    sent = rig.send([wire.request_frame(join_request(group, m))[4:] for m in ids])
    rig.clock.advance(0)
    joined = [wire.decode_response(type(join_request(group, "")), a[4:]) for a in await rig.answers(sent)]
    assert {j.error_code for j in joined} == {ErrorCode.none}
    leader, generation = joined[0].leader, joined[0].generation_id
    sent = rig.send([wire.request_frame(sync_request(group, generation, m, ids if m == leader else ()))[4:]
                     for m in ids])
    rig.log.complete()
    synced = [wire.decode_response(type(sync_request(group, 0, "")), a[4:]) for a in await rig.answers(sent)]
    assert {s.error_code for s in synced} == {ErrorCode.none}
    return joined


def test_members_requests_seat_a_group_that_then_heartbeats() -> None:
    async def go() -> None:
        rig = DispatcherRig()
        joined = await seat(rig, "g", 3)
        assert len(next(j for j in joined if j.member_id == j.leader).members) == 3
        beat = await rig.call(heartbeat_request("g", joined[0].generation_id, joined[0].member_id))
        assert beat.error_code is ErrorCode.none
        stale = await rig.call(heartbeat_request("g", joined[0].generation_id + 1, joined[0].member_id))
        assert stale.error_code is ErrorCode.illegal_generation

    asyncio.run(go())


def test_heartbeat_frames_number_their_correlation_ids() -> None:
    class M:
        group, generation, member_id = "g", 1, "m"

    frames = heartbeat_frames([M(), M(), M()])
    assert [struct.unpack_from(">i", f, 8)[0] for f in frames] == [1, 2, 3]


def test_commit_frames_are_answered_without_error_and_commit_check_reads_every_partition() -> None:
    async def go() -> list[bytes]:
        rig = DispatcherRig()
        sent = rig.send([f[4:] for f in commit_frames(0)[:3]])
        rig.log.complete()
        return await rig.answers(sent)

    answers = asyncio.run(go())
    assert len(answers) == 3
    for answer in split_answers(b"".join(answers)):
        commit_check(answer)
    body = bytearray(split_answers(answers[0])[0])
    body[-2:] = struct.pack(">h", ErrorCode.offset_metadata_too_large.value)  # the last partition's code
    with pytest.raises(ValueError, match="error code 12"):
        commit_check(bytes(body))


def test_the_wire_client_sends_its_users_client_ids() -> None:
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    assert b"\x00\x05bench" in wire.request_frame(request, 1)
    assert b"\x00\x0btest-client" in wire_client.request_frame(request, 1)
    assert wire_client.request_frame(request, 1, None)[12:14] == b"\xff\xff"  # a null client id
    made_without_init = wire_client.WireClient.__new__(wire_client.WireClient)  # as test_connection_quotas does
    assert (made_without_init.client_id, made_without_init.correlation_id) == ("test-client", 0)
    assert made_without_init.whole_frames


def test_decode_response_checks_the_frame_is_whole_only_when_asked() -> None:
    body = struct.pack(">iih", 7, 0, 0)  # Heartbeat v3 answer: correlation id, throttle time, error code
    request_cls = type(heartbeat_request("g", 1, "m"))
    assert wire.decode_response(request_cls, body).error_code is ErrorCode.none
    assert wire.decode_response(request_cls, body + b"\x00").error_code is ErrorCode.none
    with pytest.raises(AssertionError, match="trailing bytes"):
        wire.decode_response(request_cls, body + b"\x00", whole=True)


def test_command_line_names_the_tree_under_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_OURS_ROOT", raising=False)
    assert command_line("bench.bench_groups", ["--reps", "1"]) == ".venv/bin/python -m bench.bench_groups --reps 1"
    monkeypatch.setenv("BENCH_OURS_ROOT", "/tmp/snap")
    assert command_line("bench.bench_groups", None) == (
        "BENCH_OURS_ROOT=/tmp/snap .venv/bin/python -m bench.bench_groups")


def test_settings_overrides_are_refused_for_peers_before_anything_starts() -> None:
    with pytest.raises(PeerError, match="for ours only"):
        with start_server("tansu", overrides={"log.flush.policy": "none"}):
            pass


def test_rss_bytes_reads_this_process() -> None:
    assert rss_bytes([os.getpid()]) > 1 << 20
    assert rss_bytes([]) == 0


def test_the_rigs_consumer_groups_see_its_topics() -> None:
    """DispatcherRig wires the topic catalog into its own coordinator as Services does: a KIP-848 member that
    joins is assigned the topic's partitions (bench.profile.consumer_heartbeats depends on it)."""
    async def go() -> None:
        rig = DispatcherRig()
        known_topics(rig.services.topics, {"rig-topic": 3})
        member = ConsumerMember("g", 0, ["rig-topic"])
        (sent,) = rig.send([wire.request_frame(consumer_join("g", member.member_id, ["rig-topic"]))[4:]])
        rig.log.complete()
        (frame,) = await rig.answers([sent])
        member.on_answer(wire.decode_response(type(consumer_join("g", "m", ["t"])), frame[4:]), frozenset())
        assert member.epoch == 1 and sorted(p for _, p in member.owned) == [0, 1, 2]

    asyncio.run(go())


def test_commit_cpu_measures_commits_that_are_written_not_refused() -> None:
    """bench.profile.commit_cpu's topic is known to the App it starts (an unknown one is refused with
    UNKNOWN_TOPIC_OR_PARTITION, a far shorter path), and its answer check reads the partitions' codes."""
    import uvloop

    from bench.profile.commit_cpu import check_answers, measure

    samples = uvloop.run(measure(rounds=1, connections=2, in_flight=2))  # raises if any partition is refused
    assert len(samples) == 1 and all(cpu > 0 for cpu in samples[0])

    name = b"bench-offsets"
    refused = struct.pack(">iii", 7, 0, 1) + struct.pack(">h", len(name)) + name + struct.pack(">iih", 1, 0, 3)
    ok = refused[:-2] + b"\x00\x00"
    assert check_answers(struct.pack(">i", len(ok)) + ok) == 1
    with pytest.raises(ValueError, match="error code 3"):  # UNKNOWN_TOPIC_OR_PARTITION
        check_answers(struct.pack(">i", len(ok)) + ok + struct.pack(">i", len(refused)) + refused)


def test_compiled_steps_tables_medians_and_failed_runs(tmp_path: Path) -> None:
    """bench.profile.compiled_steps: the copy it compiles has every package and no built files; its table
    shows medians and their ratio, and a step the compiled copy could not run as failed (mypyc's crashes)."""
    from bench.profile.compiled_steps import PACKAGES, copy_tree, table

    target = tmp_path
    copy_tree(target)
    assert all((target / package / "__init__.py").exists() for package in PACKAGES)
    assert not list(target.rglob("*.so")) and not list(target.rglob("__pycache__"))
    pure = [{"header": 1.0, "decode": 4.0}, {"header": 3.0, "decode": 4.0}]
    compiled = [{"header": 1.0}, {"header": 1.0, "bench.profile.commit_cpu (exit -4)": None}]
    rows = table(pure, compiled).splitlines()
    assert rows[2] == "| header | 2.00 | 1.00 | 2.00 |"
    assert rows[3] == "| decode | 4.00 | failed | - |"
    assert rows[4] == "| bench.profile.commit_cpu (exit -4) | failed | failed | - |"


def test_ours_flags_combine_settings_and_environment():
    from bench.lib.peers import PeerError, ours_flags
    assert ours_flags("ours") == ({}, {})
    assert ours_flags("ours@/some/tree+nosync+pure") == (
        {"offsets.log.flush.policy": "none"}, {"COORDINATOR_NO_EXTENSIONS": "1"})
    with pytest.raises(PeerError):
        ours_flags("ours+fast")


def test_the_offset_fetch_benchmark_checks_its_answers():
    """bench.bench_offset_fetch's check reads an OffsetFetch v8 answer: the committed offsets pass, an error or
    another offset fails."""
    from datetime import timedelta

    from kio.schema.offset_fetch.v8.response import (
        OffsetFetchResponse,
        OffsetFetchResponseGroup,
        OffsetFetchResponsePartitions,
        OffsetFetchResponseTopics,
    )
    from kio.static.primitive import i32, i64

    from bench.bench_offset_fetch import COMMITTED, fetch_check
    from protocol.codec import encode_response

    def body(offset: int, code: ErrorCode) -> bytes:
        answer = OffsetFetchResponse(throttle_time=timedelta(0), groups=(OffsetFetchResponseGroup(
            group_id="g", error_code=ErrorCode.none, topics=(OffsetFetchResponseTopics(name="t", partitions=tuple(
                OffsetFetchResponsePartitions(partition_index=i32(p), committed_offset=i64(offset),
                                              committed_leader_epoch=i32(-1), metadata="", error_code=code)
                for p in range(3))),)),))
        return bytes(encode_response(7, 1, answer))[4:]

    fetch_check(body(COMMITTED, ErrorCode.none))
    with pytest.raises(ValueError):
        fetch_check(body(COMMITTED, ErrorCode.unknown_topic_or_partition))
    with pytest.raises(ValueError):
        fetch_check(body(COMMITTED + 1, ErrorCode.none))
