"""Bulk load's cluster-mode output: snapshots as kc_blobs rows (kind 'snapshot') in the PostgreSQL
store named by ``--output postgresql://...`` (storage/pg/snapshot_blobs.py).

Each task builds its partition's snapshot as in local mode, in a temp directory of its own machine,
and returns it packed; the driver publishes them all in one transaction (all or none, as the renames
of local mode). The packed snapshots pass through the driver: a snapshot is the compacted state
(one record per live group and offset: storage/snapshot.py), far smaller than the logs the executors read.
"""

from __future__ import annotations

import os
import shutil
import tempfile

STORE_SCHEMES = ("postgresql://", "postgres://")


def is_store(output: str) -> bool:
    return output.startswith(STORE_SCHEMES)


def shown(output: str) -> str:
    """``--output`` as the summary prints it (a URL without its password)."""
    if not is_store(output):
        return output
    from storage.pg.connect import redact

    return redact(output)


def store_writer(local_writer):
    """Wrap a task writer ``local_writer(output_root)(index, rows)`` (which yields (index, temp snapshot
    path, groups, offsets, simple groups)) so that it yields the snapshot's name and packed bytes too."""
    def write(index, rows):
        from storage.pg.snapshot_blobs import pack
        from storage.snapshot import PREFIX, TMP_PREFIX

        root = tempfile.mkdtemp(prefix="kgc-snapshot-")
        try:
            for index_, tmp, groups, offsets, simple in local_writer(root)(index, rows):
                name = PREFIX + os.path.basename(tmp)[len(TMP_PREFIX):]
                yield (index_, name, groups, offsets, simple, pack(tmp))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return write


def publish_to_store(url: str, results: list[tuple]) -> list[str]:
    """Put every packed snapshot (store_writer's rows) in one transaction; returns their names."""
    from storage.pg import log_reads, snapshot_blobs

    async def put(conn) -> None:
        topic_id = await log_reads.offsets_topic_id(conn)
        await snapshot_blobs.put_all(conn, topic_id, [(r[0], r[1], r[5]) for r in results])

    log_reads.sync(url, put)
    return [f"__consumer_offsets-{r[0]}/{r[1]}" for r in sorted(results)]
