"""Encode/decode cost per message: our compiled encoder vs kio's writer, and kio's reader.

    .venv/bin/python -m bench.bench_codec [--quick] [--no-docs]

For each representative response: protocol/encoder.py `writer_for(cls)(entity, bytearray())` against
`kio.serial.entity_writer(cls)(io.BytesIO(), entity)` (the outputs are checked to be byte-identical
first), and `kio.serial.entity_reader(cls)(body, 0)` decoding the matching request (what the server
does per request). Times are the best of several timeit repeats, each auto-ranged to >= 0.2 s, in µs
per operation, single thread, no pinning.
"""

from __future__ import annotations

import argparse
import datetime
import io
import sys
import timeit
import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4 import request as hb_req, response as hb_resp
from kio.schema.join_group.v9 import request as jg_req, response as jg_resp
from kio.schema.metadata.v12 import request as md_req, response as md_resp
from kio.schema.offset_commit.v8 import request as oc_req, response as oc_resp
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32, i64

from bench.lib.report import machine_facts, markdown_table, write_section
from protocol.encoder import writer_for

GROUP, MEMBER = "bench-group", "consumer-1-6f0a6c39-5d0f-4b4e-9f55-3c4d1b7c2e11"
# A ConsumerProtocolSubscription v1 for one topic, the size real clients send.
SUBSCRIPTION = bytes.fromhex("0001000000010005746f70696300000000ffffffff")


def _ms(n: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=n)


def heartbeat() -> tuple[Any, Any]:
    response = hb_resp.HeartbeatResponse(throttle_time=_ms(0), error_code=ErrorCode.none)
    request = hb_req.HeartbeatRequest(group_id=GROUP, generation_id=i32(7), member_id=MEMBER,
                                      group_instance_id=None)
    return response, request


def offset_commit() -> tuple[Any, Any]:
    response = oc_resp.OffsetCommitResponse(throttle_time=_ms(0), topics=(oc_resp.OffsetCommitResponseTopic(
        name="orders", partitions=tuple(oc_resp.OffsetCommitResponsePartition(
            partition_index=i32(p), error_code=ErrorCode.none) for p in range(10))),))
    request = oc_req.OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=i32(7), member_id=MEMBER, group_instance_id=None,
        topics=(oc_req.OffsetCommitRequestTopic(name="orders", partitions=tuple(
            oc_req.OffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(1000 + p),
                                                committed_leader_epoch=i32(-1), committed_metadata="")
            for p in range(10))),))
    return response, request


def metadata() -> tuple[Any, Any]:
    partitions = tuple(md_resp.MetadataResponsePartition(
        error_code=ErrorCode.none, partition_index=i32(p), leader_id=i32(1), leader_epoch=i32(0),
        replica_nodes=(i32(1),), isr_nodes=(i32(1),), offline_replicas=()) for p in range(50))
    topic_id = uuid.UUID("5f0c5a0e-3a55-4a4e-8e8b-1f6a0c3c9d11")
    response = md_resp.MetadataResponse(
        throttle_time=_ms(0), brokers=(md_resp.MetadataResponseBroker(node_id=i32(1), host="127.0.0.1",
                                                                      port=i32(9092), rack=None),),
        cluster_id="bench-cluster", controller_id=i32(1), topics=(md_resp.MetadataResponseTopic(
            error_code=ErrorCode.none, name="orders", topic_id=topic_id, is_internal=False,
            partitions=partitions, topic_authorized_operations=i32(-2147483648)),))
    request = md_req.MetadataRequest(topics=(md_req.MetadataRequestTopic(topic_id=None, name="orders"),),
                                     allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return response, request


def join_group() -> tuple[Any, Any]:
    members = tuple(jg_resp.JoinGroupResponseMember(member_id=f"{MEMBER}-{m}", group_instance_id=None,
                                                    metadata=SUBSCRIPTION) for m in range(10))
    response = jg_resp.JoinGroupResponse(
        throttle_time=_ms(0), error_code=ErrorCode.none, generation_id=i32(7), protocol_type="consumer",
        protocol_name="range", leader=f"{MEMBER}-0", skip_assignment=False, member_id=f"{MEMBER}-0",
        members=members)
    request = jg_req.JoinGroupRequest(
        group_id=GROUP, session_timeout=_ms(45000), rebalance_timeout=_ms(300000), member_id=MEMBER,
        group_instance_id=None, protocol_type="consumer",
        protocols=(jg_req.JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION),
                   jg_req.JoinGroupRequestProtocol(name="cooperative-sticky", metadata=SUBSCRIPTION)),
        reason=None)
    return response, request


CASES = {
    "HeartbeatResponse v4": heartbeat,
    "OffsetCommitResponse v8, 10 partitions": offset_commit,
    "MetadataResponse v12, 50 partitions": metadata,
    "JoinGroupResponse v9, 10 members": join_group,
}


def per_op_us(fn: Any, repeat: int, min_time: float) -> float:
    timer = timeit.Timer(fn)
    number = 1
    while timer.timeit(number) < min_time:
        number *= 2
    return min(timer.repeat(repeat, number)) / number * 1e6


def kio_bytes(entity: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def measure(name: str, response: Any, request: Any, repeat: int, min_time: float) -> list[Any]:
    ours_write, kio_write = writer_for(type(response)), entity_writer(type(response))
    ours = bytearray()
    ours_write(response, ours)
    if bytes(ours) != kio_bytes(response):
        raise AssertionError(f"{name}: our encoder and kio disagree on the bytes")
    request_body = kio_bytes(request)
    reader = entity_reader(type(request))
    decoded, _ = reader(request_body, 0)
    if decoded != request:
        raise AssertionError(f"{name}: kio did not decode the request back to itself")
    t_ours = per_op_us(lambda: ours_write(response, bytearray()), repeat, min_time)
    t_kio = per_op_us(lambda: kio_write(io.BytesIO(), response), repeat, min_time)
    t_read = per_op_us(lambda: reader(request_body, 0), repeat, min_time)
    return [name, len(ours), f"{t_ours:.2f}", f"{t_kio:.2f}", f"{t_kio / t_ours:.1f}x",
            type(request).__name__, len(request_body), f"{t_read:.2f}"]


HEADER = ["response", "bytes", "ours encode µs", "kio encode µs", "speed-up",
          "matching request", "bytes", "kio decode µs"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_codec", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short timings (smoke test)")
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    repeat, min_time = (2, 0.02) if args.quick else (7, 0.2)
    facts = machine_facts()
    rows = []
    for name, build in CASES.items():
        response, request = build()
        rows.append(measure(name, response, request, repeat, min_time))
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(HEADER, rows)
    notes = ("Best of 7 timeit repeats of >= 0.2 s each. Encode = body only (no size prefix or header) "
             "into a fresh bytearray (ours) or BytesIO (kio); our output is checked byte-identical to "
             "kio's first. kio's reader is native code (kio._kio_native), so decode is a native baseline.")
    print("\n" + table)
    if not args.no_docs:
        path = write_section("codec", "Codec µs per operation (bench/bench_codec.py)",
                             ".venv/bin/python -m bench.bench_codec", facts, table + "\n\n" + notes)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
