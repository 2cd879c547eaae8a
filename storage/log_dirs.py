"""Names of partition directories, bounded to what a file system accepts in one name.

Linux (ext4, xfs, tmpfs) refuses a path component over 255 bytes (ENAMETOOLONG). A topic
name may have 249 characters (ASCII only, so characters are bytes) and a partition
directory is ``<topic>-<partition>``; every name *derived* from it must stay within the
limit too, or the operation that needs it fails. Kafka's LocalLog.logDeleteDirName:
``<topic>-<partition>.<32 hex>-delete``, with the topic part cut so the whole name
fits in 255 characters (the unique id, not the topic, tells two such names apart).
"""

from __future__ import annotations

import os

MAX_NAME_BYTES = 255
DELETE_SUFFIX = "-delete"


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def capped_dir_name(topic: str, partition: int, unique_hex: str, suffix: str) -> str:
    """``<topic>-<partition>.<unique_hex><suffix>``, the topic cut to fit MAX_NAME_BYTES
    (Kafka's LocalLog.logDirNameWithSuffixCappedLength)."""
    tail = f"-{partition}.{unique_hex}{suffix}"
    keep = max(0, MAX_NAME_BYTES - len(tail.encode()))
    head = topic.encode()[:keep].decode("utf-8", "ignore")  # topic names are ASCII; stay safe anyway
    return head + tail


def delete_dir_name(topic: str, partition: int, unique_hex: str) -> str:
    """Where a deleted topic's partition directory is renamed until it is removed."""
    return capped_dir_name(topic, partition, unique_hex, DELETE_SUFFIX)


def is_delete_dir(name: str) -> bool:
    return name.endswith(DELETE_SUFFIX)


def delete_dir_path(root: str, topic: str, partition: int, unique_hex: str) -> str:
    return os.path.join(root, delete_dir_name(topic, partition, unique_hex))
