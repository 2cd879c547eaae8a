"""storage.latest.LatestRecords: folding a log to its latest record per key, replayed, gives
the state a replay of every record gives; the fast record reader agrees with the general one;
bad bytes raise typed errors."""

from __future__ import annotations

import gzip
import struct

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings, strategies as st

from coordinator.groups.settings import GroupSettings
from coordinator.records import log_codec
from coordinator.records.types import (
    ConsumerGroupEpochRecord,
    ConsumerGroupMemberSubscriptionRecord,
    GroupMetadataRecord,
    OffsetCommitRecord,
    OffsetValue,
)
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from storage.batch import CONTROL_MASK, build_batch, decode_records, iter_batches
from storage.errors import CorruptRecordError, InvalidRecordError
from storage.latest import LatestRecords
from storage.record_readers import AcceleratedRecordReader, PythonRecordReader, RecordReader, default_reader
from storage.records import GroupMetadataValue, MemberMetadata
from tests.support.examples import examples

READERS = [default_reader(), PythonRecordReader()]
GROUPS = ["g1", "g2", "g3"]
MEMBER = MemberMetadata("m-1", "client", "/10.0.0.1", 10_000, b"\x00\x00\x00\x00\x00\x01\x00\x01a\x00\x00\x00\x00",
                        b"", None, 20_000)
UNKNOWN_KEY = b"\x7f\xffa-future-thing"  # a type no Kafka version writes (11, used before, is a share record now)


def record_strategy():
    commit = st.builds(lambda g, t, p, o, m: OffsetCommitRecord(g, t, p, OffsetValue(o, m, 1_700_000_000_000 + o)),
                       st.sampled_from(GROUPS), st.sampled_from(["a", "b"]), st.integers(0, 2),
                       st.integers(0, 10**12), st.sampled_from(["", "m", "x" * 70]))
    tombstone = st.builds(lambda g, t, p: OffsetCommitRecord(g, t, p, None),
                          st.sampled_from(GROUPS), st.sampled_from(["a", "b"]), st.integers(0, 2))
    group = st.builds(lambda g, gen, members: GroupMetadataRecord(g, GroupMetadataValue(
        "consumer", gen, "range" if members else None, "m-1" if members else None,
        (MEMBER,) if members else (), 1_700_000_000_000)),
        st.sampled_from(GROUPS), st.integers(0, 5), st.booleans())
    group_tombstone = st.builds(lambda g: GroupMetadataRecord(g, None), st.sampled_from(GROUPS))
    return st.one_of(commit, commit, commit, tombstone, group, group_tombstone)


def pairs_of(records: list) -> list[tuple[bytes | None, bytes | None]]:
    return [log_codec.encode(r) for r in records]


