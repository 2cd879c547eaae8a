"""Which __consumer_offsets partition holds a group, and which __transaction_state partition holds a
transactional id: exactly Kafka's placement.

Kafka: Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions, where
String.hashCode runs s[0]*31^(n-1) + ... over UTF-16 code units with int32 overflow
and Utils.abs(Integer.MIN_VALUE) is 0 (not MIN_VALUE, as Math.abs would give).
"""

from __future__ import annotations

import base64
import uuid

OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_OFFSETS_PARTITIONS = 50


def java_string_hash(value: str) -> int:
    """Java's String.hashCode as a signed int32."""
    h = 0
    units = value.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def kafka_abs(value: int) -> int:
    """org.apache.kafka.common.utils.Utils.abs: MIN_VALUE maps to 0."""
    return 0 if value == -0x80000000 else abs(value)


def offsets_topic_id(cluster_id: str) -> uuid.UUID:
    """The internal topic's id, derived from the cluster id (stable without extra state; cluster mode keys
    the offsets partitions' rows by it)."""
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-cluster:{cluster_id}")
    return uuid.uuid5(namespace, OFFSETS_TOPIC)


def transaction_state_topic_id(cluster_id: str) -> uuid.UUID:
    """`__transaction_state`'s id, derived from the cluster id as the offsets topic's is (cluster mode creates
    its rows lazily; every node derives the same id, so concurrent creations make one topic)."""
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-cluster:{cluster_id}")
    return uuid.uuid5(namespace, TRANSACTION_STATE_TOPIC)


def partition_for(group_id: str, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    return kafka_abs(java_string_hash(group_id)) % num_partitions


TRANSACTION_STATE_TOPIC = "__transaction_state"
DEFAULT_TXN_PARTITIONS = 50  # transaction.state.log.num.partitions


def transaction_partition_for(txn_id: str, num_partitions: int = DEFAULT_TXN_PARTITIONS) -> int:
    """The __transaction_state partition of a transactional id: Kafka's TransactionStateManager.partitionFor,
    Utils.abs(transactionalId.hashCode) % transactionTopicPartitionCount."""
    return kafka_abs(java_string_hash(txn_id)) % num_partitions


SHARE_GROUP_STATE_TOPIC = "__share_group_state"
DEFAULT_SHARE_STATE_PARTITIONS = 50  # share.coordinator.state.topic.num.partitions


def share_coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """Kafka's SharePartitionKey.asCoordinatorKey: "group:topicId:partition", the topic id as Kafka's
    Uuid.toString prints it (base64url, no padding); FindCoordinator's key for key type SHARE (2)."""
    return f"{group_id}:{base64.urlsafe_b64encode(topic_id.bytes).rstrip(b'=').decode()}:{partition}"


def share_group_state_topic_id(cluster_id: str) -> uuid.UUID:
    """`__share_group_state`'s id in cluster mode, derived from the cluster id as `__transaction_state`'s is."""
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-cluster:{cluster_id}")
    return uuid.uuid5(namespace, SHARE_GROUP_STATE_TOPIC)


def share_state_partition_for(key: str, num_partitions: int = DEFAULT_SHARE_STATE_PARTITIONS) -> int:
    """The __share_group_state partition of a share partition's coordinator key (ShareCoordinatorService.
    partitionFor): Utils.abs(key.hashCode()) % share.coordinator.state.topic.num.partitions."""
    return kafka_abs(java_string_hash(key)) % num_partitions
