"""The answer path's counters (net/request_metrics.py), the error-code walk of responses
(protocol/error_codes.py) and the histogram they share (primitives/histogram.py)."""

from __future__ import annotations

import datetime
import struct

from kio.schema.errors import ErrorCode
from kio.schema.offset_commit.v8.response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kio.static.primitive import i32, i32Timedelta

from coordinator.net.request_metrics import RequestMetrics, kafka_name
from primitives.histogram import BUCKETS, Histogram, bounds, bucket_of
from protocol.error_codes import count_errors


def commit_response(*codes: ErrorCode) -> OffsetCommitResponse:
    partitions = tuple(OffsetCommitResponsePartition(partition_index=i32(i), error_code=c) for i, c in enumerate(codes))
    return OffsetCommitResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
                                topics=(OffsetCommitResponseTopic(name="t", partitions=partitions),))


def test_every_nested_error_code_but_none_is_counted():
    seen: list[int] = []
    count_errors(commit_response(ErrorCode.none, ErrorCode.illegal_generation, ErrorCode.illegal_generation,
                                 ErrorCode.unknown_member_id), seen.append)
    assert sorted(seen) == sorted([int(ErrorCode.unknown_member_id), int(ErrorCode.illegal_generation),
                                   int(ErrorCode.illegal_generation)])


def test_an_encoded_body_has_nothing_to_count():
    seen: list[int] = []
    count_errors(b"\x00\x00", seen.append)
    assert seen == []


def test_requests_are_counted_by_api_and_version_and_timed_by_api():
    metrics = RequestMetrics()
    heartbeat_v4, fetch_v12, commit_v9 = 12 << 16 | 4, 1 << 16 | 12, 8 << 16 | 9
    kinds = {heartbeat_v4: 2}
    metrics.answered(kinds, [], 0.000_003)  # one read's pass: 2 heartbeats, 3 µs: bucket 2 (below 4 µs)
    assert kinds == {}  # consumed
    deferred = [commit_v9]
    metrics.answered({fetch_v12: 1, commit_v9: 1}, deferred, 0.000_001)  # mixed; the commit's answer deferred
    assert deferred == []
    metrics.observe_latency(commit_v9, 0.002)  # the commit's answer, delivered after its fsync
    metrics.observe(heartbeat_v4, 0.000_001)  # one request alone
    assert sorted(metrics.request_counts()) == [("Fetch", 12, 1), ("Heartbeat", 4, 3), ("OffsetCommit", 9, 1)]
    latencies = dict(metrics.latencies())
    assert latencies["Heartbeat"].counts[2] == 2 and latencies["Heartbeat"].counts[1] == 1
    assert sum(latencies["Heartbeat"].counts) == 3 and abs(latencies["Heartbeat"].total - 0.000_007) < 1e-12
    assert latencies["Fetch"].counts[1] == 1 and sum(latencies["Fetch"].counts) == 1
    assert sum(latencies["OffsetCommit"].counts) == 1 and latencies["OffsetCommit"].total == 0.002


def test_cut_frames_counts_frames_by_kind_and_only_when_asked():
    from protocol.framing import cut_frames, frame, frame_kind

    heartbeat, commit = struct.pack(">hhi", 12, 4, 1) + b"h", struct.pack(">hhi", 8, 9, 2) + b"c"
    buffer = bytearray(b"".join(frame(f) for f in (heartbeat, heartbeat, commit, heartbeat, b"\x00")))
    kinds: dict[int, int] = {}
    frames = cut_frames(buffer, 1 << 20, kinds=kinds)
    assert frames == [heartbeat, heartbeat, commit, heartbeat, b"\x00"] and not buffer
    assert kinds == {12 << 16 | 4: 3, 8 << 16 | 9: 1}  # the 1-byte frame has no kind
    assert frame_kind(commit) == 8 << 16 | 9 and frame_kind(b"\x00") == -1
    buffer = bytearray(frame(heartbeat) + frame(commit)[:6])  # a partial frame stays, uncounted
    kinds = {}
    assert cut_frames(buffer, 1 << 20, kinds=kinds) == [heartbeat] and kinds == {12 << 16 | 4: 1}


def test_errors_are_counted_per_api_under_kafka_names():
    metrics = RequestMetrics()
    metrics.response_errors("offset_commit", commit_response(ErrorCode.none, ErrorCode.coordinator_not_available))
    metrics.error("heartbeat", int(ErrorCode.rebalance_in_progress))
    assert sorted(metrics.error_counts()) == [("Heartbeat", int(ErrorCode.rebalance_in_progress), 1),
                                              ("OffsetCommit", int(ErrorCode.coordinator_not_available), 1)]
    assert kafka_name("describe_groups") == "DescribeGroups"


def test_histogram_buckets_are_powers_of_two_microseconds():
    assert bucket_of(0.0) == 0
    assert bucket_of(0.000_001) == 1 and bucket_of(0.000_002) == 2 and bucket_of(0.000_003) == 2
    assert bucket_of(3600.0) == BUCKETS - 1  # everything long lands in the last (+Inf) bucket
    assert bounds()[:3] == [0.000_001, 0.000_002, 0.000_004] and len(bounds()) == BUCKETS - 1
    histogram = Histogram()
    histogram.observe(0.5)
    assert histogram.counts[bucket_of(0.5)] == 1 and bounds()[bucket_of(0.5)] >= 0.5 > bounds()[bucket_of(0.5) - 1]