def gzip_batch(plain: bytes) -> bytes:
    buf = bytearray(plain[:61] + gzip.compress(plain[61:]))
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">h", buf, 21, 1)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def control_batch() -> bytes:
    buf = bytearray(build_batch([(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", 0)]))
    struct.pack_into(">h", buf, 21, CONTROL_MASK)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def write_log(pairs: list, layout: list[int], styles: list[int]) -> bytes:
    """Batches of the sizes in `layout` in the styles: 0 plain, 1 with headers and spread
    timestamps (multi-byte varints), 2 gzip; a control batch after every third."""
    out = bytearray()
    offset = i = n = 0
    while i < len(pairs):
        size = layout[n % len(layout)]
        style = styles[n % len(styles)]
        chunk = pairs[i:i + size]
        if style == 1:
            rows = [(k, v, 1_700_000_000_000 + j * 1000, (("h", b"v"),)) for j, (k, v) in enumerate(chunk)]
        else:
            rows = [(k, v, 1_700_000_000_000) for k, v in chunk]
        batch = build_batch(rows, offset)
        out += gzip_batch(batch) if style == 2 else batch
        offset += len(chunk)
        i += size
        n += 1
        if n % 3 == 0:
            out += build_control(offset)
            offset += 1
    return bytes(out)


def build_control(offset: int) -> bytes:
    buf = bytearray(control_batch())
    struct.pack_into(">q", buf, 0, offset)
    return bytes(buf)


def state(coordinator: GroupCoordinator) -> tuple[dict, dict]:
    groups, offsets = {}, {}
    for shard in coordinator.all_shards():
        for gid, g in shard.groups.items():
            groups[gid] = (g.state.value, g.generation_id, g.protocol_type, g.protocol_name, tuple(g.members))
        for gid, c in shard.consumer_groups.items():  # KIP-848: every member as replayed, the targets, the epochs
            groups[gid] = (c.state.value, c.group_epoch, c.assignment_epoch, sorted(c.members.items()),
                           sorted(c.target_assignment.items()), c.partition_epochs.snapshot())
        for gid in shard.offsets.by_group:
            for topic, p, v in shard.offsets.items(gid):
                offsets[(gid, topic, p)] = tuple(v)
    return groups, offsets


def replay_all(data: bytes, start: int = 0, min_timestamp: int | None = None) -> tuple[dict, dict]:
    """The reference: decode every record and replay each one."""
    coordinator = GroupCoordinator(GroupSettings(), FakeScheduler())
    shard = coordinator.shard_for("any")
    for batch in iter_batches(data):
        if batch.is_control:
            continue
        for r in decode_records(batch):
            if r.offset < start or r.key is None or (min_timestamp is not None and r.timestamp < min_timestamp):
                continue
            try:
                shard.replay(log_codec.decode(r.key, r.value))
            except log_codec.UnknownRecordType:
                continue
    return state(coordinator)


def replay_folded(data: bytes, chunk: int, start: int = 0, min_timestamp: int | None = None,
                  reader: RecordReader | None = None) -> tuple[dict, dict]:
    """What the loader does: fold chunk by chunk, replay what is sealed, then the rest."""
    coordinator = GroupCoordinator(GroupSettings(), FakeScheduler())
    shard = coordinator.shard_for("any")
    fold = LatestRecords(start, min_timestamp, reader)
    batches = list(iter_batches(data))
    i = 0
    while i < len(batches):
        piece = bytes(b"".join(bytes(b.raw()) for b in batches[i:i + chunk]))
        fold.add(piece)
        for record in log_codec.decode_all(fold.take_sealed()):
            shard.replay(record)
        i += chunk
    for record in log_codec.decode_all(fold.take_all()):
        shard.replay(record)
    return state(coordinator)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_strategy(), min_size=1, max_size=120),
       st.lists(st.sampled_from([1, 3, 50, 70]), min_size=1, max_size=4),
       st.lists(st.sampled_from([0, 0, 1, 2]), min_size=1, max_size=4),
       st.integers(1, 4), st.booleans(), st.sampled_from(READERS))
def test_folded_replay_equals_full_replay(records, layout, styles, chunk, extra_types, reader):
    pairs = pairs_of(records)
    if extra_types:  # records a classic coordinator skips: unknown type, null key
        pairs[len(pairs) // 2:len(pairs) // 2] = [(UNKNOWN_KEY, b"\x00\x00x"), (UNKNOWN_KEY, None), (None, b"v")]
    data = write_log(pairs, layout, styles)
    assert replay_folded(data, chunk, reader=reader) == replay_all(data)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(record_strategy(), min_size=1, max_size=60), st.integers(0, 70), st.sampled_from([None, 30]))
def test_start_offset_and_timestamp_filters(records, start, min_index):
    pairs = pairs_of(records)
    data = write_log(pairs, [7], [1])  # timestamps 1000 ms apart within each batch
    min_ts = None if min_index is None else 1_700_000_000_000 + min_index * 100
    assert replay_folded(data, 2, start, min_ts) == replay_all(data, start, min_ts)


def test_the_c_parser_is_there():
    # a dependency (pyproject.toml): loading needs its speed
    assert isinstance(default_reader(), AcceleratedRecordReader)


@pytest.mark.parametrize("reader", READERS)
def test_fast_path_reads_what_the_general_decoder_reads(reader):
    """Values and keys of every size around the one-byte varint limit, tombstones, many
    records per batch (two-byte offset deltas): the latest pair per key is the decoder's."""
    pairs = [(b"k%03d" % (i % 97) + b"x" * (i % 80), None if i % 11 == 0 else b"v" * (i % 150)) for i in range(400)]
    data = write_log(pairs, [1, 63, 64, 65, 200], [0])
    expected: dict = {}
    for batch in iter_batches(data):
        if not batch.is_control:
            for r in decode_records(batch):
                expected.pop(r.key, None)
                expected[r.key] = r.value
    fold = LatestRecords(reader=reader)
    assert fold.add(data) == list(iter_batches(data))[-1].next_offset
    got = dict(fold.take_all())
    assert got == expected
    assert fold.records == 400


@pytest.mark.parametrize("tombstone", [GroupMetadataRecord("g", None), ConsumerGroupEpochRecord("g", None)])
def test_group_tombstone_seals_what_came_before(tombstone):
    before = log_codec.encode(OffsetCommitRecord("g", "t", 0, OffsetValue(1, "", 5)))
    barrier = log_codec.encode(tombstone)
    after = log_codec.encode(OffsetCommitRecord("h", "t", 0, OffsetValue(2, "", 5)))
    fold = LatestRecords()
    fold.add(build_batch([(*before, 1), (*barrier, 1), (*after, 1)]))
    assert list(fold.take_sealed()) == [before, barrier]
    assert list(fold.take_sealed()) == []
    assert list(fold.take_all()) == [after]


def test_other_consumer_group_tombstones_are_no_barrier():
    member = log_codec.encode(ConsumerGroupMemberSubscriptionRecord("g", "m", None))
    epoch = log_codec.encode(ConsumerGroupEpochRecord("g", 4))
    fold = LatestRecords()
    fold.add(build_batch([(*epoch, 1), (*member, 1)]))
    assert list(fold.take_sealed()) == []
    assert list(fold.take_all()) == [epoch, member]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("layout", [[1], [3], [50]])
def test_a_consumer_group_whose_partitions_moved_folds_as_it_replays(reader, layout):
    """A member leaves and its partitions go to the others: its records' tombstones must not bring its old
    assignment back before theirs (a replayed old value would own partitions the others own since)."""
    from tests.support.consumer_groups import Consumer, ConsumerHarness

    h = ConsumerHarness()
    members = [Consumer(h) for _ in range(3)]
    for _ in range(5):
        for m in members:
            m.beat()
    h.heartbeat(members[0].member_id, -1)
    late = Consumer(h)
    for _ in range(5):
        for m in [*members[1:], late]:
            m.beat()
    data = write_log(pairs_of(h.records()), layout, [0])
    folded = replay_folded(data, 2, reader=reader)
    assert folded == replay_all(data)
    assert len(folded[0]["g"][3]) == 3  # the three members that stayed


@pytest.mark.parametrize("reader", READERS)
def test_next_offset_and_partial_tail(reader):
    a = build_batch([(b"k", b"v", 1)] * 3, 10)
    b = build_batch([(b"k", b"w", 1)], 13)
    fold = LatestRecords(10, reader=reader)
    assert fold.add(a + b[:-1]) == 13  # the torn batch is left for the next read
    assert fold.add(b) == 14
    assert dict(fold.take_all()) == {b"k": b"w"}
    assert fold.records == 4 and fold.bytes == len(a) + len(b)


@pytest.mark.parametrize("reader", READERS)
def test_bad_bytes_raise_typed_errors(reader):
    good = bytearray(build_batch([(b"key", b"value", 1)] * 4))
    crc = bytearray(good)
    crc[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        LatestRecords().add(bytes(crc))
    magic = bytearray(good)
    magic[16] = 1
    with pytest.raises(InvalidRecordError):
        LatestRecords().add(bytes(magic))
    length = bytearray(good)
    struct.pack_into(">i", length, 8, 10)
    with pytest.raises(CorruptRecordError):
        LatestRecords().add(bytes(length))
    for position in range(61, len(good)):  # any byte of the records, CRC fixed up: typed error or a clean read
        for flip in (0x01, 0x40, 0x80):
            bad = bytearray(good)
            bad[position] ^= flip
            struct.pack_into(">I", bad, 17, crc32c(bytes(bad[21:])))
            try:
                LatestRecords(reader=reader).add(bytes(bad))
            except InvalidRecordError:
                pass


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_strategy(), min_size=1, max_size=120),
       st.lists(st.sampled_from([1, 3, 50, 70]), min_size=1, max_size=4),
       st.lists(st.sampled_from([0, 1, 2]), max_size=3))
def test_both_readers_keep_the_same_survivors(records, layout, styles):
    """The same log through the accelerated and the Python reader: the same parts, pairs and order."""
    data = write_log(pairs_of(records), layout, [0, *styles])  # the first batch plain: the readers read it
    folds = [LatestRecords(reader=reader) for reader in (default_reader(), PythonRecordReader())]
    assert isinstance(folds[0].reader, AcceleratedRecordReader)
    results = []
    for fold in folds:
        next_offset = fold.add(data)
        results.append((next_offset, fold.records, list(fold.take_sealed()), list(fold.take_all())))
    assert results[0] == results[1]
    assert results[0][2] or results[0][3]  # something survived: not a comparison of two empty folds
