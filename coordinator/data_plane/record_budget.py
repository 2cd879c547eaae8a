"""Kafka's bound on the work of one admin request: QuorumController.MAX_RECORDS_PER_USER_OP.

Kafka's controller collects the metadata records of one user operation in a BoundedList of
10,000; the add that passes it fails the whole operation, which every topic of the request
answers with POLICY_VIOLATION "Unable to perform excessively large batch operation."
(EventHandlerExceptionInfo, CreateTopicsRequest.getErrorResponse). A new topic costs a
TopicRecord, one ConfigRecord per config it sets and one PartitionRecord per partition
(ReplicationControlManager.createTopic), so one request creates at most ~10,000 partitions:
without the bound a 1.3 KB CreateTopics made 50,000 (29 s of work, a 42 s restart).
Auto-creation sends one CreateTopics for all the topics a request names, under the same bound.
"""

from __future__ import annotations

MAX_RECORDS_PER_USER_OP = 10_000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."


def topic_records(partitions: int, configs: int) -> int:
    """The metadata records Kafka writes to create a topic."""
    return 1 + configs + partitions


class RecordBudget:
    """Counts the records of one operation; `take` is False from the record that passes the bound."""

    __slots__ = ("used", "limit")

    def __init__(self, limit: int = MAX_RECORDS_PER_USER_OP) -> None:
        self.used, self.limit = 0, limit

    def take(self, records: int) -> bool:
        self.used += records
        return not self.exceeded

    @property
    def exceeded(self) -> bool:
        return self.used > self.limit
