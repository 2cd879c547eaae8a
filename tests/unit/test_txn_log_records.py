"""__transaction_state's records against bytes built by hand from Kafka's TransactionLogKey.json and
TransactionLogValue.json (v0 classic, v1 flexible with tagged fields), round trips, tombstones, wrong
versions, and transaction_partition_for against Java's String.hashCode (values printed by Java 17)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, strategies as st

from rules.placement import (
    DEFAULT_TXN_PARTITIONS,
    TRANSACTION_STATE_TOPIC,
    partition_for,
    transaction_partition_for,
)
from storage.errors import InvalidRecordError, RecordError
from storage.txn_log_records import (
    DEFAULT_VALUE_VERSION,
    TXN_STATUS_NAMES,
    TxnLogKey,
    TxnLogValue,
    TxnPartitions,
    UnknownTxnRecordVersion,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
    status_name,
    value_json,
    value_version_for,
)


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


ONGOING = TxnLogValue(producer_id=4000, producer_epoch=3, transaction_timeout_ms=60000, transaction_status=1,
                      transaction_partitions=(TxnPartitions("orders", (0, 2)), TxnPartitions("__consumer_offsets",
                                                                                             (17,))),
                      transaction_last_update_timestamp_ms=1700000000500, transaction_start_timestamp_ms=1700000000000)

# TransactionLogValue v0: int16 version, ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32,
# TransactionStatus int8, TransactionPartitions (int32 count; Topic int16-length string, PartitionIds int32 count +
# int32s), TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64.
ONGOING_V0 = (i16(0) + i64(4000) + i16(3) + i32(60000) + i8(1)
              + i32(2) + i16(6) + b"orders" + i32(2) + i32(0) + i32(2)
              + i16(18) + b"__consumer_offsets" + i32(1) + i32(17)
              + i64(1700000000500) + i64(1700000000000))

# v1 (flexible): compact string = uvarint(len + 1), compact array = uvarint(count + 1), each struct ends with its
# tagged-field section (uvarint count, then uvarint tag, uvarint size, bytes), tagged fields in tag order.
ONGOING_V1 = (i16(1) + i64(4000) + i16(3) + i32(60000) + i8(1)
              + b"\x03" + b"\x07orders" + b"\x03" + i32(0) + i32(2) + b"\x00"
              + b"\x13__consumer_offsets" + b"\x02" + i32(17) + b"\x00"
              + i64(1700000000500) + i64(1700000000000)
              + b"\x00")  # no tagged field: all at their defaults


def test_key_bytes():
    assert encode_txn_key(TxnLogKey("my-txn")) == i16(0) + i16(6) + b"my-txn"
    assert decode_txn_key(i16(0) + i16(6) + b"my-txn") == TxnLogKey("my-txn")
    assert encode_txn_key(TxnLogKey("\u00e9")) == i16(0) + i16(2) + b"\xc3\xa9"  # UTF-8 length


def test_key_wrong_version_and_damage():
    with pytest.raises(UnknownTxnRecordVersion):
        decode_txn_key(i16(1) + i16(2) + b"tx")
    with pytest.raises(UnknownTxnRecordVersion):
        decode_txn_key(i16(-1))
    with pytest.raises(InvalidRecordError):
        decode_txn_key(b"\x00")
    with pytest.raises(InvalidRecordError):
        decode_txn_key(i16(0) + i16(5) + b"tx")  # runs past the end
    with pytest.raises(InvalidRecordError):
        decode_txn_key(i16(0) + i16(2) + b"tx!")  # trailing bytes
    assert issubclass(UnknownTxnRecordVersion, RecordError)


def test_value_v0_bytes():
    assert encode_txn_value(ONGOING, 0) == ONGOING_V0
    assert decode_txn_value(ONGOING_V0) == (0, ONGOING)


def test_value_v1_bytes_without_tagged_fields():
    assert encode_txn_value(ONGOING, 1) == ONGOING_V1
    assert decode_txn_value(ONGOING_V1) == (1, ONGOING)


def test_default_version_is_what_a_transaction_version_1_cluster_writes():
    assert DEFAULT_VALUE_VERSION == 1 == value_version_for(1) == value_version_for(2)
    assert value_version_for(0) == 0  # Kafka 3.9 in production (transaction.version 0)
    assert encode_txn_value(ONGOING) == ONGOING_V1


def test_empty_state_has_null_partitions():
    # Kafka's valueToBytes writes a null TransactionPartitions array for Empty.
    empty = TxnLogValue(9, 0, 30000, 0, None, 5, -1)
    v0 = i16(0) + i64(9) + i16(0) + i32(30000) + i8(0) + i32(-1) + i64(5) + i64(-1)
    v1 = i16(1) + i64(9) + i16(0) + i32(30000) + i8(0) + b"\x00" + i64(5) + i64(-1) + b"\x00"
    assert encode_txn_value(empty, 0) == v0 and encode_txn_value(empty, 1) == v1
    assert decode_txn_value(v0) == (0, empty) and decode_txn_value(v1) == (1, empty)
    no_partitions = TxnLogValue(9, 0, 30000, 4, (), 5, 1)
    assert encode_txn_value(no_partitions, 1) == (i16(1) + i64(9) + i16(0) + i32(30000) + i8(4) + b"\x01"
                                                  + i64(5) + i64(1) + b"\x00")
    assert decode_txn_value(encode_txn_value(no_partitions, 0))[1].transaction_partitions == ()


TAGGED_V1 = (i16(1) + i64(7) + i16(1) + i32(1000) + i8(2)
             + b"\x02" + b"\x02t" + b"\x02" + i32(5) + b"\x00"
             + i64(20) + i64(10)
             + b"\x04"  # four tagged fields, in tag order
             + b"\x00\x08" + i64(6)  # PreviousProducerId (tag 0)
             + b"\x01\x08" + i64(8)  # NextProducerId (tag 1)
             + b"\x02\x02" + i16(2)  # ClientTransactionVersion (tag 2)
             + b"\x09\x03" + b"abc")  # a tag this version does not know: kept as bytes


def test_value_v1_tagged_fields_and_an_unknown_tag():
    version, value = decode_txn_value(TAGGED_V1)
    assert version == 1
    assert value == TxnLogValue(7, 1, 1000, 2, (TxnPartitions("t", (5,)),), 20, 10, previous_producer_id=6,
                                next_producer_id=8, client_transaction_version=2)
    assert value.extra == {9: b"abc"}
    assert encode_txn_value(value, 1) == TAGGED_V1  # the unknown tag is written back, in tag order
    plain = TxnLogValue(7, 1, 1000, 2, (TxnPartitions("t", (5,)),), 20, 10, previous_producer_id=6,
                        next_producer_id=8, client_transaction_version=2)
    tags_at = TAGGED_V1.index(b"\x04\x00\x08")
    assert encode_txn_value(plain, 1) == TAGGED_V1[:tags_at] + b"\x03" + TAGGED_V1[tags_at + 1:-5]


def test_unknown_tags_are_written_in_tag_order_with_uvarint_tags():
    value = TxnLogValue(1, 0, 10, 1, (), 0, 0, next_producer_id=3, extra={0x85: b"", 2_000: b"z"})
    data = encode_txn_value(value, 1)
    tags = data[2 + 8 + 2 + 4 + 1 + 1 + 8 + 8:]
    assert tags == b"\x03" + b"\x01\x08" + i64(3) + b"\x85\x01\x00" + b"\xd0\x0f\x01z"  # uvarint tags
    assert decode_txn_value(data)[1].extra == {0x85: b"", 2_000: b"z"}


def test_v0_refuses_tagged_fields_it_cannot_carry():
    for value in (TxnLogValue(1, 0, 10, 1, (), previous_producer_id=4),
                  TxnLogValue(1, 0, 10, 1, (), next_producer_id=4),
                  TxnLogValue(1, 0, 10, 1, (), client_transaction_version=2),
                  TxnLogValue(1, 0, 10, 1, (), extra={7: b"x"})):
        with pytest.raises(ValueError):
            encode_txn_value(value, 0)


def test_tombstone_and_wrong_versions():
    assert encode_txn_value(None) is None and encode_txn_value(None, 0) is None
    for version in (2, -1, 5):
        with pytest.raises(UnknownTxnRecordVersion):
            encode_txn_value(ONGOING, version)
        with pytest.raises(UnknownTxnRecordVersion):
            decode_txn_value(i16(version) + ONGOING_V0[2:])
    with pytest.raises(InvalidRecordError):
        decode_txn_value(b"\x00")
    with pytest.raises(InvalidRecordError):
        decode_txn_value(ONGOING_V0[:-3])  # truncated
    with pytest.raises(InvalidRecordError):
        decode_txn_value(TAGGED_V1[:-1])  # the unknown tag's bytes run past the end


def test_trailing_bytes_of_a_value_are_ignored_as_kafka_does():
    assert decode_txn_value(ONGOING_V0 + b"\x00\x01") == (0, ONGOING)


def test_json_names_and_order_as_kafka_converter():
    assert list(value_json(ONGOING, 1)) == ["producerId", "producerEpoch", "transactionTimeoutMs",
                                            "transactionStatus", "transactionPartitions",
                                            "transactionLastUpdateTimestampMs", "transactionStartTimestampMs"]
    tagged = value_json(decode_txn_value(TAGGED_V1)[1], 1)
    assert list(tagged)[:3] == ["producerId", "previousProducerId", "nextProducerId"]
    assert tagged["clientTransactionVersion"] == 2
    assert tagged["transactionPartitions"] == [{"topic": "t", "partitionIds": [5]}]
    assert tagged["unknownTaggedFields"] == {"9": "616263"}


def test_status_names():
    assert [TXN_STATUS_NAMES[i] for i in range(8)] == [
        "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
        "PrepareEpochFence"]
    assert status_name(3) == "PrepareAbort" and status_name(12) == "Unknown(12)"


partitions = st.lists(st.builds(TxnPartitions, st.text(min_size=1, max_size=10),
                                st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)), max_size=3).map(tuple)
int64 = st.integers(-(2**63), 2**63 - 1)
base = dict(producer_id=int64, producer_epoch=st.integers(-(2**15), 2**15 - 1),
            transaction_timeout_ms=st.integers(-(2**31), 2**31 - 1), transaction_status=st.integers(0, 7),
            transaction_partitions=st.none() | partitions, transaction_last_update_timestamp_ms=int64,
            transaction_start_timestamp_ms=int64)


@given(st.builds(TxnLogValue, **base))
def test_v0_round_trip(value):
    data = encode_txn_value(value, 0)
    assert decode_txn_value(data) == (0, value)


@given(st.builds(TxnLogValue, **base, previous_producer_id=int64, next_producer_id=int64,
                 client_transaction_version=st.integers(0, 2),
                 extra=st.dictionaries(st.integers(3, 5000), st.binary(max_size=5), max_size=3)))
def test_v1_round_trip(value):
    data = encode_txn_value(value, 1)
    version, back = decode_txn_value(data)
    assert version == 1 and back == value and back.extra == value.extra
    assert encode_txn_value(back, 1) == data


@given(st.text(max_size=40))
def test_key_round_trip(txn_id):
    assert decode_txn_key(encode_txn_key(TxnLogKey(txn_id))) == TxnLogKey(txn_id)


JAVA = [  # (transactional id, String.hashCode, partition of 50, partition of 3), printed by Java 17
    ("", 0, 0, 0),
    ("my-txn", -1061187895, 45, 1),
    ("txn-1", 110810510, 10, 2),
    ("transactional-id-0", 1051133890, 40, 1),
    ("producer-\u00e9", 1752578414, 14, 2),
    ("\U0001F600tx", 1703759655, 5, 0),  # a surrogate pair: two UTF-16 code units
    ("polygenelubricants", -2147483648, 0, 0),  # Utils.abs(Integer.MIN_VALUE) is 0
    ("app-0_0", -795167179, 29, 1),
    ("tx", 3716, 16, 2),
]


@pytest.mark.parametrize("txn_id, java_hash, p50, p3", JAVA)
def test_transaction_partition_for_matches_java(txn_id, java_hash, p50, p3):
    assert transaction_partition_for(txn_id) == p50
    assert transaction_partition_for(txn_id, 3) == p3
    assert transaction_partition_for(txn_id, 2**31 - 1) == (abs(java_hash) if java_hash != -2**31 else 0)


def test_transaction_topic_constants():
    assert TRANSACTION_STATE_TOPIC == "__transaction_state"
    assert DEFAULT_TXN_PARTITIONS == 50
    assert transaction_partition_for("my-txn") == partition_for("my-txn")  # the same rule as groups
