"""spark_jobs.scan.scan_tasks: segment files packed into balanced scan tasks (no Spark)."""

from __future__ import annotations

import os

from spark_jobs.scan import scan_tasks


def specs_of(tmp_path, sizes):
    specs = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(b"x" * size)
        specs.append((i % 3, i, str(path), False))
    return specs


def test_many_small_segments_make_two_tasks_per_core(tmp_path):
    specs = specs_of(tmp_path, [10] * 50)
    tasks = scan_tasks(specs, parallelism=2)
    assert len(tasks) == 4
    assert sorted(s for t in tasks for s in t) == sorted(specs)  # each segment exactly once
    assert sorted(len(t) for t in tasks) == [12, 12, 13, 13]


def test_large_input_gets_a_task_per_target_bytes_balanced_by_size(tmp_path):
    specs = specs_of(tmp_path, [900, 500, 400, 300, 300, 200, 100, 100])
    tasks = scan_tasks(specs, parallelism=1, target_bytes=600)
    assert len(tasks) == 5  # ceil(2800 / 600)
    loads = sorted(sum(os.path.getsize(s[2]) for s in t) for t in tasks)
    assert loads == [400, 500, 500, 500, 900]  # largest first onto the least loaded task
    assert sorted(s for t in tasks for s in t) == sorted(specs)


def test_few_segments_one_task_each_and_none_for_no_input(tmp_path):
    specs = specs_of(tmp_path, [5, 7])
    assert sorted(map(len, scan_tasks(specs, parallelism=8))) == [1, 1]
    assert scan_tasks([], parallelism=2) == []
