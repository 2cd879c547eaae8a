"""Kafka's primitive encodings used by both protocol/ (the wire) and storage/ (the log).

Neither of those layers may import the other (DESIGN.md), so what they share sits here,
below both; this package imports nothing of the project.
"""
