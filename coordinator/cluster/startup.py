"""Cluster-mode start-up checks: each failure is one clear line and exit code 2.

PostgreSQL unreachable, a schema newer than this code, a node.id held by a live node, or an
offsets.topic.num.partitions other than the cluster's: the node refuses to start rather than
join a cluster it cannot serve. No message carries the storage.url password.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from typing import Any

from storage.pg.url import redact, without_password


class StartupError(Exception):
    """The node cannot start; the message is the line the operator sees (exit code 2)."""


async def open_store(config: Any, connections: Any = None) -> Any:
    """The PostgreSQL pool (its connections opened through `connections`, a ConnectionSet, when given), schema
    migrated; StartupError when unreachable or too new."""
    from storage.pg.connect import open_pool
    from storage.pg.errors import SchemaTooNewError, StoreUnavailableError

    url = config.storage_url
    try:
        return await open_pool(url, connections=connections)
    except SchemaTooNewError as exc:
        raise StartupError(f"storage.url: {exc}") from None
    except StoreUnavailableError as exc:
        cause = exc.__cause__ or exc
        reason = without_password(f"{type(cause).__name__}: {cause}", url)
        raise StartupError(f"storage.url: cannot reach PostgreSQL at {redact(url)}: {reason}") from None


SCRATCH_MARK = "cluster-scratch"


def claim_scratch(log_dirs: str) -> int:
    """Make log.dirs this node's empty scratch (the replica cache of the partitions it owns) and hold it.

    Only a directory that is empty or that cluster mode marked as its scratch is wiped, so a local-mode
    data directory (or any other) given by mistake is refused, never deleted; and one that another
    running node holds (an exclusive lock on the mark) is refused too. Returns the lock's file
    descriptor: the claim lasts until it is closed (or the process ends)."""
    os.makedirs(log_dirs, exist_ok=True)
    names = os.listdir(log_dirs)
    if names and SCRATCH_MARK not in names:
        raise StartupError(f"log.dirs: {log_dirs} is not empty and not a cluster-mode scratch directory "
                           f"(no {SCRATCH_MARK} file); in cluster mode give each node an empty directory")
    mark = os.open(os.path.join(log_dirs, SCRATCH_MARK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(mark, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(mark)
        raise StartupError(f"log.dirs: {log_dirs} is the scratch directory of another running node") from None
    for name in names:
        path = os.path.join(log_dirs, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif name != SCRATCH_MARK:
            os.unlink(path)
    os.ftruncate(mark, 0)
    os.write(mark, b"The replica cache of a cluster-mode node; wiped at every start.\n")
    return mark
