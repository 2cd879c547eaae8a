"""The consumer-groups benchmark's run at its smallest: both protocols measured in both batchings, a convergence
measured with no partition ever owned twice, and the docs left alone. Figures only, no timing bounds."""

from __future__ import annotations

from bench import bench_consumer_groups
from bench.lib.compare import MODES
from bench.lib.report import DOC

ARGS = ["--reps", "1", "--seconds", "0.5", "--single-seconds", "0.3", "--members", "6", "--partitions", "24",
        "--topics", "2", "--interval-ms", "500", "--no-docs"]


def test_the_consumer_groups_benchmark_measures_both_protocols_and_a_convergence(capsys):
    before = DOC.read_text()
    args = bench_consumer_groups.parse(ARGS)
    outcome = bench_consumer_groups.measure(args)
    assert outcome.failures == []
    for mode in MODES:
        for protocol in ("classic", "consumer"):
            [run] = outcome.heartbeats[mode.key][protocol]
            assert run.rps > 0 and run.requests > 0, (mode.key, protocol)
    [converged] = outcome.convergences
    assert converged.seconds > 0 and converged.intervals > 0 and converged.interval_s == 0.5
    assert converged.epoch_after > converged.epoch_before
    assert converged.max_double_owned == 0
    text, figures = bench_consumer_groups.render(outcome, args)
    assert set(figures) == {"consumer_vs_classic_pipelined", "consumer_vs_classic_single",
                            "consumer_convergence_intervals"}
    assert all(v["ours"] > 0 for v in figures.values())
    assert "consumer / classic = " in text and "max owned twice" in text
    assert "rep 1 pipelined consumer" in capsys.readouterr().out
    assert DOC.read_text() == before
