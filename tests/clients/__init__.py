"""Real-client conformance harness: one driver per Kafka client, one line protocol (docs/CLIENTS.md).

    from tests.clients import CLIENTS, run_consumer, produce
"""

from tests.clients.drivers import CLIENTS, ClientUnsupported, run_consumer
from tests.clients.process import ClientProcess
from tests.clients.produce import committed_offsets, create_topic, produce

__all__ = ["CLIENTS", "ClientProcess", "ClientUnsupported", "committed_offsets", "create_topic", "produce",
           "run_consumer"]
