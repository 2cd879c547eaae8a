"""Records a topic refuses (LogValidator.validateRecord): a keyless record on a compacted topic
(INVALID_RECORD) and a timestamp outside message.timestamp.before/after.max.ms (INVALID_TIMESTAMP),
answered with KIP-467's record_errors and error_message (Produce v8+), failing only that
partition's batch."""

from __future__ import annotations

import time

import pytest
from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from storage.batch import build_batch
from tests.support.data_plane import Plane, ms, req

E = ErrorCode
KEYLESS = "Compacted topic cannot accept message without key in topic partition {}."


def record_errors(part) -> list[tuple[int, str | None]]:
    return [(e.batch_index, e.batch_index_error_message) for e in part.record_errors]


@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
async def test_a_keyless_record_on_a_compacted_topic_is_invalid_record(tmp_path, policy):
    async with Plane(str(tmp_path)) as plane:
        assert (await plane.create("c", 2, {"cleanup.policy": policy})).error_code == E.none
        now = int(time.time() * 1000)
        part = await plane.produce("c", 0, build_batch([(b"k", b"v", now), (None, b"v", now)]))
        assert part.error_code == E.invalid_record and part.base_offset == -1
        message = KEYLESS.format("c-0")
        assert record_errors(part) == [(1, message)]
        assert part.error_message == ("One or more records have been rejected due to 1 record errors in total, "
                                      f"and only showing the first three errors at most: "
                                      f"[RecordError(batchIndex=1, message='{message}')]")
        keyed = await plane.produce("c", 0, build_batch([(b"k", b"v", now)]))
        assert keyed.error_code == E.none and keyed.base_offset == 0  # nothing of the refused batch was kept


async def test_only_the_refusing_partition_fails_in_a_request(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("c", 2, {"cleanup.policy": "compact"})
        await plane.create("d", 1)
        keyless = build_batch([(None, b"v", 1)])
        response = await plane.call(req(ApiKey.PRODUCE, 9, acks=-1, timeout=ms(5000), transactional_id=None,
                                        topic_data=[
                                            {"name": "c", "partition_data": [
                                                {"index": 0, "records": keyless},
                                                {"index": 1, "records": build_batch([(b"k", b"v", 1)])}]},
                                            {"name": "d", "partition_data": [{"index": 0, "records": keyless}]}]))
        got = {(t.name, p.index): (p.error_code, len(p.record_errors)) for t in response.responses
               for p in t.partition_responses}
        assert got == {("c", 0): (E.invalid_record, 1), ("c", 1): (E.none, 0), ("d", 0): (E.none, 0)}


async def test_many_keyless_records_show_three_in_the_message(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("c", 1, {"cleanup.policy": "compact"})
        part = await plane.produce("c", 0, build_batch([(None, b"v", 1)] * 5))
        assert [i for i, _ in record_errors(part)] == [0, 1, 2, 3, 4]
        assert "due to 5 record errors in total" in part.error_message
        assert part.error_message.count("RecordError(") == 3


async def test_old_produce_versions_get_the_code_without_record_errors(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("c", 1, {"cleanup.policy": "compact"})
        part = await plane.produce("c", 0, build_batch([(None, b"v", 1)]), version=7)
        assert part.error_code == E.invalid_record


@pytest.mark.parametrize("configs", [{"message.timestamp.before.max.ms": "60000"},
                                     {"message.timestamp.difference.max.ms": "60000"}])
async def test_a_timestamp_too_old_is_invalid_timestamp(tmp_path, configs):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("ts", 1, configs)
        now = int(time.time() * 1000)
        old = now - 3_600_000
        part = await plane.produce("ts", 0, build_batch([(b"k", b"v", now), (b"k", b"v", old)]))
        assert part.error_code == E.invalid_timestamp
        assert part.error_message == "One or more records have been rejected due to invalid timestamp"
        [(index, message)] = record_errors(part)
        assert index == 1 and message.startswith(f"Timestamp {old} of message with offset 1 is out of range. "
                                                 "The timestamp should be within [")
        low, high = (int(x) for x in message.rsplit("[", 1)[1].rstrip("]").split(", "))
        # the bounds come from the server's clock, read after `now`: at or after now - 60000 / now + 60000
        assert 0 <= low - (now - 60000) < 5000
        if "message.timestamp.difference.max.ms" in configs:
            assert 0 <= high - (now + 60000) < 5000
        else:
            assert high < 0  # now + Long.MAX_VALUE, wrapped as Java prints it
        assert (await plane.produce("ts", 0, build_batch([(b"k", b"v", now)]))).error_code == E.none


async def test_a_timestamp_too_far_ahead_and_log_append_time_topics(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("ahead", 1, {"message.timestamp.after.max.ms": "1000"})
        await plane.create("lat", 1, {"message.timestamp.after.max.ms": "1000",
                                      "message.timestamp.type": "LogAppendTime"})
        future = int(time.time() * 1000) + 3_600_000
        part = await plane.produce("ahead", 0, build_batch([(b"k", b"v", future)]))
        assert part.error_code == E.invalid_timestamp and record_errors(part)[0][0] == 0
        assert (await plane.produce("ahead", 0, build_batch([(b"k", b"v", -1)]))).error_code == E.none
        # LogAppendTime: the server's clock replaces the timestamps, Kafka does not check them
        assert (await plane.produce("lat", 0, build_batch([(b"k", b"v", future)]))).error_code == E.none


async def test_a_keyless_record_on_a_delete_topic_is_fine(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("d", 1)
        assert (await plane.produce("d", 0, build_batch([(None, b"v", 1)]))).error_code == E.none


async def test_bad_values_of_the_timestamp_configs_are_invalid_config(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        created = await plane.create("bad", 1, {"message.timestamp.before.max.ms": "-5"})
        assert created.error_code == E.invalid_config
