"""The TLS benchmark's run at its smallest: the load generator speaks TLS to the SSL listener (its first answer
checked, error code 0), both transports are measured, and the docs are left alone."""

from __future__ import annotations

from bench import bench_tls
from bench.lib.report import DOC


def test_the_tls_benchmark_measures_both_listeners(capsys):
    before = DOC.read_text()
    assert bench_tls.main(["--reps", "1", "--seconds", "0.5", "--single-seconds", "0.3", "--no-docs"]) == 0
    out = capsys.readouterr().out
    assert "rep 1 pipelined TLS" in out and "rep 1 single    plaintext" in out
    assert "TLS / plaintext = " in out
    assert DOC.read_text() == before
