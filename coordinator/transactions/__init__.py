"""The transaction coordinator (Kafka's kafka.coordinator.transaction), laid out as the groups are.

Here, pure: states (`lifecycle`), metadata, operations, ending, steps, descriptions -- no asyncio and no I/O:
operations decide and return steps (records to write, markers to send), the clock is injected. `runtime/`
drives them: the `__transaction_state` partitions hosted, their log, the markers sent, the timers.
"""
