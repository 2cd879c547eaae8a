"""Names derived from a partition directory stay within one file-name component (255 bytes),
and a renamed log never writes into its old directory again."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from coordinator.data_plane.plane import MAX_PARTITIONS_PER_TOPIC
from coordinator.data_plane.topic_catalog import MAX_NAME_LENGTH
from storage.batch import build_batch
from storage.log import PartitionLog
from storage.log_dirs import MAX_NAME_BYTES, delete_dir_name, is_delete_dir, partition_dir_name

HEX = uuid.UUID(int=0xABC).hex


@pytest.mark.parametrize("length", [1, 100, 213, 214, 230, 248, MAX_NAME_LENGTH])
@pytest.mark.parametrize("partition", [0, 7, MAX_PARTITIONS_PER_TOPIC - 1, 2**31 - 1])
def test_delete_dir_name_fits_and_keeps_the_kafka_shape(length, partition):
    topic = "t" * length
    name = delete_dir_name(topic, partition, HEX)
    tail = f"-{partition}.{HEX}-delete"
    assert len(name.encode()) <= MAX_NAME_BYTES and name.endswith(tail) and is_delete_dir(name)
    head = name[:-len(tail)]
    assert topic.startswith(head)
    # Kafka cuts the topic only as much as needed: the whole topic when it fits, else exactly 255
    assert head == topic if len(topic) + len(tail) <= MAX_NAME_BYTES else len(name) == MAX_NAME_BYTES


def test_cut_names_stay_distinct_by_their_unique_id():
    topic = "y" * MAX_NAME_LENGTH
    names = {delete_dir_name(topic, 3, uuid.uuid4().hex) for _ in range(20)}
    assert len(names) == 20


def test_every_legal_partition_dir_fits():
    assert len(partition_dir_name("z" * MAX_NAME_LENGTH, MAX_PARTITIONS_PER_TOPIC - 1)) <= MAX_NAME_BYTES


def test_the_longest_delete_name_can_really_be_created(tmp_path):
    topic = "x" * MAX_NAME_LENGTH
    source = tmp_path / partition_dir_name(topic, MAX_PARTITIONS_PER_TOPIC - 1)
    source.mkdir()
    target = tmp_path / delete_dir_name(topic, MAX_PARTITIONS_PER_TOPIC - 1, uuid.uuid4().hex)
    os.rename(source, target)  # ENAMETOOLONG before the cut
    assert target.is_dir()


async def test_a_renamed_log_writes_nothing_into_a_directory_recreated_under_its_old_name(tmp_path):
    old = str(tmp_path / "t-0")
    lg = PartitionLog.open(old, fsync=lambda fd: None)
    for i in range(50):  # enough bytes for index entries, which close() writes by path
        lg.append(build_batch([(None, b"v" * 200, 1000 + i)]))
    await lg.flush()
    doomed = str(tmp_path / delete_dir_name("t", 0, HEX))
    lg.rename_dir(doomed)
    os.mkdir(old)  # a topic re-created under the same name
    await lg.close()
    assert os.listdir(old) == []
    assert sorted(os.listdir(doomed)) == ["00000000000000000000.index", "00000000000000000000.log",
                                          "00000000000000000000.timeindex"]


async def test_the_longest_partition_dir_takes_every_file_the_log_derives_and_its_delete_name(tmp_path):
    topic, partition = "q" * MAX_NAME_LENGTH, MAX_PARTITIONS_PER_TOPIC - 1
    path = str(tmp_path / partition_dir_name(topic, partition))
    lg = PartitionLog.open(path, segment_bytes=4096, fsync=lambda fd: None)
    for i in range(40):  # several rolls: rolled segments with their index files
        lg.append(build_batch([(None, b"v" * 300, 1000 + i)]))
    await lg.flush()
    lg.advance_log_start(5)
    await lg.checkpoint_log_start()  # the checkpoint's temp file, then its rename
    lg.rename_dir(str(tmp_path / delete_dir_name(topic, partition, HEX)))
    await lg.close()
    (doomed,) = os.listdir(tmp_path)
    assert is_delete_dir(doomed) and len(os.listdir(tmp_path / doomed)) > 6


async def test_segments_leaving_by_retention_are_unlinked_where_a_deletion_renamed_them(tmp_path, monkeypatch):
    old = str(tmp_path / "t-0")
    lg = PartitionLog.open(old, segment_bytes=4096, fsync=lambda fd: None)
    for i in range(40):
        lg.append(build_batch([(None, b"v" * 300, 1000 + i)]))
    await lg.flush()
    first = os.path.basename(lg.segments[0].log_path)
    held, checkpoint = asyncio.Event(), lg.checkpoint_log_start

    async def slow_checkpoint():  # retention has taken the segments out; the unlinks have not run yet
        await held.wait()
        await checkpoint()

    monkeypatch.setattr(lg, "checkpoint_log_start", slow_checkpoint)
    retention = asyncio.ensure_future(lg.delete_oldest(2, None))
    await asyncio.sleep(0)
    doomed = str(tmp_path / delete_dir_name("t", 0, HEX))
    lg.rename_dir(doomed)  # the topic is deleted...
    os.mkdir(old)  # ...and created again, with its own first segment
    with open(os.path.join(old, first), "wb") as f:
        f.write(b"the new topic's records")
    held.set()
    assert await retention == 2
    assert os.path.exists(os.path.join(old, first)) and not os.path.exists(os.path.join(doomed, first))
    await lg.close()
