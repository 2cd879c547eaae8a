"""OffsetCommit answers where some partitions fail (commit_records' codes list) and the write fails."""

from __future__ import annotations

from kio.schema.errors import ErrorCode as E

from coordinator.offsets.manager import commit_records
from coordinator.records.log_codec import encode_tails
from storage.errors import StorageError
from tests.support.offsets import OffsetsHarness, codes, mixed_commit


def test_answer_lists_codes_only_when_a_partition_fails():
    ok = mixed_commit(7, {0: "", 1: "ok"})
    records, answer, tails = commit_records("g", ok.topics, 5, -1, 4, True)
    assert answer == [("t", [0, 1], None)] and len(records) == 2 and tails == encode_tails(records)
    mixed = mixed_commit(7, {0: "too long", 1: "ok", 2: "too long", 3: ""})
    records, answer, tails = commit_records("g", mixed.topics, 5, -1, 4, True)
    assert answer == [("t", [0, 1, 2, 3], [E.offset_metadata_too_large, E.none, E.offset_metadata_too_large, E.none])]
    assert [r.partition for r in records] == [1, 3] and tails == encode_tails(records)


async def test_a_failed_write_keeps_the_partition_errors_and_maps_the_rest():
    h = OffsetsHarness(offset_metadata_max_bytes=4)
    mixed = mixed_commit(7, {0: "ok", 1: "too long", 2: ""})
    out = h.commit(mixed, complete=False)
    h.log.fail(StorageError("disk gone"))
    assert codes(h.answer(mixed, out)) == {("t", 0): E.not_coordinator, ("t", 1): E.offset_metadata_too_large,
                                           ("t", 2): E.not_coordinator}
