"""The Spark jobs submitted to the compose `spark` profile's standalone cluster (spark://spark-master:7077), checked
against what the coordinator serves. Run INSIDE the test container by `./dev compose-test` (COMPOSE_SPARK=1),
one step at a time (COMPOSE_SPARK_STEP), after the step's job ran on the cluster over the coordinator's data volume
(mounted read-only here at $COMPOSE_DATA_DIR) or, in the cluster profile, over its PostgreSQL
(COORDINATOR_STORAGE_URL: the snapshots are kc_blobs rows there, copied out here to be read):

- bulk_load: the snapshots the job wrote (storage/snapshot.py, read here without pyarrow or Spark) hold exactly the
  committed offsets the server answers for every group in them (OffsetFetch, through the groups command's wire
  client, coordinator/cli/admin.py);
- expire (--now-ms a year ahead): the server applies the job's staging areas and then serves no offsets for the
  groups that were Empty, and lists none of them. Which groups were Empty, this reads from the bulk load's snapshots
  (no client ran between the two jobs): the server may have applied the staging before this test starts.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

BOOTSTRAP = os.environ.get("COORDINATOR_BOOTSTRAP", "")
STEP = os.environ.get("COMPOSE_SPARK_STEP", "")
DATA = Path(os.environ.get("COMPOSE_DATA_DIR", "/spark-data"))
SNAPSHOTS = DATA / "spark-snapshots"
pytestmark = pytest.mark.skipif(not (BOOTSTRAP and STEP), reason="run by ./dev compose-test with COMPOSE_SPARK=1")


def _admin():
    """An admin client bootstrapped from the first address that answers (the cluster run kills a node)."""
    from coordinator.cli.admin_client import Admin
    from coordinator.cli.client import CliError

    errors = []
    for address in BOOTSTRAP.split(","):
        try:
            return Admin(address, 30.0)
        except CliError as exc:
            errors.append(str(exc))
    raise AssertionError(f"no broker of {BOOTSTRAP} answers: {errors}")


def _store_snapshots(url: str, root: Path) -> Path:
    """The bulk load's snapshot blobs of every offsets partition, unpacked under `root` (storage/pg/snapshot_blobs)."""
    from storage.pg import log_reads, snapshot_blobs

    async def copy(conn) -> None:
        topic_id = await log_reads.offsets_topic_id(conn)
        for partition in range(int(os.environ.get("COMPOSE_OFFSETS_PARTITIONS", "50"))):
            await snapshot_blobs.fetch(conn, topic_id, partition, str(root))

    log_reads.sync(url, copy)
    return root


def _snapshot_state(root: Path) -> dict[str, tuple[bool, dict[tuple[str, int], int]]]:
    """group -> (Empty: no member or no metadata, its offsets) over every partition's snapshot under `root`."""
    from storage.snapshot import read_snapshot

    found: dict[str, tuple[bool, dict[tuple[str, int], int]]] = {}
    for directory in sorted(root.glob("__consumer_offsets-*")):
        partition = int(directory.name.rsplit("-", 1)[1])
        groups, offsets, _covers = read_snapshot(str(root), partition)
        for group, value in groups:
            found[group] = (value is None or not value.members, {})
        for key, value in offsets:
            found[key.group][1][(key.topic, key.partition)] = value.offset
    return found


def _snapshots(tmp_path: Path) -> Path:
    url = os.environ.get("COORDINATOR_STORAGE_URL", "")
    return _store_snapshots(url, tmp_path) if url else SNAPSHOTS


@pytest.mark.skipif(STEP != "bulk_load", reason="the bulk_load step")
def test_bulk_load_on_the_cluster_snapshots_what_the_server_serves(tmp_path):
    snapshot = _snapshot_state(_snapshots(tmp_path))
    assert any(offsets for _empty, offsets in snapshot.values()), "no offsets in the snapshots"
    admin = _admin()
    try:
        for group, (_empty, offsets) in snapshot.items():
            assert admin.committed(group) == offsets, group
    finally:
        admin.close()


@pytest.mark.skipif(STEP != "expire", reason="the expire step")
def test_expire_on_the_cluster_empties_what_the_server_serves(tmp_path):
    empty = [group for group, (is_empty, offsets) in _snapshot_state(_snapshots(tmp_path)).items()
             if is_empty and offsets]
    assert empty, "no Empty group with offsets in the snapshots (test_compose.py leaves its groups Empty)"
    admin = _admin()
    try:
        deadline = time.monotonic() + 120  # the staging check runs every COORDINATOR_OFFSETS_STAGING_CHECK_INTERVAL_MS
        left: list[str] = empty
        while left and time.monotonic() < deadline:
            time.sleep(1)
            listed = {g.group_id for g in admin.list_groups()}
            left = [g for g in empty if g in listed or admin.committed(g)]
        assert not left, f"still served after the expire job: {left}"
    finally:
        admin.close()
