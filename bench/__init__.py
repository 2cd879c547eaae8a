"""Benchmarks. bench/lib is the library (wire client, load generators, peers, comparison, report); the
bench_*.py scripts and run_all on top compare servers and write docs/BENCHMARKS.md; bench/profile holds the
in-process profiles of our hot paths (bench/profile/README.md)."""
