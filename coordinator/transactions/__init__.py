"""The transaction coordinator's pure logic (Kafka's kafka.coordinator.transaction): states, metadata, operations.

No asyncio and no I/O here: operations decide and return steps (records to write, markers to send) that
the runtime drives; the clock is injected.
"""
