"""A real server for test suites: `EmbeddedKafka` (a subprocess on an ephemeral port, in a temp dir, that a test
may kill, restart or freeze) and a pytest plugin (`coordinator.testing.pytest_plugin`) with fixtures over it.
docs/TESTING.md has examples for kafka-python, aiokafka and confluent-kafka."""

from coordinator.testing.embedded import EmbeddedKafka, EmbeddedKafkaError

__all__ = ["EmbeddedKafka", "EmbeddedKafkaError"]
