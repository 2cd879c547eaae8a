"""Kafka's rules that both the server (coordinator/) and the Spark jobs (spark_jobs/) apply, each in one place:
where a group and a transactional id live, the consumer protocol's bytes, KIP-211 offset expiry, transactional
offsets held until their marker. Pure (no I/O, no clock of their own); they import nothing of the project but
primitives/, so storage/ may use them too (tests/unit/test_import_graph.py)."""
