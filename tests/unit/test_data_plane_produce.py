"""Produce validation (nothing appended on error), acks, idempotent dedupe and sequence
errors, InitProducerId, LogAppendTime, and producer state rebuilt after a restart."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from kio.schema.errors import ErrorCode

from coordinator.net.dispatch import CloseConnection
from protocol.apis import ApiKey
from storage.batch import build_batch, ensure_valid, iter_batches
from tests.support.data_plane import Plane, batch, ms, req


def fix_crc(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def patched(data: bytes, offset: int, fmt: str, value: int, crc: bool = True) -> bytes:
    buf = bytearray(data)
    struct.pack_into(fmt, buf, offset, value)
    return fix_crc(buf) if crc else bytes(buf)


GOOD = batch(b"hello", b"world")


def bad_batches() -> dict[str, tuple[bytes | None, ErrorCode]]:
    flipped = bytearray(GOOD)
    flipped[-1] ^= 0xFF
    negative_record = bytearray(GOOD)
    negative_record[61] = 0x01  # zig-zag varint -1 as the first record's length
    return {
        "bad crc": (bytes(flipped), ErrorCode.corrupt_message),
        "magic 1": (patched(GOOD, 16, ">b", 1, crc=False), ErrorCode.invalid_record),
        "magic 9": (patched(GOOD, 16, ">b", 9, crc=False), ErrorCode.corrupt_message),
        "negative batch length": (patched(GOOD, 8, ">i", -5, crc=False), ErrorCode.corrupt_message),
        "tiny batch length": (patched(GOOD, 8, ">i", 20, crc=False), ErrorCode.corrupt_message),
        "negative record length": (fix_crc(negative_record), ErrorCode.invalid_record),
        "count mismatch": (patched(GOOD, 57, ">i", 3), ErrorCode.invalid_record),
        "zero count": (patched(patched(GOOD, 57, ">i", 0), 23, ">i", -1), ErrorCode.invalid_record),
        "truncated": (GOOD[:-3], ErrorCode.invalid_record),
        "two batches": (GOOD + GOOD, ErrorCode.invalid_record),
        "empty": (b"", ErrorCode.invalid_record),
        "null": (None, ErrorCode.invalid_record),
        "codec 7": (patched(GOOD, 21, ">h", 7), ErrorCode.unsupported_compression_type),
        "control batch": (batch(b"x", is_control=True), ErrorCode.invalid_record),
        "idempotent without sequence": (batch(b"x", producer_id=5, producer_epoch=0, base_sequence=-1),
                                        ErrorCode.invalid_record),
    }


@pytest.mark.parametrize("case", sorted(bad_batches()))
async def test_bad_batch_rejected_nothing_appended_server_keeps_going(tmp_path, case):
    data, code = bad_batches()[case]
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 1)
        answer = await plane.produce("t", 0, data)
        assert answer.error_code == code, answer.error_message
        assert answer.base_offset == -1 and answer.error_message
        log = plane.data.partition("t", 0).log
        assert log.log_end_offset == 0
        ok = await plane.produce("t", 0, GOOD)
        assert (ok.error_code, ok.base_offset, log.log_end_offset) == (ErrorCode.none, 0, 2)


async def test_zstd_needs_produce_v7(tmp_path):
    zstd = patched(GOOD, 21, ">h", 4)
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        assert (await plane.produce("t", 0, zstd, version=6)).error_code == ErrorCode.unsupported_compression_type
        # v7 accepts the codec; the bytes are not zstd, which the record walk catches
        assert (await plane.produce("t", 0, zstd, version=7)).error_code == ErrorCode.corrupt_message


async def test_size_limits(tmp_path):
    async with Plane(str(tmp_path), **{"message.max.bytes": "200"}) as plane:
        await plane.create("small")
        await plane.create("roomy", configs={"max.message.bytes": "5000", "segment.bytes": "400"})
        big = batch(b"x" * 250)
        assert (await plane.produce("small", 0, big)).error_code == ErrorCode.message_too_large
        assert (await plane.produce("roomy", 0, big)).error_code == ErrorCode.none
        bigger = batch(b"x" * 450)
        assert (await plane.produce("roomy", 0, bigger)).error_code == ErrorCode.record_list_too_large
        assert plane.data.partition("small", 0).log.log_end_offset == 0
        assert plane.data.partition("roomy", 0).log.log_end_offset == 1


async def test_unknown_topic_partition_internal_and_auto_create(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 2)
        assert (await plane.produce("t", 2, GOOD)).error_code == ErrorCode.unknown_topic_or_partition
        assert (await plane.produce("t", -1, GOOD)).error_code == ErrorCode.unknown_topic_or_partition
        assert (await plane.produce("__consumer_offsets", 0, GOOD)).error_code == ErrorCode.invalid_topic_exception
        assert (await plane.produce("bad name", 0, GOOD)).error_code == ErrorCode.unknown_topic_or_partition
        created = await plane.produce("fresh", 0, GOOD)  # auto.create.topics.enable defaults to true
        assert (created.error_code, created.base_offset) == (ErrorCode.none, 0)
        assert plane.data.catalog.get("fresh").partitions == 1


async def test_acks(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        bad = await plane.produce("t", 0, GOOD, acks=2)
        assert bad.error_code == ErrorCode.invalid_required_acks
        assert await plane.produce("t", 0, GOOD, acks=0) is None  # no response at all
        one = await plane.produce("t", 0, GOOD, acks=1)
        assert (one.error_code, one.base_offset) == (ErrorCode.none, 2)
        durable = await plane.produce("t", 0, GOOD, acks=-1)
        log = plane.data.partition("t", 0).log
        assert durable.base_offset == 4 and log.high_watermark == 6  # acks=-1 waited for the flush
        with pytest.raises(CloseConnection):  # acks=0 and an error: Kafka closes the connection
            plane.send(req(ApiKey.PRODUCE, 9, acks=0, timeout=ms(100), transactional_id=None, topic_data=[
                {"name": "t", "partition_data": [{"index": 0, "records": b"junk"}]}]))
        assert log.log_end_offset == 6


async def test_transactional_produce_needs_a_transactional_id(tmp_path):
    txn = batch(b"x", producer_id=1, producer_epoch=0, base_sequence=0, is_transactional=True)
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        no_id = await plane.produce("t", 0, txn)
        assert no_id.error_code == ErrorCode.transactional_id_authorization_failed
        assert plane.data.partition("t", 0).log.log_end_offset == 0
        with_id = await plane.produce("t", 0, txn, transactional_id="tx")  # no verifier set: accepted
        assert (with_id.error_code, with_id.base_offset) == (ErrorCode.none, 0)


async def test_log_append_time_topic(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("lat", configs={"message.timestamp.type": "LogAppendTime"})
        await plane.create("ct")
        answer = await plane.produce("lat", 0, batch(b"a", ts=5))
        assert answer.log_append_time is not None and answer.log_append_time.timestamp() > 1_600_000_000
        assert (await plane.produce("ct", 0, batch(b"a", ts=5))).log_append_time is None
        stored = next(iter_batches(plane.data.partition("lat", 0).log.read(0)))
        assert stored.is_log_append_time
        ensure_valid(stored)  # raises unless size and CRC are right
        assert stored.max_timestamp == int(answer.log_append_time.timestamp() * 1000)


async def init_pid(plane, version=4, transactional_id=None):
    return await plane.call(req(ApiKey.INIT_PRODUCER_ID, version, transactional_id=transactional_id,
                                transaction_timeout=ms(60000), producer_id=-1, producer_epoch=-1))


def seq_batch(pid, epoch, seq, n=2):
    return build_batch([(None, b"v%d" % (seq + i), 1000 + i) for i in range(n)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq)


async def test_init_producer_id(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        a, b = await init_pid(plane, 0), await init_pid(plane, 5)
        assert (a.error_code, a.producer_epoch, b.producer_epoch) == (ErrorCode.none, 0, 0)
        assert b.producer_id > a.producer_id >= 0
        txn = await init_pid(plane, 4, transactional_id="tx")
        # the transactional path is the transaction coordinator's, which hosts no partition in this plane
        assert (txn.error_code, txn.producer_id) == (ErrorCode.not_coordinator, -1)
        assert (await init_pid(plane, 4, transactional_id="")).error_code == ErrorCode.invalid_request
    async with Plane(str(tmp_path)) as again:  # ids are never reused after a restart
        assert (await init_pid(again)).producer_id > b.producer_id


async def test_idempotent_dedupe_and_sequence_errors(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        pid = (await init_pid(plane)).producer_id
        log = plane.data.partition("t", 0).log
        assert (await plane.produce("t", 0, seq_batch(pid, 0, 0))).base_offset == 0
        assert (await plane.produce("t", 0, seq_batch(pid, 0, 2))).base_offset == 2
        retry = await plane.produce("t", 0, seq_batch(pid, 0, 0))  # retried duplicate: original offsets
        assert (retry.error_code, retry.base_offset, log.log_end_offset) == (ErrorCode.none, 0, 4)
        gap = await plane.produce("t", 0, seq_batch(pid, 0, 7))
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        overlap = await plane.produce("t", 0, seq_batch(pid, 0, 1))  # not a retained batch, not next
        assert overlap.error_code == ErrorCode.out_of_order_sequence_number
        bumped_bad = await plane.produce("t", 0, seq_batch(pid, 1, 4))
        assert bumped_bad.error_code == ErrorCode.out_of_order_sequence_number
        bumped = await plane.produce("t", 0, seq_batch(pid, 1, 0))
        assert (bumped.error_code, bumped.base_offset) == (ErrorCode.none, 4)
        stale = await plane.produce("t", 0, seq_batch(pid, 0, 4))
        assert stale.error_code == ErrorCode.invalid_producer_epoch
        other = await plane.produce("t", 0, seq_batch(pid + 1, 0, 42))  # a new producer may start anywhere
        assert other.error_code == ErrorCode.none
        assert log.log_end_offset == 8
        for seq in range(2, 14, 2):  # only the last 5 batches are retained for dedupe
            assert (await plane.produce("t", 0, seq_batch(pid, 1, seq))).error_code == ErrorCode.none
        # epoch 1 now has batches at seq 0, 2, 4, ..., 12: 0 and 2 fell out of the window
        assert (await plane.produce("t", 0, seq_batch(pid, 1, 2))).error_code == \
            ErrorCode.out_of_order_sequence_number
        assert (await plane.produce("t", 0, seq_batch(pid, 1, 4))).base_offset == 10

    async with Plane(str(tmp_path)) as again:  # state rebuilt from the batch headers in the log
        log = again.data.partition("t", 0).log
        end = log.log_end_offset
        dup = await again.produce("t", 0, seq_batch(pid, 1, 12))
        assert (dup.error_code, dup.base_offset, log.log_end_offset) == (ErrorCode.none, end - 2, end)
        assert (await again.produce("t", 0, seq_batch(pid, 1, 20))).error_code == \
            ErrorCode.out_of_order_sequence_number
        assert (await again.produce("t", 0, seq_batch(pid, 0, 14))).error_code == ErrorCode.invalid_producer_epoch
        assert (await again.produce("t", 0, seq_batch(pid, 1, 14))).base_offset == end


async def test_sequence_wraps_at_int32_max(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        top = 2**31 - 2
        assert (await plane.produce("t", 0, seq_batch(9, 0, top, n=2))).error_code == ErrorCode.none
        assert (await plane.produce("t", 0, seq_batch(9, 0, 0, n=1))).error_code == ErrorCode.none


async def test_a_partition_listed_twice_is_appended_once_with_its_last_batch(tmp_path):
    """Kafka keys a Produce's partitions in a map (KafkaApis.handleProduceRequest): the last listing wins and
    the partition is answered once, at its first place, also when its topic is listed twice."""
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", partitions=2)
        request = req(ApiKey.PRODUCE, 9, acks=-1, timeout=ms(1000), transactional_id=None, topic_data=[
            {"name": "t", "partition_data": [{"index": 0, "records": batch(b"a")},
                                             {"index": 1, "records": batch(b"b")},
                                             {"index": 0, "records": batch(b"c", b"d")}]},
            {"name": "t", "partition_data": [{"index": 1, "records": batch(b"e", b"f", b"g")}]}])
        response = await plane.call(request)
        answers = [(t.name, p.index, p.error_code, p.base_offset) for t in response.responses
                   for p in t.partition_responses]
        assert answers == [("t", 0, ErrorCode.none, 0), ("t", 1, ErrorCode.none, 0)]
        assert plane.data.partition("t", 0).log.log_end_offset == 2  # "c", "d" only
        assert plane.data.partition("t", 1).log.log_end_offset == 3  # "e", "f", "g" only
