"""Cluster mode wipes its scratch log.dirs at start, and refuses to wipe anything else or a scratch in use."""

from __future__ import annotations

import os

import pytest

from coordinator.cluster.startup import SCRATCH_MARK, StartupError, claim_scratch


def test_an_empty_or_missing_directory_becomes_the_scratch(tmp_path):
    os.close(claim_scratch(str(tmp_path / "new")))
    assert [p.name for p in (tmp_path / "new").iterdir()] == [SCRATCH_MARK]


def test_the_scratch_is_wiped_at_every_start(tmp_path):
    os.close(claim_scratch(str(tmp_path)))
    (tmp_path / "__consumer_offsets-3").mkdir()
    (tmp_path / "__consumer_offsets-3" / "00000000000000000000.log").write_bytes(b"x")
    (tmp_path / "stray.tmp").write_bytes(b"y")
    os.close(claim_scratch(str(tmp_path)))
    assert [p.name for p in tmp_path.iterdir()] == [SCRATCH_MARK]


def test_a_scratch_held_by_a_running_node_is_refused_and_kept(tmp_path):
    held = claim_scratch(str(tmp_path))
    try:
        (tmp_path / "__consumer_offsets-0").mkdir()
        with pytest.raises(StartupError, match="^log.dirs: .* another running node"):
            claim_scratch(str(tmp_path))
        assert (tmp_path / "__consumer_offsets-0").is_dir()
    finally:
        os.close(held)
    os.close(claim_scratch(str(tmp_path)))  # free again once the holder is gone


def test_a_local_mode_data_directory_is_refused_not_deleted(tmp_path):
    (tmp_path / "meta.properties").write_text("cluster.id=x\n")
    with pytest.raises(StartupError, match="^log.dirs: .* not a cluster-mode scratch directory"):
        claim_scratch(str(tmp_path))
    assert (tmp_path / "meta.properties").read_text() == "cluster.id=x\n"
