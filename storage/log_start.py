"""The durable log start offset of one partition: ``<partition dir>/log-start-offset-checkpoint``.

Kafka keeps the log start offsets of a whole log dir in one ``log-start-offset-checkpoint``
file (version line, entry count, then ``topic partition offset`` lines) and writes an entry
only where the log start offset is above the first segment's base offset (DeleteRecords
moved it inside a segment). This server writes the same format, with the one entry of its
partition, inside the partition directory: deleting a topic removes the file with the data,
so a topic created again under the same name never inherits an old start offset.

Written with temp file + fsync + rename + fsync of the directory, so a crash leaves the old
or the new value, never a torn one. On open the log start offset is
max(checkpoint, first segment's base offset), as Kafka's LogLoader does.
"""

from __future__ import annotations

import os

import structlog

log = structlog.get_logger(__name__)

FILE_NAME = "log-start-offset-checkpoint"
VERSION = 0


def read(directory: str) -> int | None:
    """The checkpointed log start offset, or None if there is none (or it is unreadable)."""
    path = os.path.join(directory, FILE_NAME)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("storage.log_start.unreadable", file=path, error=repr(exc))
        return None
    try:
        if int(lines[0]) != VERSION or int(lines[1]) != len(lines) - 2:
            raise ValueError("bad version or entry count")
        offsets = [int(line.rsplit(" ", 1)[1]) for line in lines[2:]]
    except (ValueError, IndexError) as exc:
        log.warning("storage.log_start.unreadable", file=path, error=repr(exc))
        return None
    return max(offsets) if offsets else None


def write(directory: str, offset: int, fsync=os.fsync) -> None:
    """Durably record ``offset`` (blocking: run it off the event loop)."""
    topic, _, partition = os.path.basename(os.path.normpath(directory)).rpartition("-")
    path = os.path.join(directory, FILE_NAME)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, f"{VERSION}\n1\n{topic} {partition} {offset}\n".encode())
        fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(directory, os.O_RDONLY)
    try:
        fsync(dfd)
    finally:
        os.close(dfd)
