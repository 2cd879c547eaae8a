"""Coordinator records <-> __consumer_offsets key/value bytes, at the log boundary only.

Offset commits are the hot path (every OffsetCommit writes one record per partition,
every load decodes the survivors of millions), so OffsetCommitKey v1 and
OffsetCommitValue v3/v1 go through storage.records' hand-packed codec (byte-identical
to its schema-driven one, which still serves GroupMetadata records and every other
version: keys v0, values v0/v2/v4). KIP-848 consumer-group records (types 3-8, 16) go
through consumer_log_codec, KIP-932 share-group records (types 9-15) through storage.share_group_records;
other types (streams groups...) raise UnknownRecordType.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from struct import Struct

from coordinator.records import consumer_log_codec
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, OffsetValue, Record, ShareGroupRecord
from storage import share_group_records
from storage.batch import record_tail
from storage.consumer_group_records import is_consumer_group_key
from storage.errors import InvalidRecordError
from storage.records import (
    OFFSET_VALUE_V3_PLAIN,
    GroupMetadataKey,
    UnknownRecordType,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    offset_key_bytes,
    offset_value_bytes,
    read_offset_key,
    read_offset_value,
)
from storage.varint import encode_varint

_I = Struct(">i")
_KEY_V1 = b"\x00\x01"


def offset_key(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey v1."""
    return offset_key_bytes(group, topic, partition)


def offset_value(value: OffsetValue) -> bytes:
    """OffsetCommitValue v3, or v1 when an expire timestamp is set (what Kafka writes)."""
    return offset_value_bytes(*value)


def encode(record: Record) -> tuple[bytes, bytes | None]:
    """(key, value or None for a tombstone)."""
    if type(record) is OffsetCommitRecord:
        group, topic, partition, value = record
        return offset_key(group, topic, partition), None if value is None else offset_value(value)
    if type(record) is GroupMetadataRecord:
        return encode_key(GroupMetadataKey(record.group_id)), encode_value(record.value)
    if isinstance(record, ShareGroupRecord):
        return share_group_records.encode(record.key, record.value)
    return consumer_log_codec.encode(record)  # KIP-848 consumer-group records


_KEY_HEADS: dict[tuple[str, str], bytes] = {}
_KEY_HEAD_LIMIT = 10_000  # (group, topic) pairs; ~2 MB at most, cleared when full
# a record's tail from the key's partition on, for a v3 value without metadata: partition,
# valueLength (varint 24), the value, headerCount 0
_PLAIN_TAIL = Struct(">iBhqihqB")
_pack_plain = _PLAIN_TAIL.pack
_PLAIN_VALUE_LENGTH = encode_varint(OFFSET_VALUE_V3_PLAIN.size)[0]
_NO_HEADERS = 0
_NO_HEADER_BYTE = encode_varint(0)
_TOMBSTONE_TAIL = encode_varint(-1) + _NO_HEADER_BYTE  # valueLength -1 (null), headerCount 0


def key_head(group: str, topic: str) -> bytes:
    """The tail of an OffsetCommit record up to its key's partition: keyLength varint and
    the key without its last 4 bytes. Cached per (group, topic). Raises ValueError for a
    name too long for its field."""
    head = _KEY_HEADS.get((group, topic))
    if head is None:
        if len(_KEY_HEADS) >= _KEY_HEAD_LIMIT:
            _KEY_HEADS.clear()
        key = offset_key_bytes(group, topic, 0)
        head = _KEY_HEADS[group, topic] = encode_varint(len(key)) + key[:-4]
    return head


def plain_commit_tail(head: bytes, partition: int, offset: int, epoch: int, commit_ts: int) -> bytes:
    """The record tail of a commit whose value has no metadata and no expire timestamp
    (v3): `head` (key_head) plus one struct pack. What encode_tails gives for it."""
    return head + _pack_plain(partition, _PLAIN_VALUE_LENGTH, 3, offset, epoch, 0, commit_ts, _NO_HEADERS)


