"""spark_jobs.expire: compaction keeps the state, KIP-211 decisions, staging validation."""

from __future__ import annotations

import os
import shutil

import pytest

from rules.consumer_protocol import decode_subscription, subscribed_topics
from spark_jobs.expire import run
from storage.batch import decode_records, iter_batches
from storage.cleaner import clean_segment
from storage.compaction import list_staging, validate_staging
from storage.dump import iter_log_records
from tests.support.expire_cases import DELETE_RETENTION, EXPECTED, NOW, RETENTION_MIN, build_log, tomb_key
from tests.support.spark import (
    encode_subscription,
    offsets_dir,
    replay,
)


@pytest.fixture(scope="module")
def staged(spark, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("logdirs"))
    path = offsets_dir(root, 0)
    build_log(path)
    logs = sorted(n for n in os.listdir(path) if n.endswith(".log"))
    assert len(logs) >= 4
    before = {n: open(os.path.join(path, n), "rb").read() for n in logs}
    summary = run(["--master", "local[2]", "--log-dirs", root, "--offsets-retention-minutes", str(RETENTION_MIN),
                   "--delete-retention-ms", str(DELETE_RETENTION), "--now-ms", str(NOW)], spark=spark)
    [(staging, manifest)] = list_staging(path)
    return path, staging, manifest, summary, before


def apply_copy(path, staging, manifest, dest):
    """What the server's swap would do, on a copy: staged segments replace the closed ones."""
    shutil.copytree(path, dest, ignore=shutil.ignore_patterns(".staging-*"))
    for seg in manifest["segments"]:
        if seg["cleaned"]["empty"]:
            os.unlink(os.path.join(dest, seg["file"]))
        else:
            shutil.copyfile(os.path.join(staging, seg["cleaned"]["file"]), os.path.join(dest, seg["file"]))
    return dest


def test_compaction_preserves_state_and_active_segment(staged, tmp_path):
    path, staging, manifest, summary, before = staged
    active = sorted(before)[-1]
    assert open(os.path.join(path, active), "rb").read() == before[active]  # live files untouched
    assert all(open(os.path.join(path, n), "rb").read() == data for n, data in before.items())
    assert active not in {s["file"] for s in manifest["segments"]}
    assert not os.path.exists(os.path.join(staging, active))
    assert manifest["upper_bound"] == int(active[:20])
    after = apply_copy(path, staging, manifest, str(tmp_path / "after"))
    assert replay(after) == replay(path)
    assert summary["superseded_dropped"] > 0 and summary["bytes_after"] < summary["bytes_before"]
    kept = [o for o, _, _ in iter_log_records(after)]
    assert kept == sorted(kept) and set(kept) <= {o for o, _, _ in iter_log_records(path)}  # offsets kept


def test_tombstone_gets_delete_horizon_then_goes(staged):
    path, staging, manifest, _, _ = staged
    horizon_batches = []
    for seg in manifest["segments"]:
        data = open(os.path.join(staging, seg["cleaned"]["file"]), "rb").read()
        for b in iter_batches(data):
            if any(r.value is None for r in decode_records(b)):
                assert b.has_delete_horizon and b.base_timestamp == NOW + DELETE_RETENTION
                horizon_batches.append(seg)
    assert horizon_batches  # the "deleted" group's tombstones were retained, with a horizon
    seg = horizon_batches[0]
    data = open(os.path.join(staging, seg["cleaned"]["file"]), "rb").read()
    keep_all = lambda _offset: True  # noqa: E731
    early = clean_segment(data, keep_all, now_ms=NOW + DELETE_RETENTION - 1, delete_retention_ms=DELETE_RETENTION,
                          upper_bound=manifest["upper_bound"])
    assert early.stats.tombstones_kept > 0 and early.stats.tombstones_dropped == 0
    late = clean_segment(data, keep_all, now_ms=NOW + DELETE_RETENTION, delete_retention_ms=DELETE_RETENTION,
                         upper_bound=manifest["upper_bound"])
    assert late.stats.tombstones_dropped == early.stats.tombstones_kept and late.stats.tombstones_kept == 0


def test_kip211_decisions(staged):
    _, staging, manifest, summary, _ = staged
    got = {tomb_key(t) for t in manifest["tombstones"]["records"]}
    assert got == EXPECTED
    assert summary["expired_offsets"] == 7 and summary["deleted_groups"] == 3
    # the tombstones file holds the same keys, as null-value records
    recs = [r for b in iter_batches(open(os.path.join(staging, "tombstones.batch"), "rb").read())
            for r in decode_records(b)]
    assert len(recs) == len(EXPECTED) and all(r.value is None for r in recs)
    assert all(t["decided_on_offset"] is not None for t in manifest["tombstones"]["records"]
               if t["group"] != "simple-old")


def test_validate_staging(staged, tmp_path):
    path, staging, manifest, _, _ = staged
    assert validate_staging(path, manifest) == []
    copy = str(tmp_path / "__consumer_offsets-0")
    shutil.copytree(path, copy)
    for name in ("manifest.json",):
        assert os.path.exists(os.path.join(copy, manifest["id"], name))
    first = os.path.join(copy, manifest["segments"][0]["file"])
    with open(first, "ab") as f:
        f.write(b"\x00")  # a replaced segment changed
    problems = validate_staging(copy, manifest)
    assert any("has" in p and "bytes" in p for p in problems)
    os.unlink(os.path.join(copy, manifest["segments"][1]["file"]))  # one was deleted
    assert any("no longer exists" in p for p in validate_staging(copy, manifest))
    os.unlink(first)
    os.unlink(os.path.join(copy, manifest["id"], manifest["segments"][2]["cleaned"]["file"]))
    assert any("staged segment" in p for p in validate_staging(copy, manifest))


def test_consumer_protocol_subscription_versions():
    for version in range(4):
        raw = encode_subscription(["A", "B"], version, b"x", [("A", (1, 2))], 7, "rack")
        sub = decode_subscription(raw)
        assert sub.version == version and sub.topics == ("A", "B") and subscribed_topics(raw) == ["A", "B"]
        if version >= 1:
            assert sub.owned_partitions == (("A", (1, 2)),)
        if version >= 3:
            assert sub.generation_id == 7 and sub.rack_id == "rack"
