"""Benchmarks: peer servers (peers), the wire load generator (loadgen), and the benchmark scripts."""
