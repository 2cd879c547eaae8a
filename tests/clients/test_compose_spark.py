"""The Spark jobs submitted to the compose `spark` profile's standalone cluster (spark://spark-master:7077), checked
against what the coordinator serves. Run INSIDE the test container by `./dev compose-test` (COMPOSE_SPARK=1),
one step at a time (COMPOSE_SPARK_STEP), after the step's job ran on the cluster over the coordinator's data volume
(mounted read-only here at $COMPOSE_DATA_DIR):

- bulk_load: the snapshots the job wrote (storage/snapshot.py, read here without pyarrow or Spark) hold exactly the
  committed offsets the server answers for every group in them (OffsetFetch, through the groups command's wire
  client, coordinator/cli/admin.py);
- expire (--now-ms a year ahead): the server applies the job's staging areas and then serves no offsets for the
  groups that were Empty, and lists none of them.
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
    from coordinator.cli.admin import Admin

    return Admin(BOOTSTRAP.split(",")[0], 30.0)


def _snapshot_offsets() -> dict[str, dict[tuple[str, int], int]]:
    from storage.snapshot import read_snapshot

    found: dict[str, dict[tuple[str, int], int]] = {}
    for directory in sorted(SNAPSHOTS.glob("__consumer_offsets-*")):
        partition = int(directory.name.rsplit("-", 1)[1])
        _groups, offsets, _covers = read_snapshot(str(SNAPSHOTS), partition)
        for key, value in offsets:
            found.setdefault(key.group, {})[(key.topic, key.partition)] = value.offset
    return found


@pytest.mark.skipif(STEP != "bulk_load", reason="the bulk_load step")
def test_bulk_load_on_the_cluster_snapshots_what_the_server_serves():
    snapshot = _snapshot_offsets()
    assert snapshot, f"no offsets in the snapshots under {SNAPSHOTS}"
    admin = _admin()
    try:
        for group, offsets in snapshot.items():
            assert admin.committed(group) == offsets, group
    finally:
        admin.close()


@pytest.mark.skipif(STEP != "expire", reason="the expire step")
def test_expire_on_the_cluster_empties_what_the_server_serves():
    admin = _admin()
    try:
        empty = [g.group_id for g in admin.list_groups() if g.state == "Empty"]
        assert empty, "no Empty group to expire (test_compose.py leaves its groups Empty)"
        deadline = time.monotonic() + 120  # the staging check runs every COORDINATOR_OFFSETS_STAGING_CHECK_INTERVAL_MS
        left: list[str] = empty
        while left and time.monotonic() < deadline:
            time.sleep(1)
            listed = {g.group_id for g in admin.list_groups()}
            left = [g for g in empty if g in listed or admin.committed(g)]
        assert not left, f"still served after the expire job: {left}"
    finally:
        admin.close()
