"""Cluster mode wipes its scratch log.dirs at start, and refuses to wipe anything else."""

from __future__ import annotations

import pytest

from coordinator.cluster.startup import SCRATCH_MARK, StartupError, wipe_scratch


def test_an_empty_or_missing_directory_becomes_the_scratch(tmp_path):
    wipe_scratch(str(tmp_path / "new"))
    assert [p.name for p in (tmp_path / "new").iterdir()] == [SCRATCH_MARK]


def test_the_scratch_is_wiped_at_every_start(tmp_path):
    wipe_scratch(str(tmp_path))
    (tmp_path / "__consumer_offsets-3").mkdir()
    (tmp_path / "__consumer_offsets-3" / "00000000000000000000.log").write_bytes(b"x")
    (tmp_path / "stray.tmp").write_bytes(b"y")
    wipe_scratch(str(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == [SCRATCH_MARK]


def test_a_local_mode_data_directory_is_refused_not_deleted(tmp_path):
    (tmp_path / "meta.properties").write_text("cluster.id=x\n")
    with pytest.raises(StartupError, match="^log.dirs: .* not a cluster-mode scratch directory"):
        wipe_scratch(str(tmp_path))
    assert (tmp_path / "meta.properties").read_text() == "cluster.id=x\n"
