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
    heartbeat_v4 = struct.pack(">hhi", 12, 4, 1) + b"rest"
    metrics.observe(heartbeat_v4, 0.000_003)  # 3 µs: bucket 2 (below 4 µs)
    metrics.observe(heartbeat_v4, 0.000_003)
    metrics.observe_key(8 << 16 | 9, 0.002)  # a deferred OffsetCommit v9
    assert sorted(metrics.request_counts()) == [("Heartbeat", 4, 2), ("OffsetCommit", 9, 1)]
    latencies = dict(metrics.latencies())
    assert latencies["Heartbeat"].counts[2] == 2 and sum(latencies["Heartbeat"].counts) == 2
    assert abs(latencies["Heartbeat"].total - 0.000_006) < 1e-12
    assert sum(latencies["OffsetCommit"].counts) == 1


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
