"""The one-at-a-time benchmark at its smallest: the floor server and ours each answer round trips (ours' first
Heartbeat and OffsetCommit answers checked, error code 0) and the table names a rate and a CPU figure for each."""

from __future__ import annotations

import os
import re

from bench import bench_one_at_a_time


def test_the_one_at_a_time_benchmark_measures_the_floor_and_ours(capsys):
    cores = os.sched_getaffinity(0)
    try:
        assert bench_one_at_a_time.main(["--servers", "floor,ours", "--seconds", "0.3", "--reps", "1"]) == 0
    finally:
        os.sched_setaffinity(0, cores)  # main pins its process to the load core
    rows = re.findall(r"^\| (any|heartbeat|commit) \| ([^|]+) \| ([\d,]+) \| ([\d.]+) \|$", capsys.readouterr().out,
                      re.M)
    assert [(workload, server.strip()) for workload, server, _rate, _cpu in rows] == [
        ("any", "floor (uvloop, no parsing)"), ("heartbeat", "ours"), ("commit", "ours")]
    assert all(int(rate.replace(",", "")) > 0 and float(cpu) >= 0 for _w, _s, rate, cpu in rows)
