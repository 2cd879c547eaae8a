"""The renamed (`-delete`) directories of a deleted topic's partitions: undoing the renames when one of
them failed, and removing them once the deletion is stored (plane.DataPlane.detach_topic/delete_topics)."""

from __future__ import annotations

import os
import shutil

import structlog

from coordinator.data_plane.partition import Partition
from coordinator.data_plane.topic_catalog import TopicInfo
from storage.log_dirs import is_delete_dir

log = structlog.get_logger("coordinator.data_plane.plane")


def undo_renames(topic: TopicInfo, renamed: list[tuple[Partition, str]]) -> None:
    for part, original in renamed:
        try:
            part.log.rename_dir(original)
        except OSError as exc:  # the partition keeps working from its renamed directory until restart
            log.error("data_plane.topic.rename_undo_failed", topic=topic.name, partition=part.index,
                      directory=part.log.path, error=repr(exc))


def remove_renamed_dirs(parts: list[Partition]) -> None:
    """Only renamed (`-delete`) directories: never a path a new topic may have taken."""
    for part in parts:
        if is_delete_dir(os.path.basename(part.log.path)):
            shutil.rmtree(part.log.path, ignore_errors=True)
        else:
            log.error("data_plane.topic.not_removed", directory=part.log.path)