def encode_tails(records: list[Record]) -> list[bytes]:
    """[storage.batch.record_tail(*encode(r)) for r in records] (what build_tail_batch
    takes), faster for offset commits: the key up to its partition (with its length
    varint) is cached per (group, topic), and the rest of a value without metadata and
    expire timestamp is one struct pack (plain_commit_tail). Live commits come with their
    tails from commit_records; the log calls this for the other writes."""
    out = []
    pack_partition = _I.pack
    last_group = last_topic = None
    head = b""  # set by the first record: its group is not None
    for record in records:
        if type(record) is not OffsetCommitRecord:
            out.append(record_tail(*encode(record)))
            continue
        group, topic, partition, value = record
        if group is not last_group or topic is not last_topic:  # a write's records share both
            head = key_head(group, topic)
            last_group, last_topic = group, topic
        if value is None:
            out.append(head + pack_partition(partition) + _TOMBSTONE_TAIL)
        elif value[1] or value[4] != -1:
            raw = offset_value(value)
            out.append(head + pack_partition(partition) + encode_varint(len(raw)) + raw + _NO_HEADER_BYTE)
        else:
            out.append(plain_commit_tail(head, partition, value[0], value[3], value[2]))
    return out


def decode(key: bytes, value: bytes | None) -> Record:
    """A record from its key and value bytes. Raises InvalidRecordError (or its subclass
    UnknownRecordType for record types this coordinator does not know, e.g. streams groups)."""
    fields = read_offset_key(key)
    if fields is not None:
        return OffsetCommitRecord(*fields, None if value is None else OffsetValue(*read_offset_value(value)))
    if is_consumer_group_key(key):
        return consumer_log_codec.decode(key, value)
    if share_group_records.is_share_group_key(key):
        share_key = share_group_records.decode_key(key)
        decoded = share_group_records.decode_value(share_key, value)
        return ShareGroupRecord(share_key, None if decoded is None else decoded[1])
    _version, parsed = decode_key(key)
    if type(parsed) is GroupMetadataKey:
        decoded = decode_value(parsed, value)
        return GroupMetadataRecord(parsed.group, None if decoded is None else decoded[1])
    return OffsetCommitRecord(parsed.group, parsed.topic, parsed.partition,
                              None if value is None else OffsetValue(*read_offset_value(value)))


def decode_all(pairs: Iterable[tuple[bytes, bytes | None]]) -> Iterator[Record]:
    """decode() over (key, value) pairs, skipping unknown record types; faster for offset
    commits (loading): (group, topic) is decoded once per key prefix, and a v3 value
    without metadata is one struct unpack."""
    names: dict[bytes, tuple[str, str]] = {}
    partition_of = _I.unpack_from
    plain = OFFSET_VALUE_V3_PLAIN.unpack
    new = tuple.__new__  # the NamedTuples without their Python-level __new__
    for key, value in pairs:
        if key[:2] == _KEY_V1:
            cut = len(key) - 4
            name = names.get(key[:cut])
            if name is not None:
                if value is None:
                    yield new(OffsetCommitRecord, (*name, partition_of(key, cut)[0], None))
                    continue
                if len(value) == 24:
                    version, offset, epoch, mlen, commit_ts = plain(value)
                    if version == 3 and mlen == 0:
                        yield new(OffsetCommitRecord, (*name, partition_of(key, cut)[0],
                                                       new(OffsetValue, (offset, "", commit_ts, epoch, -1))))
                        continue
            else:
                fields = read_offset_key(key)  # checks the whole key: the prefix is valid from now on
                assert fields is not None  # a v1 key
                names[key[:cut]] = fields[0], fields[1]
        try:
            yield decode(key, value)
        except UnknownRecordType:
            continue


__all__ = ["encode", "encode_tails", "key_head", "plain_commit_tail", "decode", "decode_all", "offset_key",
           "offset_value", "UnknownRecordType", "InvalidRecordError"]
